"""`thund test` speed: the sample project's tests (`thund init`), and 100 tests of a generated
20-dataset project (bronze materialized views over inline rows, silver views and streaming
tables, gold aggregates and joins), the whole CLI process each time, as a user waits for it.

    python3 bench/unit_tests.py [--tests 100] [--runs 3]

Writes bench/results/unit_tests.json.
"""
import argparse
import pathlib
import re
import subprocess
import tempfile

from common import median_of, save, table, thund_binary, timed


def generate(folder: pathlib.Path, n_tests: int):
    """20 datasets in 5 chains of 4 (source → clean view → streaming copy → gold aggregate),
    and n_tests tests spread over the chains' clean, streaming and gold datasets."""
    (folder / "sql").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "spark-pipeline.yml").write_text("name: bench\nlibraries:\n  - glob:\n      include: sql/**\n")
    sql = []
    for c in range(5):
        sql.append(f"CREATE MATERIALIZED VIEW src{c} AS SELECT * FROM VALUES (1, 'a', 2.5), (2, 'b', 3.5) AS t(id, k, v);")
        sql.append(f"CREATE STREAMING TABLE raw{c} AS SELECT * FROM STREAM read_files('in{c}', format => 'json');")
        sql.append(f"CREATE TEMPORARY VIEW clean{c} AS SELECT id, upper(k) AS k, v * 2 AS v FROM raw{c} WHERE v > 0;")
        sql.append(f"CREATE MATERIALIZED VIEW gold{c} AS SELECT c.k, count(*) AS n, sum(c.v) AS total, max(s.v) AS top\n"
                   f"  FROM clean{c} c LEFT JOIN src{c} s ON c.id = s.id GROUP BY c.k;")
    (folder / "sql" / "p.sql").write_text("\n".join(sql) + "\n")
    tests = ["tests:"]
    for t in range(n_tests):
        c, kind = t % 5, t % 3
        rows = [(i, "ab"[i % 2], float(i + t % 7)) for i in range(1, 5)]
        inline = ", ".join(f"{{id: {i}, k: {k}, v: {v}}}" for i, k, v in rows)
        if kind == 0:
            want = ", ".join(f"{{id: {i}, k: {k.upper()}, v: {v * 2}}}" for i, k, v in rows if v > 0)
            tests += [f"  - name: clean {t}", f"    dataset: clean{c}",
                      f"    inputs: {{raw{c}: [{inline}]}}", f"    expect: {{rows: [{want}]}}"]
        elif kind == 1:
            tests += [f"  - name: gold {t}", f"    dataset: gold{c}",
                      f"    inputs: {{raw{c}: [{inline}], src{c}: [{{id: 1, k: x, v: 1.0}}]}}"]
            groups = {}
            for i, k, v in rows:
                n, total = groups.get(k, (0, 0.0))
                groups[k] = (n + 1, total + 2 * v)
            want = ", ".join(f"{{k: {k.upper()}, n: {n}, total: {total}}}" for k, (n, total) in groups.items())
            tests += [f"    expect: {{rows: [{want}]}}"]
        else:
            half = ", ".join(f"{{id: {i}, k: {k}, v: {v}}}" for i, k, v in rows[:2])
            rest = ", ".join(f"{{id: {i}, k: {k}, v: {v}}}" for i, k, v in rows[2:])
            tests += [f"  - name: stream {t}", f"    dataset: raw{c}", "    batches:",
                      f"      - inputs: {{in{c}: [{half}]}}", "        expect: {rows: [" +
                      ", ".join(f"{{id: {i}}}" for i, _, _ in rows[:2]) + "]}",
                      f"      - inputs: {{in{c}: [{rest}]}}", "        expect: {rows: [" +
                      ", ".join(f"{{id: {i}}}" for i, _, _ in rows) + "]}"]
    (folder / "tests" / "generated.yml").write_text("\n".join(tests) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tests", type=int, default=100)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    thund = thund_binary()
    result, rows = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        demo = pathlib.Path(tmp) / "demo"
        subprocess.run([thund, "init", str(demo)], check=True, capture_output=True)
        gen = pathlib.Path(tmp) / "gen"
        generate(gen, args.tests)
        for name, project in [("sample", demo), (f"{args.tests} tests, 20 datasets", gen)]:
            wall, rss = median_of(args.runs, lambda: timed([thund, "test", "-p", str(project)]))
            out = subprocess.run([thund, "test", "-p", str(project)], capture_output=True, text=True, check=True).stdout
            summary = out.strip().splitlines()[-1]
            passed = int(re.match(r"(\d+) passed", summary).group(1))
            result[name] = {"wall_s": wall, "peak_rss_mib": rss, "tests": passed}
            rows.append([f"thund test: {name} ({passed} tests)", f"{wall:.2f} s", f"{rss:.0f} MiB"])
    print(table(rows, ["what", "wall (median)", "peak RSS"]))
    print(f"written {save('unit_tests', result)}")


if __name__ == "__main__":
    main()
