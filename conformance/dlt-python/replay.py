"""replay.py: the expected tables of every run, computed from gen_shop's rows alone.

After run N the pipeline has read batches 0..N-1. Written as Databricks defines the project:
- orders_raw, customer_changes: every record; JSON columns inferred (cloudFiles.inferColumnTypes:
  integers bigint, numbers with a fraction double), plus Auto Loader's _rescued_data, NULL as
  every record fits; `name="Customer_Changes"` is the table customer_changes;
- orders_valid is a view (no table) of the orders' columns;
- orders_clean: the orders with amount > 0 (expect_or_drop), status paid or refunded and an id
  (expect_all_or_drop); a missing customer only warns; signed is the amount, negative for a
  refund; status_code the status cast to INT, NULL for a word (Databricks runs with ANSI mode
  off: the cast that fails under ANSI gives NULL);
- customer_revenue: `@dlt.table` over a batch read, a materialized view: per known customer,
  the sum of signed and the count of orders, from every order so far;
- customers: AUTO CDC SCD type 1 keyed by id, sequenced by seq, op DELETE deletes; a change
  without a name is dropped before it is applied (expect_all_or_drop on the target); op, seq and
  _rescued_data are not kept.

    python3 conformance/dlt-python/replay.py
"""
import os, pathlib, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_shop import CUSTOMERS, ORDERS

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
    rendered = [[None if v is None else str(v) for v in r] for r in rows]
    rendered.sort(key=lambda r: (tuple("" if t is None else t for t in r), tuple(field(t) for t in r)))
    with open(path, "w", newline="", encoding="utf-8") as f:
        f.write(",".join(field(name) for name, _ in columns) + "\n")
        for r in rendered:
            f.write(",".join(field(t) for t in r) + "\n")
    schema = "struct<" + ",".join(f"{name}:{kind}" for name, kind in columns) + ">\n"
    path.with_suffix(".schema").write_text(schema, encoding="utf-8")


def main():
    for run in range(1, len(ORDERS) + 1):
        out = HERE / "expected" / f"run{run}"
        out.mkdir(parents=True, exist_ok=True)
        orders = [o for batch in ORDERS[:run] for o in batch]
        changes = [c for batch in CUSTOMERS[:run] for c in batch]

        # JSON columns as Auto Loader infers them: in the order of the first record's fields.
        write(out / "orders_raw.csv",
              [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "double"), ("status", "string"),
               ("_rescued_data", "string")],
              [(o, c, a, s, None) for o, c, a, s in orders])
        write(out / "customer_changes.csv",
              [("id", "bigint"), ("name", "string"), ("country", "string"), ("op", "string"), ("seq", "bigint"),
               ("_rescued_data", "string")],
              [(*c, None) for c in changes])

        valid = [o for o in orders if o[2] > 0]
        clean = [(o, c, a, s, -a if s == "refunded" else a) for o, c, a, s in valid
                 if o is not None and s in ("paid", "refunded")]
        write(out / "orders_clean.csv",
              [("order_id", "bigint"), ("customer_id", "bigint"), ("amount", "double"), ("status", "string"),
               ("signed", "double"), ("status_code", "int")],
              [(*row, None) for row in clean])

        revenue = {}
        for _, c, _, _, signed in clean:
            if c is None:
                continue
            total, n = revenue.get(c, (0.0, 0))
            revenue[c] = (total + signed, n + 1)
        write(out / "customer_revenue.csv",
              [("customer_id", "bigint"), ("total", "double"), ("orders", "bigint")],
              [(c, t, n) for c, (t, n) in revenue.items()])

        latest = {}
        for i, name, country, op, seq in changes:
            if name is None:
                continue
            if i in latest and latest[i][0] >= seq:
                continue
            latest[i] = (seq, op, name, country)
        write(out / "customers.csv",
              [("id", "bigint"), ("name", "string"), ("country", "string")],
              [(i, name, country) for i, (seq, op, name, country) in latest.items() if op != "DELETE"])


if __name__ == "__main__":
    main()
