//! Streaming tables across runs: only new input is processed, nothing is lost or duplicated.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;

use common::*;
use knut_thund::backend::{ExecBackend, RunOptions, RunPhase};
use knut_thund::plan::Selection;
use thund_native::NativeBackend;

const SPEC: &str = "name: s\nlibraries:\n  - glob:\n      include: sql/**\n";

fn write_batch(dir: &Path, folder: &str, ids: std::ops::Range<u32>) {
    let path = dir.join("in").join(folder);
    std::fs::create_dir_all(&path).unwrap();
    let lines: String = ids.map(|i| format!("{{\"id\": {i}, \"v\": {}}}\n", i * 10)).collect();
    std::fs::write(path.join(format!("part-{}.json", lines.len())), lines).unwrap();
}

fn ids(dir: &Path, sql: &str) -> Vec<i64> {
    let mut v: Vec<i64> = rows(&query(dir, sql).unwrap_or_else(|e| panic!("{sql}: {e}")))
        .1
        .iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    v.sort();
    v
}

fn phase(summary: &knut_thund::backend::RunSummary, flow: &str) -> RunPhase {
    summary.flows.iter().find(|f| f.flow.ends_with(&format!(".{flow}"))).unwrap_or_else(|| panic!("{flow}")).phase
}

const CHAIN: &str = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
     CREATE STREAMING TABLE silver AS SELECT id, v * 2 AS v2 FROM STREAM(bronze) WHERE id % 2 = 0;\n\
     CREATE MATERIALIZED VIEW totals AS SELECT count(*) AS n, sum(v2) AS s FROM silver;";

#[test]
fn each_run_processes_only_new_files_and_downstream_sees_everything() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", CHAIN)]);
    write_batch(dir.path(), "day1", 0..10);
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    assert_eq!(s1.flows.iter().find(|f| f.flow.ends_with(".bronze")).unwrap().rows_written, 10);
    assert_eq!(ids(dir.path(), "SELECT id FROM silver"), vec![0, 2, 4, 6, 8]);

    // No new input: streaming flows are IDLE and write nothing.
    let (s2, _) = run(dir.path());
    assert_eq!(phase(&s2, "bronze"), RunPhase::Idle);
    assert_eq!(phase(&s2, "silver"), RunPhase::Idle);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze").len(), 10);

    // New files, one in a new sub-folder.
    write_batch(dir.path(), "day2", 10..15);
    write_batch(dir.path(), "day2/late", 15..18);
    let (s3, _) = run(dir.path());
    assert!(!s3.failed(), "{:?}", s3.flows);
    assert_eq!(s3.flows.iter().find(|f| f.flow.ends_with(".bronze")).unwrap().rows_written, 8);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), (0..18).collect::<Vec<_>>());
    assert_eq!(ids(dir.path(), "SELECT id FROM silver"), (0..18).filter(|i| i % 2 == 0).collect::<Vec<_>>());
    // 9 even ids, v2 = id * 20.
    let expected_sum: i64 = (0..18).filter(|i| i % 2 == 0).map(|i| i * 20).sum();
    assert_eq!(
        rows(&query(dir.path(), "SELECT n, s FROM totals").unwrap()).1,
        vec![vec!["9".to_string(), expected_sum.to_string()]]
    );
}

#[test]
fn several_append_flows_and_a_once_flow_fill_one_table_without_losing_rows() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("old/history.csv", "id,v\n-1,1\n-2,2\n"),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE a AS SELECT * FROM STREAM read_files('in/a', format => 'json');\n\
             CREATE STREAMING TABLE b AS SELECT * FROM STREAM read_files('in/b', format => 'json');\n\
             CREATE STREAMING TABLE merged;\n\
             CREATE FLOW from_a AS INSERT INTO merged BY NAME SELECT id, v FROM STREAM(a);\n\
             CREATE FLOW from_b AS INSERT INTO merged BY NAME SELECT v, id FROM STREAM(b);\n\
             CREATE FLOW backfill AS INSERT INTO ONCE merged BY NAME SELECT CAST(id AS BIGINT) AS id, CAST(v AS BIGINT) AS v FROM read_files('old/history.csv', format => 'csv', header => true);",
        ),
    ]);
    write_batch(dir.path(), "a", 0..5);
    write_batch(dir.path(), "b", 100..103);
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    let mut want: Vec<i64> = (0..5).chain(100..103).chain([-1, -2]).collect();
    want.sort();
    assert_eq!(ids(dir.path(), "SELECT id FROM merged"), want);

    write_batch(dir.path(), "a", 5..7);
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    assert_eq!(phase(&s2, "backfill"), RunPhase::Idle, "a once flow runs once");
    assert_eq!(phase(&s2, "from_b"), RunPhase::Idle);
    want.extend([5, 6]);
    want.sort();
    assert_eq!(ids(dir.path(), "SELECT id FROM merged"), want);
}

#[test]
fn full_refresh_reprocesses_everything_once_and_reset_protection_holds() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", CHAIN)]);
    write_batch(dir.path(), "d1", 0..4);
    assert!(!run(dir.path()).0.failed());
    write_batch(dir.path(), "d2", 4..6);
    assert!(!run(dir.path()).0.failed());

    let full = |names: &[&str]| RunOptions {
        selection: Selection { full_refresh: names.iter().map(|s| s.to_string()).collect(), ..Default::default() },
        ..Default::default()
    };
    let (s, _) = run_with(dir.path(), full(&["bronze", "silver"]));
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), (0..6).collect::<Vec<_>>());
    assert_eq!(ids(dir.path(), "SELECT id FROM silver"), vec![0, 2, 4]);

    // Refreshing only the upstream table rewrites silver's source: silver must say so.
    let (s, _) = run_with(dir.path(), full(&["bronze"]));
    assert!(!s.failed(), "{:?}", s.flows);
    let (s, _) = run(dir.path());
    let err = s.flows.iter().find(|f| f.flow.ends_with(".silver")).and_then(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("was rewritten") && err.contains("full-refresh"), "{err}");

    std::fs::write(
        dir.path().join("sql/a.sql"),
        CHAIN.replace(
            "CREATE STREAMING TABLE bronze AS",
            "CREATE STREAMING TABLE bronze TBLPROPERTIES ('pipelines.reset.allowed' = 'false') AS",
        ),
    )
    .unwrap();
    let (s, _) = run_with(dir.path(), full(&["bronze"]));
    let err = s.flows.iter().find(|f| f.flow.ends_with(".bronze")).and_then(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("pipelines.reset.allowed"), "{err}");
    assert_eq!(
        ids(dir.path(), "SELECT id FROM bronze"),
        (0..6).collect::<Vec<_>>(),
        "a protected table keeps its data"
    );
}

#[test]
fn a_new_column_in_later_files_is_a_clear_error() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", CHAIN)]);
    write_batch(dir.path(), "d1", 0..3);
    assert!(!run(dir.path()).0.failed());
    std::fs::write(dir.path().join("in/d1/extra.json"), "{\"id\": 9, \"v\": 1, \"surprise\": true}\n").unwrap();
    let (s, _) = run(dir.path());
    let err = s.flows.iter().find(|f| f.flow.ends_with(".bronze")).and_then(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("new column(s) surprise") && err.contains("sql/a.sql:1:"), "{err}");
    assert_eq!(phase(&s, "silver"), RunPhase::Skipped);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), vec![0, 1, 2]);
}

#[test]
fn a_batch_query_into_a_streaming_table_is_refused_clearly() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", "CREATE MATERIALIZED VIEW m AS SELECT 1 AS x;\nCREATE STREAMING TABLE s AS SELECT x FROM m;"),
    ]);
    let (s, _) = run(dir.path());
    let err = s.flows.iter().find(|f| f.flow.ends_with(".s")).and_then(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("reads no STREAM source") && err.contains("INSERT INTO ONCE"), "{err}");
}

#[test]
fn sinks_receive_each_new_row_once_in_their_format() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE SINK out_parquet USING parquet OPTIONS (path 'out/p');\n\
             CREATE SINK out_csv USING csv OPTIONS (path 'out/c');\n\
             CREATE SINK out_delta USING delta OPTIONS (path 'out/d');\n\
             CREATE FLOW to_parquet AS INSERT INTO out_parquet SELECT id, v FROM STREAM(bronze);\n\
             CREATE FLOW to_csv AS INSERT INTO out_csv SELECT id, v FROM STREAM(bronze) WHERE id >= 2;\n\
             CREATE FLOW to_delta AS INSERT INTO out_delta SELECT id FROM STREAM(bronze);",
        ),
    ]);
    write_batch(dir.path(), "d1", 0..4);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    write_batch(dir.path(), "d2", 4..6);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let (s, _) = run(dir.path());
    assert!(s.flows.iter().filter(|f| f.flow.contains(".to_")).all(|f| f.phase == RunPhase::Idle), "{:?}", s.flows);

    // Read the sinks back as plain files, the way any other tool would.
    let q = |sql: &str| {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let ctx = datafusion::prelude::SessionContext::new();
            let root = dir.path().join("out");
            ctx.register_parquet("p", format!("{}/p/", root.display()), Default::default()).await.unwrap();
            let csv = datafusion::prelude::CsvReadOptions::new().has_header(true);
            ctx.register_csv("c", format!("{}/c/", root.display()), csv).await.unwrap();
            let b = ctx.sql(sql).await.unwrap().collect().await.unwrap();
            let mut v: Vec<i64> = rows(&b).1.iter().map(|r| r[0].parse().unwrap()).collect();
            v.sort();
            v
        })
    };
    assert_eq!(q("SELECT id FROM p"), (0..6).collect::<Vec<_>>());
    assert_eq!(q("SELECT id FROM c"), (2..6).collect::<Vec<_>>());
    let files: Vec<String> = std::fs::read_dir(dir.path().join("out/p"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(files.iter().any(|f| f.starts_with("_thund_commits")));
    let rt = tokio::runtime::Runtime::new().unwrap();
    let n = rt.block_on(async {
        let t = deltalake::open_table(url::Url::from_directory_path(dir.path().join("out/d")).unwrap()).await.unwrap();
        let ctx = datafusion::prelude::SessionContext::new();
        t.update_datafusion_session(&ctx.state()).unwrap();
        ctx.register_table("d", t.table_provider().await.unwrap()).unwrap();
        rows(&ctx.sql("SELECT count(*), count(DISTINCT id) FROM d").await.unwrap().collect().await.unwrap()).1
    });
    assert_eq!(n, vec![vec!["6".to_string(), "6".to_string()]]);
}

#[test]
fn a_sink_at_an_object_store_url_is_refused_at_its_line_not_written_to_a_local_folder() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE SINK remote USING parquet OPTIONS (path 's3://bucket/out');\n\
             CREATE FLOW to_remote AS INSERT INTO remote SELECT id FROM STREAM(bronze);",
        ),
    ]);
    write_batch(dir.path(), "d1", 0..2);
    let (s, _) = run(dir.path());
    assert!(s.failed(), "{:?}", s.flows);
    let err = s.flows.iter().find_map(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("sql/a.sql:2:1") && err.contains("s3://bucket/out") && err.contains("local folders"), "{err}");
    assert!(!dir.path().join("s3:").exists(), "nothing written to a folder named after the scheme");
}

#[test]
fn a_dry_run_leaves_a_live_runs_intent_and_staged_sink_files_alone() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE SINK out USING parquet OPTIONS (path 'out');\n\
             CREATE FLOW to_out AS INSERT INTO out SELECT id FROM STREAM(bronze);",
        ),
    ]);
    write_batch(dir.path(), "d1", 0..3);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    // What a live run in the middle of its next batch has on storage: an intent beside each
    // checkpoint, and the sink's staged files.
    let mut intents = Vec::new();
    let mut folders = vec![dir.path().join(".thund/checkpoints")];
    while let Some(d) = folders.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                folders.push(path);
            } else if path.file_name().is_some_and(|n| n == "state.json") {
                let mut state: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
                let next = state["batch"].as_i64().unwrap() + 1;
                state["batch"] = serde_json::json!(next);
                let intent = path.with_file_name("pending.json");
                std::fs::write(&intent, state.to_string()).unwrap();
                intents.push((intent, next));
            }
        }
    }
    assert_eq!(intents.len(), 2, "one per streaming flow");
    let sink_batch = intents.iter().find(|(p, _)| p.to_string_lossy().contains("to_out")).unwrap().1;
    let staged = dir.path().join(format!("out/_thund_staging/spark_catalog.2Edefault.2Eto_out-{sink_batch}"));
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::write(staged.join("part-0.parquet"), b"being written").unwrap();

    let (s, _) = run_with(dir.path(), RunOptions { dry: true, ..Default::default() });
    assert!(!s.failed(), "{:?}", s.flows);
    for (intent, _) in &intents {
        assert!(intent.is_file(), "a dry run deleted {}", intent.display());
    }
    assert!(staged.join("part-0.parquet").is_file(), "a dry run deleted a live run's staged file");
}

/// Before the first run no table exists yet: a dry run still plans a view over a streaming
/// table (against an empty table of its schema), and writes nothing.
#[test]
fn a_dry_run_before_the_first_run_plans_what_reads_a_streaming_table() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(v) AS s FROM bronze;\n\
             CREATE MATERIALIZED VIEW broken AS SELECT no_such_column FROM bronze;",
        ),
    ]);
    write_batch(dir.path(), "d1", 0..3);
    let (s, _) = run_with(dir.path(), RunOptions { dry: true, ..Default::default() });
    let state = |name: &str| s.flows.iter().find(|f| f.flow.ends_with(name)).map(|f| (f.phase, f.error.clone()));
    assert_eq!(state(".total").map(|s| s.0), Some(RunPhase::Completed), "{:?}", s.flows);
    // Planned for real: a wrong column is still found.
    let (broken, error) = state(".broken").unwrap();
    assert_eq!(broken, RunPhase::Failed, "{:?}", s.flows);
    assert!(error.unwrap_or_default().contains("no_such_column"), "{:?}", s.flows);
    assert!(!dir.path().join(".thund").exists(), "a dry run wrote {}", dir.path().join(".thund").display());
}

#[test]
fn a_file_written_under_a_temporary_name_and_renamed_is_read_whole_never_half() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", CHAIN)]);
    write_batch(dir.path(), "d1", 0..2);
    // A writer half way through a file, under a temporary name (as Spark, Hadoop and most
    // copy tools write): its complete lines so far, and a cut one.
    let part = dir.path().join("in/d2/_part-0.json.inprogress");
    std::fs::create_dir_all(part.parent().unwrap()).unwrap();
    let whole: String = (10..20).map(|i| format!("{{\"id\": {i}, \"v\": {}}}\n", i * 10)).collect();
    std::fs::write(&part, &whole[..whole.len() / 2]).unwrap();
    let hidden = dir.path().join("in/d2/.part-1.json");
    std::fs::write(&hidden, "{\"id\": 99, \"v\": \"half").unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "the half-written files were not read: {:?}", s.flows);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), vec![0, 1]);
    // Finished and renamed into place: the next batch reads it whole.
    std::fs::write(&part, &whole).unwrap();
    std::fs::rename(&part, dir.path().join("in/d2/part-0.json")).unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let mut want = vec![0, 1];
    want.extend(10..20);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), want);
}

#[test]
fn a_malformed_record_is_a_clear_error_and_nothing_is_committed() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", CHAIN)]);
    write_batch(dir.path(), "d1", 0..3);
    assert!(!run(dir.path()).0.failed());
    std::fs::write(dir.path().join("in/d1/broken.json"), "{\"id\": 7, \"v\": 1}\n{\"id\": 8, \"v\": \n").unwrap();
    let (s, _) = run(dir.path());
    let err = s.flows.iter().find(|f| f.flow.ends_with(".bronze")).and_then(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("sql/a.sql:1:") && err.to_lowercase().contains("json"), "{err}");
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), vec![0, 1, 2], "no partial batch is committed");
    // Once the file is fixed, its rows arrive exactly once.
    std::fs::write(dir.path().join("in/d1/broken.json"), "{\"id\": 7, \"v\": 1}\n{\"id\": 8, \"v\": 2}\n").unwrap();
    assert!(!run(dir.path()).0.failed());
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze"), vec![0, 1, 2, 7, 8]);
}

/// Rows for the incremental view test: key, an integer and a nullable double.
fn write_sensor_file(dir: &Path, index: u32, rows: &mut Vec<(String, i64, Option<f64>)>) {
    let path = dir.join("in");
    std::fs::create_dir_all(&path).unwrap();
    let mut text = String::new();
    for i in 0..20u32 {
        let x = index * 20 + i;
        let k = ["a", "b", "c", "d", "e"][(x * 7 % 5) as usize].to_string();
        let n = (x * 13 % 17) as i64 - 3; // some negative: filtered out by the views
        let v = (!x.is_multiple_of(6)).then(|| (x * 37 % 101) as f64 / 4.0);
        let vs = v.map_or("null".to_string(), |v| v.to_string());
        text.push_str(&format!("{{\"k\": \"{k}\", \"n\": {n}, \"v\": {vs}}}\n"));
        rows.push((k, n, v));
    }
    std::fs::write(path.join(format!("part-{index:03}.json")), text).unwrap();
}

/// `gold` computed by hand from the rows: per key with n >= 0, having more than one row.
fn expected_gold(rows: &[(String, i64, Option<f64>)]) -> Vec<Vec<String>> {
    let mut groups: std::collections::BTreeMap<&str, Vec<(i64, Option<f64>)>> = Default::default();
    for (k, n, v) in rows.iter().filter(|r| r.1 >= 0) {
        groups.entry(k).or_default().push((*n, *v));
    }
    groups
        .into_iter()
        .filter(|(_, g)| g.len() > 1)
        .map(|(k, g)| {
            let vs: Vec<f64> = g.iter().filter_map(|r| r.1).collect();
            let fmt = |x: Option<f64>| x.map_or("".to_string(), |x| format!("{x:.6}"));
            vec![
                k.to_string(),
                g.len().to_string(),
                vs.len().to_string(),
                g.iter().map(|r| r.0).sum::<i64>().to_string(),
                fmt(vs.iter().copied().reduce(f64::min)),
                fmt(vs.iter().copied().reduce(f64::max)),
                fmt((!vs.is_empty()).then(|| vs.iter().sum::<f64>() / vs.len() as f64)),
                if vs.is_empty() { String::new() } else { format!("{:.2}", vs.iter().sum::<f64>()) },
            ]
        })
        .collect()
}

#[test]
fn aggregate_views_over_streaming_tables_merge_only_new_rows_and_equal_a_full_recompute() {
    let sql = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE MATERIALIZED VIEW gold AS\n\
           SELECT k, count(*) AS rows_, count(v) AS with_v, sum(n) AS total, min(v) AS lo, max(v) AS hi, avg(v) AS mean,\n\
                  sum(CAST(v AS DECIMAL(10,2))) AS exact\n\
           FROM (SELECT k, n, v FROM bronze WHERE n >= 0) GROUP BY k HAVING count(*) > 1;\n\
         CREATE MATERIALIZED VIEW top2 AS SELECT k, sum(n) * 2 AS twice FROM bronze GROUP BY k ORDER BY twice DESC, k LIMIT 2;\n\
         CREATE MATERIALIZED VIEW distinct_keys AS SELECT count(DISTINCT k) AS keys FROM bronze;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let gold = |dir: &Path| {
        let q = "SELECT k, rows_, with_v, total, \
                 format_string('%.6f', lo), format_string('%.6f', hi), format_string('%.6f', mean), exact FROM gold ORDER BY k";
        rows(&query(dir, q).unwrap())
            .1
            .into_iter()
            .map(|r| r.into_iter().map(|c| c.replace("NULL", "")).collect())
            .collect::<Vec<Vec<String>>>()
    };
    let top2 = |rows: &[(String, i64, Option<f64>)]| {
        let mut sums: std::collections::BTreeMap<&str, i64> = Default::default();
        for (k, n, _) in rows {
            *sums.entry(k).or_default() += n;
        }
        let mut v: Vec<(i64, &str)> = sums.into_iter().map(|(k, s)| (-(s * 2), k)).collect();
        v.sort();
        v.into_iter().take(2).map(|(s, k)| vec![k.to_string(), (-s).to_string()]).collect::<Vec<_>>()
    };
    let state_record = dir.path().join(".thund/state/spark_catalog/default/gold.json");
    let mut data = Vec::new();
    for i in 0..3 {
        write_sensor_file(dir.path(), i, &mut data);
    }
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(gold(dir.path()), expected_gold(&data));
    assert!(state_record.is_file(), "gold keeps aggregate state");
    let source_version = |p: &Path| -> i64 {
        let r: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
        // (One offset per input, by name; gold reads one.)
        let sources = r["sources"].as_object().unwrap();
        assert_eq!(sources.len(), 1, "{r}");
        sources.values().next().unwrap()["version"].as_i64().unwrap()
    };
    let v1 = source_version(&state_record);

    // Three more runs, each adding a file: the views merge the new rows only, and still equal
    // the rows computed by hand.
    for i in 3..6 {
        write_sensor_file(dir.path(), i, &mut data);
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{:?}", s.flows);
        assert_eq!(gold(dir.path()), expected_gold(&data), "after file {i}");
        assert_eq!(
            rows(&query(dir.path(), "SELECT k, twice FROM top2 ORDER BY twice DESC, k").unwrap()).1,
            top2(&data)
        );
        assert_eq!(rows(&query(dir.path(), "SELECT keys FROM distinct_keys").unwrap()).1, vec![vec!["5"]]);
    }
    assert_eq!(source_version(&state_record), v1 + 3, "the state advanced with each source commit");

    // A full refresh of the source rewrites it: the view rebuilds its state from all rows.
    let (s, _) = run_with(
        dir.path(),
        RunOptions {
            selection: Selection { full_refresh: vec!["bronze".into()], ..Default::default() },
            ..Default::default()
        },
    );
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(gold(dir.path()), expected_gold(&data));

    // A lost record (or state and view out of step) also means a rebuild, never a wrong merge.
    std::fs::remove_file(&state_record).unwrap();
    write_sensor_file(dir.path(), 6, &mut data);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(gold(dir.path()), expected_gold(&data));
    assert_eq!(rows(&query(dir.path(), "SELECT k, twice FROM top2 ORDER BY twice DESC, k").unwrap()).1, top2(&data));
}

#[test]
fn with_a_rescued_data_column_records_that_do_not_fit_are_kept_aside() {
    let sql = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json', \
               rescuedDataColumn => '_rescued_data');\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    std::fs::write(dir.path().join("in/1.json"), "{\"id\": 1, \"v\": 1.5}\nnot json\n").unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let q = "SELECT id, v, _rescued_data FROM bronze ORDER BY id NULLS LAST";
    let got = rows(&query(dir.path(), q).unwrap()).1;
    assert_eq!(got[0], vec!["1", "1.5", ""]);
    assert_eq!(got[1][..2], ["", ""]);
    let corrupt: serde_json::Value = serde_json::from_str(&got[1][2]).unwrap();
    assert_eq!(corrupt["_corrupt_record"], "not json");
    assert!(corrupt["_file_path"].as_str().unwrap().ends_with("in/1.json"), "{corrupt}");

    // Later files, against the schema fixed on the first batch: a value of the wrong type and a
    // field the schema lacks are rescued, and the stream goes on.
    std::fs::write(
        dir.path().join("in/2.json"),
        "{\"id\": 2, \"v\": \"high\"}\n{\"id\": 3, \"v\": 2.0, \"extra\": true}\n",
    )
    .unwrap();
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let got = rows(&query(dir.path(), "SELECT id, v, _rescued_data FROM bronze WHERE id > 1 ORDER BY id").unwrap()).1;
    assert_eq!(got[0][..2], ["2", ""]);
    let rescued: serde_json::Value = serde_json::from_str(&got[0][2]).unwrap();
    assert_eq!(rescued["v"], "high");
    assert!(rescued["_file_path"].as_str().unwrap().ends_with("in/2.json"), "{rescued}");
    assert_eq!(got[1][..2], ["3", "2.0"]);
    let rescued: serde_json::Value = serde_json::from_str(&got[1][2]).unwrap();
    assert_eq!(rescued["extra"], true);
    assert_eq!(ids(dir.path(), "SELECT id FROM bronze WHERE id IS NOT NULL"), vec![1, 2, 3]);

    // Without the option, the same kind of record is a clear error (see the test above).
}

/// A batch that failed after recording its input is redone over exactly that input by the next
/// run — which then reads what arrived since, in the same run: one run after a crash leaves the
/// table as up to date as any run does.
#[test]
fn a_run_after_a_failed_batch_redoes_it_and_then_reads_what_came_since() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", CHAIN)]);
    write_batch(dir.path(), "b0", 0..10);
    assert!(!run(dir.path()).0.failed());
    write_batch(dir.path(), "b1", 10..20);
    std::env::set_var("THUND_FAILPOINT", "stream-after-input@silver");
    let (s, _) = run(dir.path());
    std::env::remove_var("THUND_FAILPOINT");
    assert_eq!(phase(&s, "silver"), RunPhase::Failed, "{:?}", s.flows);
    write_batch(dir.path(), "b2", 20..30);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let even: Vec<i64> = (0..30).filter(|i| i % 2 == 0).collect();
    assert_eq!(ids(dir.path(), "SELECT id FROM silver"), even, "one run after the failure brings silver up to date");
    assert_eq!(ids(dir.path(), "SELECT n FROM totals"), [15]);
    let written = s.flows.iter().find(|f| f.flow.ends_with(".silver")).map(|f| f.rows_written);
    assert_eq!(written, Some(10), "the redone batch's 5 rows and the new batch's 5: {:?}", s.flows);
}

#[test]
fn a_streaming_view_is_streamed_through_each_reader_with_offsets_of_its_own() {
    // `sv` filters and projects `bronze`'s new rows and joins a table; two streaming tables read
    // it, one of them also reading `bronze` directly: every source keeps its own offset.
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("dims.csv", "id,label\n0,zero\n2,two\n4,four\n12,twelve\n"),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE MATERIALIZED VIEW dims AS SELECT * FROM read_files('dims.csv', format => 'csv');\n\
             CREATE TEMPORARY STREAMING LIVE VIEW sv AS SELECT b.id, b.v * 2 AS v2, d.label\n\
               FROM STREAM(LIVE.bronze) b LEFT JOIN LIVE.dims d ON b.id = d.id WHERE b.id % 2 = 0;\n\
             CREATE STREAMING LIVE VIEW sv_big AS SELECT id, v2 FROM STREAM(sv) WHERE v2 >= 40;\n\
             CREATE STREAMING TABLE evens AS SELECT * FROM STREAM(sv);\n\
             CREATE STREAMING TABLE both_ways;\n\
             CREATE FLOW via_view AS INSERT INTO both_ways BY NAME SELECT id, 'view' AS way FROM STREAM(sv_big);\n\
             CREATE FLOW direct AS INSERT INTO both_ways BY NAME SELECT id, 'direct' AS way FROM STREAM(bronze);",
        ),
    ]);
    write_batch(dir.path(), "day1", 0..6);
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    assert_eq!(ids(dir.path(), "SELECT id FROM evens"), vec![0, 2, 4]);
    let labels = rows(&query(dir.path(), "SELECT id, v2, label FROM evens ORDER BY id").unwrap()).1;
    assert_eq!(labels[1], ["2", "40", "two"]);
    assert_eq!(ids(dir.path(), "SELECT id FROM both_ways WHERE way = 'view'"), vec![2, 4]);

    // Nothing new: every reader of the view is IDLE.
    let (s2, _) = run(dir.path());
    assert_eq!(phase(&s2, "evens"), RunPhase::Idle);
    assert_eq!(phase(&s2, "via_view"), RunPhase::Idle);

    write_batch(dir.path(), "day2", 10..14);
    let (s3, _) = run(dir.path());
    assert!(!s3.failed(), "{:?}", s3.flows);
    assert_eq!(ids(dir.path(), "SELECT id FROM evens"), vec![0, 2, 4, 10, 12]);
    assert_eq!(
        rows(&query(dir.path(), "SELECT label FROM evens WHERE id = 12").unwrap()).1,
        vec![vec!["twelve".to_string()]]
    );
    assert_eq!(ids(dir.path(), "SELECT id FROM both_ways WHERE way = 'view'"), vec![2, 4, 10, 12]);
    assert_eq!(
        ids(dir.path(), "SELECT id FROM both_ways WHERE way = 'direct'"),
        vec![0, 1, 2, 3, 4, 5, 10, 11, 12, 13]
    );
}

#[test]
fn a_streaming_view_that_keeps_state_is_refused_natively_at_its_line() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE TEMPORARY VIEW counted AS SELECT id, count(*) AS n FROM STREAM(bronze) GROUP BY id;\n\
             CREATE STREAMING TABLE t AS SELECT * FROM STREAM(counted);",
        ),
    ]);
    let err = NativeBackend::new().check(&load(dir.path())).unwrap_err().to_string();
    assert!(
        err.contains("a.sql:2:") && err.contains("streaming view `spark_catalog.default.counted` aggregates"),
        "{err}"
    );
}

/// Runs `code` with the test's python, which has the `deltalake` writer: an independent writer of
/// the Delta tables a stream reads.
fn python(code: &str) {
    let python = std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!(
            "THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python deltalake writer"
        )
    });
    // Leaving through os._exit once the work is done: python deltalake's runtime can abort the
    // interpreter's teardown ("terminate called without an active exception") after a good write.
    let code = format!("{code}\nimport os, sys\nsys.stdout.flush()\nos._exit(0)");
    let out = std::process::Command::new(python).arg("-c").arg(code).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_delta_table_at_a_path_is_streamed_by_what_each_commit_appends() {
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING LIVE TABLE copied AS SELECT * FROM STREAM delta.`ext`;\n\
             CREATE STREAMING LIVE TABLE scaled AS SELECT id * 10 AS id10 FROM STREAM(delta.`ext`) WHERE v <> 'b';",
        ),
    ]);
    let ext = dir.path().join("ext");
    let write = |ids: &str, vs: &str, mode: &str| {
        python(&format!(
            "import deltalake, pyarrow as pa\n\
             deltalake.write_deltalake({:?}, pa.table({{'id': pa.array([{ids}], pa.int64()), 'v': [{vs}]}}), mode='{mode}')",
            ext.display().to_string()
        ))
    };
    write("1, 2", "'a', 'b'", "error");
    assert!(!run(dir.path()).0.failed());
    write("3", "'c'", "append");
    write("4", "'d'", "append");
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(s.flows.iter().find(|f| f.flow.ends_with(".copied")).unwrap().rows_written, 2);
    assert_eq!(ids(dir.path(), "SELECT id FROM copied"), [1, 2, 3, 4]);
    assert_eq!(ids(dir.path(), "SELECT id10 FROM scaled"), [10, 30, 40]);
    assert_eq!(phase(&run(dir.path()).0, "copied"), RunPhase::Idle);

    // A delete rewrites files: the stream cannot tell new rows from old ones and stops, at its line.
    python(&format!("import deltalake\ndeltalake.DeltaTable({:?}).delete('id = 1')", ext.display().to_string()));
    let (s, _) = run(dir.path());
    let err = s.flows.iter().find(|f| f.flow.ends_with(".copied")).and_then(|f| f.error.clone()).unwrap_or_default();
    assert!(err.contains("sql/a.sql:1:") && err.contains("removed data since it was last read"), "{err}");
    assert_eq!(ids(dir.path(), "SELECT id FROM copied"), [1, 2, 3, 4], "nothing written by the failed batch");
}

/// A streaming table whose query changed evolves as DLT's do: new columns are added (NULL in the
/// rows written before), columns no longer returned are kept (NULL in the new rows), and the run
/// says so. A dry run changes nothing; a run killed after the new columns' commit but before its
/// batch leaves a table the next run completes.
#[test]
fn a_changed_streaming_table_definition_evolves_its_table_and_says_so() {
    let v1 = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
              CREATE STREAMING TABLE silver AS SELECT id, v FROM STREAM(bronze);";
    let v2 = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
              CREATE STREAMING TABLE silver AS SELECT id, v * 2 AS v2, 'new' AS tag FROM STREAM(bronze);";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", v1)]);
    write_batch(dir.path(), "b0", 0..2);
    assert!(!run(dir.path()).0.failed());
    std::fs::write(dir.path().join("sql/a.sql"), v2).unwrap();
    write_batch(dir.path(), "b1", 2..4);

    let (dry, _) = run_with(dir.path(), RunOptions { dry: true, ..Default::default() });
    assert!(!dry.failed(), "{:?}", dry.flows);
    let (columns, _) = rows(&query(dir.path(), "SELECT * FROM silver").unwrap());
    assert_eq!(columns, ["id", "v"], "a dry run changes no table");

    std::env::set_var("THUND_FAILPOINT", "stream-after-new-columns@silver");
    let (s, events) = run(dir.path());
    std::env::remove_var("THUND_FAILPOINT");
    assert_eq!(phase(&s, "silver"), RunPhase::Failed, "{:?}", s.flows);
    let warning = events.iter().find_map(|e| e.details.warning.clone()).unwrap_or_default();
    assert!(
        warning.contains("adds v2, tag (NULL in the rows written before)")
            && warning.contains("no longer returns v (kept, NULL in the new rows)")
            && warning.contains("--full-refresh silver"),
        "{warning}"
    );
    // The columns landed before the kill: the run that completes the batch says what remains.
    let (s, events) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let warning = events.iter().find_map(|e| e.details.warning.clone()).unwrap_or_default();
    assert!(warning.contains("it no longer returns v") && !warning.contains("adds"), "{warning}");
    let (columns, values) = rows(&query(dir.path(), "SELECT * FROM silver ORDER BY id").unwrap());
    assert_eq!(columns, ["id", "v", "v2", "tag"]);
    let null = String::new();
    assert_eq!(
        values,
        [
            vec!["0".into(), "0".into(), null.clone(), null.clone()],
            vec!["1".into(), "10".into(), null.clone(), null.clone()],
            vec!["2".into(), null.clone(), "40".into(), "new".into()],
            vec!["3".into(), null.clone(), "60".into(), "new".into()],
        ]
    );
    // `v` stays a column the query does not return: each batch says so until a full refresh.
    write_batch(dir.path(), "b2", 4..5);
    let selection = Selection { full_refresh: vec!["silver".into()], ..Default::default() };
    let (s, _) = run_with(dir.path(), RunOptions { selection, ..Default::default() });
    assert!(!s.failed(), "{:?}", s.flows);
    let (columns, values) = rows(&query(dir.path(), "SELECT * FROM silver ORDER BY id").unwrap());
    // Only silver was selected: bronze reads b2 in the next run.
    assert_eq!((columns, values.len()), (vec!["id".to_string(), "v2".into(), "tag".into()], 4));
    write_batch(dir.path(), "b3", 5..6);
    let (s, events) = run(dir.path());
    assert!(!s.failed() && events.iter().all(|e| e.details.warning.is_none()), "{:?}", s.flows);
}

#[test]
fn a_delta_sink_whose_creation_died_before_its_first_commit_is_created_on_the_next_run() {
    // A process killed while creating the sink's table can leave its log folder without a commit.
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        (
            "sql/a.sql",
            "CREATE STREAMING TABLE events AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE SINK out_delta USING delta OPTIONS (path 'out/d');\n\
             CREATE FLOW export AS INSERT INTO out_delta SELECT id FROM STREAM(events);\n",
        ),
    ]);
    write_batch(dir.path(), "b0", 0..3);
    std::fs::create_dir_all(dir.path().join("out/d/_delta_log")).unwrap();
    let (summary, _) = run(dir.path());
    assert!(!summary.failed(), "{:?}", summary.flows);
    assert_eq!(ids(dir.path(), "SELECT id FROM delta.`out/d` ORDER BY id"), [0, 1, 2]);
}
