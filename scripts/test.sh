#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (warnings are errors), and the whole test suite
# with nextest. Installs what the tests need on first use: cargo-nextest, a Python venv with
# `deltalake` for the Delta interop test, real Spark Connect servers (one per Spark line with a
# pipelines service, each line's newest: pyspark 4.1.4, 4.2.1 and 4.3.0 from PyPI, Java 17)
# that the Spark tests run against, a local S3-compatible server (moto,
# from PyPI) for s3:// storage roots, and Debian's chromium and chromium-driver for the web
# view's browser test; the servers are stopped on exit.
#
#   scripts/test.sh             a full run: every test, against the real services. It refuses to
#                               start while an opt-out (THUND_SKIP_*, THUND_BLESS*) is set, and
#                               fails if any test skipped; its last line is the number skipped.
#   scripts/test.sh --partial   honours the opt-outs (quick local loops without a service); its
#                               last line says it was a partial run, never a full one.
set -euo pipefail
cd "$(dirname "$0")/.."

partial=""
case "${1:-}" in
  "") ;;
  --partial) partial=1 ;;
  *) echo "usage: scripts/test.sh [--partial]" >&2; exit 2 ;;
esac
if ! opt_outs=$(scripts/opt-outs.sh) && [ -z "$partial" ]; then
  echo "scripts/test.sh: $(echo $opt_outs) set (an empty value counts): a full run runs every test" \
    "and blesses nothing. Unset them, or start a partial run: scripts/test.sh --partial" >&2
  exit 2
fi
# An opt-out is read as the tests read it (thund-testkit): set at all, an empty value included.
opted_out() { [ -n "${!1+set}" ]; }

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
export CARGO_TERM_COLOR="${CARGO_TERM_COLOR:-never}"

if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi

# Python readers used as independent oracles (Delta interop).
. scripts/python-env.sh
export THUND_PYTHON

# Real Spark Connect servers for the spark-connect-sdp tests, unless explicitly skipped: each
# line's newest release, and the variable its URL is exported in (thund_testkit::SPARK_LINES).
spark_servers="4.1.4:THUND_SPARK_REMOTE 4.2.1:THUND_SPARK_REMOTE_4_2 4.3.0:THUND_SPARK_REMOTE_4_3"
if ! opted_out THUND_SKIP_SPARK; then
  for server in $spark_servers; do scripts/spark-server.sh install "${server%%:*}"; done
fi

# A real headless browser for `thund ui`'s page, unless explicitly skipped.
if ! opted_out THUND_SKIP_BROWSER && ! { command -v chromium && command -v chromedriver; } >/dev/null 2>&1; then
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium chromium-driver
fi

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --doc
servers_up=""
stop_servers() {
  [ -z "$servers_up" ] && return 0
  servers_up=""
  if ! opted_out THUND_SKIP_SPARK; then
    for server in $spark_servers; do scripts/spark-server.sh stop "${server%%:*}"; done
  fi
  opted_out THUND_SKIP_S3 || scripts/s3-server.sh stop
  true
}
trap stop_servers EXIT
servers_up=1
if ! opted_out THUND_SKIP_S3; then
  THUND_S3_ENDPOINT="$(scripts/s3-server.sh start)"
  export THUND_S3_ENDPOINT
fi
if ! opted_out THUND_SKIP_SPARK; then
  for server in $spark_servers; do
    url="$(scripts/spark-server.sh start "${server%%:*}")"
    export "${server#*:}=$url"
  done
fi
# Every test that opts out appends a line here (thund-testkit): nextest hides a passing test's
# output, so this count is what makes a skip visible.
THUND_TEST_SKIPS="$(mktemp -t thund-skips.XXXXXX)"
export THUND_TEST_SKIPS
rc=0
cargo nextest run --workspace --no-fail-fast || rc=$?
stop_servers
skipped=$(wc -l < "$THUND_TEST_SKIPS")
sed 's/^/  /' "$THUND_TEST_SKIPS"
rm -f "$THUND_TEST_SKIPS"
if [ -n "$partial" ]; then
  echo "PARTIAL RUN, not a full run: $skipped tests skipped (opt-outs set: $(echo ${opt_outs:-none}))"
  exit "$rc"
fi
if [ "$skipped" -ne 0 ] && [ "$rc" -eq 0 ]; then
  rc=1
fi
echo "skipped: $skipped tests (a full run skips none)"
exit "$rc"
