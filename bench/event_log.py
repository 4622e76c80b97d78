"""The event log at scale: a log of about a million events (a 100-flow pipeline run every five
minutes for a few weeks) read the ways people read it — the web view's first state, its polls
while a run goes, and `thund events` — each by the release binary, as a user waits for it.

    python3 bench/event_log.py [--events 1000000]

The log is made of one real run's events (`thund run` of a 100-view pipeline) repeated with new
run ids and times, written as one file as the log's compaction writes it. Writes
bench/results/event_log.json.
"""
import argparse
import json
import os
import pathlib
import re
import subprocess
import tempfile
import time
import urllib.request

from common import save, table, thund_binary, timed

FLOWS = 100


def project(folder: pathlib.Path):
    (folder / "sql").mkdir(parents=True)
    (folder / "spark-pipeline.yml").write_text("name: busy\nlibraries:\n  - glob:\n      include: sql/**\n")
    views = [f"CREATE MATERIALIZED VIEW v{i} AS SELECT {i} AS x, 'row {i}' AS label;" for i in range(FLOWS)]
    (folder / "sql" / "views.sql").write_text("\n".join(views) + "\n")


def grow(log: str, events: int) -> int:
    """Repeats the log's one run, every five minutes back in time, until it has `events` events."""
    import pyarrow as pa
    import pyarrow.compute as pc
    from deltalake import DeltaTable, write_deltalake

    one = DeltaTable(log).to_pyarrow_table()
    runs = max(1, events // one.num_rows)
    origin = one.column("origin").combine_chunks()
    parts = []
    for k in range(runs):
        shift = pa.scalar((runs - k) * 300_000_000, pa.duration("us"))
        ids = pa.array([f"run-{k:06d}"] * one.num_rows)
        fields = {f.name: origin.field(f.name) for f in origin.type}
        fields["update_id"] = ids
        o = pa.StructArray.from_arrays(list(fields.values()), fields=list(origin.type))
        t = one.set_column(one.schema.get_field_index("origin"), one.schema.field("origin"), o)
        ts = pc.subtract(t.column("timestamp"), shift)
        t = t.set_column(t.schema.get_field_index("timestamp"), t.schema.field("timestamp"), ts)
        ids = pa.array([f"{i}-{k}" for i in t.column("id").to_pylist()])
        t = t.set_column(t.schema.get_field_index("id"), t.schema.field("id"), ids)
        parts.append(t)
    grown = pa.concat_tables(parts + [one])
    write_deltalake(log, grown, mode="overwrite")
    return grown.num_rows


def peak_rss_mib(pid: int) -> float:
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
    return 0.0


def get(url: str):
    t = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:
        body = json.load(r)
    return time.perf_counter() - t, body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--events", type=int, default=1_000_000)
    args = ap.parse_args()
    thund = thund_binary()
    result = {}
    with tempfile.TemporaryDirectory() as tmp:
        proj = pathlib.Path(tmp) / "busy"
        project(proj)
        subprocess.run([thund, "run", "-p", str(proj)], check=True, capture_output=True)
        log = str(proj / ".thund" / "event_log")
        result["events"] = grow(log, args.events)

        wall, rss = timed([thund, "events", "-p", str(proj), "--last"])
        result["events_last"] = {"wall_s": wall, "peak_rss_mib": rss}
        wall, rss = timed([thund, "events", "-p", str(proj), "--all", "--format", "jsonl"])
        result["events_all"] = {"wall_s": wall, "peak_rss_mib": rss}

        ui = subprocess.Popen([thund, "ui", "--port", "0", "-p", str(proj)], stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True)
        try:
            url = re.search(r"http://\S+", ui.stdout.readline()).group(0).rstrip("/")
            first, state = get(url + "/api/state")
            result["ui_first_state"] = {"wall_s": first, "peak_rss_mib": peak_rss_mib(ui.pid),
                                        "events": state["events"], "runs": state["run_count"]}
            idle, _ = get(url + "/api/state")
            result["ui_poll_idle_s"] = idle
            # A run while the page polls: each poll reads only what was committed since the last.
            run = subprocess.Popen([thund, "run", "-p", str(proj)], stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL)
            polls = []
            while run.poll() is None:
                polls.append(get(url + "/api/state")[0])
                time.sleep(0.5)
            run.wait()
            last, state = get(url + "/api/state")
            polls.append(last)
            result["ui_polls_during_run"] = {"polls": len(polls), "max_s": max(polls),
                                             "events_after": state["events"], "runs_after": state["run_count"]}
            result["ui_peak_rss_mib"] = peak_rss_mib(ui.pid)
        finally:
            ui.kill()
            ui.wait()
    rows = [
        ["events in the log", f"{result['events']:,}", ""],
        ["thund events --last", f"{result['events_last']['wall_s'] * 1e3:.0f} ms",
         f"{result['events_last']['peak_rss_mib']:.0f} MiB"],
        ["thund events --all (jsonl)", f"{result['events_all']['wall_s'] * 1e3:.0f} ms",
         f"{result['events_all']['peak_rss_mib']:.0f} MiB"],
        ["thund ui: first /api/state", f"{result['ui_first_state']['wall_s'] * 1e3:.0f} ms",
         f"{result['ui_first_state']['peak_rss_mib']:.0f} MiB"],
        ["thund ui: a poll, nothing new", f"{result['ui_poll_idle_s'] * 1e3:.0f} ms", ""],
        [f"thund ui: slowest of {result['ui_polls_during_run']['polls']} polls during a run",
         f"{result['ui_polls_during_run']['max_s'] * 1e3:.0f} ms", f"{result['ui_peak_rss_mib']:.0f} MiB"],
    ]
    print(table(rows, ["what", "wall", "peak RSS"]))
    print(f"written {save('event_log', result)}")


if __name__ == "__main__":
    main()
