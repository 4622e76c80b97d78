"""Shared helpers for the benchmark scripts: timing, peak RSS, the thund binary, results."""
import json
import os
import pathlib
import statistics
import subprocess
import sys
import time

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"


def release_binary(relative: str, *cargo_args: str) -> str:
    """A release binary under the cargo target dir (e.g. `thund`, `examples/raw_datafusion`),
    built with `cargo build --release <cargo_args>` if missing (bench/run.sh builds them all)."""
    exe = pathlib.Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "release" / relative
    if not exe.exists():
        subprocess.run(["cargo", "build", "--release", "-q", *cargo_args], cwd=ROOT, check=True)
    return str(exe)


def thund_binary() -> str:
    """The release `thund`, or the binary `THUND_BIN` names."""
    return os.environ.get("THUND_BIN") or release_binary("thund", "-p", "thund-cli")


def timed(cmd, cwd=None, env=None):
    """Runs cmd; returns (wall seconds, peak RSS in MiB). Fails loudly on a non-zero exit."""
    wrapped = ["/usr/bin/time", "-f", "%M"] + list(cmd)
    t = time.perf_counter()
    p = subprocess.run(wrapped, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise SystemExit(f"benchmark command failed: {' '.join(map(str, cmd))}")
    rss_kib = int(p.stderr.strip().splitlines()[-1])
    return wall, rss_kib / 1024


def median_of(n, fn):
    """Runs fn() n times; returns (median wall, max RSS)."""
    runs = [fn() for _ in range(n)]
    return statistics.median(r[0] for r in runs), max(r[1] for r in runs)


def save(name, payload):
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    return path


def table(rows, headers):
    widths = [max(len(str(r[i])) for r in rows + [headers]) for i in range(len(headers))]
    line = lambda r: "  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(r, widths)))
    return "\n".join([line(headers)] + [line(r) for r in rows])
