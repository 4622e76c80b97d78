//! Materialized-view refresh planning: every refresh says which technique it took and what kept
//! the others from applying (`planning_information`), and `REFRESH POLICY` decides as Databricks'
//! does (`FULL` always recomputes, `INCREMENTAL STRICT` fails rather than recompute).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

mod common;

use common::*;
use knut_thund::backend::{PlanningInformation, RunEvent, RunPhase, RunSummary};

const SPEC: &str = "name: r\nlibraries:\n  - glob:\n      include: sql/**\n";

const SOURCE: &str =
    "CREATE STREAMING TABLE st AS SELECT * FROM STREAM read_files('in', format => 'json', schema => 'k STRING, x BIGINT');\n";

/// The planning of `view`'s refresh in this run.
fn planning(events: &[RunEvent], view: &str) -> PlanningInformation {
    events
        .iter()
        .filter(|e| e.element.ends_with(&format!(".{view}")))
        .find_map(|e| e.details.planning_information.clone())
        .unwrap_or_else(|| panic!("no planning for {view}: {events:#?}"))
}

/// The chosen technique's type, and every issue type reported, in order.
fn decided(p: &PlanningInformation) -> (String, Vec<String>) {
    let chosen = p.chosen().map(|t| t.maintenance_type.clone()).unwrap_or_default();
    let issues = p
        .technique_information
        .iter()
        .flat_map(|t| t.incrementalization_issues.iter().map(|i| i.issue_type.clone()))
        .collect();
    (chosen, issues)
}

fn outcome<'a>(s: &'a RunSummary, view: &str) -> &'a knut_thund::backend::FlowOutcome {
    s.flows.iter().find(|f| f.target.ends_with(&format!(".{view}"))).unwrap()
}

fn sorted(dir: &std::path::Path, sql: &str) -> Vec<Vec<String>> {
    let mut r = rows(&query(dir, sql).unwrap()).1;
    r.sort();
    r
}

#[test]
fn each_refresh_says_which_technique_it_took_and_why() {
    let sql = format!(
        "{SOURCE}CREATE MATERIALIZED VIEW agg AS SELECT k, sum(x) AS s, count(*) AS n FROM st GROUP BY k;\n\
         CREATE MATERIALIZED VIEW joined AS SELECT a.k, a.s, b.x FROM agg a JOIN st b ON a.k = b.k;\n\
         CREATE MATERIALIZED VIEW distinct_x AS SELECT k, count(DISTINCT x) AS d FROM st GROUP BY k;\n\
         CREATE MATERIALIZED VIEW noisy AS SELECT k, rand() AS r FROM st;\n\
         CREATE MATERIALIZED VIEW over_mv AS SELECT count(*) AS n FROM agg;\n"
    );
    let dir = project(&[
        ("spark-pipeline.yml", SPEC),
        ("sql/a.sql", &sql),
        ("in/a.json", "{\"k\": \"a\", \"x\": 1}\n{\"k\": \"b\", \"x\": 2}\n"),
    ]);
    const NO_OP: &str = "MAINTENANCE_TYPE_NO_OP";
    const GROUP: &str = "MAINTENANCE_TYPE_GROUP_AGGREGATE";
    const RECOMPUTE: &str = "MAINTENANCE_TYPE_COMPLETE_RECOMPUTE";
    let issue = |s: &str| vec![s.to_string()];

    // Run 1: no state yet, so the aggregate is built from all rows; the others cannot be
    // incremental, each for its own reason.
    let (s, events) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(decided(&planning(&events, "agg")), (RECOMPUTE.into(), issue("CHANGE_SET_MISSING")));
    assert_eq!(decided(&planning(&events, "joined")), (RECOMPUTE.into(), issue("OPERATOR_NOT_INCREMENTALIZABLE")));
    assert_eq!(decided(&planning(&events, "over_mv")), (RECOMPUTE.into(), issue("INPUT_NOT_APPEND_ONLY")));
    assert_eq!(decided(&planning(&events, "distinct_x")), (RECOMPUTE.into(), issue("AGGREGATE_NOT_INCREMENTALIZABLE")));
    assert_eq!(decided(&planning(&events, "noisy")), (RECOMPUTE.into(), issue("EXPRESSION_NOT_DETERMINISTIC")));
    assert_eq!(outcome(&s, "agg").technique.as_deref(), Some("complete recompute"));
    let agg = planning(&events, "agg");
    let group = agg.technique_information.iter().find(|t| t.maintenance_type == GROUP).unwrap();
    assert!(!group.is_applicable && !group.is_chosen && group.incrementalization_issues[0].prevent_incrementalization);
    assert_eq!(agg.refresh_policy, "AUTO");

    // Run 2: rows appended: the aggregate merges only them, and equals a full recompute.
    std::fs::write(dir.path().join("in/b.json"), "{\"k\": \"a\", \"x\": 5}\n{\"k\": \"c\", \"x\": 7}\n").unwrap();
    let (s, events) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    assert_eq!(decided(&planning(&events, "agg")), (GROUP.into(), vec![]));
    assert_eq!(outcome(&s, "agg").technique.as_deref(), Some("group aggregate"));
    let full = "SELECT k, sum(x), count(*) FROM st GROUP BY k";
    assert_eq!(sorted(dir.path(), "SELECT * FROM agg"), sorted(dir.path(), full));
    assert_eq!(sorted(dir.path(), "SELECT * FROM agg"), [["a", "6", "2"], ["b", "2", "1"], ["c", "7", "1"]]);

    // Run 3: nothing changed: no-op for every deterministic view, a recompute for `rand()`.
    let (s, events) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    for view in ["agg", "joined", "distinct_x"] {
        assert_eq!(decided(&planning(&events, view)).0, NO_OP, "{view}");
        assert_eq!(outcome(&s, view).phase, RunPhase::Idle, "{view}");
    }
    assert_eq!(decided(&planning(&events, "noisy")).0, RECOMPUTE);
}

#[test]
fn refresh_policy_full_always_recomputes_and_strict_fails_rather_than_recompute() {
    let sql = format!(
        "{SOURCE}CREATE MATERIALIZED VIEW full_mv REFRESH POLICY FULL AS SELECT k, min(x) AS m FROM st GROUP BY k;\n\
         CREATE MATERIALIZED VIEW strict_agg COMMENT 'kept' REFRESH POLICY INCREMENTAL STRICT AS SELECT k, max(x) AS m FROM st GROUP BY k;\n\
         CREATE MATERIALIZED VIEW incremental_agg REFRESH POLICY INCREMENTAL AS SELECT k, count(*) AS n FROM st GROUP BY k;\n"
    );
    let dir =
        project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", &sql), ("in/a.json", "{\"k\": \"a\", \"x\": 1}\n")]);
    let (s, _) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    std::fs::write(dir.path().join("in/b.json"), "{\"k\": \"a\", \"x\": 3}\n").unwrap();
    let (s, events) = run(dir.path());
    assert!(!s.failed(), "{:?}", s.flows);
    let full = planning(&events, "full_mv");
    assert_eq!(full.refresh_policy, "FULL");
    assert_eq!(decided(&full), ("MAINTENANCE_TYPE_COMPLETE_RECOMPUTE".into(), vec!["REFRESH_POLICY_FULL".to_string()]));
    assert_eq!(decided(&planning(&events, "strict_agg")).0, "MAINTENANCE_TYPE_GROUP_AGGREGATE");
    assert_eq!(planning(&events, "incremental_agg").refresh_policy, "INCREMENTAL");
    assert_eq!(sorted(dir.path(), "SELECT * FROM strict_agg"), [["a", "3"]]);
    // Nothing changed: FULL recomputes all the same.
    let (s, _) = run(dir.path());
    assert_eq!(outcome(&s, "full_mv").phase, RunPhase::Completed);
    assert_eq!(outcome(&s, "strict_agg").phase, RunPhase::Idle);

    // A STRICT view that cannot be incremental fails, at its line, saying why, and keeps what it
    // had; the rest of the run goes on.
    let strict_join = "CREATE MATERIALIZED VIEW strict_join REFRESH POLICY INCREMENTAL STRICT AS\n  \
                       SELECT a.k, count(*) AS n FROM st a JOIN full_mv b ON a.k = b.k GROUP BY a.k;\n";
    std::fs::write(dir.path().join("sql/b.sql"), strict_join).unwrap();
    let (s, events) = run(dir.path());
    let failed = outcome(&s, "strict_join");
    assert_eq!(failed.phase, RunPhase::Failed);
    let err = failed.error.clone().unwrap();
    for needle in ["sql/b.sql:1:1", "INCREMENTAL STRICT", "OPERATOR_NOT_INCREMENTALIZABLE", "a join"] {
        assert!(err.contains(needle), "{needle} not in {err}");
    }
    assert!(planning(&events, "strict_join").chosen().is_none());
    assert_eq!(outcome(&s, "full_mv").phase, RunPhase::Completed);
    assert!(query(dir.path(), "SELECT * FROM strict_join").is_err(), "nothing was written");
}

#[test]
fn refresh_policy_is_a_clause_of_materialized_views_only() {
    let sql =
        "CREATE STREAMING TABLE st REFRESH POLICY AUTO AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
               CREATE MATERIALIZED VIEW m REFRESH POLICY SOMETIMES AS SELECT 1 AS x;\n";
    let dir = project(&[("spark-pipeline.yml", SPEC), ("sql/a.sql", sql)]);
    let err = knut_thund::frontend::load(dir.path()).unwrap_err().to_string();
    for needle in [
        "sql/a.sql:1:",
        "`REFRESH POLICY` is a clause of materialized views only",
        "sql/a.sql:2:",
        "expected AUTO, INCREMENTAL, INCREMENTAL STRICT or FULL",
    ] {
        assert!(err.contains(needle), "{needle} not in {err}");
    }
}
