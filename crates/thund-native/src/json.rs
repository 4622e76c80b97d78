//! Spark's JSON functions DataFusion lacks: `from_json(text, schema)`, `to_json(value)`,
//! `json_array_length(text)` and `json_object_keys(text)`.
//!
//! `from_json` decodes a whole batch at once with Arrow's JSON decoder into the schema given as
//! DDL (`'a INT, b DOUBLE'` or `'STRUCT<…>'`, a literal); text that is not a JSON object gives a
//! row of NULL fields, as Spark's default (PERMISSIVE) mode does. A value whose type does not fit the
//! schema fails the query naming it: Spark would set that one field NULL, which is not what a
//! whole-batch decoder can tell apart. `to_json` encodes with Arrow's JSON writer, fields that
//! are NULL left out as Spark leaves them out; values whose text Spark writes otherwise (dates,
//! timestamps, floating point, binary, maps keyed by other than strings) are refused before the
//! run. Options
//! (`map('timestampFormat', …)`) run on the Spark backend.

use std::sync::Arc;

use arrow::array::{Array, Int32Array, ListBuilder, StringArray, StringBuilder, StructArray};
use arrow::datatypes::{DataType, Field, Fields, Schema};
use arrow::record_batch::RecordBatch;
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::functions::{columnar, utf8};

pub(crate) fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    ctx.register_udf(ScalarUDF::from(FromJson { signature: any() }));
    ctx.register_udf(ScalarUDF::from(ToJson { signature: any() }));
    ctx.register_udf(ScalarUDF::from(JsonArrayLength { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(JsonObjectKeys { signature: Signature::any(1, Volatility::Immutable) }));
}

/// The schema of `from_json`: a struct's fields from DDL.
fn schema_fields(ddl: &str) -> std::result::Result<Fields, String> {
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
        match args.arg_fields.len() {
            2 => {}
            3 => return plan_err!("from_json's options run on the Spark backend"),
            _ => return plan_err!("from_json is called as from_json(text, schema)"),
        }
        let ddl = match args.scalar_arguments.get(1).copied().flatten() {
            Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => s,
            _ => return plan_err!("from_json's schema must be a literal, as `'a INT, b STRING'`"),
        };
        let fields = schema_fields(ddl).or_else(|e| plan_err!("from_json's schema `{ddl}`: {e}"))?;
        Ok(Arc::new(Field::new("from_json", DataType::Struct(fields), true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let text = utf8(&args.args[0].to_array(n)?)?;
        let DataType::Struct(fields) = args.return_field.data_type() else { return exec_err!("from_json: no schema") };
        // Rows that are JSON objects are decoded together; the others are NULL.
        let objects: Vec<bool> = (0..n)
            .map(|i| {
                // Checked without building the value: the decoder reads it again below.
                !text.is_null(i)
                    && text.value(i).trim_start().starts_with('{')
                    && serde_json::from_str::<serde::de::IgnoredAny>(text.value(i)).is_ok()
            })
            .collect();
        let schema = Arc::new(Schema::new(fields.clone()));
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
            .unwrap_or_else(|| StructArray::new_null(fields.clone(), n));
        let out = StructArray::try_new(fields.clone(), taken.columns().to_vec(), text.nulls().cloned())?;
        columnar(Arc::new(out), scalar)
    }
}

/// Whether Arrow's JSON writer writes `t` as Spark does.
fn writes_as_spark(t: &DataType) -> bool {
    match t {
        DataType::Null | DataType::Boolean | DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => true,
        DataType::Decimal128(..) => true,
        // (Floating point is written as Java writes it there: `1.0E20`.)
        t if t.is_integer() => true,
        DataType::List(f) | DataType::LargeList(f) => writes_as_spark(f.data_type()),
        DataType::Struct(fields) => fields.iter().all(|f| writes_as_spark(f.data_type())),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) => kv[0].data_type().is_string() && writes_as_spark(kv[1].data_type()),
            _ => false,
        },
        _ => false,
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToJson {
    signature: Signature,
}

impl ScalarUDFImpl for ToJson {
    fn name(&self) -> &str {
        "to_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t] if crate::variant::is_variant(t) => Ok(DataType::Utf8),
            [t] if matches!(t, DataType::Struct(_) | DataType::List(_) | DataType::Map(..)) && writes_as_spark(t) => {
                Ok(DataType::Utf8)
            }
            [t] if matches!(t, DataType::Struct(_) | DataType::List(_) | DataType::Map(..)) => plan_err!(
                "to_json of a {} runs on the Spark backend (its dates, timestamps, floating point, binary or map keys are written otherwise here)",
                crate::types::spark_type_name(t)
            ),
            [t] => plan_err!("to_json takes a struct, an array or a map, not {}", crate::types::spark_type_name(t)),
            _ => plan_err!("to_json's options run on the Spark backend"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let values = args.args[0].to_array(n)?;
        if crate::variant::is_variant(values.data_type()) {
            return columnar(crate::variant::json_texts(&values)?, scalar);
        }
        // One line per row, `{"v":…}`: the value is what stands after the key.
        let schema = Arc::new(Schema::new(vec![Field::new("v", values.data_type().clone(), true)]));
        let batch = RecordBatch::try_new(schema, vec![Arc::clone(&values)])?;
        let mut buffer = Vec::new();
        {
            let mut writer = arrow::json::LineDelimitedWriter::new(&mut buffer);
            writer.write(&batch)?;
            writer.finish()?;
        }
        let text = String::from_utf8(buffer).or_else(|e| exec_err!("to_json: {e}"))?;
        let mut lines = text.lines();
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let line = lines.next().unwrap_or("{}");
            if values.is_null(i) {
                out.push(None);
                continue;
            }
            match line.strip_prefix("{\"v\":").and_then(|l| l.strip_suffix('}')) {
                Some(v) => out.push(Some(v.to_string())),
                None => return exec_err!("to_json: unexpected encoding {line}"),
            }
        }
        columnar(Arc::new(StringArray::from(out)), scalar)
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

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
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

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
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
