//! Spark's VARIANT natively: `parse_json`, `try_parse_json`, `is_variant_null`, `variant_get`,
//! `try_variant_get`, `schema_of_variant`, `schema_of_variant_agg`, `to_variant_object`, and
//! a VARIANT cast to a type or written as JSON (`CAST(v AS STRING)`, `to_json(v)`).
//!
//! A VARIANT is Arrow's `Struct<value: Binary, metadata: Binary>`, the shape Spark sends one in
//! over Arrow, holding the binary encoding Spark and Parquet share (the variant spec):
//! `metadata` is a dictionary of object keys, `value` a self-describing value whose objects name
//! their keys by dictionary id, listed in key order. `Builder` writes the bytes Spark's builder
//! writes: keys enter the dictionary in the order met, an integer takes the smallest of 1, 2, 4
//! or 8 bytes, a JSON number with a point and no exponent is a DECIMAL when its digits fit 38
//! (4, 8 or 16 bytes by its precision), any other number a DOUBLE, and a key twice in one
//! object is malformed JSON. So `parse_json` answers Spark's very bytes.
//!
//! Reading goes through `Value`, a bounds-checked view of one value: bytes that do not follow
//! the spec are Spark's `MALFORMED_VARIANT`, never a panic or a guess.
//!
//! Out of a variant (`variant_get(v, path, type)`, `CAST(v AS type)`), a value converts by
//! Spark's rules for variants, read off Spark 4.1.4: numbers narrow with a range check (a
//! fraction cut off), text reads as Spark's casts read it, anything becomes text as its JSON;
//! what does not convert is `[INVALID_VARIANT_CAST]` (`variant_get`, `CAST`) or NULL
//! (`try_variant_get`, `try_cast`). A VARIANT JSON `null` is SQL NULL for every type but
//! VARIANT. Casts to ARRAY, STRUCT and MAP run on the Spark backend.
//!
//! A VARIANT column is not stored in Delta natively (Spark writes Delta's `variantType`
//! feature): `table::shape` refuses a dataset with one before its run.
//!
//! Files: `encoding` (the spec's bytes, `Builder`, JSON text into a variant), `value` (reading
//! one, and one written as JSON text), `get` (paths and casts out of a variant), `schema`
//! (`schema_of_variant[_agg]`, `schema_of_json`), `object` (`to_variant_object`); this file
//! holds the Arrow glue and the functions that read and write variants.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StructArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Fields};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    AggregateUDF, ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::columnar::{columnar, utf8};
use crate::declare::Function;

/// Spark's VARIANT functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("parse_json"),
    Function::udf("try_parse_json"),
    Function::udf("is_variant_null"),
    Function::udf("variant_get"),
    Function::udf("try_variant_get"),
    Function::udf("schema_of_variant"),
    Function::udf("schema_of_variant_agg"),
    // JSON inference on the variant reader; a map of literal options becomes literals.
    Function::udf("schema_of_json").parse(crate::functions::json_csv::options_as_literals),
    Function::udf("to_variant_object"),
    Function::udf("variant_explode"),
    Function::udf("variant_explode_outer"),
];

pub(crate) fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    for try_ in [false, true] {
        ctx.register_udf(ScalarUDF::from(ParseJson { try_, signature: Signature::any(1, Volatility::Immutable) }));
        ctx.register_udf(ScalarUDF::from(VariantGet { try_, signature: any() }));
    }
    ctx.register_udf(ScalarUDF::from(IsVariantNull { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(SchemaOfVariant { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(ToVariantObject { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(SchemaOfJson { signature: Signature::variadic_any(Volatility::Immutable) }));
    ctx.register_udaf(AggregateUDF::from(SchemaOfVariantAgg { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udtf("variant_explode", Arc::new(VariantExplode { outer: false }));
    ctx.register_udtf("variant_explode_outer", Arc::new(VariantExplode { outer: true }));
}

/// The Arrow type of a VARIANT.
pub(crate) fn variant_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("value", DataType::Binary, false),
        Field::new("metadata", DataType::Binary, false),
    ]))
}

/// Whether `dt` is a VARIANT (the struct Spark sends one as).
pub(crate) fn is_variant(dt: &DataType) -> bool {
    match dt {
        DataType::Struct(f) => {
            f.len() == 2
                && f[0].name() == "value"
                && f[1].name() == "metadata"
                && f.iter()
                    .all(|f| matches!(f.data_type(), DataType::Binary | DataType::LargeBinary | DataType::BinaryView))
        }
        _ => false,
    }
}

/// Whether a VARIANT is anywhere in `dt`.
pub(crate) fn holds_variant(dt: &DataType) -> bool {
    is_variant(dt)
        || match dt {
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => {
                holds_variant(f.data_type())
            }
            DataType::Struct(fields) => fields.iter().any(|f| holds_variant(f.data_type())),
            _ => false,
        }
}

/// The variant spec's largest value or metadata (Spark's `SIZE_LIMIT`).
mod encoding;
mod get;
mod object;
mod schema;
mod value;

use encoding::{build_error, parse_json, primitive_header, BuildError, ARRAY, NULL, OBJECT};
use get::{cast, castable, parse_path, walk};
use object::ToVariantObject;
use schema::{SchemaOfJson, SchemaOfVariant, SchemaOfVariantAgg};
pub(crate) use value::{java_double, java_float};
use value::{to_json, Scalar, Value};

/// A variant column's value and metadata bytes.
fn parts(a: &ArrayRef) -> Result<(StructArray, ArrayRef, ArrayRef)> {
    let Some(s) = a.as_any().downcast_ref::<StructArray>() else {
        return exec_err!("expected a VARIANT, got {}", crate::types::spark_type_name(a.data_type()));
    };
    let value = arrow::compute::cast(s.column(0), &DataType::Binary)?;
    let metadata = arrow::compute::cast(s.column(1), &DataType::Binary)?;
    Ok((s.clone(), value, metadata))
}

/// The variant of row `i`, `None` when the row is NULL.
fn row<'a>(s: &StructArray, value: &'a ArrayRef, metadata: &'a ArrayRef, i: usize) -> Result<Option<Value<'a>>> {
    if s.is_null(i) || value.is_null(i) || metadata.is_null(i) {
        return Ok(None);
    }
    Value::new(value.as_binary::<i32>().value(i), metadata.as_binary::<i32>().value(i)).map(Some)
}

/// `f` of each row of a VARIANT column (`None` for a NULL row; a VOID column is all NULL).
fn each_variant(a: &ArrayRef, mut f: impl FnMut(Option<Value>) -> Result<()>) -> Result<()> {
    if a.data_type() == &DataType::Null {
        return (0..a.len()).try_for_each(|_| f(None));
    }
    let (s, value, metadata) = parts(a)?;
    (0..a.len()).try_for_each(|i| f(row(&s, &value, &metadata, i)?))
}

/// Variants from their parts, NULL where `parts` is `None`.
fn variant_array(rows: Vec<Option<(Vec<u8>, Vec<u8>)>>) -> Result<ArrayRef> {
    let mut values = BinaryBuilder::new();
    let mut metadata = BinaryBuilder::new();
    let mut valid = Vec::with_capacity(rows.len());
    for r in &rows {
        match r {
            Some((v, m)) => {
                values.append_value(v);
                metadata.append_value(m);
            }
            // A NULL variant's children still hold values: they are not nullable.
            None => {
                values.append_value([primitive_header(NULL)]);
                metadata.append_value([1u8, 0, 0]);
            }
        }
        valid.push(r.is_some());
    }
    let DataType::Struct(fields) = variant_type() else { return exec_err!("internal error: a variant is a struct") };
    let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
    Ok(Arc::new(StructArray::try_new(
        fields,
        vec![Arc::new(values.finish()) as ArrayRef, Arc::new(metadata.finish())],
        nulls,
    )?))
}

// ---------------------------------------------------------------------------------------------
// Functions.

/// `parse_json(text)` and `try_parse_json(text)` (NULL for text that is not JSON).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseJson {
    try_: bool,
    signature: Signature,
}

impl ScalarUDFImpl for ParseJson {
    fn name(&self) -> &str {
        if self.try_ {
            "try_parse_json"
        } else {
            "parse_json"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !matches!(args[0], DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null) {
            return plan_err!("{} takes a STRING, not {}", self.name(), crate::types::spark_type_name(&args[0]));
        }
        Ok(variant_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let text = utf8(&args.args[0].to_array(args.number_rows)?)?;
        let mut out = Vec::with_capacity(text.len());
        for t in text.iter() {
            out.push(match t {
                None => None,
                Some(t) => match parse_json(t) {
                    Ok(v) => Some(v),
                    Err(_) if self.try_ => None,
                    Err(BuildError::TooLarge) => return Err(build_error(BuildError::TooLarge)),
                    Err(_) => {
                        return exec_err!(
                            "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in record \
                             parsing: {t}"
                        )
                    }
                },
            });
        }
        columnar(variant_array(out)?, scalar)
    }
}

/// `is_variant_null(v)`: whether `v` is a JSON `null` (false for a SQL NULL).
#[derive(Debug, PartialEq, Eq, Hash)]
struct IsVariantNull {
    signature: Signature,
}

impl ScalarUDFImpl for IsVariantNull {
    fn name(&self) -> &str {
        "is_variant_null"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        expect_variant(self.name(), &args[0])?;
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let mut out = Vec::with_capacity(a.len());
        each_variant(&a, |v| {
            out.push(v.map(|v| v.scalar()).transpose()? == Some(Scalar::Null));
            Ok(())
        })?;
        columnar(Arc::new(arrow::array::BooleanArray::from(out)), scalar)
    }
}

fn expect_variant(function: &str, t: &DataType) -> Result<()> {
    if !is_variant(t) && t != &DataType::Null {
        return plan_err!("{function} takes a VARIANT, not {}", crate::types::spark_type_name(t));
    }
    Ok(())
}

/// `variant_get(v, path[, type])` and `try_variant_get` (NULL where the value does not
/// convert); also `CAST(v AS type)` and `try_cast`, as `variant_get(v, '$', type)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct VariantGet {
    try_: bool,
    signature: Signature,
}

/// A literal text argument.
fn literal_text<'a>(args: &ReturnFieldArgs<'a>, i: usize) -> Option<&'a str> {
    match args.scalar_arguments.get(i).copied().flatten() {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => {
            Some(s.as_str())
        }
        _ => None,
    }
}

/// The type named by `variant_get`'s third argument.
fn target_type(name: &str) -> std::result::Result<DataType, String> {
    if name.trim().eq_ignore_ascii_case("variant") {
        return Ok(variant_type());
    }
    crate::types::parse_type(name)
}

impl ScalarUDFImpl for VariantGet {
    fn name(&self) -> &str {
        if self.try_ {
            "try_variant_get"
        } else {
            "variant_get"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("{}'s type is its type argument", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let name = self.name();
        if !(2..=3).contains(&args.arg_fields.len()) {
            return plan_err!("{name} is called as {name}(v, path[, type])");
        }
        expect_variant(name, args.arg_fields[0].data_type())?;
        let Some(path) = literal_text(&args, 1) else {
            return plan_err!("{name}'s path must be a literal, as '$.a[0]'");
        };
        if parse_path(path).is_none() {
            return plan_err!(
                "[INVALID_VARIANT_GET_PATH] The path `{path}` is not a valid variant extraction path in `{name}`"
            );
        }
        let to = match args.arg_fields.len() {
            2 => variant_type(),
            _ => {
                let Some(t) = literal_text(&args, 2) else {
                    return plan_err!("{name}'s type must be a literal, as 'int'");
                };
                target_type(t).or_else(|e| plan_err!("{name}'s type `{t}`: {e}"))?
            }
        };
        if !castable(&to) {
            return plan_err!(
                "{name} to {} runs on the Spark backend (natively a variant converts to scalar types)",
                crate::types::spark_type_name(&to)
            );
        }
        Ok(Arc::new(Field::new(name, to, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let to = args.return_field.data_type().clone();
        let path = match &args.args[1] {
            ColumnarValue::Scalar(s) => s.try_as_str().flatten().unwrap_or("").to_string(),
            ColumnarValue::Array(_) => return exec_err!("{}'s path must be a literal", self.name()),
        };
        let Some(steps) = parse_path(&path) else {
            return exec_err!("[INVALID_VARIANT_GET_PATH] The path `{path}` is not a valid variant extraction path");
        };
        let a = args.args[0].to_array(n)?;
        if a.data_type() == &DataType::Null {
            return columnar(arrow::array::new_null_array(&to, n), scalar);
        }
        let (s, value, metadata) = parts(&a)?;
        let mut found = Vec::with_capacity(n);
        for i in 0..n {
            found.push(match row(&s, &value, &metadata, i)? {
                Some(v) => walk(v, &steps)?,
                None => None,
            });
        }
        if is_variant(&to) {
            let rows = found.iter().map(|v| v.map(|v| v.rebuilt()).transpose()).collect::<Result<Vec<_>>>()?;
            return columnar(variant_array(rows)?, scalar);
        }
        let mut out = Vec::with_capacity(n);
        for v in &found {
            out.push(match v {
                None => ScalarValue::try_from(&to)?,
                Some(v) => match cast(v, &to)? {
                    Some(x) => x,
                    None if self.try_ => ScalarValue::try_from(&to)?,
                    None => {
                        let mut shown = String::new();
                        to_json(v, &mut shown)?;
                        return exec_err!(
                            "[INVALID_VARIANT_CAST] The variant value `{shown}` cannot be cast into `\"{}\"`. Please \
                             use `try_variant_get` instead.",
                            crate::types::spark_type_name(&to)
                        );
                    }
                },
            });
        }
        let out = if out.is_empty() { arrow::array::new_empty_array(&to) } else { ScalarValue::iter_to_array(out)? };
        // A DECIMAL's type is carried by its values; one whose digits do not fit was cut to NULL.
        let out = if out.data_type() != &to { arrow::compute::cast(&out, &to)? } else { out };
        columnar(out, scalar)
    }
}

/// `CAST(v AS to)` of a VARIANT: `variant_get(v, '$', to)` (`try_variant_get` for
/// `try_cast`), which refuses a type natively out of reach; `None` for a cast to VARIANT.
pub(crate) fn cast_expr(
    value: datafusion::logical_expr::Expr,
    to: &DataType,
    try_: bool,
) -> Option<datafusion::logical_expr::Expr> {
    use datafusion::logical_expr::expr::ScalarFunction;
    if is_variant(to) {
        return None;
    }
    let udf = Arc::new(ScalarUDF::from(VariantGet { try_, signature: Signature::variadic_any(Volatility::Immutable) }));
    let type_name = crate::types::spark_type_name(to);
    Some(datafusion::logical_expr::Expr::ScalarFunction(ScalarFunction::new_udf(
        udf,
        vec![value, datafusion::prelude::lit("$"), datafusion::prelude::lit(type_name)],
    )))
}

/// Each variant of `a` as JSON text (`to_json(v)`), NULL for NULL.
pub(crate) fn json_texts(a: &ArrayRef) -> Result<ArrayRef> {
    let mut out = arrow::array::StringBuilder::new();
    each_variant(a, |v| {
        match v {
            Some(v) => {
                let mut t = String::new();
                to_json(&v, &mut t)?;
                out.append_value(t);
            }
            None => out.append_null(),
        }
        Ok(())
    })?;
    Ok(Arc::new(out.finish()))
}

/// `variant_explode(v)` and `variant_explode_outer(v)` in FROM: a row per element of an array
/// or field of an object (`pos`, `key` — NULL for an array — and `value`); none for anything
/// else, or one row of NULLs for the `_outer` form. `v` is a constant here (a column of
/// another table, as in a lateral join, runs on the Spark backend).
#[derive(Debug)]
pub(crate) struct VariantExplode {
    pub(crate) outer: bool,
}

impl datafusion::catalog::TableFunctionImpl for VariantExplode {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> Result<Arc<dyn datafusion::catalog::TableProvider>> {
        let name = if self.outer { "variant_explode_outer" } else { "variant_explode" };
        let [arg] = args.exprs() else { return plan_err!("{name} takes one VARIANT") };
        let empty = datafusion::common::DFSchema::empty();
        let physical = args.session().create_physical_expr(arg.clone(), &empty)?;
        let one_row = arrow::record_batch::RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        let a = physical.evaluate(&one_row).map_err(|_| {
            datafusion::error::DataFusionError::Plan(format!(
                "{name} of a column runs on the Spark backend (natively its argument is a constant)"
            ))
        })?;
        let a = a.to_array(1)?;
        if !is_variant(a.data_type()) && a.data_type() != &DataType::Null {
            return plan_err!("{name} takes a VARIANT, not {}", crate::types::spark_type_name(a.data_type()));
        }
        let (mut pos, mut keys, mut values) = (Vec::new(), Vec::new(), Vec::new());
        if is_variant(a.data_type()) {
            let (s, value, metadata) = parts(&a)?;
            if let Some(v) = row(&s, &value, &metadata, 0)? {
                match v.basic_type()? {
                    OBJECT => {
                        for i in 0..v.object_size()? {
                            let (k, f) = v.field_at(i)?;
                            pos.push(Some(i as i32));
                            keys.push(Some(k.to_string()));
                            values.push(Some(f.sliced()?));
                        }
                    }
                    ARRAY => {
                        for i in 0..v.array_size()? {
                            pos.push(Some(i as i32));
                            keys.push(None);
                            values.push(Some(v.element_at(i)?.sliced()?));
                        }
                    }
                    _ => {}
                }
            }
        }
        if self.outer && pos.is_empty() {
            pos.push(None);
            keys.push(None);
            values.push(None);
        }
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("pos", DataType::Int32, self.outer),
            Field::new("key", DataType::Utf8, true),
            Field::new("value", variant_type(), self.outer),
        ]));
        let batch = arrow::record_batch::RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(arrow::array::Int32Array::from(pos)),
                Arc::new(arrow::array::StringArray::from(keys)),
                variant_array(values)?,
            ],
        )?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

#[cfg(test)]
mod tests {
    use super::encoding::DOUBLE;
    use super::get::Step;
    use super::schema::{json_shape, shape_of, strings_for_variants};
    use super::*;

    fn parsed(json: &str) -> (Vec<u8>, Vec<u8>) {
        parse_json(json).unwrap_or_else(|e| panic!("{json}: {e:?}"))
    }

    #[test]
    fn json_is_built_into_sparks_bytes() {
        // Each pair of bytes as Spark 4.1.4's `parse_json` answers it.
        assert_eq!(
            parsed(r#"{"a":1,"b":0.8}"#),
            (
                b"\x02\x02\x00\x01\x00\x02\x08\x0c\x01\x20\x01\x08\x00\x00\x00".to_vec(),
                b"\x01\x02\x00\x01\x02ab".to_vec()
            )
        );
        assert_eq!(
            parsed(r#"{"b":1,"a":[1,2.5e3,"x",null,true]}"#).0,
            b"\x02\x02\x01\x00\x02\x00\x19\x0c\x01\x03\x05\x00\x02\x0b\x0d\x0e\x0f\x0c\x01\x1c\x00\x00\x00\x00\x00\x88\xa3\x40\x05x\x00\x04"
                .to_vec()
        );
        assert_eq!(parsed("  12  "), (b"\x0c\x0c".to_vec(), b"\x01\x00\x00".to_vec()));
        assert_eq!(parsed("12345678901234567890").0[..2], *b"\x28\x00");
        assert_eq!(parsed("1234567890123456789012345678901234567890").0[0], primitive_header(DOUBLE));
        assert_eq!(parsed("-0.0").0, b"\x20\x01\x00\x00\x00\x00".to_vec());
        assert_eq!(parsed("1 2").0, b"\x0c\x01".to_vec());
    }

    #[test]
    fn malformed_json_and_duplicate_keys_are_refused() {
        for bad in ["01", "NaN", "[1,", r#"{"a":1,"a":2}"#, "12x", "", "\"a\nb\""] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_read_back_and_write_as_sparks_json() {
        let (v, m) = parsed(r#"{"a":1,"b":0.80,"c":[1e3,"x\n",null,1.0E-7],"d":{"z":true}}"#);
        let mut out = String::new();
        to_json(&Value::new(&v, &m).unwrap(), &mut out).unwrap();
        assert_eq!(out, r#"{"a":1,"b":0.8,"c":[1000.0,"x\n",null,1.0E-7],"d":{"z":true}}"#);
        let shape = shape_of(&Value::new(&v, &m).unwrap()).unwrap().to_string();
        assert_eq!(shape, "OBJECT<a: BIGINT, b: DECIMAL(1,1), c: ARRAY<VARIANT>, d: OBJECT<z: BOOLEAN>>");
    }

    #[test]
    fn shapes_merge_as_sparks_schema_inference() {
        let shape = |j: &str| {
            let (v, m) = parsed(j);
            shape_of(&Value::new(&v, &m).unwrap()).unwrap().to_string()
        };
        assert_eq!(shape("[1, 300, 70000, 5000000000, 1.5, 1.25, 12345678901.5]"), "ARRAY<DECIMAL(22,2)>");
        assert_eq!(shape("[[1],[1.5]]"), "ARRAY<ARRAY<DECIMAL(21,1)>>");
        assert_eq!(shape("[1.5, 1e2]"), "ARRAY<DOUBLE>");
        assert_eq!(shape(r#"[{"a":1}, {"b":"x"}]"#), "ARRAY<OBJECT<a: BIGINT, b: STRING>>");
        assert_eq!(shape(r#"[{"a":1}, {"a":"x"}]"#), "ARRAY<OBJECT<a: VARIANT>>");
        assert_eq!(shape("[]"), "ARRAY<VOID>");
        assert_eq!(shape("0.08"), "DECIMAL(2,2)");
        assert_eq!(shape(r#"{"x y": 1}"#), "OBJECT<`x y`: BIGINT>");
    }

    #[test]
    fn json_schemas_are_inferred_as_sparks() {
        // Each as Spark 4.1.4's schema_of_json answers.
        let schema = |j: &str| {
            let (v, m) = parsed(j);
            strings_for_variants(json_shape(&Value::new(&v, &m).unwrap()).unwrap())
                .to_string()
                .replace("OBJECT<", "STRUCT<")
        };
        assert_eq!(schema(r#"[{"col":0}]"#), "ARRAY<STRUCT<col: BIGINT>>");
        assert_eq!(
            schema(r#"{"b":1.5,"a":"x","c":null,"d":[],"e":true,"f":12345678901234567890,"g":{"z":[1,2.5]}}"#),
            "STRUCT<a: STRING, b: DOUBLE, c: STRING, d: ARRAY<STRING>, e: BOOLEAN, f: DECIMAL(20,0), g: STRUCT<z: ARRAY<DOUBLE>>>"
        );
        assert_eq!(schema("1"), "BIGINT");
        assert_eq!(schema("[null, 1]"), "ARRAY<BIGINT>");
        assert_eq!(schema(r#"[1,"a"]"#), "ARRAY<STRING>");
        assert_eq!(schema(r#"{"a b":1,"A":2,"a":3}"#), "STRUCT<A: BIGINT, a: BIGINT, `a b`: BIGINT>");
    }

    #[test]
    fn doubles_are_written_as_java_writes_them() {
        for (d, text) in [(1000.0, "1000.0"), (1e30, "1.0E30"), (1e-7, "1.0E-7"), (0.001, "0.001"), (1.5e7, "1.5E7")] {
            assert_eq!(java_double(d), text);
        }
        assert_eq!(java_double(1234567.0), "1234567.0");
        assert_eq!(java_double(-0.0), "-0.0");
    }

    #[test]
    fn paths_read_as_sparks() {
        assert_eq!(
            parse_path("$.a['b c'][1]"),
            Some(vec![Step::Key("a".into()), Step::Key("b c".into()), Step::Index(1)])
        );
        assert_eq!(parse_path("$"), Some(vec![]));
        for bad in ["a", "$[-1]", "$.", "$[x]", "$['a'"] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }
}
