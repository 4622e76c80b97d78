//! `thund ui`: its HTTP surface, and the page in a real headless Chromium (`ui_browser.py`, with
//! Debian's `chromium` and `chromium-driver`, which `scripts/test.sh` installs).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `thund ui`, stopped when dropped.
struct Ui {
    child: Child,
    url: String,
}

impl Drop for Ui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `thund ui` on a free port and reads its URL from the first line it prints.
fn start_ui(project: &Path, extra: &[&str]) -> (Ui, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["ui", "--port", "0", "-p"])
        .arg(project)
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url =
        line.split_whitespace().find(|w| w.starts_with("http://")).unwrap_or_else(|| panic!("{line}")).to_string();
    let ui = Ui { child, url: url.trim_end_matches('/').to_string() };
    (ui, line)
}

/// One HTTP/1.1 request: the status code and the body.
fn http(url: &str, method: &str, path: &str) -> (u16, String) {
    let (status, _, body) = http_as(url, url.trim_start_matches("http://"), method, path);
    (status, body)
}

/// One HTTP/1.1 request naming `host` in its `Host` header: the status, the headers and the body.
fn http_as(url: &str, host: &str, method: &str, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(url.trim_start_matches("http://")).unwrap();
    write!(s, "{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split_whitespace().nth(1).unwrap().parse().unwrap();
    let (head, body) = out.split_once("\r\n\r\n").map(|(h, b)| (h.to_string(), b.to_string())).unwrap_or_default();
    (status, head, body)
}

/// A web page elsewhere whose name was made to resolve to this machine (DNS rebinding) names
/// itself in `Host`: it gets nothing. The page itself allows no other origin.
#[test]
fn requests_naming_another_host_are_refused_and_the_page_has_a_content_security_policy() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = project(tmp.path());
    let (ui, _) = start_ui(&demo, &[]);
    let port = ui.url.rsplit(':').next().unwrap().to_string();
    for path in ["/", "/api/pipeline", "/api/state"] {
        let (status, _, body) = http_as(&ui.url, &format!("evil.example:{port}"), "GET", path);
        assert_eq!(status, 403, "{path}: {body}");
        assert!(!body.contains("orders"), "{path}: {body}");
    }
    let (status, head, _) = http_as(&ui.url, &format!("localhost:{port}"), "GET", "/");
    assert_eq!(status, 200);
    let csp = head.lines().find(|l| l.to_ascii_lowercase().starts_with("content-security-policy:")).unwrap_or_default();
    assert!(
        csp.contains("default-src 'none'")
            && csp.contains("script-src 'self'")
            && csp.contains("frame-ancestors 'none'"),
        "{head}"
    );
}

/// The sample project, plus a materialized view with an expectation, never run.
fn project(dir: &Path) -> PathBuf {
    let demo = dir.join("demo");
    let o = Command::new(env!("CARGO_BIN_EXE_thund")).arg("init").arg(&demo).output().unwrap();
    assert!(o.status.success());
    std::fs::write(
        demo.join("transformations/03_checks.sql"),
        "-- Orders checked: how many are big.\n\
         CREATE MATERIALIZED VIEW checked_orders (\n  CONSTRAINT big_order EXPECT (amount > 100)\n)\n\
         AS SELECT * FROM orders_enriched;\n",
    )
    .unwrap();
    std::fs::write(
        demo.join("transformations/04_regions.py"),
        "from pyspark import pipelines as dp\nfrom pyspark.sql import SparkSession\nfrom pyspark.sql import functions as F\n\n\
         spark = SparkSession.active()\n\n\n\
         @dp.materialized_view(comment=\"Regions by their whole revenue\")\n\
         def region_totals():\n    \
         return spark.read.table(\"revenue_by_region\").groupBy(\"region\").agg(F.sum(\"revenue\").alias(\"revenue\"))\n",
    )
    .unwrap();
    demo
}

#[test]
fn the_api_serves_the_graph_and_state_read_only_on_the_loopback() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = project(tmp.path());
    let (ui, line) = start_ui(&demo, &[]);
    assert!(ui.url.starts_with("http://127.0.0.1:"), "{line}");
    let (status, page) = http(&ui.url, "GET", "/");
    assert_eq!(status, 200);
    // Everything the page loads comes from this server: no other origin is named.
    assert!(page.contains("/app.js") && !page.contains("https://") && !page.contains("//cdn"), "{page}");
    let (status, script) = http(&ui.url, "GET", "/app.js");
    assert_eq!(status, 200);
    assert!(!script.contains("https://") && !script.contains("import "), "the script loads nothing else");

    let (status, body) = http(&ui.url, "GET", "/api/pipeline");
    assert_eq!(status, 200, "{body}");
    let graph: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(graph["datasets"].as_array().unwrap().len(), 8, "{graph}");
    let layer = |name: &str| {
        graph["datasets"].as_array().unwrap().iter().find(|d| d["short"] == name).unwrap()["layer"].as_u64().unwrap()
    };
    assert!(layer("orders_raw") < layer("orders_enriched") && layer("orders_enriched") < layer("checked_orders"));
    assert!(graph["edges"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["from"] == "spark_catalog.default.orders_enriched"
            && e["to"] == "spark_catalog.default.checked_orders"));

    let (status, body) = http(&ui.url, "GET", "/api/state");
    assert_eq!(status, 200, "{body}");
    assert!(body.contains(r#""runs":[]"#), "{body}");
    assert_eq!(http(&ui.url, "GET", "/api/runs/nope").0, 404);
    assert_eq!(http(&ui.url, "GET", "/api/datasets/nope").0, 404);
    assert_eq!(http(&ui.url, "GET", "/etc/passwd").0, 404);
    assert_eq!(http(&ui.url, "POST", "/api/state").0, 405, "read-only");
    let (_, body) = http(&ui.url, "GET", "/api/datasets/spark_catalog.default.orders_raw");
    assert!(body.contains(r#""row_count":null"#), "not run yet: {body}");
}

#[test]
fn binding_beyond_the_loopback_warns_that_there_is_no_authentication() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = project(tmp.path());
    let mut child = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["ui", "--port", "0", "--bind", "0.0.0.0", "-p"])
        .arg(&demo)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("warning") && err.contains("no authentication"), "{err}");
    assert!(line.contains("http://"), "{line}");
}

#[test]
fn the_page_shows_the_graph_details_live_states_and_errors_in_a_real_browser() {
    if thund_testkit::opt_out("THUND_SKIP_BROWSER", "the web view in a real browser") {
        return;
    }
    let python = std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs selenium and chromium")
    });
    let tmp = tempfile::tempdir().unwrap();
    let demo = project(tmp.path());
    let (ui, _) = start_ui(&demo, &[]);
    // Kept in the target dir for a person to look at; cleared first, so only this run's count.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ui-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    let datasets = [
        "orders_raw",
        "customers",
        "orders_clean",
        "orders_enriched",
        "revenue_by_region",
        "top_customers",
        "checked_orders",
        "region_totals",
    ]
    .map(|d| format!("spark_catalog.default.{d}"));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/ui_browser.py");
    let o = Command::new(python)
        .arg(script)
        .arg(&ui.url)
        .arg(env!("CARGO_BIN_EXE_thund"))
        .arg(&demo)
        .arg(&shots)
        .args(&datasets)
        .output()
        .unwrap();
    let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
    println!("{out}");
    assert!(o.status.success(), "{out}");
    for shot in ["pipeline.png", "failed.png"] {
        let (width, height) = png_size(&shots.join(shot));
        assert!(width >= 800 && height >= 600, "{shot}: {width}x{height}");
    }
}

/// The size of a PNG image from its header, after checking it is one.
fn png_size(path: &Path) -> (u32, u32) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.starts_with(b"\x89PNG\r\n\x1a\n") && &bytes[12..16] == b"IHDR", "{}: not a PNG", path.display());
    let be = |at: usize| u32::from_be_bytes(bytes[at..at + 4].try_into().unwrap());
    (be(16), be(20))
}

/// `thund` with `args` on `project`.
fn thund_on(project: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_thund")).args(args).arg("-p").arg(project).env("NO_COLOR", "1").output().unwrap()
}

fn state_of(ui: &Ui) -> serde_json::Value {
    let (status, body) = http(&ui.url, "GET", "/api/state");
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

/// The state the page polls is folded two ways: from a summary of the log when the server first
/// reads it (a long log is never decoded whole), then commit by commit. A server that watched
/// every run and one started after them must show the same runs and datasets — including a
/// failed flow, a partial refresh and a run killed with SIGKILL, which the next run ends in the
/// log as interrupted.
#[test]
fn the_state_followed_commit_by_commit_equals_a_fresh_read_of_the_log() {
    let tmp = tempfile::tempdir().unwrap();
    let demo = project(tmp.path());
    let (early, _) = start_ui(&demo, &[]);
    assert_eq!(state_of(&early)["run_count"], 0);
    let run = |args: &[&str]| thund_on(&demo, &[&["run"], args].concat());
    let o = run(&[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(state_of(&early)["run_count"], 1);
    let o = run(&["--refresh", "checked_orders"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    state_of(&early);
    let checks = demo.join("transformations/03_checks.sql");
    let good = std::fs::read_to_string(&checks).unwrap();
    std::fs::write(&checks, good.replace("SELECT * FROM", "SELECT *, 1 / 0 AS boom, no_such FROM")).unwrap();
    assert_eq!(run(&[]).status.code(), Some(1));
    std::fs::write(&checks, &good).unwrap();
    assert_eq!(state_of(&early)["datasets"]["spark_catalog.default.checked_orders"]["state"], "FAILED");

    // A run killed while it computes `slow`: its events so far are in the log.
    let (mut killed, slow) = common::start_a_run_that_never_ends(&demo);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let killed_id = loop {
        let runs = state_of(&early)["runs"].as_array().unwrap().clone();
        let last = runs.last().unwrap().clone();
        if runs.len() == 4 && state_of(&early)["datasets"]["spark_catalog.default.slow"]["state"] == "RUNNING" {
            break last["id"].as_str().unwrap().to_string();
        }
        assert!(std::time::Instant::now() < deadline, "the slow run never showed: {runs:?}");
        std::thread::sleep(std::time::Duration::from_millis(200));
    };
    killed.kill().unwrap();
    killed.wait().unwrap();
    assert_eq!(state_of(&early)["runs"][3]["state"], "RUNNING", "nothing could end it yet");
    std::fs::remove_file(&slow).unwrap();
    let o = run(&["--refresh", "orders_raw"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let (late, _) = start_ui(&demo, &[]);
    let (followed, fresh) = (state_of(&early), state_of(&late));
    assert_eq!(followed, fresh, "followed:\n{followed:#}\nfresh:\n{fresh:#}");
    let runs = fresh["runs"].as_array().unwrap();
    let states: Vec<&str> = runs.iter().map(|r| r["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["COMPLETED", "COMPLETED", "FAILED", "FAILED", "COMPLETED"], "{fresh:#}");
    assert_eq!(runs[3]["id"], killed_id.as_str());
    assert!(runs[3]["error"].as_str().unwrap().contains("interrupted"), "{fresh:#}");
    assert_eq!(fresh["datasets"]["spark_catalog.default.slow"]["state"], "STOPPED", "{fresh:#}");
    // Queued in the killed run, which stopped before it.
    let checked = &fresh["datasets"]["spark_catalog.default.checked_orders"];
    assert_eq!(checked["state"], "STOPPED", "{fresh:#}");
    assert_eq!(checked["rows"], 58, "its last refresh stays shown: {fresh:#}");
    assert_eq!(fresh["datasets"]["spark_catalog.default.orders_raw"]["state"], "IDLE", "nothing new: {fresh:#}");
    assert_eq!(fresh["events"], followed["events"]);
    // Every run's flows read the same: from the fold, or from its events alone.
    for r in runs {
        let path = format!("/api/runs/{}", r["id"].as_str().unwrap());
        let (a, b) = (http(&early.url, "GET", &path), http(&late.url, "GET", &path));
        assert_eq!(a.0, 200, "{}", a.1);
        assert_eq!(a, b, "{path}");
    }
}
