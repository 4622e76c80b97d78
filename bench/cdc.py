"""AUTO CDC benchmark: a change feed of customers (one insert per key, 10 Parquet files) applied as
SCD type 1 and as SCD type 2; then batches of changes touching 1% of the keys (updates and a few
deletes, some arriving after later-sequenced ones of other keys). A full refresh of each vs an
incremental run with one such batch (by default rewriting the files that hold a touched key, and
with deletion vectors, as a target whose TBLPROPERTIES ask for them marks its rows), the same with 0.1% of the changes late for
their own key (older than the key's insert: its history is read and replayed), and, for scale, a
plain rewrite of the same table (a materialized view copying it). Besides whole-process wall
times, each flow's own time (from the run's events) is set beside the copy flow's. Last, each
target alone in a pipeline of its own: a batch into it beside a rewrite of that very table, with
its keys drawn at random or from a narrow range (pages of the key-sorted table are skipped).

    python3 bench/cdc.py [--keys 1000000]

Uses the release `thund` (built if missing). After the runs, the SCD 1 table is checked against a
pyarrow replay of the feed (latest change per key, deletes removed). Prints a table and writes
bench/results/cdc.json.
"""
import argparse
import pathlib
import re
import statistics
import subprocess
import tempfile
import time

from common import median_of, save, table, thund_binary, timed

SPEC = "name: cdc\nlibraries:\n  - glob:\n      include: sql/**\n"
SQL = """
CREATE STREAMING TABLE changes AS SELECT * FROM STREAM read_files('in', format => 'parquet');
CREATE STREAMING TABLE customers FLOW AUTO CDC FROM STREAM(changes) KEYS (id)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op);
CREATE STREAMING TABLE customers_history FLOW AUTO CDC FROM STREAM(changes) KEYS (id)
  APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2
  TRACK HISTORY ON * EXCEPT (visits);
"""
# The same targets with deletion vectors, which their TBLPROPERTIES ask for: a batch marks the
# rows of its keys deleted instead of rewriting the files holding them (not every reader reads
# such a table, so it is not the default).
WITH_DV = SQL.replace("FLOW AUTO CDC", "TBLPROPERTIES ('delta.enableDeletionVectors' = 'true') FLOW AUTO CDC")
COPY = "CREATE MATERIALIZED VIEW copy AS SELECT * FROM parquet.`in`;\n"
FEED, SCD1, SCD2 = (s.strip() for s in SQL.strip().split(";")[:3])
# Each target alone in its pipeline, and a plain rewrite of that very table (a materialized view
# copying its Delta table): what a batch into it costs against rewriting it, with no other flow
# sharing the cores.
ALONE = {"customers": ("SCD 1", f"{FEED};\n{SCD1};\n"), "customers_history": ("SCD 2", f"{FEED};\n{SCD2};\n")}


def write_feed(folder: pathlib.Path, keys: int):
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True)
    rng = np.random.default_rng(5)
    per = keys // 10
    for f in range(10):
        ids = np.arange(f * per, (f + 1) * per, dtype=np.int64)
        pq.write_table(feed(pa, rng, ids, ids + 1, ["U"] * len(ids)), folder / f"part-{f:05d}.parquet")


def feed(pa, rng, ids, seqs, ops):
    n = len(ids)
    return pa.table({
        "id": pa.array(ids),
        "seq": pa.array(seqs, type=pa.int64()),
        "op": pa.array(ops),
        "name": pa.array([f"customer {i}" for i in ids]),
        "city": pa.array([f"city {c}" for c in rng.integers(0, 500, n)]),
        "segment": pa.array([f"s{c}" for c in rng.integers(0, 8, n)]),
        "visits": pa.array(rng.integers(0, 1000, n)),
    })


def run_flows(cmd):
    """Runs a `thund run`; returns (wall seconds, {flow: its own ms}) from its events."""
    t = time.perf_counter()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t
    if p.returncode != 0:
        raise SystemExit(p.stdout[-4000:])
    flows = {m.group(1).rsplit(".", 1)[-1]: float(m.group(2))
             for m in re.finditer(r"Flow (\S+) has COMPLETED\. \([0-9]+ rows, ([0-9]+) ms\)", p.stdout)}
    return wall, flows


def median_flows(runs):
    """Medians of (wall, {flow: ms}) runs."""
    flows = {f: statistics.median(r[1][f] for r in runs) for f in runs[0][1]}
    return statistics.median(r[0] for r in runs), flows


def change_batch(path: pathlib.Path, keys: int, batch: int, late_for_key: bool = False, near: bool = False):
    """1% of the keys: updates (city or visits), every 20th a delete, every 10th older than the
    last batch (later than any change of its own key, though). With `late_for_key`, every
    1000th change is older than its key's insert: late for its key. The keys are drawn at
    random from all of them, or with `near` from a range of 2% of them (say, recent customers)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(100 + batch)
    n = keys // 100
    ids = rng.choice(keys, n, replace=False).astype(np.int64)
    if near:
        start = int(rng.integers(0, keys - 2 * n))
        ids = start + rng.choice(2 * n, n, replace=False).astype(np.int64)
    base = 10 * keys * (batch + 1)
    seqs = base + np.arange(n, dtype=np.int64)
    seqs[::10] -= 5 * keys  # late: between the previous batch and this one
    if late_for_key:
        seqs[5::1000] = ids[5::1000]  # the insert's sequence is id + 1
    ops = ["D" if i % 20 == 0 else "U" for i in range(n)]
    pq.write_table(feed(pa, rng, ids, seqs, ops), path)


def batches_of(proj: pathlib.Path, keys: int, numbers, run, late_for_key: bool = False, near: bool = False):
    """A function that, at each call, adds the next of the change batches `numbers` to the
    project's feed and returns what `run()` returns."""
    numbers = iter(numbers)

    def next_batch():
        b = next(numbers)
        change_batch(proj / "in" / f"changes-{b}.parquet", keys, b, late_for_key=late_for_key, near=near)
        return run()

    return next_batch


def replay_check(thund, proj: pathlib.Path):
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    t = pq.read_table(proj / "in").select(["id", "seq", "op"]).sort_by([("id", "ascending"), ("seq", "descending")])
    ids = t.column("id").to_numpy()
    first = [True] + list(ids[1:] != ids[:-1])
    latest = t.filter(first)
    alive = latest.filter(pc.equal(latest.column("op"), "U"))
    want = f"{alive.num_rows},{pc.sum(alive.column('seq')).as_py()}"
    got = subprocess.run([thund, "query", "-p", str(proj), "--format", "csv",
                          "SELECT count(*), sum(seq) FROM customers"],
                         check=True, capture_output=True, text=True).stdout.splitlines()[1]
    if got != want:
        raise SystemExit(f"customers ({got}) differs from a replay of the feed ({want})")
    open_versions = subprocess.run([thund, "query", "-p", str(proj), "--format", "csv",
                                    "SELECT count(*) FROM customers_history WHERE `__END_AT` IS NULL"],
                                   check=True, capture_output=True, text=True).stdout.splitlines()[1]
    if open_versions != str(alive.num_rows):
        raise SystemExit(f"{open_versions} open versions, {alive.num_rows} live keys")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, default=1_000_000)
    args = ap.parse_args()
    thund = thund_binary()
    with tempfile.TemporaryDirectory() as tmp:
        proj = pathlib.Path(tmp) / "cdc"
        (proj / "sql").mkdir(parents=True)
        (proj / "spark-pipeline.yml").write_text(SPEC)
        (proj / "sql" / "a.sql").write_text(SQL)
        write_feed(proj / "in", args.keys)
        run = lambda *extra: timed([thund, "run", "-p", str(proj), *extra])
        run()
        full = median_of(3, lambda: run("--full-refresh-all"))
        inc = median_of(3, batches_of(proj, args.keys, range(3), run))
        idle = median_of(5, run)
        replay_check(thund, proj)
        # The same batches again, now each with 10 changes late for their own key; then each
        # flow's own time for an in-order batch and a batch with late changes.
        inc_late = median_of(3, batches_of(proj, args.keys, range(3, 6), run, late_for_key=True))
        replay_check(thund, proj)
        flows = lambda: run_flows([thund, "run", "-p", str(proj)])
        in_order = batches_of(proj, args.keys, range(6, 9), flows)
        in_order_flows = median_flows([in_order() for _ in range(3)])[1]
        late_runs = batches_of(proj, args.keys, range(9, 12), flows, late_for_key=True)
        late_flows = median_flows([late_runs() for _ in range(3)])[1]
        replay_check(thund, proj)

        plain = pathlib.Path(tmp) / "plain"
        (plain / "sql").mkdir(parents=True)
        (plain / "spark-pipeline.yml").write_text(SPEC)
        (plain / "sql" / "a.sql").write_text(WITH_DV)
        write_feed(plain / "in", args.keys)
        timed([thund, "run", "-p", str(plain)])
        plain_run = lambda: timed([thund, "run", "-p", str(plain)])
        inc_dv = median_of(3, batches_of(plain, args.keys, range(3), plain_run))
        replay_check(thund, plain)

        copy = pathlib.Path(tmp) / "copy"
        (copy / "sql").mkdir(parents=True)
        (copy / "spark-pipeline.yml").write_text(SPEC.replace("cdc", "copy"))
        (copy / "sql" / "a.sql").write_text(COPY)
        (copy / "in").symlink_to(proj / "in")
        rewrite = median_of(3, lambda: timed([thund, "run", "-p", str(copy), "--full-refresh-all"]))
        copy_ms = median_flows([run_flows([thund, "run", "-p", str(copy), "--full-refresh-all"])
                                for _ in range(3)])[1]["copy"]

        alone = {}
        for name, (kind, sql) in ALONE.items():
            one = pathlib.Path(tmp) / name
            (one / "sql").mkdir(parents=True)
            (one / "spark-pipeline.yml").write_text(SPEC)
            (one / "sql" / "a.sql").write_text(sql)
            (one / "in").mkdir()
            for part in sorted((proj / "in").glob("part-*.parquet")):
                (one / "in" / part.name).symlink_to(part)
            timed([thund, "run", "-p", str(one)])
            one_run = lambda: run_flows([thund, "run", "-p", str(one)])
            one_batch = batches_of(one, args.keys, range(3), one_run)
            batch_ms = median_flows([one_batch() for _ in range(3)])[1][name]
            near_batch = batches_of(one, args.keys, range(3, 6), one_run, near=True)
            near_ms = median_flows([near_batch() for _ in range(3)])[1][name]
            rewrite_of = pathlib.Path(tmp) / f"rewrite-{name}"
            (rewrite_of / "sql").mkdir(parents=True)
            (rewrite_of / "spark-pipeline.yml").write_text(SPEC.replace("cdc", "rewrite"))
            table_path = one / ".thund" / "tables" / "spark_catalog" / "default" / name
            (rewrite_of / "sql" / "a.sql").write_text(
                f"CREATE MATERIALIZED VIEW copy AS SELECT * FROM read_files('{table_path}', format => 'delta');\n")
            rewrite_ms = median_flows([run_flows([thund, "run", "-p", str(rewrite_of), "--full-refresh-all"])
                                       for _ in range(3)])[1]["copy"]
            alone[name] = (kind, batch_ms, near_ms, rewrite_ms)

    rows = [
        ["full refresh (feed → SCD 1 + SCD 2)", f"{full[0]:.3f}s", f"{full[1]:.0f} MiB", "1.000"],
        ["incremental: 1% of keys changed (touched files rewritten)", f"{inc[0]:.3f}s", f"{inc[1]:.0f} MiB",
         f"{inc[0] / full[0]:.3f}"],
        ["incremental, with deletion vectors (TBLPROPERTIES)", f"{inc_dv[0]:.3f}s", f"{inc_dv[1]:.0f} MiB",
         f"{inc_dv[0] / full[0]:.3f}"],
        ["incremental: 1% of keys, 10 changes late for their key", f"{inc_late[0]:.3f}s", f"{inc_late[1]:.0f} MiB",
         f"{inc_late[0] / full[0]:.3f}"],
        ["idle (no new changes)", f"{idle[0]:.3f}s", f"{idle[1]:.0f} MiB", f"{idle[0] / full[0]:.3f}"],
        ["rewrite of the feed (materialized view copy)", f"{rewrite[0]:.3f}s", f"{rewrite[1]:.0f} MiB",
         f"{rewrite[0] / full[0]:.3f}"],
    ]
    print(f"{args.keys} keys; median of 3 (idle: of 5)")
    print(table(rows, ["run", "wall", "peak RSS", "vs full"]))
    print("customers equals a replay of the feed; one open version per live key in customers_history")
    per_flow = [[f"{flow} ({kind})", f"{in_order_flows[flow]:.0f} ms", f"{late_flows[flow]:.0f} ms",
                 f"{in_order_flows[flow] / copy_ms:.2f}", f"{late_flows[flow] / copy_ms:.2f}"]
                for flow, kind in [("customers", "SCD 1"), ("customers_history", "SCD 2")]]
    per_flow.append(["copy (materialized view of the feed)", f"{copy_ms:.0f} ms", "", "1.00", ""])
    print("\nEach flow's own time for a 1% batch (median of 3), beside rewriting the table:")
    print(table(per_flow, ["flow", "in order", "10 late", "vs copy", "late vs copy"]))
    print("\nEach target alone in its pipeline: a 1% batch (in order; keys at random or near each other)")
    print("beside rewriting that table (median of 3):")
    print(table([[f"{name} ({kind})", f"{b:.0f} ms", f"{n:.0f} ms", f"{r:.0f} ms", f"{b / r:.2f}", f"{n / r:.2f}"]
                 for name, (kind, b, n, r) in alone.items()],
                ["flow", "1% batch", "keys near", "rewrite of the table", "ratio", "near: ratio"]))
    out = {"keys": args.keys, "full_refresh_s": full[0], "incremental_1pct_s": inc[0], "idle_s": idle[0],
           "rewrite_s": rewrite[0], "incremental_ratio": inc[0] / full[0],
           "incremental_deletion_vectors_s": inc_dv[0], "incremental_deletion_vectors_ratio": inc_dv[0] / full[0],
           "incremental_vs_rewrite": inc[0] / rewrite[0], "peak_rss_mib": max(full[1], inc[1]),
           "incremental_late_for_key_s": inc_late[0], "copy_flow_ms": copy_ms,
           "flow_ms_in_order": in_order_flows, "flow_ms_late_for_key": late_flows,
           "alone": {name: {"batch_ms": b, "near_batch_ms": n, "rewrite_ms": r, "ratio": b / r}
                     for name, (_, b, n, r) in alone.items()}}
    print(f"\nwritten {save('cdc', out)}")


if __name__ == "__main__":
    main()
