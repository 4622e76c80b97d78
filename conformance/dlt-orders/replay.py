"""replay.py: the expected tables of every run, computed from gen_orders' rows alone.

After run N the pipeline has read batches 0..N-1. Written as DLT defines the project:
- orders_raw: every order; JSON columns inferred (cloudFiles.inferColumnTypes), plus Auto
  Loader's _rescued_data, NULL as every record fits;
- customers_raw: every customer row, every column a string (Auto Loader's CSV default);
- orders_silver: orders with amount > 0 (DROP ROW), amount as DECIMAL(10,2), the date of ts,
  the status in lower case; a missing customer only warns;
- daily_revenue: per day, completed orders and their revenue;
- customer_totals: every customer (name trimmed, country upper case) with their orders and
  the sum spent (0 without orders).

    python3 conformance/dlt-orders/replay.py
"""
import csv, os, pathlib, sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_orders import CUSTOMERS, ORDERS

HERE = pathlib.Path(__file__).parent


def write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r)):
            w.writerow(["" if v is None else v for v in r])


def money(x):
    return Decimal(str(x)).quantize(Decimal("0.01"))


def main():
    for run in range(1, len(ORDERS) + 1):
        out = HERE / "expected" / f"run{run}"
        out.mkdir(parents=True, exist_ok=True)
        orders = [o for batch in ORDERS[:run] for o in batch]
        customers = [c for batch in CUSTOMERS[:run] for c in batch]
        write(out / "orders_raw.csv", ["amount", "customer_id", "order_id", "status", "ts", "_rescued_data"],
              [(a, c, i, s, ts, None) for i, c, a, ts, s in orders])
        write(out / "customers_raw.csv", ["customer_id", "name", "country"],
              [(str(i), n, k) for i, n, k in customers])
        silver = [(i, c, money(a), ts[:10], s.lower()) for i, c, a, ts, s in orders if a > 0]
        write(out / "orders_silver.csv", ["order_id", "customer_id", "amount", "order_date", "status"], silver)
        days = {}
        for _, _, amount, day, status in silver:
            if status == "completed":
                n, total = days.get(day, (0, Decimal("0.00")))
                days[day] = (n + 1, total + amount)
        write(out / "daily_revenue.csv", ["order_date", "orders", "revenue"],
              [(d, n, t) for d, (n, t) in days.items()])
        totals = []
        for cid, name, country in customers:
            mine = [a for _, c, a, _, _ in silver if c == cid]
            totals.append((cid, name.strip(), country.upper(), len(mine), sum(mine, Decimal("0.00"))))
        write(out / "customer_totals.csv", ["customer_id", "name", "country", "orders", "spent"], totals)


if __name__ == "__main__":
    main()
