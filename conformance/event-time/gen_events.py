"""gen_events.py OUT BATCH: device events as JSON lines; batch 0 and 1 land in separate runs.

Batch 0 ends at 00:39, so with a 5-minute delay the watermark after run 1 is 00:34. Batch 1 has
a late event at 00:22 (its 10-minute window [00:20, 00:30) closed in run 1: dropped; one of its
20-minute windows, [00:20, 00:40), is still open: counted), an event at 00:31, older than the
watermark but in the open window [00:30, 00:40) (counted), and events up to 00:58.
Events 5 minutes apart probe where a session window ends; one event has no event time.
"""
import json, os, sys

out, b = sys.argv[1], int(sys.argv[2])
BATCHES = {
    0: [("a", 1), ("a", 4), ("a", 9), ("a", 10), ("a", 15), ("a", 27), ("a", 33), ("a", 38),
        ("b", 2), ("b", 12), ("b", 13), ("b", 19), ("b", 31), ("b", 39),
        ("c", 5), ("c", 6), ("c", 22), ("c", None)],
    1: [("a", 22), ("a", 31), ("b", 44), ("b", 52), ("c", 36), ("c", 58)],
}
os.makedirs(f"{out}/events/batch{b}", exist_ok=True)
with open(f"{out}/events/batch{b}/part-0.json", "w") as f:
    for i, (device, minute) in enumerate(BATCHES[b]):
        ts = None if minute is None else f"2026-06-01T00:{minute:02d}:00"
        f.write(json.dumps({"event_id": b * 100 + i, "device": device, "ts": ts,
                            "value": round(1.5 * i + 10 * b + 0.25, 2)}) + "\n")
