#!/usr/bin/env bash
# Every benchmark, every contender, in one command and one session:
#
#     bench/run.sh [--sf 1] [--runs 3] [--no-spark]
#
# 1. builds the release `thund`, the raw-DataFusion binary and the Spark lowering bench;
# 2. prepares a Python venv with DuckDB, tpchgen-cli and matplotlib (cached, PyPI);
# 3. TPC-H medallion at the given scale factor: Þund native, raw DataFusion, DuckDB → Parquet,
#    and (unless --no-spark) a local Spark Connect 4.1.4 server running the same pipeline through
#    Þund and through `spark-pipelines run`; gold tables must agree on every system;
# 4. incremental materialized views: the medallion over AUTO CDC tables, each view's refresh
#    after 1% of orders and lineitem changed vs its full recompute;
# 5. the streaming variant: lineitem split into files, a full refresh vs an incremental run that
#    adds 1% new files, and the idle-run overhead;
# 6. `thund validate` on generated 100 / 1,000 / 10,000-dataset projects, and lowering +
#    defining a 500-dataset project on the Spark server;
# 7. `thund test` on the sample project and on 100 tests of a generated 20-dataset project;
# 8. bench/report.py: one table on stdout, bench/results/bench.json and bench/results/bench.png.
set -euo pipefail

SF=1
RUNS=3
SPARK=1
while [ $# -gt 0 ]; do
  case "$1" in
    --sf) SF="$2"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --no-spark) SPARK=0; shift ;;
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench/run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/thund-target}"
VENV="${BENCH_VENV:-$HOME/.cache/thund-bench-venv}"

echo "== building release binaries"
# One build with one feature set, so the binaries below are consistent with each other.
cargo build --release -q --workspace --bins --examples --features knut-thund/spark

echo "== python packages ($VENV)"
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/python" -c "import duckdb, pyarrow, matplotlib, deltalake" 2>/dev/null && [ -x "$VENV/bin/tpchgen-cli" ] ||
  "$VENV/bin/pip" install -q tpchgen-cli duckdb pyarrow matplotlib deltalake
export BENCH_PYTHON="$VENV/bin/python"

if [ "$SPARK" = 1 ]; then
  scripts/spark-server.sh install 4.1.4 >/dev/null
  SPARK_ARGS=(--spark)
else
  SPARK_ARGS=()
fi

rm -f bench/results/tpch_sf"$SF".json bench/results/refresh_sf"$SF".json bench/results/streaming.json bench/results/scale.json bench/results/event_log.json
echo "== TPC-H SF $SF"
"$BENCH_PYTHON" bench/tpch.py --sf "$SF" --runs "$RUNS" "${SPARK_ARGS[@]}"
echo "== incremental materialized views (1% of orders and lineitem changed)"
"$BENCH_PYTHON" bench/refresh.py --sf "$SF"
echo "== streaming (lineitem split into files)"
"$BENCH_PYTHON" bench/streaming.py --sf "$SF"
echo "== front end at scale"
"$BENCH_PYTHON" bench/scale.py "${SPARK_ARGS[@]}"
echo "== event log at scale"
"$BENCH_PYTHON" bench/event_log.py
echo "== thund test"
"$BENCH_PYTHON" bench/unit_tests.py --runs "$RUNS"
echo "== report"
"$BENCH_PYTHON" bench/report.py --sf "$SF"
