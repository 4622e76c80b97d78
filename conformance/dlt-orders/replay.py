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
Each table's .schema holds its Spark type (simpleString): inferred JSON integers are bigint and
numbers with a fraction double, CSV columns strings, count bigint, sum of decimal(10,2)
decimal(20,2) (and so its coalesce with 0), CAST(... AS INT) int. The format is in ../README.md.

    python3 conformance/dlt-orders/replay.py
"""
import os, pathlib, sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_orders import CUSTOMERS, ORDERS

HERE = pathlib.Path(__file__).parent


def field(text):
    """A CSV field: NULL (None) is empty and unquoted; the empty string and any text with a comma,
    a quote or a line break are quoted."""
    if text is None:
        return ""
    if text == "" or any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write(path, columns, rows):
    """Writes path (a .csv) and its .schema; columns are (name, Spark type) pairs."""
    rendered = [[None if v is None else ("true" if v else "false") if isinstance(v, bool) else str(v)
                 for v in r] for r in rows]
    rendered.sort(key=lambda r: (tuple("" if t is None else t for t in r), tuple(field(t) for t in r)))
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(",".join(field(name) for name, _ in columns) + "\n")
        for r in rendered:
            f.write(",".join(field(t) for t in r) + "\n")
    schema = "struct<" + ",".join(f"{name}:{kind}" for name, kind in columns) + ">\n"
    path.with_suffix(".schema").write_text(schema, encoding="utf-8")


def money(x):
    return Decimal(str(x)).quantize(Decimal("0.01"))


def main():
    for run in range(1, len(ORDERS) + 1):
        out = HERE / "expected" / f"run{run}"
        out.mkdir(parents=True, exist_ok=True)
        orders = [o for batch in ORDERS[:run] for o in batch]
        customers = [c for batch in CUSTOMERS[:run] for c in batch]
        write(out / "orders_raw.csv",
              [("amount", "double"), ("customer_id", "bigint"), ("order_id", "bigint"), ("status", "string"),
               ("ts", "string"), ("_rescued_data", "string")],
              [(a, c, i, s, ts, None) for i, c, a, ts, s in orders])
        write(out / "customers_raw.csv", [("customer_id", "string"), ("name", "string"), ("country", "string")],
              [(str(i), n, k) for i, n, k in customers])
        silver = [(i, c, money(a), ts[:10], s.lower()) for i, c, a, ts, s in orders if a > 0]
        write(out / "orders_silver.csv",
              [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "decimal(10,2)"),
               ("order_date", "date"), ("status", "string")], silver)
        days = {}
        for _, _, amount, day, status in silver:
            if status == "completed":
                n, total = days.get(day, (0, Decimal("0.00")))
                days[day] = (n + 1, total + amount)
        write(out / "daily_revenue.csv", [("order_date", "date"), ("orders", "bigint"), ("revenue", "decimal(20,2)")],
              [(d, n, t) for d, (n, t) in days.items()])
        totals = []
        for cid, name, country in customers:
            mine = [a for _, c, a, _, _ in silver if c == cid]
            totals.append((cid, name.strip(), country.upper(), len(mine), sum(mine, Decimal("0.00"))))
        write(out / "customer_totals.csv",
              [("customer_id", "int"), ("name", "string"), ("country", "string"), ("orders", "bigint"),
               ("spent", "decimal(20,2)")], totals)


if __name__ == "__main__":
    main()
