//! Spark's `-x` and `abs(x)` of a DECIMAL, which go through Java's `BigDecimal.negate` and `abs`
//! with a `MathContext` of 34 digits (DECIMAL128): a value of more digits is rounded half up to 34
//! significant digits (`-12345678901234567890123456789012345678` is
//! `-12345678901234567890123456789012350000`), and one the rounding carries past the type's
//! precision (38 nines) fails, in either mode — as a Spark 4.1.4 server answers. `abs` of a
//! value that is not negative is that value, unrounded (Spark's `Decimal.abs` negates only a
//! negative one).

use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Decimal128Array};
use arrow::datatypes::{DataType, Decimal128Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// Significant digits of Java's `MathContext.DECIMAL128`.
const DIGITS: u32 = 34;

/// `-x` (or `abs(x)`) of the DECIMAL `x` as Spark computes it.
pub(crate) fn negate(x: Expr, abs: bool) -> Expr {
    let udf = ScalarUDF::from(Sign { abs, signature: Signature::any(1, Volatility::Immutable) });
    Expr::ScalarFunction(ScalarFunction { func: Arc::new(udf), args: vec![x] })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Sign {
    abs: bool,
    signature: Signature,
}

impl ScalarUDFImpl for Sign {
    fn name(&self) -> &str {
        if self.abs {
            "abs"
        } else {
            "negative"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let input = args.args[0].to_array(args.number_rows)?;
        let DataType::Decimal128(p, s) = input.data_type().clone() else {
            return exec_err!("{} of a DECIMAL applied to {}", self.name(), input.data_type());
        };
        let bound = 10i128.pow(u32::from(p));
        let values: Vec<Option<i128>> = input
            .as_primitive::<Decimal128Type>()
            .iter()
            .map(|v| {
                let Some(v) = v else { return Ok(None) };
                // Spark's `Decimal.abs` negates a negative value only: a value that is not
                // negative comes back as it is, unrounded.
                if self.abs && v >= 0 {
                    return Ok(Some(v));
                }
                let v = -v;
                let rounded = to_34_digits(v);
                if rounded.unsigned_abs() >= bound as u128 {
                    return exec_err!(
                        "[NUMERIC_VALUE_OUT_OF_RANGE] {} rounded half up to 34 digits cannot be represented as DECIMAL({p},{s})",
                        v
                    );
                }
                Ok(Some(rounded))
            })
            .collect::<Result<_>>()?;
        let out: ArrayRef = Arc::new(Decimal128Array::from(values).with_precision_and_scale(p, s)?);
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?));
        }
        Ok(ColumnarValue::Array(out))
    }
}

/// An unscaled value rounded half up (away from zero) to 34 significant digits.
fn to_34_digits(v: i128) -> i128 {
    let digits = v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1);
    if digits <= DIGITS {
        return v;
    }
    let unit = 10u128.pow(digits - DIGITS);
    let magnitude = v.unsigned_abs();
    let (q, r) = (magnitude / unit, magnitude % unit);
    let rounded = if r * 2 >= unit { q + 1 } else { q } * unit;
    // (At most 10^38, which fits an i128.)
    let rounded = rounded as i128;
    if v < 0 {
        -rounded
    } else {
        rounded
    }
}

#[cfg(test)]
mod tests {
    use super::to_34_digits;

    #[test]
    fn more_than_34_digits_round_half_up() {
        // As Spark 4.1.4 answers `-CAST('12345678901234567890123456789012345678' AS DECIMAL(38,0))`.
        assert_eq!(to_34_digits(-12345678901234567890123456789012345678), -12345678901234567890123456789012350000);
        assert_eq!(to_34_digits(99999999999999999999999999999999999999), 100000000000000000000000000000000000000);
        assert_eq!(to_34_digits(1234567890123456789012345678901234), 1234567890123456789012345678901234);
        assert_eq!(to_34_digits(-5), -5);
    }
}
