//! Conformance against Apache Spark's own results (`conformance/` at the repository root).
//!
//! Each case is an SDP project and the tables Spark 4.1.4 produced for it. A case whose features
//! the native backend does not support yet is skipped *because its capability check refuses it*
//! (and says so); everything the backend accepts must reproduce Spark's rows exactly.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;

use common::*;
use knut_thund::backend::ExecBackend;
use thund_native::NativeBackend;

/// Copies a case, fills `${STORAGE}` and `${DATA}`, and returns the temp folder.
fn prepare(case: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(case, dir.path());
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    fill_spec(dir.path(), &dir.path().join("storage"), &data, None);
    dir
}

/// Compares every expected table of `expected_dir` with the pipeline's; the failures, and how
/// many tables were compared.
fn check_tables(dir: &Path, expected_dir: &Path) -> (Vec<String>, usize) {
    let mut failures = Vec::new();
    let files = csv_files(expected_dir);
    for f in &files {
        let table = f.file_stem().unwrap().to_string_lossy().into_owned();
        let expected = read_expected(f);
        match query_table(&spec_of(dir), &format!("SELECT * FROM {table}")) {
            Ok(actual) => {
                if let Err(e) = compare_tables(&expected, &actual) {
                    failures.push(format!("{table}: {e}"));
                }
            }
            Err(e) => failures.push(format!("{table}: query failed: {e}")),
        }
    }
    (failures, files.len())
}

#[test]
fn native_backend_reproduces_sparks_tables() {
    let root = repo_root().join("conformance");
    let mut ran = Vec::new();
    let mut skipped = Vec::new();
    let mut failures = Vec::new();
    let mut cases: Vec<_> =
        std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    cases.sort();
    for case in cases {
        let name = case.file_name().unwrap().to_string_lossy().into_owned();
        let dir = prepare(&case);
        let p = load(&spec_of(dir.path()));
        if let Err(e) = NativeBackend::new().check(&p) {
            skipped.push(format!("{name}: {e}"));
            continue;
        }
        // Multi-run cases have a generator and expected/run<N>/: generate batch N-1, run, compare.
        let generator = std::fs::read_dir(&case)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("gen_")));
        let runs: Vec<std::path::PathBuf> = match &generator {
            Some(_) => {
                let mut r: Vec<_> =
                    std::fs::read_dir(case.join("expected")).unwrap().map(|e| e.unwrap().path()).collect();
                r.sort();
                r
            }
            None => vec![case.join("expected")],
        };
        for (batch, expected) in runs.iter().enumerate() {
            if let Some(g) = &generator {
                let out = std::process::Command::new("python3")
                    .arg(g)
                    .arg(dir.path().join("data"))
                    .arg(batch.to_string())
                    .output()
                    .unwrap();
                assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
            }
            let (summary, _) = run(&spec_of(dir.path()));
            if summary.failed() {
                let errs: Vec<String> = summary.flows.iter().filter_map(|f| f.error.clone()).collect();
                failures.push(format!("{name} (run {}): run failed:\n  {}", batch + 1, errs.join("\n  ")));
                break;
            }
            let (failed, compared) = check_tables(dir.path(), expected);
            assert!(compared > 0, "{name} (run {}): no expected table in {}", batch + 1, expected.display());
            for f in failed {
                failures.push(format!("{name} (run {})/{f}", batch + 1));
            }
        }
        ran.push(name);
    }
    for s in &skipped {
        eprintln!("NOT RUN, the native capability check refuses it: {s}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    for must in [
        "auto-cdc",
        "dlt-legacy",
        "dlt-orders",
        "dlt-python",
        "event-time",
        "python-dataframes",
        "python-init",
        "python-medallion",
        "sdp-basics",
        "sql-functions",
        "sql-generators",
        "stream-files",
    ] {
        assert!(ran.contains(&must.to_string()), "{must} must run on the native backend; ran {ran:?}");
    }
}

/// The expected tables a case computes with its `replay.py` (not Spark's) are what the replay
/// writes today, byte for byte: the oracle is reproducible and nobody edited it by hand.
#[test]
fn every_replayed_oracle_is_what_its_replay_writes() {
    let root = repo_root().join("conformance");
    let mut checked = Vec::new();
    let mut cases: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("replay.py").is_file())
        .collect();
    cases.sort();
    for case in cases {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(&case, copy.path());
        std::fs::remove_dir_all(copy.path().join("expected")).unwrap();
        let out = std::process::Command::new("python3").arg(copy.path().join("replay.py")).output().unwrap();
        assert!(out.status.success(), "{}: {}", case.display(), String::from_utf8_lossy(&out.stderr));
        let files = files_under(&case.join("expected"));
        assert!(!files.is_empty(), "{} has no expected tables", case.display());
        for (rel, committed) in &files {
            let written = std::fs::read(copy.path().join("expected").join(rel))
                .unwrap_or_else(|_| panic!("{}: the replay does not write expected/{rel}", case.display()));
            assert!(written == *committed, "{}: expected/{rel} differs from its replay", case.display());
        }
        checked.push(case.file_name().unwrap().to_string_lossy().into_owned());
    }
    assert_eq!(checked, ["auto-cdc", "dlt-legacy", "dlt-orders", "dlt-python"]);
}

/// The comparison the cases rely on tells apart what string rendering would not: a type, NULL
/// against the empty string, a timestamp against its text.
#[test]
fn the_comparison_tells_types_nulls_and_empty_strings_apart() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("t.csv");
    std::fs::write(&csv, "id,name,at\n1,\"\",2024-01-01 10:00:00\n2,,\n").unwrap();
    std::fs::write(dir.path().join("t.schema"), "struct<id:int,name:string,at:timestamp>\n").unwrap();
    let expected = read_expected(&csv);
    let project = project(&[("spark-pipeline.yml", "name: c\nlibraries: []\n")]);
    let actual = |sql: &str| query_table(project.path(), sql).unwrap();
    // (A stored TIMESTAMP column reads back with a zone, as Spark's; a literal here has none.)
    let zoned = |rows: &str| {
        format!(
            "SELECT id, name, arrow_cast(at, 'Timestamp(Microsecond, Some(\"UTC\"))') AS at FROM VALUES {rows} AS t(id, name, at)"
        )
    };
    compare_tables(&expected, &actual(&zoned("(1, '', TIMESTAMP'2024-01-01 10:00:00'), (2, NULL, NULL)"))).unwrap();
    for (other, why) in [
        (zoned("(1, '', TIMESTAMP'2024-01-01 10:00:00'), (2, '', NULL)"), "'' for NULL"),
        (zoned("(1, NULL, TIMESTAMP'2024-01-01 10:00:00'), (2, NULL, NULL)"), "NULL for ''"),
        (zoned("(CAST(1 AS DOUBLE), '', TIMESTAMP'2024-01-01 10:00:00'), (CAST(2 AS DOUBLE), NULL, NULL)"), "DOUBLE"),
        (zoned("(1, '', TIMESTAMP'2024-01-01 10:00:01'), (2, NULL, NULL)"), "another time"),
        (zoned("(1, '', TIMESTAMP'2024-01-01 10:00:00')"), "a missing row"),
        ("SELECT * FROM VALUES (1, '', '2024-01-01 10:00:00'), (2, NULL, NULL) AS t(id, name, at)".into(), "text"),
    ] {
        assert!(compare_tables(&expected, &actual(&other)).is_err(), "{why} was taken for the expected table");
    }
}

/// The comparison itself: decimals by every digit (38-digit values that an `f64` would call
/// equal differ), in any of the spellings Spark and Python write; doubles within 1e-12 relative.
#[test]
fn expected_tables_compare_decimals_exactly_and_doubles_within_1e_12() {
    let table = |ty: &str, values: &[Option<&str>]| common::Table {
        names: vec!["v".into()],
        types: vec![ty.into()],
        rows: values.iter().map(|v| vec![v.map(str::to_string)]).collect(),
    };
    let d = "decimal(38,18)";
    let same =
        |ty: &str, a: Option<&str>, b: Option<&str>| common::compare_tables(&table(ty, &[a]), &table(ty, &[b])).is_ok();
    assert!(same(d, Some("12345678901234567890.123456789012345678"), Some("12345678901234567890.123456789012345678")));
    assert!(!same(d, Some("12345678901234567890.123456789012345678"), Some("12345678901234567890.123456789012345679")));
    assert!(same(d, Some("0E-10"), Some("0.000000000000000000")));
    assert!(same(d, Some("1.50"), Some("1.5")));
    assert!(same(d, Some("15E-1"), Some("1.500")));
    assert!(same(d, Some("-0.00"), Some("0")));
    assert!(!same(d, Some("-1.5"), Some("1.5")));
    assert!(!same(d, Some("100"), Some("1")));
    assert!(!same(d, None, Some("0")));
    assert!(same("double", Some("0.30000000000000004"), Some("0.3")));
    assert!(!same("double", Some("1.000000001"), Some("1.0")));
    assert!(!same("string", Some(""), None));
}
