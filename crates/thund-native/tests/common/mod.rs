//! Test helpers: projects in temp folders, runs, and order-free table comparison.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use knut_thund::backend::{ExecBackend, RunEvent, RunOptions, RunSummary};
use knut_thund::ir::Pipeline;
use thund_native::{EngineOptions, NativeBackend};

/// Writes `files` (path, text) under a new temp folder.
pub fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, text) in files {
        let p = dir.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
    dir
}

/// Copies a folder recursively.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// What a case folder is loaded from: its DLT settings file if it has one (a project written
/// for Databricks), else the folder (its `spark-pipeline.yml`).
pub fn spec_of(dir: &Path) -> std::path::PathBuf {
    let settings = dir.join("settings.json");
    if settings.is_file() {
        settings
    } else {
        dir.to_path_buf()
    }
}

/// Fills a case's `${STORAGE}` and `${DATA}` in its spec (either kind); `database` replaces
/// the spec's database (a DLT settings file's `target`).
pub fn fill_spec(dir: &Path, storage: &Path, data: &Path, database: Option<&str>) {
    let fill = |text: String| {
        text.replace("${STORAGE}", &storage.to_string_lossy()).replace("${DATA}", &data.to_string_lossy())
    };
    // A bundle: its root and resource files; the database is its resource's `schema`.
    if dir.join("databricks.yml").is_file() {
        let mut files = vec![dir.join("databricks.yml")];
        files.extend(std::fs::read_dir(dir.join("resources")).unwrap().map(|e| e.unwrap().path()));
        for f in files {
            let mut text = fill(std::fs::read_to_string(&f).unwrap());
            if let Some(db) = database {
                text = text.replace("schema: ${var.schema}", &format!("schema: {db}"));
            }
            std::fs::write(f, text).unwrap();
        }
        return;
    }
    let (spec, dlt) = match dir.join("settings.json") {
        s if s.is_file() => (s, true),
        _ => (dir.join("spark-pipeline.yml"), false),
    };
    let mut text = fill(std::fs::read_to_string(&spec).unwrap());
    match (database, dlt) {
        (Some(db), true) => {
            // A settings file exported as a notebook keeps its header line.
            let (header, json) = match text.split_once('\n') {
                Some((first, rest)) if first.contains("Databricks notebook source") => (format!("{first}\n"), rest),
                _ => (String::new(), text.as_str()),
            };
            let mut v: serde_json::Value = serde_json::from_str(json).unwrap();
            v["target"] = serde_json::Value::String(db.to_string());
            text = format!("{header}{}", serde_json::to_string_pretty(&v).unwrap());
        }
        (Some(db), false) => text.push_str(&format!("database: {db}\n")),
        (None, _) => {}
    }
    std::fs::write(spec, text).unwrap();
}

pub fn load(dir: &Path) -> Pipeline {
    knut_thund::frontend::load(dir).unwrap_or_else(|e| panic!("{e}"))
}

/// Runs the pipeline to its end and returns the summary and all events.
pub fn run_with(dir: &Path, options: RunOptions) -> (RunSummary, Vec<RunEvent>) {
    let p = load(dir);
    let mut run = NativeBackend::new().run_with(&p, &options).unwrap_or_else(|e| panic!("{e}"));
    let mut events = Vec::new();
    while let Some(evs) = run.poll_events() {
        events.extend(evs);
    }
    (run.finish().unwrap(), events)
}

pub fn run(dir: &Path) -> (RunSummary, Vec<RunEvent>) {
    run_with(dir, RunOptions::default())
}

/// Runs SQL over the pipeline's stored tables.
pub fn query(dir: &Path, sql: &str) -> Result<Vec<RecordBatch>, thund_native::NativeError> {
    let p = load(dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(thund_native::query(&p, sql, &EngineOptions::default())).map(|r| r.batches)
}

/// Rows as strings (NULL as an empty string), with the column names.
pub fn rows(batches: &[RecordBatch]) -> (Vec<String>, Vec<Vec<String>>) {
    let mut out = Vec::new();
    let mut names = Vec::new();
    let opts = FormatOptions::default().with_null("");
    for b in batches {
        names = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        let fmts: Vec<ArrayFormatter> =
            b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap()).collect();
        for r in 0..b.num_rows() {
            out.push(fmts.iter().map(|f| f.value(r).to_string()).collect());
        }
    }
    (names, out)
}

/// A table as the conformance rules compare it: column names, Spark type names (normalised:
/// lower case, no spaces, e.g. `decimal(10,2)`, `struct<a:int>`), and rows of values as text
/// (`None` is NULL).
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub names: Vec<String>,
    pub types: Vec<String>,
    pub rows: Vec<Vec<Option<String>>>,
}

/// A query's result as a [`Table`]; `schema` names the columns when there are no batches.
pub fn table_of(schema: Option<arrow::datatypes::SchemaRef>, batches: &[RecordBatch]) -> Table {
    let schema = batches.first().map(|b| b.schema()).or(schema).expect("a result without a schema");
    let names = schema.fields().iter().map(|f| f.name().clone()).collect();
    let types = schema.fields().iter().map(|f| normalise_type(&thund_native::spark_type_name(f.data_type()))).collect();
    let opts = FormatOptions::default();
    let mut rows = Vec::new();
    for b in batches {
        let fmts: Vec<ArrayFormatter> =
            b.columns().iter().map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap()).collect();
        for r in 0..b.num_rows() {
            rows.push(
                b.columns().iter().zip(&fmts).map(|(c, f)| (!c.is_null(r)).then(|| f.value(r).to_string())).collect(),
            );
        }
    }
    Table { names, types, rows }
}

/// Runs SQL over the pipeline's stored tables, as a [`Table`].
pub fn query_table(dir: &Path, sql: &str) -> Result<Table, thund_native::NativeError> {
    let p = load(dir);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let r = rt.block_on(thund_native::query(&p, sql, &EngineOptions::default()))?;
    Ok(table_of(Some(r.schema), &r.batches))
}

fn normalise_type(t: &str) -> String {
    t.chars().filter(|c| !c.is_whitespace()).collect::<String>().to_ascii_lowercase()
}

/// Reads an expected table: `<table>.csv` (a header of column names; an empty unquoted field is
/// NULL, `""` the empty string) and its `<table>.schema` (Spark's `simpleString` of the table's
/// schema, e.g. `struct<id:int,name:string>`), which must exist.
pub fn read_expected(csv: &Path) -> Table {
    let text = std::fs::read_to_string(csv).unwrap_or_else(|e| panic!("{}: {e}", csv.display()));
    let mut lines = text.lines().filter(|l| !l.is_empty()).map(split_csv_line);
    let names: Vec<String> = lines.next().unwrap_or_default().into_iter().map(Option::unwrap_or_default).collect();
    let rows: Vec<Vec<Option<String>>> = lines.collect();
    let schema_path = csv.with_extension("schema");
    let schema = std::fs::read_to_string(&schema_path)
        .unwrap_or_else(|e| panic!("{}: every expected table has its schema: {e}", schema_path.display()));
    let fields = schema_fields(schema.trim()).unwrap_or_else(|| panic!("{}: not a struct<…>", schema_path.display()));
    let field_names: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(field_names, names, "{}: the header and the schema name other columns", csv.display());
    for r in &rows {
        assert_eq!(r.len(), names.len(), "{}: a row of {} fields: {r:?}", csv.display(), r.len());
    }
    Table { names, types: fields.into_iter().map(|(_, t)| normalise_type(&t)).collect(), rows }
}

/// The top-level fields of `struct<a:int,b:decimal(10,2),c:struct<x:int>>` as (name, type).
fn schema_fields(schema: &str) -> Option<Vec<(String, String)>> {
    let inner = schema.strip_prefix("struct<")?.strip_suffix('>')?;
    let mut fields = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in inner.char_indices().chain(std::iter::once((inner.len(), ','))) {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                let (name, ty) = inner[start..i].split_once(':')?;
                fields.push((name.to_string(), ty.to_string()));
                start = i + 1;
            }
            _ => {}
        }
    }
    Some(fields)
}

/// One CSV line's fields: `None` for an empty unquoted field (NULL), the text otherwise.
fn split_csv_line(line: &str) -> Vec<Option<String>> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let (mut quoted, mut was_quoted) = (false, false);
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => {
                quoted = !quoted;
                was_quoted = true;
            }
            (',', false) => {
                out.push((was_quoted || !cur.is_empty()).then(|| std::mem::take(&mut cur)));
                was_quoted = false;
            }
            _ => cur.push(c),
        }
    }
    out.push((was_quoted || !cur.is_empty()).then_some(cur));
    out
}

/// A timestamp in the form the conformance rules compare: `YYYY-MM-DD HH:MM:SS[.fraction]`, a `T`
/// separator, a `Z` and trailing zeros of the fraction dropped.
fn canonical_timestamp(v: &str) -> String {
    let mut s = v.replacen('T', " ", 1);
    if let Some(stripped) = s.strip_suffix('Z') {
        s = stripped.to_string();
    }
    if s.contains('.') {
        s = s.trim_end_matches('0').trim_end_matches('.').to_string();
    }
    s
}

/// Whether two values of a column of Spark type `ty` are the same: floating point within a
/// relative 1e-12 (the last bits of a sum depend on the order it adds in, on Spark as here),
/// decimals exactly by value (Python writes `0E-10` for `0.0000000000`, Spark `1.50` where the
/// scale is 2: [`exact_decimal`]), timestamps in their canonical form, everything else exactly.
fn same_value(ty: &str, a: &Option<String>, b: &Option<String>) -> bool {
    let (a, b) = match (a, b) {
        (None, None) => return true,
        (Some(a), Some(b)) => (a, b),
        _ => return false,
    };
    match ty {
        "double" | "float" => match (a.parse::<f64>(), b.parse::<f64>()) {
            (Ok(x), Ok(y)) if x.is_nan() || y.is_nan() => x.is_nan() && y.is_nan(),
            (Ok(x), Ok(y)) => {
                let scale = x.abs().max(y.abs()).max(1e-12);
                x == y || ((x - y).abs() / scale) <= 1e-12
            }
            _ => a == b,
        },
        t if t.starts_with("decimal") => {
            a == b || matches!((exact_decimal(a), exact_decimal(b)), (Some(x), Some(y)) if x == y)
        }
        "timestamp" | "timestamp_ntz" => canonical_timestamp(a) == canonical_timestamp(b),
        _ => a == b,
    }
}

/// A decimal's value, exactly, as (sign, digits, exponent) with no leading or trailing zeros in
/// the digits: `1.50`, `1.5` and `15E-1` are one value, `0E-10` and `0.00` are zero. Every digit
/// counts, so 38-digit values are told apart as they must be (an `f64` keeps only ~16).
fn exact_decimal(text: &str) -> Option<(bool, String, i64)> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text.strip_prefix('+').unwrap_or(text)),
    };
    let (mantissa, exponent) = match unsigned.split_once(['e', 'E']) {
        Some((m, e)) => (m, e.parse::<i64>().ok()?),
        None => (unsigned, 0),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() || !whole.chars().chain(fraction.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let mut exponent = exponent - fraction.len() as i64;
    let trimmed = digits.trim_start_matches('0');
    let significant = trimmed.trim_end_matches('0');
    if significant.is_empty() {
        return Some((false, String::new(), 0));
    }
    exponent += (trimmed.len() - significant.len()) as i64;
    Some((negative, significant.to_string(), exponent))
}

/// Compares two tables as multisets of rows, columns matched by name (as Spark resolves them,
/// ignoring case), each column's Spark type exactly. Returns a description of the first
/// difference.
pub fn compare_tables(expected: &Table, actual: &Table) -> Result<(), String> {
    let mut order = Vec::new();
    for n in &expected.names {
        match actual.names.iter().position(|a| a.eq_ignore_ascii_case(n)) {
            Some(i) => order.push(i),
            None => return Err(format!("column `{n}` missing; actual columns: {:?}", actual.names)),
        }
    }
    if actual.names.len() != expected.names.len() {
        return Err(format!("columns differ: expected {:?}, actual {:?}", expected.names, actual.names));
    }
    let types: Vec<&String> = order.iter().map(|&i| &actual.types[i]).collect();
    if types.iter().zip(&expected.types).any(|(a, e)| *a != e) {
        let show = |ts: Vec<&String>| {
            expected.names.iter().zip(ts).map(|(n, t)| format!("{n} {t}")).collect::<Vec<_>>().join(", ")
        };
        return Err(format!(
            "types differ:\n  expected {}\n  actual   {}",
            show(expected.types.iter().collect()),
            show(types)
        ));
    }
    let mut remaining: Vec<Vec<Option<String>>> =
        actual.rows.iter().map(|r| order.iter().map(|&i| r[i].clone()).collect()).collect();
    for er in &expected.rows {
        let found = remaining.iter().position(|ar| {
            ar.len() == er.len() && ar.iter().zip(er).zip(&expected.types).all(|((a, e), t)| same_value(t, e, a))
        });
        match found {
            Some(i) => {
                remaining.swap_remove(i);
            }
            None => return Err(format!("expected row {er:?} not found; actual rows:\n{}", fmt_rows(&actual.rows))),
        }
    }
    if !remaining.is_empty() {
        return Err(format!("unexpected rows: {remaining:?}"));
    }
    Ok(())
}

fn fmt_rows(rows: &[Vec<Option<String>>]) -> String {
    rows.iter().map(|r| format!("  {r:?}")).collect::<Vec<_>>().join("\n")
}

/// The expected tables (`*.csv`) of a folder, sorted.
pub fn csv_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|f| f.extension().is_some_and(|e| e == "csv"))
        .collect();
    files.sort();
    files
}

/// Every file under `dir` as (path relative to `dir`, bytes), sorted.
pub fn files_under(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(&manifest_dir()).join("../..").canonicalize().unwrap()
}

/// The crate's folder, as the test runner reports it when the test starts: a test binary built
/// from another checkout sharing the target directory still reads this checkout's files.
fn manifest_dir() -> String {
    std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").to_string())
}
