//! What the differential tests (Spark's function examples, the query corpus) compare: a
//! result's column names, Spark's names of its column types and its rows as text.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::Path;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Int64Type};
use arrow::util::display::{ArrayFormatter, FormatOptions};
use thund_native::spark_type_name;

/// Column names, Spark type names and rows of a result, each value as [`cell`] writes it, the
/// rows sorted unless `ordered`.
pub fn typed(batches: &[RecordBatch], ordered: bool) -> (Vec<String>, Vec<String>, Vec<Vec<String>>) {
    let (mut names, mut types, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for b in batches {
        names = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        types = b.schema().fields().iter().map(|f| spark_type_name(f.data_type())).collect();
        for r in 0..b.num_rows() {
            rows.push(b.columns().iter().map(|c| cell(c.as_ref(), r)).collect());
        }
    }
    if !ordered {
        rows.sort();
    }
    (names, types, rows)
}

/// One value as text that keeps what a comparison must tell apart: NULL is `NULL` and a string is
/// quoted (`'NULL'` and `''` are not NULL), and arrays, maps and structs are written element by
/// element, so a NULL inside them stays a NULL. Other values are Arrow's text of them; a value
/// outside the calendar (Arrow's text is an error naming the zone, `Etc/UTC` from Spark and `UTC`
/// here for the same instant) is its count of units since the epoch. A value that cannot be
/// written fails the test: two columns that fail alike must not compare equal.
pub fn cell(col: &dyn Array, row: usize) -> String {
    if col.is_null(row) {
        return "NULL".into();
    }
    let each = |values: ArrayRef| (0..values.len()).map(|i| cell(values.as_ref(), i)).collect::<Vec<_>>().join(", ");
    match col.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            format!("'{}'", scalar(col, row).replace('\'', "''"))
        }
        DataType::List(_) => format!("[{}]", each(col.as_list::<i32>().value(row))),
        DataType::LargeList(_) => format!("[{}]", each(col.as_list::<i64>().value(row))),
        DataType::FixedSizeList(..) => format!("[{}]", each(col.as_fixed_size_list().value(row))),
        DataType::Struct(fields) => {
            let s = col.as_struct();
            let members: Vec<String> = fields
                .iter()
                .zip(s.columns())
                .map(|(f, c)| format!("{}: {}", f.name(), cell(c.as_ref(), row)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        DataType::Map(..) => {
            let m = col.as_map();
            let entries = m.value(row);
            let (keys, values) = (entries.column(0), entries.column(1));
            let pairs: Vec<String> = (0..entries.len())
                .map(|i| format!("{} -> {}", cell(keys.as_ref(), i), cell(values.as_ref(), i)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
        _ => scalar(col, row),
    }
}

/// Arrow's text of a scalar value; see [`cell`] for values outside the calendar.
fn scalar(col: &dyn Array, row: usize) -> String {
    let formatter = ArrayFormatter::try_new(col, &FormatOptions::default())
        .unwrap_or_else(|e| panic!("a {} value cannot be written for comparison: {e}", col.data_type()));
    let text = formatter.value(row).to_string();
    if !text.starts_with("ERROR:") {
        return text;
    }
    match arrow::compute::cast(&col.slice(row, 1), &DataType::Int64) {
        Ok(raw) if raw.is_valid(0) => {
            format!("<{} {} units since the epoch>", col.data_type(), raw.as_primitive::<Int64Type>().value(0))
        }
        _ => panic!("a {} value cannot be written for comparison: {text}", col.data_type()),
    }
}

/// Whether two row sets are equal, a DOUBLE or FLOAT column's values to within a relative 1e-12
/// (the last bits of a sum depend on the order it adds in, on Spark as here), and an exact zero
/// to within 1e-12 of it: the variance of equal values is 0 here, while Spark's merges of its
/// partitions' buffers leave rounding noise of about ε·|mean| (`5.7e-14` for a stddev of
/// 680.99, `1.2e-32` for a variance of 1.465), which depends on how Spark split the rows.
pub fn same_rows(types: &[String], a: &[Vec<String>], b: &[Vec<String>]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(r, s)| same_row(types, r, s))
}

/// Whether two rows are equal, as [`same_rows`] compares them.
fn same_row(types: &[String], r: &[String], s: &[String]) -> bool {
    let close = |t: &String, x: &String, y: &String| {
        x == y
            || (t == "DOUBLE" || t == "FLOAT")
                && match (x.parse::<f64>(), y.parse::<f64>()) {
                    (Ok(x), Ok(y)) => {
                        (x - y).abs() <= 1e-12 * x.abs().max(y.abs())
                            || (x == 0.0 || y == 0.0) && (x - y).abs() <= 1e-12
                    }
                    _ => false,
                }
    };
    r.len() == s.len() && r.iter().zip(s).zip(types).all(|((x, y), t)| close(t, x, y))
}

/// Whether two sets of rows in no defined order (each sorted by its text) are equal, as
/// [`same_rows`] compares them: two rows within the tolerance may sort apart (`0.0` and
/// `5.6e-14`), so rows that do not pair up in order are each matched with any row left.
pub fn same_row_set(types: &[String], a: &[Vec<String>], b: &[Vec<String>]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    if same_rows(types, a, b) {
        return true;
    }
    let mut unmatched: Vec<&Vec<String>> = b.iter().collect();
    a.iter().all(|r| match unmatched.iter().position(|s| same_row(types, r, s)) {
        Some(i) => {
            unmatched.swap_remove(i);
            true
        }
        None => false,
    })
}

/// A native result's rows; a result of no rows as one empty batch, so that its column names and
/// types are compared too.
pub fn result_batches(r: thund_native::QueryResult) -> Vec<RecordBatch> {
    if r.batches.is_empty() {
        vec![RecordBatch::new_empty(r.schema)]
    } else {
        r.batches
    }
}

/// The lines of a list file, without blank lines and `#` comments.
pub fn read_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(str::to_string)
        .collect()
}

/// The entries of a list kept for every Spark line that hold on `line` (`4.1`). Each entry starts
/// with the lines it holds on: `4.2+` (that line and every later one) or lines joined by commas
/// (`4.1,4.3`); Spark's lines differ (a function new in 4.2, a rule changed in 4.3), and one
/// list shows where.
pub fn read_lines_on(path: &Path, line: &str) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Vec::new();
    for (at, l) in text.lines().enumerate() {
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((lines, entry)) = l.split_once(' ').filter(|(tag, _)| lines_tag(tag)) else {
            panic!(
                "{}:{}: an entry starts with the Spark lines it holds on (`4.1+`, `4.2,4.3`): {l}",
                path.display(),
                at + 1
            )
        };
        if holds_on(lines, line) {
            out.push(entry.to_string());
        }
    }
    out
}

/// `4.1+`, `4.2`, `4.1,4.3`.
fn lines_tag(tag: &str) -> bool {
    let one = |l: &str| l.split_once('.').is_some_and(|(a, b)| a.parse::<u32>().is_ok() && b.parse::<u32>().is_ok());
    match tag.strip_suffix('+') {
        Some(from) => one(from),
        None => tag.split(',').all(one),
    }
}

fn holds_on(tag: &str, line: &str) -> bool {
    let version = |l: &str| -> (u32, u32) {
        let (a, b) = l.split_once('.').unwrap_or_default();
        (a.parse().unwrap_or_default(), b.parse().unwrap_or_default())
    };
    match tag.strip_suffix('+') {
        Some(from) => version(line) >= version(from),
        None => tag.split(',').any(|l| l == line),
    }
}

/// What differs between the `actual` entries (those `what`) and the exact set `listed` in `file`:
/// an entry in either and not in the other, each a problem naming the list to change.
pub fn exact_set(file: &str, what: &str, actual: &[String], listed: &[String]) -> Vec<String> {
    let new =
        actual.iter().filter(|a| !listed.contains(a)).map(|a| format!("`{a}` is {what} and not listed in {file}"));
    let gone = listed
        .iter()
        .filter(|l| !actual.contains(l))
        .map(|l| format!("`{l}` is listed in {file} but is no longer {what}: take it out"));
    new.chain(gone).collect()
}

/// What a query gave natively, judged by what it gave on Spark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Outcome {
    Equal,
    NamesDiffer,
    BothFail,
    Refused,
    Different,
}

pub const OUTCOMES: [Outcome; 5] =
    [Outcome::Equal, Outcome::NamesDiffer, Outcome::BothFail, Outcome::Refused, Outcome::Different];

/// Whether a query's rows come in a defined order: its last clause is an ORDER BY.
pub fn ordered(sql: &str) -> bool {
    sql.rsplit(')').next().is_some_and(|tail| tail.to_ascii_uppercase().contains("ORDER BY"))
}

pub fn outcome(
    spark: Result<Vec<RecordBatch>, String>,
    native: Result<Vec<RecordBatch>, String>,
    ordered: bool,
) -> (Outcome, String) {
    let spark = match spark {
        Ok(b) => typed(&b, ordered),
        Err(e) => {
            return match native {
                Err(_) => (Outcome::BothFail, String::new()),
                Ok(b) => (Outcome::Different, format!("native {:?}, Spark fails: {e}", typed(&b, ordered))),
            }
        }
    };
    let native = match native {
        Ok(b) => typed(&b, ordered),
        Err(e) => return (Outcome::Refused, e),
    };
    // A result of no rows has no batches natively but a schema-only batch on Spark.
    let same = if ordered { same_rows } else { same_row_set };
    let same_values =
        same(&spark.1, &native.2, &spark.2) && (native.1 == spark.1 || spark.2.is_empty() && native.1.is_empty());
    match (same_values, native.0 == spark.0) {
        (true, true) => (Outcome::Equal, String::new()),
        (true, false) => (Outcome::NamesDiffer, format!("{:?} vs Spark's {:?}", native.0, spark.0)),
        (false, _) => {
            (Outcome::Different, format!("native {:?} {:?}, Spark {:?} {:?}", native.1, native.2, spark.1, spark.2))
        }
    }
}

/// Prints the share of each outcome of `count` runs, a row of shares and a row of counts per
/// label (a mode), and checks that each label's outcomes add up to `count`.
pub fn print_shares(label: &str, counts: &BTreeMap<&str, BTreeMap<Outcome, usize>>, count: usize) {
    println!("{label:10} {:>7} {:>7} {:>9} {:>8} {:>10}", "equal", "names", "both fail", "refused", "DIFFERENT");
    for (mode, c) in counts {
        let n = |o: Outcome| c.get(&o).copied().unwrap_or(0);
        let share = |o: Outcome| 100.0 * n(o) as f64 / count as f64;
        let shares = OUTCOMES.map(|o| format!("{:.1}%", share(o)));
        let ns = OUTCOMES.map(n);
        println!("{mode:10} {:>7} {:>7} {:>9} {:>8} {:>10}", shares[0], shares[1], shares[2], shares[3], shares[4]);
        println!("{:10} {:>7} {:>7} {:>9} {:>8} {:>10}", "", ns[0], ns[1], ns[2], ns[3], ns[4]);
        assert!(ns.iter().sum::<usize>() <= count, "{mode}: more outcomes than queries");
    }
}
