"""cdc_replay.py CHANGES OUT: the expected AUTO CDC tables of the change feed in CHANGES.

Reads every JSON-lines file in CHANGES (changes shaped as conformance/auto-cdc's: seq, id, op,
name, city, email) and replays them, sorted by sequence, with that case's independent replay.
Writes OUT/{customers,customers_keep_values,customers_history}.csv, each with its .schema.
"""
import json, pathlib, sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent.parent / "conformance" / "auto-cdc"))
from replay import replay, write  # noqa: E402

changes = []
for path in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    for line in path.read_text().splitlines():
        c = json.loads(line)
        changes.append((c["seq"], c["id"], c["op"], c["name"], c["city"], c["email"]))
out = pathlib.Path(sys.argv[2])
out.mkdir(parents=True, exist_ok=True)
current, keep, history = replay(changes)
B, S = "bigint", "string"
write(out / "customers.csv", [("id", B), ("name", S), ("city", S), ("email", S), ("seq", B)], current.values())
write(out / "customers_keep_values.csv", [("id", B), ("name", S), ("city", S), ("email", S)], keep.values())
write(out / "customers_history.csv",
      [("id", B), ("name", S), ("city", S), ("email", S), ("seq", B), ("__START_AT", B), ("__END_AT", B)],
      [(v["id"], v["name"], v["city"], v["email"], v["seq"], v["start"], v["end"]) for v in history])
