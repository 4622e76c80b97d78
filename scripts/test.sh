#!/usr/bin/env bash
# Runs every check and test: formatting, clippy (warnings are errors), and the whole test suite
# with nextest. Installs what the tests need (cargo-nextest, a Python venv with `deltalake` for
# the Delta interop test) on first use.
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

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo test --workspace --doc
cargo nextest run --workspace --no-fail-fast
