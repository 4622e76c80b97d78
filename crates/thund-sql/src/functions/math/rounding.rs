//! Spark's rounding to a number of decimal places other than `round`'s: `ceil(x, d)` and
//! `floor(x, d)` (the parser reads them as CEIL and FLOOR with a scale, which DataFusion does
//! not plan: `calls::rewrite_ceil_floor` calls them `ceil_at` and `floor_at`) and `bround(x[, d])`, half to even.
//!
//! As Spark's `RoundBase`: `d` is a literal INT; a DECIMAL(p, s) becomes a DECIMAL with one
//! more integral digit and `min(s, d)` decimals (for a negative `d`, no decimals and at least
//! `1 - d` digits); `ceil` and `floor` take an integer as its DECIMAL, `bround` keeps an integer
//! type. A value that does not fit its type is NULL, as on Spark (whose rounding never fails).
//! Floating point is refused: Spark rounds the decimal text Java writes for it.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Decimal128Array, PrimitiveArray};
use arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for (name, mode) in [("ceil_at", Mode::Ceiling), ("floor_at", Mode::Floor), ("bround", Mode::HalfEven)] {
        ctx.register_udf(ScalarUDF::from(RoundTo {
            name,
            mode,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Mode {
    Ceiling,
    Floor,
    HalfEven,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct RoundTo {
    name: &'static str,
    mode: Mode,
    signature: Signature,
}

/// The DECIMAL Spark casts an integer type to.
fn integer_decimal(t: &DataType) -> Option<(u8, i8)> {
    Some(match t {
        DataType::Int8 => (3, 0),
        DataType::Int16 => (5, 0),
        DataType::Int32 => (10, 0),
        DataType::Int64 => (20, 0),
        _ => return None,
    })
}

impl RoundTo {
    fn spark_name(&self) -> &'static str {
        match self.mode {
            Mode::Ceiling => "ceil",
            Mode::Floor => "floor",
            Mode::HalfEven => "bround",
        }
    }

    /// The result type of rounding a value of type `t` to `digits` decimals.
    fn result_type(&self, t: &DataType, digits: i32) -> Result<DataType> {
        let (p, s) = match t {
            DataType::Decimal128(p, s) => (*p, *s),
            t if t.is_integer() && self.mode == Mode::HalfEven => return Ok(t.clone()),
            t => match integer_decimal(t) {
                Some(ps) => ps,
                None => {
                    return plan_err!(
                        "{} of a {} runs on the Spark backend (here a DECIMAL or an integer)",
                        self.spark_name(),
                        crate::types::spark_type_name(t)
                    )
                }
            },
        };
        let integral = i32::from(p) - i32::from(s) + 1;
        Ok(if digits < 0 {
            DataType::Decimal128(integral.max(1 - digits).min(38) as u8, 0)
        } else {
            let scale = i32::from(s).min(digits);
            DataType::Decimal128((integral + scale).min(38) as u8, scale as i8)
        })
    }
}

impl ScalarUDFImpl for RoundTo {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        exec_err!("{}: the type is given by return_field_from_args", self.spark_name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let digits = digits(self.spark_name(), args.arg_fields.len(), args.scalar_arguments.get(1).copied().flatten())?;
        let t = self.result_type(args.arg_fields[0].data_type(), digits)?;
        Ok(Arc::new(Field::new(self.name, t, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let digits_value = match args.args.get(1) {
            Some(ColumnarValue::Scalar(s)) => Some(s.clone()),
            _ => None,
        };
        let digits = digits(self.spark_name(), args.args.len(), digits_value.as_ref())?;
        let values = args.args[0].to_array(args.number_rows)?;
        let result = args.return_field.data_type().clone();
        let (unscaled, scale): (PrimitiveArray<Decimal128Type>, i32) = match values.data_type() {
            DataType::Decimal128(_, s) => (values.as_primitive::<Decimal128Type>().clone(), i32::from(*s)),
            _ => {
                let wide = arrow::compute::cast(&values, &DataType::Int64)?;
                (wide.as_primitive::<Int64Type>().unary(i128::from), 0)
            }
        };
        let (to_digits, to_scale) = match &result {
            DataType::Decimal128(p, s) => (u32::from(*p), i32::from(*s)),
            _ => (38, 0),
        };
        let mode = self.mode;
        let rounded: Decimal128Array = unscaled
            .iter()
            .map(|v| {
                let v = round(v?, scale, digits, mode)?;
                // Rounded to `digits` decimals, at the result's scale.
                let v = rescale(v, digits.min(scale), to_scale)?;
                (v.unsigned_abs() < 10u128.checked_pow(to_digits)?).then_some(v)
            })
            .collect();
        let out: ArrayRef = match &result {
            DataType::Decimal128(p, s) => Arc::new(rounded.with_precision_and_scale(*p, *s)?),
            // An integer type kept (`bround` of an integer): every value fits, as it was one.
            integer => arrow::compute::cast(&rounded.with_precision_and_scale(38, 0)?, integer)?,
        };
        crate::columnar::columnar(out, scalar)
    }
}

/// The literal number of decimal places (0 when not given).
fn digits(name: &str, arity: usize, digits: Option<&ScalarValue>) -> Result<i32> {
    if arity == 1 {
        return Ok(0);
    }
    match digits.map(|d| d.cast_to(&DataType::Int32)) {
        Some(Ok(ScalarValue::Int32(Some(d)))) if arity == 2 && d >= -38 => Ok(d),
        _ => plan_err!("{name} takes a value and a literal INT number of decimal places"),
    }
}

/// `v` (unscaled, at `scale`) rounded to `digits` decimals, unscaled at `min(digits, scale)`.
fn round(v: i128, scale: i32, digits: i32, mode: Mode) -> Option<i128> {
    if digits >= scale {
        return Some(v);
    }
    let factor = 10i128.checked_pow(u32::try_from(scale - digits).ok()?)?;
    let (q, r) = (v / factor, v % factor);
    let away = |q: i128| if v < 0 { q - 1 } else { q + 1 };
    Some(match mode {
        Mode::Ceiling if r > 0 => q + 1,
        Mode::Floor if r < 0 => q - 1,
        Mode::Ceiling | Mode::Floor => q,
        Mode::HalfEven => match (2 * r.unsigned_abs()).cmp(&factor.unsigned_abs()) {
            std::cmp::Ordering::Greater => away(q),
            std::cmp::Ordering::Equal if q % 2 != 0 => away(q),
            _ => q,
        },
    })
}

/// An unscaled value at scale `from` (which may be negative: `digits` below 0) at scale `to`.
fn rescale(v: i128, from: i32, to: i32) -> Option<i128> {
    if to >= from {
        v.checked_mul(10i128.checked_pow(u32::try_from(to - from).ok()?)?)
    } else {
        Some(v / 10i128.checked_pow(u32::try_from(from - to).ok()?)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounding_follows_sparks_modes() {
        // ceil(3.1411, 3) = 3.142, ceil(3.1411, -3) = 1000, floor(-3.1411, 1) = -3.2.
        assert_eq!(round(31411, 4, 3, Mode::Ceiling), Some(3142));
        assert_eq!(round(31411, 4, -3, Mode::Ceiling).and_then(|v| rescale(v, -3, 0)), Some(1000));
        assert_eq!(round(-31411, 4, 1, Mode::Floor), Some(-32));
        assert_eq!(round(-31411, 4, 1, Mode::Ceiling), Some(-31));
        // bround(2.5, 0) = 2, bround(3.5, 0) = 4, bround(-2.5, 0) = -2, bround(25, -1) = 20.
        assert_eq!(round(25, 1, 0, Mode::HalfEven), Some(2));
        assert_eq!(round(35, 1, 0, Mode::HalfEven), Some(4));
        assert_eq!(round(-25, 1, 0, Mode::HalfEven), Some(-2));
        assert_eq!(round(-26, 1, 0, Mode::HalfEven), Some(-3));
        assert_eq!(round(25, 0, -1, Mode::HalfEven).and_then(|v| rescale(v, -1, 0)), Some(20));
        assert_eq!(round(35, 0, -1, Mode::HalfEven).and_then(|v| rescale(v, -1, 0)), Some(40));
    }
}
