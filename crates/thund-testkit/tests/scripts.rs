//! The test script and CI read opt-outs as the tests do: by pattern, set at all. Each script is
//! run with a clean environment holding only the variables under test, and must refuse before it
//! does anything else (its PATH has no cargo, so a refusal that did not happen would fail here
//! instead of starting a second test run).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

fn run(script: &str, args: &[&str], vars: &[(&str, &str)]) -> Output {
    let mut c = Command::new("bash");
    c.arg(repo().join(script)).args(args).env_clear().env("PATH", "/usr/bin:/bin").env("HOME", "/nonexistent");
    for (k, v) in vars {
        c.env(k, v);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

#[test]
fn opt_outs_are_matched_by_pattern_and_an_empty_value_is_set() {
    let none = run("scripts/opt-outs.sh", &[], &[("THUND_SKIPPY", "1"), ("THUND_SPARK_REMOTE", "sc://x")]);
    assert_eq!((none.status.code(), text(&none)), (Some(0), String::new()));
    let some = run(
        "scripts/opt-outs.sh",
        &[],
        &[("THUND_SKIP_SOMETHING_NEW", ""), ("THUND_BLESS", ""), ("THUND_BLESS_GOLDEN", "1"), ("THUND_SKIP_S3", "0")],
    );
    assert_eq!(some.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&some.stdout),
        "THUND_BLESS\nTHUND_BLESS_GOLDEN\nTHUND_SKIP_S3\nTHUND_SKIP_SOMETHING_NEW\n"
    );
}

#[test]
fn a_full_run_and_ci_refuse_any_opt_out_before_they_start() {
    for (script, code) in [("scripts/test.sh", 2), (".ci/run", 1)] {
        for var in ["THUND_SKIP_SPARK", "THUND_SKIP_A_NEW_SERVICE", "THUND_BLESS"] {
            let o = run(script, &[], &[(var, "")]);
            let out = text(&o);
            assert_eq!(o.status.code(), Some(code), "{script} with {var}= : {out}");
            assert!(out.contains(var) && out.contains("set"), "{script} with {var}= : {out}");
        }
    }
    let o = run("scripts/test.sh", &["--fast"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("usage: scripts/test.sh [--partial]"), "{}", text(&o));
}
