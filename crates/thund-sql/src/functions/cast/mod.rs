//! Spark's casts where Arrow's answer otherwise, in both of Spark's modes.
//!
//! From text, Spark trims white space and reads integers, booleans, floating point and dates by
//! its own rules (`' 12 '` is 12, `'yes'` is true, `'1.5D'` is 1.5, `'2024-1'` is 2024-01-01),
//! where Arrow's cast fails or reads otherwise. A text that does not read is an error in ANSI
//! mode and NULL without it (and always NULL for `try_cast`). Without ANSI mode, Spark also
//! reads `'7.9'` as the INT 7 (the fraction cut off).
//!
//! Between numbers, without ANSI mode, Spark narrows an integer by keeping its low bits (300 is
//! the TINYINT 44), a floating-point number by saturating (NaN is 0) and a decimal by cutting the
//! fraction and keeping the low bits; Arrow's cast gives NULL or fails. In ANSI mode those fail
//! with Spark's `[CAST_OVERFLOW]`, naming the value.
//!
//! To a DECIMAL, text and floating point are read as Java's `BigDecimal` reads them and rounded
//! half up (`decimals`); a value whose digits do not fit is NULL without ANSI mode and Spark's
//! `[NUMERIC_VALUE_OUT_OF_RANGE]` with it (Arrow's cast fails in both).
//!
//! Each rule was read off a Spark 4.1.4 server, both modes; `thund-cli/tests/spark_queries`
//! holds the cases.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, PrimitiveArray, StringArray};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{exec_err, DFSchema, Result};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use crate::functions::variant::{java_double, java_float};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

use crate::declare::Function;

pub(crate) mod datetime_numbers;

/// Spark's casts written as functions.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::spelled("date", &[(1, "CAST(__a1 AS DATE)")]),
    Function::spelled("timestamp", &[(1, "CAST(__a1 AS TIMESTAMP)")]),
    Function::spelled("double", &[(1, "CAST(__a1 AS DOUBLE)")]),
    Function::spelled("float", &[(1, "CAST(__a1 AS FLOAT)")]),
    Function::spelled("int", &[(1, "CAST(__a1 AS INT)")]),
    Function::spelled("bigint", &[(1, "CAST(__a1 AS BIGINT)")]),
    Function::spelled("smallint", &[(1, "CAST(__a1 AS SMALLINT)")]),
    Function::spelled("tinyint", &[(1, "CAST(__a1 AS TINYINT)")]),
    Function::spelled("boolean", &[(1, "CAST(__a1 AS BOOLEAN)")]),
    Function::spelled("string", &[(1, "CAST(__a1 AS STRING)")]),
];

/// What a value that does not convert gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum OnInvalid {
    Null,
    Error,
}

/// The cast of `value` (of type `from`) to `to` as Spark casts it, when it differs from Arrow's:
/// `try_` for `try_cast`, `ansi` for the mode.
pub(crate) fn spark_cast(value: Expr, from: &DataType, to: &DataType, try_: bool, ansi: bool) -> Option<Expr> {
    if crate::functions::variant::is_variant(from) {
        return crate::functions::variant::cast_expr(value, to, try_);
    }
    let integral = matches!(to, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64);
    let from_text = matches!(from, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    let instant = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()));
    let read = from_text
        && (integral
            || matches!(to, DataType::Boolean | DataType::Float64 | DataType::Float32 | DataType::Date32)
            || to == &instant);
    // Narrowing between numbers: without ANSI mode by Spark's rules, in ANSI mode failing with
    // Spark's error (not for try_cast, whose overflow is NULL in both modes, as Arrow's safe cast
    // gives).
    let narrow = !try_ && integral && from.is_numeric() && integer_digits(from) > integer_digits(to);
    // To a DECIMAL: text and floating point through `BigDecimal`, and an overflow NULL or
    // Spark's error (Arrow's cast fails on both and reads floating point by its binary value).
    let decimal = match to {
        DataType::Decimal128(p, s) => {
            from_text
                || from.is_floating()
                || from == &DataType::Boolean
                || (from.is_numeric() && integer_digits(from) + i32::from(*s) >= i32::from(*p))
        }
        _ => false,
    };
    // Floating point and timestamps as text: Java's `Double.toString` (`1.0E20`, Arrow `1e20`)
    // and Spark's `2024-01-02 03:04:05.5` (Arrow `2024-01-02T03:04:05.500Z`).
    let shown = (matches!(from, DataType::Timestamp(..)) || from.is_floating()) && to.is_string();
    if !read && !narrow && !decimal && !shown {
        return None;
    }
    let on_invalid = if try_ || !ansi { OnInvalid::Null } else { OnInvalid::Error };
    let udf = ScalarUDF::from(SparkCast {
        to: to.clone(),
        on_invalid,
        truncate: !ansi,
        signature: Signature::any(1, Volatility::Immutable),
    });
    Some(Expr::ScalarFunction(ScalarFunction { func: Arc::new(udf), args: vec![value] }))
}

/// `x` (a DECIMAL) as the DECIMAL `to` of a smaller scale, rounded half up as a cast rounds, by
/// a function rather than a cast: DataFusion's optimizer reads a comparison of a cast with a
/// literal as the uncast value compared with the literal cast back (`unwrap_cast_in_comparison`),
/// which is wrong where the cast rounds (`CAST(-0.325365 AS DECIMAL(38,0)) <=> 0` is true on
/// Spark; `-0.325365 <=> 0.000000` is not).
pub(crate) fn rounded_decimal(x: Expr, to: DataType) -> Expr {
    let cast = SparkCast {
        to,
        on_invalid: OnInvalid::Null,
        truncate: false,
        signature: Signature::any(1, Volatility::Immutable),
    };
    Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(cast)),
        vec![x],
    ))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkCast {
    to: DataType,
    on_invalid: OnInvalid,
    /// Whether a text's fraction is cut off for an integer (`'7.9'` is 7), as without ANSI mode.
    truncate: bool,
    signature: Signature,
}

impl ScalarUDFImpl for SparkCast {
    fn name(&self) -> &str {
        match self.on_invalid {
            OnInvalid::Null => "try_cast",
            OnInvalid::Error => "cast",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.to.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(args.number_rows)?;
        let out: ArrayRef = if let DataType::Decimal128(p, s) = self.to {
            self.decimals(&values, p, s)?
        } else if self.to.is_string() {
            arrow::compute::cast(&as_text(&values)?, &self.to)?
        } else if values.data_type().is_numeric() && self.truncate {
            narrowed(&values, &self.to)?
        } else if values.data_type().is_numeric() {
            self.checked(&values, "CAST_OVERFLOW")?
        } else {
            let text = arrow::compute::cast(&values, &DataType::Utf8)?;
            let text = text.as_string::<i32>();
            match &self.to {
                DataType::Int8 => Arc::new(self.read::<Int8Type>(text, |s| self.integer::<Int8Type>(s))?),
                DataType::Int16 => Arc::new(self.read::<Int16Type>(text, |s| self.integer::<Int16Type>(s))?),
                DataType::Int32 => Arc::new(self.read::<Int32Type>(text, |s| self.integer::<Int32Type>(s))?),
                DataType::Int64 => Arc::new(self.read::<Int64Type>(text, |s| self.integer::<Int64Type>(s))?),
                DataType::Float64 => Arc::new(self.read::<Float64Type>(text, floating)?),
                DataType::Float32 => Arc::new(self.read::<Float32Type>(text, |s| floating(s).map(|v| v as f32))?),
                DataType::Date32 => Arc::new(self.read::<Date32Type>(text, date)?),
                DataType::Timestamp(..) => Arc::new(crate::functions::datetime::timestamp_text::instants(
                    text,
                    self.on_invalid == OnInvalid::Null,
                )?),
                DataType::Boolean => {
                    let mut out = Vec::with_capacity(text.len());
                    for v in text.iter() {
                        out.push(match v {
                            None => None,
                            Some(s) => match boolean(s) {
                                Some(b) => Some(b),
                                None => self.invalid(s)?,
                            },
                        });
                    }
                    Arc::new(BooleanArray::from(out))
                }
                other => return exec_err!("internal error: no Spark cast of text to {other}"),
            }
        };
        crate::columnar::columnar(out, scalar)
    }
}

impl SparkCast {
    /// Each text of `text` read by `parse`: NULL where it does not read, or an error.
    fn read<T: ArrowPrimitiveType>(
        &self,
        text: &arrow::array::StringArray,
        parse: impl Fn(&str) -> Option<T::Native>,
    ) -> Result<PrimitiveArray<T>> {
        let mut out = Vec::with_capacity(text.len());
        for v in text.iter() {
            out.push(match v {
                None => None,
                Some(s) => match parse(s) {
                    Some(x) => Some(x),
                    None => self.invalid(s)?,
                },
            });
        }
        Ok(out.into_iter().collect())
    }

    fn invalid<T>(&self, text: &str) -> Result<Option<T>> {
        match self.on_invalid {
            OnInvalid::Null => Ok(None),
            OnInvalid::Error => exec_err!(
                "[CAST_INVALID_INPUT] the value '{text}' of the type STRING cannot be cast to {}: {}",
                crate::types::spark_type_name(&self.to),
                crate::modes::ansi_hint(Some("try_cast"))
            ),
        }
    }

    /// `values` in this DECIMAL(precision, scale), rounded half up as Spark rounds.
    fn decimals(&self, values: &ArrayRef, precision: u8, scale: i8) -> Result<ArrayRef> {
        let fitted: Decimal128Array = match values.data_type() {
            DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
                let text = arrow::compute::cast(values, &DataType::Utf8)?;
                let mut out = Vec::with_capacity(text.len());
                for v in text.as_string::<i32>().iter() {
                    out.push(match v {
                        None => None,
                        Some(s) => match crate::functions::decimal::read(s) {
                            crate::functions::decimal::Read::Number(n) => match n.fit(precision, scale) {
                                Some(v) => Some(v),
                                None => self.out_of_range(s)?,
                            },
                            crate::functions::decimal::Read::Invalid => self.invalid(s)?,
                            crate::functions::decimal::Read::Unknown(c) => {
                                return exec_err!(
                                    "the text '{s}' has a digit '{c}' (U+{:04X}) of a script read only on the Spark \
                                     backend",
                                    u32::from(c)
                                )
                            }
                        },
                    });
                }
                out.into_iter().collect()
            }
            DataType::Float32 | DataType::Float64 => {
                let doubles = arrow::compute::cast(values, &DataType::Float64)?;
                let mut out = Vec::with_capacity(doubles.len());
                for v in doubles.as_primitive::<Float64Type>().iter() {
                    out.push(match v {
                        // NaN and the infinities are NULL in both modes, as on Spark.
                        Some(v) if v.is_finite() => {
                            match crate::functions::decimal::of_double(v).and_then(|n| n.fit(precision, scale)) {
                                Some(v) => Some(v),
                                None => self.out_of_range(&v.to_string())?,
                            }
                        }
                        _ => None,
                    });
                }
                out.into_iter().collect()
            }
            DataType::Boolean => {
                let ints = arrow::compute::cast(values, &DataType::Int8)?;
                return self.checked(&ints, "NUMERIC_VALUE_OUT_OF_RANGE");
            }
            // Integers and decimals: Arrow's cast rounds half up, as Spark does.
            _ => return self.checked(values, "NUMERIC_VALUE_OUT_OF_RANGE"),
        };
        Ok(Arc::new(fitted.with_precision_and_scale(precision, scale)?))
    }

    /// `values` by Arrow's cast, a value that does not fit NULL, or in ANSI mode Spark's error
    /// (`class`) naming the first one.
    fn checked(&self, values: &ArrayRef, class: &str) -> Result<ArrayRef> {
        let options = arrow::compute::CastOptions { safe: true, ..Default::default() };
        let out = arrow::compute::cast_with_options(values, &self.to, &options)?;
        if self.on_invalid == OnInvalid::Error && out.null_count() != values.null_count() {
            if let Some(i) = (0..values.len()).find(|i| values.is_valid(*i) && out.is_null(*i)) {
                let shown = arrow::util::display::array_value_to_string(values, i)?;
                let from = crate::types::spark_type_name(values.data_type());
                return match class {
                    "CAST_OVERFLOW" => exec_err!(
                        "[CAST_OVERFLOW] the value {shown} of the type {from} cannot be cast to {} due to an \
                         overflow: {}",
                        crate::types::spark_type_name(&self.to),
                        crate::modes::ansi_hint(Some("try_cast"))
                    ),
                    // In ANSI mode, `out_of_range` is Spark's error.
                    _ => self.out_of_range::<()>(&shown).map(|_| out),
                };
            }
        }
        Ok(out)
    }

    /// A number that does not fit the DECIMAL: NULL, or Spark's error.
    fn out_of_range<T>(&self, shown: &str) -> Result<Option<T>> {
        match self.on_invalid {
            OnInvalid::Null => Ok(None),
            OnInvalid::Error => exec_err!(
                "[NUMERIC_VALUE_OUT_OF_RANGE] {} cannot be represented as {}: {}",
                shown.trim(),
                crate::types::spark_type_name(&self.to),
                crate::modes::ansi_hint(Some("try_cast"))
            ),
        }
    }

    /// An integer as Spark reads one: white space around, a sign, digits, and without ANSI mode
    /// a fraction that is cut off; `None` if it does not read or does not fit.
    fn integer<T: ArrowPrimitiveType>(&self, s: &str) -> Option<T::Native>
    where
        T::Native: TryFrom<i64>,
    {
        let s = s.trim_matches(|c: char| c.is_whitespace() || c.is_control());
        let (whole, fraction) = match s.split_once('.') {
            Some((w, f)) if self.truncate => (w, Some(f)),
            Some(_) => return None,
            None => (s, None),
        };
        let digits = whole.strip_prefix(['+', '-']).unwrap_or(whole);
        let fraction_ok = fraction.is_none_or(|f| f.bytes().all(|b| b.is_ascii_digit()));
        if !fraction_ok || (digits.is_empty() && fraction.is_none_or(str::is_empty)) {
            return None;
        }
        if !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: i64 = if digits.is_empty() { 0 } else { whole.parse().ok()? };
        T::Native::try_from(value).ok()
    }
}

/// A floating-point number as Spark reads one: white space around, Java's forms (a trailing
/// `d`/`f` allowed), `Infinity`, `inf` and `NaN` in any case.
pub(crate) fn floating(s: &str) -> Option<f64> {
    let s = s.trim_matches(|c: char| c.is_whitespace() || c.is_control());
    let body = match s.strip_suffix(['d', 'D', 'f', 'F']) {
        Some(b) if b.ends_with(|c: char| c.is_ascii_digit() || c == '.') => b,
        _ => s,
    };
    let lower = body.to_ascii_lowercase();
    let unsigned = lower.strip_prefix(['+', '-']).unwrap_or(&lower);
    if unsigned.is_empty()
        || !(unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
            || ["inf", "infinity", "nan"].contains(&unsigned))
    {
        return None;
    }
    lower.parse().ok()
}

/// A boolean as Spark reads one (white space around, any case).
pub(crate) fn boolean(s: &str) -> Option<bool> {
    match s.trim().to_ascii_lowercase().as_str() {
        "t" | "true" | "y" | "yes" | "1" => Some(true),
        "f" | "false" | "n" | "no" | "0" => Some(false),
        _ => None,
    }
}

/// A date as Spark reads one, in days since the epoch: `yyyy`, `yyyy-[m]m` or `yyyy-[m]m-[d]d`,
/// the last followed by anything after a space or `T` (a time), white space around.
pub(crate) fn date(s: &str) -> Option<i32> {
    let s = s.trim();
    let (day_part, rest) = match s.find([' ', 'T']) {
        Some(i) => (&s[..i], Some(&s[i..])),
        None => (s, None),
    };
    let parts: Vec<&str> = day_part.split('-').collect();
    if rest.is_some() && parts.len() != 3 {
        return None;
    }
    let field = |p: &str, widths: std::ops::RangeInclusive<usize>| {
        (widths.contains(&p.len()) && p.bytes().all(|b| b.is_ascii_digit())).then(|| p.parse::<u32>().ok()).flatten()
    };
    let year = field(parts.first()?, 4..=4)? as i32;
    let month = match parts.get(1) {
        Some(m) => field(m, 1..=2)?,
        None => 1,
    };
    let day = match parts.get(2) {
        Some(d) => field(d, 1..=2)?,
        None => 1,
    };
    if parts.len() > 3 {
        return None;
    }
    let d = chrono::NaiveDate::from_ymd_opt(year, month, day)?;
    Some((d - chrono::NaiveDate::from_ymd_opt(1970, 1, 1)?).num_days() as i32)
}

/// Values as Spark's cast to STRING writes them: floating point as Java writes it, timestamps
/// as `timestamps_as_text`, anything else (integers, decimals, booleans, dates) as Arrow's cast,
/// which writes them as Spark does.
pub(crate) fn as_text(values: &ArrayRef) -> Result<ArrayRef> {
    Ok(match values.data_type() {
        DataType::Timestamp(..) => timestamps_as_text(values)?,
        DataType::Float32 => {
            let text: StringArray = values.as_primitive::<Float32Type>().iter().map(|v| v.map(java_float)).collect();
            Arc::new(text)
        }
        DataType::Float16 | DataType::Float64 => {
            let doubles = arrow::compute::cast(values, &DataType::Float64)?;
            let text: StringArray = doubles.as_primitive::<Float64Type>().iter().map(|v| v.map(java_double)).collect();
            Arc::new(text)
        }
        _ => arrow::compute::cast(values, &DataType::Utf8)?,
    })
}

/// Spark's text for the casts to a string that DataFusion's type coercion adds (an argument of
/// `concat`, `lpad` or `||`, a side of a UNION of text and numbers): without it
/// `concat('a', 1e20)` would be `a1e20` (Spark: `a1.0E20`) and a timestamp's text
/// `2024-01-01T10:00:00Z`. It runs after the built-in analyzer rules, so it sees their casts;
/// the query's own casts were given Spark's form before (`fidelity`).
#[derive(Debug)]
pub(crate) struct SparkText;

impl AnalyzerRule for SparkText {
    fn name(&self) -> &str {
        "spark_text"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let ansi = crate::modes::SqlModes::of(config).ansi;
        let plan = plan.transform_up_with_subqueries(|node| {
            let schema = crate::declare::merged_input_schema(&node);
            let names = NamePreserver::new(&node);
            let node = node.map_expressions(|e| {
                let saved = names.save(&e);
                let rewritten = e.transform_up(|e| shown_as_spark(e, &schema, ansi))?;
                Ok(rewritten.update_data(|e| saved.restore(e)))
            })?;
            if node.transformed {
                node.map_data(|p| p.recompute_schema())
            } else {
                Ok(node)
            }
        })?;
        Ok(plan.data)
    }
}

/// A cast's operand, target type and whether it is a `try_cast`; `None` for any other `e`.
pub(crate) fn cast_parts(e: &Expr) -> Option<(&Expr, &DataType, bool)> {
    match e {
        Expr::Cast(c) => Some((c.expr.as_ref(), c.field.data_type(), false)),
        Expr::TryCast(c) => Some((c.expr.as_ref(), c.field.data_type(), true)),
        _ => None,
    }
}

/// `e` with Spark's text when it is a cast of floating point or a timestamp to a string.
fn shown_as_spark(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    let Some((inner, to, try_)) = cast_parts(&e) else { return Ok(Transformed::no(e)) };
    let Ok(from) = inner.get_type(schema) else { return Ok(Transformed::no(e)) };
    if !to.is_string() || !(from.is_floating() || matches!(from, DataType::Timestamp(..))) {
        return Ok(Transformed::no(e));
    }
    Ok(match spark_cast(inner.clone(), &from, to, try_, ansi) {
        Some(cast) => Transformed::yes(cast),
        None => Transformed::no(e),
    })
}

/// Timestamps as Spark writes them as text: `2024-01-02 03:04:05`, with the fraction of a second
/// when there is one, without trailing zeros (`…:05.5`); in the session zone (UTC).
fn timestamps_as_text(values: &ArrayRef) -> Result<ArrayRef> {
    let micros = arrow::compute::cast(values, &DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None))?;
    let micros = micros.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
    let text: arrow::array::StringArray = micros
        .iter()
        .map(|v| {
            let at = chrono::DateTime::from_timestamp_micros(v?)?.naive_utc();
            let mut shown = at.format("%Y-%m-%d %H:%M:%S").to_string();
            let fraction = at.and_utc().timestamp_subsec_micros();
            if fraction != 0 {
                shown.push_str(format!(".{fraction:06}").trim_end_matches('0'));
            }
            Some(shown)
        })
        .collect();
    Ok(Arc::new(text))
}

/// How many digits a number of this type may have left of the point (a floating-point number
/// any number).
fn integer_digits(t: &DataType) -> i32 {
    match t {
        DataType::Int8 => 3,
        DataType::Int16 => 5,
        DataType::Int32 => 10,
        DataType::Int64 => 19,
        DataType::Decimal128(p, s) => i32::from(*p) - i32::from(*s),
        DataType::Decimal256(p, s) => i32::from(*p) - i32::from(*s),
        _ => i32::MAX,
    }
}

/// Numbers narrowed to an integer type as Spark does without ANSI mode.
fn narrowed(values: &ArrayRef, to: &DataType) -> Result<ArrayRef> {
    // Every number as an i64 (integers and decimals wrapped, floating point saturated), then
    // its low bits.
    let wide: PrimitiveArray<Int64Type> = match values.data_type() {
        DataType::Float32 | DataType::Float64 => {
            let f = arrow::compute::cast(values, &DataType::Float64)?;
            let f = f.as_primitive::<Float64Type>();
            match to {
                // Saturated at the target's own bounds (Java's conversion to int or long).
                DataType::Int64 => f.unary(|v| v as i64),
                _ => f.unary(|v| i64::from(v as i32)),
            }
        }
        DataType::Decimal128(_, scale) => {
            let d = values.as_primitive::<arrow::datatypes::Decimal128Type>();
            let divisor = 10i128.pow(u32::from(*scale as u8));
            d.unary(|v| (v / divisor) as i64)
        }
        _ => arrow::compute::cast(values, &DataType::Int64)?.as_primitive::<Int64Type>().clone(),
    };
    let out: ArrayRef = match to {
        DataType::Int8 => Arc::new(wide.unary::<_, Int8Type>(|v| v as i8)),
        DataType::Int16 => Arc::new(wide.unary::<_, Int16Type>(|v| v as i16)),
        DataType::Int32 => Arc::new(wide.unary::<_, Int32Type>(|v| v as i32)),
        _ => Arc::new(wide),
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_read_as_sparks_casts_read_them() {
        let cast = |truncate| SparkCast {
            to: DataType::Int32,
            on_invalid: OnInvalid::Null,
            truncate,
            signature: Signature::any(1, Volatility::Immutable),
        };
        let int = |s: &str, truncate| cast(truncate).integer::<Int32Type>(s);
        assert_eq!(int(" 12 ", false), Some(12));
        assert_eq!(int("+5", false), Some(5));
        assert_eq!(int("1.5", false), None);
        assert_eq!(int("1.5", true), Some(1));
        assert_eq!(int(" -7.9 ", true), Some(-7));
        assert_eq!(int(".5", true), Some(0));
        assert_eq!(int("1.", true), Some(1));
        assert_eq!(int("1e3", true), None);
        assert_eq!(int("", true), None);
        assert_eq!(int("2147483648", true), None);
        assert_eq!(floating("1.5D"), Some(1.5));
        assert_eq!(floating(" 2 "), Some(2.0));
        assert_eq!(floating("-Infinity"), Some(f64::NEG_INFINITY));
        assert_eq!(floating("1,5"), None);
        assert_eq!(boolean(" YES "), Some(true));
        assert_eq!(boolean("on"), None);
        let day = |y, m, d| date(&format!("{y:04}-{m:02}-{d:02}"));
        assert_eq!(date("2024"), day(2024, 1, 1));
        assert_eq!(date("2024-1-5"), day(2024, 1, 5));
        assert_eq!(date("2024-01-05T10:00"), day(2024, 1, 5));
        assert_eq!(date("2024-01-05 junk"), day(2024, 1, 5));
        assert_eq!(date("20240105"), None);
        assert_eq!(date("2023-02-29"), None);
    }
}
