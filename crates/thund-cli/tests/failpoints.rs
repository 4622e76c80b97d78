//! Failpoints: `thund run` dies (abort, as `kill -9`) at each step of each commit protocol, in
//! each kind of flow, then runs again; every input row is then in every table and sink exactly
//! once, and every view says what its inputs hold. The expected tables are computed here from
//! the input rows, not taken from a run.
//!
//! Each scenario is one failpoint (`thund-native/src/failpoint.rs` lists them) scoped to one flow
//! or dataset, and runs on a local storage root and on an `s3://` one (the S3-compatible test
//! server at `THUND_S3_ENDPOINT`; `THUND_SKIP_S3=1` opts out of those, and says SKIPPED).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::Path;
use std::process::{Command, Output};

/// Every kind of flow with a commit protocol: a streaming table from files, a once flow and an
/// append flow into one table, sinks of all four formats, an incrementally refreshed view and a
/// recomputed one.
const SQL: &str = "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
     CREATE STREAMING TABLE backfilled;\n\
     CREATE FLOW backfill AS INSERT INTO ONCE backfilled BY NAME SELECT id, v FROM read_files('seed', format => 'json');\n\
     CREATE FLOW live AS INSERT INTO backfilled BY NAME SELECT id, v FROM STREAM(bronze);\n\
     CREATE MATERIALIZED VIEW totals AS SELECT id % 3 AS k, count(*) AS n, sum(v) AS s FROM bronze GROUP BY id % 3;\n\
     CREATE MATERIALIZED VIEW everything AS SELECT count(*) AS n, sum(v) AS s FROM backfilled;\n\
     CREATE SINK to_parquet USING parquet OPTIONS (path 'out/parquet');\n\
     CREATE FLOW export_parquet AS INSERT INTO to_parquet SELECT id, v FROM STREAM(bronze);\n\
     CREATE SINK to_csv USING csv OPTIONS (path 'out/csv');\n\
     CREATE FLOW export_csv AS INSERT INTO to_csv SELECT id, v FROM STREAM(bronze);\n\
     CREATE SINK to_json USING json OPTIONS (path 'out/json');\n\
     CREATE FLOW export_json AS INSERT INTO to_json SELECT id, v FROM STREAM(bronze);\n\
     CREATE SINK to_delta USING delta OPTIONS (path 'out/delta');\n\
     CREATE FLOW export_delta AS INSERT INTO to_delta SELECT id, v FROM STREAM(bronze);\n";

/// The same pipeline defined in Python (`pyspark.pipelines`), but for the once flow, which
/// pyspark 4.1's `append_flow` cannot declare: it stays in a SQL file beside it.
const PYTHON: &str = "from pyspark import pipelines as dp\n\
     from pyspark.sql import SparkSession\n\
     from pyspark.sql import functions as F\n\n\
     spark = SparkSession.active()\n\n\n\
     @dp.table\n\
     def bronze():\n    return spark.readStream.format(\"json\").load(\"in\")\n\n\n\
     dp.create_streaming_table(\"backfilled\")\n\n\n\
     @dp.append_flow(target=\"backfilled\")\n\
     def live():\n    return spark.readStream.table(\"bronze\").select(\"id\", \"v\")\n\n\n\
     @dp.materialized_view\n\
     def totals():\n    \
     return spark.read.table(\"bronze\").groupBy((F.col(\"id\") % 3).alias(\"k\")).agg(F.count(\"*\").alias(\"n\"), F.sum(\"v\").alias(\"s\"))\n\n\n\
     @dp.materialized_view\n\
     def everything():\n    return spark.read.table(\"backfilled\").agg(F.count(\"*\").alias(\"n\"), F.sum(\"v\").alias(\"s\"))\n\n\n\
     for fmt in [\"parquet\", \"csv\", \"json\", \"delta\"]:\n    \
     dp.create_sink(f\"to_{fmt}\", format=fmt, options={\"path\": f\"out/{fmt}\"})\n\n    \
     @dp.append_flow(target=f\"to_{fmt}\", name=f\"export_{fmt}\")\n    \
     def export():\n        return spark.readStream.table(\"bronze\").select(\"id\", \"v\")\n";

const PYTHON_ONCE: &str = "CREATE FLOW backfill AS INSERT INTO ONCE backfilled BY NAME SELECT id, v FROM read_files('seed', format => 'json');\n";

/// How the pipeline under test is defined.
#[derive(Clone, Copy)]
enum Definitions {
    Sql,
    Python,
}

const BATCHES: u64 = 3;
const SEED_IDS: std::ops::Range<u64> = 1000..1005;

fn v_of(id: u64) -> u64 {
    if SEED_IDS.contains(&id) {
        7
    } else {
        id * 3
    }
}

fn write_batch(dir: &Path, i: u64) {
    let folder = dir.join(format!("in/b{i:02}"));
    std::fs::create_dir_all(&folder).unwrap();
    let lines: String = (i * 10..i * 10 + 10).map(|id| format!("{{\"id\": {id}, \"v\": {}}}\n", v_of(id))).collect();
    std::fs::write(folder.join("part.json"), lines).unwrap();
}

fn project(dir: &Path, storage: Option<&str>, definitions: Definitions) {
    let storage = storage.map(|s| format!("storage: {s}\n")).unwrap_or_default();
    std::fs::write(
        dir.join("spark-pipeline.yml"),
        format!("name: faults\n{storage}libraries:\n  - glob:\n      include: sql/**\n"),
    )
    .unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    match definitions {
        Definitions::Sql => std::fs::write(dir.join("sql/a.sql"), SQL).unwrap(),
        Definitions::Python => {
            std::fs::write(dir.join("sql/a.py"), PYTHON).unwrap();
            std::fs::write(dir.join("sql/once.sql"), PYTHON_ONCE).unwrap();
        }
    }
    std::fs::create_dir_all(dir.join("seed")).unwrap();
    let seed: String = SEED_IDS.map(|id| format!("{{\"id\": {id}, \"v\": {}}}\n", v_of(id))).collect();
    std::fs::write(dir.join("seed/rows.json"), seed).unwrap();
}

/// Where a scenario runs: a local root, or S3 with the server's settings.
struct Root {
    env: Vec<(&'static str, String)>,
    storage: Option<String>,
}

impl Root {
    fn local() -> Self {
        Root { env: Vec::new(), storage: None }
    }

    /// An `s3://` root of its own under the test bucket, or `None` when S3 tests are opted out.
    fn s3(scenario: &str) -> Option<Self> {
        if thund_testkit::opt_out("THUND_SKIP_S3", &format!("the S3 failpoint scenario {scenario}")) {
            return None;
        }
        let endpoint = std::env::var("THUND_S3_ENDPOINT").unwrap_or_else(|_| {
            panic!("THUND_S3_ENDPOINT is not set: start a server with `scripts/s3-server.sh start` and export its URL")
        });
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
        let scenario: String = scenario.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
        Some(Root {
            env: vec![
                ("AWS_ENDPOINT_URL", endpoint),
                ("AWS_ALLOW_HTTP", "true".into()),
                ("AWS_ACCESS_KEY_ID", "test".into()),
                ("AWS_SECRET_ACCESS_KEY", "test".into()),
                ("AWS_REGION", "us-east-1".into()),
                ("AWS_EC2_METADATA_DISABLED", "true".into()),
                // A killed run's lease holds the lock until it expires: short, so the run after
                // a death waits seconds, not a minute.
                ("THUND_LOCK_LEASE", "4".into()),
            ],
            storage: Some(format!("s3://thund-test/faults/{}_{now}/{scenario}", std::process::id())),
        })
    }

    fn thund(&self, dir: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_thund"));
        c.args(args).arg("-p").arg(dir).env("NO_COLOR", "1");
        for (k, v) in &self.env {
            c.env(k, v);
        }
        c
    }

    fn run(&self, dir: &Path, args: &[&str]) -> Output {
        let mut full = vec!["run"];
        full.extend_from_slice(args);
        self.thund(dir, &full).output().unwrap()
    }

    fn query(&self, dir: &Path, sql: &str) -> String {
        let o = self.thund(dir, &["query", sql, "--format", "csv"]).output().unwrap();
        assert!(o.status.success(), "{sql}: {} ({})", text(&o), o.status);
        String::from_utf8(o.stdout).unwrap()
    }
}

fn text(o: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// One place to die: a failpoint, scoped, and when.
struct Scenario {
    point: &'static str,
    scope: &'static str,
    /// The batches whose run dies there (each is then rerun to the end).
    dies_in: &'static [u64],
    /// Arguments of the run that dies (a full refresh, for the reset's steps).
    args: &'static [&'static str],
}

const EVERY_BATCH: &[u64] = &[0, 1, 2];

/// The tables every scenario must end with, from the input rows alone.
fn expected_rows() -> String {
    let stream: Vec<u64> = (0..BATCHES * 10).collect();
    let mut out = String::from("t,id,v\n");
    let mut add = |t: &str, ids: &mut dyn Iterator<Item = u64>| {
        for id in ids {
            out.push_str(&format!("{t},{id},{}\n", v_of(id)));
        }
    };
    add("backfilled", &mut stream.iter().copied().chain(SEED_IDS));
    add("bronze", &mut stream.iter().copied());
    for sink in ["csv", "delta", "json", "parquet"] {
        add(sink, &mut stream.iter().copied());
    }
    out
}

fn expected_views() -> String {
    let stream: Vec<u64> = (0..BATCHES * 10).collect();
    let all: Vec<u64> = stream.iter().copied().chain(SEED_IDS).collect();
    let mut out = format!("k,n,s\n-1,{},{}\n", all.len(), all.iter().map(|id| v_of(*id)).sum::<u64>());
    for k in 0..3 {
        let ids: Vec<u64> = stream.iter().copied().filter(|id| id % 3 == k).collect();
        out.push_str(&format!("{k},{},{}\n", ids.len(), ids.iter().map(|id| v_of(*id)).sum::<u64>()));
    }
    out
}

const ROWS: &str = "SELECT * FROM (\n\
     SELECT 'bronze' AS t, CAST(id AS BIGINT) AS id, CAST(v AS BIGINT) AS v FROM bronze\n\
     UNION ALL SELECT 'backfilled', id, v FROM backfilled\n\
     UNION ALL SELECT 'parquet', id, v FROM parquet.`out/parquet`\n\
     UNION ALL SELECT 'csv', CAST(id AS BIGINT), CAST(v AS BIGINT) FROM read_files('out/csv', format => 'csv', header => true)\n\
     UNION ALL SELECT 'json', id, v FROM json.`out/json`\n\
     UNION ALL SELECT 'delta', id, v FROM delta.`out/delta`) ORDER BY t, id";

const VIEWS: &str = "SELECT CAST(k AS BIGINT) AS k, n, s FROM totals\n\
     UNION ALL SELECT -1, n, s FROM everything ORDER BY k";

/// Runs every batch, dying where the scenario says and rerunning; then checks every table.
fn play(root: &Root, s: &Scenario, definitions: Definitions) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    project(dir, root.storage.as_deref(), definitions);
    let failpoint = format!("{}@{}", s.point, s.scope);
    for i in 0..BATCHES {
        write_batch(dir, i);
        if s.dies_in.contains(&i) {
            let mut c = root.thund(dir, &["run"]);
            c.args(s.args).env("THUND_FAILPOINT", &failpoint).env("THUND_FAILPOINT_KILL", "1");
            let died = c.output().unwrap();
            assert!(!died.status.success(), "batch {i}: the run did not reach {failpoint}: {}", text(&died));
            assert_eq!(
                died.status.code(),
                None,
                "batch {i}: the run at {failpoint} ended without dying: {}",
                text(&died)
            );
        }
        // On S3 the lock of a run that died is free once its lease expires: the next run says so
        // and is tried again until then (a local lock is the OS's, free at once).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        let o = loop {
            let o = root.run(dir, &[]);
            let leased = root.storage.is_some() && text(&o).contains("the lock is free in");
            if o.status.success() || !leased || std::time::Instant::now() > deadline {
                break o;
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        };
        assert!(o.status.success(), "batch {i}: the run after {failpoint} failed: {}", text(&o));
    }
    same_rows(&root.query(dir, ROWS), &expected_rows(), &format!("rows after dying at {failpoint}"));
    same_rows(&root.query(dir, VIEWS), &expected_views(), &format!("views after dying at {failpoint}"));
}

/// Fails with the missing and extra lines (a whole table of a few hundred rows hides them).
fn same_rows(got: &str, expected: &str, what: &str) {
    if got == expected {
        return;
    }
    // Counted, so a row written twice shows as extra.
    let mut count = std::collections::BTreeMap::<&str, i64>::new();
    for l in expected.lines() {
        *count.entry(l).or_default() += 1;
    }
    for l in got.lines() {
        *count.entry(l).or_default() -= 1;
    }
    let missing: Vec<_> = count.iter().filter(|(_, n)| **n > 0).collect();
    let extra: Vec<_> = count.iter().filter(|(_, n)| **n < 0).collect();
    panic!("{what}\nmissing (row, times): {missing:?}\nextra (row, -times): {extra:?}");
}

fn streaming() -> Vec<Scenario> {
    let mut all = Vec::new();
    for point in ["stream-after-input", "stream-after-intent", "stream-after-commit"] {
        for scope in ["bronze", "live", "export_parquet", "export_csv", "export_json", "export_delta"] {
            all.push(Scenario { point, scope, dies_in: EVERY_BATCH, args: &[] });
        }
        // A once flow runs in the first batch only.
        all.push(Scenario { point, scope: "backfill", dies_in: &[0], args: &[] });
    }
    all
}

fn sinks() -> Vec<Scenario> {
    ["export_parquet", "export_csv", "export_json"]
        .into_iter()
        .map(|scope| Scenario { point: "sink-after-rename", scope, dies_in: EVERY_BATCH, args: &[] })
        .collect()
}

fn views() -> Vec<Scenario> {
    let mut all: Vec<Scenario> = ["incremental-after-state", "incremental-after-view", "refresh-after-commit"]
        .into_iter()
        .map(|point| Scenario { point, scope: "totals", dies_in: EVERY_BATCH, args: &[] })
        .collect();
    all.push(Scenario { point: "refresh-after-commit", scope: "everything", dies_in: EVERY_BATCH, args: &[] });
    all
}

/// A full refresh of the table both a once flow and an append flow write, dying at each step
/// of its reset (the run that finds the reset marker finishes the reset), and in the once
/// flow's first batch after it.
fn resets() -> Vec<Scenario> {
    let refresh: &[&str] = &["--full-refresh", "backfilled"];
    let mut all: Vec<Scenario> = ["reset-after-marker", "reset-after-log", "reset-after-data"]
        .into_iter()
        .map(|point| Scenario { point, scope: "backfilled", dies_in: &[1, 2], args: refresh })
        .collect();
    for point in ["stream-after-intent", "stream-after-commit"] {
        all.push(Scenario { point, scope: "backfill", dies_in: &[1], args: refresh });
    }
    all
}

fn play_all(root: impl Fn(&str) -> Option<Root>, scenarios: Vec<Scenario>) {
    play_all_of(root, scenarios, Definitions::Sql)
}

fn play_all_of(root: impl Fn(&str) -> Option<Root>, scenarios: Vec<Scenario>, definitions: Definitions) {
    let n = scenarios.len();
    for s in scenarios {
        let Some(root) = root(&format!("{}_{}", s.point, s.scope)) else { return };
        play(&root, &s, definitions);
    }
    eprintln!("{n} scenarios: every row exactly once");
}

/// The flows of Python definitions go through the same commit protocols: a streaming table, an
/// append flow, a sink, an incrementally refreshed view and a recomputed one, each dying at
/// each of its steps.
#[test]
fn dying_in_flows_defined_in_python_loses_and_duplicates_nothing() {
    let mut scenarios = Vec::new();
    for point in ["stream-after-input", "stream-after-intent", "stream-after-commit"] {
        for scope in ["bronze", "live", "export_json"] {
            scenarios.push(Scenario { point, scope, dies_in: EVERY_BATCH, args: &[] });
        }
    }
    scenarios.push(Scenario { point: "sink-after-rename", scope: "export_parquet", dies_in: EVERY_BATCH, args: &[] });
    scenarios.push(Scenario { point: "incremental-after-state", scope: "totals", dies_in: EVERY_BATCH, args: &[] });
    scenarios.push(Scenario { point: "refresh-after-commit", scope: "everything", dies_in: EVERY_BATCH, args: &[] });
    play_all_of(|_| Some(Root::local()), scenarios, Definitions::Python);
}

#[test]
fn dying_in_a_streaming_or_once_batch_at_each_step_loses_and_duplicates_nothing() {
    play_all(|_| Some(Root::local()), streaming());
}

#[test]
fn dying_between_a_sinks_rename_and_its_marker_loses_and_duplicates_nothing() {
    play_all(|_| Some(Root::local()), sinks());
}

#[test]
fn dying_between_a_views_commits_leaves_views_that_agree_with_their_inputs() {
    play_all(|_| Some(Root::local()), views());
}

#[test]
fn dying_in_the_middle_of_a_full_refresh_finishes_the_reset_on_the_next_run() {
    play_all(|_| Some(Root::local()), resets());
}

/// The scenarios on an `s3://` root, where a run costs many round trips to the test server:
/// each dies in one batch (the second, or a once flow's first), and of the sinks, whose files
/// are local whatever the root, one file format and the Delta sink.
fn on_s3(scenarios: Vec<Scenario>, point: Option<&str>) -> Vec<Scenario> {
    scenarios
        .into_iter()
        .filter(|s| point.is_none_or(|p| s.point == p))
        .filter(|s| !matches!(s.scope, "export_parquet" | "export_csv") || s.point == "sink-after-rename")
        .filter(|s| s.point != "sink-after-rename" || s.scope == "export_csv")
        .map(|s| Scenario { dies_in: if s.dies_in.contains(&1) { &[1] } else { s.dies_in }, ..s })
        .collect()
}

#[test]
fn on_s3_dying_after_a_batchs_intent_loses_and_duplicates_nothing() {
    play_all(Root::s3, on_s3(streaming(), Some("stream-after-intent")));
}

#[test]
fn on_s3_dying_after_a_batchs_commit_loses_and_duplicates_nothing() {
    play_all(Root::s3, on_s3(streaming(), Some("stream-after-commit")));
}

#[test]
fn on_s3_dying_in_sinks_and_views_loses_and_duplicates_nothing() {
    let mut all = on_s3(sinks(), None);
    all.extend(on_s3(views(), None));
    play_all(Root::s3, all);
}

#[test]
fn on_s3_dying_in_the_middle_of_a_full_refresh_finishes_the_reset_on_the_next_run() {
    play_all(Root::s3, on_s3(resets(), None));
}

/// A maintained view's refresh killed at each of `points` in each of 4 batches (`feed(batch)`
/// gives a batch's file and text): after the run that follows, the view equals its query `full`
/// run over the whole input, and the refresh after a death before the record recomputes (only
/// `refresh-after-commit` comes after it).
fn play_view_deaths(sql: &str, view: &str, full: &str, points: &[&str], feed: impl Fn(u64) -> (String, String)) {
    for point in points {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        std::fs::write(
            dir.join("spark-pipeline.yml"),
            "name: v\nstorage: store\nlibraries:\n  - glob:\n      include: '*.sql'\n",
        )
        .unwrap();
        std::fs::write(dir.join("p.sql"), sql).unwrap();
        let root = Root::local();
        for batch in 0..4u64 {
            let (file, text_of_batch) = feed(batch);
            let path = dir.join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text_of_batch).unwrap();
            let mut c = root.thund(dir, &["run"]);
            c.env("THUND_FAILPOINT", format!("{point}@{view}")).env("THUND_FAILPOINT_KILL", "1");
            let died = c.output().unwrap();
            assert_eq!(died.status.code(), None, "batch {batch}: no death at {point}: {}", text(&died));
            let o = root.run(dir, &[]);
            assert!(o.status.success(), "batch {batch}: the run after {point} failed: {}", text(&o));
            // Compared as sets of lines: the header, then the rows in any order.
            let rows = |csv: String| {
                let mut lines: Vec<String> = csv.lines().map(str::to_string).collect();
                lines[1..].sort();
                lines
            };
            let got = rows(root.query(dir, &format!("SELECT * FROM {view}")));
            assert_eq!(got, rows(root.query(dir, full)), "batch {batch}, after dying at {point}");
            let recomputed = text(&o).contains("complete recompute (CHANGE_SET_MISSING");
            assert_eq!(recomputed, *point != "refresh-after-commit", "batch {batch}, {point}: {}", text(&o));
        }
    }
}

/// An AUTO CDC table with deletion vectors, fed upserts and deletes (`seq` numbers them).
const CDC_TARGET: &str = "CREATE STREAMING TABLE target TBLPROPERTIES ('delta.enableDeletionVectors' = 'true');\n\
     CREATE FLOW f AS AUTO CDC INTO target FROM STREAM read_files('feed', format => 'json', \
     schema => 'k BIGINT, v BIGINT, seq BIGINT, op STRING') KEYS (k) APPLY AS DELETE WHEN op = 'D' \
     SEQUENCE BY seq COLUMNS * EXCEPT (op, seq);\n";

/// Batch `batch` of a change feed over `keys` keys: every key at first, then a few changes,
/// every other one a delete.
fn cdc_feed(batch: u64, keys: u64) -> (String, String) {
    let (first, n) = (batch * 100, if batch == 0 { keys } else { 4 });
    let rows: String = (0..n)
        .map(|i| {
            let k = (i * 7 + batch * 11) % keys;
            let op = if batch > 0 && i % 2 == 0 { "D" } else { "U" };
            format!("{{\"k\": {k}, \"v\": {}, \"seq\": {}, \"op\": \"{op}\"}}\n", (first + i) * 37 % 101, first + i)
        })
        .collect();
    (format!("feed/{batch}.json"), rows)
}

/// A view that takes back the rows its input lost (its minimum through the counts of its
/// values), killed at each step of its refresh in each batch.
#[test]
fn dying_in_a_refresh_that_takes_rows_back_leaves_a_view_equal_to_its_query() {
    let query = "SELECT k % 3 AS g, count(*) AS n, sum(v) AS s, min(v) AS lo FROM target GROUP BY k % 3";
    play_view_deaths(
        &format!("{CDC_TARGET}CREATE MATERIALIZED VIEW totals AS {query};\n"),
        "totals",
        query,
        &["incremental-after-values", "incremental-after-state", "incremental-after-view", "refresh-after-commit"],
        |batch| cdc_feed(batch, 30),
    );
}

/// A view aggregating a join of a changing table with another, killed at each step of its
/// refresh in each batch; a view of that join's rows (row-based) and a join view of two
/// appended tables, killed after their commit.
#[test]
fn dying_in_a_refresh_over_a_join_leaves_a_view_equal_to_its_query() {
    let dims = "CREATE MATERIALIZED VIEW dims AS SELECT * FROM VALUES (0, 'a'), (1, 'b'), (2, 'c') AS t(g, name);\n";
    let query = "SELECT d.name, count(*) AS n, sum(t.v) AS s, min(t.v) AS lo FROM target t JOIN dims d ON t.k % 3 = d.g GROUP BY d.name";
    play_view_deaths(
        &format!("{CDC_TARGET}{dims}CREATE MATERIALIZED VIEW totals AS {query};\n"),
        "totals",
        query,
        &["incremental-after-values", "incremental-after-state", "incremental-after-view", "refresh-after-commit"],
        |batch| cdc_feed(batch, 30),
    );
    // Its rows over what the table lost taken out, over what it gained added (row-based).
    let query = "SELECT t.k % 5 AS g, t.v, d.name FROM target t JOIN dims d ON t.k % 3 = d.g";
    play_view_deaths(
        &format!("{CDC_TARGET}{dims}CREATE MATERIALIZED VIEW kept TBLPROPERTIES ('delta.enableDeletionVectors' = 'true') AS {query};\n"),
        "kept",
        query,
        &["append-after-view", "refresh-after-commit"],
        |batch| cdc_feed(batch, 30),
    );
    let query = "SELECT b.id, b.v, d.name FROM bronze b JOIN dims d ON b.v % 3 = d.g";
    play_view_deaths(
        &format!(
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json', schema => 'id BIGINT, v BIGINT');\n\
             {dims}CREATE MATERIALIZED VIEW kept AS {query};\n"
        ),
        "kept",
        query,
        &["append-after-view", "refresh-after-commit"],
        |batch| {
            let rows = (0..10).map(|i| format!("{{\"id\": {}, \"v\": {}}}\n", batch * 10 + i, (batch * 7 + i) % 5)).collect();
            (format!("in/{batch}.json"), rows)
        },
    );
}

/// A view that appends its query's rows over what its input gained, killed after its append and
/// after its record in each batch: no row lost, none appended twice.
#[test]
fn dying_in_an_appending_refresh_leaves_a_view_equal_to_its_query() {
    let query = "SELECT id, v * 10 AS v10 FROM bronze WHERE v % 2 = 0";
    play_view_deaths(
        &format!(
            "CREATE STREAMING TABLE bronze AS SELECT * FROM STREAM read_files('in', format => 'json', schema => 'id BIGINT, v BIGINT');\n\
             CREATE MATERIALIZED VIEW kept AS {query};\n"
        ),
        "kept",
        query,
        &["append-after-view", "refresh-after-commit"],
        |batch| {
            let rows = (0..10).map(|i| format!("{{\"id\": {}, \"v\": {}}}\n", batch * 10 + i, (batch * 7 + i) % 5)).collect();
            (format!("in/{batch}.json"), rows)
        },
    );
}

/// A view of window functions that recomputes the partitions its input changed, killed after
/// its commit and after its record in each batch.
#[test]
fn dying_in_a_partition_recompute_leaves_a_view_equal_to_its_query() {
    let query =
        "SELECT g, k, rank() OVER (PARTITION BY g ORDER BY v, k) AS r FROM (SELECT k % 4 AS g, k, v FROM target)";
    play_view_deaths(
        &format!("{CDC_TARGET}CREATE MATERIALIZED VIEW ranked AS {query};\n"),
        "ranked",
        query,
        &["window-after-view", "refresh-after-commit"],
        |batch| cdc_feed(batch, 24),
    );
}
