//! AUTO CDC on the native backend: what a user gets wrong is reported with the flow's file:line
//! before anything is written. The tables themselves are checked against an engine-independent
//! replay in `conformance/auto-cdc`, and under kills in `thund-cli/tests/crash.rs`.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use std::path::Path;

use common::*;

const SPEC: &str = "name: c\nlibraries:\n  - glob:\n      include: sql/**\n";

fn changes(dir: &Path, lines: &str) {
    std::fs::create_dir_all(dir.join("in")).unwrap();
    std::fs::write(dir.join("in/b0.json"), lines).unwrap();
}

fn error_of(s: &knut_thund::backend::RunSummary, flow: &str) -> String {
    let f = s.flows.iter().find(|f| f.flow.ends_with(&format!(".{flow}"))).unwrap_or_else(|| panic!("{flow}"));
    f.error.clone().unwrap_or_else(|| panic!("{flow} did not fail: {:?}", f.phase))
}

#[test]
fn columns_the_change_feed_lacks_are_named_with_the_flows_location() {
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t;\n\
         CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(feed) KEYS (id, region)\n\
           SEQUENCE BY seq COLUMNS id, name, nmae STORED AS SCD TYPE 2 TRACK HISTORY ON adress;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    changes(dir.path(), "{\"id\": 1, \"name\": \"a\", \"seq\": 1}\n");
    let (s, _) = run(dir.path());
    assert!(s.failed());
    let e = error_of(&s, "f");
    for part in ["a.sql:3:1", "`region` (KEYS)", "`nmae` (COLUMNS)", "`adress` (TRACK HISTORY ON)", "id, name, seq"] {
        assert!(e.contains(part), "{part} missing from: {e}");
    }
    assert!(!dir.path().join(".thund/tables/spark_catalog/default/t").exists(), "nothing is written");
}

#[test]
fn a_null_sequence_is_an_error_naming_the_flow_and_the_count() {
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t FLOW AUTO CDC FROM STREAM(feed) KEYS (id) SEQUENCE BY seq;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    changes(dir.path(), "{\"id\": 1, \"seq\": 1}\n{\"id\": 2, \"seq\": null}\n{\"id\": 3}\n");
    let (s, _) = run(dir.path());
    let e = error_of(&s, "t");
    assert!(e.contains("`spark_catalog.default.t`") && e.contains("2 change(s) have a NULL `SEQUENCE BY`"), "{e}");
    // Nothing applied: the next run, with the feed fixed, starts from the first change.
    assert!(query(dir.path(), "SELECT * FROM t").is_err(), "the target was written");
}

#[test]
fn a_truncate_removes_every_key_older_than_it_and_a_sequence_can_be_a_struct() {
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' APPLY AS TRUNCATE WHEN op = 'T'\n\
           SEQUENCE BY struct(day, n) COLUMNS * EXCEPT (op, day, n);\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    changes(
        dir.path(),
        "{\"id\": 1, \"v\": \"a\", \"op\": \"U\", \"day\": 1, \"n\": 9}\n\
         {\"id\": 2, \"v\": \"b\", \"op\": \"U\", \"day\": 1, \"n\": 10}\n\
         {\"id\": 1, \"v\": \"a2\", \"op\": \"U\", \"day\": 2, \"n\": 1}\n",
    );
    let (s1, _) = run(dir.path());
    assert!(!s1.failed(), "{:?}", s1.flows);
    // (2, 1) sorts after (1, 10): a struct orders field by field, not as the sum or the text.
    let rows = |d: &Path| {
        let mut r = common::rows(&query(d, "SELECT id, v FROM t").unwrap()).1;
        r.sort();
        r
    };
    assert_eq!(rows(dir.path()), [["1", "a2"], ["2", "b"]]);
    // A truncate at (3, 0) empties the table; a later change of key 2 comes back, an older one of
    // key 1 (arriving after the truncate) does not.
    std::fs::write(
        dir.path().join("in/b1.json"),
        "{\"id\": null, \"v\": null, \"op\": \"T\", \"day\": 3, \"n\": 0}\n\
         {\"id\": 2, \"v\": \"b2\", \"op\": \"U\", \"day\": 3, \"n\": 5}\n\
         {\"id\": 1, \"v\": \"old\", \"op\": \"U\", \"day\": 2, \"n\": 7}\n",
    )
    .unwrap();
    let (s2, _) = run(dir.path());
    assert!(!s2.failed(), "{:?}", s2.flows);
    assert_eq!(rows(dir.path()), [["2", "b2"]]);
    // In a later run, a change older than the truncate still falls behind it; a newer one of the
    // same key applies.
    std::fs::write(
        dir.path().join("in/b2.json"),
        "{\"id\": 1, \"v\": \"older\", \"op\": \"U\", \"day\": 2, \"n\": 8}\n\
         {\"id\": 3, \"v\": \"c\", \"op\": \"U\", \"day\": 2, \"n\": 9}\n\
         {\"id\": 2, \"v\": \"b3\", \"op\": \"U\", \"day\": 4, \"n\": 1}\n",
    )
    .unwrap();
    let (s3, _) = run(dir.path());
    assert!(!s3.failed(), "{:?}", s3.flows);
    assert_eq!(rows(dir.path()), [["2", "b3"]]);
}

#[test]
fn a_deleted_key_comes_back_from_an_older_change_only_once_its_tombstone_expired() {
    // Two SCD 1 targets of one feed: one keeps tombstones for DLT's default two days, the other
    // lets them expire at once and collects them after every batch.
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE kept FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op);\n\
         CREATE STREAMING TABLE expiring\n\
           TBLPROPERTIES ('pipelines.cdc.tombstoneGCThresholdInSeconds' = '0',\n\
                          'pipelines.cdc.tombstoneGCFrequencyInSeconds' = '0')\n\
           FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op);\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    let rows = |table: &str| {
        let mut r = common::rows(&query(dir.path(), &format!("SELECT id, v FROM {table}")).unwrap()).1;
        r.sort();
        r
    };
    let feed = |n: usize, lines: &str| {
        std::fs::write(dir.path().join(format!("in/b{n}.json")), lines).unwrap();
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{:?}", s.flows);
    };
    feed(
        0,
        "{\"id\": 1, \"v\": \"a\", \"op\": \"U\", \"seq\": 1}\n{\"id\": 2, \"v\": \"b\", \"op\": \"U\", \"seq\": 1}\n",
    );
    feed(1, "{\"id\": 1, \"v\": null, \"op\": \"D\", \"seq\": 5}\n");
    assert_eq!(rows("kept"), [["2", "b"]]);
    assert_eq!(rows("expiring"), [["2", "b"]]);
    // A change older than the delete arrives late.
    feed(2, "{\"id\": 1, \"v\": \"late\", \"op\": \"U\", \"seq\": 3}\n");
    assert_eq!(rows("kept"), [["2", "b"]], "the tombstone keeps the key deleted");
    assert_eq!(rows("expiring"), [["1", "late"], ["2", "b"]], "a collected tombstone no longer does");
}

/// A batch that fails after its history append, and before its target commit, is redone with
/// exactly its own input when the flow runs again, even though more input arrived meanwhile: the
/// later changes become a batch of their own, and none is lost from the history or the target.
#[test]
fn a_batch_that_failed_after_its_history_append_is_redone_with_its_own_input() {
    for point in ["cdc-after-history", "cdc-after-vectors", "stream-after-intent"] {
        let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE STREAMING TABLE current TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')\n\
               FLOW AUTO CDC FROM STREAM(feed) KEYS (id) SEQUENCE BY seq;\n\
             CREATE STREAMING TABLE versions FLOW AUTO CDC FROM STREAM(feed) KEYS (id) SEQUENCE BY seq\n\
               STORED AS SCD TYPE 2;\n";
        let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
        std::fs::create_dir_all(dir.path().join("in")).unwrap();
        let feed = |n: usize, line: &str| std::fs::write(dir.path().join(format!("in/b{n}.json")), line).unwrap();
        feed(0, "{\"id\": 1, \"v\": \"A\", \"seq\": 10}\n");
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{point}: {:?}", s.flows);
        // The second batch of both flows fails at `point`, its history already appended.
        feed(1, "{\"id\": 1, \"v\": \"B\", \"seq\": 20}\n");
        std::env::set_var("THUND_FAILPOINT", point);
        let (s, _) = run(dir.path());
        std::env::remove_var("THUND_FAILPOINT");
        assert!(s.failed(), "{point}: the failpoint was not reached: {:?}", s.flows);
        feed(2, "{\"id\": 1, \"v\": \"C\", \"seq\": 30}\n");
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{point}: {:?}", s.flows);
        feed(3, "{\"id\": 1, \"v\": \"LATE\", \"seq\": 25}\n");
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{point}: {:?}", s.flows);
        // Worked out by hand: the latest sequence wins (SCD 1); every change is a version (SCD 2),
        // the late one between the two it falls between.
        let current = common::rows(&query(dir.path(), "SELECT id, v, seq FROM current").unwrap()).1;
        assert_eq!(current, [["1", "C", "30"]], "{point}");
        let mut versions = common::rows(
            &query(
                dir.path(),
                "SELECT v, seq, `__START_AT`, coalesce(CAST(`__END_AT` AS STRING), 'open') FROM versions",
            )
            .unwrap(),
        )
        .1;
        versions.sort();
        let want =
            [["A", "10", "10", "20"], ["B", "20", "20", "25"], ["C", "30", "30", "open"], ["LATE", "25", "25", "30"]];
        assert_eq!(versions, want, "{point}");
    }
}

#[test]
fn a_table_property_of_the_wrong_kind_is_an_error_at_the_tables_line() {
    for (property, value) in
        [("pipelines.cdc.tombstoneGCThresholdInSeconds", "two days"), ("pipelines.autoOptimize.managed", "sometimes")]
    {
        let sql = format!(
            "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE STREAMING TABLE t TBLPROPERTIES ('{property}' = '{value}')\n\
               FLOW AUTO CDC FROM STREAM(feed) KEYS (id) SEQUENCE BY seq;\n"
        );
        let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
        changes(dir.path(), "{\"id\": 1, \"seq\": 1}\n");
        let (s, _) = run(dir.path());
        let e = error_of(&s, "t");
        assert!(e.contains("a.sql:2:1") && e.contains(property) && e.contains(value), "{e}");
    }
}

#[test]
fn a_batch_marks_its_keys_rows_deleted_and_an_independent_reader_agrees() {
    // `tests/delta_reader.py` reads the table from the protocol alone (pyarrow and pyroaring).
    let Ok(python) = std::env::var("THUND_PYTHON") else {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers");
    };
    // A table that asks for deletion vectors (by default a target has none: see below).
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')\n\
           FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op);\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let table = dir.path().join(".thund/tables/spark_catalog/default/t");
    // The expected table, replayed here: id -> (v, seq).
    let mut expected: std::collections::BTreeMap<i64, (String, i64)> = std::collections::BTreeMap::new();
    let mut batch = |n: usize, changes: Vec<(i64, &str, i64, bool)>| {
        let mut lines = String::new();
        for (id, v, seq, delete) in &changes {
            let op = if *delete { "D" } else { "U" };
            lines.push_str(&format!("{{\"id\": {id}, \"v\": \"{v}\", \"op\": \"{op}\", \"seq\": {seq}}}\n"));
            match expected.get(id) {
                Some((_, s)) if s > seq => {}
                _ if *delete => {
                    expected.remove(id);
                }
                _ => {
                    expected.insert(*id, (v.to_string(), *seq));
                }
            }
        }
        std::fs::create_dir_all(dir.path().join("in")).unwrap();
        std::fs::write(dir.path().join(format!("in/b{n}.json")), lines).unwrap();
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "{:?}", s.flows);
        let want: Vec<String> = expected.iter().map(|(id, (v, _))| format!("{id} {v}")).collect();
        let mut ours: Vec<String> = common::rows(&query(dir.path(), "SELECT id, v FROM t").unwrap())
            .1
            .into_iter()
            .map(|r| r.join(" "))
            .collect();
        ours.sort_by_key(|r| r.split(' ').next().unwrap().parse::<i64>().unwrap());
        assert_eq!(ours, want, "batch {n}: thund");
        let reader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/delta_reader.py");
        let out = std::process::Command::new(&python).arg(&reader).arg(&table).output().unwrap();
        assert!(out.status.success(), "batch {n}: {}", String::from_utf8_lossy(&out.stderr));
        let mut theirs: Vec<(i64, String)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                (r["id"].as_i64().unwrap(), format!("{} {}", r["id"], r["v"].as_str().unwrap()))
            })
            .collect();
        theirs.sort();
        assert_eq!(theirs.into_iter().map(|t| t.1).collect::<Vec<_>>(), want, "batch {n}: a reader of the protocol");
    };
    batch(0, (0..1000).map(|i| (i, "v0", 1, false)).collect());
    // A few keys change or go: their rows are marked, not rewritten.
    let few: Vec<(i64, &str, i64, bool)> =
        (0..1000).step_by(97).map(|i| (i, if i % 2 == 0 { "v1" } else { "" }, 2, i % 2 == 1)).collect();
    batch(1, few);
    let log = |v: u32| std::fs::read_to_string(table.join(format!("_delta_log/{v:020}.json"))).unwrap();
    let last = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .filter_map(|e| {
            e.unwrap().file_name().to_string_lossy().strip_suffix(".json").map(|s| s.parse::<u32>().unwrap())
        })
        .max()
        .unwrap();
    assert!(log(last).contains("\"deletionVector\""), "the batch marked rows: {}", log(last));
    assert!(
        std::fs::read_dir(&table).unwrap().any(|e| e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .starts_with("deletion_vector_")),
        "the vectors are in a file of their own"
    );
    // A late change older than what the table holds, and one more batch over the marked file.
    batch(2, vec![(3, "late", 1, false), (5, "v2", 3, false), (97, "back", 3, false)]);
    // Most keys change: the marked file is left mostly dead and is rewritten instead.
    batch(3, (0..1000).filter(|i| i % 3 != 0).map(|i| (i, "v3", 4, false)).collect());
    let adds: Vec<serde_json::Value> = log(last + 2)
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap().get("add").cloned())
        .collect();
    assert!(!adds.is_empty() && adds.iter().all(|a| a.get("deletionVector").is_none()), "{adds:?}");
}

/// By default a target has no deletion vectors, so the common readers read it: Python's
/// `deltalake` (`to_pyarrow_table`, which refuses deletion vectors, and `count`, which would
/// count rows they delete) gives the replayed table after updates and deletes, SCD 1 and 2. The
/// files batches replace are vacuumed once past the table's retention (here none).
#[test]
fn a_default_target_is_read_by_python_deltalake_and_its_replaced_files_are_vacuumed() {
    let python = std::env::var("THUND_PYTHON").unwrap_or_else(|_| {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers")
    });
    let sql = "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
         CREATE STREAMING TABLE t TBLPROPERTIES ('delta.deletedFileRetentionDuration' = 'interval 0 seconds')\n\
           FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op);\n\
         CREATE STREAMING TABLE h FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
           APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let tables = dir.path().join(".thund/tables/spark_catalog/default");
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    let change = |id: i64, v: &str, op: &str, seq: i64| {
        format!("{{\"id\": {id}, \"v\": \"{v}\", \"op\": \"{op}\", \"seq\": {seq}}}\n")
    };
    let first: String = (0..200).map(|i| change(i, "a", "U", 1)).collect();
    std::fs::write(dir.path().join("in/b0.json"), first).unwrap();
    assert!(!run(dir.path()).0.failed());
    // Updates, deletes and a late change.
    let second: String = (0..200)
        .step_by(7)
        .map(|i| match i % 3 {
            0 => change(i, "b", "U", 2),
            1 => change(i, "", "D", 2),
            _ => change(i, "old", "U", 0),
        })
        .collect();
    std::fs::write(dir.path().join("in/b1.json"), second).unwrap();
    assert!(!run(dir.path()).0.failed());
    let script = "import json, os, sys\nfrom deltalake import DeltaTable\n\
                  t = DeltaTable(sys.argv[1])\n\
                  rows = t.to_pyarrow_table().to_pylist()\n\
                  print(json.dumps({'count': t.count(), 'rows': sorted([r['id'], r['v'], r.get('__END_AT') is None] for r in rows)}))\n\
                  sys.stdout.flush()\nos._exit(0)\n";
    let read = |name: &str| -> serde_json::Value {
        let out = std::process::Command::new(&python).arg("-c").arg(script).arg(tables.join(name)).output().unwrap();
        assert!(out.status.success(), "{name}: {}", String::from_utf8_lossy(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // The replay: SCD 1 keeps each key's latest change unless it is a delete.
    let mut latest: Vec<serde_json::Value> = Vec::new();
    for i in 0..200i64 {
        match (i % 7 == 0, i % 3) {
            (true, 0) => latest.push(serde_json::json!([i, "b", true])),
            (true, 1) => {}
            _ => latest.push(serde_json::json!([i, "a", true])),
        }
    }
    let t = read("t");
    assert_eq!(t["rows"], serde_json::Value::Array(latest.clone()), "{t}");
    assert_eq!(t["count"], latest.len(), "{t}");
    // SCD 2: each key's versions; the open ones are SCD 1's rows.
    let h = read("h");
    let open: Vec<&serde_json::Value> = h["rows"].as_array().unwrap().iter().filter(|r| r[2] == true).collect();
    assert_eq!(open, latest.iter().collect::<Vec<_>>(), "{h}");
    let updated = (0..200).step_by(7).filter(|i| i % 3 == 0).count();
    let deleted = (0..200).step_by(7).filter(|i| i % 3 == 1).count();
    let late = (0..200).step_by(7).filter(|i| i % 3 == 2).count();
    assert_eq!(h["count"], 200 + updated + late, "a version per insert, update and late change: {h}");
    assert_eq!(h["rows"].as_array().unwrap().len(), 200 + updated + late, "{h}");
    assert!(deleted > 0);
    for name in ["t", "h"] {
        let log = std::fs::read_dir(tables.join(name).join("_delta_log")).unwrap();
        let vectors = log
            .filter_map(|e| std::fs::read_to_string(e.unwrap().path()).ok())
            .any(|c| c.contains("\"deletionVector\":{"));
        assert!(!vectors, "{name} has deletion vectors");
    }
    // The batch rewrote files of `t`; with no retention, those it replaced are gone from disk.
    let on_disk: std::collections::BTreeSet<String> = std::fs::read_dir(tables.join("t"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet"))
        .collect();
    assert_eq!(on_disk, live_files(&tables.join("t")), "replaced files are vacuumed");
}

/// The data files a Delta table at `table` holds now, from its commits.
fn live_files(table: &Path) -> std::collections::BTreeSet<String> {
    let mut commits: Vec<_> = std::fs::read_dir(table.join("_delta_log"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    commits.sort();
    let mut files = std::collections::BTreeSet::new();
    for commit in commits {
        for line in std::fs::read_to_string(commit).unwrap().lines() {
            let action: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(path) = action.pointer("/remove/path").and_then(|p| p.as_str()) {
                files.remove(path);
            }
            if let Some(path) = action.pointer("/add/path").and_then(|p| p.as_str()) {
                files.insert(path.to_string());
            }
        }
    }
    files
}

#[test]
fn small_batches_fold_the_small_files_they_leave_and_the_tables_stay_what_they_were() {
    // Twenty batches of a few keys each into SCD 1 and SCD 2 targets, each beside the same target
    // with folding turned off: both must hold the same rows after every batch (and the SCD 1
    // target a replay of the feed, as a reader of the protocol alone sees it), while only the
    // folding targets keep their file count down.
    let Ok(python) = std::env::var("THUND_PYTHON") else {
        panic!("THUND_PYTHON is not set: run the tests with scripts/test.sh, which installs the python readers");
    };
    let target = |name: &str, optimize: &str, scd: &str| {
        format!(
            "CREATE STREAMING TABLE {name} TBLPROPERTIES ('pipelines.autoOptimize.managed' = '{optimize}',\n\
                 'delta.enableDeletionVectors' = 'true')\n\
               FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
               APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE {scd};\n"
        )
    };
    let sql = format!(
        "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n{}{}{}{}",
        target("t", "true", "1"),
        target("t_unfolded", "false", "1"),
        target("h", "true", "2"),
        target("h_unfolded", "FALSE", "2"),
    );
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql)]);
    std::fs::create_dir_all(dir.path().join("in")).unwrap();
    let tables = dir.path().join(".thund/tables/spark_catalog/default");
    let sorted = |table: &str| {
        let mut r = common::rows(&query(dir.path(), &format!("SELECT * FROM {table}")).unwrap()).1;
        r.sort();
        r
    };
    let mut expected: std::collections::BTreeMap<i64, String> = std::collections::BTreeMap::new();
    let mut state = 11u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    // The reader runs every fourth batch: the last one (20) comes after the second fold.
    for batch in 0..21i64 {
        let mut lines = String::new();
        let keys: Vec<i64> = match batch {
            0 => (0..2000).collect(),
            _ => (0..6).map(|_| next(2000) as i64).collect(),
        };
        for id in keys {
            let delete = batch > 0 && next(4) == 0;
            let v = format!("v{batch}-{}", next(3));
            let op = if delete { "D" } else { "U" };
            lines.push_str(&format!("{{\"id\": {id}, \"v\": \"{v}\", \"op\": \"{op}\", \"seq\": {batch}}}\n"));
            match delete {
                true => expected.remove(&id),
                false => expected.insert(id, v),
            };
        }
        std::fs::write(dir.path().join(format!("in/b{batch:02}.json")), lines).unwrap();
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "batch {batch}: {:?}", s.flows);
        let want: Vec<Vec<String>> = expected.iter().map(|(id, v)| vec![id.to_string(), v.clone()]).collect();
        let mut ours = common::rows(&query(dir.path(), "SELECT id, v FROM t").unwrap()).1;
        ours.sort_by_key(|r| r[0].parse::<i64>().unwrap());
        assert_eq!(ours, want, "batch {batch}: t");
        assert_eq!(sorted("t"), sorted("t_unfolded"), "batch {batch}");
        assert_eq!(sorted("h"), sorted("h_unfolded"), "batch {batch}");
        if batch % 4 != 0 {
            continue;
        }
        let reader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/delta_reader.py");
        let out = std::process::Command::new(&python).arg(&reader).arg(tables.join("t")).output().unwrap();
        assert!(out.status.success(), "batch {batch}: {}", String::from_utf8_lossy(&out.stderr));
        let mut theirs: Vec<(i64, String)> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| {
                let r: serde_json::Value = serde_json::from_str(l).unwrap();
                (r["id"].as_i64().unwrap(), r["v"].as_str().unwrap().to_string())
            })
            .collect();
        theirs.sort();
        assert_eq!(theirs, expected.clone().into_iter().collect::<Vec<_>>(), "batch {batch}: a reader of the protocol");
    }
    // Checkpoints, as Spark would have written them: one at version 10, and `_last_checkpoint`
    // naming the newest. A reader that starts from it (and skips the commits before it) sees the
    // rows a replay of every commit sees.
    let from_log = |table: &str, args: &[&str]| {
        let reader = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/delta_reader.py");
        let out = std::process::Command::new(&python).arg(&reader).args(args).arg(tables.join(table)).output().unwrap();
        assert!(out.status.success(), "{table} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let mut rows: Vec<String> = String::from_utf8(out.stdout).unwrap().lines().map(String::from).collect();
        rows.sort();
        rows
    };
    for table in ["feed", "t", "h"] {
        let log = tables.join(table).join("_delta_log");
        assert!(log.join("00000000000000000010.checkpoint.parquet").is_file(), "{table}: no checkpoint at version 10");
        let last: serde_json::Value =
            serde_json::from_slice(&std::fs::read(log.join("_last_checkpoint")).unwrap()).unwrap();
        assert!(last["version"].as_u64().unwrap() >= 10, "{table}: {last}");
        let replayed = from_log(table, &[]);
        assert!(!replayed.is_empty(), "{table}");
        assert_eq!(
            from_log(table, &["--from-checkpoint"]),
            replayed,
            "{table}: the checkpoint differs from its commits"
        );
    }
    for (folded, unfolded) in [("t", "t_unfolded"), ("h", "h_unfolded")] {
        let (folded, unfolded) = (live_files(&tables.join(folded)).len(), live_files(&tables.join(unfolded)).len());
        assert!(unfolded > 20, "without folding each batch leaves a file: {unfolded}");
        assert!(folded <= 9, "{folded} files, {unfolded} without folding");
    }
}

#[test]
fn random_change_feeds_over_many_runs_equal_a_replay_of_the_whole_feed() {
    // The conformance case's three targets (SCD 1, SCD 1 ignoring NULL updates, SCD 2 tracking
    // name and city) fed random batches over a dozen keys: most changes follow their key's last
    // one, some arrive late (behind later changes or a delete), some are deletes, some carry
    // NULLs. After every run each table must equal the case's replay of the whole feed.
    let seed: u64 = std::env::var("THUND_CDC_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
    });
    eprintln!("THUND_CDC_SEED={seed}");
    let mut state = seed | 1;
    let mut next = move |n: u64| {
        // xorshift64*: enough for test data, and replayable from the printed seed.
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    };
    let dir = tempfile::tempdir().unwrap();
    copy_dir(&repo_root().join("conformance/auto-cdc"), dir.path());
    let data = dir.path().join("data");
    let feed = data.join("changes");
    std::fs::create_dir_all(&feed).unwrap();
    fill_spec(dir.path(), &dir.path().join("storage"), &data, None);
    // The SCD 2 target once more, with deletion vectors: its rows of a touched key are marked
    // deleted instead of their files rewritten. It must equal the same replay.
    let history_sql = std::fs::read_to_string(dir.path().join("transformations/changes.sql")).unwrap();
    let start = history_sql.find("CREATE STREAMING TABLE customers_history").unwrap();
    let rewritten = history_sql[start..].replace(
        "customers_history FLOW",
        "customers_history_marked TBLPROPERTIES ('delta.enableDeletionVectors' = 'true') FLOW",
    );
    assert!(rewritten.contains("customers_history_marked"), "{rewritten}");
    std::fs::write(dir.path().join("transformations/rewritten.sql"), rewritten).unwrap();
    let mut used = std::collections::HashSet::new();
    for batch in 0..8u64 {
        let mut lines = String::new();
        for i in 0..20u64 {
            // Unique sequences: ties are ordered by arrival, which a sorted replay cannot see.
            let seq = loop {
                let s = match next(10) {
                    0 | 1 => 1 + next(batch * 100 + 100), // late: anywhere before this batch
                    _ => batch * 100 + 100 + next(100),
                };
                if used.insert(s) {
                    break s;
                }
            };
            let id = 1 + next(12);
            let delete = batch > 0 && next(100) < 15;
            let pick = |v: &[&str], r: u64| v[(r % v.len() as u64) as usize].to_string();
            let (name, city, email) = match delete {
                true => ("null".to_string(), "null".to_string(), "null".to_string()),
                false => (
                    format!("\"{}\"", pick(&["Ann", "Bob"], next(2))),
                    // The first batch has no NULLs, so the feed's columns are typed.
                    match next(10) {
                        0 if batch > 0 => "null".to_string(),
                        r => format!("\"{}\"", pick(&["Oslo", "Bergen", "Molde"], r)),
                    },
                    match next(10) {
                        0 if batch > 0 || i > 0 => "null".to_string(),
                        r => format!("\"{}@x.no\"", pick(&["a", "b", "c", "d"], r)),
                    },
                ),
            };
            let op = if delete { "DELETE" } else { "UPSERT" };
            lines.push_str(&format!(
                "{{\"seq\": {seq}, \"id\": {id}, \"op\": \"{op}\", \"name\": {name}, \"city\": {city}, \"email\": {email}}}\n"
            ));
        }
        std::fs::write(feed.join(format!("b{batch:02}.json")), lines).unwrap();
        let (s, _) = run(dir.path());
        assert!(!s.failed(), "seed {seed}, run {batch}: {:?}", s.flows);
        let expected = dir.path().join(format!("expected-{batch}"));
        let replay = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/cdc_replay.py");
        let out = std::process::Command::new("python3").arg(&replay).arg(&feed).arg(&expected).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        for (table, replayed) in [
            ("customers", "customers"),
            ("customers_keep_values", "customers_keep_values"),
            ("customers_history", "customers_history"),
            ("customers_history_marked", "customers_history"),
        ] {
            let want = read_expected(&expected.join(format!("{replayed}.csv")));
            let ours = query_table(dir.path(), &format!("SELECT * FROM {table}")).unwrap();
            if let Err(e) = compare_tables(&want, &ours) {
                panic!("seed {seed}, run {batch}, {table}: {e}\nreplay THUND_CDC_SEED={seed}");
            }
        }
    }
}
