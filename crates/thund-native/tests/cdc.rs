//! AUTO CDC on the native backend: what a user gets wrong is reported with the flow's file:line
//! before anything is written. The tables themselves are checked against an engine-independent
//! replay in `conformance/auto-cdc`, and under kills in `thund-cli/tests/crash.rs`.

mod common;

use std::path::Path;

use common::*;

const SPEC: &str = "name: c\nlibraries:\n  - glob:\n      include: sql/**\n";

fn changes(dir: &Path, lines: &str) {
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/b0.json"), lines).unwrap();
}

fn error_of(s: &knut_thund::backend::RunSummary, flow: &str) -> String {
    let f = s.flows.iter().find(|f| f.flow.ends_with(&format!(".{flow}"))).unwrap_or_else(|| panic!("{flow}"));
    f.error.clone().unwrap_or_else(|| panic!("{flow} did not fail: {:?}", f.phase))
}

#[test]
fn columns_the_change_feed_lacks_are_named_with_the_flows_location() {
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t;\n\
         CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(feed) KEYS (id, region)\n\
           SEQUENCE BY seq COLUMNS id, name, nmae STORED AS SCD TYPE 2 TRACK HISTORY ON adress;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    changes(dir.path(), "{\"id\": 1, \"name\": \"a\", \"seq\": 1}\n");
    let (s, _) = run(dir.path());
    assert!(s.failed());
    let e = error_of(&s, "f");
    for part in ["a.sql:3:1", "`region` (KEYS)", "`nmae` (COLUMNS)", "`adress` (TRACK HISTORY ON)", "id, name, seq"] {
        assert!(e.contains(part), "{part} missing from: {e}");
    }
    assert!(!dir.path().join(".thund/tables/spark_catalog/default/t").exists(), "nothing is written");
}

#[test]
fn a_null_sequence_is_an_error_naming_the_flow_and_the_count() {
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t FLOW AUTO CDC FROM STREAM(feed) KEYS (id) SEQUENCE BY seq;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    changes(dir.path(), "{\"id\": 1, \"seq\": 1}\n{\"id\": 2, \"seq\": null}\n{\"id\": 3}\n");
    let (s, _) = run(dir.path());
    let e = error_of(&s, "t");
    assert!(e.contains("`spark_catalog.default.t`") && e.contains("2 change(s) have a NULL `SEQUENCE BY`"), "{e}");
    // Nothing applied: the next run, with the feed fixed, starts from the first change.
    assert!(query(dir.path(), "SELECT * FROM t").is_err(), "the target was written");
}

#[test]
fn a_truncate_removes_every_key_older_than_it_and_a_sequence_can_be_a_struct() {
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' APPLY AS TRUNCATE WHEN op = 'T'\n\
           SEQUENCE BY struct(day, n) COLUMNS * EXCEPT (op, day, n);\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    changes(
        dir.path(),
        "{\"id\": 1, \"v\": \"a\", \"op\": \"U\", \"day\": 1, \"n\": 9}\n\
         {\"id\": 2, \"v\": \"b\", \"op\": \"U\", \"day\": 1, \"n\": 10}\n\
         {\"id\": 1, \"v\": \"a2\", \"op\": \"U\", \"day\": 2, \"n\": 1}\n",
    );
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    // (2, 1) sorts after (1, 10): a struct orders field by field, not as the sum or the text.
    let rows = |d: &Path| {
        let mut r = common::rows(&query(d, "SELECT id, v FROM t").unwrap()).1;
        r.sort();
        r
    };
    assert_eq!(rows(dir.path()), [["1", "a2"], ["2", "b"]]);
    // A truncate at (3, 0) empties the table; a later change of key 2 comes back, an older one of
    // key 1 (arriving after the truncate) does not.
    std::fs::write(
        dir.path().join("in/b1.json"),
        "{\"id\": null, \"v\": null, \"op\": \"T\", \"day\": 3, \"n\": 0}\n\
         {\"id\": 2, \"v\": \"b2\", \"op\": \"U\", \"day\": 3, \"n\": 5}\n\
         {\"id\": 1, \"v\": \"old\", \"op\": \"U\", \"day\": 2, \"n\": 7}\n",
    )
    .unwrap();
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    assert_eq!(rows(dir.path()), [["2", "b2"]]);
}
