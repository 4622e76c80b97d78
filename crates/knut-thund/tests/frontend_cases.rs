//! Data-driven front-end cases: each folder under `tests/cases/` is a project.
//!
//! A folder named `ok_*` must load, validate and plan; its IR (datasets, flows, graph) must equal
//! `expected.json`. A folder named `err_*` must fail; the error text must equal `expected.err`.
//! Regenerate the expected files after an intended change with:
//!
//!     THUND_BLESS=1 cargo nextest run -p knut-thund --test frontend_cases
//!
//! and review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::{Path, PathBuf};

use knut_thund::frontend::roundtrip::{normalize, parse};
use knut_thund::frontend::Parses;
use knut_thund::ir::Pipeline;
use knut_thund::render::{render, GraphFormat};
use serde_json::json;

fn cases() -> Vec<PathBuf> {
    let dir = Path::new(&manifest_dir()).join("tests/cases");
    let mut v: Vec<PathBuf> =
        std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.is_dir()).collect();
    v.sort();
    v
}

fn outcome(dir: &Path) -> Result<Pipeline, String> {
    let p = knut_thund::frontend::load(dir).map_err(|e| e.to_string())?;
    p.validate().map_err(|e| e.to_string())?;
    knut_thund::plan::plan(&p, &Default::default()).map_err(|e| e.to_string())?;
    Ok(p)
}

fn describe(p: &Pipeline) -> String {
    let graph: Vec<String> = render(p, GraphFormat::Text).lines().map(str::to_string).collect();
    let v = json!({ "graph": graph, "datasets": p.datasets, "flows": p.flows });
    serde_json::to_string_pretty(&v).unwrap() + "\n"
}

fn check(path: &Path, actual: &str) -> Option<String> {
    if thund_testkit::blessing(&path.display().to_string()) {
        std::fs::write(path, actual).unwrap();
        return None;
    }
    let expected = std::fs::read_to_string(path).unwrap_or_default();
    (expected != actual).then(|| {
        format!(
            "{} differs.\n--- expected\n{expected}\n--- actual\n{actual}\n(regenerate: THUND_BLESS=1 cargo nextest run -p knut-thund --test frontend_cases)",
            path.display()
        )
    })
}

#[test]
fn every_case_matches_its_expected_output() {
    let mut failures = Vec::new();
    for dir in cases() {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        match (name.starts_with("ok_"), outcome(&dir)) {
            (true, Ok(p)) => failures.extend(check(&dir.join("expected.json"), &describe(&p))),
            (false, Err(e)) => failures.extend(check(&dir.join("expected.err"), &(e + "\n"))),
            (true, Err(e)) => failures.push(format!("{name}: expected success, got:\n{e}")),
            (false, Ok(_)) => failures.push(format!("{name}: expected an error, but it loaded and validated")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// A project loaded without its parses (`validate`, `graph`) is checked exactly as one that keeps
/// them: the same IR, the same errors, the same needs (stream-stream joins, windows, keys), read
/// from what the front-end recorded before dropping each parse.
#[test]
fn dropping_the_parses_changes_no_check() {
    let extra = tempfile::tempdir().unwrap();
    std::fs::write(extra.path().join("spark-pipeline.yml"), "name: p\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        extra.path().join("a.sql"),
        "CREATE STREAMING TABLE a AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE b AS SELECT * FROM STREAM read_files('in2', format => 'json');\n\
         CREATE STREAMING TABLE j AS SELECT x.id FROM STREAM(a) x JOIN (SELECT * FROM STREAM(b)) y ON x.id = y.id;\n\
         CREATE STREAMING TABLE w AS SELECT window(ts, '10 minutes') AS win, count(*) AS n\n\
           FROM STREAM(a) WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY window(ts, '10 minutes');\n",
    )
    .unwrap();
    let mut checked = 0;
    for dir in cases().into_iter().chain([extra.path().to_path_buf()]) {
        let load = |parses| {
            knut_thund::frontend::load_with(&dir, parses).map_err(|e| e.to_string()).map(|p| {
                let valid = p.validate().map_err(|e| e.to_string());
                let needs: Vec<String> = p.needs().iter().map(|n| format!("{n:?}")).collect();
                let plan = knut_thund::plan::plan(&p, &Default::default()).map(|_| ()).map_err(|e| e.to_string());
                (describe(&p), valid, needs, plan, p.flows.iter().filter(|f| f.query().ast.get().is_some()).count())
            })
        };
        let (kept, dropped) = (load(Parses::Keep), load(Parses::Drop));
        match (&kept, &dropped) {
            (Ok(k), Ok(d)) => {
                // The smallest difference first, so a failure reads well.
                assert_eq!(k.1, d.1, "{}: validation", dir.display());
                assert_eq!(k.3, d.3, "{}: plan", dir.display());
                assert_eq!(k.2, d.2, "{}: needs", dir.display());
                assert!(k.0 == d.0, "{}: the IR differs", dir.display());
                assert_eq!(k.4, p_flows(&dir), "{}: every flow keeps its parse", dir.display());
                assert_eq!(d.4, 0, "{}: a parse was kept", dir.display());
            }
            _ => assert_eq!(kept.as_ref().err(), dropped.as_ref().err(), "{}", dir.display()),
        }
        checked += 1;
    }
    // The 18 case folders and the extra project: a folder that stopped being found fails here.
    assert_eq!(checked, 19, "projects checked");
    // The extra project exercises what is read from the parse.
    let p = knut_thund::frontend::load_with(extra.path(), Parses::Drop).unwrap();
    let needs = format!("{:?}", p.needs());
    assert!(needs.contains("StreamJoins"), "{needs}");
    assert!(needs.contains("EventTime"), "{needs}");
}

fn p_flows(dir: &Path) -> usize {
    knut_thund::frontend::load(dir).unwrap().flows.len()
}

/// The flows of the `ok_` cases, each one query.
const QUERIES_IN_OK_CASES: usize = 11;

/// parse → print → parse yields the same tree for every query of the ok cases.
#[test]
fn queries_round_trip_through_the_printer() {
    let mut n = 0;
    for dir in cases().into_iter().filter(|d| d.file_name().unwrap().to_string_lossy().starts_with("ok_")) {
        let p = outcome(&dir).unwrap();
        for f in &p.flows {
            let q = f.query();
            let norm = normalize(&q.sql, &q.location).unwrap();
            let first = parse(&norm.sql, &q.location).unwrap();
            let printed = first.to_string();
            let second = parse(&printed, &q.location).unwrap_or_else(|e| panic!("{printed}: {e}"));
            assert_eq!(first.to_string(), second.to_string(), "{}", q.sql);
            assert_eq!(strip_spans(&first), strip_spans(&second), "{}", q.sql);
            n += 1;
        }
    }
    assert_eq!(n, QUERIES_IN_OK_CASES, "queries checked");
}

/// The AST with source spans removed (they differ between the original and printed text).
fn strip_spans(q: &sqlparser::ast::Query) -> String {
    let debug = format!("{q:?}");
    let mut out = String::with_capacity(debug.len());
    let mut rest = debug.as_str();
    while let Some(i) = rest.find("span: Span(") {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        let mut depth = 0;
        let mut end = after.len();
        for (k, c) in after.char_indices() {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The crate's folder, as the test runner reports it when the test starts: a test binary built
/// from another checkout sharing the target directory still reads this checkout's files.
fn manifest_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
}
