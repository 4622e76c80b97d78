//! Crash safety: `thund run` killed with SIGKILL at random moments, rerun each time; the final
//! tables hold every input row exactly once.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const SQL: &str = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
     CREATE STREAMING TABLE silver AS SELECT id, v FROM STREAM(bronze) WHERE id % 2 = 0;\n\
     CREATE MATERIALIZED VIEW total AS SELECT count(*) AS n FROM silver;\n\
     CREATE SINK exported USING parquet OPTIONS (path 'out');\n\
     CREATE FLOW export AS INSERT INTO exported SELECT id FROM STREAM(bronze);";

fn thund(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_thund"));
    c.arg("run").arg("-p").arg(dir).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::null());
    c
}

fn write_batch(dir: &Path, i: u64) {
    let folder = dir.join(format!("in/b{i:02}"));
    std::fs::create_dir_all(&folder).unwrap();
    let lines: String = (i * 10..i * 10 + 10).map(|id| format!("{{\"id\": {id}, \"v\": {}}}\n", id * 3)).collect();
    std::fs::write(folder.join("part.json"), lines).unwrap();
}

/// The seed of this run's kill schedule: `THUND_CRASH_SEED` to replay one, else a fresh one,
/// printed so that a failure can be replayed.
fn seed() -> u64 {
    let seed = std::env::var("THUND_CRASH_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap();
        now.as_nanos() as u64 ^ u64::from(std::process::id())
    });
    eprintln!("kill schedule seed {seed} (replay with THUND_CRASH_SEED={seed})");
    seed
}

/// A small seeded generator, so a failing schedule can be replayed.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

fn ids(dir: &Path, table: &str) -> Vec<u64> {
    let out = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["query", "-p"])
        .arg(dir)
        .arg(format!("SELECT id FROM {table} ORDER BY id"))
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap().lines().skip(1).map(|l| l.parse().unwrap()).collect()
}

/// How long a calm run's flows run here: kills land at a random moment of that long after a
/// killed run's first flow starts RUNNING (in microseconds).
struct KillWindow {
    len: u64,
    /// The share of `len` kills aim at: halved after a kill that came after the run ended (a
    /// machine busier than when the window was measured runs slower, or faster once caches are
    /// warm), restored after a kill that hit, so the schedule stays random and keeps hitting.
    scale: f64,
}

impl KillWindow {
    /// Runs the pipeline in `dir` to its end and times its events.
    fn measure(dir: &Path) -> KillWindow {
        let (events, mut child) = events_of(dir);
        let mut first_running = None;
        for e in events.iter() {
            if first_running.is_none() && is_flow_running(&e) {
                first_running = Some(Instant::now());
            }
        }
        assert!(child.wait().unwrap().success());
        let ran = first_running.expect("a flow ran").elapsed().as_micros() as u64;
        KillWindow { len: ran + 1, scale: 1.0 }
    }

    fn pick(&self, rng: &mut Lcg) -> Duration {
        let len = ((self.len as f64 * self.scale) as u64).max(1);
        Duration::from_micros(rng.next() % len)
    }

    /// Whether the last kill hit a running flow.
    fn record(&mut self, hit: bool) {
        self.scale = if hit { (self.scale * 2.0).min(1.0) } else { self.scale / 2.0 };
    }
}

/// Starts a run with its events on stdout (`--format jsonl`); they arrive on the channel as the
/// run prints them.
fn events_of(dir: &Path) -> (std::sync::mpsc::Receiver<serde_json::Value>, std::process::Child) {
    let mut child = thund(dir).args(["--format", "jsonl"]).stdout(std::process::Stdio::piped()).spawn().unwrap();
    (common::events_as_printed(child.stdout.take().unwrap()), child)
}

fn is_flow_running(e: &serde_json::Value) -> bool {
    e["element"] != "run" && e["phase"] == "RUNNING"
}

/// Starts a run, waits for its first flow to be RUNNING (by its events, not the clock), then
/// kills it (SIGKILL) after `delay`. Whether the kill hit a flow running: the run's events, read
/// to the end after the kill (every one was printed before the process died), show no end of
/// the run. (The event log cannot tell: it commits every 500 ms, longer than these runs.)
fn kill_after(dir: &Path, delay: Duration) -> bool {
    let (events, mut child) = events_of(dir);
    let mut seen = Vec::new();
    for e in events.iter() {
        let running = is_flow_running(&e);
        seen.push(e);
        if running {
            break;
        }
    }
    std::thread::sleep(delay);
    let _ = child.kill();
    let _ = child.wait();
    seen.extend(events.iter());
    let flow_ran = seen.iter().any(is_flow_running);
    let run_ended = seen.iter().any(|e| e["element"] == "run" && e["phase"] != "STARTING");
    flow_ran && !run_ended
}

#[test]
fn killing_runs_at_random_moments_loses_and_duplicates_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(dir.join("spark-pipeline.yml"), "name: crash\nlibraries:\n  - glob:\n      include: sql/**\n")
        .unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(dir.join("sql/a.sql"), SQL).unwrap();

    // The first run creates the tables; the second, a run like the ones killed below, tells when
    // its flows run here (the first is slower, and kills timed by it often came too late).
    write_batch(dir, 0);
    assert!(thund(dir).status().unwrap().success());
    write_batch(dir, 1);
    let mut window = KillWindow::measure(dir);

    let seed = seed();
    let mut rng = Lcg(seed);
    let mut kills_during_run = 0;
    for i in 2..=21 {
        write_batch(dir, i);
        let hit = kill_after(dir, window.pick(&mut rng));
        window.record(hit);
        kills_during_run += usize::from(hit);
    }
    eprintln!("{kills_during_run} of 20 kills hit a running flow (seed {seed})");
    // Recovery run: finishes whatever the killed runs left.
    let status = thund(dir).status().unwrap();
    assert!(status.success(), "recovery run failed (seed {seed})");

    let all: Vec<u64> = (0..220).collect();
    assert_eq!(ids(dir, "bronze"), all, "bronze after kills (seed {seed})");
    let even: Vec<u64> = (0..220).filter(|i| i % 2 == 0).collect();
    assert_eq!(ids(dir, "silver"), even, "silver after kills (seed {seed})");
    assert_eq!(ids(dir, "parquet.`out`"), all, "parquet sink after kills (seed {seed})");
    assert!(kills_during_run >= 10, "only {kills_during_run} of 20 kills hit a running flow (seed {seed})");
}

const WINDOWS: &str = "CREATE STREAMING TABLE raw AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
     CREATE STREAMING TABLE events AS SELECT id, device, CAST(ts AS TIMESTAMP) AS ts FROM STREAM(raw);\n\
     CREATE STREAMING TABLE counts AS SELECT window.start AS ws, device, count(*) AS n, sum(id) AS ids\n\
       FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 4 MINUTES GROUP BY window(ts, '5 minutes'), device;\n\
     CREATE STREAMING TABLE hops AS SELECT window.start AS ws, count(*) AS n\n\
       FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 4 MINUTES GROUP BY window(ts, '10 minutes', '5 minutes');\n\
     CREATE STREAMING TABLE sessions AS SELECT device, session_window.start AS s, session_window.end AS e, count(*) AS n\n\
       FROM STREAM(events) WATERMARK ts DELAY OF INTERVAL 4 MINUTES GROUP BY device, session_window(ts, '2 minutes');";

/// Batch `i` of device events: minutes 10i … 10i+9, out of order, plus a row 3 minutes and one 12
/// minutes before the batch (the first may count, the second is late).
fn write_events(dir: &Path, i: u64) {
    let folder = dir.join(format!("in/b{i:02}"));
    std::fs::create_dir_all(&folder).unwrap();
    let mut minutes: Vec<i64> = (0..10).map(|k| (10 * i as i64) + (k * 7) % 10).collect();
    minutes.extend([10 * i as i64 - 3, 10 * i as i64 - 12]);
    let lines: String = minutes
        .iter()
        .enumerate()
        .filter(|(_, m)| **m >= 0)
        .map(|(k, m)| {
            let id = i * 100 + k as u64;
            let device = ["a", "b", "c"][(id % 3) as usize];
            format!(
                "{{\"id\": {id}, \"device\": \"{device}\", \"ts\": \"2026-06-01T{:02}:{:02}:{:02}\"}}\n",
                m / 60,
                m % 60,
                id % 60
            )
        })
        .collect();
    std::fs::write(folder.join("part.json"), lines).unwrap();
}

fn csv(dir: &Path, sql: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["query", "-p"])
        .arg(dir)
        .arg(sql)
        .args(["--format", "csv"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A project of one SQL file in `dir`.
fn sql_project(dir: &Path, sql: &str) {
    std::fs::write(dir.join("spark-pipeline.yml"), "name: c\nlibraries:\n  - glob:\n      include: sql/**\n").unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(dir.join("sql/a.sql"), sql).unwrap();
}

/// Runs `batches` batches written by `write` to the end, one run each; returns when the second
/// run's flows ran (the first, which creates the tables, is slower than the runs killed later),
/// the window random kills aim at.
fn uninterrupted(dir: &Path, batches: u64, write: fn(&Path, u64)) -> KillWindow {
    write(dir, 0);
    assert!(thund(dir).status().unwrap().success());
    write(dir, 1);
    let window = KillWindow::measure(dir);
    for i in 2..batches {
        write(dir, i);
        assert!(thund(dir).status().unwrap().success());
    }
    window
}

/// Starts a run, kills it (SIGKILL) at a random moment of `window`, then runs to the end.
/// Whether the kill hit a running flow.
fn kill_then_finish(dir: &Path, rng: &mut Lcg, window: &mut KillWindow, seed: u64) -> bool {
    let hit = kill_after(dir, window.pick(rng));
    window.record(hit);
    assert!(thund(dir).status().unwrap().success(), "run after a kill failed (seed {seed})");
    hit
}

#[test]
fn killed_runs_of_windowed_aggregations_end_with_the_tables_of_uninterrupted_runs() {
    let (killed, calm) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    sql_project(killed.path(), WINDOWS);
    sql_project(calm.path(), WINDOWS);
    let mut window = uninterrupted(calm.path(), 12, write_events);

    let seed = seed();
    let mut rng = Lcg(seed);
    let mut kills_during_run = 0;
    for i in 0..12 {
        write_events(killed.path(), i);
        // Each batch is killed once at a random moment, then finished, so every batch of input is
        // one batch of the windowed flows, as in the uninterrupted runs (the watermark moves per
        // batch: merging two batches into one would change which rows are late).
        kills_during_run += usize::from(kill_then_finish(killed.path(), &mut rng, &mut window, seed));
    }
    eprintln!("{kills_during_run} of 12 kills hit a running flow (seed {seed})");
    for sql in [
        "SELECT * FROM counts ORDER BY ws, device",
        "SELECT * FROM hops ORDER BY ws",
        "SELECT * FROM sessions ORDER BY device, s",
    ] {
        let expected = csv(calm.path(), sql);
        assert!(expected.lines().count() > 5, "{sql}: {expected}");
        assert_eq!(csv(killed.path(), sql), expected, "{sql} after kills (seed {seed})");
    }
    assert!(kills_during_run >= 6, "only {kills_during_run} of 12 kills hit a running flow (seed {seed})");
}

// `current` marks its rows with deletion vectors, `history` rewrites its files (the default): a
// kill meets both paths.
const CDC: &str = "CREATE STREAMING TABLE changes AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
     CREATE STREAMING TABLE current TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')\n\
       FLOW AUTO CDC FROM STREAM(changes) KEYS (id)\n\
       APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op);\n\
     CREATE STREAMING TABLE history FLOW AUTO CDC FROM STREAM(changes) KEYS (id)\n\
       APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2\n\
       TRACK HISTORY ON * EXCEPT (note);";

/// Batch `i` of changes to 20 keys: sequences interleave with earlier batches' (late changes),
/// every seventh change is a delete, some change only the untracked `note`.
fn write_changes(dir: &Path, i: u64) {
    let folder = dir.join(format!("in/b{i:02}"));
    std::fs::create_dir_all(&folder).unwrap();
    let lines: String = (0..15u64)
        .map(|k| {
            let n = i * 15 + k;
            let id = (n * 7) % 20;
            // Later batches mostly carry newer sequences, but some are older than applied ones.
            let seq = i * 100 + (k * 37) % 150;
            let op = if n % 7 == 3 { "D" } else { "U" };
            format!("{{\"id\": {id}, \"seq\": {seq}, \"op\": \"{op}\", \"v\": {}, \"note\": \"n{}\"}}\n", n % 4, n % 3)
        })
        .collect();
    std::fs::write(folder.join("part.json"), lines).unwrap();
}

#[test]
fn killed_runs_of_auto_cdc_flows_end_with_the_tables_of_uninterrupted_runs() {
    let (killed, failed, calm) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    for d in [&killed, &failed, &calm] {
        sql_project(d.path(), CDC);
    }
    let mut window = uninterrupted(calm.path(), 10, write_changes);

    let seed = seed();
    let mut rng = Lcg(seed);
    let mut kills_during_run = 0;
    // The steps of a batch between which a process can die (the protocol's, `streaming/mod.rs`,
    // and AUTO CDC's own, `streaming/cdc/`), in turn.
    let steps = [
        "stream-after-input",
        "stream-after-intent",
        "cdc-after-history",
        "cdc-after-vectors",
        "cdc-after-commit",
        "stream-after-commit",
    ];
    for i in 0..10 {
        write_changes(killed.path(), i);
        kills_during_run += usize::from(kill_then_finish(killed.path(), &mut rng, &mut window, seed));

        // The same batch dies exactly at one step (abort, as a kill), then runs to the end.
        write_changes(failed.path(), i);
        let step = steps[i as usize % steps.len()];
        let died = thund(failed.path()).env("THUND_FAILPOINT", step).env("THUND_FAILPOINT_KILL", "1").status().unwrap();
        // Aborted at the step (no exit code: a signal), not failed or finished.
        assert_eq!(died.code(), None, "the run did not die at {step}: {died:?}");
        assert!(thund(failed.path()).status().unwrap().success(), "run after dying at {step} failed");
    }
    eprintln!("{kills_during_run} of 10 kills hit a running flow (seed {seed})");
    for sql in ["SELECT * FROM current ORDER BY id", "SELECT * FROM history ORDER BY id, seq"] {
        let expected = csv(calm.path(), sql);
        assert!(expected.lines().count() > 10, "{sql}: {expected}");
        assert_eq!(csv(killed.path(), sql), expected, "{sql} after kills (seed {seed})");
        assert_eq!(csv(failed.path(), sql), expected, "{sql} after dying at each step");
    }
    assert!(kills_during_run >= 5, "only {kills_during_run} of 10 kills hit a running flow (seed {seed})");
}
