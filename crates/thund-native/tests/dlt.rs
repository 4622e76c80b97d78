//! Databricks DLT SQL run natively: Auto Loader's `cloud_files` (strings by default, schema
//! hints, the rescued-data column) and `APPLY CHANGES INTO`. Expected values follow Auto Loader's
//! documented behaviour and DLT's, written out by hand here.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use arrow::datatypes::DataType;
use common::*;

const SPEC: &str = "name: dlt\nlibraries:\n  - glob:\n      include: sql/**\n";

const SQL: &str = "CREATE OR REFRESH STREAMING LIVE TABLE raw\n\
       AS SELECT * FROM cloud_files('in', 'json');\n\
     CREATE OR REFRESH STREAMING LIVE TABLE hinted\n\
       AS SELECT * FROM cloud_files('in', 'json', map('cloudFiles.inferColumnTypes', 'true',\n\
         'cloudFiles.schemaHints', 'amount DECIMAL(10,2), day DATE, missing STRING'));\n\
     CREATE OR REFRESH STREAMING LIVE TABLE people\n\
       AS SELECT * FROM cloud_files('people', 'csv', map('header', 'true'));\n\
     CREATE OR REFRESH STREAMING LIVE TABLE changes\n\
       AS SELECT * FROM cloud_files('cdc', 'csv', map('header', 'true', 'cloudFiles.inferColumnTypes', 'true'));\n\
     CREATE OR REFRESH STREAMING LIVE TABLE current;\n\
     APPLY CHANGES INTO LIVE.current FROM STREAM(LIVE.changes) KEYS (id)\n\
       APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op, seq);\n";

/// A string column, as stored (`Utf8`) or as read back (`Utf8View`).
fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
}

fn dlt_project() -> tempfile::TempDir {
    project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", SQL),
        (
            "in/1.json",
            "{\"id\": 1, \"amount\": 2.50, \"day\": \"2026-03-01\", \"tags\": {\"b\": 1, \"a\": [1, 2.0]}, \"ok\": true}\n\
             {\"id\": 2, \"amount\": 10, \"day\": \"2026-03-02\", \"tags\": null, \"ok\": false}\n",
        ),
        ("people/p.csv", "id,name\n1,Ada\n2,Grace\n"),
        ("cdc/1.csv", "id,seq,op,name\n1,1,U,a\n2,2,U,b\n1,3,U,a2\n2,5,D,\n2,4,U,b2\n"),
    ])
}

#[test]
fn cloud_files_reads_strings_by_default_as_auto_loader_does() {
    let dir = dlt_project();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let b = query(dir.path(), "SELECT * FROM raw ORDER BY id").unwrap();
    let schema = b[0].schema();
    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
    assert_eq!(names, ["amount", "day", "id", "ok", "tags", "_rescued_data"]);
    assert!(schema.fields().iter().all(|f| is_string(f.data_type())), "{schema:?}");
    // Numbers as written, nested values as their compact JSON, keys in their order.
    assert_eq!(
        rows(&b).1,
        [
            vec!["2.50", "2026-03-01", "1", "true", r#"{"b":1,"a":[1,2.0]}"#, ""],
            vec!["10", "2026-03-02", "2", "false", "", ""],
        ]
    );
    let people = query(dir.path(), "SELECT * FROM people ORDER BY id").unwrap();
    assert!(people[0].schema().fields().iter().all(|f| is_string(f.data_type())));
    assert_eq!(rows(&people).1, [vec!["1", "Ada"], vec!["2", "Grace"]]);
}

#[test]
fn schema_hints_type_their_columns_and_add_missing_ones() {
    let dir = dlt_project();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let b = query(dir.path(), "SELECT id, amount, day, missing, ok FROM hinted ORDER BY id").unwrap();
    let schema = b[0].schema();
    let types: Vec<&DataType> = schema.fields().iter().map(|f| f.data_type()).collect();
    assert_eq!(types[..3], [&DataType::Int64, &DataType::Decimal128(10, 2), &DataType::Date32]);
    assert!(is_string(types[3]) && types[4] == &DataType::Boolean, "{types:?}");
    assert_eq!(
        rows(&b).1,
        [vec!["1", "2.50", "2026-03-01", "", "true"], vec!["2", "10.00", "2026-03-02", "", "false"]]
    );
}

#[test]
fn apply_changes_into_is_auto_cdc() {
    let dir = dlt_project();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    // Key 1's last change is `a2`; key 2 is deleted at 5, after its change at 4.
    assert_eq!(rows(&query(dir.path(), "SELECT * FROM current ORDER BY id").unwrap()).1, [vec!["1", "a2"]]);
}

#[test]
fn a_value_a_schema_hint_cannot_read_fails_the_batch_and_commits_nothing() {
    let dir = dlt_project();
    std::fs::write(dir.path().join("in/1.json"), "{\"id\": 1, \"amount\": 1, \"day\": \"yesterday\"}\n").unwrap();
    let (s, _) = run(dir.path());
    let hinted = s.flows.iter().find(|f| f.flow.ends_with("hinted")).unwrap();
    assert!(hinted.error.is_some(), "{:?}", s.flows);
    assert!(query(dir.path(), "SELECT * FROM hinted").is_err(), "nothing is committed");
    assert_eq!(rows(&query(dir.path(), "SELECT id FROM raw").unwrap()).1, [vec!["1"]]);
}
