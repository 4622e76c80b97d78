#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (warnings are errors), and the whole test suite
# with nextest. Installs what the tests need on first use: cargo-nextest, a Python venv with
# `deltalake` for the Delta interop test, real Spark Connect servers (pyspark 4.1.4 and 4.3.0
# from PyPI, Java 17) that the Spark tests run against, a local S3-compatible server (moto,
# from PyPI) for s3:// storage roots, and Debian's chromium and chromium-driver for the web
# view's browser test; the servers are stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi

# Python readers used as independent oracles (Delta interop).
. scripts/python-env.sh
export THUND_PYTHON

# Real Spark Connect servers for the spark-connect-sdp tests, unless explicitly skipped.
if [ -z "${THUND_SKIP_SPARK:-}" ]; then
  scripts/spark-server.sh install 4.1.4
  scripts/spark-server.sh install 4.3.0
fi

# A real headless browser for `thund ui`'s page, unless explicitly skipped.
if [ -z "${THUND_SKIP_BROWSER:-}" ] && ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --doc
stop_servers() {
  [ -z "${THUND_SKIP_SPARK:-}" ] && { scripts/spark-server.sh stop 4.1.4; scripts/spark-server.sh stop 4.3.0; }
  [ -z "${THUND_SKIP_S3:-}" ] && scripts/s3-server.sh stop
  true
}
trap stop_servers EXIT
if [ -z "${THUND_SKIP_S3:-}" ]; then
  THUND_S3_ENDPOINT="$(scripts/s3-server.sh start)"
  export THUND_S3_ENDPOINT
fi
if [ -z "${THUND_SKIP_SPARK:-}" ]; then
  THUND_SPARK_REMOTE="$(scripts/spark-server.sh start 4.1.4)"
  THUND_SPARK_REMOTE_4_3="$(scripts/spark-server.sh start 4.3.0)"
  export THUND_SPARK_REMOTE THUND_SPARK_REMOTE_4_3
fi
cargo nextest run --workspace --no-fail-fast
