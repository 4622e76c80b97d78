//! Differential conformance: every example project under `conformance/` runs on the native
//! backend and on a real Spark server through the spark-connect-sdp backend, and both must
//! produce the rows Spark's own `spark-pipelines` produced (the expected CSVs), run by run.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

#[path = "../../thund-native/tests/common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use common::*;
use knut_thund::backend::{ExecBackend, RunOptions};
use knut_thund::spark::SparkBackend;

/// A copy of `case` with `${STORAGE}` and `${DATA}` filled; Spark's copy also gets a database
/// of its own, as the server is shared.
fn prepare(case: &Path, data: &Path, database: Option<&str>) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(case, dir.path());
    fill_spec(dir.path(), &dir.path().join("storage"), data, database);
    dir
}

fn spark_run(url: &str, dir: &Path) -> Result<(), String> {
    let p = knut_thund::frontend::load(dir).map_err(|e| e.to_string())?;
    let mut run = SparkBackend::new(url).run_with(&p, &RunOptions::default()).map_err(|e| e.to_string())?;
    while run.poll_events().is_some() {}
    let summary = run.finish().map_err(|e| e.to_string())?;
    if summary.failed() {
        let errs: Vec<String> = summary.flows.iter().filter_map(|f| f.error.clone()).collect();
        return Err(errs.join("\n  "));
    }
    Ok(())
}

/// Each expected table of `tables` against Spark's (in database `db` of the server at `url`) and
/// the native run's in `native`, differences pushed to `failures`; false if a native query
/// failed (what follows would fail the same way).
fn compare_on_both(
    label: &str,
    url: &str,
    db: &str,
    native: &Path,
    tables: &[PathBuf],
    failures: &mut Vec<String>,
) -> bool {
    for f in tables {
        let table = f.file_stem().unwrap().to_string_lossy().into_owned();
        let expected = read_expected(f);
        match SparkBackend::new(url).query(&format!("SELECT * FROM {db}.{table}")) {
            Ok(b) => {
                if let Err(e) = compare_tables(&expected, &table_of(None, &b)) {
                    failures.push(format!("{label}/{table} on Spark: {e}"));
                }
            }
            Err(e) => failures.push(format!("{label}/{table}: Spark query failed: {e}")),
        }
        match query_table(&spec_of(native), &format!("SELECT * FROM {table}")) {
            Ok(native) => {
                if let Err(e) = compare_tables(&expected, &native) {
                    failures.push(format!("{label}/{table} natively: {e}"));
                }
            }
            Err(e) => {
                failures.push(format!("{label}/{table}: native query failed: {e}"));
                return false;
            }
        }
    }
    true
}

#[test]
fn native_and_spark_4_1_agree_with_sparks_own_tables() {
    conformance_on("4.1");
}

#[test]
fn native_and_spark_4_2_agree_with_sparks_own_tables() {
    conformance_on("4.2");
}

#[test]
fn native_and_spark_4_3_agree_with_sparks_own_tables() {
    conformance_on("4.3");
}

/// Every case, run by run, natively and on the server of Spark `line`: both must give the
/// expected tables.
fn conformance_on(line: &str) {
    let Some(url) = thund_testkit::spark_url(line, "the differential conformance suite") else { return };
    let version = SparkBackend::new(&url).detect_version().expect("the Spark server answers");
    assert!(version.starts_with(&format!("{line}.")), "the server of Spark {line} is Spark {version}");
    let root = repo_root().join("conformance");
    let mut cases: Vec<_> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    cases.sort();
    let mut failures = Vec::new();
    let mut ran = Vec::new();
    let mut skipped = Vec::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let data = tempfile::tempdir().unwrap();
        let db = format!("conf_{}_{}", name.replace('-', "_"), std::process::id());
        let native_dir = prepare(case, data.path(), None);
        let spark_dir = prepare(case, data.path(), Some(&db));
        // A case the server's line cannot run (AUTO CDC before 4.3, or into parquet tables) is
        // refused by the backend's capability check, and skipped for that reason only.
        let spark = SparkBackend::new(&url);
        spark.detect_version().expect("the Spark server answers");
        if let Err(e) = spark.check(&knut_thund::frontend::load(&spec_of(spark_dir.path())).unwrap()) {
            eprintln!("NOT RUN on Spark {line}, its capability check refuses it: {name}: {e}");
            skipped.push(name);
            continue;
        }
        let generator = std::fs::read_dir(case)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("gen_")));
        let runs: Vec<PathBuf> = match &generator {
            Some(_) => {
                let mut r: Vec<_> =
                    std::fs::read_dir(case.join("expected")).unwrap().map(|e| e.unwrap().path()).collect();
                r.sort();
                r
            }
            None => vec![case.join("expected")],
        };
        'runs: for (batch, expected) in runs.iter().enumerate() {
            let label = format!("{name} (run {})", batch + 1);
            if let Some(g) = &generator {
                let out = std::process::Command::new("python3")
                    .arg(g)
                    .arg(data.path())
                    .arg(batch.to_string())
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            }
            let (summary, _) = run(&spec_of(native_dir.path()));
            if summary.failed() {
                failures.push(format!("{label}: native run failed"));
                break;
            }
            if let Err(e) = spark_run(&url, &spec_of(spark_dir.path())) {
                failures.push(format!("{label}: Spark run failed:\n  {e}"));
                break;
            }
            let tables = csv_files(expected);
            assert!(!tables.is_empty(), "{label}: no expected table in {}", expected.display());
            if !compare_on_both(&label, &url, &db, native_dir.path(), &tables, &mut failures) {
                continue 'runs;
            }
        }
        ran.push(name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert_eq!(ran.len() + skipped.len(), cases.len());
    for must in [
        "dlt-legacy",
        "dlt-orders",
        "event-time",
        "python-dataframes",
        "python-init",
        "python-medallion",
        "sdp-basics",
        "sql-functions",
        "sql-generators",
        "stream-files",
    ] {
        assert!(ran.contains(&must.to_string()), "{must} must run on Spark {line}; ran {ran:?}, skipped {skipped:?}");
    }
}

/// The expected tables that say they are Spark's are what Spark writes today: each case's
/// `conformance/spark_oracle.py` run (real `spark-pipelines` on the 4.1.4 server) reproduces
/// them byte for byte, so no one edited them by hand and they can be regenerated. The cases are
/// the folders, not a list: every case with expected tables is either replayed by its own
/// `replay.py` (thund-native's `conformance.rs` reruns those) or regenerated here — a case the
/// oracle does not know fails.
#[test]
fn sparks_own_tables_are_what_spark_pipelines_writes_today() {
    let Some(url) = thund_testkit::spark_url("4.1", "regenerating Spark's own tables") else { return };
    let root = repo_root();
    // The reference client: the pyspark of the server's own version.
    let out =
        std::process::Command::new(root.join("scripts/spark-server.sh")).args(["python", "4.1.4"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let python = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root.join("conformance"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("expected").is_dir() && !p.join("replay.py").is_file())
        .collect();
    cases.sort();
    assert_eq!(cases.len(), 8, "cases whose expected tables are Spark's: {cases:?}");
    for case in &cases {
        let case = case.file_name().unwrap().to_string_lossy().into_owned();
        let expected = root.join("conformance").join(&case).join("expected");
        let written = tempfile::tempdir().unwrap();
        let o = std::process::Command::new(&python)
            .arg(root.join("conformance/spark_oracle.py"))
            .arg(&case)
            .arg(&url)
            .arg(written.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{case}: {}{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
        let (ours, theirs) = (files_under(&expected), files_under(written.path()));
        let names = |files: &[(String, Vec<u8>)]| files.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>();
        assert_eq!(names(&ours), names(&theirs), "{case}: Spark writes other tables than those committed");
        assert!(ours.iter().any(|(n, _)| n.ends_with(".csv")), "{case}: no expected table");
        for ((name, committed), (_, regenerated)) in ours.iter().zip(&theirs) {
            assert!(
                committed == regenerated,
                "{case}/{name} differs from what Spark writes today:\n--- committed\n{}\n--- Spark\n{}",
                String::from_utf8_lossy(committed),
                String::from_utf8_lossy(regenerated)
            );
        }
    }
}

/// `dlt-python`, a project written for Databricks in Python (`import dlt`, the `spark` global,
/// expectation decorators, Auto Loader, `@dlt.table` over a batch read), runs on every Spark line
/// as natively, run by run. Its AUTO CDC flow is the one part no server here can run (Spark's
/// AUTO CDC writes with MERGE, which its parquet tables lack: the suite above refuses the whole
/// case for it), so here the case runs without that file, which nothing else reads.
#[test]
fn a_databricks_python_project_runs_on_every_spark_line() {
    let Some(urls) = thund_testkit::spark_urls("the Databricks Python case") else { return };
    let case = repo_root().join("conformance/dlt-python");
    let mut failures = Vec::new();
    for (line, url) in urls {
        let data = tempfile::tempdir().unwrap();
        let db = format!("conf_dlt_python_{}_{}", line.replace('.', "_"), std::process::id());
        let (native_dir, spark_dir) = (prepare(&case, data.path(), None), prepare(&case, data.path(), Some(&db)));
        for dir in [native_dir.path(), spark_dir.path()] {
            std::fs::remove_file(dir.join("pipelines/customers.py")).unwrap();
            let resource = dir.join("resources/shop_python.pipeline.yml");
            let text = std::fs::read_to_string(&resource).unwrap();
            let without = text.replace("        - file:\n            path: ../pipelines/customers.py\n", "");
            assert_ne!(text, without, "the AUTO CDC file is a library of the case");
            std::fs::write(&resource, without).unwrap();
        }
        for batch in 0..2 {
            let label = format!("Spark {line}, run {}", batch + 1);
            let out = std::process::Command::new("python3")
                .arg(case.join("gen_shop.py"))
                .arg(data.path())
                .arg(batch.to_string())
                .output()
                .unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            let (summary, _) = run(&spec_of(native_dir.path()));
            assert!(!summary.failed(), "{label}: the native run failed");
            if let Err(e) = spark_run(&url, &spec_of(spark_dir.path())) {
                failures.push(format!("{label}: Spark run failed:\n  {e}"));
                break;
            }
            let expected = case.join(format!("expected/run{}", batch + 1));
            let tables: Vec<PathBuf> =
                csv_files(&expected).into_iter().filter(|f| !f.ends_with("customers.csv")).collect();
            assert_eq!(tables.len(), 4, "{label}: {tables:?}");
            compare_on_both(&label, &url, &db, native_dir.path(), &tables, &mut failures);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A Python definition that reads files by a path relative to the project (`load("data/in.csv")`)
/// reads the project's files on Spark as natively, in batch and as a stream.
#[test]
fn python_reads_of_relative_paths_read_the_projects_files_on_every_spark_line() {
    let Some(urls) = thund_testkit::spark_urls("relative paths in Python definitions") else { return };
    for (line, url) in urls {
        let dir = tempfile::tempdir().unwrap();
        let db = format!("rel_paths_{}_{}", line.replace('.', "_"), std::process::id());
        let files = [
            ("spark-pipeline.yml", format!("name: rel\nstorage: store\ndatabase: {db}\nlibraries:\n  - glob:\n      include: transformations/**\n")),
            ("data/in.csv", "id,v\n1,a\n2,b\n".to_string()),
            ("data/events/0.json", "{\"id\": 7}\n".to_string()),
            (
                "transformations/raw.py",
                "from pyspark import pipelines as dp\n\n@dp.materialized_view\ndef raw():\n    \
                 return spark.read.format(\"csv\").option(\"header\", \"true\").load(\"data/in.csv\")\n\n\
                 @dp.table\ndef events():\n    return spark.readStream.format(\"json\").schema(\"id INT\").load(\"data/events\")\n"
                    .to_string(),
            ),
        ];
        for (name, text) in &files {
            let path = dir.path().join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        spark_run(&url, dir.path()).unwrap_or_else(|e| panic!("Spark {line}: {e}"));
        let sql = format!("SELECT (SELECT count(*) FROM {db}.raw) AS r, (SELECT sum(id) FROM {db}.events) AS e");
        let got = table_of(None, &SparkBackend::new(&url).query(&sql).unwrap());
        assert_eq!(got.rows, [vec![Some("2".to_string()), Some("7".to_string())]], "Spark {line}");
        let (summary, _) = run(dir.path());
        assert!(!summary.failed(), "natively");
        let native =
            query_table(dir.path(), "SELECT (SELECT count(*) FROM raw) AS r, (SELECT sum(id) FROM events) AS e")
                .unwrap();
        assert_eq!(native.rows, got.rows, "natively");
    }
}
