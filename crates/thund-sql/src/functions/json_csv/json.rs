//! Spark's JSON functions DataFusion lacks: `from_json(text, schema)`, `to_json(value)`,
//! `json_array_length(text)` and `json_object_keys(text)`.
//!
//! `from_json` decodes a whole batch at once with Arrow's JSON decoder into the schema given as
//! DDL (`'a INT, b DOUBLE'` or `'STRUCT<…>'`, a literal); text that is not a JSON object gives a
//! row of NULL fields, as Spark's default (PERMISSIVE) mode does. A value whose type does not fit the
//! schema fails the query naming it: Spark would set that one field NULL, which is not what a
//! whole-batch decoder can tell apart. With a `timestampFormat` or `dateFormat` option, the
//! top-level fields of those types are decoded as text and read with the pattern (NULL where it
//! does not read, as on Spark). `to_json` writes as Spark's JSON writer writes (`value_text`),
//! with its `timestampFormat`, `dateFormat`, `timestampNTZFormat` and `ignoreNullFields`
//! options; other options run on the Spark backend.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int32Array, ListBuilder, StringBuilder, StructArray};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::columnar::{columnar, utf8};
use crate::functions::datetime::patterns::Compiled;
use crate::functions::json_csv::value_text::{json_refusal, json_texts, option_pairs, scalar_arguments, TextOptions};

pub(crate) fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    ctx.register_udf(ScalarUDF::from(FromJson { signature: any() }));
    ctx.register_udf(ScalarUDF::from(ToJson { signature: any() }));
    ctx.register_udf(ScalarUDF::from(JsonArrayLength { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(JsonObjectKeys { signature: Signature::any(1, Volatility::Immutable) }));
}

/// The schema of `from_json`: a struct's fields from DDL.
pub(crate) fn schema_fields(ddl: &str) -> std::result::Result<Fields, String> {
    let trimmed = ddl.trim();
    if trimmed.to_ascii_uppercase().starts_with("STRUCT") {
        return match crate::types::parse_type(trimmed)? {
            DataType::Struct(fields) => Ok(fields),
            other => Err(format!("not a struct: {other}")),
        };
    }
    Ok(crate::types::parse_ddl_schema(trimmed)?.fields().clone())
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FromJson {
    signature: Signature,
}

impl ScalarUDFImpl for FromJson {
    fn name(&self) -> &str {
        "from_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("from_json's type is its schema argument")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        if args.arg_fields.len() < 2 {
            return plan_err!("from_json is called as from_json(text, schema[, options])");
        }
        let ddl = match args.scalar_arguments.get(1).copied().flatten() {
            Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => s,
            _ => return plan_err!("from_json's schema must be a literal, as `'a INT, b STRING'`"),
        };
        let fields = schema_fields(ddl).or_else(|e| plan_err!("from_json's schema `{ddl}`: {e}"))?;
        let formats = read_formats(&args.scalar_arguments[2..]).or_else(|e| plan_err!("{e}"))?;
        for f in &fields {
            if !formats.is_empty() && nested_datetime(f.data_type()) {
                return plan_err!(
                    "from_json's datetime formats apply here to top-level fields only; `{}` runs on the Spark backend",
                    f.name()
                );
            }
        }
        Ok(Arc::new(Field::new("from_json", DataType::Struct(fields), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let text = utf8(&args.args[0].to_array(n)?)?;
        let DataType::Struct(fields) = args.return_field.data_type() else { return exec_err!("from_json: no schema") };
        let scalars = scalar_arguments(&args.args);
        let formats = read_formats(&scalars[2..]).or_else(|e| exec_err!("{e}"))?;
        // Fields read with a pattern are decoded as text first.
        let formatted = |t: &DataType| formats.iter().find(|(of, _)| of == t).map(|(_, c)| c);
        let decoded_fields: Fields = fields
            .iter()
            .map(|f| match formatted(f.data_type()) {
                Some(_) => Arc::new(f.as_ref().clone().with_data_type(DataType::Utf8)),
                None => Arc::clone(f),
            })
            .collect();
        // Rows that are JSON objects are decoded together; the others are NULL.
        let objects: Vec<bool> = (0..n)
            .map(|i| {
                // Checked without building the value: the decoder reads it again below.
                !text.is_null(i)
                    && text.value(i).trim_start().starts_with('{')
                    && serde_json::from_str::<serde::de::IgnoredAny>(text.value(i)).is_ok()
            })
            .collect();
        let schema = Arc::new(Schema::new(decoded_fields.clone()));
        let mut decoder = arrow::json::ReaderBuilder::new(schema).with_batch_size(n.max(1)).build_decoder()?;
        for i in (0..n).filter(|&i| objects[i]) {
            let line = format!("{}\n", text.value(i));
            decoder.decode(line.as_bytes()).or_else(|e| {
                exec_err!("from_json: `{}` does not fit the schema ({e}); it runs on the Spark backend", text.value(i))
            })?;
        }
        let decoded = match decoder.flush().or_else(|e| {
            exec_err!(
                "from_json: a value does not fit the schema ({e}); Spark would read it as NULL, natively it is refused"
            )
        })? {
            Some(batch) => StructArray::from(batch),
            None => StructArray::new_empty_fields(0, None),
        };
        // Spread the decoded rows back, NULL where a row was not an object.
        let mut k = 0u32;
        let indices: arrow::array::UInt32Array = objects
            .iter()
            .map(|&o| {
                o.then(|| {
                    k += 1;
                    k - 1
                })
            })
            .collect();
        let taken = if decoded.num_columns() == 0 && !fields.is_empty() {
            arrow::array::new_null_array(args.return_field.data_type(), n)
        } else {
            arrow::compute::take(&decoded, &indices, None)?
        };
        // Text that is not an object is a row of NULL fields, as in Spark; only NULL text is a
        // NULL row.
        let taken = taken
            .as_any()
            .downcast_ref::<StructArray>()
            .cloned()
            .unwrap_or_else(|| StructArray::new_null(decoded_fields.clone(), n));
        let mut columns = taken.columns().to_vec();
        for (column, f) in columns.iter_mut().zip(fields.iter()) {
            if let Some(pattern) = formatted(f.data_type()) {
                *column = read_datetimes(column, f.data_type(), pattern)?;
            }
        }
        let out = StructArray::try_new(fields.clone(), columns, text.nulls().cloned())?;
        columnar(Arc::new(out), scalar)
    }
}

/// `from_json`'s datetime patterns by the type they read, from its option pairs.
fn read_formats(scalars: &[Option<&ScalarValue>]) -> std::result::Result<Vec<(DataType, Compiled)>, String> {
    let mut out = Vec::new();
    for (key, value) in option_pairs("from_json", scalars)? {
        let t = match key.to_ascii_lowercase().as_str() {
            "timestampformat" => crate::types::spark_timestamp(),
            "timestampntzformat" => DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None),
            "dateformat" => DataType::Date32,
            _ => return Err(format!("from_json's option `{key}` runs on the Spark backend")),
        };
        let compiled = crate::functions::datetime::patterns::compile(&value).map_err(|e| format!("from_json: {e}"))?;
        out.retain(|(of, _)| *of != t);
        out.push((t, compiled));
    }
    Ok(out)
}

/// Whether `t` holds a date or timestamp below its top level.
fn nested_datetime(t: &DataType) -> bool {
    fn holds(t: &DataType) -> bool {
        match t {
            DataType::Date32 | DataType::Timestamp(..) => true,
            DataType::List(f) | DataType::LargeList(f) => holds(f.data_type()),
            DataType::Struct(fields) => fields.iter().any(|f| holds(f.data_type())),
            DataType::Map(entries, _) => holds(entries.data_type()),
            _ => false,
        }
    }
    !matches!(t, DataType::Date32 | DataType::Timestamp(..)) && holds(t)
}

/// Texts read with `pattern` as values of type `t` (a date or a timestamp); NULL where a text
/// does not read, as Spark's PERMISSIVE mode has it.
fn read_datetimes(texts: &ArrayRef, t: &DataType, pattern: &Compiled) -> Result<ArrayRef> {
    let texts = utf8(texts)?;
    let at = |i: usize| {
        (!texts.is_null(i)).then(|| crate::functions::datetime::patterns::parse(texts.value(i), pattern)).flatten()
    };
    Ok(match t {
        DataType::Date32 => Arc::new(
            (0..texts.len())
                .map(|i| at(i).map(|d| (d.date() - chrono::NaiveDate::default()).num_days() as i32))
                .collect::<arrow::array::Date32Array>(),
        ),
        DataType::Timestamp(_, zone) => Arc::new(
            (0..texts.len())
                .map(|i| at(i).map(|d| d.and_utc().timestamp_micros()))
                .collect::<arrow::array::TimestampMicrosecondArray>()
                .with_timezone_opt(zone.clone()),
        ),
        other => return exec_err!("from_json: no pattern reads a {other}"),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToJson {
    signature: Signature,
}

/// `to_json`'s options, from its arguments after the value (`calls::rewrite_options`).
fn to_json_options(scalars: &[Option<&ScalarValue>]) -> std::result::Result<TextOptions, String> {
    let pairs = option_pairs("to_json", scalars.get(1..).unwrap_or_default())?;
    TextOptions::new("to_json", &pairs, false)
}

impl ScalarUDFImpl for ToJson {
    fn name(&self) -> &str {
        "to_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        let Some(value) = args.arg_fields.first() else { return plan_err!("to_json is called as to_json(value)") };
        let t = value.data_type();
        if !crate::functions::variant::is_variant(t) {
            if !matches!(t, DataType::Struct(_) | DataType::List(_) | DataType::Map(..)) {
                return plan_err!(
                    "to_json takes a struct, an array or a map, not {}",
                    crate::types::spark_type_name(t)
                );
            }
            if let Some(why) = json_refusal(t) {
                return plan_err!(
                    "to_json of a {}: {why}; it runs on the Spark backend",
                    crate::types::spark_type_name(t)
                );
            }
        }
        to_json_options(args.scalar_arguments).or_else(|e| plan_err!("{e}"))?;
        Ok(Arc::new(Field::new("to_json", DataType::Utf8, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let values = args.args[0].to_array(n)?;
        if crate::functions::variant::is_variant(values.data_type()) {
            return columnar(crate::functions::variant::json_texts(&values)?, scalar);
        }
        let options = scalar_arguments(&args.args);
        let opts = to_json_options(&options).or_else(|e| exec_err!("{e}"))?;
        columnar(Arc::new(json_texts(&values, &opts)), scalar)
    }
}

/// Spark takes only text as the JSON of `json_array_length` and `json_object_keys`: a number is
/// refused, not read as its text.
fn json_text_argument(function: &str, args: &[DataType]) -> Result<()> {
    match args {
        [DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null] => Ok(()),
        [t] => plan_err!(
            "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{function}\": the first parameter \
             requires the \"STRING\" type, however it has the type \"{}\"",
            crate::types::spark_type_name(t)
        ),
        _ => Ok(()),
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonArrayLength {
    signature: Signature,
}

impl ScalarUDFImpl for JsonArrayLength {
    fn name(&self) -> &str {
        "json_array_length"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        json_text_argument("json_array_length", args)?;
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let text = utf8(&args.args[0].to_array(args.number_rows)?)?;
        let out: Int32Array = text
            .iter()
            .map(|t| match serde_json::from_str::<serde_json::Value>(t?) {
                Ok(serde_json::Value::Array(items)) => i32::try_from(items.len()).ok(),
                _ => None,
            })
            .collect();
        columnar(Arc::new(out), scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct JsonObjectKeys {
    signature: Signature,
}

impl ScalarUDFImpl for JsonObjectKeys {
    fn name(&self) -> &str {
        "json_object_keys"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        json_text_argument("json_object_keys", args)?;
        Ok(DataType::List(Arc::new(Field::new("element", DataType::Utf8, true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let text = utf8(&args.args[0].to_array(args.number_rows)?)?;
        let mut builder =
            ListBuilder::new(StringBuilder::new()).with_field(Arc::new(Field::new("element", DataType::Utf8, true)));
        for t in text.iter() {
            match t.and_then(object_keys) {
                Some(keys) => {
                    for k in keys {
                        builder.values().append_value(k);
                    }
                    builder.append(true);
                }
                None => builder.append(false),
            }
        }
        columnar(Arc::new(builder.finish()), scalar)
    }
}

/// A JSON object's keys in the order written, or `None` for anything else.
fn object_keys(text: &str) -> Option<Vec<String>> {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
    struct Keys;
    impl<'de> Visitor<'de> for Keys {
        type Value = Option<Vec<String>>;
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("a JSON value")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Self::Value, A::Error> {
            let mut keys = Vec::new();
            while let Some(k) = map.next_key::<String>()? {
                map.next_value::<IgnoredAny>()?;
                keys.push(k);
            }
            Ok(Some(keys))
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(None)
        }
        fn visit_str<E>(self, _: &str) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_bool<E>(self, _: bool) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E>(self, _: i64) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E>(self, _: u64) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E>(self, _: f64) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
    }
    let mut de = serde_json::Deserializer::from_str(text);
    let keys = (&mut de).deserialize_any(Keys).ok()?;
    de.end().ok()?;
    keys
}
