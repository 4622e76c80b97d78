//! Spark's CSV functions: `from_csv(text, schema[, options])`, `to_csv(struct[, options])` and
//! `schema_of_csv(text)`, for one record of Spark's default CSV dialect (`,` or the `sep`
//! option between fields, `"` quotes, `\` escaping a quote).
//!
//! Reading follows Spark's CSV reader in its default PERMISSIVE mode: an empty field is NULL;
//! a missing one is NULL and extra ones are dropped; a field that does not read as its type is
//! NULL (integers as Java parses them, so `' 3'` is NULL while `' 3'` as a DOUBLE is 3.0, as
//! Java trims it); dates and timestamps are read as Spark casts text unless a `dateFormat` or
//! `timestampFormat` pattern is given. Writing follows Spark's writer: white space around a
//! string is trimmed, an empty string is `""`, a field holding the separator, a quote or a line
//! break is quoted (its quotes escaped by `\`), numbers are written as Java prints them
//! (`value_text`). A quoted field whose quotes Spark's parser would read otherwise (`"a""b"`),
//! nested types and binary values are refused rather than guessed.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringArray, StructArray};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::columnar::{columnar, utf8};
use crate::functions::datetime::patterns::Compiled;
use crate::functions::json_csv::value_text::{option_pairs, scalar_arguments, scalar_text, TextOptions};

pub(crate) fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    ctx.register_udf(ScalarUDF::from(FromCsv { signature: any() }));
    ctx.register_udf(ScalarUDF::from(ToCsv { signature: any() }));
    ctx.register_udf(ScalarUDF::from(SchemaOfCsv { signature: any() }));
}

/// What a reader's options ask: the separator and the patterns given (by the type they read).
struct ReadOptions {
    separator: char,
    date: Option<Compiled>,
    timestamp: Option<Compiled>,
}

fn read_options(function: &str, scalars: &[Option<&ScalarValue>]) -> std::result::Result<ReadOptions, String> {
    let mut out = ReadOptions { separator: ',', date: None, timestamp: None };
    for (key, value) in option_pairs(function, scalars)? {
        let compiled = || crate::functions::datetime::patterns::compile(&value).map_err(|e| format!("{function}: {e}"));
        match key.to_ascii_lowercase().as_str() {
            "sep" | "delimiter" => {
                let mut chars = value.chars();
                out.separator = match (chars.next(), chars.next()) {
                    (Some(c), None) if c != '"' && c != '\\' => c,
                    _ => return Err(format!("{function}'s separator `{value}` runs on the Spark backend")),
                };
            }
            "dateformat" => out.date = Some(compiled()?),
            "timestampformat" => out.timestamp = Some(compiled()?),
            _ => return Err(format!("{function}'s option `{key}` runs on the Spark backend")),
        }
    }
    Ok(out)
}

/// The fields of one CSV record (`None` for an empty one); an error for quoting this reader
/// does not read as Spark's does.
fn fields_of(line: &str, sep: char) -> std::result::Result<Vec<Option<String>>, String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            let mut closed = false;
            while let Some(c) = chars.next() {
                match c {
                    '\\' if chars.peek() == Some(&'"') => field.extend(chars.next()),
                    '"' => {
                        closed = true;
                        break;
                    }
                    c => field.push(c),
                }
            }
            if !closed || chars.peek().is_some_and(|&c| c != sep) {
                return Err(format!("the quoting of `{line}` runs on the Spark backend"));
            }
            out.push(Some(field));
        } else {
            while let Some(&c) = chars.peek() {
                if c == sep {
                    break;
                }
                field.push(c);
                chars.next();
            }
            out.push((!field.is_empty()).then_some(field));
        }
        if chars.next().is_none() {
            return Ok(out);
        }
    }
}

/// Java's `Integer.parseInt` (and `Long`, …): a sign and digits only, within `[min, max]`.
fn java_integer(s: &str, min: i64, max: i64) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse::<i64>().ok().filter(|v| (min..=max).contains(v))
}

/// Java's `Double.parseDouble` and Spark's `NaN`/`Inf`/`-Inf` (white space around trimmed).
fn java_double(s: &str) -> Option<f64> {
    match s.trim_matches(|c: char| c <= ' ') {
        "NaN" => Some(f64::NAN),
        "Inf" | "Infinity" | "+Infinity" => Some(f64::INFINITY),
        "-Inf" | "-Infinity" => Some(f64::NEG_INFINITY),
        t => {
            let body = t.strip_suffix(['d', 'D', 'f', 'F']).unwrap_or(t);
            let plain = body.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b));
            (plain && body.bytes().any(|b| b.is_ascii_digit())).then(|| body.parse().ok()).flatten()
        }
    }
}

/// The column of field `f` read from each record's text (`None`: no such field).
fn read_column(texts: &[Option<&str>], t: &DataType, options: &ReadOptions, function: &str) -> Result<ArrayRef> {
    use arrow::array::{
        BooleanArray, Date32Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, Int8Array,
        TimestampMicrosecondArray,
    };
    let integers = |min: i64, max: i64| texts.iter().map(move |s| s.and_then(|s| java_integer(s, min, max)));
    let days = |d: chrono::NaiveDateTime| (d.date() - chrono::NaiveDate::default()).num_days() as i32;
    Ok(match t {
        DataType::Utf8 => Arc::new(texts.iter().copied().collect::<StringArray>()),
        DataType::Int8 => {
            Arc::new(integers(i8::MIN.into(), i8::MAX.into()).map(|v| v.map(|v| v as i8)).collect::<Int8Array>())
        }
        DataType::Int16 => {
            Arc::new(integers(i16::MIN.into(), i16::MAX.into()).map(|v| v.map(|v| v as i16)).collect::<Int16Array>())
        }
        DataType::Int32 => {
            Arc::new(integers(i32::MIN.into(), i32::MAX.into()).map(|v| v.map(|v| v as i32)).collect::<Int32Array>())
        }
        DataType::Int64 => Arc::new(integers(i64::MIN, i64::MAX).collect::<Int64Array>()),
        DataType::Float64 => Arc::new(texts.iter().map(|s| s.and_then(java_double)).collect::<Float64Array>()),
        DataType::Float32 => {
            Arc::new(texts.iter().map(|s| s.and_then(java_double).map(|v| v as f32)).collect::<Float32Array>())
        }
        DataType::Boolean => Arc::new(
            texts
                .iter()
                .map(|s| match s.map(str::to_ascii_lowercase).as_deref() {
                    Some("true") => Some(true),
                    Some("false") => Some(false),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        DataType::Date32 => Arc::new(
            texts
                .iter()
                .map(|s| {
                    s.and_then(|s| match &options.date {
                        Some(p) => crate::functions::datetime::patterns::parse(s, p).map(days),
                        None => crate::functions::cast::date(s),
                    })
                })
                .collect::<Date32Array>(),
        ),
        DataType::Timestamp(_, Some(_)) => {
            let values: Vec<Option<i64>> = match &options.timestamp {
                Some(p) => texts
                    .iter()
                    .map(|s| {
                        s.and_then(|s| crate::functions::datetime::patterns::parse(s, p))
                            .map(|d| d.and_utc().timestamp_micros())
                    })
                    .collect(),
                None => {
                    let text: StringArray = texts.iter().copied().collect();
                    crate::functions::datetime::timestamp_text::instants(&text, true)?.iter().collect()
                }
            };
            Arc::new(TimestampMicrosecondArray::from(values).with_timezone("UTC"))
        }
        DataType::Decimal128(p, s) => {
            // Plain numbers only: Spark reads others with a locale's number format.
            if texts.iter().flatten().any(|t| {
                let d = t.strip_prefix(['+', '-']).unwrap_or(t);
                d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit() || b == b'.') || d.matches('.').count() > 1
            }) {
                return exec_err!("{function}: a DECIMAL field that is not a plain number runs on the Spark backend");
            }
            let text: StringArray = texts.iter().copied().collect();
            let options = arrow::compute::CastOptions { safe: true, ..Default::default() };
            arrow::compute::cast_with_options(&text, &DataType::Decimal128(*p, *s), &options)?
        }
        other => {
            return exec_err!("{function} of a {} runs on the Spark backend", crate::types::spark_type_name(other))
        }
    })
}

fn readable(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Utf8
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Boolean
            | DataType::Date32
            | DataType::Timestamp(_, Some(_))
            | DataType::Decimal128(..)
    )
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FromCsv {
    signature: Signature,
}

impl ScalarUDFImpl for FromCsv {
    fn name(&self) -> &str {
        "from_csv"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("from_csv's type is its schema argument")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        if args.arg_fields.len() < 2 {
            return plan_err!("from_csv is called as from_csv(text, schema[, options])");
        }
        let ddl = match args.scalar_arguments.get(1).copied().flatten() {
            Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => s,
            _ => return plan_err!("from_csv's schema must be a literal, as `'a INT, b STRING'`"),
        };
        let fields = crate::functions::json_csv::json::schema_fields(ddl)
            .or_else(|e| plan_err!("from_csv's schema `{ddl}`: {e}"))?;
        if let Some(f) = fields.iter().find(|f| !readable(f.data_type())) {
            return plan_err!(
                "from_csv of a {} field (`{}`) runs on the Spark backend",
                crate::types::spark_type_name(f.data_type()),
                f.name()
            );
        }
        read_options("from_csv", &args.scalar_arguments[2..]).or_else(|e| plan_err!("{e}"))?;
        Ok(Arc::new(Field::new("from_csv", DataType::Struct(fields), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let text = utf8(&args.args[0].to_array(n)?)?;
        let DataType::Struct(fields) = args.return_field.data_type() else { return exec_err!("from_csv: no schema") };
        let options = read_options("from_csv", &scalar_arguments(&args.args)[2..]).or_else(|e| exec_err!("{e}"))?;
        let mut records = Vec::with_capacity(n);
        for i in 0..n {
            records.push(match text.is_null(i) {
                true => Vec::new(),
                false => fields_of(text.value(i), options.separator).or_else(|e| exec_err!("from_csv: {e}"))?,
            });
        }
        let columns = fields
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let texts: Vec<Option<&str>> = records.iter().map(|r| r.get(k).and_then(|v| v.as_deref())).collect();
                read_column(&texts, f.data_type(), &options, "from_csv")
            })
            .collect::<Result<Vec<_>>>()?;
        let out = StructArray::try_new(fields.clone(), columns, text.nulls().cloned())?;
        columnar(Arc::new(out), scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToCsv {
    signature: Signature,
}

fn writable(t: &DataType) -> bool {
    readable(t) || matches!(t, DataType::Null | DataType::Timestamp(_, None) | DataType::LargeUtf8 | DataType::Utf8View)
}

impl ScalarUDFImpl for ToCsv {
    fn name(&self) -> &str {
        "to_csv"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        let Some(DataType::Struct(fields)) = args.arg_fields.first().map(|f| f.data_type()) else {
            return plan_err!("to_csv takes a struct, as to_csv(named_struct('a', 1))");
        };
        if let Some(f) = fields.iter().find(|f| !writable(f.data_type())) {
            return plan_err!(
                "to_csv of a {} field (`{}`) runs on the Spark backend",
                crate::types::spark_type_name(f.data_type()),
                f.name()
            );
        }
        write_options(args.scalar_arguments).or_else(|e| plan_err!("{e}"))?;
        Ok(Arc::new(Field::new("to_csv", DataType::Utf8, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let values = args.args[0].to_array(n)?;
        let options = write_options(&scalar_arguments(&args.args)).or_else(|e| exec_err!("{e}"))?;
        let s = values.as_struct();
        let sep = options.separator;
        let out: StringArray = (0..n)
            .map(|i| {
                s.is_valid(i).then(|| {
                    let fields: Vec<String> =
                        s.columns().iter().map(|c| csv_field(c.as_ref(), i, &options, sep)).collect();
                    fields.join(&sep.to_string())
                })
            })
            .collect();
        columnar(Arc::new(out), scalar)
    }
}

fn write_options(scalars: &[Option<&ScalarValue>]) -> std::result::Result<TextOptions, String> {
    let pairs = option_pairs("to_csv", scalars.get(1..).unwrap_or_default())?;
    TextOptions::new("to_csv", &pairs, true)
}

/// One field as Spark's CSV writer writes it.
fn csv_field(a: &dyn Array, i: usize, options: &TextOptions, sep: char) -> String {
    if a.data_type() == &DataType::Null || a.is_null(i) {
        return String::new();
    }
    let text = scalar_text(a, i, options).unwrap_or_default();
    if !a.data_type().is_string() {
        return text;
    }
    let trimmed = text.trim_matches(|c: char| c <= ' ');
    if trimmed.is_empty() {
        return "\"\"".into();
    }
    if trimmed.contains([sep, '"', '\n', '\r']) {
        return format!("\"{}\"", trimmed.replace('"', "\\\""));
    }
    trimmed.to_string()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SchemaOfCsv {
    signature: Signature,
}

/// The type Spark's CSV schema inference gives one field.
fn inferred(field: Option<&str>) -> &'static str {
    let Some(s) = field else { return "STRING" };
    if java_integer(s, i32::MIN.into(), i32::MAX.into()).is_some() {
        "INT"
    } else if java_integer(s, i64::MIN, i64::MAX).is_some() {
        "BIGINT"
    } else if java_double(s).is_some() {
        "DOUBLE"
    } else if is_iso_date(s) {
        "DATE"
    } else if matches!(
        crate::functions::datetime::timestamp_text::read(s),
        crate::functions::datetime::timestamp_text::TextTimestamp::Micros(_)
    ) {
        "TIMESTAMP"
    } else if s.eq_ignore_ascii_case("true") || s.eq_ignore_ascii_case("false") {
        "BOOLEAN"
    } else {
        "STRING"
    }
}

/// `yyyy-MM-dd` exactly, a valid date.
fn is_iso_date(s: &str) -> bool {
    chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_ok() && s.len() == 10
}

impl ScalarUDFImpl for SchemaOfCsv {
    fn name(&self) -> &str {
        "schema_of_csv"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t] if t.is_string() => Ok(DataType::Utf8),
            [_] => plan_err!("schema_of_csv takes a STRING"),
            _ => plan_err!("schema_of_csv's options run on the Spark backend"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(s) = &args.args[0] else {
            return exec_err!("schema_of_csv's text must be a literal, as on Spark");
        };
        let Some(text) = s.try_as_str().flatten() else { return exec_err!("schema_of_csv's text must not be NULL") };
        let fields = fields_of(text, ',').or_else(|e| exec_err!("schema_of_csv: {e}"))?;
        let described: Vec<String> =
            fields.iter().enumerate().map(|(k, f)| format!("_c{k}: {}", inferred(f.as_deref()))).collect();
        let out = format!("STRUCT<{}>", described.join(", "));
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(out))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_split_as_sparks_reader_splits_them() {
        let f = |s: &str| fields_of(s, ',').unwrap();
        assert_eq!(f("a, b ,,\"c,d\""), vec![Some("a".into()), Some(" b ".into()), None, Some("c,d".into())]);
        assert_eq!(f(r#""d\"e""#), vec![Some("d\"e".into())]);
        assert!(fields_of(r#""b""c""#, ',').is_err());
    }

    #[test]
    fn numbers_read_as_java_reads_them() {
        assert_eq!(java_integer("+1", 0, 10), Some(1));
        assert_eq!(java_integer(" 3", 0, 10), None);
        assert_eq!(java_double(" 2 "), Some(2.0));
        assert_eq!(java_double("1d"), Some(1.0));
        assert_eq!(java_double("-Inf"), Some(f64::NEG_INFINITY));
        assert_eq!(java_double("inf"), None);
        assert_eq!(inferred(Some("99999999999")), "BIGINT");
        assert_eq!(inferred(Some(" 2")), "DOUBLE");
    }
}
