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

    python3 conformance/dlt-legacy/replay.py
"""
import csv, os, pathlib, sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_shipments import SCANS, SHIPMENTS

HERE = pathlib.Path(__file__).parent
HUBS = {"OSL": "east", "BGO": "west", "TRD": "mid"}


def write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        for r in sorted(rows, key=lambda r: tuple("" if v is None else str(v) for v in r)):
            w.writerow(["" if v is None else v for v in r])


def main():
    for run in range(1, len(SHIPMENTS) + 1):
        out = HERE / "expected" / f"run{run}"
        out.mkdir(parents=True, exist_ok=True)
        shipments = [s for batch in SHIPMENTS[:run] for s in batch]
        scans = [s for batch in SCANS[:run] for s in batch]
        write(out / "shipments_raw.csv", ["shipment_id", "destination", "weight_kg"], shipments)
        write(out / "scans_raw.csv", ["scan_id", "shipment_id", "hub", "scanned_at"], scans)
        write(out / "hubs.csv", ["hub", "region"], HUBS.items())
        silver = [(scan, shipment, hub.upper(), at, HUBS.get(hub.upper()))
                  for scan, shipment, hub, at in scans if hub.upper() != "TEST"]
        write(out / "scans_silver.csv", ["scan_id", "shipment_id", "hub", "scanned_at", "region"], silver)
        kept = [(s, d, float(w)) for s, d, w in shipments if float(w) > 0]
        write(out / "shipments_silver.csv", ["shipment_id", "destination", "weight_kg"], kept)
        days = {}
        for _, shipment, hub, at, region in silver:
            key = (hub, region, at[:10])
            scans_n, seen = days.get(key, (0, set()))
            days[key] = (scans_n + 1, seen | {shipment})
        write(out / "hub_daily.csv", ["hub", "region", "day", "scans", "shipments"],
              [(h, r, d, n, len(seen)) for (h, r, d), (n, seen) in days.items()])
        status = []
        for shipment, destination, weight in kept:
            mine = [at for _, s, _, at, _ in silver if s == shipment]
            status.append((shipment, destination, weight, len(mine), max(mine) if mine else None))
        write(out / "shipment_status.csv", ["shipment_id", "destination", "weight_kg", "scans", "last_scan"], status)


if __name__ == "__main__":
    main()
