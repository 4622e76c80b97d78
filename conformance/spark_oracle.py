"""Writes a conformance case's expected tables from Apache Spark itself.

    python conformance/spark_oracle.py CASE sc://127.0.0.1:PORT [OUT]

CASE is a case folder's name (sdp-basics, stream-files, event-time) or its path; OUT defaults to
the case's `expected/`. Run it with the pyspark venv of `scripts/spark-server.sh python 4.1.4`
against a server of the same version (`scripts/spark-server.sh start 4.1.4` prints its URL).

The case's SDP project (`CASE/spark-oracle/` when that folder has a spark-pipeline.yml, else the
case folder without `expected/`) is copied to a temporary folder, `${STORAGE}` and `${DATA}` are
filled, and a fresh database is appended to the spec. For each run, the case's `gen_*.py DATA
BATCH` writes the run's batch (cases without a generator have one run and inline data), then
`spark-pipelines run` runs the project, and every table and persistent view of the database is
written: `OUT/<table>.csv` for a one-run case, `OUT/runN/<table>.csv` otherwise, each with a
`<table>.schema` beside it. The database is dropped at the end.

Format of `<table>.csv`: the column names, then the rows sorted by their rendered values (NULL
as ""). NULL is an empty unquoted field; booleans are `true`/`false`; any other value is Python's
`str` of what pyspark returns (a decimal keeps its scale, a timestamp is `YYYY-MM-DD HH:MM:SS`).
A field is quoted (inner quotes doubled) when it is the empty string or contains `,`, `"`, a line
feed or a carriage return. Lines end with `\\n`. `<table>.schema` is one line: the table's
schema as Spark's `simpleString()`.
"""
import os, pathlib, shutil, subprocess, sys, tempfile, time

# Runs per case: one batch of the case's generator before each run.
RUNS = {"sdp-basics": 1, "stream-files": 2, "event-time": 2, "python-init": 1, "python-medallion": 2, "python-dataframes": 1, "sql-generators": 1, "sql-functions": 1}

HERE = pathlib.Path(__file__).resolve().parent


def render(v):
    """A value as its CSV text before quoting; NULL is None."""
    if v is None:
        return None
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def field(text):
    if text is None:
        return ""
    if text == "" or any(c in text for c in ',"\n\r'):
        return '"' + text.replace('"', '""') + '"'
    return text


def write_csv(path, columns, rows):
    rendered = [[render(v) for v in r] for r in rows]
    # Sorted by the values with NULL as ""; rows that differ only in NULL against '' by their fields.
    rendered.sort(key=lambda r: (tuple("" if t is None else t for t in r), tuple(field(t) for t in r)))
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(",".join(field(c) for c in columns) + "\n")
        for r in rendered:
            f.write(",".join(field(t) for t in r) + "\n")


def case_dir(arg):
    p = pathlib.Path(arg)
    return p.resolve() if p.is_dir() else HERE / arg


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    case = case_dir(sys.argv[1])
    url = sys.argv[2]
    if case.name not in RUNS:
        sys.exit(f"spark_oracle: unknown case {case.name} (known: {', '.join(RUNS)})")
    runs = RUNS[case.name]
    out = pathlib.Path(sys.argv[3]).resolve() if len(sys.argv) == 4 else case / "expected"
    generators = sorted(case.glob("gen_*.py"))
    if len(generators) > 1 or (runs > 1 and not generators):
        sys.exit(f"spark_oracle: {case} needs exactly one gen_*.py, has {len(generators)}")
    generator = generators[0] if generators else None

    from pyspark.sql import SparkSession

    tmp = pathlib.Path(tempfile.mkdtemp(prefix="spark-oracle-"))
    data, project = tmp / "data", tmp / "project"
    if (case / "spark-oracle" / "spark-pipeline.yml").exists():
        shutil.copytree(case / "spark-oracle", project, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        shutil.copytree(case, project, ignore=shutil.ignore_patterns("expected", "__pycache__"))
    data.mkdir()
    spec = project / "spark-pipeline.yml"
    database = f"{case.name.replace('-', '_')}_oracle_{os.getpid()}_{int(time.time())}"
    text = spec.read_text().replace("${STORAGE}", str(tmp / "storage")).replace("${DATA}", str(data))
    spec.write_text(text.rstrip("\n") + f"\ndatabase: {database}\n")

    bin_dir = pathlib.Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    spark = SparkSession.builder.remote(url).getOrCreate()
    spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
    try:
        for batch in range(runs):
            started = time.monotonic()
            if generator is not None:
                subprocess.run(["python3", str(generator), str(data), str(batch)], check=True)
            subprocess.run([str(bin_dir / "spark-pipelines"), "run", "--remote", url, "--spec", str(spec)],
                           check=True, env=env)
            target = out if runs == 1 else out / f"run{batch + 1}"
            target.mkdir(parents=True, exist_ok=True)
            for old in [*target.glob("*.csv"), *target.glob("*.schema")]:
                old.unlink()
            names = sorted(t.name for t in spark.catalog.listTables(database) if not t.isTemporary)
            counts = []
            for name in names:
                qualified = f"{database}.{name}"
                # The session caches a table's file listing: read what this run wrote.
                spark.catalog.refreshTable(qualified)
                df = spark.table(qualified)
                rows = df.collect()
                write_csv(target / f"{name}.csv", df.columns, rows)
                (target / f"{name}.schema").write_text(df.schema.simpleString() + "\n", encoding="utf-8")
                counts.append(f"{name} {len(rows)}")
            print(f"{case.name} run {batch + 1} ({time.monotonic() - started:.1f} s): {', '.join(counts)}",
                  flush=True)
    finally:
        try:
            spark.sql(f"DROP DATABASE IF EXISTS {database} CASCADE")
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
