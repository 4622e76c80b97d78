//! `s3://` storage roots, end to end through the binary, against a local S3-compatible server
//! (moto's, started by `scripts/s3-server.sh`) at `THUND_S3_ENDPOINT`. A missing endpoint fails
//! the test; `THUND_SKIP_S3=1` opts out explicitly.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;
use std::process::{Command, Output};

const BUCKET: &str = "thund-test";

fn endpoint() -> Option<String> {
    if thund_testkit::opt_out("THUND_SKIP_S3", "a live S3 test") {
        return None;
    }
    Some(std::env::var("THUND_S3_ENDPOINT").unwrap_or_else(|_| {
        panic!("THUND_S3_ENDPOINT is not set: start a server with `scripts/s3-server.sh start` and export its URL")
    }))
}

/// The S3 settings of the server, as a user sets them: the usual `AWS_*` variables.
const fn aws_env(endpoint: &str) -> [(&'static str, &str); 6] {
    [
        ("AWS_ENDPOINT_URL", endpoint),
        ("AWS_ALLOW_HTTP", "true"),
        ("AWS_ACCESS_KEY_ID", "test"),
        ("AWS_SECRET_ACCESS_KEY", "test"),
        ("AWS_REGION", "us-east-1"),
        ("AWS_EC2_METADATA_DISABLED", "true"),
    ]
}

fn thund(endpoint: &str, args: &[&str]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_thund"));
    c.args(args).env("NO_COLOR", "1");
    for (k, v) in aws_env(endpoint) {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

fn p(path: &Path) -> &str {
    path.to_str().unwrap()
}

fn python() -> String {
    std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers")
    })
}

/// Writes (`Some(body)`) or deletes an object behind Þund's back, with pyarrow's S3 client.
fn s3_object(endpoint: &str, key: &str, body: Option<&str>) {
    let script = "import sys, pyarrow.fs as fs\n\
                  s3 = fs.S3FileSystem(access_key='test', secret_key='test', region='us-east-1',\n\
                                       endpoint_override=sys.argv[1], scheme='http')\n\
                  path = 'thund-test/' + sys.argv[2]\n\
                  if len(sys.argv) > 3:\n\
                  \x20   with s3.open_output_stream(path) as f: f.write(sys.argv[3].encode())\n\
                  else:\n\
                  \x20   s3.delete_file(path)\n";
    let mut c = Command::new(python());
    c.arg("-c").arg(script).arg(endpoint.trim_start_matches("http://")).arg(key);
    if let Some(b) = body {
        c.arg(b);
    }
    let out = c.output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

fn write_events(dir: &Path, file: &str, rows: &[(u32, &str, u32)]) {
    let lines: Vec<String> = rows
        .iter()
        .map(|(id, kind, amount)| format!(r#"{{"id": {id}, "kind": "{kind}", "amount": {amount}}}"#))
        .collect();
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in").join(file), lines.join("\n")).unwrap();
}

fn csv(endpoint: &str, dir: &Path, sql: &str) -> String {
    let o = thund(endpoint, &["query", "-p", p(dir), sql, "--format", "csv"]);
    assert!(o.status.success(), "{sql}: {}", text(&o));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn a_pipeline_on_s3_runs_incrementally_locks_and_is_readable_by_other_delta_readers() {
    let Some(endpoint) = endpoint() else { return };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let prefix = format!("runs/{}_{now}", std::process::id());
    let storage = format!("s3://{BUCKET}/{prefix}/pipe");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        format!("name: s3demo\nstorage: {storage}\nlibraries:\n  - glob:\n      include: sql/**\n"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    std::fs::write(
        dir.join("sql/p.sql"),
        "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE MATERIALIZED VIEW totals AS SELECT kind, count(*) AS n, sum(amount) AS total FROM bronze GROUP BY kind;\n\
         CREATE VIEW big AS SELECT id FROM bronze WHERE amount >= 10;\n",
    )
    .unwrap();
    write_events(dir, "1.json", &[(1, "a", 5), (2, "b", 10), (3, "a", 20)]);

    let o = thund(&endpoint, &["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(!dir.join(".thund").exists(), "nothing is stored locally with an s3:// root");
    assert_eq!(csv(&endpoint, dir, "SELECT * FROM totals ORDER BY kind"), "kind,n,total\na,2,25\nb,1,10\n");

    // Only the new file's rows are read; the view over the streaming table sees all of them.
    write_events(dir, "2.json", &[(4, "b", 1), (5, "c", 7)]);
    let o = thund(&endpoint, &["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("bronze") && text(&o).contains("2 rows"), "{}", text(&o));
    assert_eq!(csv(&endpoint, dir, "SELECT * FROM totals ORDER BY kind"), "kind,n,total\na,2,25\nb,2,11\nc,1,7\n");
    assert_eq!(csv(&endpoint, dir, "SELECT id FROM big ORDER BY id"), "id\n2\n3\n");

    // The event log is on S3 too.
    let o = thund(&endpoint, &["events", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("Run is COMPLETED"), "{}", text(&o));

    // A lock held by a run elsewhere stops a second run, which names it; once it is gone, runs go on.
    let lock = format!("{prefix}/pipe/run.lock");
    let unix = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let held = format!(r#"{{"host": "elsewhere", "pid": 1, "started": "0", "token": "t", "expires": {}}}"#, unix + 600);
    s3_object(&endpoint, &lock, Some(&held));
    let o = thund(&endpoint, &["run", "-p", p(dir)]);
    assert!(!o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("another thund run") && text(&o).contains("host elsewhere"), "{}", text(&o));
    // The same holder's lease, expired: the run that died there no longer holds the lock.
    let expired =
        format!(r#"{{"host": "elsewhere", "pid": 1, "started": "0", "token": "t", "expires": {}}}"#, unix - 1);
    s3_object(&endpoint, &lock, Some(&expired));
    let o = thund(&endpoint, &["run", "-p", p(dir)]);
    assert!(o.status.success(), "{}", text(&o));
    assert!(text(&o).contains("IDLE"), "nothing new: {}", text(&o));

    // A full refresh on S3 clears the table and its checkpoints and reads every file again, once.
    let o = thund(&endpoint, &["run", "-p", p(dir), "--full-refresh", "bronze"]);
    assert!(o.status.success(), "{}", text(&o));
    assert_eq!(csv(&endpoint, dir, "SELECT count(*) AS n, sum(amount) AS s FROM bronze"), "n,s\n5,43\n");

    // The tables are plain Delta tables on S3: an independent reader opens them.
    // The reader leaves through os._exit: python deltalake's S3 client threads sometimes abort the
    // interpreter's teardown ("terminate called without an active exception") after a good read.
    let script = "import os, sys, deltalake\n\
                  opts = {'AWS_ENDPOINT_URL': sys.argv[2], 'AWS_ALLOW_HTTP': 'true', 'AWS_ACCESS_KEY_ID': 'test',\n\
                          'AWS_SECRET_ACCESS_KEY': 'test', 'AWS_REGION': 'us-east-1'}\n\
                  t = deltalake.DeltaTable(sys.argv[1], storage_options=opts)\n\
                  print(sorted((r['kind'], r['n'], r['total']) for r in t.to_pyarrow_table().to_pylist()), flush=True)\n\
                  os._exit(0)";
    let table = format!("{storage}/tables/spark_catalog/default/totals");
    let out = Command::new(python()).arg("-c").arg(script).arg(&table).arg(&endpoint).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "[('a', 2, 25), ('b', 2, 11), ('c', 1, 7)]\n");
}

/// A project of its own under `prefix` in the test bucket, named `name`, whose SQL is `sql`.
fn lease_project(prefix: &str, name: &str, sql: &str) -> tempfile::TempDir {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let storage = format!("s3://{BUCKET}/{prefix}/{}_{now}/pipe", std::process::id());
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(
        tmp.path().join("spark-pipeline.yml"),
        format!("name: {name}\nstorage: {storage}\nlibraries:\n  - glob:\n      include: sql/**\n"),
    )
    .unwrap();
    std::fs::create_dir_all(tmp.path().join("sql")).unwrap();
    std::fs::write(tmp.path().join("sql/p.sql"), sql).unwrap();
    tmp
}

/// `thund run` on `dir` with `extra` flags and a lease of `lease` seconds, started.
fn spawn_run(endpoint: &str, dir: &Path, extra: &[&str], lease: &str) -> std::process::Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_thund"));
    c.args(["run", "-p", p(dir)]).args(extra).env("THUND_LOCK_LEASE", lease).env("NO_COLOR", "1");
    for (k, v) in aws_env(endpoint) {
        c.env(k, v);
    }
    c.stdout(std::process::Stdio::piped()).stderr(std::process::Stdio::piped()).spawn().unwrap()
}

/// A run started with its events on stdout (`--format jsonl`), read as they arrive: the tests
/// below wait on what the run says, not on the clock.
struct LiveRun {
    child: std::process::Child,
    events: std::sync::mpsc::Receiver<serde_json::Value>,
}

impl LiveRun {
    fn start(endpoint: &str, dir: &Path, extra: &[&str], lease: &str) -> LiveRun {
        let mut args = vec!["--format", "jsonl"];
        args.extend_from_slice(extra);
        let mut child = spawn_run(endpoint, dir, &args, lease);
        let events = common::events_as_printed(child.stdout.take().unwrap());
        LiveRun { child, events }
    }

    /// Waits until the run's flow into `dataset` is RUNNING (so the run holds the lock).
    fn wait_running(&mut self, dataset: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let suffix = format!(".{dataset}");
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.events.recv_timeout(left) {
                Ok(e) if e["phase"] == "RUNNING" && e["element"].as_str().is_some_and(|n| n.ends_with(&suffix)) => {
                    return
                }
                Ok(_) => {}
                Err(e) => panic!("the run never ran `{dataset}`: {e}"),
            }
        }
    }

    fn id(&self) -> u32 {
        self.child.id()
    }

    /// Waits for the end of the run: its exit code and what it printed (events and stderr).
    fn finish(mut self) -> (Option<i32>, String) {
        use std::io::Read;
        let mut err = String::new();
        self.child.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let code = self.child.wait().unwrap().code();
        let events: Vec<String> = self.events.iter().map(|e| e.to_string()).collect();
        (code, format!("{}\n{err}", events.join("\n")))
    }
}

/// Runs `thund run` with `extra` until the lock is free (up to 60 s): each refused attempt must be
/// refused because another run's lease holds the lock. The successful run's output.
fn run_once_the_lock_is_free(endpoint: &str, dir: &Path, extra: &[&str], lease: &str) -> Output {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let o = spawn_run(endpoint, dir, extra, lease).wait_with_output().unwrap();
        if o.status.success() {
            return o;
        }
        assert!(text(&o).contains("another thund run"), "refused for another reason: {}", text(&o));
        assert!(std::time::Instant::now() < deadline, "the lock was never free: {}", text(&o));
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

fn signal(sig: &str, pid: u32) {
    assert!(Command::new("kill").args([sig, &pid.to_string()]).status().unwrap().success());
}

#[test]
fn the_s3_lock_is_a_lease_renewed_while_its_run_lives_and_a_killed_runs_lock_is_taken_over() {
    let Some(endpoint) = endpoint() else { return };
    let tmp = lease_project(
        "lease",
        "lease",
        "CREATE MATERIALIZED VIEW slow AS SELECT sum(id % 7) AS s FROM range(0, 100000000000) AS r(id);\n\
         CREATE MATERIALIZED VIEW small AS SELECT 1 AS x;\n",
    );
    let dir = tmp.path();
    let spawn = |extra: &[&str]| spawn_run(&endpoint, dir, extra, "6");
    // A run whose lease is 6 s, still working 9 s after it was seen running (so after it took the
    // lock): its heartbeat (every 2 s) kept the lock. The lease leaves room for a loaded machine:
    // with 2 s, renewals to a busy S3 server were sometimes late while other tests ran beside
    // this one. The view runs until it is killed.
    let mut first = LiveRun::start(&endpoint, dir, &[], "6");
    first.wait_running("slow");
    std::thread::sleep(std::time::Duration::from_millis(9000));
    let second = spawn(&["--refresh", "small"]).wait_with_output().unwrap();
    assert!(
        first.child.try_wait().unwrap().is_none(),
        "the first run must still be running for this test to mean anything"
    );
    assert!(!second.status.success(), "two runs held the lock: {}", text(&second));
    assert!(text(&second).contains("another thund run"), "{}", text(&second));
    // Killed. Its process is gone, but whether a process lives is never judged from another one
    // (it may be in another container or on another machine): the lock is free only once the
    // lease expires.
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let killed_at = std::time::Instant::now();
    let third = spawn(&["--refresh", "small"]).wait_with_output().unwrap();
    assert!(!third.status.success(), "a live-looking lease was taken over: {}", text(&third));
    assert!(text(&third).contains("the lock is free in"), "{}", text(&third));
    let fourth = run_once_the_lock_is_free(&endpoint, dir, &["--refresh", "small"], "6");
    // Not before the killed run's lease (renewed at most 2 s before the kill) could expire.
    assert!(killed_at.elapsed() >= std::time::Duration::from_secs(3), "taken over after {:?}", killed_at.elapsed());
    assert!(String::from_utf8_lossy(&fourth.stdout).contains("small"), "{}", text(&fourth));
    // The run that held the expired lease is ended in the log as interrupted.
    let o = thund(&endpoint, &["events", "-p", p(dir), "--all", "--format", "jsonl"]);
    assert!(o.status.success(), "{}", text(&o));
    let marks = String::from_utf8_lossy(&o.stdout).lines().filter(|l| l.contains(r#""interrupted":true"#)).count();
    assert_eq!(marks, 1, "{}", text(&o));
}

#[test]
fn a_run_whose_lease_lapsed_and_was_taken_over_stops_before_its_next_stage() {
    let Some(endpoint) = endpoint() else { return };
    let tmp = lease_project(
        "lapsed",
        "lapsed",
        "CREATE MATERIALIZED VIEW slow AS SELECT sum(id % 7) AS s FROM range(0, 600000000) AS r(id);\n\
         CREATE MATERIALIZED VIEW after_slow AS SELECT s + 1 AS s FROM slow;\n\
         CREATE MATERIALIZED VIEW small AS SELECT 1 AS x;\n",
    );
    let dir = tmp.path();
    // A run paused (as by a long GC pause or a frozen VM) past its lease while computing `slow`.
    let mut first = LiveRun::start(&endpoint, dir, &[], "2");
    first.wait_running("slow");
    signal("-STOP", first.id());
    // Once its lease expired, another run takes the lock over and runs.
    let second = run_once_the_lock_is_free(&endpoint, dir, &["--refresh", "small"], "2");
    signal("-CONT", first.id());
    assert!(second.status.success(), "the lapsed lease was not taken over: {}", text(&second));
    // Resumed, the first run finds its lease gone and writes no further stage.
    let (code, said) = first.finish();
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("taken over by another run"), "{said}");
    let o = thund(&endpoint, &["query", "-p", p(dir), "SELECT * FROM after_slow", "--format", "csv"]);
    assert!(!o.status.success(), "the stage after the lost lease was written: {}", text(&o));
    assert!(text(&o).contains("after_slow"), "{}", text(&o));
}

/// The same lapse in a run's last stage: nothing comes after it to stop, but the run cannot vouch
/// for what it wrote while another run held the lock, so it fails.
#[test]
fn a_run_whose_lease_was_taken_over_during_its_last_stage_fails() {
    let Some(endpoint) = endpoint() else { return };
    let tmp = lease_project(
        "lapsed-last",
        "lapsed",
        "CREATE MATERIALIZED VIEW slow AS SELECT sum(id % 7) AS s FROM range(0, 600000000) AS r(id);\n",
    );
    let dir = tmp.path();
    let mut first = LiveRun::start(&endpoint, dir, &[], "2");
    first.wait_running("slow");
    signal("-STOP", first.id());
    // Another run takes the expired lease over (a dry run takes no lock: a real one, of nothing:
    // the selection names no dataset's flow to run).
    let taken = run_once_the_lock_is_free(&endpoint, dir, &["--refresh", "slow", "--max-concurrent-flows", "1"], "2");
    signal("-CONT", first.id());
    let (code, said) = first.finish();
    assert!(taken.status.success(), "{}", text(&taken));
    assert_eq!(code, Some(1), "{said}");
    assert!(said.contains("taken over by another run"), "{said}");
}

#[test]
fn auto_cdc_on_s3_finds_its_keys_rows_and_equals_the_replay_of_its_feed() {
    // The conformance case `auto-cdc` (SCD 1, SCD 1 ignoring NULL updates, SCD 2; late changes,
    // changes behind a delete) with its tables on S3: rows are found by key and marked with
    // deletion vectors through the object store.
    let Some(endpoint) = endpoint() else { return };
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let storage = format!("s3://{BUCKET}/runs/{}_{now}/cdc", std::process::id());
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../conformance/auto-cdc");
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    for f in ["spark-pipeline.yml", "gen_changes.py"] {
        std::fs::copy(case.join(f), dir.join(f)).unwrap();
    }
    std::fs::create_dir_all(dir.join("transformations")).unwrap();
    for e in std::fs::read_dir(case.join("transformations")).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join("transformations").join(e.file_name())).unwrap();
    }
    let data = dir.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let spec = std::fs::read_to_string(dir.join("spark-pipeline.yml"))
        .unwrap()
        .replace("file://${STORAGE}", &storage)
        .replace("${DATA}", p(&data));
    std::fs::write(dir.join("spark-pipeline.yml"), spec).unwrap();
    for run in 1..=3 {
        let mut g = Command::new("python3");
        let g = g.arg(dir.join("gen_changes.py")).arg(&data).arg((run - 1).to_string()).output().unwrap();
        assert!(g.status.success(), "{}", String::from_utf8_lossy(&g.stderr));
        let o = thund(&endpoint, &["run", "-p", p(dir)]);
        assert!(o.status.success(), "run {run}: {}", text(&o));
        for table in ["customers", "customers_keep_values", "customers_history"] {
            let expected = std::fs::read_to_string(case.join(format!("expected/run{run}/{table}.csv"))).unwrap();
            let mut lines = expected.lines();
            let header = lines.next().unwrap();
            let mut want: Vec<&str> = lines.collect();
            want.sort();
            let columns: Vec<String> = header.split(',').map(|c| format!("`{c}`")).collect();
            let got = csv(&endpoint, dir, &format!("SELECT {} FROM {table}", columns.join(", ")));
            let mut got: Vec<&str> = got.lines().skip(1).collect();
            got.sort();
            assert_eq!(got, want, "run {run}, {table}");
        }
    }
}
