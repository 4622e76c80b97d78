"""replay.py: the expected tables of every run, from a replay of the whole change history.

Independent of any engine: after run N, the changes of batches 0..N-1 (gen_changes.BATCHES) are
sorted by sequence and applied one by one, as DLT defines AUTO CDC:
- SCD type 1: a change sets the key's row; a delete removes it.
- IGNORE NULL UPDATES: a change's NULL columns keep the key's current values.
- SCD type 2 tracking every column but email: a change of name or city closes the current
  version at the change's sequence and opens a new one; an email-only change updates the current
  version in place; a delete closes the current version.
Writes expected/run<N>/{customers,customers_keep_values,customers_history,customer_changes}.csv,
each with a .schema (the table's Spark type as simpleString); the format is in ../README.md.

    python3 conformance/auto-cdc/replay.py
"""
import os, pathlib, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_changes import BATCHES

HERE = pathlib.Path(__file__).parent
# Spark's types: the change feed's JSON integers are inferred as bigint; the SCD tables keep the
# feed's types, and SCD type 2's __START_AT/__END_AT have the type of the SEQUENCE BY column.
BIGINT, STRING = "bigint", "string"


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


def replay(changes):
    current, keep, history, open_version = {}, {}, [], {}
    for seq, cid, op, name, city, email in sorted(changes):
        if op == "DELETE":
            current.pop(cid, None)
            keep.pop(cid, None)
            if cid in open_version:
                v = open_version.pop(cid)
                v["end"] = seq
                history.append(v)
            continue
        current[cid] = (cid, name, city, email, seq)
        old = keep.get(cid)
        keep[cid] = (cid,
                     name if name is not None or old is None else old[1],
                     city if city is not None or old is None else old[2],
                     email if email is not None or old is None else old[3])
        v = open_version.get(cid)
        if v is not None and (v["name"], v["city"]) == (name, city):
            v.update(email=email, seq=seq)  # only the untracked column changed
            continue
        if v is not None:
            v["end"] = seq
            history.append(v)
        open_version[cid] = {"id": cid, "name": name, "city": city, "email": email, "seq": seq,
                             "start": seq, "end": None}
    history.extend(open_version.values())
    return current, keep, history


def main():
    for run in range(1, len(BATCHES) + 1):
        changes = [c for b in range(run) for c in BATCHES[b]]
        current, keep, history = replay(changes)
        out = HERE / "expected" / f"run{run}"
        out.mkdir(parents=True, exist_ok=True)
        write(out / "customer_changes.csv",
              [("seq", BIGINT), ("id", BIGINT), ("op", STRING), ("name", STRING), ("city", STRING),
               ("email", STRING)], changes)
        write(out / "customers.csv",
              [("id", BIGINT), ("name", STRING), ("city", STRING), ("email", STRING), ("seq", BIGINT)],
              current.values())
        write(out / "customers_keep_values.csv",
              [("id", BIGINT), ("name", STRING), ("city", STRING), ("email", STRING)], keep.values())
        write(out / "customers_history.csv",
              [("id", BIGINT), ("name", STRING), ("city", STRING), ("email", STRING), ("seq", BIGINT),
               ("__START_AT", BIGINT), ("__END_AT", BIGINT)],
              [(v["id"], v["name"], v["city"], v["email"], v["seq"], v["start"], v["end"]) for v in history])


if __name__ == "__main__":
    main()
