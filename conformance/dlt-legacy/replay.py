"""replay.py: the expected tables of every run, computed from gen_shipments' rows alone.

After run N the pipeline has read batches 0..N-1. Written as DLT defines the project:
- shipments_raw: every shipment, every column a string (Auto Loader reads a CSV header line and
  infers strings);
- scans_raw: every scan, its columns by the declared names, in the declared order;
- hubs: the three hubs;
- scans_silver: scans whose hub, upper-cased, is not TEST, the time typed, with the hub's region
  (a streaming view over a streaming view, joined with hubs);
- shipments_silver: shipments with a positive weight (DROP ROW), the weight a double;
- hub_daily: per hub, region and day, the scans and the distinct shipments scanned;
- shipment_status: every shipment of shipments_silver with its scans and the last one's time.
Each table's .schema holds its Spark type (simpleString): CSV columns are strings, counts bigint,
CAST(... AS DOUBLE/TIMESTAMP/DATE) double, timestamp and date. The format is in ../README.md.

    python3 conformance/dlt-legacy/replay.py
"""
import os, pathlib, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_shipments import SCANS, SHIPMENTS

HERE = pathlib.Path(__file__).parent
HUBS = {"OSL": "east", "BGO": "west", "TRD": "mid"}


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


def main():
    for run in range(1, len(SHIPMENTS) + 1):
        out = HERE / "expected" / f"run{run}"
        out.mkdir(parents=True, exist_ok=True)
        shipments = [s for batch in SHIPMENTS[:run] for s in batch]
        scans = [s for batch in SCANS[:run] for s in batch]
        write(out / "shipments_raw.csv",
              [("shipment_id", "string"), ("destination", "string"), ("weight_kg", "string")], shipments)
        write(out / "scans_raw.csv",
              [("scan_id", "string"), ("shipment_id", "string"), ("hub", "string"), ("scanned_at", "string")],
              scans)
        write(out / "hubs.csv", [("hub", "string"), ("region", "string")], HUBS.items())
        silver = [(scan, shipment, hub.upper(), at, HUBS.get(hub.upper()))
                  for scan, shipment, hub, at in scans if hub.upper() != "TEST"]
        write(out / "scans_silver.csv",
              [("scan_id", "string"), ("shipment_id", "string"), ("hub", "string"), ("scanned_at", "timestamp"),
               ("region", "string")], silver)
        kept = [(s, d, float(w)) for s, d, w in shipments if float(w) > 0]
        write(out / "shipments_silver.csv",
              [("shipment_id", "string"), ("destination", "string"), ("weight_kg", "double")], kept)
        days = {}
        for _, shipment, hub, at, region in silver:
            key = (hub, region, at[:10])
            scans_n, seen = days.get(key, (0, set()))
            days[key] = (scans_n + 1, seen | {shipment})
        write(out / "hub_daily.csv",
              [("hub", "string"), ("region", "string"), ("day", "date"), ("scans", "bigint"),
               ("shipments", "bigint")],
              [(h, r, d, n, len(seen)) for (h, r, d), (n, seen) in days.items()])
        status = []
        for shipment, destination, weight in kept:
            mine = [at for _, s, _, at, _ in silver if s == shipment]
            status.append((shipment, destination, weight, len(mine), max(mine) if mine else None))
        write(out / "shipment_status.csv",
              [("shipment_id", "string"), ("destination", "string"), ("weight_kg", "double"), ("scans", "bigint"),
               ("last_scan", "timestamp")], status)


if __name__ == "__main__":
    main()
