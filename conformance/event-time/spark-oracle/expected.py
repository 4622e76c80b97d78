"""Regenerates ../expected/ from Apache Spark itself.

    python expected.py sc://127.0.0.1:PORT    (the pyspark venv of `scripts/spark-server.sh python`)

Runs this folder's SDP project with `spark-pipelines run` against the server, once per batch of
`../gen_events.py`, and writes every table after each run to `../expected/runN/<table>.csv`.
"""
import csv, os, pathlib, shutil, subprocess, sys, tempfile

from pyspark.sql import SparkSession

url = sys.argv[1]
here = pathlib.Path(__file__).resolve().parent
case = here.parent
tmp = pathlib.Path(tempfile.mkdtemp())
data, project = tmp / "data", tmp / "project"
shutil.copytree(here, project, ignore=shutil.ignore_patterns("expected.py", "__pycache__"))
spec = project / "spark-pipeline.yml"
database = f"event_time_oracle_{os.getpid()}"
spec.write_text(spec.read_text().replace("${STORAGE}", str(tmp / "storage")).replace("${DATA}", str(data))
                + f"database: {database}\n")
spark = SparkSession.builder.remote(url).getOrCreate()
spark.sql(f"CREATE DATABASE IF NOT EXISTS {database}")
tables = ["events", "device_counts_10m", "counts_20m_every_10m", "device_sessions"]
for batch in range(2):
    subprocess.run([sys.executable, str(case / "gen_events.py"), str(data), str(batch)], check=True)
    bin_dir = pathlib.Path(sys.executable).parent
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")
    subprocess.run([str(bin_dir / "spark-pipelines"), "run", "--remote", url, "--spec", str(spec)], check=True, env=env)
    out = case / "expected" / f"run{batch + 1}"
    out.mkdir(parents=True, exist_ok=True)
    for t in tables:
        # The session caches a table's file listing: read what this run wrote.
        spark.catalog.refreshTable(f"{database}.{t}")
        df = spark.table(f"{database}.{t}")
        rows = sorted(df.collect(), key=lambda r: tuple("" if v is None else str(v) for v in r))
        with open(out / f"{t}.csv", "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(df.columns)
            for r in rows:
                w.writerow(["" if v is None else str(v) for v in r])
    print(f"run {batch + 1}: " + ", ".join(f"{t} {spark.table(f'{database}.{t}').count()}" for t in tables))
spark.sql(f"DROP DATABASE {database} CASCADE")
