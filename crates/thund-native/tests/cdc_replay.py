"""cdc_replay.py CHANGES OUT: the expected AUTO CDC tables of the change feed in CHANGES.

Reads every JSON-lines file in CHANGES (changes shaped as conformance/auto-cdc's: seq, id, op,
name, city, email) and replays them, sorted by sequence, with that case's independent replay.
Writes OUT/{customers,customers_keep_values,customers_history}.csv.
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
write(out / "customers.csv", ["id", "name", "city", "email", "seq"], current.values())
write(out / "customers_keep_values.csv", ["id", "name", "city", "email"], keep.values())
write(out / "customers_history.csv", ["id", "name", "city", "email", "seq", "__START_AT", "__END_AT"],
      [(v["id"], v["name"], v["city"], v["email"], v["seq"], v["start"], v["end"]) for v in history])
