//! `thund test`: the project's pipeline unit tests (`tests/**/*.yml`, read by
//! `knut_thund::unit_test`), each run on the embedded engine against a scratch storage (in memory
//! where the system has a RAM file system), never the project's own — or with `--backend spark`
//! on a Spark Connect server, each test in a database of its own, dropped after it. Inputs that
//! are not streams travel inline in the plan (`VALUES`); streams and file sources are files in the
//! scratch folder, which the server reads, so it must share this machine's file system. Spark
//! reports no expectation counts: a test's counts are checked on the embedded engine only, and
//! the output says so.
//!
//! A test's batches run in turn: each writes its inputs' rows, runs the test pipeline, then
//! compares. Rows compare as a multiset over the columns the expected rows name, typed: a number
//! equals a number of any width (within 1e-9, relatively), text equals text, and `10` never
//! equals `"10"`. A failure prints the missing and extra rows. Exit 0 when every test passes, 1
//! when one fails, 2 when a test file is broken (every problem, each at its line).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::backends::Backend;
use crate::failure::{Failure, ProjectError};
use anyhow::{bail, Context};
use arrow::array::{Array, AsArray};
use arrow::datatypes::DataType;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use knut_thund::backend::RunOptions;
use knut_thund::error::ThundError;
use knut_thund::ir::{Pipeline, ViolationAction};
use knut_thund::unit_test::{input_folder, input_is_stream, test_pipeline, InputTarget, Row, TestCase, Value};

/// A test's outcome.
struct Outcome {
    case: TestCase,
    file: String,
    elapsed: Duration,
    /// Why it failed.
    failure: Option<String>,
}

/// The project's test files, sorted.
fn test_files(root: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = ["yml", "yaml"]
        .iter()
        .flat_map(|ext| glob::glob(&root.join(format!("tests/**/*.{ext}")).to_string_lossy()).into_iter().flatten())
        .filter_map(Result::ok)
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
}

/// Runs the tests of the project `p` whose name contains `filter` on `backend`; writes JUnit
/// XML to `junit`.
pub(crate) fn run(
    p: &Pipeline,
    backend: &dyn Backend,
    filter: Option<&str>,
    junit: Option<&Path>,
) -> anyhow::Result<()> {
    let files = test_files(&p.root);
    if files.is_empty() {
        bail!(Failure::usage(format!(
            "no test files in {}: write tests in tests/*.yml (`thund init` writes examples)",
            p.root.join("tests").display()
        )));
    }
    let mut cases = Vec::new();
    let mut problems = Vec::new();
    for f in &files {
        let shown = f.strip_prefix(&p.root).unwrap_or(f).to_string_lossy().replace('\\', "/");
        let text = std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?;
        match knut_thund::unit_test::parse(&text, &shown, p) {
            Ok(cs) => cases.extend(cs.into_iter().map(|c| (shown.clone(), c))),
            Err(ds) => problems.extend(ds),
        }
    }
    if !problems.is_empty() {
        bail!(ProjectError { root: p.root.clone(), error: ThundError::Tests(problems) });
    }
    let selected: Vec<(String, TestCase)> =
        cases.into_iter().filter(|(_, c)| filter.is_none_or(|f| c.name.contains(f))).collect();
    if selected.is_empty() {
        bail!(Failure::usage(format!("no test's name contains `{}`", filter.unwrap_or_default())));
    }
    // A RAM file system when there is one: a test's tables never touch the disk.
    let scratch = crate::scratch::Scratch::create()?;
    scratch.remove_on_signals();
    // On a server shared with others, each test writes a database of its own, dropped after.
    let shared = !backend.needs_project();
    if shared {
        backend.connect().map_err(|e| ProjectError { root: p.root.clone(), error: e })?;
    }
    let started = Instant::now();
    let mut outcomes = Vec::new();
    let mut stdout = std::io::stdout();
    for (i, (file, case)) in selected.into_iter().enumerate() {
        let t = Instant::now();
        let database = shared.then(|| format!("thund_test_{}_{i}", scratch.id()));
        let failure = run_case(p, backend, database.as_deref(), &case, &scratch.path().join(i.to_string())).err();
        if let Some(db) = &database {
            let _ = backend.query(None, &format!("DROP DATABASE IF EXISTS {}.{db} CASCADE", p.catalog));
        }
        let o = Outcome { case, file, elapsed: t.elapsed(), failure };
        let ms = o.elapsed.as_secs_f64() * 1000.0;
        match &o.failure {
            None => writeln!(stdout, "PASS {} ({ms:.0} ms)", o.case.name)?,
            Some(why) => {
                writeln!(stdout, "FAIL {} ({ms:.0} ms) at {}", o.case.name, o.case.location)?;
                for line in why.lines() {
                    writeln!(stdout, "     {line}")?;
                }
            }
        }
        outcomes.push(o);
    }
    let failed = outcomes.iter().filter(|o| o.failure.is_some()).count();
    writeln!(stdout, "{} passed, {failed} failed ({:.2} s)", outcomes.len() - failed, started.elapsed().as_secs_f64())?;
    if let Some(path) = junit {
        std::fs::write(path, junit_xml(&outcomes, started.elapsed()))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if failed > 0 {
        bail!(Failure::failed(format!("{failed} of {} tests failed", outcomes.len())));
    }
    Ok(())
}

/// Runs one test in `dir` (and, on a shared server, in `database`); `Err` says why it failed.
fn run_case(
    p: &Pipeline,
    backend: &dyn Backend,
    database: Option<&str>,
    case: &TestCase,
    dir: &Path,
) -> Result<(), String> {
    let inputs = dir.join("inputs");
    let storage = dir.join("storage");
    let tested = match database {
        Some(db) if case.dataset.catalog == p.catalog && case.dataset.database == p.database => {
            knut_thund::ir::QualifiedName::new(&case.dataset.catalog, db, &case.dataset.name)
        }
        _ => case.dataset.clone(),
    };
    // Streams read their folder from the first batch on, whichever batch first fills it.
    for i in case.batches.iter().flat_map(|b| &b.inputs) {
        if input_is_stream(p, &i.target) || matches!(i.target, InputTarget::Files(_)) {
            let folder = input_folder(&inputs, &i.target);
            std::fs::create_dir_all(&folder).map_err(|e| format!("{}: {e}", folder.display()))?;
        }
    }
    let many = case.batches.len() > 1;
    for (n, batch) in case.batches.iter().enumerate() {
        let at = if many { format!("batch {}: ", n + 1) } else { String::new() };
        for input in &batch.inputs {
            let stream = input_is_stream(p, &input.target);
            if !stream && matches!(input.target, InputTarget::Dataset(_)) {
                continue; // inline in the test pipeline
            }
            let folder = input_folder(&inputs, &input.target);
            if !stream {
                // Not a stream: each batch's rows are the whole input.
                for e in std::fs::read_dir(&folder).map_err(|e| e.to_string())?.flatten() {
                    let _ = std::fs::remove_file(e.path());
                }
            }
            let lines: String = input.rows.iter().map(|r| format!("{}\n", json_row(r))).collect();
            std::fs::write(folder.join(format!("b{n:04}.json")), lines).map_err(|e| e.to_string())?;
        }
        // Each batch's pipeline holds that batch's rows of the inputs that are not streams.
        let tp = test_pipeline(p, case, n, &inputs, &storage).map_err(|d| d.to_string())?;
        let tp = match database {
            Some(db) => knut_thund::unit_test::in_database(&tp, db),
            None => tp,
        };
        let mut run = backend.run_with(&tp, &RunOptions::default()).map_err(|e| format!("{at}{e}"))?;
        while run.poll_events().is_some() {}
        let summary = run.finish().map_err(|e| format!("{at}{e}"))?;
        if summary.failed() {
            let errors: Vec<String> = summary
                .error
                .iter()
                .cloned()
                .chain(summary.flows.iter().filter_map(|f| f.error.as_ref().map(|e| format!("{}: {e}", f.flow))))
                .collect();
            return Err(format!("{at}the run failed:\n  {}", errors.join("\n  ")));
        }
        let dataset = p.dataset(&case.dataset).ok_or_else(|| format!("{at}no dataset `{}`", case.dataset))?;
        if !batch.expect.expectations.is_empty() && database.is_some() {
            println!(
                "     note: {at}{} reports no expectation counts; they are checked on the embedded engine",
                backend.capabilities().name
            );
        }
        for (name, want) in batch.expect.expectations.iter().filter(|_| database.is_none()) {
            let action = dataset.expectations.iter().find(|e| &e.name == name).map(|e| e.action);
            let got = summary
                .flows
                .iter()
                .filter(|f| f.target == tested.to_string())
                .filter_map(|f| f.data_quality.as_ref())
                .flat_map(|dq| dq.expectations.iter())
                .filter(|m| &m.name == name)
                .fold((0, 0), |(p, f), m| (p + m.passed_records, f + m.failed_records));
            let dropped = if action == Some(ViolationAction::Drop) { got.1 } else { 0 };
            let checks =
                [("passed", want.passed, got.0), ("failed", want.failed, got.1), ("dropped", want.dropped, dropped)];
            for (what, want, got) in checks {
                if let Some(want) = want.filter(|w| *w != got) {
                    return Err(format!("{at}expectation `{name}`: {got} rows {what}, expected {want}"));
                }
            }
        }
        if let Some(expected) = &batch.expect.rows {
            let sql = match tp.dataset(&tested).and_then(|d| d.sink.as_ref()) {
                // A sink is read back from the files the test wrote (under its scratch storage).
                Some(sink) => sink_rows_sql(sink),
                None => format!("SELECT * FROM {tested}"),
            };
            let batches =
                backend.query(Some(&tp), &sql).map_err(|e| format!("{at}reading `{}`: {e}", case.dataset))?.batches;
            compare(expected, &batches).map_err(|diff| format!("{at}`{}` {diff}", case.dataset.name))?;
        }
    }
    Ok(())
}

/// The query reading a sink's rows back, as written (CSV with its header line).
fn sink_rows_sql(sink: &knut_thund::ir::SinkSpec) -> String {
    let path = sink.options.get("path").map(String::as_str).unwrap_or_default();
    match sink.format.to_ascii_lowercase().as_str() {
        "csv" => format!("SELECT * FROM read_files('{}', format => 'csv', header => true)", path.replace('\'', "\\'")),
        format => format!("SELECT * FROM {format}.`{}`", path.replace('`', "``")),
    }
}

fn json_row(r: &Row) -> String {
    let map: serde_json::Map<String, serde_json::Value> = r.iter().map(|(k, v)| (k.clone(), json_value(v))).collect();
    serde_json::Value::Object(map).to_string()
}

fn json_value(v: &Value) -> serde_json::Value {
    match v {
        Value::Null => serde_json::Value::Null,
        Value::Bool(b) => serde_json::Value::Bool(*b),
        Value::Int(i) => serde_json::Value::from(*i),
        Value::Float(x) => serde_json::Number::from_f64(*x).map_or(serde_json::Value::Null, serde_json::Value::Number),
        Value::Text(s) => serde_json::Value::String(s.clone()),
        Value::List(items) => serde_json::Value::Array(items.iter().map(json_value).collect()),
        Value::Struct(fields) => {
            serde_json::Value::Object(fields.iter().map(|(k, v)| (k.clone(), json_value(v))).collect())
        }
    }
}

/// The value of a cell, typed by its column: numbers as numbers, dates and times as their text,
/// arrays and structs as lists and structs of such values.
fn cell(array: &dyn Array, formatter: &ArrayFormatter<'_>, row: usize) -> Value {
    if array.is_null(row) {
        return Value::Null;
    }
    let nested = |values: &dyn Array, rows: std::ops::Range<usize>| -> Value {
        match ArrayFormatter::try_new(values, &FormatOptions::default()) {
            Ok(f) => Value::List(rows.map(|i| cell(values, &f, i)).collect()),
            Err(e) => Value::Text(e.to_string()),
        }
    };
    match array.data_type() {
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            let offsets = list.value_offsets();
            return nested(list.values().as_ref(), offsets[row] as usize..offsets[row + 1] as usize);
        }
        DataType::LargeList(_) => {
            let list = array.as_list::<i64>();
            let offsets = list.value_offsets();
            return nested(list.values().as_ref(), offsets[row] as usize..offsets[row + 1] as usize);
        }
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let values = fields.iter().zip(s.columns()).map(|(field, column)| {
                let v = match nested(column.as_ref(), row..row + 1) {
                    Value::List(mut one) => one.pop().unwrap_or(Value::Null),
                    other => other,
                };
                (field.name().clone(), v)
            });
            return Value::Struct(values.collect());
        }
        _ => {}
    }
    let text = formatter.value(row).to_string();
    match array.data_type() {
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64 => text.parse().map_or(Value::Text(text), Value::Int),
        DataType::Float16
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => text.parse().map_or(Value::Text(text), Value::Float),
        DataType::Boolean => Value::Bool(text == "true"),
        DataType::Timestamp(..) => Value::Text(timestamp_text(&text)),
        _ => Value::Text(text),
    }
}

/// A timestamp as Spark shows it in its session time zone (UTC here): `2026-06-01 10:00:00`,
/// fractions without trailing zeros, no zone suffix.
fn timestamp_text(text: &str) -> String {
    let t = text.replacen('T', " ", 1);
    let t = t.strip_suffix('Z').or_else(|| t.strip_suffix("+00:00")).unwrap_or(&t);
    match t.split_once('.') {
        Some((whole, fraction)) => {
            let fraction = fraction.trim_end_matches('0');
            if fraction.is_empty() {
                whole.to_string()
            } else {
                format!("{whole}.{fraction}")
            }
        }
        None => t.to_string(),
    }
}

fn same(expected: &Value, got: &Value) -> bool {
    let close = |a: f64, b: f64| a == b || (a - b).abs() <= 1e-9 * a.abs().max(b.abs());
    match (expected, got) {
        (Value::Int(a), Value::Int(b)) => a == b,
        (Value::Int(a), Value::Float(b)) => close(*a as f64, *b),
        (Value::Float(a), Value::Int(b)) => close(*a, *b as f64),
        (Value::Float(a), Value::Float(b)) => close(*a, *b),
        (Value::List(a), Value::List(b)) => a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same(x, y)),
        // A struct written in a test names the fields it checks, in any order.
        (Value::Struct(a), Value::Struct(b)) => {
            a.iter().all(|(k, x)| b.iter().any(|(n, y)| n.eq_ignore_ascii_case(k) && same(x, y)))
        }
        (a, b) => a == b,
    }
}

fn show(columns: &[String], values: &[Value]) -> String {
    let fields: Vec<String> = columns.iter().zip(values).map(|(c, v)| format!("{c}: {v}")).collect();
    format!("{{{}}}", fields.join(", "))
}

/// Compares `expected` rows with the result, over the columns the expected rows name.
fn compare(expected: &[Row], batches: &[RecordBatch]) -> Result<(), String> {
    let mut columns: Vec<String> = expected.iter().flat_map(|r| r.keys().cloned()).collect();
    columns.sort();
    columns.dedup();
    let mut actual: Vec<Vec<Value>> = Vec::new();
    let options = FormatOptions::default();
    for b in batches {
        let schema = b.schema();
        let mut idx = Vec::new();
        for c in &columns {
            match schema.index_of(c) {
                Ok(i) => idx.push(i),
                Err(_) => {
                    let have: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                    return Err(format!("has no column `{c}` (it has {})", have.join(", ")));
                }
            }
        }
        let formatters: Vec<ArrayFormatter> = idx
            .iter()
            .map(|i| ArrayFormatter::try_new(b.column(*i).as_ref(), &options))
            .collect::<Result<_, _>>()
            .map_err(|e| e.to_string())?;
        for row in 0..b.num_rows() {
            actual.push(idx.iter().zip(&formatters).map(|(i, f)| cell(b.column(*i).as_ref(), f, row)).collect());
        }
    }
    let expected: Vec<Vec<Value>> =
        expected.iter().map(|r| columns.iter().map(|c| r.get(c).cloned().unwrap_or(Value::Null)).collect()).collect();
    let mut unmatched: Vec<bool> = vec![true; actual.len()];
    let mut missing = Vec::new();
    for e in &expected {
        let hit = actual
            .iter()
            .enumerate()
            .find(|(i, a)| unmatched[*i] && e.iter().zip(a.iter()).all(|(x, y)| same(x, y)))
            .map(|(i, _)| i);
        match hit {
            Some(i) => unmatched[i] = false,
            None => missing.push(show(&columns, e)),
        }
    }
    let extra: Vec<String> =
        actual.iter().zip(&unmatched).filter(|(_, u)| **u).map(|(a, _)| show(&columns, a)).collect();
    if missing.is_empty() && extra.is_empty() {
        return Ok(());
    }
    let mut out = format!("has {} rows, expected {}", actual.len(), expected.len());
    for (what, rows) in [("missing", &missing), ("extra", &extra)] {
        if !rows.is_empty() {
            out.push_str(&format!("\n{what} rows:"));
            for r in rows {
                out.push_str(&format!("\n  {r}"));
            }
        }
    }
    Err(out)
}

fn xml(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

fn junit_xml(outcomes: &[Outcome], total: Duration) -> String {
    let failures = outcomes.iter().filter(|o| o.failure.is_some()).count();
    let mut out = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n\
         <testsuite name=\"thund\" tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n",
        outcomes.len(),
        total.as_secs_f64(),
        outcomes.len(),
        total.as_secs_f64()
    );
    for o in outcomes {
        out.push_str(&format!(
            "  <testcase name=\"{}\" classname=\"{}\" time=\"{:.3}\"",
            xml(&o.case.name),
            xml(&o.file),
            o.elapsed.as_secs_f64()
        ));
        match &o.failure {
            None => out.push_str("/>\n"),
            Some(why) => {
                let first = why.lines().next().unwrap_or_default();
                out.push_str(&format!(
                    ">\n    <failure message=\"{}\">{}</failure>\n  </testcase>\n",
                    xml(first),
                    xml(why)
                ));
            }
        }
    }
    out.push_str("</testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Decimal128Array, Int64Array, StringArray};
    use arrow::datatypes::{Field, Schema};

    use super::*;

    fn batch() -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("id", DataType::Int64, false),
            Field::new("amount", DataType::Decimal128(10, 2), true),
            Field::new("name", DataType::Utf8, true),
        ]);
        let amounts = Decimal128Array::from(vec![Some(1050), None]).with_precision_and_scale(10, 2).unwrap();
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from(vec![1, 2])),
                Arc::new(amounts),
                Arc::new(StringArray::from(vec![Some("a"), None])),
            ],
        )
        .unwrap()
    }

    fn rows(rows: &[&[(&str, Value)]]) -> Vec<Row> {
        rows.iter().map(|r| r.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()).collect()
    }

    #[test]
    fn rows_compare_typed_in_any_order_over_the_columns_named() {
        let b = batch();
        let ok = rows(&[
            &[("id", Value::Int(2)), ("amount", Value::Null)],
            &[("id", Value::Int(1)), ("amount", Value::Float(10.5))],
        ]);
        assert_eq!(compare(&ok, std::slice::from_ref(&b)), Ok(()));
        // 10.50 as a decimal equals the integer-valued or float number; text never equals a number.
        let typed = rows(&[&[("id", Value::Text("1".into()))], &[("id", Value::Int(2))]]);
        let err = compare(&typed, std::slice::from_ref(&b)).unwrap_err();
        assert!(err.contains("missing rows:\n  {id: \"1\"}") && err.contains("extra rows:\n  {id: 1}"), "{err}");
        let twice = rows(&[&[("id", Value::Int(1))], &[("id", Value::Int(1))], &[("id", Value::Int(2))]]);
        let err = compare(&twice, std::slice::from_ref(&b)).unwrap_err();
        assert!(err.starts_with("has 2 rows, expected 3") && err.contains("missing rows:\n  {id: 1}"), "{err}");
        let err = compare(&rows(&[&[("nope", Value::Null)]]), &[b]).unwrap_err();
        assert!(err.contains("no column `nope` (it has id, amount, name)"), "{err}");
    }
}
