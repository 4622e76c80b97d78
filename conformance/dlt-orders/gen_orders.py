"""gen_orders.py DATA N: writes batch N of the landing files under DATA.

orders/batch<N>/part-0.json  one JSON order per line
customers/batch<N>/customers.csv  new customers, with a header

The batches are fixed (BATCHES below), so replay.py computes the expected tables from the
same rows without running any engine.
"""
import csv, json, os, sys

# (order_id, customer_id, amount, ts, status)
ORDERS = [
    [
        (1, 1, 120.5, "2026-03-01 09:15:00", "COMPLETED"),
        (2, 2, 35.0, "2026-03-01 11:40:00", "completed"),
        (3, 1, -5.0, "2026-03-01 12:00:00", "completed"),   # dropped: amount
        (4, None, 60.25, "2026-03-01 13:05:00", "completed"),  # kept, warned: no customer
        (5, 3, 18.75, "2026-03-02 08:30:00", "Cancelled"),
        (6, 2, 99.99, "2026-03-02 17:45:00", "completed"),
    ],
    [
        (7, 4, 42.0, "2026-03-02 19:00:00", "completed"),
        (8, 1, 10.1, "2026-03-03 07:20:00", "COMPLETED"),
        (9, 5, 0.0, "2026-03-03 09:00:00", "completed"),    # dropped: amount
        (10, 3, 77.7, "2026-03-03 10:10:00", "pending"),
        (11, 4, 5.55, "2026-03-03 23:59:59", "completed"),
    ],
]

# (customer_id, name, country)
CUSTOMERS = [
    [(1, " Ada Lovelace ", "gb"), (2, "Grace Hopper", "us"), (3, "Alan Turing", "GB")],
    [(4, "Edsger Dijkstra", "nl"), (5, "Barbara Liskov", "us")],
]


def main():
    data, n = sys.argv[1], int(sys.argv[2])
    folder = os.path.join(data, "orders", f"batch{n}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "part-0.json"), "w") as f:
        for order_id, customer_id, amount, ts, status in ORDERS[n]:
            f.write(json.dumps({"order_id": order_id, "customer_id": customer_id, "amount": amount,
                                "ts": ts, "status": status}) + "\n")
    folder = os.path.join(data, "customers", f"batch{n}")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "customers.csv"), "w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["customer_id", "name", "country"])
        w.writerows(CUSTOMERS[n])


if __name__ == "__main__":
    main()
