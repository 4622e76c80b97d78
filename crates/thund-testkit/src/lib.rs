//! # thund-testkit — how a test opts out of a live service, and how that is never silent
//!
//! The suites of this workspace run against the real services they test: a Spark Connect
//! server, an S3-compatible server, a headless browser. A missing service is a failure. The
//! only way not to run such a test is an explicit opt-out variable (`THUND_SKIP_SPARK`,
//! `THUND_SKIP_S3`, `THUND_SKIP_BROWSER`), and a golden file is rewritten instead of compared
//! only under `THUND_BLESS`.
//!
//! Two rules keep those opt-outs honest, and this crate is where the tests keep them:
//! - **Set means set.** A variable counts as set when it is present at all, an empty value
//!   included, exactly as `scripts/opt-outs.sh` reads it for the test script and CI. An inherited
//!   `THUND_SKIP_SPARK=` cannot switch tests off while the script believes they ran.
//! - **Every skip is recorded.** [`opt_out`] prints `SKIPPED: …` and, when the test script points
//!   `THUND_TEST_SKIPS` at a file, appends one line to it. The script counts those lines at the
//!   end of a run and fails a full run that skipped anything; nextest hides a passing test's
//!   output, so the count is what makes a skip visible.
//!
//! The live Spark suites run on every Spark line a user may run SDP on ([`SPARK_LINES`]): the
//! test script starts one server per line and exports its URL; [`spark_url`] is how a test asks
//! for one, a missing URL being a failure like any missing service.
//!
//! The crate has no dependencies: it is a dev-dependency of every crate, the light ones included.

use std::io::Write;

/// The variable through which the test script asks for a record of every skip: a file path,
/// one line appended per skip.
pub const SKIP_RECORD: &str = "THUND_TEST_SKIPS";

/// Whether the opt-out variable `var` is set (present at all, empty included). When it is,
/// the skip of `what` is printed and recorded, and the caller returns without running.
///
/// ```
/// // A test that needs a live service:
/// if thund_testkit::opt_out("THUND_SKIP_EXAMPLE_SERVICE", "an example") {
///     return;
/// }
/// ```
pub fn opt_out(var: &str, what: &str) -> bool {
    if std::env::var_os(var).is_none() {
        return false;
    }
    record(&format!("SKIPPED: {what} ({var} is set)"));
    true
}

/// Whether golden files are to be rewritten (`THUND_BLESS` set at all). A blessing run compares
/// nothing, so it is recorded as a skip of `what` too.
pub fn blessing(what: &str) -> bool {
    if std::env::var_os("THUND_BLESS").is_none() {
        return false;
    }
    record(&format!("BLESSED, not compared: {what} (THUND_BLESS is set)"));
    true
}

/// A Spark line the live suites run on, and the variable holding its server's URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SparkLine {
    /// `major.minor`, as `knut_pipelines::versions` keys its facts.
    pub line: &'static str,
    /// The variable `scripts/test.sh` exports the URL of that line's server in.
    pub url_var: &'static str,
}

/// Every Spark line with a pipelines service, oldest first; `scripts/test.sh` starts each line's
/// newest release (4.1.4, 4.2.1, 4.3.0).
pub const SPARK_LINES: [SparkLine; 3] = [
    SparkLine { line: "4.1", url_var: "THUND_SPARK_REMOTE" },
    SparkLine { line: "4.2", url_var: "THUND_SPARK_REMOTE_4_2" },
    SparkLine { line: "4.3", url_var: "THUND_SPARK_REMOTE_4_3" },
];

/// The URL of the Spark server of `line` (`4.1`, `4.2`, `4.3`) for the test of `what`; `None`
/// (recorded as a skip) under `THUND_SKIP_SPARK`. A missing URL fails the test: a suite that
/// skips its server proves nothing.
pub fn spark_url(line: &str, what: &str) -> Option<String> {
    let Some(l) = SPARK_LINES.iter().find(|l| l.line == line) else {
        panic!("Spark {line} is not one of the lines tested: {SPARK_LINES:?}")
    };
    if opt_out("THUND_SKIP_SPARK", &format!("{what} on Spark {line}")) {
        return None;
    }
    Some(url_of(l))
}

/// The URLs of every line's server, oldest first, for the test of `what`; `None` under
/// `THUND_SKIP_SPARK` (one skip recorded).
pub fn spark_urls(what: &str) -> Option<Vec<(&'static str, String)>> {
    if opt_out("THUND_SKIP_SPARK", &format!("{what} on every Spark line")) {
        return None;
    }
    Some(SPARK_LINES.iter().map(|l| (l.line, url_of(l))).collect())
}

/// The Python of the pyspark `version` venv the test script installs (`scripts/spark-server.sh
/// install`; under `$THUND_SPARK_CACHE`, default `~/.cache/thund-spark`): the reference client
/// of that version. A missing venv fails the test.
pub fn spark_venv_python(version: &str) -> std::path::PathBuf {
    let cache = std::env::var_os("THUND_SPARK_CACHE").map(std::path::PathBuf::from).unwrap_or_else(|| {
        std::path::PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".cache/thund-spark")
    });
    let python = cache.join(version).join("bin/python");
    if !python.exists() {
        panic!("no pyspark {version} venv at {}: run `scripts/spark-server.sh install {version}`", python.display());
    }
    python
}

/// The URL exported for `line`'s server; a missing one fails the test.
fn url_of(line: &SparkLine) -> String {
    match std::env::var(line.url_var) {
        Ok(url) if !url.is_empty() => url,
        _ => panic!(
            "{} is not set: start a Spark {} server (`scripts/spark-server.sh start <version>`) and export its \
             URL, or run scripts/test.sh, which starts one per line",
            line.url_var, line.line
        ),
    }
}

/// Prints `line` to both streams (nextest shows one or the other depending on how it is run)
/// and appends it to the skip record, if the test script asked for one.
fn record(line: &str) {
    println!("{line}");
    eprintln!("{line}");
    let Some(path) = std::env::var_os(SKIP_RECORD) else { return };
    // A record that cannot be written must not turn into a silent skip: fail the test instead.
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{} :: {line}", std::thread::current().name().unwrap_or("?")));
    if let Err(e) = written {
        panic!("{line}; and the skip could not be recorded in {}: {e}", std::path::Path::new(&path).display());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test changes the environment, so nothing else here reads it concurrently.
    #[test]
    fn an_empty_value_is_set_and_every_skip_is_recorded() {
        let dir = std::env::temp_dir().join(format!("thund-testkit-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let record_file = dir.join("skips");
        let var = "THUND_SKIP_TESTKIT_SELF_TEST";
        // SAFETY: this is the only test of the crate touching the environment.
        unsafe {
            std::env::set_var(SKIP_RECORD, &record_file);
            std::env::remove_var(var);
        }
        assert!(!opt_out(var, "not skipped"));
        unsafe { std::env::set_var(var, "") };
        assert!(opt_out(var, "the empty value"));
        unsafe { std::env::set_var(var, "1") };
        assert!(opt_out(var, "the value 1"));
        let lines = std::fs::read_to_string(&record_file).unwrap();
        let lines: Vec<&str> = lines.lines().collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(lines[0].ends_with("SKIPPED: the empty value (THUND_SKIP_TESTKIT_SELF_TEST is set)"), "{lines:?}");
        assert!(lines[1].ends_with("SKIPPED: the value 1 (THUND_SKIP_TESTKIT_SELF_TEST is set)"), "{lines:?}");
        unsafe {
            std::env::remove_var(var);
            std::env::remove_var(SKIP_RECORD);
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
