//! Values written as text the way Spark's JSON and CSV writers write them (`to_json`, `to_csv`),
//! and the options both take (`timestampFormat`, `dateFormat`, …).
//!
//! Spark's JSON writer (Jackson underneath) writes numbers as Java prints them (`1.0E20`,
//! `0E-8` for a DECIMAL zero of scale 8, `"NaN"` quoted), dates and timestamps with the
//! options' patterns (by default `yyyy-MM-dd` and `yyyy-MM-dd'T'HH:mm:ss.SSSXXX`), binary as
//! base64, strings with Jackson's escapes, and leaves a struct's NULL fields out unless
//! `ignoreNullFields` is false. A map's keys are written as Spark's internal values print: a
//! date as its day number, a timestamp as its microseconds, a struct as `[a,b]`. Every value is
//! written by walking the Arrow arrays themselves; a type Spark writes in a way not kept here
//! (intervals, keys of binary or wide decimals) is refused when the call is planned.

use std::fmt::Write as _;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimeUnit, TimestampMicrosecondType,
};
use base64::Engine;
use chrono::DateTime;

use crate::functions::datetime::patterns::{compile, format, Compiled};

/// The patterns and choices of a writer.
pub(crate) struct TextOptions {
    date: Compiled,
    timestamp: Compiled,
    timestamp_ntz: Compiled,
    /// JSON: whether a struct's NULL fields are left out.
    pub ignore_null_fields: bool,
    /// CSV: the field separator.
    pub separator: char,
}

impl TextOptions {
    /// The options of `function` from its `key, value` pairs; an option not kept here is an
    /// error naming it. `csv`: the CSV writer's and reader's options are allowed, else JSON's.
    pub(crate) fn new(function: &str, pairs: &[(String, String)], csv: bool) -> Result<Self, String> {
        let mut date = "yyyy-MM-dd".to_string();
        let mut timestamp = "yyyy-MM-dd'T'HH:mm:ss.SSSXXX".to_string();
        let mut timestamp_ntz = "yyyy-MM-dd'T'HH:mm:ss.SSS".to_string();
        let (mut ignore_null_fields, mut separator) = (true, ',');
        for (key, value) in pairs {
            match (key.to_ascii_lowercase().as_str(), csv) {
                ("dateformat", _) => date.clone_from(value),
                ("timestampformat", _) => timestamp.clone_from(value),
                ("timestampntzformat", _) => timestamp_ntz.clone_from(value),
                ("ignorenullfields", false) => {
                    ignore_null_fields = !value.eq_ignore_ascii_case("false");
                }
                ("sep" | "delimiter", true) => {
                    let mut chars = value.chars();
                    separator = match (chars.next(), chars.next()) {
                        (Some(c), None) => c,
                        _ => return Err(format!("{function}'s separator must be one character, not `{value}`")),
                    };
                }
                _ => return Err(format!("{function}'s option `{key}` runs on the Spark backend")),
            }
        }
        let compiled = |p: &str| compile(p).map_err(|e| format!("{function}: {e}"));
        Ok(TextOptions {
            date: compiled(&date)?,
            timestamp: compiled(&timestamp)?,
            timestamp_ntz: compiled(&timestamp_ntz)?,
            ignore_null_fields,
            separator,
        })
    }

    /// A date or timestamp at row `i` of `a` as its pattern writes it; `None` for another type.
    pub(crate) fn datetime(&self, a: &dyn Array, i: usize) -> Option<String> {
        match a.data_type() {
            DataType::Date32 => {
                let days = a.as_primitive::<Date32Type>().value(i);
                let at = DateTime::from_timestamp(i64::from(days) * 86_400, 0)?.naive_utc();
                Some(format(at, &self.date))
            }
            DataType::Timestamp(TimeUnit::Microsecond, zone) => {
                let micros = a.as_primitive::<TimestampMicrosecondType>().value(i);
                let at = DateTime::from_timestamp_micros(micros)?.naive_utc();
                Some(format(at, if zone.is_some() { &self.timestamp } else { &self.timestamp_ntz }))
            }
            _ => None,
        }
    }
}

/// The scalars of a call's arguments (`None` for a column).
pub(crate) fn scalar_arguments(
    args: &[datafusion::logical_expr::ColumnarValue],
) -> Vec<Option<&datafusion::common::ScalarValue>> {
    use datafusion::logical_expr::ColumnarValue;
    args.iter()
        .map(|a| match a {
            ColumnarValue::Scalar(s) => Some(s),
            ColumnarValue::Array(_) => None,
        })
        .collect()
}

/// Option pairs from a call's trailing string arguments (`'k1', 'v1', 'k2', 'v2'`).
pub(crate) fn option_pairs(
    function: &str,
    scalars: &[Option<&datafusion::common::ScalarValue>],
) -> Result<Vec<(String, String)>, String> {
    use datafusion::common::ScalarValue;
    let text = |s: Option<&ScalarValue>| match s {
        Some(ScalarValue::Utf8(Some(t)) | ScalarValue::Utf8View(Some(t)) | ScalarValue::LargeUtf8(Some(t))) => {
            Ok(t.clone())
        }
        _ => {
            Err(format!("{function}'s options must be a map of literal strings, as `map('dateFormat', 'dd/MM/yyyy')`"))
        }
    };
    if !scalars.len().is_multiple_of(2) {
        return Err(format!("{function}'s options must be a map of literal strings"));
    }
    scalars.chunks(2).map(|kv| Ok((text(kv[0])?, text(kv[1])?))).collect()
}

/// Why Spark's JSON writer's text for `t` is not written here, if it is not.
pub(crate) fn json_refusal(t: &DataType) -> Option<String> {
    match t {
        DataType::Null | DataType::Boolean | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => None,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => None,
        DataType::Float32 | DataType::Float64 | DataType::Decimal128(..) | DataType::Date32 => None,
        DataType::Timestamp(TimeUnit::Microsecond, _) => None,
        t if t.is_integer() => None,
        DataType::List(f) | DataType::LargeList(f) => json_refusal(f.data_type()),
        DataType::Struct(fields) => fields.iter().find_map(|f| json_refusal(f.data_type())),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => key_refusal(kv[0].data_type()).or_else(|| json_refusal(kv[1].data_type())),
            _ => Some("a map without entries".into()),
        },
        other => Some(format!("values of type {} are written otherwise here", crate::types::spark_type_name(other))),
    }
}

/// Why a map key of type `t` is not written as Spark writes it, if it is not.
fn key_refusal(t: &DataType) -> Option<String> {
    match t {
        DataType::Boolean | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => None,
        DataType::Float32 | DataType::Float64 | DataType::Date32 => None,
        DataType::Timestamp(TimeUnit::Microsecond, _) => None,
        // Spark prints a compact DECIMAL key in full, a wider one as Java's BigDecimal does.
        DataType::Decimal128(p, _) if *p <= 18 => None,
        t if t.is_integer() => None,
        DataType::Struct(fields) => fields.iter().find_map(|f| key_refusal(f.data_type())),
        DataType::List(f) => key_refusal(f.data_type()),
        other => Some(format!("map keys of type {} are written otherwise here", crate::types::spark_type_name(other))),
    }
}

/// Each row of `values` as Spark's `to_json` writes it (NULL for a NULL row).
pub(crate) fn json_texts(values: &ArrayRef, opts: &TextOptions) -> arrow::array::StringArray {
    let mut out = String::new();
    (0..values.len())
        .map(|i| {
            (!null_at(values.as_ref(), i)).then(|| {
                out.clear();
                write_json(values.as_ref(), i, opts, &mut out);
                out.clone()
            })
        })
        .collect()
}

/// Writes row `i` of `a` (not NULL) as JSON.
fn write_json(a: &dyn Array, i: usize, opts: &TextOptions, out: &mut String) {
    match a.data_type() {
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Binary | DataType::Date32 => {
            json_string(&scalar_text(a, i, opts).unwrap_or_default(), out)
        }
        DataType::Timestamp(..) | DataType::LargeBinary | DataType::BinaryView => {
            json_string(&scalar_text(a, i, opts).unwrap_or_default(), out)
        }
        DataType::Float32 | DataType::Float64 => {
            let text = scalar_text(a, i, opts).unwrap_or_default();
            // Jackson quotes what is not a JSON number.
            if text.ends_with("NaN") || text.ends_with("Infinity") {
                json_string(&text, out);
            } else {
                out.push_str(&text);
            }
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let items = list_values(a, i);
            out.push('[');
            for k in 0..items.len() {
                if k > 0 {
                    out.push(',');
                }
                if null_at(items.as_ref(), k) {
                    out.push_str("null");
                } else {
                    write_json(items.as_ref(), k, opts, out);
                }
            }
            out.push(']');
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            out.push('{');
            let mut first = true;
            for (f, column) in fields.iter().zip(s.columns()) {
                if null_at(column.as_ref(), i) && opts.ignore_null_fields {
                    continue;
                }
                if !first {
                    out.push(',');
                }
                first = false;
                json_string(f.name(), out);
                out.push(':');
                if null_at(column.as_ref(), i) {
                    out.push_str("null");
                } else {
                    write_json(column.as_ref(), i, opts, out);
                }
            }
            out.push('}');
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let entries = m.value(i);
            let (keys, values) = (entries.column(0), entries.column(1));
            out.push('{');
            for k in 0..entries.len() {
                if k > 0 {
                    out.push(',');
                }
                json_string(&key_text(keys.as_ref(), k), out);
                out.push(':');
                if null_at(values.as_ref(), k) {
                    out.push_str("null");
                } else {
                    write_json(values.as_ref(), k, opts, out);
                }
            }
            out.push('}');
        }
        _ => out.push_str(&scalar_text(a, i, opts).unwrap_or_default()),
    }
}

/// Whether row `i` of `a` is NULL (every row of a NULL-typed array is, though it has no
/// validity buffer).
fn null_at(a: &dyn Array, i: usize) -> bool {
    a.data_type() == &DataType::Null || a.is_null(i)
}

/// The elements of list row `i`.
fn list_values(a: &dyn Array, i: usize) -> ArrayRef {
    match a.data_type() {
        DataType::LargeList(_) => a.as_list::<i64>().value(i),
        _ => a.as_list::<i32>().value(i),
    }
}

/// A scalar (not NULL) as Spark's writers print it: numbers as Java does, dates and timestamps
/// with the options' patterns, binary as base64. `None` for a nested type.
pub(crate) fn scalar_text(a: &dyn Array, i: usize, opts: &TextOptions) -> Option<String> {
    Some(match a.data_type() {
        DataType::Boolean => a.as_boolean().value(i).to_string(),
        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).to_string(),
        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).to_string(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Float32 => crate::functions::variant::java_float(a.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => crate::functions::variant::java_double(a.as_primitive::<Float64Type>().value(i)),
        DataType::Decimal128(_, scale) => java_decimal(a.as_primitive::<Decimal128Type>().value(i), *scale),
        DataType::Utf8 => a.as_string::<i32>().value(i).to_string(),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i).to_string(),
        DataType::Utf8View => a.as_string_view().value(i).to_string(),
        DataType::Binary => base64::engine::general_purpose::STANDARD.encode(a.as_binary::<i32>().value(i)),
        DataType::LargeBinary => base64::engine::general_purpose::STANDARD.encode(a.as_binary::<i64>().value(i)),
        DataType::BinaryView => base64::engine::general_purpose::STANDARD.encode(a.as_binary_view().value(i)),
        DataType::Date32 | DataType::Timestamp(..) => opts.datetime(a, i)?,
        _ => return None,
    })
}

/// A map key as Spark prints its internal value: a date as its day number, a timestamp as its
/// microseconds, a decimal in full, a struct or an array as `[a,b]`.
fn key_text(a: &dyn Array, i: usize) -> String {
    if null_at(a, i) {
        return "null".into();
    }
    match a.data_type() {
        DataType::Date32 => a.as_primitive::<Date32Type>().value(i).to_string(),
        DataType::Timestamp(..) => a.as_primitive::<TimestampMicrosecondType>().value(i).to_string(),
        DataType::Decimal128(_, scale) => plain_decimal(a.as_primitive::<Decimal128Type>().value(i), *scale),
        DataType::Struct(_) => {
            let s = a.as_struct();
            let parts: Vec<String> = s.columns().iter().map(|c| key_text(c.as_ref(), i)).collect();
            format!("[{}]", parts.join(","))
        }
        DataType::List(_) => {
            let items = a.as_list::<i32>().value(i);
            let parts: Vec<String> = (0..items.len()).map(|k| key_text(items.as_ref(), k)).collect();
            format!("[{}]", parts.join(","))
        }
        DataType::Float32 => crate::functions::variant::java_float(a.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => crate::functions::variant::java_double(a.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => a.as_boolean().value(i).to_string(),
        DataType::Int8 => a.as_primitive::<Int8Type>().value(i).to_string(),
        DataType::Int16 => a.as_primitive::<Int16Type>().value(i).to_string(),
        DataType::Int32 => a.as_primitive::<Int32Type>().value(i).to_string(),
        DataType::Int64 => a.as_primitive::<Int64Type>().value(i).to_string(),
        DataType::Utf8 => a.as_string::<i32>().value(i).to_string(),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i).to_string(),
        DataType::Utf8View => a.as_string_view().value(i).to_string(),
        _ => String::new(), // refused when planned (`key_refusal`)
    }
}

/// A decimal's digits with its point, never in exponent form.
fn plain_decimal(unscaled: i128, scale: i8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let scale = scale.max(0) as usize;
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

/// Java's `BigDecimal.toString`: plain, unless the exponent is below -6 (`1.0E-7`, `0E-8`).
pub(crate) fn java_decimal(unscaled: i128, scale: i8) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let adjusted = digits.len() as i64 - 1 - i64::from(scale);
    if scale >= 0 && adjusted >= -6 {
        return plain_decimal(unscaled, scale);
    }
    let sign = if unscaled < 0 { "-" } else { "" };
    let mantissa = if digits.len() > 1 { format!("{}.{}", &digits[..1], &digits[1..]) } else { digits };
    let exponent = if adjusted >= 0 { format!("+{adjusted}") } else { adjusted.to_string() };
    format!("{sign}{mantissa}E{exponent}")
}

/// `s` as a JSON string, escaped as Jackson escapes it: quotes, backslashes and control
/// characters (`\n`, `\t`, …, others as `\u00XX`). VARIANT's JSON text uses it too.
pub(crate) fn json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_print_as_javas_big_decimal() {
        assert_eq!(java_decimal(10, 8), "1.0E-7");
        assert_eq!(java_decimal(0, 8), "0E-8");
        assert_eq!(java_decimal(-50, 2), "-0.50");
        assert_eq!(java_decimal(100, 0), "100");
        assert_eq!(java_decimal(123, 6), "0.000123");
        assert_eq!(plain_decimal(150, 2), "1.50");
    }

    #[test]
    fn strings_are_escaped_as_jackson_escapes_them() {
        let mut out = String::new();
        json_string("a\"b\\c/\u{1}\n\t\u{1f}é€", &mut out);
        assert_eq!(out, r#""a\"b\\c/\u0001\n\t\u001Fé€""#);
    }
}
