//! End-to-end runs of the native backend on real files and real Delta tables.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;

use common::*;
use knut_thund::backend::{RunOptions, RunPhase};
use knut_thund::plan::Selection;

const SPEC: &str = "name: t\nlibraries:\n  - glob:\n      include: sql/**\n";

fn phase_of(summary: &knut_thund::backend::RunSummary, dataset: &str) -> RunPhase {
    summary
        .flows
        .iter()
        .find(|f| f.target.ends_with(&format!(".{dataset}")))
        .unwrap_or_else(|| panic!("no flow into {dataset}: {:?}", summary.flows))
        .phase
}

fn sorted_rows(dir: &Path, sql: &str) -> Vec<Vec<String>> {
    let mut r = rows(&query(dir, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))).1;
    r.sort();
    r
}

fn write_parquet(path: &Path, values_sql: &str) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let ctx = datafusion::prelude::SessionContext::new();
        let sql = format!("COPY ({values_sql}) TO '{}' STORED AS PARQUET", path.display());
        ctx.sql(&sql).await.unwrap().collect().await.unwrap();
    });
}

#[test]
fn reads_csv_json_and_parquet_sources_and_joins_them() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("data/orders.csv", "order_id,customer_id,amount\n1,10,5.50\n2,10,4.50\n3,20,7.25\n4,30,1.00\n"),
        ("data/customers.json", "{\"customer_id\": 10, \"name\": \"Ada\"}\n{\"customer_id\": 20, \"name\": \"Bo\"}\n"),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW orders AS SELECT * FROM read_files('data/orders.csv', format => 'csv', header => true);\n\
             CREATE MATERIALIZED VIEW customers AS SELECT * FROM json.`data/customers.json`;\n\
             CREATE MATERIALIZED VIEW regions AS SELECT * FROM parquet.`data/regions.parquet`;\n\
             CREATE TEMPORARY VIEW joined AS\n\
               SELECT o.order_id, o.amount, c.name, r.region FROM orders o\n\
               LEFT JOIN customers c ON o.customer_id = c.customer_id\n\
               LEFT JOIN regions r ON o.customer_id = r.customer_id;\n\
             CREATE MATERIALIZED VIEW totals AS\n\
               SELECT coalesce(name, 'none') AS name, count(*) AS n, sum(amount) AS total, max(region) AS region\n\
               FROM joined GROUP BY coalesce(name, 'none');\n\
             CREATE MATERIALIZED VIEW no_customer AS SELECT order_id FROM orders o LEFT ANTI JOIN customers c ON o.customer_id = c.customer_id;",
        ),
    ]);
    write_parquet(
        &dir.path().join("data/regions.parquet"),
        "SELECT * FROM (VALUES (10, 'north'), (30, 'south')) AS t(customer_id, region)",
    );
    let (summary, _) = run(dir.path());
    assert!(!summary.failed(), "{:?}", summary.flows);
    // Expected by hand: Ada has orders 1 and 2 (5.50 + 4.50), Bo order 3, customer 30 has none.
    assert_eq!(
        sorted_rows(dir.path(), "SELECT name, n, CAST(total AS STRING), region FROM totals"),
        vec![
            vec!["Ada".to_string(), "2".into(), "10.0".into(), "north".into()],
            vec!["Bo".to_string(), "1".into(), "7.25".into(), "".into()],
            vec!["none".to_string(), "1".into(), "1.0".into(), "south".into()],
        ]
    );
    assert_eq!(sorted_rows(dir.path(), "SELECT order_id FROM no_customer"), vec![vec!["4".to_string()]]);
    let rows_written: u64 =
        summary.flows.iter().filter(|f| f.target.ends_with(".orders")).map(|f| f.rows_written).sum();
    assert_eq!(rows_written, 4);
}

#[test]
fn a_failing_flow_keeps_the_old_table_skips_downstream_and_spares_the_rest() {
    let good = "CREATE MATERIALIZED VIEW base AS SELECT * FROM VALUES (1), (2) AS t(x);\n\
                CREATE MATERIALIZED VIEW doubled AS SELECT x * 2 AS y FROM base;\n\
                CREATE MATERIALIZED VIEW after AS SELECT y + 1 AS z FROM doubled;\n\
                CREATE MATERIALIZED VIEW other AS SELECT 'ok' AS s;";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", good)]);
    let (first, _) = run(dir.path());
    assert!(!first.failed(), "{:?}", first.flows);
    let before = sorted_rows(dir.path(), "SELECT y FROM doubled");

    let broken = good.replace("SELECT x * 2 AS y FROM base", "SELECT no_such_column * 2 AS y FROM base");
    std::fs::write(dir.path().join("sql/a.sql"), broken).unwrap();
    let (second, events) = run(dir.path());
    assert!(second.failed());
    assert_eq!(phase_of(&second, "doubled"), RunPhase::Failed);
    assert_eq!(phase_of(&second, "after"), RunPhase::Skipped);
    assert_eq!(phase_of(&second, "other"), RunPhase::Idle, "independent and unchanged: neither failed nor skipped");
    let err = second.flows.iter().find(|f| f.phase == RunPhase::Failed).and_then(|f| f.error.clone()).unwrap();
    assert!(err.contains("sql/a.sql:2:") && err.contains("no_such_column"), "{err}");
    assert!(events.iter().any(|e| e.phase == Some(RunPhase::Skipped)));
    // The failed dataset still holds the previous run's rows.
    assert_eq!(sorted_rows(dir.path(), "SELECT y FROM doubled"), before);
}

#[test]
fn source_and_schema_problems_are_clear_errors_with_locations() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("in/1.json", "{\"zeta\": \"z\", \"alpha\": 7}\n"),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW missing AS SELECT * FROM parquet.`data/nope.parquet`;\n\
             CREATE MATERIALIZED VIEW declared (a BIGINT, b STRING) AS SELECT 1 AS a, 'x' AS c;\n\
             CREATE MATERIALIZED VIEW unknown_fn AS SELECT frobnicate(1) AS v;\n\
             CREATE MATERIALIZED VIEW unnamed AS SELECT count(*) FROM VALUES (1) AS t(x);\n\
             CREATE MATERIALIZED VIEW fine (a INT, b DECIMAL(10,2)) AS SELECT 1 AS a, 2.5 AS b;\n\
             CREATE MATERIALIZED VIEW by_name (b STRING, a INT COMMENT 'x', c INT) AS SELECT 1 AS a, 'two' AS b, 3 AS c;\n\
             CREATE STREAMING TABLE streamed (zeta STRING, alpha BIGINT) AS SELECT * FROM STREAM read_files('in', format => 'json');",
        ),
    ]);
    let (summary, _) = run(dir.path());
    let error = |name: &str| {
        summary.flows.iter().find(|f| f.target.ends_with(name)).and_then(|f| f.error.clone()).unwrap_or_default()
    };
    let e = error(".missing");
    assert!(e.contains("sql/a.sql:1:") && e.contains("does not exist") && e.contains("nope.parquet"), "{e}");
    let declared = error(".declared");
    assert!(declared.contains("sql/a.sql:2:") && declared.contains("do not match the declared schema"), "{declared}");
    let e = error(".unknown_fn");
    assert!(e.contains("sql/a.sql:3:") && e.contains("frobnicate"), "{e}");
    let e = error(".unnamed");
    assert!(e.contains("sql/a.sql:4:") && e.contains("give it a name"), "{e}");
    assert_eq!(phase_of(&summary, "fine"), RunPhase::Completed);
    // The declared types are what is stored.
    let b = query(dir.path(), "SELECT a, b FROM fine").unwrap();
    let schema = b[0].schema();
    assert_eq!(schema.field(0).data_type(), &arrow::datatypes::DataType::Int32);
    assert_eq!(schema.field(1).data_type(), &arrow::datatypes::DataType::Decimal128(10, 2));
    // Declared columns are matched by name and kept in the declared order, as on Spark (which
    // gives `b | a | c` = `two | 1 | 3` for the same statement).
    assert!(declared.contains("the query has no b; c not declared"), "{declared}");
    let (names, values) = rows(&query(dir.path(), "SELECT * FROM by_name").unwrap());
    assert_eq!(
        (names, values),
        (vec!["b".into(), "a".into(), "c".into()], vec![vec!["two".into(), "1".into(), "3".into()]])
    );
    // JSON inference orders `alpha` before `zeta`; the declared list puts `zeta` first.
    let (names, values) = rows(&query(dir.path(), "SELECT * FROM streamed").unwrap());
    assert_eq!((names, values), (vec!["zeta".into(), "alpha".into()], vec![vec!["z".into(), "7".into()]]));
}

#[test]
fn names_that_look_like_paths_stay_inside_the_storage_root() {
    let dir = project(&[
        ("spark-pipeline.yml", "name: t\nstorage: st\nlibraries:\n  - glob:\n      include: sql/**\n"),
        ("sql/a.sql", "CREATE MATERIALIZED VIEW `../../escaped` AS SELECT 1 AS x;\nCREATE MATERIALIZED VIEW `a/b` AS SELECT 2 AS x;"),
    ]);
    let (summary, _) = run(dir.path());
    assert!(!summary.failed(), "{:?}", summary.flows);
    let tables = dir.path().join("st/tables/spark_catalog/default");
    let mut names: Vec<String> =
        std::fs::read_dir(&tables).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    assert_eq!(names, [".2E.2E.2F.2E.2E.2Fescaped", "a.2Fb"]);
    assert!(!dir.path().join("escaped").exists() && !dir.path().join("st/escaped").exists());
    assert_eq!(sorted_rows(dir.path(), "SELECT x FROM `../../escaped`"), vec![vec!["1".to_string()]]);
}

#[test]
fn refresh_selection_runs_only_what_is_selected() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", "CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;\nCREATE MATERIALIZED VIEW b AS SELECT x + 1 AS y FROM a;\nCREATE MATERIALIZED VIEW c AS SELECT 3 AS z;"),
    ]);
    let (first, _) = run(dir.path());
    assert!(!first.failed());
    std::fs::write(dir.path().join("sql/a.sql"), "CREATE MATERIALIZED VIEW a AS SELECT 10 AS x;\nCREATE MATERIALIZED VIEW b AS SELECT x + 1 AS y FROM a;\nCREATE MATERIALIZED VIEW c AS SELECT 30 AS z;").unwrap();
    let options = RunOptions {
        selection: Selection { refresh: vec!["b+".into(), "+b".into()], ..Default::default() },
        ..Default::default()
    };
    let (second, events) = run_with(dir.path(), options);
    assert!(!second.failed());
    let ran: Vec<&str> = second.flows.iter().map(|f| f.target.rsplit('.').next().unwrap()).collect();
    assert_eq!(ran.len(), 2, "{ran:?}");
    assert!(events.iter().any(|e| e.phase == Some(RunPhase::Excluded) && e.element.ends_with(".c")));
    assert_eq!(sorted_rows(dir.path(), "SELECT y FROM b"), vec![vec!["11".to_string()]]);
    assert_eq!(sorted_rows(dir.path(), "SELECT z FROM c"), vec![vec!["3".to_string()]]);
}

#[test]
fn query_explains_temporary_views_and_tables_not_yet_run() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", "CREATE TEMPORARY VIEW t AS SELECT 1 AS x;\nCREATE MATERIALIZED VIEW m AS SELECT x FROM t;\nCREATE VIEW v AS SELECT x * 5 AS y FROM m;"),
    ]);
    let e = query(dir.path(), "SELECT * FROM m").unwrap_err().to_string();
    assert!(e.contains("has no data yet") && e.contains("thund run"), "{e}");
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let e = query(dir.path(), "SELECT * FROM t").unwrap_err().to_string();
    assert!(e.contains("temporary view"), "{e}");
    assert_eq!(sorted_rows(dir.path(), "SELECT y FROM v"), vec![vec!["5".to_string()]]);
}

#[test]
fn every_run_writes_an_event_log() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", "CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;")]);
    let (s, events) = run(dir.path());
    assert!(!s.failed());
    let phases: Vec<RunPhase> = events.iter().filter(|e| e.element.ends_with(".a")).filter_map(|e| e.phase).collect();
    assert_eq!(
        phases,
        [RunPhase::Queued, RunPhase::Planning, RunPhase::Starting, RunPhase::Running, RunPhase::Completed]
    );
    // The log is a Delta table, committed by the time the run's handle is finished: the
    // run's `create_update`, the flow's `flow_definition`, then every event the run emitted.
    let p = knut_thund::frontend::load(dir.path()).unwrap();
    let logged = tokio::runtime::Runtime::new().unwrap().block_on(thund_native::event_log::read(&p)).unwrap();
    assert!(dir.path().join(".thund/event_log/_delta_log").is_dir());
    assert_eq!(logged.len(), events.len() + 2, "{logged:#?}");
    assert_eq!(logged[0].event_type, "create_update");
    assert_eq!(logged[1].event_type, "flow_definition");
    assert_eq!(logged[1].origin.source_code_location.as_deref(), Some("sql/a.sql:1:1"));
    let sequences: Vec<i64> = logged.iter().map(|e| e.sequence).collect();
    assert_eq!(sequences, (0..logged.len() as i64).collect::<Vec<_>>());
    assert!(logged.iter().all(|e| e.origin.update_id == logged[0].origin.update_id && e.origin.backend == "native"));
    let done =
        logged.iter().find(|e| e.details.pointer("/flow_progress/status").is_some_and(|s| s == "COMPLETED")).unwrap();
    assert_eq!(
        (done.level.as_str(), done.origin.dataset_name.as_deref()),
        ("METRICS", Some("spark_catalog.default.a"))
    );
    assert_eq!(done.details.pointer("/flow_progress/metrics/num_output_rows"), Some(&serde_json::json!(1)));
    assert_eq!(logged.last().unwrap().details.pointer("/update_progress/state"), Some(&serde_json::json!("COMPLETED")));
}

#[test]
fn tables_are_readable_by_an_independent_delta_reader() {
    let Ok(python) = std::env::var("THUND_PYTHON") else {
        panic!(
            "THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python `deltalake` reader"
        );
    };
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW t (id BIGINT, name STRING, amount DECIMAL(10,2), day DATE, at TIMESTAMP) PARTITIONED BY (day) AS \
             SELECT * FROM VALUES (1, 'a', 1.25, DATE'2026-01-01', TIMESTAMP'2026-01-01 10:00:00'), \
                                  (2, 'b', NULL, DATE'2026-01-02', TIMESTAMP'2026-01-02 11:30:00') AS v(id, name, amount, day, at)",
        ),
    ]);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let table = dir.path().join(".thund/tables/spark_catalog/default/t");
    let script = "import sys, deltalake\n\
                  t = deltalake.DeltaTable(sys.argv[1])\n\
                  rows = sorted(t.to_pyarrow_table().to_pylist(), key=lambda r: r['id'])\n\
                  for r in rows: print(r['id'], r['name'], r['amount'], r['day'], r['at'].isoformat())\n\
                  print('partitions', t.metadata().partition_columns)\n\
                  sys.stdout.flush()\n\
                  import os; os._exit(0)";
    // The reader leaves through os._exit: python deltalake's runtime can abort the interpreter's
    // teardown ("terminate called without an active exception") after a good read.
    let out = std::process::Command::new(python).arg("-c").arg(script).arg(&table).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        "1 a 1.25 2026-01-01 2026-01-01T10:00:00+00:00\n2 b None 2026-01-02 2026-01-02T11:30:00+00:00\npartitions ['day']\n"
    );
}

/// A column the optimizer folds into a constant is nullable in the logical plan and never NULL
/// in the physical one; rows checked by expectations leave under the logical schema, which the
/// table is created with. Whatever the partitions (on two or fewer, plans are not repartitioned,
/// and nothing above the check restamps its batches), the views are written.
#[test]
fn folded_constants_under_expectations_are_written_on_any_number_of_partitions() {
    use knut_thund::backend::ExecBackend;
    let sql = "CREATE MATERIALIZED VIEW checked (CONSTRAINT positive EXPECT (x > 0) ON VIOLATION DROP ROW) AS \
               SELECT x, regexp_replace('100-200', '[0-9]+', 'n') AS r, upper('a') AS u FROM VALUES (1), (-1), (2) t(x);\n\
               CREATE MATERIALIZED VIEW plain AS SELECT x, lower('B') AS l FROM checked;\n";
    for partitions in [1, 2, 4] {
        let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
        let engine = thund_native::EngineOptions { memory_limit: None, target_partitions: partitions };
        let backend = thund_native::NativeBackend::with_options(thund_native::NativeOptions { engine });
        let summary = backend.run_with(&load(dir.path()), &RunOptions::default()).unwrap().finish().unwrap();
        assert!(!summary.failed(), "{partitions} partitions: {:?}", summary.flows);
        assert_eq!(sorted_rows(dir.path(), "SELECT * FROM checked"), [["1", "n-n", "A"], ["2", "n-n", "A"]]);
        assert_eq!(sorted_rows(dir.path(), "SELECT * FROM plain"), [["1", "b"], ["2", "b"]]);
    }
}

#[test]
fn the_memory_limit_is_enforced_and_a_limited_run_completes() {
    use knut_thund::backend::ExecBackend;
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW sorted AS \
             SELECT h, count(*) AS n, min(id) AS value FROM \
             (SELECT id, md5(CAST(id AS STRING)) AS h FROM range(0, 600000)) GROUP BY h",
        ),
    ]);
    let p = load(dir.path());
    let run_with_limit = |limit: usize, target_partitions: usize| {
        let engine = thund_native::EngineOptions { memory_limit: Some(limit), target_partitions };
        let backend = thund_native::NativeBackend::with_options(thund_native::NativeOptions { engine });
        // A full refresh each time: the view's inputs do not change between these runs.
        let options =
            RunOptions { selection: Selection { full_refresh_all: true, ..Default::default() }, ..Default::default() };
        backend.run_with(&p, &options).unwrap().finish().unwrap()
    };
    // The pool is really in force: 64 KiB cannot even hold one batch.
    let starved = run_with_limit(64 << 10, 2);
    let err = starved.flows[0].error.clone().unwrap_or_default();
    assert!(err.contains("Resources exhausted"), "{err}");
    // Pools far smaller than the aggregate's 600,000 groups (each final aggregate's share must
    // still hold a batch of its groups, half a MiB): the aggregates spill to disk and
    // the run completes with the same rows as an unlimited run. Repeated, because DataFusion
    // 55's repartitioning could deadlock once it spilled: its buffers stay out of the pool.
    for (limit, partitions) in [(4 << 20, 2), (4 << 20, 2), (16 << 20, 2), (40 << 20, 2), (4 << 20, 4), (16 << 20, 4)] {
        let summary = run_with_limit(limit, partitions);
        assert!(!summary.failed(), "{limit} on {partitions} partitions: {:?}", summary.flows);
        assert_eq!(summary.flows[0].rows_written, 600_000);
        let r = sorted_rows(dir.path(), "SELECT count(*), sum(n), count(DISTINCT h) FROM sorted");
        assert_eq!(r[0], ["600000", "600000", "600000"]);
    }
}

#[test]
fn unchanged_materialized_views_are_not_recomputed() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("data/a.csv", "x\n1\n2\n"),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW src AS SELECT * FROM read_files('data/a.csv', format => 'csv', header => true);\n\
             CREATE TEMPORARY VIEW v AS SELECT x * 10 AS y FROM src;\n\
             CREATE MATERIALIZED VIEW total AS SELECT sum(y) AS s FROM v;\n\
             CREATE MATERIALIZED VIEW stamped AS SELECT count(*) AS n, current_timestamp() AS at FROM src;",
        ),
    ]);
    let phases = |s: &knut_thund::backend::RunSummary| -> Vec<(String, RunPhase)> {
        s.flows.iter().map(|f| (f.target.rsplit('.').next().unwrap().to_string(), f.phase)).collect()
    };
    let (first, _) = run(dir.path());
    assert!(!first.failed(), "{:?}", first.flows);
    let (second, _) = run(dir.path());
    let p = phases(&second);
    assert!(p.contains(&("src".into(), RunPhase::Idle)) && p.contains(&("total".into(), RunPhase::Idle)), "{p:?}");
    assert!(p.contains(&("stamped".into(), RunPhase::Completed)), "non-deterministic views always run: {p:?}");

    // A changed input file recomputes the chain through the temporary view (the same size: its
    // modification time tells).
    rewrite(&dir.path().join("data/a.csv"), "x\n1\n5\n");
    let (third, _) = run(dir.path());
    let p = phases(&third);
    assert!(
        p.contains(&("src".into(), RunPhase::Completed)) && p.contains(&("total".into(), RunPhase::Completed)),
        "{p:?}"
    );
    assert_eq!(sorted_rows(dir.path(), "SELECT s FROM total"), vec![vec!["60".to_string()]]);

    // --full-refresh recomputes even when nothing changed.
    let options = RunOptions {
        selection: Selection { full_refresh: vec!["total".into()], ..Default::default() },
        ..Default::default()
    };
    let (fourth, _) = run_with(dir.path(), options);
    assert_eq!(phases(&fourth), vec![("total".to_string(), RunPhase::Completed)]);
}

#[test]
fn a_changed_file_in_a_nested_source_folder_refreshes_the_view() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("data/day=1/a.csv", "x\n1\n2\n"),
        ("data/day=2/b.csv", "x\n5\n"),
        ("sql/a.sql", "CREATE MATERIALIZED VIEW total AS SELECT sum(x) AS s FROM read_files('data', format => 'csv', header => true);"),
    ]);
    let (first, _) = run(dir.path());
    assert_eq!(phase_of(&first, "total"), RunPhase::Completed, "{:?}", first.flows);
    assert_eq!(sorted_rows(dir.path(), "SELECT s FROM total"), vec![vec!["8".to_string()]]);
    let (second, _) = run(dir.path());
    assert_eq!(phase_of(&second, "total"), RunPhase::Idle);
    // Rewriting a file two folders down (to the same size) changes neither folder's own listing.
    rewrite(&dir.path().join("data/day=1/a.csv"), "x\n1\n9\n");
    let (third, _) = run(dir.path());
    assert_eq!(phase_of(&third, "total"), RunPhase::Completed, "a nested change must wake the view");
    assert_eq!(sorted_rows(dir.path(), "SELECT s FROM total"), vec![vec!["15".to_string()]]);
}

/// Rewrites `path` with `text` and moves its modification time a second past the old one: a
/// change within the file system's timestamp granularity is not what these tests are about, and
/// the clock is not waited on.
fn rewrite(path: &std::path::Path, text: &str) {
    let before = std::fs::metadata(path).unwrap().modified().unwrap();
    std::fs::write(path, text).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(before + std::time::Duration::from_secs(1)).unwrap();
}

#[test]
fn views_calling_functions_that_change_between_runs_are_never_idle() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW spaced AS SELECT now () AS t;\n\
             CREATE MATERIALIZED VIEW ids AS SELECT uuid() AS u;\n\
             CREATE MATERIALIZED VIEW today AS SELECT current_date AS d;\n\
             CREATE MATERIALIZED VIEW dice AS SELECT random() AS r;\n\
             CREATE MATERIALIZED VIEW nested AS SELECT upper(CAST(now() AS STRING)) AS t;\n\
             CREATE MATERIALIZED VIEW fixed AS SELECT upper('a') AS x, abs(-1) AS y;\n",
        ),
    ]);
    let (first, _) = run(dir.path());
    assert!(!first.failed(), "{:?}", first.flows);
    let (second, _) = run(dir.path());
    for volatile in ["spaced", "ids", "today", "dice", "nested"] {
        assert_eq!(phase_of(&second, volatile), RunPhase::Completed, "{volatile}: {:?}", second.flows);
    }
    assert_eq!(phase_of(&second, "fixed"), RunPhase::Idle);
}

#[test]
fn changed_table_properties_reach_existing_tables() {
    let sql = |props: &str| {
        format!(
            "CREATE MATERIALIZED VIEW mv TBLPROPERTIES ({props}) AS SELECT 1 AS x;\n\
             CREATE STREAMING TABLE st TBLPROPERTIES ({props}) AS SELECT * FROM STREAM read_files('in', format => 'json');\n"
        )
    };
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", &sql("'owner' = 'a', 'keep' = 'yes'")),
        ("in/1.json", "{\"id\": 1}\n"),
    ]);
    let config = |name: &str| {
        let path = dir.path().join(".thund/tables/spark_catalog/default").join(name);
        let rt = tokio::runtime::Runtime::new().unwrap();
        let t = rt.block_on(deltalake::open_table(url::Url::from_directory_path(&path).unwrap())).unwrap();
        let c = t.snapshot().unwrap().metadata().configuration().clone();
        let mut pairs: Vec<(String, String)> = c.into_iter().collect();
        pairs.sort();
        pairs
    };
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let first = vec![("keep".to_string(), "yes".to_string()), ("owner".to_string(), "a".to_string())];
    assert_eq!(config("mv"), first);
    assert_eq!(config("st"), first);

    // A changed value and a new key apply on the next run; a key no longer declared stays.
    std::fs::write(dir.path().join("sql/a.sql"), sql("'owner' = 'b', 'tier' = 'gold'")).unwrap();
    std::fs::write(dir.path().join("in/2.json"), "{\"id\": 2}\n").unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let second = vec![
        ("keep".to_string(), "yes".to_string()),
        ("owner".to_string(), "b".to_string()),
        ("tier".to_string(), "gold".to_string()),
    ];
    assert_eq!(config("mv"), second);
    assert_eq!(config("st"), second);
    assert_eq!(rows(&query(dir.path(), "SELECT id FROM st ORDER BY id").unwrap()).1, vec![vec!["1"], vec!["2"]]);
}

/// Parquet files in the table folder of `name` (old versions' files included).
fn parquet_files(dir: &Path, name: &str) -> usize {
    let table = dir.join(".thund/tables/spark_catalog/default").join(name);
    std::fs::read_dir(table).unwrap().flatten().filter(|e| e.path().extension().is_some_and(|x| x == "parquet")).count()
}

#[test]
fn overwritten_files_are_deleted_once_past_the_tables_retention() {
    let view = |name: &str, props: &str| {
        format!(
            "CREATE MATERIALIZED VIEW {name} {props} AS SELECT count(*) AS n, current_timestamp() AS at FROM src;\n"
        )
    };
    let sql = format!(
        "CREATE MATERIALIZED VIEW src AS SELECT * FROM read_files('data/a.csv', format => 'csv', header => true);\n{}{}",
        view("kept", ""),
        view("lean", "TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 0 seconds')")
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("data/a.csv", "x\n1\n2\n"), ("sql/a.sql", &sql)]);
    // Non-deterministic views are recomputed, so each run overwrites both.
    for _ in 0..3 {
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{:?}", s.flows);
        // The rows of the write, not of the vacuum commit that follows it.
        let lean = s.flows.iter().find(|f| f.target.ends_with(".lean")).unwrap();
        assert_eq!(lean.rows_written, 1, "{lean:?}");
    }
    // The default retention (7 days) keeps every version's files; zero keeps only the current one.
    assert_eq!(parquet_files(dir.path(), "kept"), 3);
    assert_eq!(parquet_files(dir.path(), "lean"), 1);
    // A file no version references (a failed write's) goes too.
    let lean = dir.path().join(".thund/tables/spark_catalog/default/lean");
    std::fs::copy(
        std::fs::read_dir(&lean)
            .unwrap()
            .flatten()
            .find(|e| e.path().extension().is_some_and(|x| x == "parquet"))
            .unwrap()
            .path(),
        lean.join("part-00000-orphan.parquet"),
    )
    .unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(parquet_files(dir.path(), "lean"), 1);
    assert_eq!(sorted_rows(dir.path(), "SELECT n FROM lean"), vec![vec!["2".to_string()]]);
    assert_eq!(sorted_rows(dir.path(), "SELECT n FROM kept"), vec![vec!["2".to_string()]]);
}

/// A materialized view over `` delta.`path` `` wakes when the table changes in any way, a commit
/// that only removes files included (the data files stay on disk until a vacuum).
#[test]
fn a_view_over_a_delta_path_is_recomputed_after_a_remove_only_commit() {
    let python = std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers")
    });
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", "CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(id) AS s FROM delta.`src`;"),
    ]);
    let src = dir.path().join("src");
    // Written by Python's deltalake, one file per row, so deleting a row removes a whole file.
    let delta = |script: &str| {
        let o = std::process::Command::new(&python)
            .args(["-c", &format!("import sys, pyarrow as pa\nfrom deltalake import write_deltalake, DeltaTable\np = sys.argv[1]\n{script}")])
            .arg(&src)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    delta("for i in (1, 2, 3):\n    write_deltalake(p, pa.table({'id': [i]}), mode='append')");
    let (first, _) = run(dir.path());
    assert_eq!(phase_of(&first, "total"), RunPhase::Completed, "{:?}", first.flows);
    assert_eq!(sorted_rows(dir.path(), "SELECT n, s FROM total"), vec![vec!["3".to_string(), "6".to_string()]]);
    let (second, _) = run(dir.path());
    assert_eq!(phase_of(&second, "total"), RunPhase::Idle, "an unchanged table leaves the view idle");

    delta("DeltaTable(p).delete('id = 3')");
    let log = std::fs::read_to_string(src.join("_delta_log/00000000000000000003.json")).unwrap();
    assert!(log.contains("\"remove\"") && !log.contains("\"add\""), "not a remove-only commit: {log}");
    let (third, _) = run(dir.path());
    assert_eq!(phase_of(&third, "total"), RunPhase::Completed, "a remove-only commit must wake the view");
    assert_eq!(sorted_rows(dir.path(), "SELECT n, s FROM total"), vec![vec!["2".to_string(), "3".to_string()]]);
}

#[test]
fn a_value_that_cannot_be_cast_fails_its_flow_naming_the_dataset_and_its_line() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW ok AS SELECT 'abc' AS s;\nCREATE MATERIALIZED VIEW bad AS\nSELECT CAST(s AS INT) AS n FROM ok;\n",
        ),
    ]);
    let (summary, _) = run(dir.path());
    let bad = summary.flows.iter().find(|f| f.target.ends_with(".bad")).unwrap();
    assert_eq!(bad.phase, RunPhase::Failed, "{:?}", summary.flows);
    let error = bad.error.as_deref().unwrap();
    assert!(error.starts_with("spark_catalog.default.bad (sql/a.sql:2:1): "), "{error}");
    assert!(error.contains("'abc'") && error.contains("INT") && !error.contains("Arrow schema"), "{error}");
}

#[test]
fn spark_literals_have_sparks_types_and_their_suffixes_are_never_taken_for_aliases() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", "CREATE MATERIALIZED VIEW t AS SELECT 1 AS a;")]);
    let typed = query_table(
        dir.path(),
        "SELECT 1 AS i, 1L AS l, 1.50 AS dec, 1.5D AS d, 10BD AS bd, 2S AS s, 3Y AS y, 1.5F AS f, 1e3 AS e",
    )
    .unwrap();
    // Spark 4.1's types of the same literals.
    let spark = ["int", "bigint", "decimal(3,2)", "double", "decimal(2,0)", "smallint", "tinyint", "float", "double"];
    assert_eq!(typed.types, spark);
    // After a space the word is an alias, as on Spark.
    let named = query_table(dir.path(), "SELECT 1.5D, 10BD, 2L, 1.5 d").unwrap();
    assert_eq!(named.names, ["1.5", "10", "2", "d"]);
    assert_eq!(named.rows, [[Some("1.5".to_string()), Some("10".into()), Some("2".into()), Some("1.5".into())]]);
}

/// Spark 4.1's answers (asked of the server): an integer literal met by a DECIMAL in arithmetic is
/// the narrowest DECIMAL holding it, so the result keeps Spark's precision.
#[test]
fn decimal_arithmetic_with_an_integer_literal_has_sparks_type() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", "CREATE MATERIALIZED VIEW t AS SELECT 1 AS a;")]);
    let typed = query_table(
        dir.path(),
        "SELECT CAST(1.50 AS DECIMAL(5,2)) * 2 AS m, CAST(1.50 AS DECIMAL(5,2)) + 100 AS p, \
         7 - CAST(1.5 AS DECIMAL(3,1)) AS s, CAST(1.50 AS DECIMAL(5,2)) / 4 AS d, CAST(1.50 AS DECIMAL(5,2)) % 7 AS r",
    )
    .unwrap();
    assert_eq!(typed.types, ["decimal(7,2)", "decimal(6,2)", "decimal(4,1)", "decimal(9,6)", "decimal(3,2)"]);
    let row = ["3.00", "101.50", "5.5", "0.375000", "1.50"].map(|v| Some(v.to_string()));
    assert_eq!(typed.rows, [row]);
}

/// `EXCEPT ALL` and `INTERSECT ALL` count duplicate rows as Spark does (Spark 4.1.4:
/// `{1,2,2,3} EXCEPT ALL {2,3,4}` is {1,2}, `INTERSECT ALL` {2,3}; DataFusion's own plan answers
/// {1} and {2,2,3}), in the table a pipeline writes.
#[test]
fn except_all_and_intersect_all_write_sparks_counts() {
    for (op, expected) in [("EXCEPT ALL", ["1", "2"]), ("INTERSECT ALL", ["2", "3"])] {
        let dir = project(&[
            ("spark-pipeline.yml", SPEC),
            (
                "sql/a.sql",
                &format!(
                    "CREATE MATERIALIZED VIEW t AS\nSELECT * FROM VALUES (1), (2), (2), (3) AS a(k)\n{op} SELECT * FROM VALUES (2), (3), (4) AS b(k);"
                ),
            ),
        ]);
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{op}: {:?}", s.flows);
        assert_eq!(sorted_rows(dir.path(), "SELECT k FROM t"), expected.map(|k| vec![k.to_string()]), "{op}");
    }
}

/// Filters over a stored table answer as Spark's do where the table's file statistics cannot
/// tell: a NaN is greater than every number (a file's statistics leave it out of their least
/// and greatest values, so `x > 1` must not skip a file whose greatest number is 0.5), and a
/// filter folded to a constant in one branch of a union (`flag = false` where the branch's
/// `flag` is NULL) is applied, not taken as applied by the scan. (Spark 4.1.4: ids 1 and 3, 1
/// and 3, and 9.)
#[test]
fn filters_over_stored_tables_keep_nan_rows_and_apply_constant_filters() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW t AS SELECT * FROM VALUES (1, CAST('NaN' AS DOUBLE)), (2, 0.5D), (3, -CAST('NaN' AS DOUBLE)) AS v(id, x);",
        ),
    ]);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let ids = |ids: &[&str]| ids.iter().map(|i| vec![i.to_string()]).collect::<Vec<_>>();
    assert_eq!(sorted_rows(dir.path(), "SELECT id FROM t WHERE x > 1"), ids(&["1", "3"]));
    assert_eq!(sorted_rows(dir.path(), "SELECT id FROM t WHERE NOT (x BETWEEN 0 AND 1)"), ids(&["1", "3"]));
    assert_eq!(
        sorted_rows(
            dir.path(),
            "SELECT id FROM (SELECT id, CAST(NULL AS BOOLEAN) AS flag FROM t UNION ALL SELECT 9, false) AS u \
             WHERE flag = false"
        ),
        ids(&["9"])
    );
}

/// A filter on one of two columns of one name stays on its own side of a join over stored
/// tables: `l.v IS NULL` above a RIGHT JOIN of a table with itself keeps the right rows with no
/// match (DataFusion 55's physical filter pushdown found the column by its name and pruned the
/// other side's scan by `v IS NULL`: no rows). Beside it, a `LIMIT` over an ordered self-join,
/// whose TopK dynamic filter goes through the same pushdown, now skipped. (Spark 4.1.4: (NULL,
/// 10), (NULL, 100); (7, 7), (10, 100).)
#[test]
fn filters_on_one_of_two_columns_of_one_name_stay_on_their_side() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW t AS SELECT * FROM VALUES (1, 10, 5), (2, 100, 1), (3, 7, 3) AS v(id, v, w);",
        ),
    ]);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let rows =
        |rows: &[&[&str]]| rows.iter().map(|r| r.iter().map(|v| v.to_string()).collect::<Vec<_>>()).collect::<Vec<_>>();
    assert_eq!(
        sorted_rows(
            dir.path(),
            "SELECT l.v AS v_l, r.v AS v_r FROM t AS l RIGHT JOIN t AS r ON l.w = r.id AND l.id = r.id WHERE l.v IS NULL"
        ),
        rows(&[&["", "10"], &["", "100"]])
    );
    assert_eq!(
        sorted_rows(dir.path(), "SELECT a.v, b.v FROM t AS a JOIN t AS b ON a.id = b.w ORDER BY b.v LIMIT 2"),
        rows(&[&["10", "100"], &["7", "7"]])
    );
}

/// Spark's `dayofweek` counts 1 = Sunday … 7 = Saturday and `weekday` 0 = Monday … 6 = Sunday,
/// from a DATE, a TIMESTAMP or a string alike. (The week of 2024-01-07, a Sunday.)
#[test]
fn day_of_week_functions_count_as_sparks_do() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", "CREATE MATERIALIZED VIEW t AS SELECT 1 AS a;")]);
    let typed = query_table(
        dir.path(),
        "SELECT dayofweek(d) AS dow, weekday(d) AS wd, dayofweek(CAST(d AS TIMESTAMP)) AS ts_dow, \
         dayofweek(CAST(d AS STRING)) AS s_dow, weekday(CAST(d AS STRING)) AS s_wd \
         FROM (SELECT date_add(DATE'2024-01-07', CAST(n AS INT)) AS d FROM VALUES (0), (1), (2), (3), (4), (5), (6) AS v(n)) ORDER BY d",
    )
    .unwrap();
    let got: Vec<Vec<String>> =
        typed.rows.iter().map(|r| r.iter().map(|v| v.clone().unwrap_or_default()).collect()).collect();
    let want: Vec<Vec<String>> = (0..7)
        .map(|n: i32| {
            let (dow, wd) = ((n + 1).to_string(), ((n + 6) % 7).to_string());
            vec![dow.clone(), wd.clone(), dow.clone(), dow, wd]
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn generators_and_lambdas_out_of_place_are_refused_at_their_line() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW src AS SELECT 1 AS id, array(1, 2) AS xs, array(3) AS ys;\n\
             CREATE MATERIALIZED VIEW nested AS SELECT explode(xs) + 1 AS v FROM src;\n\
             CREATE MATERIALIZED VIEW in_where AS SELECT id FROM src WHERE explode(xs) > 1;\n\
             CREATE MATERIALIZED VIEW two AS SELECT explode(xs), explode(ys) FROM src;\n\
             CREATE MATERIALIZED VIEW joined AS SELECT * FROM src a JOIN src b ON a.id = b.id LATERAL VIEW explode(a.xs) v AS x;\n\
             CREATE MATERIALIZED VIEW misnamed AS SELECT * FROM src LATERAL VIEW posexplode(xs) v AS only_one;\n\
             CREATE MATERIALIZED VIEW dup_keys AS SELECT transform_keys(map('a', 1, 'b', 2), (k, v) -> 'same') AS m;\n\
             CREATE MATERIALIZED VIEW wide_merge AS SELECT aggregate(xs, 0, (acc, x) -> acc + x * 1.5) AS s FROM src;\n\
             CREATE MATERIALIZED VIEW fine AS SELECT id, x, exists(xs, e -> e = x + 1) AS found \
             FROM src LATERAL VIEW explode(xs) v AS x WHERE EXISTS (SELECT 1 FROM src s WHERE s.id = id);",
        ),
    ]);
    let (summary, _) = run(dir.path());
    let error = |name: &str| {
        summary.flows.iter().find(|f| f.target.ends_with(name)).and_then(|f| f.error.clone()).unwrap_or_default()
    };
    for (name, line, says) in [
        ("nested", 2, "must be a whole item of a SELECT list"),
        ("in_where", 3, "must be a whole item of a SELECT list"),
        ("two", 4, "one generator"),
        ("joined", 5, "LATERAL VIEW over a join runs on the Spark backend"),
        ("misnamed", 6, "makes 2 columns, but the view names 1"),
        ("dup_keys", 7, "duplicate map key"),
        ("wide_merge", 8, "cast the start value"),
    ] {
        let e = error(&format!(".{name}"));
        assert!(e.contains(&format!("sql/a.sql:{line}:")) && e.contains(says), "{name}: {e}");
    }
    // `exists(array, lambda)` is the function (its lambda reads the view's column), and
    // `EXISTS (SELECT …)` still the subquery.
    assert_eq!(
        sorted_rows(dir.path(), "SELECT id, x, found FROM fine"),
        vec![vec!["1", "1", "true"], vec!["1", "2", "false"]]
            .into_iter()
            .map(|r| r.into_iter().map(String::from).collect::<Vec<_>>())
            .collect::<Vec<_>>()
    );
}

#[test]
fn column_names_resolve_ignoring_case_as_on_spark() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("in/1.json", "{\"customerID\": 7, \"Amount\": 2.5, \"nested\": {\"Field\": \"x\"}}\n"),
        (
            "sql/a.sql",
            "CREATE MATERIALIZED VIEW raw AS SELECT * FROM read_files('in', format => 'json');\n\
             CREATE MATERIALIZED VIEW picked AS SELECT customerid, r.CUSTOMERID + 1 AS next_id, amount \
             FROM raw r WHERE CustomerId = 7 ORDER BY customerID;\n\
             CREATE MATERIALIZED VIEW ambiguous AS SELECT ab FROM (SELECT x AS `Ab`, y AS `aB` FROM VALUES (1, 2) t(x, y));\n\
             CREATE MATERIALIZED VIEW missing AS SELECT customer_id FROM raw;",
        ),
    ]);
    let (summary, _) = run(dir.path());
    let error = |name: &str| {
        summary.flows.iter().find(|f| f.target.ends_with(name)).and_then(|f| f.error.clone()).unwrap_or_default()
    };
    assert_eq!(phase_of(&summary, "picked"), RunPhase::Completed, "{}", error(".picked"));
    // A column read by itself is named as the query writes it, as Spark 4.1.4 names it
    // (`SELECT customerid, amount FROM json.`…`` of `customerID`, `Amount` gives `customerid`,
    // `amount`).
    let (names, values) = rows(&query(dir.path(), "SELECT * FROM picked").unwrap());
    assert_eq!(names, vec!["customerid".to_string(), "next_id".into(), "amount".into()]);
    assert_eq!(values, vec![vec!["7".to_string(), "8".into(), "2.5".into()]]);
    // A name no column has, whatever its case, is still an error at its line.
    let e = error(".missing");
    assert!(e.contains("sql/a.sql:4:") && e.contains("customer_id"), "{e}");
    // A name two columns have, ignoring case, is ambiguous: an error, as on Spark.
    let e = error(".ambiguous");
    assert!(e.contains("sql/a.sql:3:") && e.contains("ab"), "{e}");
}

/// Spark's ANSI mode both ways (values read off Spark 4.1.4 in both modes): on by default, an
/// invalid cast or a zero divisor fails the flow at its line; with `spark.sql.ansi.enabled`
/// false, and by default in a DLT project (Databricks' default), they give NULL, and overflow
/// wraps.
#[test]
fn ansi_mode_is_honoured_both_ways_and_off_by_default_for_dlt_projects() {
    use knut_thund::backend::ExecBackend;
    let sql = "CREATE MATERIALIZED VIEW good AS SELECT CAST(s AS INT) AS n FROM VALUES (' 12 '), ('7') AS t(s);\n\
               CREATE MATERIALIZED VIEW lenient AS SELECT CAST(s AS INT) AS n, 10 / d AS q, x + 1 AS w, \
               CAST(s AS DATE) AS day FROM VALUES ('x', 0, 2147483647), ('2024-1', 4, 1) AS t(s, d, x);\n";
    let values = |dir: &Path| rows(&query(dir, "SELECT * FROM lenient ORDER BY w").unwrap()).1;
    let non_ansi = vec![
        vec!["".to_string(), "".into(), "-2147483648".into(), "".into()],
        vec!["".to_string(), "2.5".into(), "2".into(), "2024-01-01".into()],
    ];

    // An SDP project is in Spark 4's ANSI mode: the invalid cast fails its flow, at its line.
    let sdp = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let (summary, _) = run(sdp.path());
    assert_eq!(phase_of(&summary, "good"), RunPhase::Completed);
    assert_eq!(rows(&query(sdp.path(), "SELECT n FROM good ORDER BY n").unwrap()).1, vec![vec!["7"], vec!["12"]]);
    assert_eq!(phase_of(&summary, "lenient"), RunPhase::Failed);
    let e = summary.flows.iter().find(|f| f.target.ends_with(".lenient")).and_then(|f| f.error.clone()).unwrap();
    assert!(e.contains("CAST_INVALID_INPUT") && e.contains("'x'") && e.contains("try_cast"), "{e}");

    // Without ANSI mode: NULLs and a wrapped sum, as Spark answers.
    let off = project(&[
        ("spark-pipeline.yml", &format!("{SPEC}configuration:\n  spark.sql.ansi.enabled: \"false\"\n")),
        ("sql/a.sql", sql),
    ]);
    let (summary, _) = run(off.path());
    assert_eq!(phase_of(&summary, "lenient"), RunPhase::Completed);
    assert_eq!(values(off.path()), non_ansi);

    // A DLT project is not in ANSI mode unless its settings say so.
    let dlt = project(&[
        ("settings.json", "{\"name\": \"d\", \"libraries\": [{\"file\": {\"path\": \"sql/a.sql\"}}]}"),
        ("sql/a.sql", sql),
    ]);
    let p = load(&dlt.path().join("settings.json"));
    assert_eq!(p.configuration.get("spark.sql.ansi.enabled").map(String::as_str), Some("false"));
    let (summary, _) = run(&dlt.path().join("settings.json"));
    assert_eq!(phase_of(&summary, "lenient"), RunPhase::Completed);
    assert_eq!(values(&dlt.path().join("settings.json")), non_ansi);

    // A flow's own mode differing from the pipeline's is refused natively, at its line.
    let mixed = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", "SET spark.sql.ansi.enabled = false;\nCREATE MATERIALIZED VIEW m AS SELECT 1 AS x;\n"),
    ]);
    let e = thund_native::NativeBackend::new().check(&load(mixed.path())).unwrap_err().to_string();
    assert!(e.contains("sql/a.sql:2") && e.contains("spark.sql.ansi.enabled"), "{e}");
}

/// `spark.sql.parser.escapedStringLiterals` both ways (values read off Spark 4.1.4 in both
/// modes): by default `'\\abc'` is one backslash and `abc`; set in the spec, a literal is its text
/// as written, in queries and expectations alike. A file's `SET` differing from the spec is
/// refused at its line.
#[test]
fn escaped_string_literals_are_honoured_both_ways() {
    use knut_thund::backend::ExecBackend;
    let sql = r"CREATE MATERIALIZED VIEW lit (CONSTRAINT other EXPECT (s <> '\\abc') ON VIOLATION DROP ROW)
AS SELECT s, regexp_replace('100-200', '(\\d+)', 'n') AS r FROM VALUES ('\\\\abc'), ('\\abc') AS t(s);
";
    let values = |dir: &Path| rows(&query(dir, "SELECT * FROM lit").unwrap()).1;

    let default = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let (summary, _) = run(default.path());
    assert_eq!(phase_of(&summary, "lit"), RunPhase::Completed);
    assert_eq!(values(default.path()), vec![vec![r"\\abc", "n-n"]]);

    // The same text but for the regular expression, written with one backslash.
    let escaped = project(&[
        ("spark-pipeline.yml", &format!("{SPEC}configuration:\n  spark.sql.parser.escapedStringLiterals: \"true\"\n")),
        ("sql/a.sql", &sql.replace(r"(\\d+)", r"(\d+)")),
    ]);
    let (summary, _) = run(escaped.path());
    assert_eq!(phase_of(&summary, "lit"), RunPhase::Completed);
    assert_eq!(values(escaped.path()), vec![vec![r"\\\\abc", "n-n"]]);

    let mixed = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "SET spark.sql.parser.escapedStringLiterals = true;\nCREATE MATERIALIZED VIEW m AS SELECT 1 AS x;\n",
        ),
    ]);
    let e = thund_native::NativeBackend::new().check(&load(mixed.path())).unwrap_err().to_string();
    assert!(e.contains("sql/a.sql:2") && e.contains("escapedStringLiterals"), "{e}");
}

/// A value that fails at run time fails its flow with Spark's error class, the dataset and its
/// file:line, never an Arrow kernel's words; without ANSI mode the same values are Spark's NULLs
/// and wrapped numbers. Every error class and value was read off Spark 4.1.4 in both modes.
#[test]
fn values_failing_at_run_time_name_their_dataset_and_sparks_error() {
    let sql = "CREATE MATERIALIZED VIEW narrowed AS SELECT CAST(x AS TINYINT) AS v FROM VALUES (1000) t(x);\n\
               CREATE MATERIALIZED VIEW too_wide AS SELECT CAST(x AS DECIMAL(3,1)) AS v FROM VALUES (1000.5) t(x);\n\
               CREATE MATERIALIZED VIEW absolute AS SELECT abs(x) AS v FROM VALUES (-2147483648) t(x);\n\
               CREATE MATERIALIZED VIEW malformed AS SELECT CAST(x AS DECIMAL(5,2)) AS v FROM VALUES ('abc') t(x);\n\
               CREATE MATERIALIZED VIEW summed AS SELECT x + 1 AS v FROM VALUES (99999999999999999999999999999999999999) t(x);\n\
               CREATE MATERIALIZED VIEW fitted AS SELECT CAST(d AS DECIMAL(3,2)) AS a, CAST(t AS DECIMAL(3,2)) AS b, \
               CAST(e AS DECIMAL(38,0)) AS c FROM VALUES (1.005D, ' 1.255 ', 1e30D) t(d, t, e);\n";
    let ansi = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let (summary, _) = run(ansi.path());
    let error = |name: &str| {
        summary.flows.iter().find(|f| f.target.ends_with(&format!(".{name}"))).and_then(|f| f.error.clone())
    };
    for (line, name, class) in [
        (1, "narrowed", "[CAST_OVERFLOW]"),
        (2, "too_wide", "[NUMERIC_VALUE_OUT_OF_RANGE]"),
        (3, "absolute", "[ARITHMETIC_OVERFLOW]"),
        (4, "malformed", "[CAST_INVALID_INPUT]"),
        (5, "summed", "[NUMERIC_VALUE_OUT_OF_RANGE]"),
    ] {
        let e = error(name).unwrap_or_else(|| panic!("{name} did not fail"));
        assert!(e.contains(&format!(".{name} (sql/a.sql:{line}:")) && e.contains(class), "{e}");
        for arrow_words in ["Arrow", "Decimal128", "Int32", "Int8", "Compute error"] {
            assert!(!e.contains(arrow_words), "{e}");
        }
    }
    let fitted = rows(&query(ansi.path(), "SELECT * FROM fitted").unwrap()).1;
    assert_eq!(fitted, vec![vec!["1.01".to_string(), "1.26".into(), "1000000000000000000000000000000".into()]]);

    let off = project(&[
        ("spark-pipeline.yml", &format!("{SPEC}configuration:\n  spark.sql.ansi.enabled: \"false\"\n")),
        ("sql/a.sql", sql),
    ]);
    let (summary, _) = run(off.path());
    for (name, value) in
        [("narrowed", "-24"), ("too_wide", ""), ("absolute", "-2147483648"), ("malformed", ""), ("summed", "")]
    {
        assert_eq!(phase_of(&summary, name), RunPhase::Completed, "{name}");
        assert_eq!(rows(&query(off.path(), &format!("SELECT v FROM {name}")).unwrap()).1, vec![vec![value]], "{name}");
    }
}

/// A VARIANT is read and written in queries natively, but a dataset holding one is refused
/// before anything is written (Spark stores it with Delta's `variantType` feature, which the
/// native writer does not): the error names the column and the way out. A dataset that keeps
/// the JSON text instead runs, and reads back as Spark's `to_json` writes it.
#[test]
fn a_variant_column_is_refused_by_the_native_writer_and_its_json_text_is_stored() {
    let sql = "CREATE MATERIALIZED VIEW raw AS SELECT parse_json(j) AS v FROM VALUES ('{\"a\":1}') t(j);\n\
               CREATE MATERIALIZED VIEW texts AS SELECT to_json(parse_json(j)) AS v, \
               variant_get(parse_json(j), '$.a', 'int') AS a FROM VALUES ('{\"b\":[1e3, 0.50],\"a\":7}') t(j);\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let (summary, _) = run(dir.path());
    let raw = summary.flows.iter().find(|f| f.target.ends_with(".raw")).and_then(|f| f.error.clone());
    let raw = raw.expect("a VARIANT column was written");
    assert!(raw.contains("`v`") && raw.contains("VARIANT") && raw.contains("to_json"), "{raw}");
    assert!(!dir.path().join("spark-warehouse/raw").exists() || query(dir.path(), "SELECT * FROM raw").is_err());
    assert_eq!(phase_of(&summary, "texts"), RunPhase::Completed);
    let texts = rows(&query(dir.path(), "SELECT v, a FROM texts").unwrap()).1;
    assert_eq!(texts, vec![vec![r#"{"a":7,"b":[1000.0,0.5]}"#.to_string(), "7".into()]]);
}
