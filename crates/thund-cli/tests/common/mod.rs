//! What several test binaries of the CLI share; each uses some of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Adds to the project at `project` a view that computes until it is killed, and starts
/// `thund run` on it; returns the run and the view's file (remove it to end the slowness).
pub fn start_a_run_that_never_ends(project: &Path) -> (Child, PathBuf) {
    let slow = project.join("transformations/04_slow.sql");
    std::fs::write(
        &slow,
        "CREATE MATERIALIZED VIEW slow AS SELECT sum(id % 7) AS s FROM range(0, 100000000000) AS r(id);\n",
    )
    .unwrap();
    let run = Command::new(env!("CARGO_BIN_EXE_thund"))
        .args(["run", "-p"])
        .arg(project)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    (run, slow)
}

/// The events a run prints with `--format jsonl`, on a channel as they are printed; the channel
/// ends with the run's output.
pub fn events_as_printed(stdout: std::process::ChildStdout) -> std::sync::mpsc::Receiver<serde_json::Value> {
    use std::io::BufRead;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout).lines().map_while(Result::ok) {
            let Ok(e) = serde_json::from_str(&line) else { continue };
            if tx.send(e).is_err() {
                break;
            }
        }
    });
    rx
}
