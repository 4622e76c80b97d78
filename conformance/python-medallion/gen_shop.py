"""gen_shop.py OUT BATCH: a shop's orders, customers and refunds as JSON lines.

Batch 0 (run 1) writes the customers, the first orders and a refund; batch 1 (run 2) adds orders
(one of a customer with no record, one cancelled) and a refund. Amounts are decimals, one order
has no amount, two orders of a country tie on amount.
"""
import json, os, sys

out, b = sys.argv[1], int(sys.argv[2])
CUSTOMERS = [(1, "Ana", "PT"), (2, "Bo", "SE"), (3, "Chen", "CN"), (4, "Dora", "PT"), (5, "Eli", None)]
ORDERS = {
    0: [(100, 1, "12.50", "2026-03-01 09:15:00", "paid"), (101, 2, "40.00", "2026-03-01 10:00:00", "paid"),
        (102, 1, "7.25", "2026-03-02 11:30:00", "cancelled"), (103, 3, "99.99", "2026-03-02 12:00:00", "paid"),
        (104, 4, "40.00", "2026-03-03 08:00:00", "paid"), (105, 5, None, "2026-03-03 09:00:00", "paid")],
    1: [(106, 2, "5.10", "2026-03-04 10:00:00", "paid"), (107, 9, "18.00", "2026-03-04 11:00:00", "paid"),
        (108, 4, "40.00", "2026-03-05 12:00:00", "cancelled"), (109, 1, "60.00", "2026-03-05 13:00:00", "paid")],
}
REFUNDS = {0: [(101, "10.00")], 1: [(103, "99.99")]}


def write(folder, name, rows):
    os.makedirs(f"{out}/{folder}", exist_ok=True)
    with open(f"{out}/{folder}/{name}", "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")


if b == 0:
    write("customers", "part-0.json", [{"customer_id": i, "name": n, "country": c} for i, n, c in CUSTOMERS])
write("orders", f"batch{b}.json",
      [{"order_id": o, "customer_id": c, "amount": a, "ordered_at": t, "status": s} for o, c, a, t, s in ORDERS[b]])
write("refunds", f"batch{b}.json", [{"order_id": o, "amount": a} for o, a in REFUNDS[b]])
