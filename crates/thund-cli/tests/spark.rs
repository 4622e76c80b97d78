//! The spark-connect-sdp backend against real Spark Connect servers, one per Spark line
//! (`thund_testkit::SPARK_LINES`: 4.1.4, 4.2.1 and 4.3.0, which `scripts/test.sh` starts). The
//! backend's behaviour is tested on 4.1; every fact its capability table rests on is probed on
//! every line (the tests named `every_server_line_…`). A missing URL fails the test;
//! `THUND_SKIP_SPARK=1` opts out explicitly.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use knut_thund::backend::{ExecBackend, RunEvent, RunOptions, RunPhase, RunSummary};
use knut_thund::error::ThundError;
use knut_thund::spark::SparkBackend;

/// The URL of the server of Spark `line`.
fn remote(line: &str) -> Option<String> {
    thund_testkit::spark_url(line, "a live Spark test")
}

/// A unique database per test: tests share one server.
fn database(test: &str) -> String {
    format!("t_{test}_{}", std::process::id())
}

fn project(db: &str, files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let spec = format!(
        "name: {db}\nstorage: {}\ndatabase: {db}\nconfiguration:\n  spark.sql.pipelines.maxFlowRetryAttempts: '0'\n\
         libraries:\n  - glob:\n      include: transformations/**\n",
        dir.path().join("storage").display()
    );
    std::fs::write(dir.path().join("spark-pipeline.yml"), spec).unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

fn run(url: &str, dir: &Path, options: RunOptions) -> (RunSummary, Vec<RunEvent>) {
    let p = knut_thund::frontend::load(dir).unwrap();
    let mut run = SparkBackend::new(url).run_with(&p, &options).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    while let Some(evs) = run.poll_events() {
        events.extend(evs);
    }
    (run.finish().unwrap(), events)
}

/// Sorted rows as strings (NULL as empty).
fn rows(batches: &[RecordBatch]) -> Vec<String> {
    let opts = FormatOptions::default().with_null("NULL");
    let mut out = Vec::new();
    for b in batches {
        let f: Vec<_> = b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap()).collect();
        for r in 0..b.num_rows() {
            out.push(f.iter().map(|x| x.value(r).to_string()).collect::<Vec<_>>().join(","));
        }
    }
    out.sort();
    out
}

fn query(url: &str, sql: &str) -> Vec<String> {
    rows(&SparkBackend::new(url).query(sql).unwrap_or_else(|e| panic!("{sql}: {e}")))
}

/// Sends `p`'s lowered graph with the bare client, bypassing the backend's refusals, and runs it:
/// for checking the server facts those refusals rest on. Returns the run's outcome (a graph the
/// server refuses to define is an error too) and its event messages.
fn run_unchecked(url: &str, db: &str, p: &knut_thund::ir::Pipeline, dir: &Path) -> (Result<(), String>, Vec<String>) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let mut c = knut_pipelines::PipelinesClient::connect(url).await.unwrap();
        c.sql(&format!("CREATE DATABASE IF NOT EXISTS {db}")).await.unwrap();
        c.sql("SET spark.sql.streaming.schemaInference=true").await.unwrap();
        let id = match c.define_graph(&p.to_sdp().unwrap()).await {
            Ok(id) => id,
            Err(e) => return (Err(e.to_string()), Vec::new()),
        };
        let run = knut_pipelines::PipelineRun {
            graph_id: id,
            storage: Some(format!("file://{}", dir.join("storage").display())),
            ..Default::default()
        };
        let mut messages = Vec::new();
        let outcome = c.start_run(&run, &mut |e: knut_pipelines::PipelineEvent| messages.push(e.message)).await;
        (outcome.map_err(|e| e.to_string()), messages)
    })
}

/// Every server line the backend targets, as (line, URL), for probing the per-line facts on each.
fn servers() -> Option<Vec<(&'static str, String)>> {
    thund_testkit::spark_urls("a server fact")
}

/// The facts the backend holds for the server at `url`, after checking it is of `line`.
fn facts_of(url: &str, line: &str) -> &'static knut_pipelines::versions::ServerFacts {
    let version = SparkBackend::new(url).detect_version().unwrap();
    let facts = knut_pipelines::versions::facts_for(&version).unwrap();
    assert_eq!(facts.line, line, "the server at {url} is {version}");
    facts
}

fn phases_of(events: &[RunEvent], element: &str) -> Vec<RunPhase> {
    events.iter().filter(|e| e.element == element).filter_map(|e| e.phase).collect()
}

#[test]
fn runs_materialized_and_temporary_and_persistent_views_on_spark() {
    let Some(url) = remote("4.1") else { return };
    let db = database("views");
    let dir = project(
        &db,
        &[(
            "transformations/a.sql",
            "CREATE TEMPORARY VIEW raw AS SELECT * FROM VALUES (1, 'a', 10), (2, 'b', 20), (3, 'a', 5) AS t(id, k, v);\n\
             CREATE MATERIALIZED VIEW totals AS SELECT k, sum(v) AS total, count(*) AS n FROM raw GROUP BY k;\n\
             CREATE VIEW big AS SELECT k FROM totals WHERE total > 12;\n\
             CREATE MATERIALIZED VIEW from_view AS SELECT k FROM big;\n",
        )],
    );
    let (summary, events) = run(&url, dir.path(), RunOptions::default());
    assert!(!summary.failed(), "{summary:#?}");
    let totals = format!("spark_catalog.{db}.totals");
    let phases = phases_of(&events, &totals);
    let pos = |p: RunPhase| phases.iter().position(|x| *x == p).unwrap_or_else(|| panic!("{p} missing: {phases:?}"));
    assert!(pos(RunPhase::Queued) < pos(RunPhase::Running) && pos(RunPhase::Running) < pos(RunPhase::Completed));
    let last = events.last().unwrap();
    assert_eq!((last.element.as_str(), last.phase), ("run", Some(RunPhase::Completed)), "{events:#?}");
    assert_eq!(query(&url, &format!("SELECT k, total, n FROM {db}.totals")), ["a,15,2", "b,20,1"]);
    assert_eq!(query(&url, &format!("SELECT k FROM {db}.from_view")), ["a", "b"]);
    // The persistent view is a catalog object that outlives the run.
    assert_eq!(query(&url, &format!("SELECT k FROM {db}.big")), ["a", "b"]);
}

#[test]
fn a_failed_run_of_views_only_fails_and_a_spec_without_storage_is_refused() {
    let Some(url) = remote("4.1") else { return };
    let db = database("views_fail");
    let dir = project(&db, &[("transformations/a.sql", "CREATE VIEW bad AS SELECT nope FROM VALUES (1) AS t(x);\n")]);
    let (summary, events) = run(&url, dir.path(), RunOptions::default());
    // No flow of ours reports it: the server's word fails the run.
    assert!(summary.failed(), "{summary:#?}\n{events:#?}");
    assert_eq!(events.last().unwrap().phase, Some(RunPhase::Failed), "{events:#?}");
    let o = thund().args(["run", "--backend", "spark", "--remote", &url, "-p"]).arg(dir.path()).output().unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", String::from_utf8_lossy(&o.stderr));

    // Without `storage`, a run would only validate on the server: it is refused, not a success.
    let spec = dir.path().join("spark-pipeline.yml");
    let text = std::fs::read_to_string(&spec).unwrap();
    let no_storage: String = text.lines().filter(|l| !l.starts_with("storage:")).map(|l| format!("{l}\n")).collect();
    std::fs::write(&spec, no_storage).unwrap();
    let o = thund().args(["run", "--backend", "spark", "--remote", &url, "-p"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("no `storage`"), "{err}");
    // A dry run still validates without one.
    let o = thund().args(["dry-run", "--backend", "spark", "--remote", &url, "-p"]).arg(dir.path()).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "the bad view fails validation on the server too: {err}");
    assert!(err.contains("Flows with errors:") && err.contains(&format!("{db}.bad")), "{err}");
}

#[test]
fn streams_new_files_into_streaming_tables_across_runs() {
    let Some(url) = remote("4.1") else { return };
    let db = database("stream");
    let data = tempfile::tempdir().unwrap();
    let sql = format!(
        "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
         CREATE STREAMING TABLE silver;\n\
         CREATE FLOW to_silver AS INSERT INTO silver BY NAME SELECT id, v * 2 AS v2 FROM STREAM(bronze) WHERE v > 0;\n\
         CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(v2) AS s FROM silver;\n",
        data.path().display()
    );
    let dir = project(&db, &[("transformations/s.sql", &sql)]);
    std::fs::create_dir_all(data.path().join("day=1")).unwrap();
    std::fs::write(data.path().join("day=1/a.json"), "{\"id\": 1, \"v\": 5}\n{\"id\": 2, \"v\": -1}\n").unwrap();
    let (s1, _) = run(&url, dir.path(), RunOptions::default());
    assert!(!s1.failed(), "{s1:#?}");
    // The explicit flow is reported under its own name.
    let flow = s1.flows.iter().find(|f| f.flow.ends_with(".to_silver")).unwrap();
    assert_eq!(flow.phase, RunPhase::Completed, "{s1:#?}");
    assert_eq!(query(&url, &format!("SELECT id, v2 FROM {db}.silver")), ["1,10"]);
    // A second batch in a new sub-folder: only it is read.
    std::fs::create_dir_all(data.path().join("day=2")).unwrap();
    std::fs::write(data.path().join("day=2/b.json"), "{\"id\": 3, \"v\": 7}\n").unwrap();
    let (s2, _) = run(&url, dir.path(), RunOptions::default());
    assert!(!s2.failed(), "{s2:#?}");
    assert_eq!(query(&url, &format!("SELECT id FROM {db}.bronze")), ["1", "2", "3"]);
    assert_eq!(query(&url, &format!("SELECT id, v2 FROM {db}.silver")), ["1,10", "3,14"]);
    assert_eq!(query(&url, &format!("SELECT n, s FROM {db}.total")), ["2,24"]);
    // A full refresh of silver recomputes it from all of bronze: same rows, no duplicates.
    let full = RunOptions {
        selection: knut_thund::plan::Selection { full_refresh: vec!["silver".into()], ..Default::default() },
        ..Default::default()
    };
    let (s3, _) = run(&url, dir.path(), full);
    assert!(!s3.failed(), "{s3:#?}");
    assert_eq!(query(&url, &format!("SELECT id, v2 FROM {db}.silver")), ["1,10", "3,14"]);
    // A full refresh of everything: the flag alone (the server refuses it with a selection).
    let all = RunOptions {
        selection: knut_thund::plan::Selection { full_refresh_all: true, ..Default::default() },
        ..Default::default()
    };
    let (s4, _) = run(&url, dir.path(), all);
    assert!(!s4.failed(), "{s4:#?}");
    assert_eq!(query(&url, &format!("SELECT id FROM {db}.bronze")), ["1", "2", "3"]);
    assert_eq!(query(&url, &format!("SELECT n, s FROM {db}.total")), ["2,24"]);
}

#[test]
fn refresh_selectors_typed_on_the_command_line_run_only_what_they_name_on_spark() {
    let Some(url) = remote("4.1") else { return };
    let db = database("select");
    let data = tempfile::tempdir().unwrap();
    let sql = format!(
        "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
         CREATE STREAMING TABLE silver AS SELECT id, v * 2 AS v2 FROM STREAM(bronze);\n\
         CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n, sum(v2) AS s FROM silver;\n",
        data.path().display()
    );
    let dir = project(&db, &[("transformations/s.sql", &sql)]);
    let run_cli = |extra: &[&str]| {
        let o = thund()
            .args(["run", "--backend", "spark", "--remote", &url, "--format", "jsonl", "-p"])
            .arg(dir.path())
            .args(extra)
            .output()
            .unwrap();
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        assert!(o.status.success(), "{extra:?}: {}\n{out}", String::from_utf8_lossy(&o.stderr));
        out
    };
    let excluded = |out: &str, dataset: &str| {
        out.lines().any(|l| l.contains(&format!(".{dataset}\"")) && l.contains("\"EXCLUDED\""))
    };
    std::fs::write(data.path().join("a.json"), "{\"id\": 1, \"v\": 5}\n").unwrap();
    run_cli(&[]);
    assert_eq!(query(&url, &format!("SELECT n, s FROM {db}.total")), ["1,10"]);

    // `--refresh bronze`: only bronze takes the new file; silver and total are left as they were.
    std::fs::write(data.path().join("b.json"), "{\"id\": 2, \"v\": 7}\n").unwrap();
    let out = run_cli(&["--refresh", "bronze"]);
    assert!(excluded(&out, "silver") && excluded(&out, "total"), "{out}");
    assert_eq!(query(&url, &format!("SELECT id FROM {db}.bronze")), ["1", "2"]);
    assert_eq!(query(&url, &format!("SELECT id, v2 FROM {db}.silver")), ["1,10"]);
    assert_eq!(query(&url, &format!("SELECT n, s FROM {db}.total")), ["1,10"]);

    // `--refresh silver+`: silver and what reads it; bronze is not read again.
    let out = run_cli(&["--refresh", "silver+"]);
    assert!(excluded(&out, "bronze") && !excluded(&out, "total"), "{out}");
    assert_eq!(query(&url, &format!("SELECT id, v2 FROM {db}.silver")), ["1,10", "2,14"]);
    assert_eq!(query(&url, &format!("SELECT n, s FROM {db}.total")), ["2,24"]);

    // `--full-refresh +silver`: silver and its upstream from scratch; the rows stay the same.
    let out = run_cli(&["--full-refresh", "+silver"]);
    assert!(excluded(&out, "total"), "{out}");
    assert_eq!(query(&url, &format!("SELECT id FROM {db}.bronze")), ["1", "2"]);
    assert_eq!(query(&url, &format!("SELECT id, v2 FROM {db}.silver")), ["1,10", "2,14"]);
}

#[test]
fn refuses_several_flows_into_a_parquet_streaming_table_before_sending_anything() {
    // Spark 4.1.4 keeps only one flow's commits in a parquet streaming table (rows are lost), so
    // the backend refuses, naming every flow; no server is needed to refuse.
    let p = project(
        "unused",
        &[(
            "transformations/f.sql",
            "CREATE STREAMING TABLE t;\n\
             CREATE FLOW a AS INSERT INTO t BY NAME SELECT * FROM STREAM(s1);\n\
             CREATE FLOW b AS INSERT INTO t BY NAME SELECT * FROM STREAM(s2);\n\
             CREATE STREAMING TABLE s1 AS SELECT 1 AS x;\n\
             CREATE STREAMING TABLE s2 AS SELECT 2 AS x;\n",
        )],
    );
    let p = knut_thund::frontend::load(p.path()).unwrap();
    let err = SparkBackend::new("sc://127.0.0.1:1").check(&p).unwrap_err();
    let ThundError::Unsupported { gaps, .. } = &err else { panic!("{err}") };
    assert_eq!(gaps.len(), 2, "{err}");
    let text = err.to_string();
    assert!(text.contains("transformations/f.sql:2") && text.contains("transformations/f.sql:3"), "{text}");
    assert!(text.contains("USING delta"), "{text}");
}

#[test]
fn a_failing_flow_fails_with_the_spark_error_and_its_file_line() {
    let Some(url) = remote("4.1") else { return };
    let db = database("fail");
    let dir = project(
        &db,
        &[(
            "transformations/f.sql",
            "CREATE MATERIALIZED VIEW ok AS SELECT 1 AS x;\n\
             CREATE MATERIALIZED VIEW bad AS SELECT x, raise_error('boom') AS y FROM ok;\n\
             CREATE MATERIALIZED VIEW down AS SELECT * FROM bad;\n",
        )],
    );
    let (summary, events) = run(&url, dir.path(), RunOptions::default());
    assert!(summary.failed());
    let by_target = |t: &str| summary.flows.iter().find(|f| f.target.ends_with(t)).unwrap();
    assert_eq!(by_target(".ok").phase, RunPhase::Completed);
    assert_eq!(by_target(".bad").phase, RunPhase::Failed);
    assert_eq!(by_target(".down").phase, RunPhase::Skipped);
    let failed = events.iter().find(|e| e.phase == Some(RunPhase::Failed) && e.element.ends_with(".bad")).unwrap();
    let error = failed.details.error.as_deref().unwrap();
    assert!(error.contains("transformations/f.sql:2") && error.contains("USER_RAISED_EXCEPTION"), "{error}");
    assert_eq!(events.last().unwrap().phase, Some(RunPhase::Failed));
}

#[test]
fn an_analysis_error_points_at_the_flow_and_skips_its_downstream() {
    let Some(url) = remote("4.1") else { return };
    let db = database("analysis");
    let dir = project(
        &db,
        &[(
            "transformations/f.sql",
            "CREATE MATERIALIZED VIEW ok AS SELECT 1 AS x;\n\
             CREATE MATERIALIZED VIEW bad AS SELECT no_such_column FROM ok;\n\
             CREATE MATERIALIZED VIEW down AS SELECT * FROM bad;\n",
        )],
    );
    let (summary, _) = run(&url, dir.path(), RunOptions::default());
    let bad = summary.flows.iter().find(|f| f.target.ends_with(".bad")).unwrap();
    assert_eq!(bad.phase, RunPhase::Failed);
    assert!(bad.error.as_deref().unwrap().contains("UNRESOLVED_COLUMN"), "{bad:?}");
    let down = summary.flows.iter().find(|f| f.target.ends_with(".down")).unwrap();
    assert_eq!(down.phase, RunPhase::Skipped);
}

#[test]
fn capabilities_follow_the_server_version() {
    let Some(servers) = servers() else { return };
    for (line, url) in &servers {
        let facts = facts_of(url, line);
        let b = SparkBackend::new(url);
        b.detect_version().unwrap();
        let caps = b.capabilities();
        use knut_thund::ir::Feature;
        for (feature, fact) in [
            (Feature::Cdc, facts.auto_cdc),
            (Feature::Sinks, facts.sink_output),
            (Feature::PersistentViews, facts.sql_graph_elements),
            (Feature::OnceFlows, facts.once_flows),
        ] {
            assert_eq!(caps.has(&feature), fact, "Spark {line}: {feature:?} against the line's facts");
        }
    }
    // Forcing a version wins over detection.
    let (_, url43) = servers.last().unwrap();
    assert!(SparkBackend::new(url43).with_version("4.1.4").capabilities().name.contains("4.1.4"));
}

#[test]
fn every_server_line_takes_auto_cdc_as_its_facts_say() {
    // `auto_cdc`: the lowered AutoCDC flow is a protocol message 4.2 and 4.3 accept (the server
    // defines it and only fails the run on the parquet target's missing MERGE, the one table
    // format that installs with pyspark); a line without it fails the definition. The backend refuses both pipelines
    // before sending anything, at the flow's line.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let facts = facts_of(&url, line);
        let db = database(&format!("cdc_{}", line.replace('.', "")));
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("c.json"), "{\"id\": 1, \"v\": \"a\", \"seq\": 1}\n").unwrap();
        let cdc = format!(
            "CREATE STREAMING TABLE changes AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
             CREATE STREAMING TABLE current;\n\
             CREATE FLOW apply AS AUTO CDC INTO current FROM STREAM(changes) KEYS (id) SEQUENCE BY seq STORED AS SCD TYPE 1;\n",
            data.path().display()
        );
        let dir = project(&db, &[("transformations/c.sql", &cdc)]);
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        let spark = SparkBackend::new(&url);
        spark.detect_version().unwrap();
        let err = spark.check(&p).unwrap_err().to_string();
        let why = if facts.auto_cdc { "MERGE" } else { "AUTO CDC" };
        assert!(err.contains(why) && err.contains("transformations/c.sql:3"), "Spark {line}: {err}");
        let (outcome, messages) = run_unchecked(&url, &db, &p, dir.path());
        let all = format!("{outcome:?} {messages:?}");
        let defined = all.contains("AUTOCDC_TARGET_DOES_NOT_SUPPORT_MERGE");
        assert!(outcome.is_err(), "Spark {line}: {all}");
        assert_eq!(defined, facts.auto_cdc, "Spark {line} against its `auto_cdc` fact: {all}");
        // History (SCD type 2) only where the line's protocol has it (`auto_cdc_history`, read
        // from the wheel by the protocol drift test); elsewhere the backend refuses it at its line.
        if facts.auto_cdc && !facts.auto_cdc_history {
            let scd2 = project(&db, &[("transformations/c.sql", &cdc.replace("SCD TYPE 1", "SCD TYPE 2"))]);
            let err = spark.check(&knut_thund::frontend::load(scd2.path()).unwrap()).unwrap_err().to_string();
            assert!(err.contains("SCD TYPE 2") && err.contains("transformations/c.sql:3"), "Spark {line}: {err}");
        }
    }
}

fn thund() -> Command {
    Command::new(env!("CARGO_BIN_EXE_thund"))
}

#[test]
fn cli_runs_the_sample_project_on_spark_and_queries_it() {
    let Some(url) = remote("4.1") else { return };
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    assert!(thund().arg("init").arg(&demo).status().unwrap().success());
    let spec = demo.join("spark-pipeline.yml");
    let db = database("sample");
    let text = std::fs::read_to_string(&spec).unwrap();
    std::fs::write(&spec, format!("{text}database: {db}\n")).unwrap();
    let out = thund().args(["run", "--backend", "spark", "--remote", &url, "-p"]).arg(&demo).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("COMPLETED"), "{stdout}");
    // The Spark run is in the event log, as a native run would be.
    let events = thund().args(["events", "--format", "jsonl", "-p"]).arg(&demo).output().unwrap();
    assert!(events.status.success(), "{}", String::from_utf8_lossy(&events.stderr));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&events.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let of = |dataset: &'static str| {
        lines.iter().filter(move |l| l["origin"]["dataset_name"].as_str().is_some_and(|d| d.ends_with(dataset)))
    };
    let completed = of(".revenue_by_region").find(|l| l["details"]["flow_progress"]["status"] == "COMPLETED");
    assert!(completed.is_some_and(|l| l["event_type"] == "flow_progress"), "{lines:#?}");
    assert!(lines.iter().all(|l| l["origin"]["backend"].as_str().is_some_and(|b| b.starts_with("spark-connect-sdp"))));
    assert_eq!(lines.last().unwrap()["message"], "Run is COMPLETED.", "{lines:#?}");
    // Each table's flow has its output rows, counted on the server: what the embedded backend
    // writes from the same files (materialized views, so the whole table).
    let spark_rows = |dataset: &'static str| {
        of(dataset).find_map(|l| l["details"]["flow_progress"]["metrics"]["num_output_rows"].as_u64())
    };
    for (dataset, rows) in
        [(".orders_raw", 60), (".customers", 6), (".orders_enriched", 58), (".revenue_by_region", 12)]
    {
        assert_eq!(spark_rows(dataset), Some(rows), "{dataset}: {lines:#?}");
        assert!(
            stdout.lines().any(|l| l.contains(dataset) && l.contains("COMPLETED") && l.contains(&format!(" {rows} "))),
            "{stdout}"
        );
    }
    // `thund ui` shows the Spark run from the same log: its backend, states and rows.
    let state = ui_state(&demo);
    assert!(state["runs"][0]["backend"].as_str().is_some_and(|b| b.starts_with("spark-connect-sdp")), "{state}");
    assert_eq!(state["runs"][0]["state"], "COMPLETED", "{state}");
    let datasets = state["datasets"].as_object().unwrap();
    let revenue = datasets.iter().find(|(k, _)| k.ends_with(".revenue_by_region")).map(|(_, v)| v).unwrap();
    assert_eq!((revenue["state"].as_str(), revenue["rows"].as_u64()), (Some("COMPLETED"), Some(12)), "{state}");
    // The same rows as the embedded backend computes.
    let sql = "SELECT * FROM revenue_by_region ORDER BY 1";
    let spark = thund()
        .args(["query", "--backend", "spark", "--format", "csv", "-p"])
        .arg(&demo)
        .arg(sql)
        .env("SPARK_REMOTE", &url)
        .output()
        .unwrap();
    assert!(spark.status.success(), "{}", String::from_utf8_lossy(&spark.stderr));
    assert!(thund().arg("run").arg("-p").arg(&demo).output().unwrap().status.success());
    let native = thund().args(["query", "--format", "csv", "-p"]).arg(&demo).arg(sql).output().unwrap();
    let sorted = |out: &[u8]| {
        let mut lines: Vec<String> = String::from_utf8_lossy(out).lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let (spark, native) = (sorted(&spark.stdout), sorted(&native.stdout));
    assert_eq!(spark.len(), 13, "a header and the 12 regions: {spark:?}");
    assert_eq!(spark, native);
    // A bad query is the user's error.
    let bad =
        thund().args(["query", "--backend", "spark", "--remote", &url, "SELECT * FROM nope_nope"]).output().unwrap();
    assert_eq!(bad.status.code(), Some(2), "{}", String::from_utf8_lossy(&bad.stderr));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("TABLE_OR_VIEW_NOT_FOUND"));
}

/// `GET /api/state` of a `thund ui` started on `project` (and stopped after).
fn ui_state(project: &std::path::Path) -> serde_json::Value {
    use std::io::{BufRead, Read, Write};
    let mut ui = thund()
        .args(["ui", "--port", "0", "-p"])
        .arg(project)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(ui.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let host = line.split("http://").nth(1).and_then(|r| r.split('/').next()).unwrap_or_else(|| panic!("{line}"));
    let mut s = std::net::TcpStream::connect(host).unwrap();
    write!(s, "GET /api/state HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut response = String::new();
    s.read_to_string(&mut response).unwrap();
    let _ = ui.kill();
    let _ = ui.wait();
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {response}"))
}

#[test]
fn cli_fails_fast_and_clearly_without_a_server() {
    let dir = tempfile::tempdir().unwrap();
    let demo = dir.path().join("demo");
    assert!(thund().arg("init").arg(&demo).status().unwrap().success());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let start = Instant::now();
    let out = thund()
        .args(["run", "--backend", "spark", "--remote", &format!("sc://127.0.0.1:{port}/;token=s3cret"), "-p"])
        .arg(&demo)
        .output()
        .unwrap();
    assert!(start.elapsed() < Duration::from_secs(10), "{:?}", start.elapsed());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains(&format!("127.0.0.1:{port}")), "{stderr}");
    assert!(!stderr.contains("s3cret"), "the token leaked: {stderr}");
    // No URL at all is a usage error.
    let out = thund().args(["run", "--backend", "spark", "-p"]).arg(&demo).env_remove("SPARK_REMOTE").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn doctor_checks_a_live_server() {
    let Some(url) = remote("4.1") else { return };
    let out = thund().args(["doctor", "--format", "json", "--remote", &url]).output().unwrap();
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let checks: Vec<(String, bool)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| (r["check"].as_str().unwrap().to_string(), r["ok"].as_bool().unwrap()))
        .collect();
    for c in ["connect_and_version", "capabilities", "lower_sample_pipeline", "live_dry_run"] {
        assert!(checks.contains(&(c.to_string(), true)), "{c}: {checks:?}");
    }
    assert!(out.status.success());
    // What its rows claim, checked against the server itself: the version Spark reports, and
    // the dry run's datasets, which the server resolved (a dry run writes nothing, so none of
    // them exists in its catalog afterwards).
    let detail = |check: &str| {
        rows.as_array().unwrap().iter().find(|r| r["check"] == check).unwrap()["detail"].as_str().unwrap().to_string()
    };
    let version = query(&url, "SELECT version()");
    let version = version[0].split(' ').next().unwrap();
    assert!(detail("connect_and_version").contains(&format!("Spark {version}")), "{rows} vs {version}");
    let dry = detail("live_dry_run");
    assert!(dry.contains("thund_doctor_a IDLE") && dry.contains("thund_doctor_b IDLE"), "{dry}");
    assert!(query(&url, "SHOW TABLES IN default LIKE 'thund_doctor*'").is_empty(), "the doctor's dry run wrote tables");
}

#[test]
fn every_server_line_writes_a_sink_from_a_streaming_flow() {
    // `sink_output`: a SINK output takes a streaming flow's rows, run after run.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let facts = facts_of(&url, line);
        let db = database(&format!("sink_{}", line.replace('.', "")));
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("e.json"), "{\"id\": 1, \"src\": \"a\"}\n{\"id\": 2, \"src\": \"b\"}\n")
            .unwrap();
        let out = tempfile::tempdir().unwrap();
        let sink_path = out.path().join("sink");
        let sql = format!(
            "CREATE STREAMING TABLE events AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
             CREATE SINK exported USING parquet OPTIONS (path '{}');\n\
             CREATE FLOW export AS INSERT INTO exported SELECT id, src FROM STREAM(events);\n",
            data.path().display(),
            sink_path.display()
        );
        let dir = project(&db, &[("transformations/o.sql", &sql)]);
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        let mut outcomes = Vec::new();
        for _ in 0..2 {
            outcomes.push(run_unchecked(&url, &db, &p, dir.path()));
        }
        let ran = outcomes.iter().all(|(o, _)| o.is_ok());
        assert_eq!(ran, facts.sink_output, "Spark {line} against its `sink_output` fact: {outcomes:?}");
        if ran {
            let exported = query(&url, &format!("SELECT id, src FROM parquet.`{}`", sink_path.display()));
            assert_eq!(exported, ["1,a", "2,b"], "Spark {line}");
        }
    }
}

#[test]
fn every_server_line_keeps_a_persistent_view() {
    // `sql_graph_elements`: a persistent `CREATE VIEW`, sent as SQL, is a catalog object that
    // outlives the run.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let facts = facts_of(&url, line);
        let db = database(&format!("pview_{}", line.replace('.', "")));
        let dir = project(
            &db,
            &[(
                "transformations/v.sql",
                "CREATE MATERIALIZED VIEW totals AS SELECT * FROM VALUES ('a', 15), ('b', 5) AS t(k, total);\n\
                 CREATE VIEW big AS SELECT k FROM totals WHERE total > 12;\n",
            )],
        );
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        let (outcome, messages) = run_unchecked(&url, &db, &p, dir.path());
        let kept = outcome.is_ok()
            && SparkBackend::new(&url).query(&format!("SELECT k FROM {db}.big")).is_ok_and(|b| rows(&b) == ["a"]);
        assert_eq!(
            kept, facts.sql_graph_elements,
            "Spark {line} against its `sql_graph_elements` fact: {outcome:?} {messages:?}"
        );
    }
}

#[test]
fn a_cancelled_run_stops_and_says_so() {
    let Some(url) = remote("4.1") else { return };
    let db = database("cancel");
    let dir = project(
        &db,
        &[(
            "transformations/c.sql",
            "CREATE MATERIALIZED VIEW slow AS SELECT count(*) AS n FROM range(100000000000);\n",
        )],
    );
    let p = knut_thund::frontend::load(dir.path()).unwrap();
    let mut run = SparkBackend::new(&url).run_with(&p, &RunOptions::default()).unwrap();
    let start = Instant::now();
    let mut events = Vec::new();
    while let Some(evs) = run.poll_events() {
        let running = evs.iter().any(|e| e.phase == Some(RunPhase::Running));
        events.extend(evs);
        if running {
            run.cancel();
        }
    }
    let summary = run.finish().unwrap();
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    assert_eq!(summary.flows[0].phase, RunPhase::Stopped, "{summary:#?}\n{events:#?}");
    assert_eq!(events.last().unwrap().phase, Some(RunPhase::Stopped));
}

/// Runs `thund run --format jsonl` with `args` on `dir`; once the event of flow `.slow` RUNNING
/// is printed, calls `then(child pid)`; returns the exit code, stderr and every event line.
fn run_until_slow_runs(args: &[&str], dir: &Path, then: impl FnOnce(u32)) -> (Option<i32>, String, Vec<String>) {
    use std::io::{BufRead, BufReader};
    let mut child = thund()
        .args(["run", "--format", "jsonl"])
        .args(args)
        .arg("-p")
        .arg(dir)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let mut then = Some(then);
    for line in lines.by_ref() {
        let line = line.unwrap();
        let running = line.contains(".slow") && line.contains("RUNNING");
        seen.push(line);
        if running {
            if let Some(f) = then.take() {
                f(child.id());
            }
            break;
        }
    }
    seen.extend(lines.map(Result::unwrap));
    let out = child.wait_with_output().unwrap();
    (out.status.code(), String::from_utf8_lossy(&out.stderr).into_owned(), seen)
}

#[test]
fn ctrl_c_cancels_the_run_on_the_server_and_exits_130() {
    let Some(url) = remote("4.1") else { return };
    let db = database("ctrl_c");
    let dir = project(
        &db,
        &[(
            "transformations/c.sql",
            "CREATE MATERIALIZED VIEW slow AS SELECT count(*) AS n FROM range(100000000000);\n",
        )],
    );
    let start = Instant::now();
    // SAFETY: sending a signal to our own child process.
    let interrupt = |pid: u32| unsafe {
        libc::kill(pid as i32, libc::SIGINT);
    };
    let (code, err, seen) = run_until_slow_runs(&["--backend", "spark", "--remote", &url], dir.path(), interrupt);
    assert_eq!(code, Some(130), "{err}\n{seen:#?}");
    assert!(start.elapsed() < Duration::from_secs(60), "{:?}", start.elapsed());
    assert!(seen.last().is_some_and(|l| l.contains("STOPPED")), "{seen:#?}");
}

/// A TCP relay to `to` that stops passing bytes (both ways, connections kept open) once `frozen`
/// is set: a server that stops answering mid-run, without freezing the shared test server.
fn freezing_relay(to: &str, frozen: std::sync::Arc<std::sync::atomic::AtomicBool>) -> String {
    use std::io::{Read, Write};
    use std::sync::atomic::Ordering;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let to = to.trim_start_matches("sc://").trim_end_matches('/').to_string();
    std::thread::spawn(move || {
        for client in listener.incoming().flatten() {
            let Ok(server) = std::net::TcpStream::connect(&to) else { continue };
            for (mut from, mut into) in [
                (client.try_clone().unwrap(), server.try_clone().unwrap()),
                (server.try_clone().unwrap(), client.try_clone().unwrap()),
            ] {
                let frozen = std::sync::Arc::clone(&frozen);
                std::thread::spawn(move || {
                    let mut buf = [0u8; 16384];
                    while let Ok(n) = from.read(&mut buf) {
                        if n == 0 {
                            break;
                        }
                        while frozen.load(Ordering::SeqCst) {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        if into.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                });
            }
        }
    });
    format!("sc://{addr}")
}

#[test]
fn a_server_that_stops_answering_fails_the_run_instead_of_hanging_it() {
    let Some(url) = remote("4.1") else { return };
    let db = database("stall");
    // Slow without using the shared server's CPU: the run left behind sleeps out its 20 s.
    let dir = project(
        &db,
        &[(
            "transformations/c.sql",
            "CREATE MATERIALIZED VIEW slow AS SELECT reflect('java.lang.Thread', 'sleep', CAST(20000 AS BIGINT)) AS slept;\n",
        )],
    );
    let frozen = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let relay = freezing_relay(&url, std::sync::Arc::clone(&frozen));
    let mut frozen_at = None;
    let freeze = |_| {
        frozen.store(true, std::sync::atomic::Ordering::SeqCst);
        frozen_at = Some(Instant::now());
    };
    let args = ["--backend", "spark", "--remote", &relay, "--stall-timeout", "5s"];
    let (code, err, seen) = run_until_slow_runs(&args, dir.path(), freeze);
    assert_eq!(code, Some(1), "{err}\n{seen:#?}");
    let frozen_at = frozen_at.expect("the flow ran");
    assert!(frozen_at.elapsed() < Duration::from_secs(60), "gave up after {:?}", frozen_at.elapsed());
    assert!(err.contains("stalled") || err.contains("did not answer"), "{err}\n{seen:#?}");
}

#[test]
fn every_server_line_still_loses_a_flows_rows_in_a_parquet_streaming_table_with_two_flows() {
    // The premise of refusing several flows into one parquet streaming table (the backend's
    // `transactional_tables`), checked with the refusal bypassed: if a Spark line stops losing
    // rows, this fails and the refusal can be lifted for it.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("twoflows_{}", line.replace('.', "")));
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::write(a.path().join("a.json"), "{\"id\": 1}\n{\"id\": 2}\n").unwrap();
        std::fs::write(b.path().join("b.json"), "{\"id\": 3}\n{\"id\": 4}\n").unwrap();
        let sql = format!(
            "CREATE STREAMING TABLE s1 AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
             CREATE STREAMING TABLE s2 AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
             CREATE STREAMING TABLE t;\n\
             CREATE FLOW f1 AS INSERT INTO t BY NAME SELECT id FROM STREAM(s1);\n\
             CREATE FLOW f2 AS INSERT INTO t BY NAME SELECT id FROM STREAM(s2);\n",
            a.path().display(),
            b.path().display()
        );
        let dir = project(&db, &[("transformations/t.sql", &sql)]);
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        let spark = SparkBackend::new(&url);
        spark.detect_version().unwrap();
        assert!(spark.check(&p).is_err(), "the backend must refuse this pipeline");
        // Either the run fails with a race between the flows' commits (reported as a race while
        // writing a batch, or as both queries using the table's `_spark_metadata` at once), or it
        // completes and one flow's rows are missing: all three were seen on 4.1.4.
        match run_unchecked(&url, &db, &p, dir.path()).0 {
            Err(e) => assert!(
                e.contains("Race while writing batch")
                    || e.contains("Multiple streaming queries are concurrently using"),
                "Spark {line}: {e}"
            ),
            Ok(()) => {
                let written = query(&url, &format!("SELECT id FROM {db}.t"));
                assert!(
                    written.len() < 4,
                    "Spark {line}: both flows' rows arrived ({written:?}): Spark no longer loses them"
                );
            }
        }
    }
}

#[test]
fn thund_test_proves_the_same_logic_on_spark() {
    let Some(url) = remote("4.1") else { return };
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    let thund =
        |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_thund")).args(args).env("NO_COLOR", "1").output().unwrap();
    let d = demo.to_str().unwrap();
    assert!(thund(&["init", d]).status.success());
    // The tests `thund init` wrote, unchanged, on the server.
    let o = thund(&["test", "-p", d, "--backend", "spark", "--remote", &url]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert!(o.status.success(), "{out}");
    assert!(out.contains("6 passed, 0 failed"), "{out}");
    // Broken SQL fails there too, with the same rows missing.
    let gold = demo.join("transformations/03_gold.sql");
    let sql = std::fs::read_to_string(&gold).unwrap();
    std::fs::write(&gold, sql.replace("sum(amount) AS revenue", "min(amount) AS revenue")).unwrap();
    let o = thund(&["test", "-p", d, "--backend", "spark", "--remote", &url, "--filter", "revenue"]);
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    assert_eq!(o.status.code(), Some(1), "{out}");
    assert!(out.contains("missing rows:") && out.contains("revenue: 40.0"), "{out}");
    // Each test's database is dropped after it.
    let left = SparkBackend::new(&url).query("SHOW DATABASES LIKE 'thund_test_*'").unwrap();
    assert_eq!(rows(&left), Vec::<String>::new(), "test databases left behind");
}

// The facts below are what the backend's refusals and lowerings rest on. Each is probed on every
// server line with the backend's check bypassed, so a Spark release that changes one turns its
// test red instead of leaving a stale refusal (or a stale promise) in the capability table.

#[test]
fn every_server_line_still_refuses_once_flows() {
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let facts = facts_of(&url, line);
        let db = database(&format!("once_{}", line.replace('.', "")));
        let dir = project(
            &db,
            &[(
                "transformations/o.sql",
                "CREATE STREAMING TABLE t;\nCREATE FLOW backfill AS INSERT INTO ONCE t BY NAME SELECT 1 AS x;\n",
            )],
        );
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        let (outcome, messages) = run_unchecked(&url, &db, &p, dir.path());
        let all = format!("{outcome:?} {messages:?}");
        assert!(
            outcome.is_err() && all.contains("DEFINE_FLOW_ONCE_OPTION_NOT_SUPPORTED"),
            "Spark {line} no longer refuses `DefineFlow.once`: lift `once_flows` for it. {all}"
        );
        assert!(!facts.once_flows);
        let spark = SparkBackend::new(&url);
        spark.detect_version().unwrap();
        let err = spark.check(&p).unwrap_err().to_string();
        assert!(err.contains("once flows") && err.contains("transformations/o.sql:2"), "{err}");
    }
}

#[test]
fn every_server_line_still_ignores_a_streaming_tables_output_mode() {
    // The backend offers only append mode on Spark because the server ignores
    // `pipelines.outputMode`: an aggregation without a watermark fails as append mode would,
    // whatever mode the table asks for.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("mode_{}", line.replace('.', "")));
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("e.json"), "{\"k\": \"a\"}\n{\"k\": \"a\"}\n{\"k\": \"b\"}\n").unwrap();
        for mode in ["complete", "update"] {
            let sql = format!(
                "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
                 CREATE STREAMING TABLE counts TBLPROPERTIES ('pipelines.outputMode' = '{mode}') AS\n\
                 SELECT k, count(*) AS n FROM STREAM(src) GROUP BY k;\n",
                data.path().display()
            );
            let dir = project(&db, &[("transformations/m.sql", &sql)]);
            let p = knut_thund::frontend::load(dir.path()).unwrap();
            let spark = SparkBackend::new(&url);
            spark.detect_version().unwrap();
            let err = spark.check(&p).unwrap_err().to_string();
            assert!(err.contains("output modes") && err.contains("transformations/m.sql:2"), "{err}");
            let (outcome, messages) = run_unchecked(&url, &db, &p, dir.path());
            let all = format!("{outcome:?} {messages:?}");
            assert!(
                outcome.is_err() && all.contains("STREAMING_OUTPUT_MODE") && all.contains("output mode: append"),
                "Spark {line} ran a `{mode}` streaming table other than in append mode: offer the mode. {all}"
            );
        }
    }
}

#[test]
fn every_server_line_joins_two_streams_across_batches_in_a_table_and_through_a_view() {
    // `StreamJoins` is offered on Spark: a row of one stream meets its match arriving in a later
    // run of the other, because the server keeps both sides in state. `StatefulStreamingViews`
    // too: a temporary view holding that join is one more relation of the streaming query that
    // reads it, so its state lives in that query's checkpoint.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("sjoin_{}", line.replace('.', "")));
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let sql = format!(
            "CREATE STREAMING TABLE orders AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
             CREATE STREAMING TABLE payments AS SELECT * FROM STREAM read_files('{}', format => 'json');\n\
             CREATE STREAMING TABLE paid AS SELECT o.id, o.item, p.amount\n\
             FROM STREAM(orders) o JOIN STREAM(payments) p ON o.id = p.id;\n\
             CREATE TEMPORARY VIEW matched AS SELECT o.id, o.item, p.amount\n\
             FROM STREAM(orders) o JOIN STREAM(payments) p ON o.id = p.id;\n\
             CREATE STREAMING TABLE paid_via_view AS SELECT * FROM STREAM(matched);\n",
            a.path().display(),
            b.path().display()
        );
        let dir = project(&db, &[("transformations/j.sql", &sql)]);
        std::fs::write(a.path().join("1.json"), "{\"id\": 1, \"item\": \"tea\"}\n{\"id\": 2, \"item\": \"jam\"}\n")
            .unwrap();
        std::fs::write(b.path().join("1.json"), "{\"id\": 2, \"amount\": 5}\n").unwrap();
        let (s1, e1) = run(&url, dir.path(), RunOptions::default());
        assert!(!s1.failed(), "Spark {line}: {s1:#?}\n{e1:#?}");
        for table in ["paid", "paid_via_view"] {
            assert_eq!(query(&url, &format!("SELECT id, item, amount FROM {db}.{table}")), ["2,jam,5"], "Spark {line}");
        }
        // The payment for order 1 arrives in the next run; order 1 came in the first.
        std::fs::write(b.path().join("2.json"), "{\"id\": 1, \"amount\": 7}\n").unwrap();
        let (s2, e2) = run(&url, dir.path(), RunOptions::default());
        assert!(!s2.failed(), "Spark {line}: {s2:#?}\n{e2:#?}");
        for table in ["paid", "paid_via_view"] {
            assert_eq!(
                query(&url, &format!("SELECT id, item, amount FROM {db}.{table}")),
                ["1,tea,7", "2,jam,5"],
                "Spark {line}: in {table}, a row did not meet its match from a later batch"
            );
        }
    }
}

#[test]
fn every_server_line_enforces_lowered_expectations() {
    // Open-source Spark has no expectations; the backend lowers them into the flow's query. Run
    // for real: `DROP ROW` drops, a plain expectation keeps, `FAIL UPDATE` fails the flow with the
    // expectation's name, and a table without violations is written whole.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("expect_{}", line.replace('.', "")));
        let table = |values: &str| {
            format!(
                "CREATE MATERIALIZED VIEW checked (\n  CONSTRAINT positive EXPECT (x > 0),\n  \
                 CONSTRAINT small EXPECT (x < 100) ON VIOLATION FAIL UPDATE,\n  \
                 CONSTRAINT lucky EXPECT (x <> 13) ON VIOLATION DROP ROW\n) AS\n\
                 SELECT * FROM VALUES {values} AS t(x);\n"
            )
        };
        let ok = project(&db, &[("transformations/e.sql", &table("(1), (-2), (13), (99)"))]);
        let (s, events) = run(&url, ok.path(), RunOptions::default());
        assert!(!s.failed(), "Spark {line}: {s:#?}\n{events:#?}");
        assert_eq!(query(&url, &format!("SELECT x FROM {db}.checked")), ["-2", "1", "99"], "Spark {line}");

        // A streaming view's expectations hold for the rows a streaming table takes through it.
        let db = database(&format!("expect_view_{}", line.replace('.', "")));
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("a.json"), "{\"x\": 1}\n{\"x\": 13}\n{\"x\": 7}\n").unwrap();
        let sql = format!(
            "CREATE TEMPORARY VIEW v (CONSTRAINT lucky EXPECT (x <> 13) ON VIOLATION DROP ROW)\n\
             AS SELECT * FROM STREAM read_files('{}', format => 'json', schema => 'x BIGINT');\n\
             CREATE STREAMING TABLE s AS SELECT x FROM STREAM v;\n",
            data.path().display()
        );
        let streamed = project(&db, &[("transformations/v.sql", &sql)]);
        let (s, events) = run(&url, streamed.path(), RunOptions::default());
        assert!(!s.failed(), "Spark {line}: {s:#?}\n{events:#?}");
        assert_eq!(query(&url, &format!("SELECT x FROM {db}.s")), ["1", "7"], "Spark {line}");

        let db = database(&format!("expect_fail_{}", line.replace('.', "")));
        let bad = project(&db, &[("transformations/e.sql", &table("(1), (100)"))]);
        let (s, events) = run(&url, bad.path(), RunOptions::default());
        assert!(s.failed(), "Spark {line}: a FAIL UPDATE violation must fail the run: {s:#?}");
        let errors: Vec<_> = s.flows.iter().filter_map(|f| f.error.clone()).collect();
        assert!(
            errors.iter().any(|e| e.contains("expectation `small`") && e.contains("FAIL UPDATE")),
            "Spark {line}: {errors:#?}\n{events:#?}"
        );
    }
}

#[test]
fn every_server_line_gives_databricks_read_files_its_rescued_data_column() {
    // Databricks' `read_files` infers the schema and adds `_rescued_data`: lowered as a column
    // that stays NULL, the reader failing any record that would need rescuing (FAILFAST).
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("rescued_{}", line.replace('.', "")));
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("in")).unwrap();
        std::fs::write(dir.path().join("in/a.json"), "{\"id\": 1, \"v\": \"a\"}\n").unwrap();
        std::fs::write(
            dir.path().join("p.sql"),
            "CREATE MATERIALIZED VIEW b AS SELECT * FROM read_files('in', format => 'json');\n\
             CREATE STREAMING TABLE s AS SELECT * EXCEPT (_rescued_data), _rescued_data IS NULL AS fits \
             FROM STREAM read_files('in', format => 'json');\n",
        )
        .unwrap();
        let settings = serde_json::json!({
            "name": db, "storage": dir.path().join("storage"), "target": db,
            "configuration": {"spark.sql.pipelines.maxFlowRetryAttempts": "0"},
            "libraries": [{"file": {"path": "p.sql"}}]
        });
        std::fs::write(dir.path().join("settings.json"), settings.to_string()).unwrap();
        let (s, events) = run(&url, &dir.path().join("settings.json"), RunOptions::default());
        assert!(!s.failed(), "Spark {line}: {s:#?}\n{events:#?}");
        let b = SparkBackend::new(&url).query(&format!("SELECT * FROM {db}.b")).unwrap();
        let columns: Vec<String> = b[0].schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(columns, ["id", "v", "_rescued_data"], "Spark {line}");
        assert_eq!(rows(&b), ["1,a,NULL"], "Spark {line}");
        assert_eq!(query(&url, &format!("SELECT * FROM {db}.s")), ["1,a,true"], "Spark {line}");
    }
}

#[test]
fn every_server_line_reads_bound_tables_and_wildcard_paths() {
    // A catalog table bound in thund.yml is read from its local data, and a path's wildcards
    // pick the files they match, in batch and as a stream, as natively (tests/cli.rs).
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("bound_{}", line.replace('.', "")));
        let sql = "CREATE MATERIALIZED VIEW trip_stats AS SELECT count(*) AS n, sum(km) AS km FROM samples.nyctaxi.trips;\n\
                   CREATE STREAMING TABLE events AS SELECT id FROM STREAM(main.raw.events);\n\
                   CREATE MATERIALIZED VIEW rides AS SELECT count(*) AS n, sum(km) AS km \
                   FROM read_files('landing/rides/*.csv', format => 'csv');\n\
                   CREATE STREAMING TABLE picked AS SELECT id FROM STREAM read_files('landing/2026-*/part-*.json', format => 'json');\n";
        let dir = project(
            &db,
            &[
                ("transformations/p.sql", sql),
                ("thund.yml", "tables:\n  samples.nyctaxi.trips:\n    path: data/trips.csv\n  main.raw.events:\n    path: data/events\n    format: json\n"),
                ("data/trips.csv", "trip_id,km\n1,2.5\n2,4.0\n"),
                ("data/events/0.json", "{\"id\": 1}\n"),
                ("landing/rides/a.csv", "id,km\n1,10\n2,20\n"),
                ("landing/rides/notes.txt", "id,km\n9,900\n"),
                ("landing/2026-01/part-0.json", "{\"id\": 1}\n"),
                ("landing/2026-01/other.json", "{\"id\": 100}\n"),
                ("landing/2025-12/part-0.json", "{\"id\": 200}\n"),
            ],
        );
        let (s, events) = run(&url, dir.path(), RunOptions::default());
        assert!(!s.failed(), "Spark {line}: {s:#?}\n{events:#?}");
        std::fs::write(dir.path().join("data/events/1.json"), "{\"id\": 2}\n").unwrap();
        std::fs::write(dir.path().join("landing/rides/b.csv"), "id,km\n3,5\n").unwrap();
        std::fs::create_dir_all(dir.path().join("landing/2026-02")).unwrap();
        std::fs::write(dir.path().join("landing/2026-02/part-0.json"), "{\"id\": 2}\n").unwrap();
        let (s, events) = run(&url, dir.path(), RunOptions::default());
        assert!(!s.failed(), "Spark {line}: {s:#?}\n{events:#?}");
        assert_eq!(query(&url, &format!("SELECT * FROM {db}.trip_stats")), ["2,6.5"], "Spark {line}");
        assert_eq!(query(&url, &format!("SELECT id FROM {db}.events")), ["1", "2"], "Spark {line}");
        assert_eq!(query(&url, &format!("SELECT * FROM {db}.rides")), ["3,35"], "Spark {line}");
        assert_eq!(query(&url, &format!("SELECT id FROM {db}.picked")), ["1", "2"], "Spark {line}");
    }
}

#[test]
fn every_server_line_takes_a_refresh_policy_and_says_it_recomputes() {
    // Open-source SDP has no incremental refresh: `REFRESH POLICY` is taken (never sent: the
    // server's parser has no such clause), the view is recomputed, and the run says so.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("policy_{}", line.replace('.', "")));
        let sql = "CREATE MATERIALIZED VIEW src AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(id, v);\n\
                   CREATE MATERIALIZED VIEW strict_join REFRESH POLICY INCREMENTAL STRICT AS\n  \
                   SELECT a.id, b.v FROM src a JOIN src b ON a.id = b.id;\n";
        let dir = project(&db, &[("transformations/p.sql", sql)]);
        let (s, events) = run(&url, dir.path(), RunOptions::default());
        assert!(!s.failed(), "Spark {line}: {s:#?}\n{events:#?}");
        assert_eq!(query(&url, &format!("SELECT * FROM {db}.strict_join")), ["1,a", "2,b"], "Spark {line}");
        assert!(
            events.iter().any(|e| e.message.contains("REFRESH POLICY INCREMENTAL STRICT has no effect on Spark")),
            "Spark {line}: {events:#?}"
        );
    }
}

#[test]
fn every_server_lines_readers_ignore_databricks_reader_options() {
    // Why `rescuedDataColumn` and `cloudFiles.schemaHints` are not offered on Spark: open-source
    // readers ignore both without an error, so a record Databricks would rescue is NULL there
    // and a hinted column keeps its inferred type.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let db = database(&format!("readers_{}", line.replace('.', "")));
        let data = tempfile::tempdir().unwrap();
        std::fs::write(data.path().join("e.json"), "{\"id\": 1, \"n\": 2}\n{\"id\": 3, \"n\": \"four\"}\n").unwrap();
        let sql = format!(
            "CREATE STREAMING TABLE rescued AS SELECT * FROM STREAM read_files('{0}', format => 'json', \
             schema => 'id BIGINT, n BIGINT', rescuedDataColumn => '_rescued_data');\n\
             CREATE STREAMING TABLE hinted AS SELECT * FROM STREAM cloud_files('{0}', 'json', \
             map('cloudFiles.inferColumnTypes', 'true', 'cloudFiles.schemaHints', 'id STRING'));\n",
            data.path().display()
        );
        let dir = project(&db, &[("transformations/r.sql", &sql)]);
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        let (outcome, messages) = run_unchecked(&url, &db, &p, dir.path());
        assert!(outcome.is_ok(), "Spark {line}: {outcome:?} {messages:?}");
        let spark = SparkBackend::new(&url);
        let rescued = spark.query(&format!("SELECT * FROM {db}.rescued")).unwrap();
        let columns: Vec<String> = rescued[0].schema().fields().iter().map(|f| f.name().clone()).collect();
        assert_eq!(columns, ["id", "n"], "Spark {line} now has a rescued-data column: offer `RescuedData` for it");
        assert_eq!(rows(&rescued), ["1,2", "3,NULL"], "Spark {line}");
        let hinted = query(&url, &format!("SELECT DISTINCT typeof(id) FROM {db}.hinted"));
        assert_eq!(hinted, ["bigint"], "Spark {line} now reads schema hints: offer `SchemaHints` for it");
    }
}

#[test]
fn every_server_line_still_refuses_expectations_in_sql() {
    // `expectations`: the open-source parser has no `CONSTRAINT … EXPECT`, so the backend lowers
    // expectations into the flow's query instead of sending them.
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let facts = facts_of(&url, line);
        let err = SparkBackend::new(&url)
            .query("CREATE MATERIALIZED VIEW probe (CONSTRAINT c EXPECT (x > 0)) AS SELECT 1 AS x")
            .unwrap_err()
            .to_string();
        let parsed = !(err.contains("PARSE_SYNTAX_ERROR") && err.contains("EXPECT"));
        assert_eq!(parsed, facts.expectations, "Spark {line} against its `expectations` fact: {err}");
    }
}

#[test]
fn every_server_line_applies_a_pipelines_settings() {
    // `SqlConf`: the server applies the spec's `configuration` to the flows it runs (here ANSI
    // mode off, so a text that does not read as a number is NULL instead of failing the flow).
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        facts_of(&url, line);
        let b = SparkBackend::new(&url);
        b.detect_version().unwrap();
        let db = database(&format!("conf_{}", line.replace('.', "")));
        let dir =
            project(&db, &[("transformations/c.sql", "CREATE MATERIALIZED VIEW v AS SELECT CAST('x' AS INT) AS n;\n")]);
        let spec = dir.path().join("spark-pipeline.yml");
        let text = std::fs::read_to_string(&spec).unwrap();
        std::fs::write(&spec, text.replace("configuration:\n", "configuration:\n  spark.sql.ansi.enabled: 'false'\n"))
            .unwrap();
        let (summary, events) = run(&url, dir.path(), RunOptions::default());
        let applied = !summary.failed() && query(&url, &format!("SELECT n FROM {db}.v")) == ["NULL"];
        assert_eq!(
            applied,
            b.capabilities().has(&knut_thund::ir::Feature::SqlConf),
            "Spark {line} against `SqlConf`: {summary:#?}\n{events:#?}"
        );
    }
}

/// Views maintained incrementally by the embedded engine (aggregates over inner and outer joins
/// and a union, a join's rows refreshed row by row, an aggregate over those) give, after every
/// run, the rows Spark gives computing the same SQL over the same data from scratch. The
/// embedded project's inputs are AUTO CDC tables fed random upserts and deletes; after each run
/// their rows are exported and the Spark project reads them, so Spark is the oracle of each view.
#[test]
fn incremental_refreshes_agree_with_spark_recomputing_the_same_views() {
    let Some(url) = remote("4.1") else { return };
    let views = [
        (
            "by_region",
            "SELECT cu.region, count(*) AS n, sum(o.v) AS s, count(o.v) AS cv, min(o.v) AS lo, \
                       avg(CAST(o.v AS DECIMAL(12, 2))) AS av \
                       FROM orders o JOIN customers cu ON o.c = cu.c WHERE cu.region <> 'x' GROUP BY cu.region",
        ),
        (
            "per_customer",
            "SELECT cu.c, count(o.k) AS n, sum(o.v) AS s, max(o.v) AS hi \
                          FROM orders o RIGHT JOIN customers cu ON o.c = cu.c GROUP BY cu.c",
        ),
        (
            "unioned",
            "SELECT g, count(*) AS n, sum(x) AS s FROM (SELECT k % 3 AS g, v AS x FROM orders \
                     UNION ALL SELECT c % 3 AS g, w AS x FROM customers) GROUP BY g",
        ),
        (
            "left_rows",
            "SELECT o.k, o.v, cu.region, cu.w FROM orders o LEFT JOIN customers cu ON o.c = cu.c AND cu.w > 1",
        ),
        ("nested", "SELECT region, count(*) AS n, sum(v) AS s FROM left_rows GROUP BY region"),
        // One group: its extremes read off the counts of its values.
        ("overall", "SELECT count(*) AS n, max(v) AS hi, min(v % 7) AS lo7, max(k) AS top FROM orders"),
    ];
    let view_sql = |properties: bool| -> String {
        views
            .iter()
            .map(|(name, q)| {
                let dv = if properties { " TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')" } else { "" };
                format!("CREATE MATERIALIZED VIEW {name}{dv} AS {q};\n")
            })
            .collect()
    };
    // The embedded project: AUTO CDC tables fed from JSON change files.
    let native = tempfile::tempdir().unwrap();
    let feed = |t: &str| native.path().join(format!("{t}_feed"));
    let mut sql = String::new();
    for (t, schema, key) in
        [("orders", "k BIGINT, c BIGINT, v BIGINT", "k"), ("customers", "c BIGINT, region STRING, w BIGINT", "c")]
    {
        std::fs::create_dir_all(feed(t)).unwrap();
        sql.push_str(&format!(
            "CREATE STREAMING TABLE {t} TBLPROPERTIES ('delta.enableDeletionVectors' = 'true');\n\
             CREATE FLOW {t}_f AS AUTO CDC INTO {t} FROM STREAM read_files('{}', format => 'json', \
             schema => '{schema}, seq BIGINT, op STRING') KEYS ({key}) APPLY AS DELETE WHEN op = 'D' \
             SEQUENCE BY seq COLUMNS * EXCEPT (op, seq);\n",
            feed(t).display()
        ));
    }
    sql.push_str(&view_sql(true));
    std::fs::write(
        native.path().join("spark-pipeline.yml"),
        "name: n\nlibraries:\n  - glob:\n      include: '*.sql'\n",
    )
    .unwrap();
    std::fs::write(native.path().join("p.sql"), sql).unwrap();
    // The Spark project: the same views over the embedded tables' rows, exported each run.
    let exported = tempfile::tempdir().unwrap();
    let db = database("incremental");
    let mut spark_sql = String::new();
    for t in ["orders", "customers"] {
        spark_sql.push_str(&format!(
            "CREATE MATERIALIZED VIEW {t} AS SELECT * FROM parquet.`{}`;\n",
            exported.path().join(t).display()
        ));
    }
    spark_sql.push_str(&view_sql(false));
    let spark = project(&db, &[("transformations/p.sql", &spark_sql)]);

    let csv = |out: std::process::Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let mut lines: Vec<String> = String::from_utf8_lossy(&out.stdout).lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let mut state = 5u64;
    let mut below = |n: u64| {
        state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (state >> 33) % n
    };
    let (mut seq, mut incremental) = (0, 0);
    for round in 0..4 {
        let (mut orders, mut customers) = (String::new(), String::new());
        for _ in 0..if round == 0 { 40 } else { 6 } {
            seq += 1;
            let v = if below(6) == 0 { "null".to_string() } else { below(1000).to_string() };
            let op = if round > 0 && below(3) == 0 { "D" } else { "U" };
            let (k, c) = (below(40), below(10));
            orders.push_str(&format!("{{\"k\": {k}, \"c\": {c}, \"v\": {v}, \"seq\": {seq}, \"op\": \"{op}\"}}\n"));
        }
        for _ in 0..if round == 0 { 8 } else { 2 } {
            seq += 1;
            let op = if round > 0 && below(3) == 0 { "D" } else { "U" };
            let (c, region, w) = (below(10), ["eu", "us", "x"][below(3) as usize], below(5));
            customers.push_str(&format!(
                "{{\"c\": {c}, \"region\": \"{region}\", \"w\": {w}, \"seq\": {seq}, \"op\": \"{op}\"}}\n"
            ));
        }
        std::fs::write(feed("orders").join(format!("{round}.json")), orders).unwrap();
        std::fs::write(feed("customers").join(format!("{round}.json")), customers).unwrap();
        let ran = thund().args(["run", "-p"]).arg(native.path()).output().unwrap();
        let out = String::from_utf8_lossy(&ran.stdout).to_string();
        assert!(ran.status.success(), "round {round}: {out}\n{}", String::from_utf8_lossy(&ran.stderr));
        incremental += out.lines().filter(|l| l.contains("group aggregate") || l.contains("row-based")).count();
        for t in ["orders", "customers"] {
            let dir = exported.path().join(t);
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            let export = thund()
                .args(["query", "--format", "parquet", "--output"])
                .arg(dir.join("part-0.parquet"))
                .arg("-p")
                .arg(native.path())
                .arg(format!("SELECT * FROM {t}"))
                .output()
                .unwrap();
            assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
        }
        let (s, events) = run(&url, spark.path(), RunOptions::default());
        assert!(!s.failed(), "round {round}: {s:#?}\n{events:#?}");
        for (view, _) in views {
            let spark_rows = csv(thund()
                .args(["query", "--backend", "spark", "--remote", &url, "--format", "csv"])
                .arg(format!("SELECT * FROM {db}.{view}"))
                .output()
                .unwrap());
            let native_rows = csv(thund()
                .args(["query", "--format", "csv", "-p"])
                .arg(native.path())
                .arg(format!("SELECT * FROM {view}"))
                .output()
                .unwrap());
            assert_eq!(native_rows, spark_rows, "round {round}, {view}: the embedded refresh vs Spark's recompute");
        }
    }
    // Most refreshes after the first were incremental, not recomputes that would agree anyway.
    assert!(incremental >= 8, "only {incremental} of 18 refreshes were incremental");
}
