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
    let (spec, dlt) = match dir.join("settings.json") {
        s if s.is_file() => (s, true),
        _ => (dir.join("spark-pipeline.yml"), false),
    };
    let mut text = std::fs::read_to_string(&spec)
        .unwrap()
        .replace("${STORAGE}", &storage.to_string_lossy())
        .replace("${DATA}", &data.to_string_lossy());
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

/// Parses a CSV file with a header (quotes honoured; an empty field is NULL).
pub fn read_csv(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.is_empty()).map(split_csv_line);
    let header = lines.next().unwrap_or_default();
    (header, lines.collect())
}

fn split_csv_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (c, quoted) {
            ('"', true) if chars.peek() == Some(&'"') => {
                cur.push('"');
                chars.next();
            }
            ('"', _) => quoted = !quoted,
            (',', false) => out.push(std::mem::take(&mut cur)),
            _ => cur.push(c),
        }
    }
    out.push(cur);
    out
}

/// A value in the form the conformance rules compare: timestamps as `YYYY-MM-DD HH:MM:SS`
/// (a `T` separator, a `Z` and trailing zero fractions are the same).
fn canonical(v: &str) -> String {
    let looks_like_ts =
        v.len() >= 19 && v.as_bytes().get(10).is_some_and(|b| *b == b'T' || *b == b' ') && v.as_bytes()[4] == b'-';
    if !looks_like_ts {
        return v.to_string();
    }
    let mut s = v.replacen('T', " ", 1);
    if let Some(stripped) = s.strip_suffix('Z') {
        s = stripped.to_string();
    }
    if let Some(dot) = s.find('.') {
        if s[dot + 1..].chars().all(|c| c == '0') {
            s.truncate(dot);
        }
    }
    s
}

fn same_value(a: &str, b: &str) -> bool {
    let (a, b) = (canonical(a), canonical(b));
    if a == b {
        return true;
    }
    match (a.parse::<f64>(), b.parse::<f64>()) {
        (Ok(x), Ok(y)) => {
            let scale = x.abs().max(y.abs()).max(1e-12);
            ((x - y).abs() / scale) <= 1e-6
        }
        _ => false,
    }
}

/// Compares two tables as multisets of rows, columns matched by name. Returns a description of
/// the first difference.
pub fn compare_tables(
    expected: &(Vec<String>, Vec<Vec<String>>),
    actual: &(Vec<String>, Vec<Vec<String>>),
) -> Result<(), String> {
    let (enames, erows) = expected;
    let (anames, arows) = actual;
    let mut order = Vec::new();
    for n in enames {
        match anames.iter().position(|a| a.eq_ignore_ascii_case(n)) {
            Some(i) => order.push(i),
            None => return Err(format!("column `{n}` missing; actual columns: {anames:?}")),
        }
    }
    if anames.len() != enames.len() {
        return Err(format!("columns differ: expected {enames:?}, actual {anames:?}"));
    }
    let mut remaining: Vec<Vec<String>> = arows.iter().map(|r| order.iter().map(|&i| r[i].clone()).collect()).collect();
    for er in erows {
        match remaining.iter().position(|ar| ar.len() == er.len() && ar.iter().zip(er).all(|(a, e)| same_value(a, e))) {
            Some(i) => {
                remaining.swap_remove(i);
            }
            None => return Err(format!("expected row {er:?} not found; actual rows:\n{}", fmt_rows(arows))),
        }
    }
    if !remaining.is_empty() {
        return Err(format!("unexpected rows: {remaining:?}"));
    }
    Ok(())
}

fn fmt_rows(rows: &[Vec<String>]) -> String {
    rows.iter().map(|r| format!("  {r:?}")).collect::<Vec<_>>().join("\n")
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
