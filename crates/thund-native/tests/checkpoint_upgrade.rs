//! A pipeline whose storage an earlier release wrote (checkpoint format 2, every kind's fields
//! side by side) runs on: each flow's checkpoint is read as its kind's state, and the next batch
//! continues exactly where that release left off.
//!
//! `tests/fixtures/checkpoint-v2/` is a project as `thund run` of the release before format 3
//! left it after one run (its `.thund/` storage, event log left out): a plain append, a backfill
//! run once, an event-time aggregation with open windows, AUTO CDC of SCD type 1 and 2, and a
//! parquet sink. The second batch here is written so that every kind's kept state decides its
//! answer; the expected tables are worked out by hand from the two batches.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;

use common::{copy_dir, query, rows, run_with};
use knut_thund::backend::RunOptions;

fn fixture() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/checkpoint-v2"), dir.path());
    dir
}

/// The rows of `sql` over the project's tables, each as its values joined by `|`.
fn lines(dir: &Path, sql: &str) -> Vec<String> {
    let batches = query(dir, sql).unwrap_or_else(|e| panic!("{sql}: {e}"));
    rows(&batches).1.into_iter().map(|r| r.join("|")).collect()
}

fn state_json(dir: &Path, table: &str, flow: &str) -> serde_json::Value {
    let path = dir
        .join(format!(".thund/checkpoints/spark_catalog/default/{table}/spark_catalog.2Edefault.2E{flow}/state.json"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))).unwrap()
}

#[test]
fn a_pipeline_checkpointed_in_format_2_continues_exactly_where_it_stopped() {
    let dir = fixture();
    let p = dir.path();
    // What the earlier release left: format 2, with the kinds' fields at the top level.
    let before = state_json(p, "latest", "latest_cdc");
    assert_eq!(before["format_version"], 2, "{before}");
    let collected_at = before["tombstones_collected_at"].as_i64().expect("an SCD 1 flow's collection time");
    assert!(state_json(p, "per_window", "per_window")["window_state"].is_string());

    std::fs::write(
        p.join("data/changes/2.json"),
        concat!(
            r#"{"id": 1, "seq": 15, "name": "a-late", "op": "U", "ts": "2026-01-01T10:16:00Z"}"#,
            "\n",
            r#"{"id": 3, "seq": 30, "name": "c2", "op": "U", "ts": "2026-01-01T10:21:00Z"}"#,
            "\n",
            r#"{"id": 4, "seq": 31, "name": "d1", "op": "U", "ts": "2026-01-01T10:33:00Z"}"#,
            "\n",
            r#"{"id": 2, "seq": 32, "name": "b2", "op": "U", "ts": "2026-01-01T10:34:00Z"}"#,
            "\n",
        ),
    )
    .unwrap();
    let (summary, _) = run_with(p, RunOptions::default());
    assert!(!summary.failed(), "{summary:?}");

    // Each change once: the first batch's five were not read again.
    assert_eq!(lines(p, "SELECT count(*), count(DISTINCT seq) FROM changes"), vec!["9|9"]);
    // The backfill ran in the first run only.
    assert_eq!(lines(p, "SELECT count(*), sum(CASE WHEN id >= 100 THEN 1 ELSE 0 END) FROM all_changes"), vec!["11|2"]);
    // 10:00 closed in the first run; 10:10 held three rows open across the upgrade and gets the
    // fourth (10:16) now, as the watermark reaches 10:29; 10:20 stays open.
    assert_eq!(
        lines(p, "SELECT CAST(window_start AS STRING) AS start, changes FROM per_window ORDER BY start"),
        vec!["2026-01-01 10:00:00|2", "2026-01-01 10:10:00|4"]
    );
    // SCD 1: id 1's change at 15 is late (20 applied), id 2 comes back after its delete at 21.
    assert_eq!(
        lines(p, "SELECT id, seq, name FROM latest ORDER BY id"),
        vec!["1|20|a2", "2|32|b2", "3|30|c2", "4|31|d1"]
    );
    // SCD 2: the late change splits id 1's first version.
    assert_eq!(
        lines(p, "SELECT id, name, `__START_AT`, coalesce(CAST(`__END_AT` AS STRING), '-') FROM versions ORDER BY id, `__START_AT`"),
        vec![
            "1|a1|10|15",
            "1|a-late|15|20",
            "1|a2|20|-",
            "2|b1|11|21",
            "2|b2|32|-",
            "3|c1|12|30",
            "3|c2|30|-",
            "4|d1|31|-"
        ]
    );
    // The sink took the second batch's rows once.
    let sink = lines(p, "SELECT count(*), count(DISTINCT seq) FROM parquet.`out/exported`");
    assert_eq!(sink, vec!["9|9"]);

    // Every checkpoint a batch committed is now format 3, with its kind's own state.
    let kinds = [
        ("changes", "changes", "append"),
        ("all_changes", "all_changes", "append"),
        ("per_window", "per_window", "windowed"),
        ("latest", "latest_cdc", "auto_cdc"),
        ("versions", "versions", "auto_cdc"),
        ("exported", "export", "append"),
    ];
    for (table, flow, kind) in kinds {
        let s = state_json(p, table, flow);
        assert_eq!((s["format_version"].as_i64(), s["state"]["kind"].as_str()), (Some(3), Some(kind)), "{flow}: {s}");
        assert!(s.get("once_done").is_none() && s.get("watermark").is_none(), "{flow}: {s}");
    }
    // The backfill had run: read as done from format 2, it ran no batch, so its file is as it was.
    let backfill = state_json(p, "all_changes", "backfill");
    assert_eq!((backfill["format_version"].as_i64(), backfill["once_done"].as_bool()), (Some(2), Some(true)));
    // Kept across the upgrade: the last collection of tombstones (its period has not passed).
    assert_eq!(state_json(p, "latest", "latest_cdc")["state"]["tombstones_collected_at"].as_i64(), Some(collected_at));
}
