//! What several test binaries of the CLI share.

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
