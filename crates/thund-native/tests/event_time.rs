//! Event time on the native backend: late rows are counted where users look, open windows survive
//! between runs, and what the engine cannot run is refused before anything is written. Spark's
//! own tables for the same windows are checked in `conformance/event-time` (both backends).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;

use common::*;
use knut_thund::backend::{ExecBackend, RunPhase};
use thund_native::NativeBackend;

const SPEC: &str = "name: e\nlibraries:\n  - glob:\n      include: sql/**\n";

const EVENTS: &str = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
     CREATE STREAMING TABLE events AS SELECT id, CAST(ts AS TIMESTAMP) AS ts FROM STREAM(raw);\n";

const COUNTS: &str = "CREATE STREAMING TABLE counts AS\n\
     SELECT window.start AS ws, window.end AS we, count(*) AS n, max(id) AS last_id\n\
     FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 5 MINUTES\n\
     GROUP BY window(ts, '10 minutes');\n";

/// Events `(id, minute after midnight)` as one new JSON file.
fn write_events(dir: &Path, batch: u32, events: &[(u32, u32)]) {
    let folder = dir.join("in");
    std::fs::create_dir_all(&folder).unwrap();
    let lines: String = events
        .iter()
        .map(|(id, m)| format!("{{\"id\": {id}, \"ts\": \"2026-06-01T{:02}:{:02}:00\"}}\n", m / 60, m % 60))
        .collect();
    std::fs::write(folder.join(format!("b{batch}.json")), lines).unwrap();
}

fn table(dir: &Path, sql: &str) -> Vec<Vec<String>> {
    let mut r = rows(&query(dir, sql).unwrap_or_else(|e| panic!("{sql}: {e}"))).1;
    r.sort();
    r
}

fn outcome<'a>(s: &'a knut_thund::backend::RunSummary, flow: &str) -> &'a knut_thund::backend::FlowOutcome {
    s.flows.iter().find(|f| f.flow.ends_with(&format!(".{flow}"))).unwrap_or_else(|| panic!("{flow}"))
}

#[test]
fn windows_are_written_once_when_the_watermark_passes_and_late_rows_are_counted() {
    let sql = format!("{EVENTS}{COUNTS}");
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    write_events(dir.path(), 0, &[(1, 1), (2, 9), (3, 10), (4, 24), (5, 31)]);
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    // Watermark 00:26: [00:00, 00:10) and [00:10, 00:20) are final; [00:20, 00:30) is still open.
    let q = "SELECT ws, n, last_id FROM counts";
    assert_eq!(table(dir.path(), q), [["2026-06-01T00:00:00Z", "2", "2"], ["2026-06-01T00:10:00Z", "1", "3"]]);
    assert_eq!(outcome(&s1, "counts").rows_dropped_by_watermark, 0);

    // 00:15 is late (its window closed in run 1); 00:22 is older than the watermark but its
    // window is open, so it counts. 00:47 moves the watermark to 00:42.
    write_events(dir.path(), 1, &[(6, 15), (7, 22), (8, 47)]);
    let (s2, events) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    assert_eq!(
        table(dir.path(), q),
        [
            ["2026-06-01T00:00:00Z", "2", "2"],
            ["2026-06-01T00:10:00Z", "1", "3"],
            ["2026-06-01T00:20:00Z", "2", "7"],
            ["2026-06-01T00:30:00Z", "1", "5"],
        ]
    );
    assert_eq!(outcome(&s2, "counts").rows_dropped_by_watermark, 1);
    let completed = events
        .iter()
        .find(|e| e.element.ends_with(".counts") && e.phase == Some(RunPhase::Completed))
        .expect("the flow's COMPLETED event");
    assert_eq!(completed.details.num_rows_dropped_by_watermark, Some(1));

    // No new input: nothing to finalize beyond what run 2 did (Spark's no-data batch ran there).
    let (s3, _) = run(dir.path());
    assert_eq!(outcome(&s3, "counts").phase, RunPhase::Idle);
    assert_eq!(table(dir.path(), q).len(), 4);

    // A full refresh forgets the watermark and the open windows with the table.
    let full = knut_thund::backend::RunOptions {
        selection: knut_thund::plan::Selection { full_refresh_all: true, ..Default::default() },
        ..Default::default()
    };
    let (s4, _) = run_with(dir.path(), full);
    assert!(!s4.failed(), "{:?}", s4.flows);
    assert_eq!(outcome(&s4, "counts").rows_dropped_by_watermark, 0);
    assert_eq!(table(dir.path(), "SELECT n FROM counts WHERE ws = TIMESTAMP '2026-06-01 00:10:00'"), [["2"]]);
}

#[test]
fn a_watermark_on_a_column_that_is_not_a_timestamp_is_a_clear_error() {
    let sql = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE counts AS\n\
         SELECT window.start AS ws, count(*) AS n\n\
         FROM STREAM(raw) WATERMARK ts DELAY OF INTERVAL 5 MINUTES\n\
         GROUP BY window(ts, '10 minutes');\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    write_events(dir.path(), 0, &[(1, 1)]);
    let (s, _) = run(dir.path());
    let counts = outcome(&s, "counts");
    assert_eq!(counts.phase, RunPhase::Failed);
    let error = counts.error.as_deref().unwrap();
    assert!(error.starts_with("sql/a.sql:4:"), "{error}");
    assert!(
        error.contains("event time must be defined on a window or a timestamp, but `ts` is of type string"),
        "{error}"
    );
    assert!(!dir.path().join("storage/tables").exists() || query(dir.path(), "SELECT * FROM counts").is_err());
}

#[test]
fn a_join_of_two_streams_is_refused_before_the_run() {
    let sql = format!(
        "{EVENTS}CREATE STREAMING TABLE other AS SELECT * FROM STREAM read_files('in2', format => 'json');\n\
         CREATE STREAMING TABLE joined AS\n\
         SELECT e.id, o.id AS other_id FROM STREAM(events) e\n\
         JOIN STREAM(other) o ON e.id = o.id;\n\
         CREATE STREAMING TABLE unioned AS SELECT id FROM STREAM(events) UNION ALL SELECT id FROM STREAM(other);\n"
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    let err = NativeBackend::new().check(&load(dir.path())).unwrap_err().to_string();
    assert!(err.contains("stream-stream joins"), "{err}");
    assert!(err.contains("sql/a.sql:6:"), "{err}");
    assert!(!err.contains("unioned"), "a union of streams is not a join: {err}");
}

/// The same windowed count in `mode`.
fn counts_in(mode: &str) -> String {
    format!(
        "{EVENTS}CREATE STREAMING TABLE counts TBLPROPERTIES ('pipelines.outputMode' = '{mode}') AS\n\
         SELECT window.start AS ws, count(*) AS n FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 5 MINUTES\n\
         GROUP BY window(ts, '10 minutes');\n\
         CREATE STREAMING TABLE per_parity TBLPROPERTIES ('pipelines.outputMode' = '{mode}') AS\n\
         SELECT id % 2 AS parity, count(*) AS n, sum(id) AS ids FROM STREAM(events) GROUP BY id % 2;\n"
    )
}

/// `(window start minute, count)` rows of `counts`, and `(parity, count, sum)` of `per_parity`.
fn mode_tables(dir: &Path) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    (
        table(dir, "SELECT CAST(minute(ws) AS BIGINT) AS m, n FROM counts ORDER BY m"),
        table(dir, "SELECT parity, n, ids FROM per_parity"),
    )
}

fn strings(rows: &[&[i64]]) -> Vec<Vec<String>> {
    let mut v: Vec<Vec<String>> = rows.iter().map(|r| r.iter().map(|x| x.to_string()).collect()).collect();
    v.sort();
    v
}

// Expected rows are replayed by hand from the events: run 1 writes ids 1@00:01, 2@00:09, 3@00:10,
// 4@00:24, 5@00:31 (watermark after: 00:26); run 2 writes 6@00:15 (its window [00:10, 00:20)
// ended before the watermark: late), 7@00:22 and 8@00:47.
const RUN1: &[(u32, u32)] = &[(1, 1), (2, 9), (3, 10), (4, 24), (5, 31)];
const RUN2: &[(u32, u32)] = &[(6, 15), (7, 22), (8, 47)];

#[test]
fn update_mode_rewrites_the_groups_a_batch_changed_and_drops_late_rows() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &counts_in("update"))]);
    write_events(dir.path(), 0, RUN1);
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    // Open windows are written too, and rewritten when they change.
    let (counts, parity) = mode_tables(dir.path());
    assert_eq!(counts, strings(&[&[0, 2], &[10, 1], &[20, 1], &[30, 1]]));
    assert_eq!(parity, strings(&[&[0, 2, 6], &[1, 3, 9]]));
    write_events(dir.path(), 1, RUN2);
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    let (counts, parity) = mode_tables(dir.path());
    assert_eq!(counts, strings(&[&[0, 2], &[10, 1], &[20, 2], &[30, 1], &[40, 1]]));
    assert_eq!(parity, strings(&[&[0, 4, 20], &[1, 4, 16]]));
    // Only the changed groups are written: [00:20, 00:30) and [00:40, 00:50); both parities.
    assert_eq!(outcome(&s2, "counts").rows_written, 2);
    assert_eq!(outcome(&s2, "counts").rows_dropped_by_watermark, 1);
    assert_eq!(outcome(&s2, "per_parity").rows_written, 2);
}

#[test]
fn complete_mode_rewrites_every_group_and_keeps_late_rows() {
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &counts_in("complete"))]);
    write_events(dir.path(), 0, RUN1);
    assert!(!run(dir.path()).0.failed());
    write_events(dir.path(), 1, RUN2);
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    // Complete mode keeps all state (Spark does not drop by watermark here): 00:15 counts.
    let (counts, parity) = mode_tables(dir.path());
    assert_eq!(counts, strings(&[&[0, 2], &[10, 2], &[20, 2], &[30, 1], &[40, 1]]));
    assert_eq!(parity, strings(&[&[0, 4, 20], &[1, 4, 16]]));
    assert_eq!(outcome(&s2, "counts").rows_written, 5);
    assert_eq!(outcome(&s2, "counts").rows_dropped_by_watermark, 0);
    // No new input: the table stays as it is.
    let (s3, _) = run(dir.path());
    assert_eq!(outcome(&s3, "counts").phase, RunPhase::Idle);
    assert_eq!(mode_tables(dir.path()).0.len(), 5);
}

/// Sizes of the open windows' state files under the project's checkpoints.
fn state_files(dir: &Path) -> Vec<u64> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join(".thund/checkpoints")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            if e.path().is_dir() {
                stack.push(e.path());
            } else if e.path().extension().is_some_and(|x| x == "arrow") {
                out.push(e.metadata().unwrap().len());
            }
        }
    }
    out
}

#[test]
fn the_state_of_open_windows_holds_only_their_own_rows() {
    let sql = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE events AS SELECT CAST(ts AS TIMESTAMP) AS ts, note FROM STREAM(raw);\n\
         CREATE STREAMING TABLE counts AS\n\
         SELECT window.start AS ws, count(*) AS n, max(note) AS last_note\n\
         FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 5 MINUTES\n\
         GROUP BY window(ts, '10 minutes');\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    // 990 rows in [00:00, 00:10), which the watermark (00:14) closes, and 10 in the open
    // [00:10, 00:20); every note is 100 bytes, so the notes of the whole batch are ~100 KB.
    let folder = dir.path().join("in");
    std::fs::create_dir_all(&folder).unwrap();
    let line = |i: u32, minute: u32| {
        format!("{{\"ts\": \"2026-06-01T00:{minute:02}:{:02}\", \"note\": \"{i:0100}\"}}\n", i % 60)
    };
    let rows: String = (0..990).map(|i| line(i, i % 10)).chain((990..1000).map(|i| line(i, 15 + i % 5))).collect();
    std::fs::write(folder.join("b0.json"), rows).unwrap();
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    assert_eq!(table(dir.path(), "SELECT n FROM counts"), [["990"]]);
    let sizes = state_files(dir.path());
    assert_eq!(sizes.len(), 1, "one state file: {sizes:?}");
    // The 10 open rows: their notes (1 KB), times and the window bounds, plus the format's framing.
    assert!(sizes[0] < 12_000, "the state of 10 open rows takes {} bytes", sizes[0]);

    // The open window is still whole: a later batch closes it with its 10 rows and 1 more.
    std::fs::write(folder.join("b1.json"), line(1000, 19) + &line(1001, 45)).unwrap();
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    assert_eq!(table(dir.path(), "SELECT n FROM counts"), [["11"], ["990"]]);
}
