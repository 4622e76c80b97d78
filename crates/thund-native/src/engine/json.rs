//! JSON files as Spark's reader finds records in them, where that is not one object per line.
//!
//! DataFusion reads newline-delimited JSON: one object per line. Spark's reader also takes a
//! line holding an array (each object in it is a row: `[{"a": 1}, {"a": 2}]` is two rows) and,
//! with `multiLine => true`, a file holding one JSON value over many lines (an object is a row,
//! an array one row per object; anything after the first value is not read, as Spark does).
//! Files that need this are read here, with the same arrow-json inference and decoding
//! DataFusion uses, so their columns and types are the ones the fast path would give; every
//! other JSON source stays on DataFusion's reader.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::datatypes::{Schema, SchemaRef};
use arrow::json::reader::infer_json_schema_from_iterator;
use arrow::json::ReaderBuilder;
use datafusion::datasource::MemTable;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::error::{NativeError, Result};

/// Whether a JSON source's `options` ask for a file to be one value (`multiLine`).
pub(crate) fn multiline(options: &std::collections::BTreeMap<String, String>) -> bool {
    options.iter().any(|(k, v)| k.eq_ignore_ascii_case("multiline") && v.eq_ignore_ascii_case("true"))
}

/// Whether `files` need Spark's reading: `multiline`, or a file whose first line holds an array.
pub(crate) fn needs_records(files: &[PathBuf], multiline: bool) -> Result<bool> {
    if multiline {
        return Ok(true);
    }
    use std::io::Read;
    for f in files {
        // Only up to the first byte that is not blank: a large file is not read here.
        let file = std::fs::File::open(f).map_err(|e| NativeError::io(f, e))?;
        let first = std::io::BufReader::new(file).bytes().find(|b| !matches!(b, Ok(b) if b.is_ascii_whitespace()));
        match first {
            Some(Ok(b'[')) => return Ok(true),
            Some(Err(e)) => return Err(NativeError::io(f, e)),
            _ => {}
        }
    }
    Ok(false)
}

/// The records of one file's `text`, each the text of one JSON object as written. A line that
/// is not an object or an array of them is kept as it is, for the caller to refuse or rescue.
pub(crate) fn records(text: &str, multiline: bool, file: &Path) -> Result<Vec<String>> {
    let elements = |raw: &str| -> Option<Vec<String>> {
        let items: Vec<Box<RawValue>> = serde_json::from_str(raw).ok()?;
        Some(items.into_iter().map(|r| r.get().to_string()).collect())
    };
    if multiline {
        // The first JSON value of the file: what Spark's multi-line reader reads.
        let mut values = serde_json::Deserializer::from_str(text).into_iter::<Box<RawValue>>();
        let first = match values.next() {
            None => return Ok(Vec::new()),
            Some(v) => v.map_err(|e| NativeError::Execution(format!("{}: not JSON: {e}", file.display())))?,
        };
        let raw = first.get();
        return Ok(if raw.starts_with('[') { elements(raw).unwrap_or_default() } else { vec![raw.to_string()] });
    }
    let mut out = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        match line.starts_with('[').then(|| elements(line)).flatten() {
            Some(items) => out.extend(items),
            None => out.push(line.to_string()),
        }
    }
    Ok(out)
}

/// The records of `files` and the schema they are read with: `schema` if given, else inferred
/// from them with Spark's order of fields (sorted by name).
pub(crate) fn read(files: &[PathBuf], multiline: bool, schema: Option<SchemaRef>) -> Result<(Vec<String>, SchemaRef)> {
    let mut all = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(f).map_err(|e| NativeError::io(f, e))?;
        all.extend(records(&text, multiline, f)?);
    }
    let schema = match schema {
        Some(s) => s,
        None => {
            let hint = if multiline {
                ""
            } else {
                " (a file holding one value over many lines is read with `multiLine => 'true'`)"
            };
            let values = all.iter().map(|r| {
                serde_json::from_str::<Value>(r)
                    .ok()
                    .filter(Value::is_object)
                    .ok_or_else(|| arrow::error::ArrowError::JsonError(format!("`{r}` is not a JSON record{hint}")))
            });
            let inferred = infer_json_schema_from_iterator(values)?;
            let mut fields: Vec<_> = inferred.fields().iter().cloned().collect();
            fields.sort_by(|a, b| a.name().cmp(b.name()));
            Arc::new(Schema::new(fields))
        }
    };
    Ok((all, schema))
}

/// A table of the records `read` gave, decoded with `schema`.
pub(crate) fn table(records: &[String], schema: SchemaRef) -> Result<MemTable> {
    let mut text = String::with_capacity(records.iter().map(|r| r.len() + 1).sum());
    for r in records {
        text.push_str(r);
        text.push('\n');
    }
    let reader = ReaderBuilder::new(Arc::clone(&schema)).with_batch_size(8192).build(std::io::Cursor::new(text))?;
    let batches = reader.collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(MemTable::try_new(schema, vec![batches])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_found_as_sparks_reader_finds_them() {
        let f = Path::new("f.json");
        let lines = "[{\"a\": 1, \"b\": \"x\"}, {\"a\": 2}]\n{\"a\": 3}\n\n";
        assert_eq!(records(lines, false, f).unwrap(), ["{\"a\": 1, \"b\": \"x\"}", "{\"a\": 2}", "{\"a\": 3}"]);
        // Multi-line: the first value only, as Spark reads it.
        assert_eq!(records(lines, true, f).unwrap(), ["{\"a\": 1, \"b\": \"x\"}", "{\"a\": 2}"]);
        let pretty = "[\n  {\"a\": 1},\n  {\"a\": 2.50}\n]\n";
        assert_eq!(records(pretty, true, f).unwrap(), ["{\"a\": 1}", "{\"a\": 2.50}"]);
        assert_eq!(records("{\n \"a\": 1\n}\n", true, f).unwrap(), ["{\n \"a\": 1\n}"]);
        // Without multiLine, a pretty-printed array's lines are not records: kept for the caller.
        assert_eq!(records(pretty, false, f).unwrap()[0], "[");
    }
}
