"""The front end at scale: `thund validate` on generated projects of 100 / 1,000 / 10,000
datasets (the whole CLI process, as a user waits for it), and with `--spark` the lowering of a
500-dataset project plus defining it on a local Spark Connect 4.1.4 server.

    python3 bench/scale.py [--sizes 100 1000 10000] [--spark]

Writes bench/results/scale.json.
"""
import argparse
import json
import os
import pathlib
import subprocess
import tempfile

from common import ROOT, median_of, release_binary, save, table, thund_binary, timed


def generate(folder: pathlib.Path, n: int):
    """Bronze/silver/gold chains with joins, aggregates and CTEs, spread over 10 files."""
    (folder / "sql").mkdir(parents=True)
    (folder / "spark-pipeline.yml").write_text("name: bench\nlibraries:\n  - glob:\n      include: sql/**\n")
    files = [[] for _ in range(10)]
    for i in range(n):
        if i % 3 == 0:
            stmt = (f"CREATE MATERIALIZED VIEW d{i} COMMENT 'seed' AS SELECT * FROM VALUES "
                    "(1, 'a', 2.5), (2, 'b', 3.5) AS t(id, name, amount);")
        elif i % 3 == 1:
            stmt = (f"CREATE TEMPORARY VIEW d{i} AS WITH base AS (SELECT id, upper(name) AS name, amount "
                    f"FROM d{i - 1} WHERE amount > 0) SELECT * FROM base;")
        else:
            stmt = (f"CREATE MATERIALIZED VIEW d{i} AS SELECT a.id, count(*) AS n, sum(a.amount) AS total, "
                    f"max(b.name) AS name\n  FROM d{i - 1} a LEFT JOIN d{i - 2} b ON a.id = b.id GROUP BY a.id;")
        files[i % 10].append(stmt)
    for k, stmts in enumerate(files):
        (folder / "sql" / f"f{k:02d}.sql").write_text("\n".join(stmts) + "\n")


def spark_lowering(n: int):
    server = str(ROOT / "scripts" / "spark-server.sh")
    subprocess.run([server, "stop", "4.1.4"], check=True)
    url = subprocess.run([server, "start", "4.1.4"], check=True, capture_output=True, text=True).stdout.strip()
    try:
        exe = release_binary("examples/bench_spark_define", "-p", "knut-thund", "--features", "spark",
                             "--example", "bench_spark_define")
        out = subprocess.run([exe, str(n), "--json"], env=dict(os.environ, THUND_SPARK_REMOTE=url),
                             check=True, capture_output=True, text=True).stdout
        return json.loads(out.strip().splitlines()[-1])
    finally:
        subprocess.run([server, "stop", "4.1.4"], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--spark", action="store_true", help="also lower and define 500 datasets on Spark")
    args = ap.parse_args()
    thund = thund_binary()
    validate = {}
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.sizes:
            proj = pathlib.Path(tmp) / f"p{n}"
            generate(proj, n)
            validate[n] = median_of(5 if n < 10000 else 3, lambda: timed([thund, "validate", "-p", str(proj)]))
    rows = [[f"thund validate, {n:,} datasets", f"{w * 1e3:.0f} ms", f"{rss:.0f} MiB"] for n, (w, rss) in validate.items()]
    result = {"validate": {str(n): {"wall_s": w, "peak_rss_mib": rss} for n, (w, rss) in validate.items()},
              "binary_mib": os.path.getsize(thund) / 2**20}
    rows.append(["size of the release `thund` binary", "", f"{result['binary_mib']:.0f} MiB"])
    if args.spark:
        s = spark_lowering(500)
        result["spark_500"] = s
        rows.append([f"lower {s['datasets']} datasets to an SDP graph", f"{s['lower_ms']:.0f} ms", ""])
        rows.append([f"define {s['datasets']} datasets on Spark 4.1.4", f"{s['define_ms']:.0f} ms", ""])
        rows.append([f"server dry run of {s['datasets']} datasets", f"{s['dry_run_ms']:.0f} ms", ""])
    print(table(rows, ["what", "wall (median)", "peak RSS"]))
    print(f"written {save('scale', result)}")


if __name__ == "__main__":
    main()
