"""gen_shop.py DATA N: writes batch N of the landing files under DATA.

orders/batch<N>/part-0.json     one JSON order per line
customers/batch<N>/part-0.json  one JSON customer change per line (op UPSERT or DELETE, seq)

The batches are fixed (below), so replay.py computes the expected tables from the same rows
without running any engine.
"""
import json, os, sys

# (order_id, customer_id, amount, status)
ORDERS = [
    [
        (1, 10, 20.5, "paid"),
        (2, 11, 5.25, "paid"),
        (3, 10, -3.0, "paid"),        # dropped: amount
        (4, None, 7.0, "paid"),       # kept, warned: no customer
        (5, 12, 8.0, "lost"),         # dropped: status
        (6, 11, 2.0, "refunded"),
    ],
    [
        (7, 12, 30.0, "paid"),
        (8, 10, 0.0, "paid"),         # dropped: amount
        (9, 11, 1.5, "refunded"),
    ],
]

# (id, name, country, op, seq)
CUSTOMERS = [
    [
        (10, "Ana", "PT", "UPSERT", 1),
        (11, "Bo", "SE", "UPSERT", 1),
        (12, None, "NO", "UPSERT", 1),       # dropped before it is applied: no name
        (10, "Ana Silva", "PT", "UPSERT", 2),
    ],
    [
        (11, "Bo", "SE", "DELETE", 3),
        (12, "Cy", "NO", "UPSERT", 2),
        (10, "Ana old", "ES", "UPSERT", 1),  # out of order: older than what is applied
    ],
]


def write(path, records):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r) + "\n")


def main():
    data, n = sys.argv[1], int(sys.argv[2])
    write(os.path.join(data, "orders", f"batch{n}", "part-0.json"),
          [dict(order_id=o, customer_id=c, amount=a, status=s) for o, c, a, s in ORDERS[n]])
    write(os.path.join(data, "customers", f"batch{n}", "part-0.json"),
          [dict(id=i, name=nm, country=co, op=op, seq=sq) for i, nm, co, op, sq in CUSTOMERS[n]])


if __name__ == "__main__":
    main()
