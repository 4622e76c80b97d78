//! The event log as users meet it: a Delta table under `storage` that an independent reader (the
//! Python `deltalake` package) reads, queried with SQL through `thund query`, filtered by `thund
//! events`, bounded by its retention, and a failure to write it said, never silent.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn thund(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_thund"));
    c.args(args).arg("-p").arg(dir).env("NO_COLOR", "1");
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn ok(o: Output) -> String {
    assert!(o.status.success(), "{}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn jsonl(out: &str) -> Vec<serde_json::Value> {
    out.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn sample(dir: &Path) -> std::path::PathBuf {
    let demo = dir.join("demo");
    let o = Command::new(env!("CARGO_BIN_EXE_thund")).arg("init").arg(&demo).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    demo
}

/// Rows of the Delta table at `table` as the Python `deltalake` package reads it: one JSON
/// object per row, `details` parsed.
fn python_rows(table: &Path) -> Vec<serde_json::Value> {
    let python = std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers")
    });
    // `os._exit` after the output: the deltalake extension's runtime can abort while the
    // interpreter tears down ("terminate called without an active exception"), after the rows
    // were read and printed whole.
    let script = "import json, os, sys\nfrom deltalake import DeltaTable\n\
                  for r in DeltaTable(sys.argv[1]).to_pyarrow_table().to_pylist():\n\
                  \x20   r['details'] = json.loads(r['details']); r['timestamp'] = str(r['timestamp'])\n\
                  \x20   print(json.dumps(r))\n\
                  sys.stdout.flush()\nos._exit(0)\n";
    let o = Command::new(python).arg("-c").arg(script).arg(table).output().unwrap();
    assert!(o.status.success(), "{}", text(&o));
    jsonl(&String::from_utf8_lossy(&o.stdout))
}

#[test]
fn the_event_log_is_a_delta_table_that_sql_and_filters_read() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = sample(tmp.path());
    ok(thund(&demo, &["run"], &[]));
    ok(thund(&demo, &["run", "--full-refresh-all"], &[]));

    // An independent reader sees every event `thund events --all` prints, column for column.
    let all = jsonl(&ok(thund(&demo, &["events", "--all", "--format", "jsonl"], &[])));
    let mut read = python_rows(&demo.join(".thund/event_log"));
    assert_eq!(read.len(), all.len());
    let by_id = |rows: &[serde_json::Value], id: &serde_json::Value| rows.iter().find(|r| &r["id"] == id).cloned();
    for e in &all {
        let r = by_id(&read, &e["id"]).unwrap_or_else(|| panic!("{e} not in the table"));
        for column in ["sequence", "origin", "message", "level", "maturity_level", "error", "details", "event_type"] {
            assert_eq!(r[column], e[column], "{column} of {e}");
        }
    }
    read.retain(|r| r["event_type"] == "create_update");
    assert_eq!(read.len(), 2, "one create_update per run");

    // SQL over it, with the origin's fields and the details' JSON.
    let runs =
        ok(thund(&demo, &["query", "--format", "csv", "SELECT count(DISTINCT origin.update_id) FROM event_log"], &[]));
    assert_eq!(runs.lines().nth(1), Some("2"), "{runs}");
    let sql = "SELECT origin.dataset_name AS d, \
               CAST(get_json_object(details, '$.flow_progress.metrics.num_output_rows') AS BIGINT) AS n \
               FROM event_log WHERE event_type = 'flow_progress' AND level = 'METRICS' \
               AND origin.update_id = (SELECT max(origin.update_id) FROM event_log) ORDER BY d";
    let metrics = ok(thund(&demo, &["query", "--format", "csv", sql], &[]));
    assert!(metrics.contains("spark_catalog.default.orders_raw,60\n"), "{metrics}");
    assert!(metrics.contains("spark_catalog.default.revenue_by_region,12\n"), "{metrics}");

    // Filters: the last run by default, a dataset, levels, types; JSON as one array.
    let last = jsonl(&ok(thund(&demo, &["events", "--format", "jsonl"], &[])));
    let last_run = last[0]["origin"]["update_id"].clone();
    assert!(last.iter().all(|e| e["origin"]["update_id"] == last_run));
    assert!(last.len() < all.len() && last.len() * 2 >= all.len() - 2, "{} of {}", last.len(), all.len());
    let run1 = all[0]["origin"]["update_id"].as_str().unwrap();
    assert_ne!(run1, last_run.as_str().unwrap());
    let first = jsonl(&ok(thund(&demo, &["events", "--run", run1, "--format", "jsonl"], &[])));
    assert!(!first.is_empty() && first.iter().all(|e| e["origin"]["update_id"] == run1));
    let one = jsonl(&ok(thund(&demo, &["events", "--dataset", "Revenue_By_Region", "--format", "jsonl"], &[])));
    // Its definition, then QUEUED, PLANNING, STARTING, RUNNING, how its refresh was planned and
    // COMPLETED.
    assert_eq!(one.len(), 7, "events of revenue_by_region in the last run: {one:#?}");
    assert_eq!(one[5]["event_type"], "planning_information", "{one:#?}");
    assert!(one.iter().all(|e| e["origin"]["dataset_name"] == "spark_catalog.default.revenue_by_region"));
    let filtered = jsonl(&ok(thund(
        &demo,
        &["events", "--all", "--level", "metrics,error", "--type", "flow_progress", "--format", "jsonl"],
        &[],
    )));
    assert!(
        !filtered.is_empty() && filtered.iter().all(|e| e["level"] == "METRICS" && e["event_type"] == "flow_progress")
    );
    let array: serde_json::Value =
        serde_json::from_str(&ok(thund(&demo, &["events", "--type", "update_progress", "--format", "json"], &[])))
            .unwrap();
    assert_eq!(array.as_array().unwrap().last().unwrap()["details"]["update_progress"]["state"], "COMPLETED");
    let table = ok(thund(&demo, &["events", "--type", "flow_progress"], &[]));
    assert!(
        table.lines().any(|l| l.contains("METRICS") && l.contains("COMPLETED") && l.contains("(12 rows)")),
        "{table}"
    );

    // Usage errors exit 2 and say what exists.
    let o = thund(&demo, &["events", "--run", "nope"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains(run1), "{}", text(&o));
    let o = thund(&demo, &["events", "--level", "loud"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

#[test]
fn retention_bounds_the_event_log() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = sample(tmp.path());
    let spec = demo.join("spark-pipeline.yml");
    let original = std::fs::read_to_string(&spec).unwrap();

    std::fs::write(&spec, format!("{original}configuration:\n  thund.eventLog.retentionDays: soon\n")).unwrap();
    let o = thund(&demo, &["run"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("thund.eventLog.retentionDays: soon"), "{}", text(&o));
    assert!(!demo.join(".thund/tables").exists(), "nothing runs with a bad spec");

    // Keep nothing older than the run that compacts: the next run finds a file older than the
    // retention and leaves one file with its own events.
    std::fs::write(&spec, format!("{original}configuration:\n  thund.eventLog.retentionDays: '0'\n")).unwrap();
    let log = demo.join(".thund/event_log");
    let files = || {
        let live = python_rows(&log).len();
        format!("{live} rows in {}", log.display())
    };
    let mut compacted = false;
    for _ in 0..3 {
        let before = if log.exists() { python_rows(&log).len() } else { 0 };
        ok(thund(&demo, &["run"], &[]));
        let rows = python_rows(&log);
        if rows.len() < before {
            compacted = true;
            let runs: std::collections::BTreeSet<_> =
                rows.iter().map(|r| r["origin"]["update_id"].to_string()).collect();
            assert_eq!(runs.len(), 1, "only the compacting run's events are left");
            break;
        }
    }
    assert!(compacted, "the log never shrank ({} files)", files());
    let runs =
        ok(thund(&demo, &["query", "--format", "csv", "SELECT count(DISTINCT origin.update_id) FROM event_log"], &[]));
    assert_eq!(runs.lines().nth(1), Some("1"), "{runs}");
}

#[test]
fn a_log_that_cannot_be_written_is_a_warning_not_a_failed_run() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = sample(tmp.path());
    let o = thund(&demo, &["run"], &[("THUND_FAILPOINT", "event-log-append")]);
    assert!(o.status.success(), "the run itself succeeded: {}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("warning:") && err.contains("could not be written to the event log"), "{err}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("revenue_by_region"), "{}", text(&o));
}

/// A run refused by another run's lock has its start in the log, and its end too: it never
/// shows as running.
#[test]
fn a_run_refused_by_the_lock_ends_in_the_log_as_failed() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = sample(tmp.path());
    ok(thund(&demo, &["run"], &[]));
    // Another run holds the lock.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(demo.join(".thund/run.lock"))
        .unwrap();
    lock.try_lock().unwrap();
    let refused = thund(&demo, &["run"], &[]);
    assert_eq!(refused.status.code(), Some(1), "{}", text(&refused));
    drop(lock);
    let last = jsonl(&ok(thund(&demo, &["events", "--format", "jsonl"], &[])));
    assert_eq!(last.first().map(|e| e["event_type"].clone()), Some(serde_json::json!("create_update")), "{last:#?}");
    let end = last.iter().rev().find(|e| e["event_type"] == "update_progress").expect("an end");
    assert_eq!(end["details"]["update_progress"]["state"], "FAILED", "{end:#}");
    assert!(end["message"].as_str().unwrap().contains("did not start"), "{end:#}");
}

/// A run killed with SIGKILL cannot log its end; the next run, taking the lock it left, ends it
/// in the log as interrupted — and a run that ended normally is never marked so.
#[test]
fn a_killed_run_is_ended_in_the_log_by_the_next_run() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = sample(tmp.path());
    ok(thund(&demo, &["run"], &[]));
    let (mut killed, slow) = common::start_a_run_that_never_ends(&demo);
    // Until its events are committed (every half second while a run goes).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let running = loop {
        let events = jsonl(&ok(thund(&demo, &["events", "--format", "jsonl"], &[])));
        let slow_runs = events.iter().any(|e| {
            e["origin"]["flow_name"].as_str().is_some_and(|f| f.ends_with("slow"))
                && e["details"]["flow_progress"]["status"] == "RUNNING"
        });
        if slow_runs {
            break events;
        }
        assert!(std::time::Instant::now() < deadline, "the slow run never showed");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    let id = running[0]["origin"]["update_id"].as_str().unwrap().to_string();
    killed.kill().unwrap();
    killed.wait().unwrap();
    let ends = |events: &[serde_json::Value]| -> Vec<serde_json::Value> {
        events
            .iter()
            .filter(|e| e["event_type"] == "update_progress")
            .filter(|e| e["details"]["update_progress"]["state"].as_str().is_some_and(|s| s != "STARTING"))
            .cloned()
            .collect()
    };
    let before = jsonl(&ok(thund(&demo, &["events", "--run", &id, "--format", "jsonl"], &[])));
    assert!(ends(&before).is_empty(), "a killed run logged no end: {before:#?}");

    std::fs::remove_file(&slow).unwrap();
    // A dry run takes no lock and ends nothing.
    ok(thund(&demo, &["dry-run"], &[]));
    assert!(ends(&jsonl(&ok(thund(&demo, &["events", "--run", &id, "--format", "jsonl"], &[])))).is_empty());
    ok(thund(&demo, &["run"], &[]));
    let after = jsonl(&ok(thund(&demo, &["events", "--run", &id, "--format", "jsonl"], &[])));
    let end = ends(&after);
    assert_eq!(end.len(), 1, "{after:#?}");
    assert_eq!(end[0]["details"]["update_progress"]["state"], "FAILED", "{:#}", end[0]);
    assert_eq!(end[0]["details"]["update_progress"]["interrupted"], true, "{:#}", end[0]);
    assert_eq!(end[0]["level"], "ERROR");
    assert!(end[0]["error"].as_str().unwrap().contains("interrupted"), "{:#}", end[0]);
    // The runs that ended got no such mark, however many runs came after them.
    ok(thund(&demo, &["run"], &[]));
    let all = jsonl(&ok(thund(&demo, &["events", "--all", "--format", "jsonl"], &[])));
    let marks = all.iter().filter(|e| e["details"]["update_progress"]["interrupted"] == true).count();
    assert_eq!(marks, 1, "only the killed run is marked");
    // The last run is the one `thund events` shows by default.
    let last = jsonl(&ok(thund(&demo, &["events", "--format", "jsonl"], &[])));
    let last_id = last[0]["origin"]["update_id"].as_str().unwrap();
    assert_eq!(all.last().unwrap()["origin"]["update_id"], last_id);
    assert!(last.iter().all(|e| e["origin"]["update_id"] == last_id));
}
