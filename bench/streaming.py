"""Streaming benchmark: an incremental run that adds 1% new files vs a full refresh of the same
data, and the overhead of an idle incremental run (no new data) on a 20-dataset pipeline.

    python3 bench/streaming.py [--files 200] [--rows 5000]

Uses the release `thund` (built if missing). Prints a table and writes
bench/results/streaming.json.
"""
import argparse
import json
import pathlib
import random
import tempfile

from common import median_of, save, table, thund_binary, timed

SPEC = "name: bench\nlibraries:\n  - glob:\n      include: sql/**\n"

CHAIN = """
CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');
CREATE STREAMING TABLE silver AS
SELECT id, sensor, value, value * 1.8 + 32 AS value_f, CAST(at AS TIMESTAMP) AS at
FROM STREAM(bronze) WHERE value IS NOT NULL;
CREATE MATERIALIZED VIEW gold AS
SELECT sensor, count(*) AS n, avg(value) AS mean, max(value) AS peak FROM silver GROUP BY sensor;
"""


def write_file(folder: pathlib.Path, index: int, rows: int, rng: random.Random):
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / f"part-{index:05d}.json", "w") as f:
        for i in range(rows):
            value = None if rng.random() < 0.01 else round(rng.uniform(-20, 40), 2)
            f.write(json.dumps({"id": index * rows + i, "sensor": f"s{rng.randint(1, 50)}", "value": value,
                                "at": f"2026-01-{1 + index % 28:02d}T{rng.randint(0, 23):02d}:00:00"}) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--rows", type=int, default=5000)
    args = ap.parse_args()
    thund = thund_binary()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        proj = pathlib.Path(tmp) / "chain"
        (proj / "sql").mkdir(parents=True)
        (proj / "spark-pipeline.yml").write_text(SPEC)
        (proj / "sql" / "a.sql").write_text(CHAIN)
        for i in range(args.files):
            write_file(proj / "in" / f"day{i % 10}", i, args.rows, rng)
        run = lambda *extra: timed([thund, "run", "-p", str(proj), *extra])
        run()  # warm the OS cache and create the tables
        full = median_of(3, lambda: run("--full-refresh-all"))
        added = max(1, args.files // 100)
        next_index = [args.files]

        def incremental():
            for _ in range(added):
                write_file(proj / "in" / "new", next_index[0], args.rows, rng)
                next_index[0] += 1
            return run()

        inc = median_of(3, incremental)
        idle_chain = median_of(5, run)

        # 20 datasets: 10 file-fed streaming tables and 10 materialized views on them.
        wide = pathlib.Path(tmp) / "wide"
        (wide / "sql").mkdir(parents=True)
        (wide / "spark-pipeline.yml").write_text(SPEC)
        stmts = []
        for k in range(10):
            write_file(wide / "in" / f"t{k}", k, 100, rng)
            stmts.append(f"CREATE STREAMING TABLE st{k} AS SELECT * FROM STREAM read_files('in/t{k}', format => 'json');")
            stmts.append(f"CREATE MATERIALIZED VIEW mv{k} AS SELECT sensor, count(*) AS n FROM st{k} GROUP BY sensor;")
        (wide / "sql" / "a.sql").write_text("\n".join(stmts) + "\n")
        timed([thund, "run", "-p", str(wide)])
        idle_wide = median_of(5, lambda: timed([thund, "run", "-p", str(wide)]))

    total_rows = args.files * args.rows
    ratio = inc[0] / full[0]
    rows = [
        ["full refresh", f"{total_rows:,} rows", f"{full[0]:.3f}s", f"{full[1]:.0f} MiB", "1.000"],
        ["incremental +1% files", f"{added * args.rows:,} new rows", f"{inc[0]:.3f}s", f"{inc[1]:.0f} MiB", f"{ratio:.3f}"],
        ["idle run, 3 datasets", "no new data", f"{idle_chain[0]:.3f}s", f"{idle_chain[1]:.0f} MiB", f"{idle_chain[0] / full[0]:.3f}"],
        ["idle run, 20 datasets", "no new data (10 ST + 10 MV)", f"{idle_wide[0]:.3f}s", f"{idle_wide[1]:.0f} MiB", ""],
    ]
    print(table(rows, ["run", "data", "wall (median)", "peak RSS", "vs full"]))
    path = save("streaming", {
        "files": args.files, "rows_per_file": args.rows,
        "full_refresh_s": full[0], "incremental_1pct_s": inc[0], "incremental_ratio": ratio,
        "idle_3_datasets_s": idle_chain[0], "idle_20_datasets_s": idle_wide[0],
        "peak_rss_mib": max(full[1], inc[1]),
    })
    print(f"\nwritten {path}")


if __name__ == "__main__":
    main()
