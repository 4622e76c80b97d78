//! Expectations: warn / drop / fail, counted on every row, NULL as a violation.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use common::*;
use knut_thund::backend::{DataQuality, RunPhase};

const SPEC: &str = "name: e\nlibraries:\n  - glob:\n      include: sql/**\n";

fn metrics(summary: &knut_thund::backend::RunSummary, flow: &str) -> DataQuality {
    summary
        .flows
        .iter()
        .find(|f| f.flow.ends_with(&format!(".{flow}")))
        .and_then(|f| f.data_quality.clone())
        .unwrap_or_else(|| panic!("no metrics for {flow}: {:?}", summary.flows))
}

fn counts(dq: &DataQuality) -> Vec<(String, u64, u64)> {
    dq.expectations.iter().map(|e| (e.name.clone(), e.passed_records, e.failed_records)).collect()
}

// Rows (x, y): (5,'a') (-1,NULL) (NULL,'b') (10,'c') (0,'d').
// x > 0 holds for 5 and 10 only (NULL is a violation): 2 pass, 3 fail.
// y IS NOT NULL fails for the row x = -1 only: 4 pass, 1 fail, that row is dropped.
const DATA: &str = "VALUES (5, 'a'), (-1, NULL), (NULL, 'b'), (10, 'c'), (0, 'd') AS t(x, y)";

#[test]
fn warn_counts_and_drop_removes_violating_rows() {
    let sql = format!(
        "CREATE MATERIALIZED VIEW m (\n  CONSTRAINT positive EXPECT (x > 0),\n  CONSTRAINT has_y EXPECT (y IS NOT NULL) ON VIOLATION DROP ROW\n) AS SELECT * FROM {DATA}"
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let dq = metrics(&s, "m");
    assert_eq!(counts(&dq), [("positive".to_string(), 2, 3), ("has_y".to_string(), 4, 1)]);
    assert_eq!(dq.dropped_records, 1);
    assert_eq!(s.flows[0].rows_written, 4);
    let mut ys: Vec<String> =
        rows(&query(dir.path(), "SELECT y FROM m").unwrap()).1.into_iter().map(|r| r[0].clone()).collect();
    ys.sort();
    assert_eq!(ys, ["a", "b", "c", "d"]);
}

#[test]
fn fail_update_fails_the_flow_and_keeps_the_previous_version() {
    let ok = "CREATE MATERIALIZED VIEW m (CONSTRAINT small EXPECT (x < 8) ON VIOLATION FAIL UPDATE) AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(x, y);\n\
              CREATE MATERIALIZED VIEW after AS SELECT count(*) AS n FROM m;";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", ok)]);
    assert!(!run(dir.path()).0.failed());
    let bad = format!(
        "CREATE MATERIALIZED VIEW m (CONSTRAINT small EXPECT (x < 8) ON VIOLATION FAIL UPDATE) AS SELECT * FROM {DATA};\n\
         CREATE MATERIALIZED VIEW after AS SELECT count(*) AS n FROM m;"
    );
    std::fs::write(dir.path().join("sql/a.sql"), bad).unwrap();
    let (s, _) = run(dir.path());
    let m = s.flows.iter().find(|f| f.flow.ends_with(".m")).unwrap();
    assert_eq!(m.phase, RunPhase::Failed);
    let err = m.error.clone().unwrap();
    // x < 8 fails for 10 and NULL: two rows, both shown.
    for needle in
        ["`small`", "spark_catalog.default.m", "x < 8", "2 row(s)", "x=10, y=c", "x=NULL, y=b", "sql/a.sql:1:"]
    {
        assert!(err.contains(needle), "missing {needle} in {err}");
    }
    assert_eq!(counts(m.data_quality.as_ref().unwrap()), [("small".to_string(), 3, 2)]);
    assert_eq!(s.flows.iter().find(|f| f.flow.ends_with(".after")).unwrap().phase, RunPhase::Skipped);
    let mut xs: Vec<String> =
        rows(&query(dir.path(), "SELECT x FROM m").unwrap()).1.into_iter().map(|r| r[0].clone()).collect();
    xs.sort();
    assert_eq!(xs, ["1", "2"], "the previous version stays readable and unchanged");
}

#[test]
fn streaming_tables_count_each_runs_own_rows() {
    let sql = "CREATE STREAMING TABLE s (CONSTRAINT even EXPECT (id % 2 = 0) ON VIOLATION DROP ROW)\n\
               AS SELECT * FROM STREAM read_files('in', format => 'json');";
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", sql),
        ("in/a.json", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": 4}\n"),
    ]);
    let (s1, _) = run(dir.path());
    assert_eq!(counts(&metrics(&s1, "s")), [("even".to_string(), 2, 1)]);
    std::fs::write(dir.path().join("in/b.json"), "{\"id\": 5}\n{\"id\": 7}\n{\"id\": 8}\n{\"id\": null}\n").unwrap();
    let (s2, _) = run(dir.path());
    assert_eq!(counts(&metrics(&s2, "s")), [("even".to_string(), 1, 3)]);
    let mut ids: Vec<String> =
        rows(&query(dir.path(), "SELECT id FROM s").unwrap()).1.into_iter().map(|r| r[0].clone()).collect();
    ids.sort();
    assert_eq!(ids, ["2", "4", "8"]);
}

#[test]
fn a_streaming_views_expectations_are_checked_in_the_flow_that_streams_it() {
    // DLT's bronze-view pattern: a streaming view checks the rows each batch takes in; what it
    // drops never reaches the table, and its counts are the batch's rows, run by run.
    let sql = "CREATE TEMPORARY VIEW v (\n  CONSTRAINT even EXPECT (id % 2 = 0) ON VIOLATION DROP ROW,\n  CONSTRAINT small EXPECT (id < 5)\n)\n\
               AS SELECT * FROM STREAM read_files('in', format => 'json', schema => 'id BIGINT');\n\
               CREATE STREAMING TABLE s AS SELECT id * 10 AS ten FROM STREAM v;";
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", sql),
        ("in/a.json", "{\"id\": 1}\n{\"id\": 2}\n{\"id\": 4}\n"),
    ]);
    let (s1, events) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    let dq = metrics(&s1, "s");
    assert_eq!(counts(&dq), [("even".to_string(), 2, 1), ("small".to_string(), 3, 0)]);
    assert!(dq.expectations.iter().all(|e| e.dataset.ends_with(".v")), "{dq:?}");
    assert_eq!(dq.dropped_records, 1);
    assert!(events.iter().any(|e| e.details.data_quality.as_ref().is_some_and(|q| q.expectations.len() == 2)));
    std::fs::write(dir.path().join("in/b.json"), "{\"id\": 5}\n{\"id\": 6}\n{\"id\": 8}\n{\"id\": null}\n").unwrap();
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    // Run 2 counts its own four rows, each against every expectation: 6 and 8 are even (5 and
    // NULL are not); none is below 5 (NULL is a violation).
    assert_eq!(counts(&metrics(&s2, "s")), [("even".to_string(), 2, 2), ("small".to_string(), 0, 4)]);
    let mut got: Vec<String> =
        rows(&query(dir.path(), "SELECT ten FROM s").unwrap()).1.into_iter().map(|r| r[0].clone()).collect();
    got.sort();
    assert_eq!(got, ["20", "40", "60", "80"]);
}

#[test]
fn a_streaming_views_fail_update_fails_the_batch_and_writes_nothing() {
    let sql = "CREATE TEMPORARY VIEW v (CONSTRAINT small EXPECT (id < 5) ON VIOLATION FAIL UPDATE)\n\
               AS SELECT * FROM STREAM read_files('in', format => 'json', schema => 'id BIGINT');\n\
               CREATE STREAMING TABLE s AS SELECT * FROM STREAM v;";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql), ("in/a.json", "{\"id\": 1}\n{\"id\": 2}\n")]);
    assert!(!run(dir.path()).0.failed());
    std::fs::write(dir.path().join("in/b.json"), "{\"id\": 3}\n{\"id\": 9}\n").unwrap();
    let (s, _) = run(dir.path());
    let f = s.flows.iter().find(|f| f.flow.ends_with(".s")).unwrap();
    assert_eq!(f.phase, RunPhase::Failed);
    let err = f.error.clone().unwrap();
    assert!(err.contains("`small`") && err.contains("id=9"), "{err}");
    assert_eq!(rows(&query(dir.path(), "SELECT count(*) FROM s").unwrap()).1, vec![vec!["2".to_string()]]);
    // The failed batch is taken again once the data is fixed: nothing was lost or skipped.
    std::fs::write(dir.path().join("in/b.json"), "{\"id\": 3}\n{\"id\": 4}\n").unwrap();
    assert!(!run(dir.path()).0.failed());
    assert_eq!(rows(&query(dir.path(), "SELECT sum(id) FROM s").unwrap()).1, vec![vec!["10".to_string()]]);
}

#[test]
fn temporary_view_expectations_are_checked_where_the_view_is_read() {
    let sql = format!(
        "CREATE TEMPORARY VIEW v (CONSTRAINT positive EXPECT (x > 0) ON VIOLATION DROP ROW) AS SELECT * FROM {DATA};\n\
         CREATE MATERIALIZED VIEW m AS SELECT count(*) AS n FROM v;"
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    let (s, events) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(rows(&query(dir.path(), "SELECT n FROM m").unwrap()).1, vec![vec!["2".to_string()]]);
    assert_eq!(counts(&metrics(&s, "v")), [("positive".to_string(), 2, 3)]);
    assert!(events.iter().any(|e| e.details.data_quality.is_some() && e.element.ends_with(".v")));
}

#[test]
fn a_temporary_view_read_twice_counts_its_rows_once() {
    let sql = format!(
        "CREATE TEMPORARY VIEW v (CONSTRAINT positive EXPECT (x > 0)) AS SELECT * FROM {DATA};\n\
         CREATE MATERIALIZED VIEW m AS SELECT count(*) AS n FROM v;\n\
         CREATE MATERIALIZED VIEW k AS SELECT sum(x) AS total FROM v;"
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(rows(&query(dir.path(), "SELECT n FROM m").unwrap()).1, vec![vec!["5".to_string()]]);
    // The view's five rows, once: two pass, three fail — not ten rows from two readers.
    assert_eq!(counts(&metrics(&s, "v")), [("positive".to_string(), 2, 3)]);
}

#[test]
fn a_predicate_on_an_unknown_column_is_an_error_at_its_line() {
    let sql = "CREATE MATERIALIZED VIEW m (\n  CONSTRAINT bad EXPECT (nope > 1)\n) AS SELECT 1 AS x;";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let options = knut_thund::backend::RunOptions { dry: true, ..Default::default() };
    let (s, _) = run_with(dir.path(), options);
    let err = s.flows[0].error.clone().unwrap_or_default();
    assert!(err.contains("sql/a.sql:2:3") && err.contains("expectation `bad`") && err.contains("nope"), "{err}");
}

// An AUTO CDC target's expectations apply to the changes, before they are applied (as DLT
// checks them): a change dropped by `DROP ROW` never reaches the target, a warning counts,
// a `FAIL UPDATE` violation fails the batch and the target keeps what it had.
// Changes (id, seq, name, age): (1,1,a,30) (2,2,NULL,40) (1,3,a2,10) (3,4,c,20).
// named: 3 pass, 1 fail (id 2's change, dropped); adult: 3 pass, 1 fail (id 1 at 10, kept).
const CDC_CHANGES: &str = concat!(
    r#"{"id": 1, "seq": 1, "name": "a", "age": 30}"#,
    "\n",
    r#"{"id": 2, "seq": 2, "name": null, "age": 40}"#,
    "\n",
    r#"{"id": 1, "seq": 3, "name": "a2", "age": 10}"#,
    "\n",
    r#"{"id": 3, "seq": 4, "name": "c", "age": 20}"#,
    "\n"
);

fn cdc_project(constraints: &str) -> tempfile::TempDir {
    let sql = format!(
        "CREATE STREAMING TABLE changes AS SELECT * FROM STREAM read_files('data', format => 'json');\n\
         CREATE STREAMING TABLE people ({constraints});\n\
         CREATE FLOW people_cdc AS AUTO CDC INTO people FROM STREAM(changes) KEYS (id) SEQUENCE BY seq\n\
         COLUMNS id, name, age;\n"
    );
    project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql), ("data/1.json", CDC_CHANGES)])
}

#[test]
fn an_auto_cdc_targets_expectations_apply_to_its_changes() {
    let dir = cdc_project(
        "CONSTRAINT named EXPECT (name IS NOT NULL) ON VIOLATION DROP ROW, CONSTRAINT adult EXPECT (age >= 18)",
    );
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let dq = metrics(&s, "people_cdc");
    assert_eq!(counts(&dq), [("named".to_string(), 3, 1), ("adult".to_string(), 3, 1)]);
    assert_eq!(dq.dropped_records, 1);
    let people: Vec<Vec<String>> = rows(&query(dir.path(), "SELECT id, name, age FROM people ORDER BY id").unwrap()).1;
    assert_eq!(people, [["1", "a2", "10"], ["3", "c", "20"]]);
}

#[test]
fn a_fail_update_expectation_on_an_auto_cdc_target_fails_the_batch() {
    let dir = cdc_project("CONSTRAINT adult EXPECT (age >= 18) ON VIOLATION FAIL UPDATE");
    let (s, _) = run(dir.path());
    let f = s.flows.iter().find(|f| f.flow.ends_with(".people_cdc")).unwrap();
    assert_eq!(f.phase, RunPhase::Failed, "{:?}", s.flows);
    let err = f.error.clone().unwrap();
    assert!(err.contains("adult") && err.contains("FAIL UPDATE"), "{err}");
    assert_eq!(counts(f.data_quality.as_ref().unwrap())[0].2, 1, "the violation is counted");
    // Nothing was applied; the next run, with the rule met, applies every change.
    assert!(query(dir.path(), "SELECT * FROM people").map_or(true, |b| rows(&b).1.is_empty()));
    std::fs::write(
        dir.path().join("sql/a.sql"),
        std::fs::read_to_string(dir.path().join("sql/a.sql")).unwrap().replace("age >= 18", "age >= 0"),
    )
    .unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let people = rows(&query(dir.path(), "SELECT id, name FROM people ORDER BY id").unwrap()).1;
    assert_eq!(people, [["1", "a2"], ["2", ""], ["3", "c"]]);
}

/// A plan of several partitions (a grouping over four) is checked partition by partition, side
/// by side: the counts add up over all of them, DROP ROW drops in each, and a FAIL UPDATE in any
/// one fails the flow without a commit.
#[test]
fn every_partition_of_a_plan_is_checked_and_counted() {
    use knut_thund::backend::{ExecBackend, RunOptions};
    let grouped = "SELECT id % 1000 AS k, count(*) AS n FROM range(0, 100000) GROUP BY id % 1000";
    let run_on_four = |dir: &std::path::Path| {
        let engine = thund_native::EngineOptions { memory_limit: None, target_partitions: 4 };
        let backend = thund_native::NativeBackend::with_options(thund_native::NativeOptions { engine });
        backend.run_with(&load(dir), &RunOptions::default()).unwrap().finish().unwrap()
    };
    let sql = format!(
        "CREATE MATERIALIZED VIEW m (CONSTRAINT low EXPECT (k < 900) ON VIOLATION DROP ROW, \
         CONSTRAINT hundred EXPECT (n = 100)) AS {grouped}"
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    let s = run_on_four(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let dq = metrics(&s, "m");
    assert_eq!(counts(&dq), [("low".to_string(), 900, 100), ("hundred".to_string(), 1000, 0)]);
    assert_eq!((dq.dropped_records, s.flows[0].rows_written), (100, 900));
    let r = rows(&query(dir.path(), "SELECT count(*), max(k), sum(n) FROM m").unwrap()).1;
    assert_eq!(r, [["900", "899", "90000"]]);

    let failing =
        format!("CREATE MATERIALIZED VIEW m (CONSTRAINT low EXPECT (k < 999) ON VIOLATION FAIL UPDATE) AS {grouped}");
    std::fs::write(dir.path().join("sql/a.sql"), failing).unwrap();
    let s = run_on_four(dir.path());
    assert_eq!(s.flows[0].phase, RunPhase::Failed, "{:?}", s.flows);
    let r = rows(&query(dir.path(), "SELECT count(*) FROM m").unwrap()).1;
    assert_eq!(r, [["900"]], "the failed refresh left the previous version");
}
