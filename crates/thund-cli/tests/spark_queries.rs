//! A corpus of queries written here, run natively and on Spark in both of Spark's modes
//! (`spark.sql.ansi.enabled` true, Spark 4's default and SDP's, and false, Databricks' default
//! and DLT's): the differential measure of Spark's rules (joins, windows, grouping sets, set
//! operations, subqueries, complex types, coercion, casts, overflow, NULLs) on the embedded
//! engine.
//!
//! Each query in `spark_queries/*.sql` (statements end with `;` at the end of a line; `--`
//! lines are comments) is self-contained (its data in `VALUES`) and deterministic. Its rows are
//! compared in order when it ends with an `ORDER BY`, as a set otherwise. The outcome of each
//! query in each mode is one of:
//!
//! - **equal**: Spark's column names, Spark's types and Spark's rows;
//! - **names differ**: equal but for the names of unaliased columns;
//! - **both fail**: Spark refuses the query or fails it (an overflow in ANSI mode) and so does the
//!   native engine — the same answer, an error;
//! - **refused**: the native engine errors where Spark answers (honest: the pipeline stops at its
//!   line);
//! - **different**: the native engine answers something else, or answers where Spark fails,
//!   without an error — a wrong table in a user's pipeline. Each one fails the test.
//!
//! The corpus runs on every Spark line (`thund_testkit::SPARK_LINES`), one test per line.
//! Where Spark's lines answer a query differently, no answer is Spark's: the native engine
//! refuses it (a NATURAL join whose names match only ignoring case, a floating-point
//! `collect_set` whose order changed in 4.2), and a query one line fails and a later one answers
//! (a feature new in 4.2) is refused natively too.
//!
//! What is expected is exact, so that every change shows in the commit that makes it, a
//! regression offset by a fix included: `spark_queries/count` is the number of queries in the
//! corpus, and `spark_queries/refused` the exact set of refusals on each line (`<lines> <mode>
//! <query>`, the lines as `4.1+` or `4.2,4.3`): a query that starts or stops being refused on a
//! line fails that line's test until the list says so.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

#[path = "../../thund-native/tests/common/mod.rs"]
mod common;
mod differential;

use std::collections::BTreeMap;
use std::path::Path;

use differential::{ordered, outcome, read_lines, Outcome, OUTCOMES};
use knut_thund::spark::SparkBackend;
use thund_native::EngineOptions;

/// The queries of one corpus file, each with its line.
fn queries_in(text: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut first_line = 0;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_end();
        if t.trim_start().starts_with("--") || (current.is_empty() && t.trim().is_empty()) {
            continue;
        }
        if current.is_empty() {
            first_line = i + 1;
        } else {
            current.push('\n');
        }
        current.push_str(t);
        if t.ends_with(';') {
            out.push((first_line, current.trim_end_matches(';').trim().to_string()));
            current.clear();
        }
    }
    assert!(current.trim().is_empty(), "a query at line {first_line} does not end with `;`");
    out
}

#[test]
fn on_spark_4_1_the_query_corpus_gives_sparks_answers_natively_in_both_modes_or_is_refused() {
    corpus_on("4.1");
}

#[test]
fn on_spark_4_2_the_query_corpus_gives_sparks_answers_natively_in_both_modes_or_is_refused() {
    corpus_on("4.2");
}

#[test]
fn on_spark_4_3_the_query_corpus_gives_sparks_answers_natively_in_both_modes_or_is_refused() {
    corpus_on("4.3");
}

/// The corpus natively and on the server of Spark `line`, in both modes.
fn corpus_on(line: &str) {
    let Some(url) = thund_testkit::spark_url(line, "the query corpus") else { return };
    let spark = SparkBackend::new(&url);
    let version = spark.detect_version().expect("the Spark server answers");
    assert!(version.starts_with(&format!("{line}.")), "the server of Spark {line} is Spark {version}");
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spark_queries");
    let mut files: Vec<_> = std::fs::read_dir(&here)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "sql"))
        .collect();
    files.sort();
    let corpus: Vec<(String, usize, String)> = files
        .iter()
        .flat_map(|f| {
            let name = f.file_stem().unwrap().to_string_lossy().to_string();
            queries_in(&std::fs::read_to_string(f).unwrap()).into_iter().map(move |(l, q)| (name.clone(), l, q))
        })
        .collect();
    let count: usize = read_lines(&here.join("count"))[0].trim().parse().expect("spark_queries/count is a number");
    assert_eq!(corpus.len(), count, "queries in the corpus, against spark_queries/count");
    let listed_refused = differential::read_lines_on(&here.join("refused"), line);
    let rt = tokio::runtime::Runtime::new().unwrap();

    let mut counts: BTreeMap<(String, &str), BTreeMap<Outcome, usize>> = BTreeMap::new();
    let mut problems = Vec::new();
    let mut different = Vec::new();
    let mut refused = Vec::new();
    for mode in ["true", "false"] {
        let dir = common::project(&[
            (
                "spark-pipeline.yml",
                &format!(
                    "name: corpus\nconfiguration:\n  spark.sql.ansi.enabled: \"{mode}\"\nlibraries:\n  - glob:\n      include: sql/**\n"
                ),
            ),
            ("sql/a.sql", "CREATE MATERIALIZED VIEW one AS SELECT 1 AS x;"),
        ]);
        let p = common::load(dir.path());
        let label = if mode == "true" { "ansi" } else { "non-ansi" };
        for (file, at, sql) in &corpus {
            let on_spark = spark.query_in(None, &[("spark.sql.ansi.enabled", mode)], sql).map_err(|e| e.to_string());
            let natively = rt
                .block_on(thund_native::query(&p, sql, &EngineOptions::default()))
                .map(differential::result_batches)
                .map_err(|e| e.to_string());
            let (o, detail) = outcome(on_spark, natively, ordered(sql));
            *counts.entry((file.clone(), label)).or_default().entry(o).or_default() += 1;
            let shown = sql.replace('\n', " ");
            match o {
                Outcome::Different => {
                    println!("DIFFERENT {line} {label} {file}.sql:{at}: {shown}\n    {detail}");
                    different.push(format!("{label} {shown}"));
                }
                Outcome::Refused => {
                    println!("REFUSED {line} {label} {file}.sql:{at}: {shown}\n    {detail}");
                    refused.push(format!("{label} {shown}"));
                }
                Outcome::NamesDiffer => println!("NAMES {line} {label} {file}.sql:{at}: {shown}\n    {detail}"),
                _ => {}
            }
        }
    }

    println!("Spark {version} at {url}: {} queries, each in ANSI and non-ANSI mode", corpus.len());
    println!(
        "{:28} {:>6} {:>6} {:>9} {:>8} {:>10}",
        "file / mode", "equal", "names", "both fail", "refused", "DIFFERENT"
    );
    let mut totals: BTreeMap<Outcome, usize> = BTreeMap::new();
    for ((file, mode), c) in &counts {
        let n = |o: Outcome| c.get(&o).copied().unwrap_or(0);
        println!(
            "{:28} {:>6} {:>6} {:>9} {:>8} {:>10}",
            format!("{file} {mode}"),
            n(Outcome::Equal),
            n(Outcome::NamesDiffer),
            n(Outcome::BothFail),
            n(Outcome::Refused),
            n(Outcome::Different)
        );
        for o in OUTCOMES {
            *totals.entry(o).or_default() += n(o);
        }
    }
    let t = |o: Outcome| totals.get(&o).copied().unwrap_or(0);
    println!(
        "{:28} {:>6} {:>6} {:>9} {:>8} {:>10}",
        "all",
        t(Outcome::Equal),
        t(Outcome::NamesDiffer),
        t(Outcome::BothFail),
        t(Outcome::Refused),
        t(Outcome::Different)
    );
    let agreeing = t(Outcome::Equal) + t(Outcome::NamesDiffer) + t(Outcome::BothFail);
    println!(
        "Spark's answers natively: {agreeing} of {} ({:.1}%)",
        2 * corpus.len(),
        100.0 * agreeing as f64 / (2 * corpus.len()) as f64
    );

    for d in &different {
        problems.push(format!("{d}: another answer natively, without an error"));
    }
    problems.extend(differential::exact_set(
        "spark_queries/refused",
        &format!("refused natively on Spark {line}"),
        &refused,
        &listed_refused,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
