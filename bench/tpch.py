"""TPC-H medallion pipeline, side by side: Þund (native, release) vs raw DataFusion vs DuckDB.

    python3 bench/tpch.py [--sf 0.1] [--runs 3]

Generates TPC-H Parquet with `tpchgen-cli`, runs the same six datasets on every engine (each
materializes every dataset: Þund as Delta tables, DuckDB and DataFusion as Parquet files),
checks that the gold tables agree (row counts and a checksum), and prints wall time (median),
peak RSS and the ratio to Þund. Raw DataFusion is `examples/raw_datafusion` of thund-native:
the same DataFusion release Þund runs on, on a plain session with no pipeline framework. Needs a
venv with `tpchgen-cli duckdb pyarrow` (bench/README.md; bench/run.sh prepares it).

With `--spark`, it also starts a local Spark Connect server (pyspark 4.1.4, `local[2]`, via
scripts/spark-server.sh; start time reported separately) and runs the same pipeline there twice
over: through Þund (`thund run --backend spark`) and through the reference client
(`spark-pipelines run`), and checks Spark's gold tables against Þund native's.
"""
import argparse
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile

from common import ROOT, median_of, release_binary, save, table, thund_binary, timed

# Each dataset: (name, SQL with {src:table} for a TPC-H source and plain names for datasets).
DATASETS = [
    ("silver_lineitem", """
SELECT l.l_orderkey, l.l_linenumber, l.l_quantity, l.l_extendedprice, l.l_discount, l.l_tax,
       l.l_returnflag, l.l_linestatus, l.l_shipdate, l.l_commitdate, l.l_receiptdate, l.l_shipmode,
       o.o_custkey, o.o_orderdate, o.o_shippriority,
       l.l_extendedprice * (1 - l.l_discount) AS net_revenue
FROM {src:lineitem} l JOIN {src:orders} o ON l.l_orderkey = o.o_orderkey
WHERE l.l_quantity > 0"""),
    ("revenue_by_nation_year", """
SELECT n.n_name AS nation, EXTRACT(YEAR FROM s.o_orderdate) AS year, sum(s.net_revenue) AS revenue, count(*) AS lines
FROM silver_lineitem s
JOIN {src:customer} c ON s.o_custkey = c.c_custkey
JOIN {src:nation} n ON c.c_nationkey = n.n_nationkey
GROUP BY n.n_name, EXTRACT(YEAR FROM s.o_orderdate)"""),
    ("top_customers", """
SELECT o_custkey, sum(net_revenue) AS revenue, count(DISTINCT l_orderkey) AS orders
FROM silver_lineitem GROUP BY o_custkey ORDER BY revenue DESC, o_custkey LIMIT 100"""),
    ("shipping_delay", """
SELECT l_shipmode, count(*) AS shipments,
       avg(CAST(l_receiptdate - l_shipdate AS INT)) AS avg_days,
       max(CAST(l_receiptdate - l_shipdate AS INT)) AS max_days,
       sum(CASE WHEN l_receiptdate > l_commitdate THEN 1 ELSE 0 END) AS late
FROM silver_lineitem GROUP BY l_shipmode"""),
    ("pricing_summary", """
SELECT l_returnflag, l_linestatus, sum(l_quantity) AS sum_qty, sum(l_extendedprice) AS sum_base_price,
       sum(net_revenue) AS sum_disc_price, sum(net_revenue * (1 + l_tax)) AS sum_charge,
       avg(l_quantity) AS avg_qty, avg(l_extendedprice) AS avg_price, avg(l_discount) AS avg_disc, count(*) AS count_order
FROM silver_lineitem WHERE l_shipdate <= DATE '1998-09-02'
GROUP BY l_returnflag, l_linestatus"""),
    ("shipping_priority", """
SELECT s.l_orderkey, sum(s.net_revenue) AS revenue, s.o_orderdate, s.o_shippriority
FROM silver_lineitem s JOIN {src:customer} c ON s.o_custkey = c.c_custkey
WHERE c.c_mktsegment = 'BUILDING' AND s.o_orderdate < DATE '1995-03-15' AND s.l_shipdate > DATE '1995-03-15'
GROUP BY s.l_orderkey, s.o_orderdate, s.o_shippriority
ORDER BY revenue DESC, s.o_orderdate, s.l_orderkey LIMIT 100"""),
]
SOURCES = ["lineitem", "orders", "customer", "nation"]
# Per gold dataset: a checksum query every engine answers the same way.
CHECKS = {
    "revenue_by_nation_year": "SELECT count(*), round(sum(revenue), 2) FROM {t}",
    "top_customers": "SELECT count(*), round(sum(revenue), 2) FROM {t}",
    "shipping_delay": "SELECT count(*), sum(shipments), sum(late) FROM {t}",
    "pricing_summary": "SELECT count(*), sum(count_order), round(sum(sum_charge), 2) FROM {t}",
    "shipping_priority": "SELECT count(*), round(sum(revenue), 2) FROM {t}",
}


def sql_for(engine, data):
    def src(name):
        path = f"{data}/{name}.parquet"
        return {"thund": f"parquet.`{path}`", "duckdb": f"read_parquet('{path}')", "datafusion": name}[engine]

    out = []
    for name, q in DATASETS:
        for s in SOURCES:
            q = q.replace("{src:%s}" % s, src(s))
        out.append((name, q.strip()))
    return out


DUCKDB = """
import duckdb, sys, json
out, stmts = sys.argv[1], json.loads(sys.argv[2])
con = duckdb.connect()
if len(sys.argv) > 3:
    con.execute(f"SET memory_limit = '{sys.argv[3]}'")
for name, q in stmts:
    con.execute(f"CREATE TABLE {name} AS {q}")
    con.execute(f"COPY {name} TO '{out}/{name}.parquet' (FORMAT parquet)")
"""



def raw_datafusion_binary() -> str:
    """thund-native's `raw_datafusion` example, release build."""
    return release_binary("examples/raw_datafusion", "-p", "thund-native", "--example", "raw_datafusion")


def run_spark(args, thund, data, tmp, results):
    """Þund on Spark and the reference `spark-pipelines run`, on one local Spark 4.1.4 server."""
    import time
    server = str(ROOT / "scripts" / "spark-server.sh")
    subprocess.run([server, "stop", "4.1.4"], check=True)
    t = time.perf_counter()
    url = subprocess.run([server, "start", "4.1.4"], check=True, capture_output=True, text=True).stdout.strip()
    started = time.perf_counter() - t
    print(f"Spark Connect 4.1.4 server started in {started:.1f} s at {url}")
    spark_py = subprocess.run([server, "python", "4.1.4"], check=True, capture_output=True, text=True).stdout.strip()
    sql = "\n".join(f"CREATE MATERIALIZED VIEW {n} AS\n{q};\n" for n, q in sql_for("thund", data))
    projects = {}
    for system, db in [("thund → spark", "bench_thund"), ("spark-pipelines", "bench_sdp")]:
        proj = tmp / db
        (proj / "sql").mkdir(parents=True)
        (proj / "spark-pipeline.yml").write_text(
            f"name: {db}\nstorage: file://{proj / 'storage'}\ndatabase: {db}\n"
            "libraries:\n  - glob:\n      include: sql/**\n")
        (proj / "sql" / "medallion.sql").write_text(sql)
        projects[system] = proj
    subprocess.run([thund, "query", "--backend", "spark", "--remote", url, "CREATE DATABASE IF NOT EXISTS bench_sdp"],
                   check=True, capture_output=True)
    env = dict(os.environ, PATH=f"{pathlib.Path(spark_py).parent}:{os.environ['PATH']}")
    try:
        results["thund → spark"] = median_of(args.runs, lambda: timed(
            [thund, "run", "--backend", "spark", "--remote", url, "-p", str(projects["thund → spark"])]))
        results["spark-pipelines"] = median_of(args.runs, lambda: timed(
            ["spark-pipelines", "run", "--remote", url, "--spec", str(projects["spark-pipelines"] / "spark-pipeline.yml")],
            env=env))
        checks = {}
        for system, db in [("thund → spark", "bench_thund"), ("spark-pipelines", "bench_sdp")]:
            checks[system] = {}
            for t, check in CHECKS.items():
                out = subprocess.run([thund, "query", "--backend", "spark", "--remote", url, "--format", "csv",
                                      check.format(t=f"{db}.{t}")], capture_output=True, text=True, check=True)
                checks[system][t] = out.stdout.splitlines()[1]
        return checks, started
    finally:
        subprocess.run([server, "stop", "4.1.4"], check=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sf", default="0.1")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--python", default=os.environ.get("BENCH_PYTHON", sys.executable))
    ap.add_argument("--spark", action="store_true", help="also run on a local Spark Connect server")
    ap.add_argument("--memory-limit", help="e.g. 4G: Þund runs under it, and DuckDB once more under the same limit")
    args = ap.parse_args()
    py = args.python
    thund = thund_binary()
    data = pathlib.Path(__file__).resolve().parent / "data" / f"sf{args.sf}"
    if not (data / "lineitem.parquet").exists():
        data.mkdir(parents=True, exist_ok=True)
        tpchgen = str(pathlib.Path(py).parent / "tpchgen-cli")
        subprocess.run([tpchgen, "parquet", "-s", args.sf, "--output-dir", str(data)], check=True)
    import json
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = pathlib.Path(tmp)
        # Þund project.
        proj = tmp / "thund"
        (proj / "sql").mkdir(parents=True)
        (proj / "spark-pipeline.yml").write_text("name: tpch\nlibraries:\n  - glob:\n      include: sql/**\n")
        (proj / "sql" / "medallion.sql").write_text(
            "\n".join(f"CREATE MATERIALIZED VIEW {n} AS\n{q};\n" for n, q in sql_for("thund", data)))
        # --full-refresh-all: every run recomputes every dataset, as the other systems do (an
        # unchanged materialized view would otherwise be IDLE).
        limit = ["--memory-limit", args.memory_limit] if args.memory_limit else []
        results["thund native"] = median_of(
            args.runs, lambda: timed([thund, "run", "--full-refresh-all", "-p", str(proj), *limit]))

        def fresh(name):
            d = tmp / name
            shutil.rmtree(d, ignore_errors=True)
            d.mkdir()
            return str(d)

        duck = json.dumps(sql_for("duckdb", data))
        results["duckdb → parquet"] = median_of(args.runs, lambda: timed([py, "-c", DUCKDB, fresh("duck"), duck]))
        if args.memory_limit:
            # DuckDB's own unit: `4G` is 4 GiB to both.
            duck_limit = args.memory_limit.upper().rstrip("B").rstrip("I") + "iB"
            results[f"duckdb → parquet ({args.memory_limit})"] = median_of(
                args.runs, lambda: timed([py, "-c", DUCKDB, fresh("duck"), duck, duck_limit]))
        stmts = tmp / "raw_datafusion.json"
        stmts.write_text(json.dumps({"sources": {s: f"{data}/{s}.parquet" for s in SOURCES},
                                     "datasets": sql_for("datafusion", data)}))
        raw = raw_datafusion_binary()
        results["raw datafusion → parquet"] = median_of(args.runs, lambda: timed([raw, str(stmts), fresh("df")]))

        spark_checks, spark_start = {}, None
        if args.spark:
            spark_checks, spark_start = run_spark(args, thund, data, tmp, results)

        # Gold tables must agree across engines.
        mismatches = []
        for t, check in CHECKS.items():
            q = subprocess.run([thund, "query", "-p", str(proj), check.format(t=t), "--format", "csv"],
                               capture_output=True, text=True, check=True).stdout.splitlines()[1]
            for engine in ["duck", "df"]:
                other = subprocess.run([py, "-c", (
                    "import duckdb,sys; print(','.join(str(v) for v in duckdb.sql(sys.argv[1]).fetchall()[0]))")
                    , check.format(t=f"read_parquet('{tmp / engine / t}.parquet')")],
                    capture_output=True, text=True, check=True).stdout.strip()
                norm = lambda s: [float(x) if x else None for x in s.split(",")]
                a, b = norm(q), norm(other)
                if any(abs((x or 0) - (y or 0)) > 1e-6 * max(1.0, abs(x or 0)) for x, y in zip(a, b)):
                    mismatches.append(f"{t}: thund {q} vs {engine} {other}")
            for system, answers in spark_checks.items():
                norm = lambda s: [float(x) if x else None for x in s.split(",")]
                a, b = norm(q), norm(answers[t])
                if any(abs((x or 0) - (y or 0)) > 1e-6 * max(1.0, abs(x or 0)) for x, y in zip(a, b)):
                    mismatches.append(f"{t}: thund {q} vs {system} {answers[t]}")
    base = results["thund native"][0]
    rows = [[k, f"{v[0]:.3f}s", f"{v[1]:.0f} MiB", f"{v[0] / base:.2f}×"] for k, v in results.items()]
    if spark_start is not None:
        rows.append(["(Spark server start)", f"{spark_start:.3f}s", "", ""])
    under = f", Þund under --memory-limit {args.memory_limit}" if args.memory_limit else ""
    print(f"TPC-H SF {args.sf}, 6 datasets, median of {args.runs}{under}")
    print(table(rows, ["system", "wall", "peak RSS", "vs thund"]))
    print("gold tables agree" if not mismatches else "MISMATCH:\n  " + "\n  ".join(mismatches))
    path = save(f"tpch_sf{args.sf}", {
        "sf": args.sf, "runs": args.runs, "memory_limit": args.memory_limit, "mismatches": mismatches, "spark_server_start_s": spark_start,
        "systems": {k: {"wall_s": v[0], "peak_rss_mib": v[1], "vs_thund": v[0] / base} for k, v in results.items()}})
    print(f"written {path}")
    if mismatches:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
