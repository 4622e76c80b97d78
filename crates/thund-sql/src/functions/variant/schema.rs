//! Schemas of variants and of JSON: `schema_of_variant`, `schema_of_variant_agg`,
//! `schema_of_json`.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature,
};
use serde::{Deserialize, Serialize};

use crate::columnar::{columnar, utf8};

use super::encoding::{digits, parse_json, BuildError};
use super::value::{stripped, Scalar, Value};
use super::{each_variant, expect_variant};

/// The SQL type of a variant value, as `schema_of_variant` infers and merges them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) enum Shape {
    Void,
    Boolean,
    Bigint,
    Float,
    Double,
    Decimal(u8, u8),
    String,
    Date,
    Timestamp,
    TimestampNtz,
    Binary,
    Variant,
    Array(Box<Shape>),
    /// Fields in key order.
    Object(Vec<(String, Shape)>),
}

pub(super) fn shape_of(v: &Value) -> Result<Shape> {
    Ok(match v.scalar()? {
        Scalar::Object => {
            let mut fields = Vec::new();
            for i in 0..v.object_size()? {
                let (k, f) = v.field_at(i)?;
                fields.push((k.to_string(), shape_of(&f)?));
            }
            Shape::Object(fields)
        }
        Scalar::Array => {
            let mut element = Shape::Void;
            for i in 0..v.array_size()? {
                element = merge(element, shape_of(&v.element_at(i)?)?);
            }
            Shape::Array(Box::new(element))
        }
        Scalar::Null => Shape::Void,
        Scalar::Boolean(_) => Shape::Boolean,
        Scalar::Long(_) => Shape::Bigint,
        Scalar::Double(_) => Shape::Double,
        Scalar::Float(_) => Shape::Float,
        Scalar::Decimal(u, s) => {
            // Spark's `Decimal(bigDecimal.stripTrailingZeros)`: a precision below the scale is
            // raised to it, a negative scale folded into the precision.
            let (u, s) = stripped(u, s);
            let p = i32::from(digits(u));
            let (p, s) = if p < s {
                (s, s)
            } else if s < 0 {
                (p - s, 0)
            } else {
                (p, s)
            };
            if p > 38 {
                Shape::Double
            } else {
                Shape::Decimal(p as u8, s as u8)
            }
        }
        Scalar::String(_) => Shape::String,
        Scalar::Date(_) => Shape::Date,
        Scalar::Timestamp(_) => Shape::Timestamp,
        Scalar::TimestampNtz(_) => Shape::TimestampNtz,
        Scalar::Binary(_) => Shape::Binary,
    })
}

/// The tightest type of both, as Spark's JSON schema inference merges them, VARIANT when
/// there is none.
pub(super) fn merge(a: Shape, b: Shape) -> Shape {
    use Shape::*;
    let rank = |s: &Shape| match s {
        Bigint => Some(0),
        Float => Some(1),
        Double => Some(2),
        _ => None,
    };
    match (a, b) {
        (a, b) if a == b => a,
        (Void, x) | (x, Void) => x,
        (a, b) if rank(&a).is_some() && rank(&b).is_some() => {
            if rank(&a) > rank(&b) {
                a
            } else {
                b
            }
        }
        (Double, Decimal(..)) | (Decimal(..), Double) => Double,
        (Decimal(p1, s1), Decimal(p2, s2)) => {
            let scale = s1.max(s2);
            let range = (p1 - s1).max(p2 - s2);
            if u32::from(range) + u32::from(scale) > 38 {
                Double
            } else {
                Decimal(range + scale, scale)
            }
        }
        (Bigint, d @ Decimal(..)) | (d @ Decimal(..), Bigint) => merge(Decimal(20, 0), d),
        (Date, Timestamp) | (Timestamp, Date) | (TimestampNtz, Timestamp) | (Timestamp, TimestampNtz) => Timestamp,
        (Date, TimestampNtz) | (TimestampNtz, Date) => TimestampNtz,
        (Array(x), Array(y)) => Array(Box::new(merge(*x, *y))),
        (Object(x), Object(y)) => {
            let mut out: Vec<(std::string::String, Shape)> = Vec::with_capacity(x.len().max(y.len()));
            let (mut x, mut y) = (x.into_iter().peekable(), y.into_iter().peekable());
            loop {
                let order = match (x.peek(), y.peek()) {
                    (Some(a), Some(b)) => a.0.encode_utf16().cmp(b.0.encode_utf16()),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => break,
                };
                match order {
                    std::cmp::Ordering::Less => out.extend(x.next()),
                    std::cmp::Ordering::Greater => out.extend(y.next()),
                    std::cmp::Ordering::Equal => {
                        if let (Some((k, a)), Some((_, b))) = (x.next(), y.next()) {
                            out.push((k, merge(a, b)));
                        }
                    }
                }
            }
            Object(out)
        }
        _ => Variant,
    }
}

/// A key as Spark writes it in a type: bare when it is letters, digits and `_` (not digits
/// alone), else in backquotes.
pub(super) fn quoted(key: &str) -> String {
    let bare = !key.is_empty()
        && key.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !key.bytes().all(|c| c.is_ascii_digit());
    if bare {
        key.to_string()
    } else {
        format!("`{}`", key.replace('`', "``"))
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Void => f.write_str("VOID"),
            Shape::Boolean => f.write_str("BOOLEAN"),
            Shape::Bigint => f.write_str("BIGINT"),
            Shape::Float => f.write_str("FLOAT"),
            Shape::Double => f.write_str("DOUBLE"),
            Shape::Decimal(p, s) => write!(f, "DECIMAL({p},{s})"),
            Shape::String => f.write_str("STRING"),
            Shape::Date => f.write_str("DATE"),
            Shape::Timestamp => f.write_str("TIMESTAMP"),
            Shape::TimestampNtz => f.write_str("TIMESTAMP_NTZ"),
            Shape::Binary => f.write_str("BINARY"),
            Shape::Variant => f.write_str("VARIANT"),
            Shape::Array(e) => write!(f, "ARRAY<{e}>"),
            Shape::Object(fields) => {
                f.write_str("OBJECT<")?;
                for (i, (k, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {t}", quoted(k))?;
                }
                f.write_str(">")
            }
        }
    }
}

/// `schema_of_variant(v)`: the type of `v` as text (`OBJECT<a: BIGINT>`).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct SchemaOfVariant {
    pub(super) signature: Signature,
}

impl ScalarUDFImpl for SchemaOfVariant {
    fn name(&self) -> &str {
        "schema_of_variant"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        expect_variant(self.name(), &args[0])?;
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let mut out = arrow::array::StringBuilder::new();
        each_variant(&a, |v| {
            out.append_option(v.map(|v| shape_of(&v)).transpose()?.map(|shape| shape.to_string()));
            Ok(())
        })?;
        columnar(Arc::new(out.finish()), scalar)
    }
}

/// `schema_of_variant_agg(v)`: the merged type of a group's variants (`VOID` for none).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct SchemaOfVariantAgg {
    pub(super) signature: Signature,
}

impl AggregateUDFImpl for SchemaOfVariantAgg {
    fn name(&self) -> &str {
        "schema_of_variant_agg"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        expect_variant(self.name(), &args[0])?;
        Ok(DataType::Utf8)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "shape"), DataType::Utf8, true))])
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Merged { shape: Shape::Void }))
    }
}

#[derive(Debug)]
pub(super) struct Merged {
    shape: Shape,
}

impl Accumulator for Merged {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        each_variant(&values[0], |v| {
            if let Some(v) = v {
                let shape = std::mem::replace(&mut self.shape, Shape::Void);
                self.shape = merge(shape, shape_of(&v)?);
            }
            Ok(())
        })
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for s in utf8(&states[0])?.iter().flatten() {
            let other: Shape = serde_json::from_str(s)
                .or_else(|e| exec_err!("schema_of_variant_agg: a partial state does not read: {e}"))?;
            let shape = std::mem::replace(&mut self.shape, Shape::Void);
            self.shape = merge(shape, other);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let text = serde_json::to_string(&self.shape)
            .or_else(|e| exec_err!("schema_of_variant_agg: the state does not write: {e}"))?;
        Ok(vec![ScalarValue::Utf8(Some(text))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(Some(self.shape.to_string())))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// `schema_of_json(text)`: the type Spark's JSON schema inference gives a JSON text, as SQL
/// (`ARRAY<STRUCT<col: BIGINT>>`). It shares the variant's reading of the text and its merging
/// of types, with JSON inference's own rules on top: a number with a point or an exponent is a
/// DOUBLE, an integer beyond BIGINT a DECIMAL of its digits, and where two types have no common
/// one the answer is STRING (not VARIANT); a `null` alone is STRING. The text must be a literal,
/// as on Spark. Of the options, `allowNumericLeadingZeros` is kept (`01` reads as 1); the
/// others run on the Spark backend.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct SchemaOfJson {
    pub(super) signature: Signature,
}

/// `text` with the leading zeros of its numbers (outside strings) left out: `01` is `1`, `00.5`
/// is `0.5`, as Jackson reads them with `allowNumericLeadingZeros`.
pub(super) fn without_leading_zeros(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut in_string, mut i) = (String::with_capacity(text.len()), false, 0);
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            match c {
                '\\' if i + 1 < chars.len() => {
                    out.push(chars[i + 1]);
                    i += 1;
                }
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '0' && !out.ends_with(|p: char| p.is_ascii_digit() || p == '.' || p == 'e' || p == 'E') {
            // The start of a number: drop zeros that another digit follows.
            let mut j = i;
            while j + 1 < chars.len() && chars[j] == '0' && chars[j + 1].is_ascii_digit() {
                j += 1;
            }
            out.push(chars[j]);
            i = j;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// JSON inference's type of `v`.
pub(super) fn json_shape(v: &Value) -> Result<Shape> {
    Ok(match v.scalar()? {
        Scalar::Object => {
            let mut fields = Vec::new();
            for i in 0..v.object_size()? {
                let (k, f) = v.field_at(i)?;
                fields.push((k.to_string(), json_shape(&f)?));
            }
            Shape::Object(fields)
        }
        Scalar::Array => {
            let mut element = Shape::Void;
            for i in 0..v.array_size()? {
                element = merge(element, json_shape(&v.element_at(i)?)?);
            }
            Shape::Array(Box::new(element))
        }
        // An integer past BIGINT is held as a DECIMAL of scale 0; a number with a point keeps
        // its scale: JSON inference reads that one as a DOUBLE.
        Scalar::Decimal(u, 0) => Shape::Decimal(digits(u), 0),
        Scalar::Decimal(..) | Scalar::Double(_) => Shape::Double,
        _ => shape_of(v)?,
    })
}

/// `s` with VARIANT (no common type: JSON inference's fallback is STRING), and VOID (JSON's
/// `null` and `[]`'s element), as STRING, as JSON inference's canonical types have them; the
/// types are merged first, so `[null, 1]` is still an ARRAY<BIGINT>.
pub(super) fn strings_for_variants(s: Shape) -> Shape {
    match s {
        Shape::Variant | Shape::Void => Shape::String,
        Shape::Array(e) => Shape::Array(Box::new(strings_for_variants(*e))),
        Shape::Object(fields) => Shape::Object(fields.into_iter().map(|(k, t)| (k, strings_for_variants(t))).collect()),
        other => other,
    }
}

impl ScalarUDFImpl for SchemaOfJson {
    fn name(&self) -> &str {
        "schema_of_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t, options @ ..]
                if t.is_string() && options.len().is_multiple_of(2) && options.iter().all(DataType::is_string) =>
            {
                Ok(DataType::Utf8)
            }
            [_] => plan_err!("schema_of_json takes a STRING"),
            _ => plan_err!("schema_of_json's options must be a map of literal strings"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = match &args.args[0] {
            ColumnarValue::Scalar(s) => s.try_as_str().flatten().map(str::to_string),
            ColumnarValue::Array(_) => return exec_err!("schema_of_json's text must be a literal, as on Spark"),
        };
        let Some(mut text) = text else { return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None))) };
        let scalars = crate::functions::json_csv::value_text::scalar_arguments(&args.args[1..]);
        let options = crate::functions::json_csv::value_text::option_pairs("schema_of_json", &scalars)
            .or_else(|e| exec_err!("{e}"))?;
        for (key, value) in options {
            match (key.to_ascii_lowercase().as_str(), value.to_ascii_lowercase().as_str()) {
                ("allownumericleadingzeros", "true") => text = without_leading_zeros(&text),
                ("allownumericleadingzeros", "false") => {}
                _ => return exec_err!("schema_of_json's option `{key}` runs on the Spark backend"),
            }
        }
        let (value, metadata) = match parse_json(&text) {
            Ok(v) => v,
            Err(BuildError::DuplicateKey(k)) => {
                return exec_err!(
                    "schema_of_json of a text with the key `{k}` twice in an object runs on the Spark backend"
                )
            }
            Err(_) => return exec_err!("[MALFORMED_RECORD_IN_PARSING] schema_of_json: `{text}` is not JSON"),
        };
        let shape = strings_for_variants(json_shape(&Value::new(&value, &metadata)?)?);
        let sql = shape.to_string().replace("OBJECT<", "STRUCT<");
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(sql))))
    }
}
