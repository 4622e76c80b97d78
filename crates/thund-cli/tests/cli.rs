//! The `thund` binary end to end: commands, output formats and exit codes.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::Path;
use std::process::{Command, Output};

fn thund(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_thund")).args(args).env("NO_COLOR", "1").output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

/// A project in `dir` named `name` whose definitions are its `*.sql` files (tables in `store`).
fn sql_project(dir: &Path, name: &str) {
    let spec = format!("name: {name}\nstorage: store\nlibraries:\n  - glob:\n      include: '*.sql'\n");
    std::fs::write(dir.join("spark-pipeline.yml"), spec).unwrap();
}

/// `thund query -p dir sql --format csv`'s output; the query must succeed.
fn csv_of(dir: &Path, sql: &str) -> String {
    let o = thund(&["query", "-p", p(dir), sql, "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).to_string()
}

#[test]
fn init_never_replaces_a_file_of_the_users() {
    let tmp = tempfile::tempdir().unwrap();
    // A project with another spec name and the sample's file names: every file is named, none
    // is touched, and nothing is written.
    let dir = tmp.path().join("mine");
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::create_dir_all(dir.join("transformations")).unwrap();
    std::fs::write(dir.join("data/orders.csv"), "my,rows\n").unwrap();
    std::fs::write(dir.join("transformations/02_silver.sql"), "-- mine\n").unwrap();
    let o = thund(&["init", p(&dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("data/orders.csv") && out.contains("transformations/02_silver.sql"), "{out}");
    assert_eq!(std::fs::read_to_string(dir.join("data/orders.csv")).unwrap(), "my,rows\n");
    assert_eq!(std::fs::read_to_string(dir.join("transformations/02_silver.sql")).unwrap(), "-- mine\n");
    assert!(!dir.join("spark-pipeline.yml").exists() && !dir.join("transformations/01_bronze.sql").exists());

    std::fs::write(dir.join("pipeline.yml"), "name: mine\n").unwrap();
    let o = thund(&["init", p(&dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("already holds a pipeline (pipeline.yml)"), "{}", text(&o));
    assert_eq!(std::fs::read_to_string(dir.join("pipeline.yml")).unwrap(), "name: mine\n");
}

/// `storage: file://store` is the project's `store`, whatever folder the run starts from.
#[test]
fn a_relative_file_url_storage_is_relative_to_the_project() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let spec = std::fs::read_to_string(demo.join("spark-pipeline.yml")).unwrap();
    std::fs::write(demo.join("spark-pipeline.yml"), spec.replace("storage: .thund", "storage: file://store")).unwrap();
    let elsewhere = tmp.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_thund"))
            .args(args)
            .current_dir(&elsewhere)
            .env("NO_COLOR", "1")
            .output()
            .unwrap()
    };
    let o = run(&["run", "-p", p(&demo)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(demo.join("store/tables").is_dir(), "the tables are not in the project's store");
    assert!(!elsewhere.join("store").exists(), "the run wrote into the working folder");
    // A query from yet another folder reads the same tables.
    let o = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["query", "-p", p(&demo), "SELECT count(*) > 0 AS has_rows FROM orders_enriched"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("true"), "{}", text(&o));
}

#[test]
fn init_run_query_and_events_work_on_the_sample() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    let o = thund(&["init", p(&demo)]);
    assert!(o.status.success(), "{}", text(&o));

    let o = thund(&["validate", "-p", p(&demo)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("is valid: 6 datasets"), "{}", text(&o));

    let o = thund(&["dry-run", "-p", p(&demo)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!demo.join(".thund/tables").exists(), "a dry run must not write tables");

    let o = thund(&["run", "-p", p(&demo)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("has COMPLETED") && out.contains("revenue_by_region"), "{out}");

    // Independently computed from the generator in sample.rs: orders 29 and 58 have no amount,
    // customer 7 (i % 7 == 6) is unknown.
    let o = thund(&[
        "query",
        "-p",
        p(&demo),
        "SELECT count(*) AS n, count(name) AS named FROM orders_enriched",
        "--format",
        "csv",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let expected_named = (1..=60).filter(|i| i % 29 != 0 && i % 7 != 6).count();
    assert_eq!(String::from_utf8_lossy(&o.stdout), format!("n,named\n58,{expected_named}\n"));

    let o = thund(&[
        "query",
        "-p",
        p(&demo),
        "SELECT * FROM revenue_by_region WHERE region = 'nowhere'",
        "--format",
        "csv",
    ]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "region,year,month,orders,revenue\n");
    // As a table, no rows still show the columns.
    let o = thund(&["query", "-p", p(&demo), "SELECT region, orders FROM revenue_by_region WHERE region = 'nowhere'"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("| region | orders |"), "{}", text(&o));

    let o = thund(&[
        "query",
        "-p",
        p(&demo),
        "SELECT name, orders FROM top_customers WHERE name = 'Astrid'",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let astrid = (1..=60).filter(|i| i % 7 == 0 && i % 29 != 0).count();
    assert_eq!(v[0]["orders"], astrid as u64, "{v}");

    let o = thund(&["events", "-p", p(&demo), "--last", "--format", "jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["details"]["flow_progress"]["status"] == "COMPLETED"
        && l["origin"]["dataset_name"].as_str().is_some_and(|d| d.ends_with("revenue_by_region"))));
}

#[test]
fn user_errors_exit_2_with_file_and_line() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;\n\nCREATE MATERIALIZED VIEW b AS SELECT * FROM aa;\n",
    )
    .unwrap();
    let o = thund(&["validate", "-p", p(tmp.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("a.sql:3:45"), "{out}");
    assert!(out.contains("3 | CREATE MATERIALIZED VIEW b AS SELECT * FROM aa;"), "{out}");
    assert!(out.contains("did you mean"), "{out}");

    let o = thund(&["validate", "-p", p(&tmp.path().join("nowhere"))]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = thund(&["run", "-p", p(tmp.path()), "--refresh", "nope"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let o = thund(&["frobnicate"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn a_failed_flow_exits_1() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(tmp.path().join("a.sql"), "CREATE MATERIALIZED VIEW a AS SELECT nope FROM VALUES (1) AS t(x);\n")
        .unwrap();
    let o = thund(&["run", "-p", p(tmp.path())]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("FAILED"), "{}", text(&o));
}

#[test]
fn unsupported_features_are_refused_before_running() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE w AS SELECT a.id FROM STREAM(src) a JOIN STREAM(src) b ON a.id = b.id;\n\
         CREATE STREAMING TABLE v AS\n\
         SELECT a.id FROM STREAM(src) a JOIN STREAM(src) b ON a.id < b.id;\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(tmp.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains("a.sql:2:") && out.contains("stream-stream joins") && out.contains("a join of two STREAM sources"),
        "{out}"
    );
    // Every problem at once, not the first only.
    assert!(out.contains("a.sql:4:") && out.contains("spark_catalog.default.v"), "{out}");
    assert!(!tmp.path().join(".thund/tables").exists());
}

#[test]
fn expectation_metrics_reach_the_summary_and_the_event_log() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE MATERIALIZED VIEW m (CONSTRAINT positive EXPECT (x > 0) ON VIOLATION DROP ROW)\n\
         AS SELECT * FROM VALUES (1), (2), (-3), (NULL) AS t(x);\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(tmp.path())]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o)
            .lines()
            .any(|l| l.contains("positive") && l.contains("50.0%") && l.contains("2/4") && l.contains("drop")),
        "{}",
        text(&o)
    );
    let o = thund(&["events", "-p", p(tmp.path()), "--last", "--format", "jsonl"]);
    let lines: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let done = lines.iter().find(|l| l["details"]["flow_progress"]["status"] == "COMPLETED").unwrap();
    let dq = &done["details"]["flow_progress"]["data_quality"];
    assert_eq!(dq["dropped_records"], 2, "{done}");
    assert_eq!(dq["expectations"][0]["name"], "positive");
    assert_eq!(dq["expectations"][0]["dataset"], "spark_catalog.default.m");
    assert_eq!(dq["expectations"][0]["passed_records"], 2);
    assert_eq!(dq["expectations"][0]["failed_records"], 2);
}

#[test]
fn graph_formats_render() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    for (format, needle) in [
        ("text", "orders_clean --> orders_enriched"),
        ("dot", "digraph"),
        ("mermaid", "flowchart LR"),
        ("json", "\"edges\""),
        ("sdp", "\"MaterializedView\""),
    ] {
        let o = thund(&["graph", "-p", p(&demo), "--format", format]);
        assert!(o.status.success(), "{format}: {}", text(&o));
        assert!(text(&o).contains(needle), "{format}: {}", text(&o));
    }
}

#[test]
fn doctor_reports_green_rows_for_what_works_here() {
    let o = thund(&["doctor", "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let rows: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let checks: Vec<&str> = rows.as_array().unwrap().iter().map(|r| r["check"].as_str().unwrap()).collect();
    assert_eq!(checks, ["parse_validate_plan", "lower_to_sdp", "sample_pipeline", "read_delta_back"]);
    assert!(rows.as_array().unwrap().iter().all(|r| r["ok"] == true), "{rows}");
    // Its rows say what they did, and it matches what the same sample does when run here by hand:
    // `thund init`'s project, run natively, writes as many rows as the doctor's run reports.
    let detail = |check: &str| {
        rows.as_array().unwrap().iter().find(|r| r["check"] == check).unwrap()["detail"].as_str().unwrap().to_string()
    };
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let o = thund(&["run", "-p", p(&demo), "--format", "jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    let written: u64 = String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|e| e["phase"] == "COMPLETED" && e["element"] != "run")
        .map(|e| e["details"]["rows_written"].as_u64().unwrap_or(0))
        .sum();
    assert!(written > 0);
    assert!(detail("sample_pipeline").contains(&format!("{written} rows written")), "{rows}");
    // A check that fails is a red row and a failed doctor, not an "ok": the sample's run dies at
    // a failpoint of its materialized views' refresh.
    let o = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["doctor", "--format", "json"])
        .env("THUND_FAILPOINT", "refresh-after-commit")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let red: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let sample = red.as_array().unwrap().iter().find(|r| r["check"] == "sample_pipeline").unwrap();
    assert_eq!(sample["ok"], false, "{red}");
    assert!(sample["detail"].as_str().unwrap().contains("failpoint"), "{red}");
    // An unreachable Spark server is a red row, not a pass.
    let o = thund(&["doctor", "--remote", "sc://127.0.0.1:1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).lines().any(|l| l.contains("connect_and_version") && l.contains("FAIL")), "{}", text(&o));
}

#[test]
fn spark_enforces_expectations_in_the_flows_query() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE MATERIALIZED VIEW a (\n  CONSTRAINT pos EXPECT (x > 0),\n  CONSTRAINT small EXPECT (x < 9) ON VIOLATION FAIL UPDATE,\n  \
         CONSTRAINT known EXPECT (x IS NOT NULL) ON VIOLATION DROP ROW\n) AS SELECT 1 AS x;\n",
    )
    .unwrap();
    let o = thund(&["graph", "--format", "sdp", "-p", p(tmp.path())]);
    assert!(o.status.success(), "{}", text(&o));
    let graph: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let query = graph["flows"][0]["details"]["relation"]["sql"]["query"].as_str().unwrap_or_default().to_string();
    let query = if query.is_empty() { graph.to_string() } else { query };
    assert!(query.contains("raise_error('expectation `small` on `spark_catalog.default.a` failed"), "{query}");
    assert!(query.contains("coalesce((x IS NOT NULL), false)"), "{query}");
    assert!(!query.contains("x > 0"), "a plain expectation keeps every row: {query}");
    // Accepted before any server is contacted: the run fails on the transport, not the check.
    // (`spark.rs` runs the lowered expectations on both server lines.)
    let o = thund(&["run", "--backend", "spark", "-p", p(tmp.path()), "--remote", "sc://127.0.0.1:1"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("cannot reach the Spark Connect server at sc://127.0.0.1:1"), "{}", text(&o));
}

#[test]
fn jsonl_format_prints_one_event_per_line() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let o = thund(&["run", "-p", p(&demo), "--format", "jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    let events: Vec<serde_json::Value> =
        String::from_utf8_lossy(&o.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(events.iter().any(|e| e["phase"] == "COMPLETED" && e["details"]["rows_written"] == 60), "{events:?}");
    assert_eq!(events.last().unwrap()["message"], "Run is COMPLETED.");
    // `--log-format` changes the diagnostics log only, never the run's output.
    let o = thund(&["run", "-p", p(&demo), "--log-format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.lines().any(|l| l.contains("Run is COMPLETED.") && !l.starts_with('{')), "{out}");
}

#[test]
fn every_problem_of_a_run_is_reported_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE STREAMING TABLE w AS SELECT a.id FROM STREAM(src) a JOIN STREAM(src) b ON a.id = b.id;\n\
         CREATE MATERIALIZED VIEW m AS SELECT * FROM nowhere;\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(tmp.path()), "--refresh", "zzz"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    // What the backend lacks, what the graph gets wrong (quoted) and what the selection names.
    assert!(out.contains("a.sql:1:") && out.contains("stream-stream joins"), "{out}");
    assert!(out.contains("2 | CREATE MATERIALIZED VIEW m AS SELECT * FROM nowhere;"), "{out}");
    assert!(out.contains("`zzz`"), "{out}");
    assert!(!tmp.path().join(".thund").exists(), "nothing is written");
}

#[test]
fn a_spark_dry_run_without_a_server_lowers_the_graph_and_sends_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let o = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["dry-run", "--backend", "spark", "-p", p(&demo)])
        .env_remove("SPARK_REMOTE")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("dataflow graph lowered:") && out.contains("nothing was sent"), "{out}");
    assert!(!demo.join(".thund").exists(), "a dry run writes nothing");
}

/// Runs `thund` under a pseudo-terminal (util-linux `script`), as a user at a terminal sees it.
fn thund_on_a_terminal(args: &[&str]) -> (Option<i32>, String) {
    let cmd = std::iter::once(env!("CARGO_BIN_EXE_thund"))
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let o = Command::new("script")
        .args(["-qec", &cmd, "/dev/null"])
        .env("TERM", "xterm")
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (o.status.code(), String::from_utf8_lossy(&o.stdout).into_owned())
}

#[test]
fn a_terminal_gets_a_live_line_per_flow_and_pipes_get_plain_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    std::fs::write(
        demo.join("transformations/broken.sql"),
        "CREATE MATERIALIZED VIEW broken AS SELECT nope FROM VALUES (1) AS t(x);\n",
    )
    .unwrap();
    let (code, screen) = thund_on_a_terminal(&["run", "-p", p(&demo)]);
    assert_eq!(code, Some(1), "{screen}");
    // The live view redraws lines in place (cursor movement and line erasure), shows each
    // flow's final phase and the failed flow's error, then the summary table.
    assert!(screen.contains("\x1b[2K") || screen.contains("\x1b[1A"), "no live redraw:\n{screen:?}");
    assert!(screen.contains("COMPLETED") && screen.contains("FAILED"), "{screen}");
    assert!(screen.contains("nope"), "the failed flow's error is shown:\n{screen}");
    assert!(screen.contains("dataset") && screen.contains("rows"), "summary table:\n{screen}");
    // A pipe gets plain, timestamped event lines without escape codes.
    let o = thund(&["run", "-p", p(&demo)]);
    assert_eq!(o.status.code(), Some(1));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(!out.contains('\x1b'), "{out:?}");
    assert!(out.lines().any(|l| l.contains("FAILED") && l.contains("broken")), "{out}");
}

#[test]
fn spark_refuses_a_rescued_data_column_that_open_source_readers_lack() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE STREAMING TABLE b AS\nSELECT * FROM STREAM read_files('in', format => 'json', rescuedDataColumn => '_rescued_data');\n",
    )
    .unwrap();
    for cmd in ["dry-run", "run"] {
        let o = thund(&[cmd, "--backend", "spark", "-p", p(tmp.path()), "--remote", "sc://127.0.0.1:1"]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let out = text(&o);
        assert!(out.contains("rescuedDataColumn") && out.contains("a.sql:1"), "{out}");
    }
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::Read;
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    assert!(thund(&["run", "-p", p(&demo)]).status.success());
    // Far more output than a pipe holds; the reader takes a little and goes away, like `| head`.
    let mut child = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["query", "-p", p(&demo), "--format", "csv", "SELECT * FROM range(0, 500000)"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = [0u8; 64];
    child.stdout.take().unwrap().read_exact(&mut first).unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(String::from_utf8_lossy(&first).starts_with("id"), "{:?}", String::from_utf8_lossy(&first));
}

#[test]
fn a_table_that_cannot_be_opened_fails_the_run_with_one_clear_message() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    assert!(thund(&["run", "-p", p(&demo)]).status.success());
    let log = demo.join(".thund/tables/spark_catalog/default/orders_raw/_delta_log/00000000000000000000.json");
    std::fs::write(&log, "this is not a Delta log\n").unwrap();
    let o = thund(&["run", "-p", p(&demo)]);
    assert_eq!(o.status.code(), Some(1), "a run that cannot start failed: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("orders_raw") && err.contains("tables/spark_catalog/default/orders_raw"), "{err}");
    // One message of ours: no library log, backtrace or colour codes.
    assert!(!err.contains('\x1b') && !err.contains("backtrace") && !err.contains(" WARN "), "{err}");
    assert!(err.lines().count() <= 3, "{err}");
}

#[test]
fn ctrl_c_stops_a_native_run_after_its_commits_and_exits_130() {
    use std::io::{BufRead, BufReader};
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("spark-pipeline.yml"), "name: x\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "CREATE MATERIALIZED VIEW slow AS SELECT sum(id % 7) AS s, count(*) AS n FROM range(0, 300000000) AS r(id);\n\
         CREATE MATERIALIZED VIEW after AS SELECT n FROM slow;\n",
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["run", "--format", "jsonl", "-p", p(tmp.path())])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let running = line.contains(".slow") && line.contains("RUNNING");
        seen.push(line);
        if running {
            // SAFETY: sending a signal to our own child process.
            unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
            break;
        }
    }
    seen.extend(lines.map(Result::unwrap));
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{err}\n{seen:#?}");
    assert!(err.contains("interrupted"), "{err}");
    assert!(seen.iter().any(|l| l.contains(".after") && l.contains("STOPPED")), "{seen:#?}");
    // Nothing half-written: the slow view committed whole (or not at all), and a rerun completes.
    let o = thund(&["query", "-p", p(tmp.path()), "--format", "csv", "SELECT n FROM slow"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n\n300000000\n", "{}", text(&o));
    let o = thund(&["run", "-p", p(tmp.path())]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn spark_settings_that_would_change_results_are_refused_with_their_lines_never_ignored() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("spark-pipeline.yml"),
        "name: x\nconfiguration:\n  spark.sql.shuffle.partitions: '4'\n  spark.sql.session.timeZone: Europe/Oslo\n\
         libraries:\n  - glob:\n      include: '*.sql'\n",
    )
    .unwrap();
    std::fs::write(
        tmp.path().join("a.sql"),
        "SET spark.sql.ansi.enabled = false;\nCREATE MATERIALIZED VIEW a AS SELECT CAST('x' AS INT) AS v;\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(tmp.path())]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("spark-pipeline.yml:4:1") && err.contains("Europe/Oslo") && err.contains("UTC"), "{err}");
    assert!(err.contains("a.sql:2:1") && err.contains("spark.sql.ansi.enabled"), "{err}");
    assert!(!err.contains("shuffle"), "settings that only tune Spark pass: {err}");
    assert!(!tmp.path().join(".thund/tables").exists(), "nothing ran");
    // The same project is fine for Spark, which applies them (checked here without a server).
    let o = thund(&["dry-run", "--backend", "spark", "-p", p(tmp.path())]);
    assert!(o.status.success(), "{}", text(&o));
}

#[test]
fn a_huge_max_concurrent_flows_means_no_limit_not_a_million_threads() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let o = thund(&["run", "-p", p(&demo), "--max-concurrent-flows", "1000000"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("revenue_by_region") && text(&o).contains("COMPLETED"), "{}", text(&o));
}

#[test]
fn the_memory_limit_comes_from_the_flag_the_environment_or_the_spec_and_a_bad_one_exits_2() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let spec = demo.join("spark-pipeline.yml");
    let plain = std::fs::read_to_string(&spec).unwrap();
    let run = |env: Option<&str>, flag: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_thund"));
        c.args(["run", "-p", p(&demo)]).env("NO_COLOR", "1").env_remove("THUND_MEMORY_LIMIT");
        if let Some(v) = env {
            c.env("THUND_MEMORY_LIMIT", v);
        }
        if let Some(v) = flag {
            c.args(["--memory-limit", v]);
        }
        c.output().unwrap()
    };
    std::fs::write(&spec, format!("{plain}configuration:\n  thund.memoryLimit: lots\n")).unwrap();
    let o = run(None, None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("spark-pipeline.yml: configuration `thund.memoryLimit: lots`"), "{}", text(&o));
    // The environment wins over the spec, the flag over both.
    let o = run(Some("12Q"), None);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("THUND_MEMORY_LIMIT=`12Q`: has an unknown unit"), "{}", text(&o));
    // `thund test` runs pipelines under the same limit.
    let o = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["test", "-p", p(&demo)])
        .env("NO_COLOR", "1")
        .env("THUND_MEMORY_LIMIT", "12Q")
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("THUND_MEMORY_LIMIT=`12Q`"), "{}", text(&o));
    let o = run(Some("256M"), None);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(Some("12Q"), Some("50%"));
    assert!(o.status.success(), "{}", text(&o));
    let o = run(None, Some("0%"));
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--memory-limit `0%`"), "{}", text(&o));
    std::fs::write(&spec, format!("{plain}configuration:\n  thund.memoryLimit: 1G\n")).unwrap();
    let o = run(None, None);
    assert!(o.status.success() && text(&o).contains("COMPLETED"), "{}", text(&o));
}

#[test]
fn explain_shows_the_plans_and_explain_analyze_the_metrics() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    assert!(thund(&["run", "-p", p(&demo)]).status.success());
    let query = "SELECT region, count(*) AS n FROM revenue_by_region GROUP BY region";
    let plans = csv_of(&demo, &format!("EXPLAIN {query}"));
    assert!(plans.starts_with("plan\n"), "{plans}");
    for part in ["== logical_plan ==", "Aggregate: groupBy=", "== physical_plan ==", "AggregateExec"] {
        assert!(plans.contains(part), "{part} is missing from:\n{plans}");
    }
    let analyzed = csv_of(&demo, &format!("explain analyze {query}"));
    assert!(analyzed.contains("AggregateExec") && analyzed.contains("output_rows="), "{analyzed}");
    let o = thund(&["query", "-p", p(&demo), &format!("EXPLAIN FORMATTED {query}")]);
    assert!(!o.status.success() && text(&o).contains("`EXPLAIN FORMATTED` is Spark's"), "{}", text(&o));
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

#[test]
fn a_dlt_project_runs_from_its_settings_lists_what_has_no_meaning_and_init_writes_its_spec() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("orders-dlt");
    copy_tree(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/dlt-orders"), &dir);
    let settings = dir.join("settings.json");
    let text_of = |f: &Path| std::fs::read_to_string(f).unwrap();
    let filled = text_of(&settings)
        .replace("${STORAGE}", &dir.join("storage").to_string_lossy())
        .replace("${DATA}", &dir.join("landing").to_string_lossy());
    std::fs::write(&settings, filled).unwrap();
    let mut gen = std::process::Command::new("python3");
    gen.arg(dir.join("gen_orders.py")).arg(dir.join("landing")).arg("0");
    assert!(gen.status().unwrap().success());

    let o = thund(&["validate", "-p", p(&settings)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("pipeline `orders_dlt` is valid: 6 datasets"), "{out}");
    for note in [
        "settings.json:2:3: `id` has no meaning here",
        "settings.json:9:3: `clusters` has no meaning here",
        "pipelines/orders_bronze.sql:22:1: a `%python` cell is not run",
    ] {
        assert!(out.contains(note), "{note}: {out}");
    }
    let o = thund(&["run", "-p", p(&settings)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = thund(&["query", "-p", p(&settings), "SELECT sum(orders) AS n FROM daily_revenue", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "n\n4\n", "{}", text(&o));

    // The equivalent SDP spec, written once: the same project loads from it.
    let o = thund(&["init", "--from-dlt", p(&settings)]);
    assert!(o.status.success(), "{}", text(&o));
    let spec = text_of(&dir.join("spark-pipeline.yml"));
    assert!(spec.contains("name: orders_dlt") && spec.contains("database: orders"), "{spec}");
    assert!(spec.contains("include: pipelines/orders_bronze.sql") && spec.contains("# Left out:"), "{spec}");
    let o = thund(&["validate", "-p", p(&dir)]);
    assert!(o.status.success() && text(&o).contains("6 datasets"), "{}", text(&o));
    let o = thund(&["init", "--from-dlt", p(&settings)]);
    assert_eq!(o.status.code(), Some(2), "an existing spec is not overwritten: {}", text(&o));

    // A Python notebook that defines no dataset (a data generator) is noted, not run, and the
    // pipeline runs; one that defines a dataset is an error naming it, at its line.
    std::fs::write(
        dir.join("pipelines/more.py"),
        "# Databricks notebook source\nimport dlt\nrows = [(1, 'a')]\nspark.createDataFrame(rows).write.mode('append').json('/tmp/x')\n",
    )
    .unwrap();
    let with_python = text_of(&settings)
        .replace(r#""libraries": ["#, r#""libraries": [{"notebook": {"path": "/Repos/me/pipelines/more"}},"#);
    std::fs::write(&settings, with_python).unwrap();
    let o = thund(&["validate", "-p", p(&settings)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("pipelines/more.py:1:1: a Python library that defines no datasets is not run"),
        "{}",
        text(&o)
    );
    std::fs::write(
        dir.join("pipelines/more.py"),
        "# Databricks notebook source\nimport dlt\n\n# COMMAND ----------\n\n@dlt.table(name=\"extra\")\ndef generated():\n    return spark.range(3)\n",
    )
    .unwrap();
    // Databricks' `dlt` module runs over pyspark's pipelines module: the notebook's table is
    // one more dataset, a materialized view over its batch query, as on Databricks.
    let o = thund(&["validate", "-p", p(&settings)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("pipeline `orders_dlt` is valid: 7 datasets"), "{}", text(&o));
    let o = thund(&["graph", "-p", p(&settings)]);
    assert!(text(&o).contains("orders.extra (materialized view)"), "{}", text(&o));
}

#[test]
fn query_results_in_json_keep_every_column_of_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let sql = "SELECT * FROM VALUES (1, CAST(NULL AS STRING)), (CAST(NULL AS INT), 'b') AS t(a, b)";
    let o = thund(&["query", "-p", p(&demo), sql, "--format", "json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "[{\"a\":1,\"b\":null},{\"a\":null,\"b\":\"b\"}]\n");
}

/// CSV has no nested values: arrays, structs and maps are written as Spark's `show` writes them
/// (the strings below are Spark 4.1.4's `show(truncate=False)` of the same query).
#[test]
fn query_results_in_csv_write_nested_values_as_spark_shows_them() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let sql = "SELECT array(1, NULL, 3) AS a, named_struct('city', 'Oslo', 'zip', NULL, 'inner', named_struct('x', array('p', 'q'))) AS s, \
               map('k', 1, 'j', 2) AS m, array('a,b', 'c\"d') AS q, CAST(NULL AS ARRAY<INT>) AS n, \
               array(DATE'2026-01-02', NULL) AS d, array(TIMESTAMP'2026-01-02 03:04:05') AS t, 7 AS plain";
    let o = thund(&["query", "-p", p(&demo), sql, "--format", "csv"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "a,s,m,q,n,d,t,plain\n\"[1, NULL, 3]\",\"{Oslo, NULL, {[p, q]}}\",\"{k -> 1, j -> 2}\",\"[a,b, c\"\"d]\",,\"[2026-01-02, NULL]\",[2026-01-02 03:04:05],7\n"
    );
}

/// `read_files` and `cloud_files` (Auto Loader) assume a CSV header line when they infer the
/// schema; Spark's `` csv.`path` `` does not, and names the columns `_c0`, `_c1`, ….
#[test]
fn auto_loader_reads_a_csv_header_and_sparks_csv_reader_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: csv\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.csv"), "id,name\n1,x\n2,y\n").unwrap();
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW files AS SELECT * FROM read_files('in/a.csv', format => 'csv');\n\
         CREATE STREAMING TABLE loaded AS SELECT * FROM cloud_files('in', 'csv');\n\
         CREATE MATERIALIZED VIEW declared AS SELECT * FROM read_files('in/a.csv', format => 'csv', schema => 'a STRING, b STRING');\n\
         CREATE MATERIALIZED VIEW spark AS SELECT * FROM csv.`in/a.csv`;\n\
         CREATE STREAMING TABLE headless AS SELECT * FROM STREAM read_files('in', format => 'csv', header => false);\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let csv = |sql: &str| {
        let o = thund(&["query", "-p", p(dir), sql, "--format", "csv"]);
        assert!(o.status.success(), "{sql}: {}", text(&o));
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    assert_eq!(csv("SELECT id, name FROM files ORDER BY id"), "id,name\n1,x\n2,y\n");
    assert_eq!(csv("SELECT id, name FROM loaded ORDER BY id"), "id,name\n1,x\n2,y\n");
    assert_eq!(csv("SELECT a, b FROM declared ORDER BY a"), "a,b\n1,x\n2,y\nid,name\n");
    assert_eq!(csv("SELECT _c0, _c1 FROM spark ORDER BY _c0"), "_c0,_c1\n1,x\n2,y\nid,name\n");
    assert_eq!(csv("SELECT _c0, _c1 FROM headless ORDER BY _c0"), "_c0,_c1\n1,x\n2,y\nid,name\n");
}

/// A rate is never rounded to a whole pass: one failed row in 3,046 is not "100.0%".
#[test]
fn an_expectation_with_one_failed_row_is_not_shown_as_all_passed() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: rate\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(
        dir.join("t.sql"),
        "CREATE MATERIALIZED VIEW t (CONSTRAINT positive EXPECT (id > 0)) AS SELECT id FROM range(3046);\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let line = out.lines().find(|l| l.contains("positive")).unwrap_or_else(|| panic!("{out}"));
    assert!(line.contains(">99.9%") && line.contains("3045/3046"), "{line}");
}

/// Settings as published pipelines ship them: exported as a notebook (a first line `-- Databricks
/// notebook source`), named relative to the working directory (`-p settings.json`), reading a
/// Delta table by a relative path.
#[test]
fn settings_exported_as_a_notebook_and_named_relative_to_the_working_directory_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("settings.json"),
        "-- Databricks notebook source\n{\n  \"name\": \"relative\",\n  \"photon\": true,\n  \"storage\": \"store\",\n\
         \"libraries\": [{\"notebook\": {\"path\": \"copy\"}}]\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("copy.sql"), "CREATE MATERIALIZED VIEW copy AS SELECT sum(x) AS s FROM delta.`data/t`;\n")
        .unwrap();
    let python = std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers")
    });
    let write = "import os, sys, pyarrow as pa\nfrom deltalake import write_deltalake\n\
                 write_deltalake(sys.argv[1], pa.table({'x': [1, 2, 3]}))\nos._exit(0)\n";
    let o = Command::new(python).arg("-c").arg(write).arg(dir.join("data/t")).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_thund")).args(args).current_dir(dir).env("NO_COLOR", "1").output().unwrap()
    };
    let o = run(&["validate", "-p", "settings.json"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("settings.json:4:3: `photon` has no meaning here"), "{}", text(&o));
    let o = run(&["run", "-p", "settings.json"]);
    assert!(o.status.success(), "{}", text(&o));
    let o = run(&["query", "-p", "settings.json", "SELECT s FROM copy", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "s\n6\n", "{}", text(&o));
    assert!(dir.join("store/tables").is_dir(), "the storage is relative to the settings' folder");
}

#[test]
fn thund_test_passes_on_the_sample_fails_on_broken_sql_and_refuses_a_broken_test_file() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let o = thund(&["test", "-p", p(&demo)]);
    assert!(o.status.success(), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert_eq!(out.lines().filter(|l| l.starts_with("PASS ")).count(), 6, "{out}");
    assert!(out.contains("6 passed, 0 failed"), "{out}");
    assert!(!demo.join(".thund").exists(), "tests never write the project's storage");

    // `sum` turned into `min`: the revenue test fails, saying which rows differ; JUnit says so too.
    let gold = demo.join("transformations/03_gold.sql");
    let sql = std::fs::read_to_string(&gold).unwrap();
    std::fs::write(&gold, sql.replace("sum(amount) AS revenue", "min(amount) AS revenue")).unwrap();
    let junit = tmp.path().join("junit.xml");
    let o = thund(&["test", "-p", p(&demo), "--junit", p(&junit)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(out.contains("FAIL revenue_by_region sums each region's orders per month"), "{out}");
    assert!(
        out.contains("missing rows:") && out.contains("{month: 1, orders: 2, region: \"North\", revenue: 40.0"),
        "{out}"
    );
    assert!(out.contains("extra rows:") && out.contains("revenue: 10.0"), "{out}");
    assert!(out.contains("5 passed, 1 failed"), "{out}");
    let xml = std::fs::read_to_string(&junit).unwrap();
    assert!(xml.contains("tests=\"6\" failures=\"1\"") && xml.contains("<failure message="), "{xml}");

    // --filter runs only the tests it names.
    let o = thund(&["test", "-p", p(&demo), "--filter", "orders_clean"]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("1 passed, 0 failed"), "{}", text(&o));

    // A broken test file: every problem at its line, exit 2.
    std::fs::write(
        demo.join("tests/broken.yml"),
        "tests:\n  - name: x\n    dataset: nowhere\n    expect: {rows: []}\n  - name: y\n    dataset: customers\n    inputs:\n      nothing: []\n    expect: {rows: []}\n",
    )
    .unwrap();
    let o = thund(&["test", "-p", p(&demo)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    assert!(out.contains("tests/broken.yml:3:1") && out.contains("no dataset `nowhere`"), "{out}");
    assert!(out.contains("tests/broken.yml:8:1") && out.contains("input `nothing`"), "{out}");
}

#[test]
fn thund_test_feeds_streams_batch_by_batch_and_checks_expectation_counts_and_auto_cdc() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: t\nlibraries:\n  - glob:\n      include: sql/**\n").unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(
        dir.join("sql/a.sql"),
        "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE checked (\n  CONSTRAINT positive EXPECT (v > 0) ON VIOLATION DROP ROW,\n  \
         CONSTRAINT small EXPECT (v < 100)\n) AS SELECT id, v FROM STREAM(raw);\n\
         CREATE STREAMING TABLE current FLOW AUTO CDC FROM STREAM(raw) KEYS (id) SEQUENCE BY seq COLUMNS * EXCEPT (seq);\n",
    )
    .unwrap();
    let tests = "tests:
  - name: checked drops what is not positive, batch by batch
    dataset: checked
    batches:
      - inputs: {raw: [{id: 1, v: 5, seq: 1}, {id: 2, v: -1, seq: 1}]}
        expect:
          rows: [{id: 1, v: 5}]
          expectations: {positive: {passed: 1, failed: 1, dropped: 1}}
      - inputs: {raw: [{id: 3, v: 500, seq: 1}]}
        expect:
          rows: [{id: 1, v: 5}, {id: 3, v: 500}]
          expectations: {small: {passed: 0, failed: 1, dropped: 0}}
  - name: current keeps each key's latest change whatever the arrival order
    dataset: current
    batches:
      - inputs: {in: [{id: 1, v: 1, seq: 2}, {id: 1, v: 9, seq: 1}]}
        expect: {rows: [{id: 1, v: 1}]}
      - inputs: {in: [{id: 1, v: 7, seq: 3}, {id: 2, v: 4, seq: 1}, {id: 1, v: 0, seq: 0}]}
        expect: {rows: [{id: 1, v: 7}, {id: 2, v: 4}]}
";
    std::fs::write(dir.join("tests/t.yml"), tests).unwrap();
    let o = thund(&["test", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 passed, 0 failed"), "{}", text(&o));

    // A wrong count fails the test, naming the batch and the expectation.
    std::fs::write(
        dir.join("tests/t.yml"),
        tests.replace("{small: {passed: 0, failed: 1", "{small: {passed: 0, failed: 2"),
    )
    .unwrap();
    let o = thund(&["test", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("batch 2: expectation `small`: 1 rows failed, expected 2"), "{}", text(&o));
}

/// A project with `sql` as `sql/a.sql` and a `tests/fixtures/` folder, for `thund test`.
fn unit_tested_project(sql: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: t\nlibraries:\n  - glob:\n      include: sql/**\n").unwrap();
    for d in ["sql", "tests/fixtures"] {
        std::fs::create_dir_all(dir.join(d)).unwrap();
    }
    std::fs::write(dir.join("sql/a.sql"), sql).unwrap();
    tmp
}

#[test]
fn thund_test_takes_inputs_from_csv_and_json_files_and_closes_windows_batch_by_batch() {
    let tmp = unit_tested_project(
        "CREATE MATERIALIZED VIEW prices AS SELECT * FROM read_files('data/prices.csv', format => 'csv', header => true);\n\
         CREATE MATERIALIZED VIEW priced AS SELECT o.id, o.qty * p.price AS total FROM orders o JOIN prices p ON o.sku = p.sku;\n\
         CREATE MATERIALIZED VIEW orders AS SELECT * FROM json.`data/orders.json`;\n\
         CREATE STREAMING TABLE events AS SELECT id, CAST(ts AS TIMESTAMP) AS ts FROM STREAM read_files('ev', format => 'json');\n\
         CREATE STREAMING TABLE per_window AS SELECT window.start AS ws, count(*) AS n\n  \
           FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 1 MINUTE GROUP BY window(ts, '5 minutes');\n",
    );
    let dir = tmp.path();
    std::fs::write(dir.join("tests/fixtures/prices.csv"), "sku,price\na,2.5\n\"b,2\",10\n").unwrap();
    std::fs::write(
        dir.join("tests/fixtures/orders.jsonl"),
        "{\"id\": 1, \"sku\": \"a\", \"qty\": 4}\n{\"id\": 2, \"sku\": \"b,2\", \"qty\": 1}\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("tests/t.yml"),
        "tests:
  - name: priced multiplies quantities by prices from the fixtures
    dataset: priced
    inputs:
      prices: {csv: tests/fixtures/prices.csv}
      orders: {json: tests/fixtures/orders.jsonl}
    expect:
      rows: [{id: 1, total: 10.0}, {id: 2, total: 10}]
  - name: a window is written once the watermark passes its end
    dataset: per_window
    batches:
      - inputs:
          events:
            schema: ts TIMESTAMP
            rows: [{id: 1, ts: '2026-06-01 10:00:00'}, {id: 2, ts: '2026-06-01 10:02:00'}, {id: 3, ts: '2026-06-01 10:06:30'}]
        expect: {rows: [{ws: '2026-06-01 10:00:00', n: 2}]}
      - inputs:
          events:
            schema: ts TIMESTAMP
            rows: [{id: 4, ts: '2026-06-01 10:12:00'}, {id: 5, ts: '2026-06-01 10:01:00'}]
        expect: {rows: [{ws: '2026-06-01 10:00:00', n: 2}, {ws: '2026-06-01 10:05:00', n: 1}]}
",
    )
    .unwrap();
    let o = thund(&["test", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("2 passed, 0 failed"), "{}", text(&o));
}

#[test]
fn thund_test_takes_arrays_and_structs_as_inputs_and_expects_them() {
    let tmp = unit_tested_project(
        "CREATE MATERIALIZED VIEW customers AS SELECT * FROM json.`data/customers.json`;\n\
         CREATE MATERIALIZED VIEW cities AS SELECT id, address.city AS city, cardinality(tags) AS n_tags, address FROM customers;\n\
         CREATE STREAMING TABLE orders AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE first_items AS SELECT id, items[0] AS first, shipping.zip AS zip, items FROM STREAM(orders);\n",
    );
    let dir = tmp.path();
    std::fs::write(
        dir.join("tests/fixtures/customers.jsonl"),
        "{\"id\": 2, \"tags\": [\"x\"], \"address\": {\"city\": \"Oslo\", \"zip\": \"0150\"}}\n",
    )
    .unwrap();
    let tests = "tests:
  - name: nested inline and JSON-lines rows
    dataset: cities
    inputs:
      customers:
        - {id: 1, tags: [a, b, c], address: {city: Reykjavík, zip: '101'}}
    expect:
      rows: [{id: 1, city: Reykjavík, n_tags: 3, address: {zip: '101', city: Reykjavík}}]
  - name: from a JSON-lines file
    dataset: cities
    inputs:
      customers: {json: tests/fixtures/customers.jsonl}
    expect:
      rows: [{id: 2, city: Oslo, n_tags: 1}]
  - name: a stream of nested rows, batch by batch
    dataset: first_items
    batches:
      - inputs: {orders: [{id: 1, items: [10, 20], shipping: {zip: '9000'}}]}
        expect: {rows: [{id: 1, first: 10, zip: '9000', items: [10, 20]}]}
      - inputs: {orders: [{id: 2, items: [30], shipping: {zip: '9001'}}]}
        expect: {rows: [{id: 1, first: 10, items: [10, 20]}, {id: 2, first: 30, items: [30]}]}
";
    std::fs::write(dir.join("tests/t.yml"), tests).unwrap();
    let o = thund(&["test", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("3 passed, 0 failed"), "{}", text(&o));

    // A nested value that differs fails, showing the list as written.
    std::fs::write(dir.join("tests/t.yml"), tests.replace("items: [30]}]}", "items: [31]}]}")).unwrap();
    let o = thund(&["test", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("missing rows:") && text(&o).contains("items: [31]"), "{}", text(&o));
}

/// A test of a sink writes its rows under the test's scratch storage; the project's real sinks
/// (a parquet folder and a Delta table) keep exactly the files they had.
#[test]
fn thund_test_never_writes_into_the_projects_real_sinks() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: t\nlibraries:\n  - glob:\n      include: sql/**\n").unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::create_dir_all(dir.join("data")).unwrap();
    std::fs::create_dir_all(dir.join("tests")).unwrap();
    std::fs::write(dir.join("data/a.json"), "{\"id\": 100}\n").unwrap();
    std::fs::write(
        dir.join("sql/a.sql"),
        "CREATE STREAMING TABLE orders AS SELECT * FROM STREAM read_files('data', format => 'json');\n\
         CREATE SINK out USING parquet OPTIONS (path 'out');\n\
         CREATE FLOW to_out AS INSERT INTO out BY NAME SELECT id FROM STREAM(orders);\n\
         CREATE SINK out_delta USING delta OPTIONS (path 'out_delta');\n\
         CREATE FLOW to_delta AS INSERT INTO out_delta BY NAME SELECT id FROM STREAM(orders);\n",
    )
    .unwrap();
    // The real sinks get their rows from a real run first.
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let snapshot = |folder: &str| -> Vec<(String, Vec<u8>)> {
        let mut files = Vec::new();
        let mut todo = vec![dir.join(folder)];
        while let Some(d) = todo.pop() {
            for e in std::fs::read_dir(&d).unwrap().flatten() {
                if e.path().is_dir() {
                    todo.push(e.path());
                } else {
                    files.push((e.path().display().to_string(), std::fs::read(e.path()).unwrap()));
                }
            }
        }
        files.sort();
        files
    };
    let (parquet, delta) = (snapshot("out"), snapshot("out_delta"));
    assert!(!parquet.is_empty() && !delta.is_empty());
    std::fs::write(
        dir.join("tests/sinks.yml"),
        "tests:\n  - name: the parquet sink gets the ids\n    dataset: out\n    inputs:\n      orders:\n        - {id: 1}\n    \
         expect:\n      rows:\n        - {id: 1}\n  - name: the delta sink gets the ids\n    dataset: out_delta\n    inputs:\n      \
         orders:\n        - {id: 2}\n    expect:\n      rows:\n        - {id: 2}\n",
    )
    .unwrap();
    let o = thund(&["test", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("2 passed"), "{}", text(&o));
    assert_eq!(snapshot("out"), parquet, "the test wrote into the real parquet sink");
    assert_eq!(snapshot("out_delta"), delta, "the test wrote into the real Delta sink");
}

/// `thund test` leaves no scratch folder behind (they live in RAM where there is a RAM file
/// system): a killed run's folder is removed by the next run, a live run's is left alone, and
/// Ctrl-C removes the run's own before it exits.
#[test]
fn thund_test_leaves_no_scratch_folder_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let root = tmp.path().join("scratch");
    std::fs::create_dir_all(root.join("thund-test-dead")).unwrap();
    std::fs::write(root.join("thund-test-dead/.lock"), "").unwrap();
    std::fs::write(root.join("thund-test-dead/table.parquet"), "rows").unwrap();
    std::fs::create_dir_all(root.join("thund-test-live")).unwrap();
    let live = std::fs::File::create(root.join("thund-test-live/.lock")).unwrap();
    live.try_lock().unwrap();
    let scratch_folders = || -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&root)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with("thund-test-"))
            .collect();
        v.sort();
        v
    };
    let o = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["test", "-p", p(&demo)])
        .env("THUND_TEST_SCRATCH", &root)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(scratch_folders(), ["thund-test-live"], "the dead run's folder goes, the live one's stays");

    // Enough tests to be interrupted in the middle of them.
    let sample = std::fs::read_to_string(demo.join("tests/sample.yml")).unwrap();
    let (head, cases) = sample.split_once("tests:\n").unwrap();
    let many: String = (0..40).map(|i| cases.replace("  - name: ", &format!("  - name: {i} "))).collect();
    std::fs::write(demo.join("tests/sample.yml"), format!("{head}tests:\n{many}")).unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["test", "-p", p(&demo)])
        .env("THUND_TEST_SCRATCH", &root)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while scratch_folders().len() < 2 {
        assert!(child.try_wait().unwrap().is_none(), "the run ended before its scratch folder appeared");
        assert!(started.elapsed().as_secs() < 30, "no scratch folder appeared");
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!stdout.contains(" passed, "), "the run finished before it was interrupted: {stdout}");
    assert_eq!(out.status.code(), Some(130), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    let left: Vec<String> = walk(&root).into_iter().filter(|p| !p.contains("thund-test-live")).collect();
    assert_eq!(scratch_folders(), ["thund-test-live"], "Ctrl-C left the run's scratch folder: {left:?}");
    drop(live);
}

fn walk(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        out.push(e.path().display().to_string());
        if e.path().is_dir() {
            out.extend(walk(&e.path()));
        }
    }
    out
}

/// A file source's path may hold wildcards, as Spark's readers take them: in batch and as a
/// stream, only the files the pattern reads (a folder that matches stands for its files); a
/// stream takes the new ones run by run, a materialized view over a pattern sees a new file; a
/// pattern that matches nothing is an error naming it.
#[test]
fn file_sources_read_the_files_their_wildcards_match() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sql_project(dir, "g");
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW rides AS SELECT count(*) AS n, sum(km) AS km \
         FROM read_files('landing/rides/*.csv', format => 'csv');\n\
         CREATE STREAMING TABLE events AS SELECT * FROM STREAM read_files('landing/2026-*/part-*.json', format => 'json');\n",
    )
    .unwrap();
    let write = |rel: &str, text: &str| {
        let path = dir.join("landing").join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write("rides/a.csv", "id,km\n1,10\n2,20\n");
    write("rides/notes.txt", "id,km\n9,900\n");
    write("2026-01/part-0.json", "{\"id\": 1}\n");
    write("2026-01/other.json", "{\"id\": 100}\n");
    write("2025-12/part-0.json", "{\"id\": 200}\n");
    let query = |sql: &str| csv_of(dir, sql);
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(query("SELECT * FROM rides"), "n,km\n2,30\n");
    assert_eq!(query("SELECT id FROM events ORDER BY id"), "id\n1\n");

    write("rides/b.csv", "id,km\n3,5\n");
    write("2026-02/part-0.json", "{\"id\": 2}\n");
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(query("SELECT * FROM rides"), "n,km\n3,35\n");
    assert_eq!(query("SELECT id FROM events ORDER BY id"), "id\n1\n2\n");

    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW none AS SELECT * FROM read_files('landing/rides/*.parquet', format => 'parquet');\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("rides/*.parquet` matches no file"), "{}", text(&o));
}

/// Tables a pipeline reads from outside itself (`samples.nyctaxi.trips`) are read from the local
/// data `thund.yml` binds them to, in batch and as a stream; `validate` lists each binding, says
/// where to bind an unbound one, and refuses a binding of one of the pipeline's own datasets.
#[test]
fn tables_from_outside_the_pipeline_read_the_local_data_bound_to_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sql_project(dir, "b");
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW trip_stats AS SELECT count(*) AS n, sum(km) AS km FROM samples.nyctaxi.trips;\n\
         CREATE STREAMING TABLE events AS SELECT id FROM STREAM(main.raw.events);\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("data/events")).unwrap();
    std::fs::write(dir.join("data/trips.csv"), "trip_id,km\n1,2.5\n2,4.0\n").unwrap();
    std::fs::write(dir.join("data/events/0.json"), "{\"id\": 1}\n").unwrap();

    let o = thund(&["validate", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("`samples.nyctaxi.trips` is not defined in this pipeline"), "{}", text(&o));
    assert!(text(&o).contains("bound in thund.yml"), "{}", text(&o));

    std::fs::write(
        dir.join("thund.yml"),
        "tables:\n  samples.nyctaxi.trips:\n    path: data/trips.csv\n  main.raw.events:\n    path: data/events\n    format: json\n",
    )
    .unwrap();
    let o = thund(&["validate", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(
        text(&o).contains("thund.yml:2:1: `samples.nyctaxi.trips` is read from `data/trips.csv` (csv)"),
        "{}",
        text(&o)
    );
    let query = |sql: &str| csv_of(dir, sql);
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(query("SELECT * FROM trip_stats"), "n,km\n2,6.5\n");
    std::fs::write(dir.join("data/events/1.json"), "{\"id\": 2}\n").unwrap();
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(query("SELECT id FROM events ORDER BY id"), "id\n1\n2\n");

    std::fs::write(dir.join("thund.yml"), "tables:\n  trip_stats:\n    path: data/trips.csv\n").unwrap();
    let o = thund(&["validate", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("thund.yml:2:1") && text(&o).contains("is a dataset of this pipeline"), "{}", text(&o));
}

/// JSON files are read as Spark's reader reads them (the rows below are what Spark 4.1.4's
/// reader gives for the same files): a line holding an array is a row per object in it; with
/// `multiLine` a file is one value, an array of objects a row per object; Auto Loader streams
/// them the same way. A pretty-printed array read without `multiLine` is an error that says so.
#[test]
fn json_arrays_and_multi_line_files_are_read_as_sparks_reader_reads_them() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sql_project(dir, "j");
    std::fs::create_dir_all(dir.join("in/pretty")).unwrap();
    std::fs::create_dir_all(dir.join("in/lines")).unwrap();
    std::fs::write(dir.join("in/pretty/a.json"), "[\n  {\"a\": 1, \"b\": \"x\"},\n  {\"a\": 2, \"b\": \"y\"}\n]\n")
        .unwrap();
    std::fs::write(dir.join("in/lines/a.json"), "[{\"a\": 1, \"b\": \"x\"}, {\"a\": 2}]\n{\"a\": 3, \"b\": \"z\"}\n")
        .unwrap();
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW pretty AS SELECT * FROM read_files('in/pretty', format => 'json', multiLine => 'true');\n\
         CREATE MATERIALIZED VIEW lines AS SELECT * FROM json.`in/lines/a.json`;\n\
         CREATE MATERIALIZED VIEW first_value AS SELECT * FROM read_files('in/lines', format => 'json', multiLine => 'true');\n\
         CREATE STREAMING TABLE landed AS SELECT * FROM STREAM(cloud_files('in/lines', 'json', map('cloudFiles.inferColumnTypes', 'true')));\n",
    )
    .unwrap();
    let query = |sql: &str| csv_of(dir, sql);
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(query("SELECT * FROM pretty ORDER BY a"), "a,b\n1,x\n2,y\n");
    assert_eq!(query("SELECT * FROM lines ORDER BY a"), "a,b\n1,x\n2,\n3,z\n");
    assert_eq!(query("SELECT * FROM first_value ORDER BY a"), "a,b\n1,x\n2,\n");
    assert_eq!(query("SELECT a, b, _rescued_data FROM landed ORDER BY a"), "a,b,_rescued_data\n1,x,\n2,,\n3,z,\n");

    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW pretty AS SELECT * FROM read_files('in/pretty', format => 'json');\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("is not a JSON record") && text(&o).contains("multiLine"), "{}", text(&o));
}

/// Auto Loader gives a Parquet stream its rescued-data column, as it gives a JSON one: NULL in
/// every row, as every row of a Parquet file fits the columns it carries.
#[test]
fn auto_loader_parquet_streams_have_a_rescued_data_column() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sql_project(dir, "q");
    // Parquet files to land: the ones a materialized view is stored in.
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW src AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(id, v);\n",
    )
    .unwrap();
    assert!(thund(&["run", "-p", p(dir)]).status.success());
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW src AS SELECT * FROM VALUES (1, 'a'), (2, 'b') AS t(id, v);\n\
         CREATE STREAMING LIVE TABLE landed AS SELECT * EXCEPT (_rescued_data), _rescued_data IS NULL AS fits \
         FROM cloud_files('store/tables/spark_catalog/default/src', 'parquet');\n",
    )
    .unwrap();
    let o = thund(&["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    let o = thund(&["query", "-p", p(dir), "SELECT * FROM landed ORDER BY id", "--format", "csv"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout), "id,v,fits\n1,a,true\n2,b,true\n", "{}", text(&o));
}

/// Databricks' `read_files` adds Auto Loader's `_rescued_data` where it infers the schema (JSON,
/// CSV, Parquet; published notebooks `SELECT * EXCEPT (_rescued_data) FROM read_files(…)`), in
/// batch and as a stream; a JSON record that does not fit is kept there. An SDP project's
/// `read_files` (the Spark backend's reader) and a Python DataFrame reader add none.
#[test]
fn databricks_read_files_has_a_rescued_data_column_where_it_infers_the_schema() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::create_dir_all(dir.join("in/json")).unwrap();
    std::fs::create_dir_all(dir.join("in/csv")).unwrap();
    std::fs::create_dir_all(dir.join("in/fits")).unwrap();
    std::fs::write(dir.join("in/fits/a.json"), "{\"id\": 1, \"n\": 2}\n").unwrap();
    std::fs::write(dir.join("in/json/a.json"), "{\"id\": 1, \"n\": 2}\n{\"id\": 2, \"n\": {\"deep\": 1}}\n").unwrap();
    std::fs::write(dir.join("in/csv/a.csv"), "id,n\n1,x\n").unwrap();
    let sql = "CREATE MATERIALIZED VIEW src AS SELECT * FROM VALUES (1, 'a') AS t(id, v);\n\
               CREATE MATERIALIZED VIEW j AS SELECT * FROM read_files('in/json', format => 'json', schema => 'id BIGINT, n BIGINT', rescuedDataColumn => '_rescued_data');\n\
               CREATE MATERIALIZED VIEW inferred AS SELECT * FROM read_files('in/fits', format => 'json');\n\
               CREATE MATERIALIZED VIEW c AS SELECT * EXCEPT (_rescued_data) FROM read_files('in/csv', format => 'csv');\n\
               CREATE STREAMING TABLE s AS SELECT id, _rescued_data IS NULL AS fits FROM STREAM read_files('in/csv', format => 'csv');\n\
               CREATE MATERIALIZED VIEW declared AS SELECT * FROM read_files('in/csv', format => 'csv', header => 'true', schema => 'id INT, n STRING');\n";
    std::fs::write(dir.join("p.sql"), sql).unwrap();
    let settings = r#"{"name": "r", "storage": "store", "libraries": [{"file": {"path": "p.sql"}}]}"#;
    std::fs::write(dir.join("settings.json"), settings).unwrap();
    let spec = dir.join("settings.json");
    let o = thund(&["run", "-p", p(&spec)]);
    assert!(o.status.success(), "{}", text(&o));
    let query = |sql: &str| {
        let o = thund(&["query", "-p", p(&spec), sql, "--format", "csv"]);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    assert_eq!(
        query("SELECT id, n, _rescued_data FROM j ORDER BY id"),
        format!(
            "id,n,_rescued_data\n1,2,\n2,,\"{{\"\"n\"\":{{\"\"deep\"\":1}},\"\"_file_path\"\":\"\"{}\"\"}}\"\n",
            dir.join("in/json/a.json").display()
        )
    );
    assert_eq!(query("SELECT * FROM inferred LIMIT 0"), "id,n,_rescued_data\n");
    assert_eq!(query("SELECT * FROM c"), "id,n\n1,x\n");
    assert_eq!(query("SELECT * FROM s"), "id,fits\n1,true\n");
    assert_eq!(query("SELECT * FROM declared"), "id,n\n1,x\n");
    // Parquet files: the ones a materialized view is stored in.
    std::fs::write(
        dir.join("p.sql"),
        format!("{sql}CREATE MATERIALIZED VIEW pq AS SELECT * FROM read_files('store/tables/spark_catalog/default/src', format => 'parquet');\n"),
    )
    .unwrap();
    assert!(thund(&["run", "-p", p(&spec)]).status.success());
    assert_eq!(query("SELECT * FROM pq"), "id,v,_rescued_data\n1,a,\n");

    // The same files in an SDP project: no rescued-data column unless asked.
    sql_project(dir, "r");
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW inferred AS SELECT * FROM read_files('in/fits', format => 'json');\n",
    )
    .unwrap();
    assert!(thund(&["run", "-p", p(dir)]).status.success());
    assert_eq!(csv_of(dir, "SELECT * FROM inferred LIMIT 0"), "id,n\n");
}

/// `validate` lists what a native run would refuse before reading any data, all at once, each at
/// its line: a function neither Spark nor the engine has (Databricks' `ai_classify`), a file
/// source that does not exist or whose wildcard matches nothing. A Spark function the engine
/// does not run is a note (the Spark backend runs it).
#[test]
fn validate_finds_what_a_run_would_refuse_before_reading_data() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: v\nlibraries:\n  - glob:\n      include: '*.sql'\n").unwrap();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.csv"), "x\n1\n").unwrap();
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW good AS SELECT x FROM read_files('in', format => 'csv');\n\
         CREATE MATERIALIZED VIEW tagged AS\n  SELECT x, ai_classify(x, array('a', 'b')) AS label FROM good;\n\
         CREATE MATERIALIZED VIEW gone AS SELECT * FROM read_files('landing/rides', format => 'json');\n\
         CREATE STREAMING TABLE none AS SELECT * FROM STREAM read_files('in/*.parquet', format => 'parquet');\n\
         CREATE MATERIALIZED VIEW noisy AS SELECT x, randn(1) AS r FROM good;\n",
    )
    .unwrap();
    let o = thund(&["validate", "-p", p(dir)]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let out = text(&o);
    for wanted in [
        "p.sql:3:13",
        "unknown function `ai_classify`",
        "json source `landing/rides` does not exist",
        "parquet source `in/*.parquet` matches no file",
    ] {
        assert!(out.contains(wanted), "{wanted}: {out}");
    }
    std::fs::write(
        dir.join("p.sql"),
        "CREATE MATERIALIZED VIEW good AS SELECT x, randn(1) AS r FROM read_files('in', format => 'csv');\n",
    )
    .unwrap();
    let o = thund(&["validate", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("Spark's `randn` is not run by the embedded engine"), "{}", text(&o));
}

/// `thund query` writes values as Spark shows them (the table below is Spark 4.1.4's `show()` of
/// the same query): timestamps without a `T` or zone and without trailing zeros, intervals in
/// Spark's words, a VARIANT as its JSON, a map as `{k -> v}`; JSON output takes maps whose keys
/// are not strings; `--schema` prints the columns' types; Parquet and Arrow files keep them.
#[test]
fn query_results_are_written_as_spark_shows_them_or_typed_to_a_file() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = tmp.path().join("demo");
    assert!(thund(&["init", p(&demo)]).status.success());
    let sql = "SELECT TIMESTAMP'2021-01-01 00:05:00' AS ts, TIMESTAMP'2021-01-01 00:05:00.120' AS ts2, \
               TIMESTAMP_NTZ'2021-01-01 00:05:00' AS ntz, map(1, 'a') AS m, parse_json('{\"a\": [1, 2]}') AS v, \
               INTERVAL '1 02:03:04.5' DAY TO SECOND AS i, -INTERVAL '1 02:03:04' DAY TO SECOND AS ni, \
               INTERVAL '1-2' YEAR TO MONTH AS ym, -INTERVAL '1-2' YEAR TO MONTH AS nym, DATE'2021-01-02' AS d";
    let run = |args: &[&str]| {
        let mut all = vec!["query", "-p", p(&demo), sql];
        all.extend_from_slice(args);
        let o = thund(&all);
        assert!(o.status.success(), "{}", text(&o));
        String::from_utf8_lossy(&o.stdout).to_string()
    };
    let spark_show = "|2021-01-01 00:05:00|2021-01-01 00:05:00.12|2021-01-01 00:05:00|{1 -> a}|{\"a\":[1,2]}|\
                      INTERVAL '1 02:03:04.5' DAY TO SECOND|INTERVAL '-1 02:03:04' DAY TO SECOND|\
                      INTERVAL '1-2' YEAR TO MONTH|INTERVAL '-1-2' YEAR TO MONTH|2021-01-02|";
    let table = run(&[]);
    let row = table.lines().nth(3).unwrap();
    let cells: String = row.split('|').map(str::trim).collect::<Vec<_>>().join("|");
    assert_eq!(cells, spark_show, "{table}");
    let csv = run(&["--format", "csv"]);
    assert!(csv.contains("2021-01-01 00:05:00.12,") && csv.contains(",{1 -> a},"), "{csv}");
    let json = run(&["--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v[0]["m"], serde_json::json!({"1": "a"}), "{json}");
    assert_eq!(
        (v[0]["ts"].as_str(), v[0]["v"].as_str()),
        (Some("2021-01-01 00:05:00"), Some("{\"a\":[1,2]}")),
        "{json}"
    );
    let schema = run(&["--schema"]);
    for line in ["ts: timestamp\n", "m: map<int,string>\n", "v: variant\n", "i: interval day to second NOT NULL\n"] {
        assert!(schema.contains(line), "{line}: {schema}");
    }

    // Typed: written, and read back with their types.
    let file = tmp.path().join("r.parquet");
    let typed = "SELECT 1 AS id, DATE'2021-01-02' AS d, 2.50BD AS x";
    let o = thund(&["query", "-p", p(&demo), typed, "--format", "parquet", "-o", p(&file)]);
    assert!(o.status.success(), "{}", text(&o));
    let back = format!("SELECT * FROM parquet.`{}`", file.display());
    let o = thund(&["query", "-p", p(&demo), &back, "--schema"]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "id: int NOT NULL\nd: date\nx: decimal(3,2) NOT NULL\n",
        "{}",
        text(&o)
    );
    let file = tmp.path().join("r.arrow");
    let o = thund(&["query", "-p", p(&demo), "SELECT 1 AS id", "--format", "arrow", "-o", p(&file)]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(std::fs::read(&file).unwrap()[..6], *b"ARROW1");
    let o = thund(&["query", "-p", p(&demo), "SELECT 1", "--format", "parquet"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--output FILE"), "{}", text(&o));
}

/// `thund explain` says, before a run, how each materialized view's next refresh would go and
/// what keeps it from being incremental; it writes nothing. A name that is no view is a usage
/// error; a view whose refresh would fail (STRICT, not incremental) makes it exit 1.
#[test]
fn explain_says_how_each_view_would_refresh_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    sql_project(dir, "x");
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/a.json"), "{\"k\": \"a\", \"x\": 1}\n").unwrap();
    std::fs::write(
        dir.join("p.sql"),
        "CREATE STREAMING TABLE st AS SELECT * FROM STREAM read_files('in', format => 'json', schema => 'k STRING, x BIGINT');\n\
         CREATE MATERIALIZED VIEW totals AS SELECT k, sum(x) AS s FROM st GROUP BY k;\n\
         CREATE MATERIALIZED VIEW kept AS SELECT k FROM st WHERE x > 0;\n\
         CREATE MATERIALIZED VIEW paired REFRESH POLICY FULL AS SELECT a.k FROM st a FULL JOIN st b ON a.k = b.k;\n",
    )
    .unwrap();
    let explain = |args: &[&str]| {
        let mut all = vec!["explain", "-p", p(dir)];
        all.extend_from_slice(args);
        thund(&all)
    };
    // Never run: every view is built whole first.
    let o = explain(&[]);
    assert!(o.status.success(), "{}", text(&o));
    let out = text(&o);
    assert!(
        out.contains(
            "spark_catalog.default.totals (p.sql:2:1), REFRESH POLICY AUTO\n  next refresh: complete recompute"
        ),
        "{out}"
    );
    assert!(out.contains("CHANGE_SET_MISSING: `spark_catalog.default.st` has not been written yet"), "{out}");
    assert!(out.contains("REFRESH POLICY FULL"), "{out}");
    assert!(!dir.join("store").exists(), "explain wrote {:?}", std::fs::read_dir(dir.join("store")).map(|d| d.count()));

    assert!(thund(&["run", "-p", p(dir)]).status.success());
    // What a view's next refresh would take is decided by its inputs as they stand: here the
    // streaming table takes new rows first, and the views are left for later.
    std::fs::write(dir.join("in/b.json"), "{\"k\": \"b\", \"x\": 2}\n").unwrap();
    assert!(thund(&["run", "-p", p(dir), "--refresh", "st"]).status.success());
    let o = explain(&["totals", "kept"]);
    let out = text(&o);
    assert!(o.status.success(), "{out}");
    assert!(out.contains("totals (p.sql:2:1), REFRESH POLICY AUTO\n  next refresh: group aggregate"), "{out}");
    assert!(out.contains("kept (p.sql:3:1), REFRESH POLICY AUTO\n  next refresh: append-only"), "{out}");
    assert!(!out.contains("paired"), "{out}");
    // Explaining changed nothing: the run after it appends and merges as said.
    let o = thund(&["run", "-p", p(dir)]);
    let out = text(&o);
    assert!(out.lines().any(|l| l.contains("default.totals") && l.ends_with("group aggregate")), "{out}");
    assert!(out.lines().any(|l| l.contains("default.kept") && l.ends_with("append-only")), "{out}");
    let o = explain(&["totals"]);
    assert!(text(&o).contains("next refresh: no-op"), "{}", text(&o));

    let o = explain(&["nope", "st"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        text(&o).contains("no materialized view named `nope`, `st` (this pipeline's: totals, kept, paired)"),
        "{}",
        text(&o)
    );
    std::fs::write(
        dir.join("q.sql"),
        "CREATE MATERIALIZED VIEW strict_pair REFRESH POLICY INCREMENTAL STRICT AS SELECT a.k FROM st a FULL JOIN st b ON a.k = b.k;\n",
    )
    .unwrap();
    let o = explain(&["strict_pair"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    assert!(text(&o).contains("a refresh would fail: q.sql:1:1:"), "{}", text(&o));
}
