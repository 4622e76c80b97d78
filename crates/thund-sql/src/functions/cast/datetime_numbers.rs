//! Spark's casts between datetimes and numbers. Arrow casts a timestamp to and from its count of
//! microseconds and a date to its count of days; Spark counts seconds, and allows fewer casts:
//!
//! - TIMESTAMP to an integer is its seconds rounded down (`1969-12-31 23:59:59.5` is -1); to a
//!   narrower integer than BIGINT an overflow fails in ANSI mode and is NULL without it. To
//!   DOUBLE or FLOAT its seconds with their fraction; to a DECIMAL its seconds with six digits of
//!   fraction rounded half up to the scale, failing (ANSI) or NULL where the digits do not fit.
//! - An integer to TIMESTAMP is that many seconds (saturating); a floating-point number, its
//!   seconds cut to microseconds (NaN and infinities fail in ANSI mode, NULL without it; an
//!   overflow fails in ANSI mode and saturates without it); a DECIMAL, its seconds cut to
//!   microseconds, keeping the low 64 bits as Java's `BigDecimal.longValue` does.
//! - BOOLEAN and TIMESTAMP cast to each other only without ANSI mode (`true` is one microsecond).
//! - DATE to a number or BOOLEAN is NULL without ANSI mode and refused with it, and by
//!   `try_cast` in both; a number or BOOLEAN to DATE, and TIMESTAMP_NTZ to or from a number, are
//!   refused in both modes.
//!
//! Each rule was read off a Spark 4.1.4 server in both modes.

use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, PrimitiveArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{
    DataType, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::{exec_err, DataFusionError, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

const MICROS: i64 = 1_000_000;

/// Spark's cast of `value` from `from` to `to` where one is a datetime and the other a number
/// or BOOLEAN; `None` where neither is. An error where Spark refuses the cast.
pub(crate) fn rule(value: &Expr, from: &DataType, to: &DataType, try_: bool, ansi: bool) -> Result<Option<Expr>> {
    let number = |t: &DataType| t.is_numeric();
    let instant = |t: &DataType| matches!(t, DataType::Timestamp(TimeUnit::Microsecond, Some(_)));
    let local = |t: &DataType| matches!(t, DataType::Timestamp(_, None));
    let refuse = || -> Result<Option<Expr>> {
        Err(DataFusionError::Plan(format!(
            "[DATATYPE_MISMATCH.CAST_WITHOUT_SUGGESTION] cannot cast \"{}\" to \"{}\"{}",
            crate::types::spark_type_name(from),
            crate::types::spark_type_name(to),
            if ansi { " (with ANSI mode on)" } else { "" }
        )))
    };
    let cast_to = |direction: Direction| {
        let on_invalid = if try_ || !ansi { OnInvalid::Null } else { OnInvalid::Error };
        let udf = ScalarUDF::from(DatetimeCast {
            to: to.clone(),
            direction,
            on_invalid,
            signature: Signature::any(1, Volatility::Immutable),
        });
        Ok(Some(Expr::ScalarFunction(ScalarFunction { func: Arc::new(udf), args: vec![value.clone()] })))
    };
    match (from, to) {
        (f, t) if (local(f) && (number(t) || t == &DataType::Boolean)) || (local(t) && number(f)) => refuse(),
        (DataType::Date32, t) if number(t) || t == &DataType::Boolean => {
            if ansi || try_ {
                refuse()
            } else {
                Ok(Some(Expr::Literal(ScalarValue::try_from(t)?, None)))
            }
        }
        (f, DataType::Date32) if number(f) || f == &DataType::Boolean => refuse(),
        (f, t) if instant(f) && (number(t) || t == &DataType::Boolean) => {
            if t == &DataType::Boolean && ansi {
                return refuse();
            }
            cast_to(Direction::FromTimestamp)
        }
        (f, t) if instant(t) && (number(f) || f == &DataType::Boolean) => {
            if f == &DataType::Boolean && ansi {
                return refuse();
            }
            cast_to(Direction::ToTimestamp)
        }
        _ => Ok(None),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Direction {
    FromTimestamp,
    ToTimestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum OnInvalid {
    Null,
    Error,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DatetimeCast {
    to: DataType,
    direction: Direction,
    on_invalid: OnInvalid,
    signature: Signature,
}

impl ScalarUDFImpl for DatetimeCast {
    fn name(&self) -> &str {
        match self.on_invalid {
            OnInvalid::Null => "try_cast",
            OnInvalid::Error => "cast",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(self.to.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let input = args.args[0].to_array(args.number_rows)?;
        let out = match self.direction {
            Direction::FromTimestamp => self.of_timestamp(input.as_primitive::<TimestampMicrosecondType>())?,
            Direction::ToTimestamp => self.to_timestamp(&input)?,
        };
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(out))
    }
}

impl DatetimeCast {
    fn overflow<T>(&self, what: &str) -> Result<Option<T>> {
        match self.on_invalid {
            OnInvalid::Null => Ok(None),
            OnInvalid::Error => exec_err!(
                "[CAST_OVERFLOW] The value {what} cannot be cast to \"{}\" due to an overflow. {}",
                crate::types::spark_type_name(&self.to),
                crate::modes::ansi_hint(Some("try_cast"))
            ),
        }
    }

    fn of_timestamp(&self, micros: &TimestampMicrosecondArray) -> Result<ArrayRef> {
        let seconds = |m: i64| m.div_euclid(MICROS);
        let each = |f: &dyn Fn(i64) -> Result<Option<i128>>| -> Result<Vec<Option<i128>>> {
            micros.iter().map(|m| m.map_or(Ok(None), f)).collect()
        };
        let integer = |min: i64, max: i64| {
            each(&|m| {
                let s = seconds(m);
                if (min..=max).contains(&s) {
                    Ok(Some(i128::from(s)))
                } else {
                    self.overflow(&format!("of {m} microseconds"))
                }
            })
        };
        Ok(match &self.to {
            DataType::Int8 => narrow::<Int8Type>(integer(i8::MIN.into(), i8::MAX.into())?),
            DataType::Int16 => narrow::<Int16Type>(integer(i16::MIN.into(), i16::MAX.into())?),
            DataType::Int32 => narrow::<Int32Type>(integer(i32::MIN.into(), i32::MAX.into())?),
            DataType::Int64 => narrow::<Int64Type>(integer(i64::MIN, i64::MAX)?),
            DataType::Float64 => {
                Arc::new(micros.iter().map(|m| m.map(|m| m as f64 / 1e6)).collect::<PrimitiveArray<Float64Type>>())
            }
            DataType::Float32 => Arc::new(
                micros.iter().map(|m| m.map(|m| (m as f64 / 1e6) as f32)).collect::<PrimitiveArray<Float32Type>>(),
            ),
            DataType::Decimal128(p, s) => {
                let (p, s) = (*p, *s);
                let values = each(&|m| {
                    let v = rescale(i128::from(m), 6, i32::from(s));
                    match v {
                        Some(v) if v.unsigned_abs() < 10u128.pow(u32::from(p)) => Ok(Some(v)),
                        _ => self.overflow(&format!("of {m} microseconds")),
                    }
                })?;
                Arc::new(Decimal128Array::from(values).with_precision_and_scale(p, s)?)
            }
            DataType::Boolean => Arc::new(micros.iter().map(|m| m.map(|m| m != 0)).collect::<BooleanArray>()),
            other => return exec_err!("no cast from TIMESTAMP to {other}"),
        })
    }

    fn to_timestamp(&self, input: &ArrayRef) -> Result<ArrayRef> {
        let integer = |s: Option<i64>| s.map(|s| s.saturating_mul(MICROS));
        let float = |d: Option<f64>| -> Result<Option<i64>> {
            let Some(d) = d else { return Ok(None) };
            if !d.is_finite() {
                return match self.on_invalid {
                    OnInvalid::Null => Ok(None),
                    OnInvalid::Error => exec_err!(
                        "[CAST_INVALID_INPUT] The value {d} of the type \"DOUBLE\" cannot be cast to \"TIMESTAMP\" because it is malformed. {}",
                        crate::modes::ansi_hint(Some("try_cast"))
                    ),
                };
            }
            let micros = d * 1e6;
            if self.on_invalid == OnInvalid::Error && !(i64::MIN as f64..=i64::MAX as f64).contains(&micros) {
                return exec_err!(
                    "[CAST_OVERFLOW] The value {d} of the type \"DOUBLE\" cannot be cast to \"BIGINT\" due to an overflow. {}",
                    crate::modes::ansi_hint(Some("try_cast"))
                );
            }
            // (Rust's conversion saturates, as Java's does.)
            Ok(Some(micros as i64))
        };
        let micros: Vec<Option<i64>> = match input.data_type() {
            DataType::Int8 => input.as_primitive::<Int8Type>().iter().map(|v| integer(v.map(i64::from))).collect(),
            DataType::Int16 => input.as_primitive::<Int16Type>().iter().map(|v| integer(v.map(i64::from))).collect(),
            DataType::Int32 => input.as_primitive::<Int32Type>().iter().map(|v| integer(v.map(i64::from))).collect(),
            DataType::Int64 => input.as_primitive::<Int64Type>().iter().map(integer).collect(),
            DataType::Float64 => input.as_primitive::<Float64Type>().iter().map(float).collect::<Result<_>>()?,
            DataType::Float32 => {
                input.as_primitive::<Float32Type>().iter().map(|v| float(v.map(f64::from))).collect::<Result<_>>()?
            }
            DataType::Decimal128(_, s) => {
                let s = i32::from(*s);
                input
                    .as_primitive::<arrow::datatypes::Decimal128Type>()
                    .iter()
                    .map(|v| v.map(|v| cut_to_micros(v, s)))
                    .collect()
            }
            DataType::Boolean => input.as_boolean().iter().map(|b| b.map(i64::from)).collect(),
            DataType::Null => vec![None; input.len()],
            other => return exec_err!("no cast from {other} to TIMESTAMP"),
        };
        let array = TimestampMicrosecondArray::from(micros);
        Ok(match &self.to {
            DataType::Timestamp(_, tz) => Arc::new(array.with_timezone_opt(tz.clone())),
            _ => Arc::new(array),
        })
    }
}

/// A DECIMAL's seconds (unscaled `v` at scale `s`) as microseconds, as Spark computes them:
/// `(BigDecimal(v, s) * 1000000).longValue` in Scala, whose product is rounded half even to 34
/// significant digits (its `DECIMAL128` context), cut toward zero and kept to its low 64 bits
/// (Java's `BigDecimal.longValue`).
fn cut_to_micros(v: i128, s: i32) -> i64 {
    use arrow::datatypes::i256;
    let ten = i256::from_i128(10);
    // (Exact in 256 bits: at most 38 + 7 digits.)
    let mut product = i256::from_i128(v).wrapping_mul(ten.wrapping_pow(6));
    let digits = product.wrapping_abs().to_string().len() as u32;
    if digits > 34 {
        let unit = ten.wrapping_pow(digits - 34);
        let (q, r) = (product.wrapping_div(unit), product.wrapping_rem(unit));
        let twice = r.wrapping_abs().wrapping_mul(i256::from_i128(2));
        let odd = q.wrapping_rem(i256::from_i128(2)) != i256::ZERO;
        let up = twice > unit || twice == unit && odd;
        let sign = if product < i256::ZERO { i256::MINUS_ONE } else { i256::ONE };
        product = q.wrapping_add(if up { sign } else { i256::ZERO }).wrapping_mul(unit);
    }
    // Cut toward zero, as 256-bit division does.
    let whole = if s >= 0 {
        product.wrapping_div(ten.wrapping_pow(s as u32))
    } else {
        product.wrapping_mul(ten.wrapping_pow(s.unsigned_abs()))
    };
    whole.as_i128() as i64
}

/// `v` at scale `from` written at scale `to`, rounded half up; `None` when it does not fit.
fn rescale(v: i128, from: i32, to: i32) -> Option<i128> {
    if to >= from {
        v.checked_mul(10i128.checked_pow((to - from) as u32)?)
    } else {
        let d = 10i128.pow((from - to) as u32);
        let (q, r) = (v / d, v % d);
        Some(if r.abs() * 2 >= d { q + v.signum() } else { q })
    }
}

fn narrow<T: arrow::datatypes::ArrowPrimitiveType>(values: Vec<Option<i128>>) -> ArrayRef
where
    T::Native: TryFrom<i128>,
{
    Arc::new(values.into_iter().map(|v| v.and_then(|v| T::Native::try_from(v).ok())).collect::<PrimitiveArray<T>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_seconds_are_cut_to_microseconds_as_java_cuts_them() {
        // As Spark 4.1.4 answers: -94.849 s, 1.0000005 s cut to 1 s, -1.0000005 s to -1 s.
        assert_eq!(cut_to_micros(-94_849, 3), -94_849_000);
        assert_eq!(cut_to_micros(10_000_005, 7), 1_000_000);
        assert_eq!(cut_to_micros(-10_000_005, 7), -1_000_000);
        // 99999999999999999999.9 s: the low 64 bits of 99999999999999999999900000 µs.
        let exact: i128 = 99_999_999_999_999_999_999_900_000;
        assert_eq!(cut_to_micros(999_999_999_999_999_999_999, 1), exact as i64);
        // 10^38 - 1 s: the product rounds to 10^44 µs (34 digits) before its low 64 bits are
        // taken — Spark 4.1.4's 4512-08-22 02:22:28.581376, not the exact product's :27.
        assert_eq!(cut_to_micros(10i128.pow(38) - 1, 0), 80_237_960_548_581_376);
    }

    #[test]
    fn seconds_are_rounded_half_up_to_a_smaller_scale() {
        assert_eq!(rescale(-500_000, 6, 2), Some(-50));
        assert_eq!(rescale(-1, 6, 3), Some(0));
        assert_eq!(rescale(123_456, 6, 6), Some(123_456));
        assert_eq!(rescale(5, 6, 8), Some(500));
    }
}
