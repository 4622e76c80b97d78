"""Streaming benchmark: TPC-H lineitem split into 100 Parquet files feeds a bronze → silver
streaming chain and a gold materialized view; device events in time order (as many rows as
lineitem, 100 files of 10 minutes each) feed a 1-minute windowed aggregation over event time.
A full refresh of each vs an incremental run that adds 1% new files (one more file of the same
size), and the overhead of an idle incremental run (no new data) on the chain and on a
20-dataset pipeline.

    python3 bench/streaming.py [--sf 1] [--files 100]

Uses the release `thund` (built if missing) and the TPC-H data bench/tpch.py generates. Prints a
table and writes bench/results/streaming.json.
"""
import argparse
import json
import pathlib
import random
import shutil
import tempfile

from common import ROOT, median_of, save, table, thund_binary, timed

SPEC = "name: bench\nlibraries:\n  - glob:\n      include: sql/**\n"

CHAIN = """
CREATE STREAMING TABLE bronze_lineitem AS SELECT * FROM STREAM read_files('in', format => 'parquet');
CREATE STREAMING TABLE silver_lineitem AS
SELECT l_orderkey, l_linenumber, l_quantity, l_extendedprice, l_discount,
       l_extendedprice * (1 - l_discount) AS net_revenue,
       l_returnflag, l_linestatus, l_shipdate, l_receiptdate, l_shipmode
FROM STREAM(bronze_lineitem) WHERE l_quantity > 0;
"""
GOLD = """
CREATE MATERIALIZED VIEW gold_revenue AS
SELECT l_shipmode, year(l_shipdate) AS year, count(*) AS lines, sum(net_revenue) AS revenue
FROM silver_lineitem GROUP BY l_shipmode, year(l_shipdate);
"""

WINDOWS = """
CREATE STREAMING TABLE events AS SELECT * FROM STREAM read_files('in', format => 'parquet');
CREATE STREAMING TABLE per_minute AS
SELECT window.start AS minute, device, count(*) AS events, sum(value) AS total, max(value) AS peak
FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 2 MINUTES
GROUP BY window(ts, '1 minute'), device;
"""


def event_files(sf: str, parts: int) -> pathlib.Path:
    """`parts` Parquet files of device events, file i covering minutes [10i, 10i+10) in random
    order, 60,000 × SF rows each (cached under bench/data)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    out = ROOT / "bench" / "data" / f"sf{sf}" / f"events_{parts}_parts"
    if (out / f"part-{parts - 1:05d}.parquet").exists():
        return out
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    rng = np.random.default_rng(11)
    per = int(60_000 * float(sf))
    start = np.datetime64("2026-06-01T00:00:00", "us")
    for i in range(parts):
        offsets = rng.integers(0, 600_000_000, per) + i * 600_000_000
        pq.write_table(pa.table({
            "id": pa.array(np.arange(i * per, (i + 1) * per, dtype=np.int64)),
            "device": pa.array([f"d{k}" for k in rng.integers(0, 100, per)]),
            "ts": pa.array(start + offsets.astype("timedelta64[us]"), type=pa.timestamp("us", tz="UTC")),
            "value": pa.array(rng.normal(20, 5, per)),
        }), tmp / f"part-{i:05d}.parquet")
    tmp.rename(out)
    return out


def split_lineitem(sf: str, parts: int) -> pathlib.Path:
    """lineitem.parquet split into `parts` files of equal row counts (cached under bench/data)."""
    import pyarrow.parquet as pq

    data = ROOT / "bench" / "data" / f"sf{sf}"
    out = data / f"lineitem_{parts}_parts"
    if (out / f"part-{parts - 1:05d}.parquet").exists():
        return out
    if not (data / "lineitem.parquet").exists():
        raise SystemExit(f"no TPC-H data in {data}: run bench/tpch.py --sf {sf} first")
    tmp = out.with_suffix(".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    table_ = pq.read_table(data / "lineitem.parquet")
    per = -(-table_.num_rows // parts)
    for i in range(parts):
        pq.write_table(table_.slice(i * per, per), tmp / f"part-{i:05d}.parquet")
    tmp.rename(out)
    return out


def project(folder: pathlib.Path, sql: str):
    (folder / "sql").mkdir(parents=True)
    (folder / "spark-pipeline.yml").write_text(SPEC)
    (folder / "sql" / "a.sql").write_text(sql)


def full_vs_incremental(thund, proj: pathlib.Path, parts: pathlib.Path, base: int, added: list):
    """(full refresh, incremental +1%, idle) on `proj`, whose input folder starts with `base` files."""
    (proj / "in").mkdir()
    for i in range(base):
        (proj / "in" / f"part-{i:05d}.parquet").symlink_to(parts / f"part-{i:05d}.parquet")
    run = lambda *extra: timed([thund, "run", "-p", str(proj), *extra])
    run()  # warm the OS cache and create the tables
    full = median_of(3, lambda: run("--full-refresh-all"))
    queue = list(added)

    def incremental():
        i = queue.pop(0)
        (proj / "in" / f"part-{i:05d}.parquet").symlink_to(parts / f"part-{i:05d}.parquet")
        return run()

    inc = median_of(3, incremental)
    idle = median_of(5, run)
    return full, inc, idle


def check_gold(thund, proj: pathlib.Path):
    """After the incremental runs, the gold view must equal a recompute from silver."""
    import subprocess

    q = lambda sql: subprocess.run([thund, "query", "-p", str(proj), "--format", "csv", sql],
                                   check=True, capture_output=True, text=True).stdout.splitlines()[1]
    gold = q("SELECT count(*), sum(lines), sum(revenue) FROM gold_revenue")
    groups = q("SELECT count(*) FROM (SELECT DISTINCT l_shipmode, year(l_shipdate) FROM silver_lineitem)")
    direct = groups + "," + q("SELECT count(*), sum(net_revenue) FROM silver_lineitem")
    if gold != direct:
        raise SystemExit(f"gold_revenue after incremental runs ({gold}) differs from a recompute ({direct})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", default="1")
    ap.add_argument("--files", type=int, default=100, help="files of the full data; +1 file is 1%%")
    args = ap.parse_args()
    thund = thund_binary()
    # Three more files than the base, one per incremental run; each is 1% of the base.
    parts = split_lineitem(args.sf, args.files + 3)
    added = [args.files, args.files + 1, args.files + 2]
    rng = random.Random(7)
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        project(tmp / "chain", CHAIN)
        results["bronze → silver"] = full_vs_incremental(thund, tmp / "chain", parts, args.files, added)
        project(tmp / "gold", CHAIN + GOLD)
        results["bronze → silver → gold MV"] = full_vs_incremental(thund, tmp / "gold", parts, args.files, added)
        check_gold(thund, tmp / "gold")
        events = event_files(args.sf, args.files + 3)
        project(tmp / "windows", WINDOWS)
        results["events → 1-minute windows"] = full_vs_incremental(thund, tmp / "windows", events, args.files, added)

        # 20 datasets: 10 file-fed streaming tables and 10 materialized views on them.
        wide = tmp / "wide"
        stmts = []
        for k in range(10):
            folder = wide / "in" / f"t{k}"
            folder.mkdir(parents=True)
            with open(folder / "part-0.json", "w") as f:
                for i in range(100):
                    f.write(json.dumps({"id": i, "sensor": f"s{rng.randint(1, 50)}", "value": rng.uniform(-20, 40)}) + "\n")
            stmts.append(f"CREATE STREAMING TABLE st{k} AS SELECT * FROM STREAM read_files('in/t{k}', format => 'json');")
            stmts.append(f"CREATE MATERIALIZED VIEW mv{k} AS SELECT sensor, count(*) AS n FROM st{k} GROUP BY sensor;")
        project(wide, "\n".join(stmts) + "\n")
        timed([thund, "run", "-p", str(wide)])
        idle_wide = median_of(5, lambda: timed([thund, "run", "-p", str(wide)]))

    rows = []
    out = {"sf": args.sf, "files": args.files, "pipelines": {}}
    for name, (full, inc, idle) in results.items():
        rows.append([name, "full refresh", f"{full[0]:.3f}s", f"{full[1]:.0f} MiB", "1.000"])
        rows.append(["", "incremental +1% files", f"{inc[0]:.3f}s", f"{inc[1]:.0f} MiB", f"{inc[0] / full[0]:.3f}"])
        rows.append(["", "idle (no new data)", f"{idle[0]:.3f}s", f"{idle[1]:.0f} MiB", f"{idle[0] / full[0]:.3f}"])
        out["pipelines"][name] = {"full_refresh_s": full[0], "incremental_1pct_s": inc[0], "idle_s": idle[0],
                                  "incremental_ratio": inc[0] / full[0], "peak_rss_mib": max(full[1], inc[1])}
    rows.append(["20 datasets (10 ST + 10 MV)", "idle (no new data)", f"{idle_wide[0]:.3f}s", f"{idle_wide[1]:.0f} MiB", ""])
    out["idle_20_datasets_s"] = idle_wide[0]
    print(f"lineitem SF {args.sf} in {args.files} files; median of 3 (idle: of 5)")
    print(table(rows, ["pipeline", "run", "wall", "peak RSS", "vs full"]))
    print("gold view after the incremental runs equals a recompute from silver")
    print(f"\nwritten {save('streaming', out)}")


if __name__ == "__main__":
    main()
