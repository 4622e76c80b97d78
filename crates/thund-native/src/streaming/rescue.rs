//! Rescued data: JSON streams that keep going when a record does not fit.
//!
//! By default a malformed JSON record fails its batch with a clear error and nothing is
//! committed. With `read_files(…, rescuedDataColumn => '_rescued_data')` the batch goes through
//! and whatever did not fit lands in that extra string column instead, as a JSON object:
//!
//! - a line that is not a JSON object: `{"_corrupt_record": "<the line>", "_file_path": …}`, every
//!   other column NULL;
//! - a field whose value does not fit its column's type (a string in a number column): the field
//!   goes into the object and its column is NULL (a number in a string column is kept as its
//!   text, as Spark keeps values of fields whose inferred types conflicted);
//! - a field the stream's schema does not have (schema fixed on the first batch): it goes into
//!   the object too, so later files may add fields without failing the stream.
//!
//! A string column takes any value as its text, as Spark's JSON reader does: a number as written
//! (`2.50`), a nested object or array as its compact JSON. That is also how DLT's `cloud_files`
//! reads JSON by default, every column a string (`sources::Inference`); its schema hints may type
//! a column as a date, timestamp or decimal, which the reader parses from the text (a value it
//! cannot parse fails the batch).
//!
//! Rows that fit completely have `NULL` there. The schema is inferred from the records that are
//! JSON objects. This path parses each line on its own, so it is slower than the default reader;
//! it is only taken when the option is set.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch, StringArray};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::json::reader::infer_json_schema_from_iterator;
use arrow::json::ReaderBuilder;
use datafusion::datasource::MemTable;
use serde_json::{Map, Value};

use crate::error::{NativeError, Result};

/// One parsed line: the part that fits the schema, and what was rescued (if anything).
struct Parsed {
    clean: Map<String, Value>,
    rescued: Option<String>,
}

fn fits(v: &Value, t: &DataType) -> bool {
    match (v, t) {
        (Value::Null, _) => true,
        (Value::Bool(_), DataType::Boolean) => true,
        (Value::Number(n), DataType::Int64 | DataType::Int32 | DataType::Int16 | DataType::Int8) => n.is_i64(),
        (Value::Number(_), DataType::Float64 | DataType::Float32 | DataType::Decimal128(..)) => true,
        (Value::String(_), DataType::Utf8 | DataType::Utf8View) => true,
        // A schema hint's type read from text: the reader parses it, and a value it cannot parse
        // fails the batch rather than turning into NULL.
        (Value::String(_), DataType::Date32 | DataType::Timestamp(..) | DataType::Decimal128(..)) => true,
        (Value::Array(_), DataType::List(_) | DataType::LargeList(_)) => true,
        (Value::Object(_), DataType::Struct(_)) => true,
        _ => false,
    }
}

fn parse_line(line: &str, schema: &Schema, file: &str) -> Parsed {
    let Ok(Value::Object(record)) = serde_json::from_str::<Value>(line) else {
        let mut rescued = Map::new();
        rescued.insert("_corrupt_record".into(), Value::String(line.to_string()));
        rescued.insert("_file_path".into(), Value::String(file.to_string()));
        return Parsed { clean: Map::new(), rescued: Some(Value::Object(rescued).to_string()) };
    };
    let mut clean = Map::new();
    let mut rescued = Map::new();
    // The fields' text as written, read only if a number or nested value goes to a string.
    let mut raw: Option<std::collections::HashMap<String, Box<serde_json::value::RawValue>>> = None;
    for (k, v) in record {
        match schema.field_with_name(&k) {
            // A string column takes any value as its text (a nested one as its JSON), as
            // Spark's JSON reader does for a string field and Auto Loader for columns it
            // infers as strings.
            Ok(f) if matches!(f.data_type(), DataType::Utf8 | DataType::Utf8View) && !v.is_string() && !v.is_null() => {
                let raw = raw.get_or_insert_with(|| serde_json::from_str(line).unwrap_or_default());
                let text = raw.get(&k).map_or_else(|| v.to_string(), |r| compact(r.get()));
                clean.insert(k, Value::String(text));
            }
            Ok(f) if fits(&v, f.data_type()) => {
                clean.insert(k, v);
            }
            _ => {
                rescued.insert(k, v);
            }
        }
    }
    // The fields rescued, then the file they came from, last (as Auto Loader writes them).
    let rescued = (!rescued.is_empty()).then(|| {
        let mut text = Value::Object(rescued).to_string();
        text.pop();
        format!("{text},\"_file_path\":{}}}", Value::String(file.to_string()))
    });
    Parsed { clean, rescued }
}

/// JSON text without the whitespace between tokens, keys in their order and numbers as
/// written (`2.50` stays `2.50`): how Spark's reader turns a value into a string column's text.
fn compact(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if !c.is_whitespace() {
            out.push(c);
        }
    }
    out
}

/// `schema` plus the rescued-data column `column` (a nullable string), as the stream reads it.
pub(crate) fn with_rescue_column(schema: &Schema, column: &str) -> SchemaRef {
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(column, DataType::Utf8, true));
    Arc::new(Schema::new(fields))
}

/// The new JSON files' rows with the rescued-data column `column`. `schema` is the stream's
/// schema if fixed by an earlier batch; returns the provider and the (possibly new) schema.
pub(crate) fn json_with_rescue(
    dir: &Path,
    files: &[String],
    schema: Option<SchemaRef>,
    column: &str,
    inference: &crate::streaming::sources::Inference,
    multiline: bool,
) -> Result<(Arc<MemTable>, SchemaRef)> {
    // Each file's records as Spark's reader finds them (an array's objects, a multi-line value).
    let mut texts = Vec::with_capacity(files.len());
    for f in files {
        let path = dir.join(f);
        let text = std::fs::read_to_string(&path).map_err(|e| NativeError::io(&path, e))?;
        texts.push((path.to_string_lossy().into_owned(), crate::engine::json::records(&text, multiline, &path)?));
    }
    let schema = match schema {
        Some(s) => s,
        None => {
            let objects = texts
                .iter()
                .flat_map(|(_, records)| records)
                .filter_map(|l| serde_json::from_str::<Value>(l).ok().filter(Value::is_object))
                .map(Ok);
            let inferred = infer_json_schema_from_iterator(objects)?;
            // Spark infers JSON fields sorted by name.
            let mut fields: Vec<_> = inferred.fields().iter().filter(|f| f.name() != column).cloned().collect();
            fields.sort_by(|a, b| a.name().cmp(b.name()));
            Arc::new(inference.apply(Schema::new(fields)))
        }
    };
    let mut decoder = ReaderBuilder::new(Arc::clone(&schema)).with_batch_size(8192).build_decoder()?;
    let mut batches = Vec::new();
    let mut rescued: Vec<Option<String>> = Vec::new();
    let out_schema = with_rescue_column(&schema, column);
    let mut flush = |decoder: &mut arrow::json::reader::Decoder, rescued: &mut Vec<Option<String>>| -> Result<()> {
        if let Some(batch) = decoder.flush()? {
            let mut columns: Vec<ArrayRef> = batch.columns().to_vec();
            columns.push(Arc::new(StringArray::from(std::mem::take(rescued))));
            batches.push(RecordBatch::try_new(Arc::clone(&out_schema), columns)?);
        }
        Ok(())
    };
    for (file, records) in &texts {
        for line in records {
            let parsed = parse_line(line, &schema, file);
            decoder.serialize(&[parsed.clean])?;
            rescued.push(parsed.rescued);
            if rescued.len() == 8192 {
                flush(&mut decoder, &mut rescued)?;
            }
        }
    }
    flush(&mut decoder, &mut rescued)?;
    let provider = MemTable::try_new(Arc::clone(&out_schema), vec![batches])?;
    Ok((Arc::new(provider), schema))
}
