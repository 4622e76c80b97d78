//! What the differential tests (Spark's function examples, the query corpus) compare: a
//! result's column names, Spark's names of its column types and its rows as text.
#![allow(dead_code)]

use std::path::Path;

use arrow::array::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use thund_native::spark_type_name;

/// Column names, Spark type names and rows (NULL as `NULL`) of a result, the rows sorted unless
/// `ordered`.
pub fn typed(batches: &[RecordBatch], ordered: bool) -> (Vec<String>, Vec<String>, Vec<Vec<String>>) {
    let options = FormatOptions::default().with_null("NULL");
    let (mut names, mut types, mut rows) = (Vec::new(), Vec::new(), Vec::new());
    for b in batches {
        names = b.schema().fields().iter().map(|f| f.name().clone()).collect();
        types = b.schema().fields().iter().map(|f| spark_type_name(f.data_type())).collect();
        // A column Arrow cannot show (a timestamp whose zone is not a zone) shows as its error.
        let formatters: Vec<Result<ArrayFormatter, String>> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &options).map_err(|e| e.to_string()))
            .collect();
        for r in 0..b.num_rows() {
            rows.push(
                formatters
                    .iter()
                    .map(|f| match f {
                        Ok(f) => f.value(r).to_string(),
                        Err(e) => format!("<{e}>"),
                    })
                    .collect(),
            );
        }
    }
    if !ordered {
        rows.sort();
    }
    (names, types, rows)
}

/// Whether two row sets are equal, a DOUBLE or FLOAT column's values to within a relative 1e-12
/// (the last bits of a sum depend on the order it adds in, on Spark as here).
pub fn same_rows(types: &[String], a: &[Vec<String>], b: &[Vec<String>]) -> bool {
    let close = |t: &String, x: &String, y: &String| {
        x == y
            || (t == "DOUBLE" || t == "FLOAT")
                && match (x.parse::<f64>(), y.parse::<f64>()) {
                    (Ok(x), Ok(y)) => (x - y).abs() <= 1e-12 * x.abs().max(y.abs()),
                    _ => false,
                }
    };
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(r, s)| r.len() == s.len() && r.iter().zip(s).zip(types).all(|((x, y), t)| close(t, x, y)))
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
