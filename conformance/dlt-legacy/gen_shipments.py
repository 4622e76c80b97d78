"""gen_shipments.py DATA N: writes batch N of the landing files under DATA.

shipments/batch<N>/shipments.csv  shipment_id,destination,weight_kg (with a header line)
scans/batch<N>/scans.csv          hub,scanned_at,shipment_id,scan_id (another order than the
                                  pipeline declares)

The batches are fixed (below), so replay.py computes the expected tables from the same rows
without running any engine.
"""
import csv, os, sys

# (shipment_id, destination, weight_kg as written)
SHIPMENTS = [
    [("S1", "Oslo", "12.5"), ("S2", "Bergen", "0"), ("S3", "Tromsø", "3.25")],
    [("S4", "Oslo", "7"), ("S5", "Bergen", "1.5")],
]

# (scan_id, shipment_id, hub as written, scanned_at)
SCANS = [
    [("C1", "S1", "osl", "2026-05-01 08:00:00"), ("C2", "S2", "BGO", "2026-05-01 09:30:00"),
     ("C3", "S3", "TEST", "2026-05-01 10:00:00")],
    [("C4", "S1", "OSL", "2026-05-01 18:00:00"), ("C5", "S4", "trd", "2026-05-02 07:45:00"),
     ("C6", "S5", "test", "2026-05-02 08:00:00"), ("C7", "S5", "BGO", "2026-05-02 09:00:00"),
     ("C8", "S3", "Osl", "2026-05-02 11:00:00")],
]


def write(path, header, rows):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(header)
        w.writerows(rows)


def main():
    data, n = sys.argv[1], int(sys.argv[2])
    write(os.path.join(data, "shipments", f"batch{n}", "shipments.csv"),
          ["shipment_id", "destination", "weight_kg"], SHIPMENTS[n])
    write(os.path.join(data, "scans", f"batch{n}", "scans.csv"),
          ["hub", "scanned_at", "shipment_id", "scan_id"],
          [(hub, at, shipment, scan) for scan, shipment, hub, at in SCANS[n]])


if __name__ == "__main__":
    main()
