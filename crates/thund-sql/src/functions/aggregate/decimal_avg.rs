//! Spark's `avg` of a DECIMAL(p,s) too wide for the narrow path (`fidelity::aggregate_types`
//! takes DataFusion's average over values one digit wider while p + 5 ≤ 38): a
//! DECIMAL(min(p+4, 38), min(s+4, 38)). Spark keeps a sum (the DECIMAL sum's buffer and
//! overflow) and a count, and answers `DecimalDivideWithOverflowCheck(sum, count)`: the
//! quotient as Java's `BigDecimal` divides, cut to 39 decimals, then rounded half up to the
//! result's scale — NULL, or in ANSI mode an error, where it does not fit the result's
//! precision (an average of DECIMAL(38,18) values beyond 10^16 does not fit DECIMAL(38,22)).
//!
//! The plan rewrite takes the sum (`decimal_sum`, its overflow and order checks included) and the
//! count in the aggregate or window, and puts [`quotient`] in a projection above it.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
use arrow::datatypes::{i256, DataType, Decimal128Type, DecimalType, Int64Type};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

/// Spark's type of the average of a DECIMAL(p,s) (`DecimalType.bounded(p + 4, s + 4)`).
pub(crate) fn average_type(p: u8, s: i8) -> DataType {
    DataType::Decimal128((p + 4).min(38), (s + 4).min(38))
}

/// `quotient(sum, count)`: the average of `count` values whose sum (a DECIMAL) is `sum`, as a
/// DECIMAL of type `to`; NULL for no values.
pub(crate) fn quotient(to: DataType, ansi: bool) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(Quotient { to, ansi, signature: Signature::any(2, Volatility::Immutable) }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Quotient {
    to: DataType,
    ansi: bool,
    signature: Signature,
}

impl ScalarUDFImpl for Quotient {
    fn name(&self) -> &str {
        "decimal_average"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.to.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let DataType::Decimal128(precision, scale) = self.to else {
            return exec_err!("an average of DECIMALs answered as {}", self.to);
        };
        let n = args.number_rows;
        let (sums, counts) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let DataType::Decimal128(_, sum_scale) = *sums.data_type() else {
            return exec_err!("an average of DECIMALs over a sum of {}", sums.data_type());
        };
        let counts = arrow::compute::cast(&counts, &DataType::Int64)?;
        let (sums, counts) = (sums.as_primitive::<Decimal128Type>(), counts.as_primitive::<Int64Type>());
        let (Ok(shift), Some(bound)) = (
            u32::try_from(i32::from(scale) - i32::from(sum_scale)),
            i256::from_i128(10).checked_pow(u32::from(precision)),
        ) else {
            return exec_err!("an average of DECIMAL({sum_scale}) sums answered as {}", self.to);
        };
        let mut out = Vec::with_capacity(sums.len());
        for (sum, count) in sums.iter().zip(counts.iter()) {
            let (Some(sum), Some(count)) = (sum, count) else {
                out.push(None);
                continue;
            };
            if count <= 0 {
                out.push(None);
                continue;
            }
            let average = rounded(sum, count, shift);
            match average {
                Some(v) if v.wrapping_abs() < bound => out.push(v.to_i128()),
                _ if self.ansi => {
                    return exec_err!(
                        "[NUMERIC_VALUE_OUT_OF_RANGE.WITH_SUGGESTION] the average of {count} DECIMAL values of sum \
                         {} cannot be represented as DECIMAL({precision},{scale}): {}",
                        Decimal128Type::format_decimal(sum, 38, sum_scale),
                        crate::modes::ansi_hint(Some("try_avg"))
                    );
                }
                _ => out.push(None),
            }
        }
        let array: ArrayRef = Arc::new(Decimal128Array::from(out).with_precision_and_scale(precision, scale)?);
        Ok(ColumnarValue::Array(array))
    }
}

/// `sum / count` (`sum` unscaled at some scale s, `count` > 0) unscaled at scale s + `shift`,
/// as Spark rounds it: Java's `BigDecimal` division cut (`RoundingMode.DOWN`) to 39 decimals,
/// then half up to the result's scale — the same as half up on the exact quotient, since the
/// scale is at most 38 and a cut below it leaves whether the rest is half a unit or more.
/// `None` if it does not fit 256 bits.
fn rounded(sum: i128, count: i64, shift: u32) -> Option<i256> {
    let magnitude = i256::from_i128(sum).wrapping_abs().checked_mul(i256::from_i128(10).checked_pow(shift)?)?;
    let count = i256::from_i128(i128::from(count));
    let (whole, rest) = (magnitude.checked_div(count)?, magnitude.checked_rem(count)?);
    let whole = if rest.checked_mul(i256::from_i128(2))? >= count { whole.checked_add(i256::ONE)? } else { whole };
    Some(if sum < 0 { whole.checked_neg()? } else { whole })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn avg(sum: i128, count: i64, shift: u32) -> i128 {
        rounded(sum, count, shift).unwrap().to_i128().unwrap()
    }

    #[test]
    fn rounds_half_up_away_from_zero_at_the_scale() {
        // 5.000000000000000001 / 3 at scale 18 → 22: exact, 1.6666666666666666670000.
        assert_eq!(avg(5_000_000_000_000_000_001, 3, 4), 16_666_666_666_666_666_670_000);
        // 2 / 3 at scale 0 → 4: 0.6667; −2 / 3: −0.6667; 1 / 8 at scale 0 → 2: 0.13.
        assert_eq!(avg(2, 3, 4), 6667);
        assert_eq!(avg(-2, 3, 4), -6667);
        assert_eq!(avg(1, 8, 2), 13);
    }

    #[test]
    fn a_rest_below_half_rounds_down_whatever_follows() {
        // 9e-38 / 20 = 0.45e-38 at scale 38: Spark 4.1.4's 0E-38 (its division cuts at 39
        // decimals, 0.4, rather than rounding the 5 up into 0.5).
        assert_eq!(avg(9, 20, 0), 0);
        assert_eq!(avg(10, 20, 0), 1);
    }
}
