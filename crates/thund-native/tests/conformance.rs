//! Conformance against Apache Spark's own results (`conformance/` at the repository root).
//!
//! Each case is an SDP project and the tables Spark 4.1.4 produced for it. A case whose features
//! the native backend does not support yet is skipped *because its capability check refuses it*
//! (and says so); everything the backend accepts must reproduce Spark's rows exactly.

mod common;

use std::path::Path;

use common::*;
use knut_thund::backend::ExecBackend;
use thund_native::NativeBackend;

/// Copies a case, fills `${STORAGE}` and `${DATA}`, and returns the temp folder.
fn prepare(case: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(case, dir.path());
    let spec = dir.path().join("spark-pipeline.yml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let storage = dir.path().join("storage");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let text = text.replace("${STORAGE}", &storage.to_string_lossy()).replace("${DATA}", &data.to_string_lossy());
    std::fs::write(spec, text).unwrap();
    dir
}

fn check_tables(dir: &Path, expected_dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(expected_dir).unwrap().map(|e| e.unwrap().path()).collect();
    files.sort();
    for f in files.iter().filter(|f| f.extension().is_some_and(|e| e == "csv")) {
        let table = f.file_stem().unwrap().to_string_lossy().into_owned();
        let expected = read_csv(f);
        match query(dir, &format!("SELECT * FROM {table}")) {
            Ok(b) => {
                if let Err(e) = compare_tables(&expected, &rows(&b)) {
                    failures.push(format!("{table}: {e}"));
                }
            }
            Err(e) => failures.push(format!("{table}: query failed: {e}")),
        }
    }
    failures
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
        let p = load(dir.path());
        if let Err(e) = NativeBackend::new().check(&p) {
            skipped.push(format!("{name}: {e}"));
            continue;
        }
        let (summary, _) = run(dir.path());
        if summary.failed() {
            let errs: Vec<String> = summary.flows.iter().filter_map(|f| f.error.clone()).collect();
            failures.push(format!("{name}: run failed:\n  {}", errs.join("\n  ")));
            continue;
        }
        for f in check_tables(dir.path(), &case.join("expected")) {
            failures.push(format!("{name}/{f}"));
        }
        ran.push(name);
    }
    for s in &skipped {
        eprintln!("skipped (capability check refuses it): {s}");
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    assert!(ran.contains(&"sdp-basics".to_string()), "sdp-basics must run on the native backend; ran {ran:?}");
}
