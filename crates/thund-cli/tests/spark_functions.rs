//! Spark's own function examples, run natively and on Spark: the differential measure of how
//! often the embedded engine gives Spark's answer.
//!
//! Every function the server lists (`SHOW FUNCTIONS`) documents examples (`DESCRIBE FUNCTION
//! EXTENDED`, the `> SELECT …;` lines). They are collected from the server at test time, so
//! nothing Spark answers is copied into the repository. Each example runs on Spark (twice: an
//! example whose answers differ is nondeterministic and not compared) and natively, and its
//! outcome is one of:
//!
//! - **equal**: the same column types (Spark's names for them) and the same rows;
//! - **names differ**: equal but for the names of unaliased columns (reported, not yet a failure);
//! - **refused**: the native engine errors where Spark answers (a refusal is honest: the pipeline
//!   stops at its line);
//! - **both fail**: Spark fails the example (an example that shows an error) and so does the
//!   native engine;
//! - **different**: the native engine answers something else, or answers where Spark fails,
//!   without an error — a wrong table in a user's pipeline. Each one fails the test;
//! - **nondeterministic** examples are counted and not compared.
//!
//! The examples run on every Spark line (`thund_testkit::SPARK_LINES`), one test per line:
//! each line documents its own examples (4.2 and 4.3 add functions), and lines differ.
//!
//! What is expected is exact, so that every change shows in the commit that makes it, a
//! regression offset by a fix included: `spark_functions/count` is the number of examples each
//! Spark version documents, and `spark_functions/refused` the exact set of examples refused
//! natively on each line, each entry tagged with the lines it holds on (`4.1+`, `4.2,4.3`): one
//! that starts or stops being refused on a line fails that line's test until the list says so.
//! The counts per category are printed (shown in the CI log: `.config/nextest.toml`).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

#[path = "../../thund-native/tests/common/mod.rs"]
mod common;
mod differential;

use std::collections::BTreeMap;
use std::path::Path;

use arrow::array::RecordBatch;
use differential::{read_lines, same_rows};
use knut_thund::spark::SparkBackend;
use thund_native::EngineOptions;

/// One documented example.
struct Example {
    function: String,
    category: &'static str,
    sql: String,
}

/// What an example gave.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    Equal,
    NamesDiffer,
    Refused,
    Different,
    BothFail,
    Nondeterministic,
}

const OUTCOMES: [Outcome; 6] = [
    Outcome::Equal,
    Outcome::NamesDiffer,
    Outcome::Refused,
    Outcome::Different,
    Outcome::BothFail,
    Outcome::Nondeterministic,
];

/// Functions Spark implements as nondeterministic (`Nondeterministic`, or reading the clock, the
/// session or the input): their examples are not compared even when two runs on Spark agree (a
/// fresh server can seed `shuffle` alike twice).
const NONDETERMINISTIC: [&str; 22] = [
    "rand",
    "randn",
    "random",
    "uniform",
    "randstr",
    "uuid",
    "shuffle",
    "now",
    "current_timestamp",
    "current_date",
    "curdate",
    "localtimestamp",
    "unix_timestamp",
    "monotonically_increasing_id",
    "spark_partition_id",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
    "reflect",
    "java_method",
    "try_reflect",
    "current_timezone",
];

/// A function's category, from the class Spark implements it with.
fn category(class: &str) -> &'static str {
    let name = class.rsplit('.').next().unwrap_or(class);
    let has = |words: &[&str]| words.iter().any(|w| name.contains(w));
    if class.contains(".aggregate.") {
        "aggregate"
    } else if has(&["Rank", "RowNumber", "Lag", "Lead", "NthValue", "NTile", "CumeDist"]) {
        "window"
    } else if class.contains("xml") || name.starts_with("Xml") || name.starts_with("XPath") {
        "xml"
    } else if has(&["Json", "Csv"]) {
        "json/csv"
    } else if has(&["Explode", "Inline", "Stack", "Generator"]) {
        "generator"
    } else if has(&["Transform", "Filter", "Aggregate", "ZipWith", "Exists", "Forall", "Reduce", "MapZip"]) {
        "higher-order"
    } else if has(&["Regexp", "RLike", "Like"]) {
        "regex"
    } else if has(&[
        "Date",
        "Time",
        "Timestamp",
        "Interval",
        "Year",
        "Month",
        "Day",
        "Hour",
        "Minute",
        "Second",
        "Week",
        "Quarter",
        "Unix",
        "Zone",
        "Epoch",
        "Trunc",
    ]) {
        "datetime"
    } else if has(&["Array", "Map", "Struct", "Element", "Size", "Sequence", "Slice", "Flatten", "Sort", "Shuffle"]) {
        "collection"
    } else if has(&["Hash", "Md5", "Sha", "Crc", "Murmur"]) {
        "hash"
    } else if has(&[
        "String",
        "Substr",
        "Concat",
        "Upper",
        "Lower",
        "Trim",
        "Pad",
        "Split",
        "Ascii",
        "Chr",
        "Base64",
        "Format",
        "Translate",
        "Levenshtein",
        "SoundEx",
        "Overlay",
        "Locate",
        "InitCap",
        "Repeat",
        "Replace",
        "Left",
        "Right",
        "Length",
        "Encode",
        "Decode",
        "Mask",
        "Space",
        "Position",
        "Contains",
        "StartsWith",
        "EndsWith",
        "Instr",
        "Unhex",
        "Hex",
        "Bin",
        "Char",
        "Elt",
        "FindInSet",
        "Sentences",
        "Collat",
        "Luhn",
        "Url",
    ]) {
        "string"
    } else if has(&[
        "Abs",
        "Sin",
        "Cos",
        "Tan",
        "Log",
        "Exp",
        "Sqrt",
        "Cbrt",
        "Pow",
        "Round",
        "Ceil",
        "Floor",
        "Sign",
        "Pi",
        "Degrees",
        "Radians",
        "Rint",
        "Factorial",
        "Greatest",
        "Least",
        "Hypot",
        "Conv",
        "Pmod",
        "Remainder",
        "Divide",
        "Multiply",
        "Add",
        "Subtract",
        "UnaryMinus",
        "UnaryPositive",
        "Bitwise",
        "Shift",
        "BitCount",
        "Width",
        "Number",
        "Euler",
        "Cot",
        "Csc",
        "Sec",
        "Atan",
        "Asin",
        "Acos",
        "Sinh",
        "Cosh",
        "Tanh",
        "Signum",
    ]) {
        "math"
    } else if has(&["Cast", "Try", "Nvl", "Coalesce", "IsNull", "IsNotNull", "NaN", "If", "CaseWhen", "Null"]) {
        "conditional/cast"
    } else if has(&["And", "Or", "Not", "Equal", "LessThan", "GreaterThan", "In", "Between"]) {
        "predicate"
    } else {
        "other"
    }
}

/// The `> SELECT …;` examples of one `DESCRIBE FUNCTION EXTENDED` text.
fn examples_in(text: &str) -> Vec<String> {
    let Some(section) = text.split("Examples:").nth(1) else { return Vec::new() };
    let mut out = Vec::new();
    let mut current: Option<String> = None;
    for line in section.lines() {
        let t = line.trim();
        if let Some(sql) = t.strip_prefix("> ") {
            current = Some(sql.to_string());
        } else if let Some(sql) = current.as_mut() {
            if !t.is_empty() && !sql.trim_end().ends_with(';') {
                sql.push('\n');
                sql.push_str(t);
            }
        }
        if let Some(sql) = current.take_if(|s| s.trim_end().ends_with(';')) {
            out.push(sql.trim_end().trim_end_matches(';').to_string());
        }
    }
    out
}

fn collect_examples(spark: &SparkBackend) -> Vec<Example> {
    let functions = spark.query("SHOW FUNCTIONS").expect("SHOW FUNCTIONS");
    let names = first_column(&functions);
    let mut out = Vec::new();
    for f in names {
        let Ok(described) = spark.query(&format!("DESCRIBE FUNCTION EXTENDED `{}`", f.replace('`', "``"))) else {
            continue;
        };
        let lines = first_column(&described);
        let class = lines.iter().find_map(|l| l.strip_prefix("Class: ")).unwrap_or("").to_string();
        for sql in lines.iter().flat_map(|l| examples_in(l)) {
            out.push(Example { function: f.clone(), category: category(&class), sql });
        }
    }
    out
}

/// The text of a result's first column, row by row (a NULL as the empty text).
fn first_column(batches: &[RecordBatch]) -> Vec<String> {
    let options = arrow::util::display::FormatOptions::default();
    let mut out = Vec::new();
    for b in batches {
        let f = arrow::util::display::ArrayFormatter::try_new(b.column(0).as_ref(), &options).unwrap();
        out.extend((0..b.num_rows()).map(|r| f.value(r).to_string()));
    }
    out
}

/// A result as compared here: examples have no order.
fn unordered(b: &[RecordBatch]) -> (Vec<String>, Vec<String>, Vec<Vec<String>>) {
    differential::typed(b, false)
}

/// The outcome of one example, with what the native engine said when it differs or refuses.
fn outcome(
    spark: &SparkBackend,
    native: &dyn Fn(&str) -> Result<Vec<RecordBatch>, String>,
    sql: &str,
) -> (Outcome, String) {
    let first = match spark.query(sql) {
        Ok(first) => first,
        Err(spark_error) => {
            return match native(sql) {
                Err(_) => (Outcome::BothFail, String::new()),
                Ok(b) => (Outcome::Different, format!("native {:?}, Spark fails: {spark_error}", unordered(&b))),
            }
        }
    };
    let spark_answer = unordered(&first);
    match spark.query(sql) {
        Ok(again) if unordered(&again) == spark_answer => {}
        _ => return (Outcome::Nondeterministic, String::new()),
    }
    let native_answer = match native(sql) {
        Ok(b) => unordered(&b),
        Err(e) => return (Outcome::Refused, e),
    };
    // A result of no rows has no batches natively but a schema-only batch on Spark.
    let same_values = same_rows(&spark_answer.1, &native_answer.2, &spark_answer.2)
        && (native_answer.1 == spark_answer.1 || spark_answer.2.is_empty() && native_answer.1.is_empty());
    match (same_values, native_answer.0 == spark_answer.0) {
        (true, true) => (Outcome::Equal, String::new()),
        (true, false) => (Outcome::NamesDiffer, format!("{:?} vs Spark's {:?}", native_answer.0, spark_answer.0)),
        (false, _) => (
            Outcome::Different,
            format!(
                "native {:?} {:?}, Spark {:?} {:?}",
                native_answer.1, native_answer.2, spark_answer.1, spark_answer.2
            ),
        ),
    }
}

#[test]
fn spark_4_1_function_examples_give_sparks_answers_natively_or_are_refused() {
    examples_on("4.1");
}

#[test]
fn spark_4_2_function_examples_give_sparks_answers_natively_or_are_refused() {
    examples_on("4.2");
}

#[test]
fn spark_4_3_function_examples_give_sparks_answers_natively_or_are_refused() {
    examples_on("4.3");
}

/// Every example the server of Spark `line` documents, natively and on that server.
fn examples_on(line: &str) {
    let Some(url) = thund_testkit::spark_url(line, "Spark's function examples") else { return };
    let spark = SparkBackend::new(&url);
    let version = spark.detect_version().expect("the Spark server answers");
    assert!(version.starts_with(&format!("{line}.")), "the server of Spark {line} is Spark {version}");
    let examples = collect_examples(&spark);
    let here = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/spark_functions");
    let mut problems = Vec::new();
    let counts_listed = read_lines(&here.join("count"));
    match counts_listed.iter().find_map(|l| l.strip_prefix(&format!("{version} "))) {
        None => problems
            .push(format!("spark_functions/count has no line for Spark {version}: add `{version} {}`", examples.len())),
        Some(n) if n.trim().parse::<usize>() != Ok(examples.len()) => problems.push(format!(
            "Spark {version} documents {} examples, spark_functions/count says {n}: change the count in the commit \
             that explains why",
            examples.len()
        )),
        Some(_) => {}
    }

    let dir = common::project(&[
        ("spark-pipeline.yml", "name: functions\nlibraries:\n  - glob:\n      include: sql/**\n"),
        ("sql/a.sql", "CREATE MATERIALIZED VIEW one AS SELECT 1 AS x;"),
    ]);
    let p = common::load(dir.path());
    let rt = tokio::runtime::Runtime::new().unwrap();
    let native = |sql: &str| -> Result<Vec<RecordBatch>, String> {
        rt.block_on(thund_native::query(&p, sql, &EngineOptions::default()))
            .map(|r| r.batches)
            .map_err(|e| e.to_string())
    };

    let listed_refused: Vec<String> = differential::read_lines_on(&here.join("refused"), line);

    let mut counts: BTreeMap<&str, BTreeMap<Outcome, usize>> = BTreeMap::new();
    let mut different = Vec::new();
    let mut names_differ = Vec::new();
    let mut refused: BTreeMap<String, usize> = BTreeMap::new();
    let mut refused_examples: Vec<String> = Vec::new();
    // Each example's outcome, one per line, to compare two builds (`THUND_EXAMPLES_OUT=file`).
    let mut listing = String::new();
    for e in &examples {
        let (o, detail) = match NONDETERMINISTIC.contains(&e.function.as_str()) {
            true => (Outcome::Nondeterministic, String::new()),
            false => outcome(&spark, &native, &e.sql),
        };
        listing.push_str(&format!("{o:?}\t{}\n", e.sql.replace('\n', " ")));
        *counts.entry(e.category).or_default().entry(o).or_default() += 1;
        match o {
            Outcome::Different => different.push((e.sql.replace('\n', " "), e.function.clone(), detail)),
            Outcome::NamesDiffer => names_differ.push(format!("{}\n    {detail}", e.sql.replace('\n', " "))),
            Outcome::Refused => {
                *refused.entry(e.function.clone()).or_default() += 1;
                refused_examples.push(e.sql.replace('\n', " "));
            }
            _ => {}
        }
    }

    if let Some(out) = std::env::var_os("THUND_EXAMPLES_OUT") {
        let out = format!("{}-{line}", Path::new(&out).display());
        std::fs::write(&out, &listing).unwrap_or_else(|e| panic!("{}: {e}", Path::new(&out).display()));
    }
    println!("Spark {version} at {url}: {} documented examples", examples.len());
    println!(
        "{:18} {:>6} {:>6} {:>8} {:>10} {:>11} {:>7}",
        "category", "equal", "names", "refused", "DIFFERENT", "both fail", "nondet"
    );
    let mut totals: BTreeMap<Outcome, usize> = BTreeMap::new();
    for (category, c) in &counts {
        let n = |o: Outcome| c.get(&o).copied().unwrap_or(0);
        println!(
            "{category:18} {:>6} {:>6} {:>8} {:>10} {:>11} {:>7}",
            n(Outcome::Equal),
            n(Outcome::NamesDiffer),
            n(Outcome::Refused),
            n(Outcome::Different),
            n(Outcome::BothFail),
            n(Outcome::Nondeterministic)
        );
        for o in OUTCOMES {
            *totals.entry(o).or_default() += n(o);
        }
    }
    let t = |o: Outcome| totals.get(&o).copied().unwrap_or(0);
    let compared = t(Outcome::Equal) + t(Outcome::NamesDiffer) + t(Outcome::Refused) + t(Outcome::Different);
    println!(
        "{:18} {:>6} {:>6} {:>8} {:>10} {:>11} {:>7}",
        "all",
        t(Outcome::Equal),
        t(Outcome::NamesDiffer),
        t(Outcome::Refused),
        t(Outcome::Different),
        t(Outcome::BothFail),
        t(Outcome::Nondeterministic)
    );
    println!(
        "Spark's values natively: {:.1}% of {compared} deterministic examples ({:.1}% with Spark's column names too)",
        100.0 * (t(Outcome::Equal) + t(Outcome::NamesDiffer)) as f64 / compared as f64,
        100.0 * t(Outcome::Equal) as f64 / compared as f64
    );
    let refused_list: Vec<String> = refused.iter().map(|(f, n)| format!("{f} ({n})")).collect();
    println!("refused natively: {}", refused_list.join(", "));

    for n in &names_differ {
        println!("NAMES {line} {n}");
    }
    for (sql, function, detail) in &different {
        println!("DIFFERENT {line} {function}: {sql}\n    {detail}");
        problems.push(format!("`{sql}` ({function}) gives another answer natively, without an error: {detail}"));
    }
    problems.extend(differential::exact_set(
        "spark_functions/refused",
        &format!("refused natively on Spark {line}"),
        &refused_examples,
        &listed_refused,
    ));
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `thund validate` refuses a call of a function neither Spark nor the engine has; it must
/// never refuse one of Spark's: every function each Spark line lists by a name that can be
/// called (letters, digits, `_`) is known, whether the engine runs it or refuses it when run.
#[test]
fn validate_knows_every_function_each_spark_line_lists() {
    let Some(urls) = thund_testkit::spark_urls("the functions validate knows") else { return };
    let mut listed = std::collections::BTreeSet::new();
    for (line, url) in urls {
        let names = first_column(&SparkBackend::new(&url).query("SHOW FUNCTIONS").expect("SHOW FUNCTIONS"));
        let callable: Vec<&String> =
            names.iter().filter(|n| n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')).collect();
        listed.extend(callable.iter().map(|n| n.to_string()));
        assert!(callable.len() > 400, "Spark {line} lists {} callable functions", callable.len());
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("spark-pipeline.yml"),
            "name: f\nlibraries:\n  - glob:\n      include: '*.sql'\n",
        )
        .unwrap();
        let sql: String = callable
            .iter()
            .enumerate()
            .map(|(i, n)| format!("CREATE TEMPORARY VIEW v{i} AS SELECT `{n}`(1) AS c;\n"))
            .collect();
        std::fs::write(dir.path().join("f.sql"), sql).unwrap();
        let o = std::process::Command::new(env!("CARGO_BIN_EXE_thund"))
            .args(["validate", "-p"])
            .arg(dir.path())
            .output()
            .unwrap();
        let out = format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        let unknown: Vec<&str> = out.lines().filter(|l| l.contains("unknown function")).collect();
        assert!(
            unknown.is_empty(),
            "Spark {line}: {} of its functions are unknown to validate:\n{}",
            unknown.len(),
            unknown.join("\n")
        );
        assert!(o.status.success(), "Spark {line}: {out}");
    }
    // The list validate tells Spark's functions by is every line's.
    let embedded: std::collections::BTreeSet<String> =
        thund_native::SPARK_FUNCTIONS.lines().map(str::to_string).collect();
    assert_eq!(
        embedded, listed,
        "thund-sql's functions/spark_functions.txt is not the union of the lines' SHOW FUNCTIONS"
    );
}
