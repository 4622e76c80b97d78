//! Rendering for people: errors with source snippets, query results.

use std::fmt;
use std::path::Path;

use arrow::record_batch::RecordBatch;
use knut_thund::error::{Diagnostic, ThundError};

use crate::cli::QueryFormat;
use crate::failure::ProjectError;

/// A core error with its located problems quoted from the project's files: each part of it (all
/// of them, when preparing a run found several kinds of problem) in turn.
pub(crate) fn project_error(f: &mut fmt::Formatter<'_>, root: &Path, error: &ThundError) -> fmt::Result {
    for (i, part) in error.parts().into_iter().enumerate() {
        if i > 0 {
            writeln!(f)?;
        }
        let diags = part.diagnostics();
        if diags.is_empty() {
            writeln!(f, "{part}")?;
            continue;
        }
        let head = part.to_string();
        writeln!(f, "{}", head.lines().next().unwrap_or_default().trim_end_matches(':'))?;
        for d in diags {
            write!(f, "{}", snippet(root, d))?;
        }
    }
    Ok(())
}

/// A diagnostic with the line it points at and a caret under the column.
pub(crate) fn snippet(root: &Path, d: &Diagnostic) -> String {
    let mut s = format!("error: {}\n", d.message);
    if let Some(loc) = &d.location {
        s.push_str(&format!("  --> {loc}\n"));
        let line = std::fs::read_to_string(root.join(&loc.file))
            .ok()
            .and_then(|t| t.lines().nth(loc.line.saturating_sub(1) as usize).map(str::to_string));
        if let Some(line) = line {
            let num = loc.line.to_string();
            let pad = " ".repeat(num.len());
            s.push_str(&format!(
                "{pad} |\n{num} | {line}\n{pad} | {}^\n",
                " ".repeat(loc.column.saturating_sub(1) as usize)
            ));
        }
    }
    if let Some(h) = &d.hint {
        s.push_str(&format!("  = hint: {h}\n"));
    }
    s
}

/// Prints a command's error on stderr.
pub(crate) fn report_error(e: &anyhow::Error) {
    if let Some(pe) = e.downcast_ref::<ProjectError>() {
        let text = pe.to_string();
        eprint!("{text}");
        if !text.ends_with('\n') {
            eprintln!();
        }
    } else if let Some(te) = e.downcast_ref::<ThundError>() {
        eprintln!("error: {te}");
    } else {
        eprintln!("error: {}", chain(e));
    }
}

/// An error and its causes, each cause left out when the text before already says it (a
/// DataFusion error's text includes the error it wraps, which is also its cause).
fn chain(e: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in e.chain() {
        let said = cause.to_string();
        if text.contains(&said) {
            continue;
        }
        if !text.is_empty() {
            text.push_str(": ");
        }
        text.push_str(&said);
    }
    text
}

/// Query results as an aligned table, CSV (with a header row) or JSON (an array of objects),
/// values written as Spark shows them: timestamps `2021-01-01 00:05:00.12`, intervals
/// `INTERVAL '1 02:03:04' DAY TO SECOND`, a VARIANT as its JSON text, and in a table or CSV
/// arrays, structs and maps as `show` writes them. Parquet and Arrow keep the types (`typed`).
pub(crate) fn batches(
    schema: &arrow::datatypes::Schema,
    batches: &[RecordBatch],
    format: QueryFormat,
) -> anyhow::Result<String> {
    let shown =
        |json: bool| -> anyhow::Result<Vec<RecordBatch>> { batches.iter().map(|b| as_shown(b, json)).collect() };
    Ok(match format {
        // No rows still show the columns' names (Arrow's table of no batches is `++`).
        QueryFormat::Table if batches.iter().all(|b| b.num_rows() == 0) => {
            let empty = as_shown(&RecordBatch::new_empty(std::sync::Arc::new(schema.clone())), false)?;
            format!("{}\n", arrow::util::pretty::pretty_format_batches(&[empty])?)
        }
        QueryFormat::Table => format!("{}\n", arrow::util::pretty::pretty_format_batches(&shown(false)?)?),
        QueryFormat::Csv => {
            let mut buf = Vec::new();
            {
                let mut w = arrow::csv::WriterBuilder::new().with_header(true).build(&mut buf);
                if batches.iter().all(|b| b.num_rows() == 0) {
                    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                    return Ok(format!("{}\n", names.join(",")));
                }
                for b in shown(false)? {
                    w.write(&b)?;
                }
            }
            String::from_utf8(buf)?
        }
        QueryFormat::Json => {
            let mut buf = Vec::new();
            {
                // Every column in every row, a NULL as `null`: a reader of a result table looks
                // its columns up by name in each row.
                let mut w = arrow::json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow::json::writer::JsonArray>(&mut buf);
                for b in shown(true)? {
                    w.write(&b)?;
                }
                w.finish()?;
            }
            let mut s = String::from_utf8(buf)?;
            if s.is_empty() {
                s.push_str("[]");
            }
            s.push('\n');
            s
        }
        QueryFormat::Parquet | QueryFormat::Arrow => anyhow::bail!("{format:?} output is written to a file"),
    })
}

/// Writes the result with its types to `path`: Parquet, or an Arrow IPC file.
pub(crate) fn typed(
    schema: &arrow::datatypes::Schema,
    batches: &[RecordBatch],
    format: QueryFormat,
    path: &Path,
) -> anyhow::Result<()> {
    let file = std::fs::File::create(path).map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    let schema = std::sync::Arc::new(schema.clone());
    match format {
        QueryFormat::Parquet => {
            let mut w = thund_native::parquet::arrow::ArrowWriter::try_new(file, schema, None)?;
            for b in batches {
                w.write(b)?;
            }
            w.close()?;
        }
        QueryFormat::Arrow => {
            let mut w = arrow::ipc::writer::FileWriter::try_new(file, &schema)?;
            for b in batches {
                w.write(b)?;
            }
            w.finish()?;
        }
        other => anyhow::bail!("{other:?} output is text, written to the terminal"),
    }
    Ok(())
}

/// The result's columns with Spark's names of their types, one `name: type` a line.
pub(crate) fn schema_lines(schema: &arrow::datatypes::Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| {
            let null = if f.is_nullable() { "" } else { " NOT NULL" };
            // An interval's fields are not kept: its widest form, as values are shown.
            let name = match f.data_type() {
                arrow::datatypes::DataType::Duration(_) => "interval day to second".to_string(),
                arrow::datatypes::DataType::Interval(arrow::datatypes::IntervalUnit::YearMonth) => {
                    "interval year to month".to_string()
                }
                t => thund_native::spark_simple_string(t),
            };
            format!("{}: {name}{null}\n", f.name())
        })
        .collect()
}

/// `b` with each column whose text Spark writes otherwise than Arrow as that text: VARIANTs,
/// timestamps and intervals; for a table or CSV (`json` false) also arrays, structs and maps,
/// and for JSON maps whose keys are not strings (JSON's are).
fn as_shown(b: &RecordBatch, json: bool) -> anyhow::Result<RecordBatch> {
    use arrow::array::{ArrayRef, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    let text = |t: &DataType| {
        thund_native::is_variant(t)
            || matches!(t, DataType::Timestamp(..) | DataType::Duration(_) | DataType::Interval(_))
            || (!json
                && matches!(t, DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_) | DataType::Map(..)))
            || (json
                && matches!(t, DataType::Map(f, _) if !matches!(map_key(f), Some(DataType::Utf8 | DataType::LargeUtf8))))
    };
    if !b.schema().fields().iter().any(|f| text(f.data_type())) {
        return Ok(b.clone());
    }
    let mut fields = Vec::new();
    let mut columns: Vec<ArrayRef> = Vec::new();
    for (f, c) in b.schema().fields().iter().zip(b.columns()) {
        if !text(f.data_type()) {
            fields.push(f.as_ref().clone());
            columns.push(c.clone());
            continue;
        }
        let column: ArrayRef = if thund_native::is_variant(f.data_type()) {
            thund_native::variant_json(c)?
        } else if let (true, DataType::Map(entries, sorted)) = (json, f.data_type()) {
            // JSON's keys are strings: the map with its keys' text as keys.
            let DataType::Struct(kv) = entries.data_type() else { anyhow::bail!("a map without entries") };
            let key = Field::new(kv[0].name(), DataType::Utf8, false);
            let string_keyed = DataType::Map(
                std::sync::Arc::new(Field::new(
                    entries.name(),
                    DataType::Struct(vec![key, kv[1].as_ref().clone()].into()),
                    false,
                )),
                *sorted,
            );
            let cast = arrow::compute::cast(c, &string_keyed)?;
            fields.push(Field::new(f.name(), string_keyed, true));
            columns.push(cast);
            continue;
        } else {
            // NULL: an empty field in CSV, `NULL` in a table, `null` in JSON.
            let shown: StringArray =
                (0..c.len()).map(|row| (!c.is_null(row)).then(|| show_value(c.as_ref(), row))).collect();
            std::sync::Arc::new(shown)
        };
        fields.push(Field::new(f.name(), DataType::Utf8, true));
        columns.push(column);
    }
    Ok(RecordBatch::try_new(std::sync::Arc::new(Schema::new(fields)), columns)?)
}

fn map_key(entries: &arrow::datatypes::FieldRef) -> Option<&arrow::datatypes::DataType> {
    match entries.data_type() {
        arrow::datatypes::DataType::Struct(fs) => fs.first().map(|k| k.data_type()),
        _ => None,
    }
}

/// An expectation's pass rate to one decimal, which never rounds a failed row away: 3,045 of
/// 3,046 is `>99.9%`, not `100.0%` (and 1 of 3,046 `<0.1%`, not `0.0%`).
pub(crate) fn pass_rate(passed: u64, failed: u64) -> String {
    if failed == 0 {
        return "100.0%".into();
    }
    let rate = 100.0 * passed as f64 / (passed + failed) as f64;
    match rate {
        _ if passed == 0 => "0.0%".into(),
        r if r >= 99.95 => ">99.9%".into(),
        r if r < 0.05 => "<0.1%".into(),
        r => format!("{r:.1}%"),
    }
}

/// One value as Spark's `show` writes it: NULL inside a nested value, lists in brackets, a
/// struct's values (not its names) and a map's `key -> value` pairs in braces.
fn show_value(array: &dyn arrow::array::Array, row: usize) -> String {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::DataType;
    // `logical_nulls`: a column of the NULL type has no null buffer, yet every value is NULL.
    if array.logical_nulls().is_some_and(|n| n.is_null(row)) {
        return "NULL".into();
    }
    let join = |values: &dyn Array, rows: std::ops::Range<usize>| -> Vec<String> {
        rows.map(|i| show_value(values, i)).collect()
    };
    match array.data_type() {
        DataType::List(_) => {
            let l = array.as_list::<i32>();
            let o = l.value_offsets();
            format!("[{}]", join(l.values().as_ref(), o[row] as usize..o[row + 1] as usize).join(", "))
        }
        DataType::LargeList(_) => {
            let l = array.as_list::<i64>();
            let o = l.value_offsets();
            format!("[{}]", join(l.values().as_ref(), o[row] as usize..o[row + 1] as usize).join(", "))
        }
        DataType::Struct(_) => {
            let s = array.as_struct();
            let values: Vec<String> = s.columns().iter().map(|c| show_value(c.as_ref(), row)).collect();
            format!("{{{}}}", values.join(", "))
        }
        DataType::Map(..) => {
            let m = array.as_map();
            let o = m.value_offsets();
            let pairs: Vec<String> = (o[row] as usize..o[row + 1] as usize)
                .map(|i| format!("{} -> {}", show_value(m.keys().as_ref(), i), show_value(m.values().as_ref(), i)))
                .collect();
            format!("{{{}}}", pairs.join(", "))
        }
        DataType::Timestamp(..) => {
            // Spark's: fractional seconds without their trailing zeros, none when whole.
            let options = arrow::util::display::FormatOptions::default()
                .with_timestamp_format(Some("%Y-%m-%d %H:%M:%S%.6f"))
                .with_timestamp_tz_format(Some("%Y-%m-%d %H:%M:%S%.6f"));
            let text = arrow::util::display::ArrayFormatter::try_new(array, &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_else(|e| e.to_string());
            text.trim_end_matches('0').trim_end_matches('.').to_string()
        }
        DataType::Duration(unit) => {
            use arrow::datatypes::{
                DurationMicrosecondType, DurationMillisecondType, DurationNanosecondType, DurationSecondType, TimeUnit,
            };
            let micros: i128 = match unit {
                TimeUnit::Second => i128::from(array.as_primitive::<DurationSecondType>().value(row)) * 1_000_000,
                TimeUnit::Millisecond => i128::from(array.as_primitive::<DurationMillisecondType>().value(row)) * 1_000,
                TimeUnit::Microsecond => i128::from(array.as_primitive::<DurationMicrosecondType>().value(row)),
                TimeUnit::Nanosecond => i128::from(array.as_primitive::<DurationNanosecondType>().value(row)) / 1_000,
            };
            day_to_second(micros)
        }
        DataType::Interval(arrow::datatypes::IntervalUnit::YearMonth) => {
            let months = array.as_primitive::<arrow::datatypes::IntervalYearMonthType>().value(row);
            let sign = if months < 0 { "-" } else { "" };
            let m = months.unsigned_abs();
            format!("INTERVAL '{sign}{}-{}' YEAR TO MONTH", m / 12, m % 12)
        }
        _ => {
            let options = arrow::util::display::FormatOptions::default();
            arrow::util::display::ArrayFormatter::try_new(array, &options)
                .map(|f| f.value(row).to_string())
                .unwrap_or_else(|e| e.to_string())
        }
    }
}

/// A day-time interval of `micros` as Spark writes its widest form (its fields, `HOUR` or
/// `DAY TO MINUTE`, are not kept here): `INTERVAL '-1 02:03:04.5' DAY TO SECOND`.
fn day_to_second(micros: i128) -> String {
    let sign = if micros < 0 { "-" } else { "" };
    let m = micros.unsigned_abs();
    let (days, rest) = (m / 86_400_000_000, m % 86_400_000_000);
    let (hours, rest) = (rest / 3_600_000_000, rest % 3_600_000_000);
    let (minutes, rest) = (rest / 60_000_000, rest % 60_000_000);
    let (seconds, fraction) = (rest / 1_000_000, rest % 1_000_000);
    let fraction =
        if fraction == 0 { String::new() } else { format!(".{fraction:06}").trim_end_matches('0').to_string() };
    format!("INTERVAL '{sign}{days} {hours:02}:{minutes:02}:{seconds:02}{fraction}' DAY TO SECOND")
}

#[cfg(test)]
mod tests {
    #[derive(Debug)]
    struct Wrapping(std::io::Error);

    impl std::fmt::Display for Wrapping {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Execution error: {}", self.0)
        }
    }

    impl std::error::Error for Wrapping {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn a_cause_the_error_already_says_is_said_once() {
        let e = anyhow::Error::new(Wrapping(std::io::Error::other("division by zero"))).context("query");
        assert_eq!(super::chain(&e), "query: Execution error: division by zero");
    }
}
