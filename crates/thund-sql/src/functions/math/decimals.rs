//! Spark's DECIMAL arithmetic: the result types of `+ - * / %` (`decimal_result_type`,
//! `decimal_quotient_type`, 38 digits at most, the integral digits kept at the expense of the
//! scale), each row computed exactly and rounded half up as Spark's `BigDecimal` arithmetic is
//! (`exact`, in 128 bits where no step overflows them, else in 256; `decimal_divide`), a value
//! wider than its type NULL or failing in ANSI mode, and the planning of a product DataFusion's
//! planner cannot type (`DecimalProductPlanner`). `arithmetic` hands its DECIMAL pairs here.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::datatypes::{DataType, Decimal128Type};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};

use super::arithmetic::{operator, OnFailure, Op};

/// A DECIMAL (or integer) column as DECIMAL values, with its scale.
fn as_decimal(a: &ArrayRef) -> Result<(PrimitiveArray<Decimal128Type>, i32)> {
    let (p, s) = decimal_of(a.data_type()).unwrap_or((38, 0));
    let d = arrow::compute::cast(a, &DataType::Decimal128(p as u8, s as i8))?;
    Ok((d.as_primitive::<Decimal128Type>().clone(), s))
}

/// `l op r` over DECIMALs (an integer as the DECIMAL of its type), each row exact and rounded
/// half up to the scale `s`, as Spark's `BigDecimal` arithmetic is; a value of more than `p`
/// digits is NULL, or fails in ANSI mode. A row is computed in 128 bits where no step
/// overflows them (nearly always: a pipeline's sums and products of prices), else in 256.
pub(super) fn exact(op: Op, on_failure: OnFailure, l: &ArrayRef, r: &ArrayRef, p: u8, s: i8) -> Result<ArrayRef> {
    let ((x, sx), (y, sy)) = (as_decimal(l)?, as_decimal(r)?);
    if x.len() != y.len() {
        return exec_err!("DECIMAL {} of {} and {} values", op.function(), x.len(), y.len());
    }
    let steps = DecimalSteps::new(op, sx, sy, i32::from(s), p);
    match steps.at_once(&x, &y) {
        Some(answer) => Ok(Arc::new(answer.with_precision_and_scale(p, s)?)),
        None => row_by_row(&steps, on_failure, &x, &y, p, s),
    }
}

/// [`exact`] one row at a time, each in 128 bits where it fits, else in 256.
fn row_by_row(
    steps: &DecimalSteps,
    on_failure: OnFailure,
    x: &PrimitiveArray<Decimal128Type>,
    y: &PrimitiveArray<Decimal128Type>,
    p: u8,
    s: i8,
) -> Result<ArrayRef> {
    use arrow::buffer::NullBuffer;
    use arrow::datatypes::i256;
    let op = steps.op;
    let nulls = NullBuffer::union(x.nulls(), y.nulls());
    let mut out = Vec::with_capacity(x.len());
    let mut valid = Vec::with_capacity(x.len());
    for (i, (&a, &b)) in x.values().iter().zip(y.values()).enumerate() {
        if nulls.as_ref().is_some_and(|n| n.is_null(i)) {
            out.push(0);
            valid.push(false);
            continue;
        }
        let answer = match steps.narrow(a, b) {
            Some(v) => Some(v),
            None => steps.wide(i256::from_i128(a), i256::from_i128(b)),
        };
        match answer {
            // Within the bound: an i128.
            Some(Ok(v)) => {
                out.push(v);
                valid.push(true);
            }
            Some(Err(digits)) if on_failure == OnFailure::Error => {
                return exec_err!(
                    "[NUMERIC_VALUE_OUT_OF_RANGE] a value of {digits} digits cannot be represented as DECIMAL({p},{s}): {}",
                    crate::modes::ansi_hint(Some(&format!("try_{}", op.function())))
                );
            }
            // Out of range, or a remainder by zero.
            _ => {
                out.push(0);
                valid.push(false);
            }
        }
    }
    let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
    Ok(Arc::new(PrimitiveArray::<Decimal128Type>::new(out.into(), nulls).with_precision_and_scale(p, s)?))
}

/// A DECIMAL answer whose values have at most `precision` digits: Arrow's kernels only fail
/// when an i128 overflows, so `DECIMAL(38,0)` 10^38 - 1 plus 1 would be an invalid 10^38.
/// Spark's answer there is NULL, or in ANSI mode `[NUMERIC_VALUE_OUT_OF_RANGE]`.
pub(super) fn within_precision(op: Op, on_failure: OnFailure, answer: ArrayRef, precision: u8) -> Result<ArrayRef> {
    let decimals = answer.as_primitive::<arrow::datatypes::Decimal128Type>();
    if decimals.validate_decimal_precision(precision).is_ok() {
        return Ok(answer);
    }
    if on_failure == OnFailure::Error {
        let bound = 10u128.pow(u32::from(precision));
        let first = decimals.iter().flatten().find(|v| v.unsigned_abs() >= bound).unwrap_or_default();
        let scale = match decimals.data_type() {
            DataType::Decimal128(_, s) => *s,
            _ => 0,
        };
        let shown =
            <arrow::datatypes::Decimal128Type as arrow::datatypes::DecimalType>::format_decimal(first, 38, scale);
        return exec_err!(
            "[NUMERIC_VALUE_OUT_OF_RANGE] {} cannot be represented as {}: {}",
            shown,
            crate::types::spark_type_name(decimals.data_type()),
            crate::modes::ansi_hint(Some(&format!("try_{}", op.function())))
        );
    }
    // `null_if_overflow_precision` builds a new array of the default DECIMAL(38,10) type.
    Ok(Arc::new(decimals.null_if_overflow_precision(precision).with_data_type(decimals.data_type().clone())))
}

/// Plans `a * b` of two DECIMALs whose scales add up beyond 38 (`DECIMAL(38,20) * DECIMAL(38,20)`)
/// as Spark's product (a DECIMAL(38,6), [`decimal_result_type`]): DataFusion's planner cannot
/// type such a product and fails the query.
#[derive(Debug)]
pub(crate) struct DecimalProductPlanner {
    pub(crate) ansi: bool,
}

impl datafusion::logical_expr::planner::ExprPlanner for DecimalProductPlanner {
    fn plan_binary_op(
        &self,
        expr: datafusion::logical_expr::planner::RawBinaryExpr,
        schema: &datafusion::common::DFSchema,
    ) -> Result<datafusion::logical_expr::planner::PlannerResult<datafusion::logical_expr::planner::RawBinaryExpr>>
    {
        use datafusion::logical_expr::planner::PlannerResult;
        use datafusion::logical_expr::ExprSchemable;
        let scale = |e: &datafusion::logical_expr::Expr| match e.get_type(schema) {
            Ok(DataType::Decimal128(_, s)) => Some(i32::from(s)),
            _ => None,
        };
        let product = expr.op == sqlparser::ast::BinaryOperator::Multiply;
        match (scale(&expr.left), scale(&expr.right)) {
            (Some(a), Some(b)) if product && a + b > 38 => {
                let on_failure = if self.ansi { OnFailure::Error } else { OnFailure::Null };
                let func = Arc::new(operator(Op::Multiply, on_failure));
                Ok(PlannerResult::Planned(datafusion::logical_expr::Expr::ScalarFunction(
                    datafusion::logical_expr::expr::ScalarFunction { func, args: vec![expr.left, expr.right] },
                )))
            }
            _ => Ok(PlannerResult::Original(expr)),
        }
    }
}

/// The steps of one DECIMAL operation `a op b` (scales `sx`, `sy`) to Spark's DECIMAL(p, s),
/// worked out once per batch: the factors aligning both sides to a common scale, and the
/// rescaling of the exact answer to `s`.
struct DecimalSteps {
    op: Op,
    /// 10^(common scale - each side's scale).
    align: (i128, i128),
    /// The exact answer's scale less the result's: > 0 rounds digits away, < 0 adds zeros.
    rescale: i32,
    /// 10^p: the first value that does not fit.
    bound: i128,
}

impl DecimalSteps {
    fn new(op: Op, sx: i32, sy: i32, s: i32, p: u8) -> Self {
        let common = sx.max(sy);
        let exact_scale = if op == Op::Multiply { sx + sy } else { common };
        let ten = |k: i32| 10i128.pow(k as u32);
        Self { op, align: (ten(common - sx), ten(common - sy)), rescale: exact_scale - s, bound: ten(i32::from(p)) }
    }

    /// The answers of a whole batch in 128 bits, with Arrow's kernels: each step checked for
    /// overflow in one tight loop, NULLs skipped by the kernel rather than tested row by row.
    /// `None` when a row overflows 128 bits or its type (rare: a pipeline's prices and
    /// quantities stay far inside them); the batch then goes row by row ([`Self::narrow`],
    /// [`Self::wide`]), which answers such a row with NULL, an error or 256 bits. At TPC-H SF 1,
    /// `max(net_revenue * (1 + l_tax))` over the 6M-row silver table took 0.18 s instead of 0.35 s.
    fn at_once(
        &self,
        x: &PrimitiveArray<Decimal128Type>,
        y: &PrimitiveArray<Decimal128Type>,
    ) -> Option<PrimitiveArray<Decimal128Type>> {
        use arrow::compute::kernels::arity::try_binary;
        use arrow::error::ArrowError;
        let overflow = || ArrowError::ComputeError("overflow".into());
        let (fa, fb) = self.align;
        let exact: std::result::Result<PrimitiveArray<Decimal128Type>, ArrowError> = match self.op {
            Op::Multiply => try_binary(x, y, |a: i128, b: i128| a.checked_mul(b).ok_or_else(overflow)),
            Op::Add => try_binary(x, y, |a: i128, b: i128| {
                a.checked_mul(fa).zip(b.checked_mul(fb)).and_then(|(a, b)| a.checked_add(b)).ok_or_else(overflow)
            }),
            Op::Subtract => try_binary(x, y, |a: i128, b: i128| {
                a.checked_mul(fa).zip(b.checked_mul(fb)).and_then(|(a, b)| a.checked_sub(b)).ok_or_else(overflow)
            }),
            _ => return None,
        };
        let exact = exact.ok()?;
        let rounded = match self.rescale {
            0 => exact,
            k if k > 0 => {
                let d = 10i128.checked_pow(k as u32)?;
                exact.unary(|v: i128| half_up(v, d))
            }
            k => {
                let m = 10i128.checked_pow((-k) as u32)?;
                exact.try_unary(|v: i128| v.checked_mul(m).ok_or_else(overflow)).ok()?
            }
        };
        // A NULL row's slot holds 0 here, within any bound.
        let bound = self.bound.unsigned_abs();
        rounded.values().iter().all(|v| v.unsigned_abs() < bound).then_some(rounded)
    }

    /// The answer in 128 bits: `Some(Ok(v))` within the bound, `Some(Err(digits))` beyond it,
    /// `None` where a step would overflow 128 bits (or a remainder by zero, left to [`Self::wide`]).
    fn narrow(&self, a: i128, b: i128) -> Option<Result<i128, usize>> {
        let exact = match self.op {
            Op::Add => a.checked_mul(self.align.0)?.checked_add(b.checked_mul(self.align.1)?)?,
            Op::Subtract => a.checked_mul(self.align.0)?.checked_sub(b.checked_mul(self.align.1)?)?,
            Op::Multiply => a.checked_mul(b)?,
            _ => a.checked_mul(self.align.0)?.checked_rem(b.checked_mul(self.align.1)?)?,
        };
        let rounded = match self.rescale {
            0 => exact,
            k if k > 0 => {
                let d = 10i128.checked_pow(k as u32)?;
                half_up(exact, d)
            }
            k => exact.checked_mul(10i128.checked_pow((-k) as u32)?)?,
        };
        Some(if rounded.unsigned_abs() < self.bound.unsigned_abs() {
            Ok(rounded)
        } else {
            Err(rounded.unsigned_abs().to_string().len())
        })
    }

    /// The answer in 256 bits, as [`Self::narrow`]; `None` for a remainder by zero.
    fn wide(&self, a: arrow::datatypes::i256, b: arrow::datatypes::i256) -> Option<Result<i128, usize>> {
        use arrow::datatypes::i256;
        let ten = |k: i32| i256::from_i128(10).wrapping_pow(k as u32);
        let (fa, fb) = (i256::from_i128(self.align.0), i256::from_i128(self.align.1));
        let exact = match self.op {
            Op::Add => a.wrapping_mul(fa).wrapping_add(b.wrapping_mul(fb)),
            Op::Subtract => a.wrapping_mul(fa).wrapping_sub(b.wrapping_mul(fb)),
            Op::Multiply => a.wrapping_mul(b),
            _ => {
                let d = b.wrapping_mul(fb);
                if d == i256::ZERO {
                    return None;
                }
                a.wrapping_mul(fa).wrapping_rem(d)
            }
        };
        let rounded = if self.rescale > 0 {
            let d = ten(self.rescale);
            let (q, r) = (exact.wrapping_div(d), exact.wrapping_rem(d));
            if r.wrapping_abs().wrapping_mul(i256::from_i128(2)) >= d {
                q.wrapping_add(if exact < i256::ZERO { i256::MINUS_ONE } else { i256::ONE })
            } else {
                q
            }
        } else {
            exact.wrapping_mul(ten(-self.rescale))
        };
        Some(if rounded.wrapping_abs() < i256::from_i128(self.bound) {
            rounded.to_i128().ok_or(0)
        } else {
            Err(rounded.to_string().trim_start_matches('-').len())
        })
    }
}

/// `v / d` rounded half up, away from zero (|v % d| < d ≤ 10^38: twice it fits a u128).
fn half_up(v: i128, d: i128) -> i128 {
    let (q, r) = (v / d, v % d);
    if r.unsigned_abs() * 2 >= d.unsigned_abs() {
        q + v.signum()
    } else {
        q
    }
}

/// Spark's type of a DECIMAL(p1,s1) divided by a DECIMAL(p2,s2) (an integer counting as the
/// DECIMAL that holds its type): scale max(6, s1 + p2 + 1), precision p1 - s1 + s2 + scale,
/// and over 38 digits the integral digits kept at the expense of the scale (down to 6).
pub(crate) fn decimal_quotient_type(l: &DataType, r: &DataType) -> Option<DataType> {
    let (p1, s1) = decimal_of(l)?;
    let (p2, s2) = decimal_of(r)?;
    let scale = 6.max(s1 + p2 + 1);
    Some(bounded(p1 - s1 + s2 + scale, scale))
}

/// DECIMAL(precision, scale), and over 38 digits DECIMAL(38, …) keeping the integral digits at
/// the expense of the scale, down to 6 (`spark.sql.decimalOperations.allowPrecisionLoss`).
fn bounded(precision: i32, scale: i32) -> DataType {
    let (precision, scale) = if precision > 38 {
        let integral = precision - scale;
        (38, (38 - integral).max(scale.min(6)))
    } else {
        (precision, scale)
    };
    DataType::Decimal128(precision as u8, scale as i8)
}

/// Spark's type of `l op r` for `+ - * %` where one side is a DECIMAL (an integer counting as
/// the DECIMAL that holds its type): `+ -` scale max(s1,s2) and precision max(p1-s1,p2-s2) +
/// scale + 1; `*` precision p1+p2+1 and scale s1+s2; `%` precision min(p1-s1,p2-s2) + scale and
/// scale max(s1,s2); [`bounded`] to 38 digits.
pub(crate) fn decimal_result_type(op: Op, l: &DataType, r: &DataType) -> Option<DataType> {
    let (p1, s1) = decimal_of(l)?;
    let (p2, s2) = decimal_of(r)?;
    let (precision, scale) = match op {
        Op::Add | Op::Subtract => {
            let scale = s1.max(s2);
            ((p1 - s1).max(p2 - s2) + scale + 1, scale)
        }
        Op::Multiply => (p1 + p2 + 1, s1 + s2),
        Op::Mod => {
            let scale = s1.max(s2);
            ((p1 - s1).min(p2 - s2) + scale, scale)
        }
        _ => return None,
    };
    Some(bounded(precision, scale))
}

/// A decimal type's precision and scale; an integer type as the DECIMAL that holds it.
pub(crate) fn decimal_of(t: &DataType) -> Option<(i32, i32)> {
    Some(match t {
        DataType::Decimal128(p, s) => (i32::from(*p), i32::from(*s)),
        DataType::Int8 => (3, 0),
        DataType::Int16 => (5, 0),
        DataType::Int32 => (10, 0),
        DataType::Int64 => (20, 0),
        _ => return None,
    })
}

/// `a / b` of decimals as Spark divides them: the quotient at [`decimal_quotient_type`]'s
/// scale, rounded half up; a zero divisor or a quotient too wide for the type fails (ANSI
/// mode) or is NULL.
pub(crate) fn decimal_divide(on_failure: OnFailure) -> ScalarUDF {
    ScalarUDF::from(DecimalDivide { on_failure, signature: Signature::any(2, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalDivide {
    on_failure: OnFailure,
    signature: Signature,
}

impl ScalarUDFImpl for DecimalDivide {
    fn name(&self) -> &str {
        match self.on_failure {
            OnFailure::Null => "try_divide",
            OnFailure::Error => "divide",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match decimal_quotient_type(&args[0], &args[1]) {
            Some(t) => Ok(t),
            None => plan_err!("decimal division of {} and {}", args[0], args[1]),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use arrow::datatypes::{i256, Decimal128Type};
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let (l, r) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let Some(DataType::Decimal128(precision, scale)) = decimal_quotient_type(l.data_type(), r.data_type()) else {
            return exec_err!("internal error: decimal division of {} and {}", l.data_type(), r.data_type());
        };
        let ((x, s1), (y, s2)) = (as_decimal(&l)?, as_decimal(&r)?);
        // quotient = x·10^k / y at the result's scale, k = scale - s1 + s2 (a negative k
        // scales the divisor instead).
        let k = i32::from(scale) - s1 + s2;
        let ten = |e: i32| i256::from_i128(10).checked_pow(e.unsigned_abs());
        let (up, down) = match k >= 0 {
            true => (ten(k), Some(i256::ONE)),
            false => (Some(i256::ONE), ten(-k)),
        };
        let bound = ten(i32::from(precision));
        let mut failure: Option<String> = None;
        let mut out = Vec::with_capacity(n);
        for (a, b) in x.iter().zip(y.iter()) {
            let (Some(a), Some(b)) = (a, b) else {
                out.push(None);
                continue;
            };
            let quotient = match b {
                0 => Err(format!("[DIVIDE_BY_ZERO] division by zero: {}", crate::modes::ansi_hint(Some("try_divide")))),
                _ => half_up_quotient(a, b, up, down, bound).ok_or_else(|| {
                    format!(
                        "[NUMERIC_VALUE_OUT_OF_RANGE] the quotient of {a} and {b} (unscaled) cannot be represented as \
                         DECIMAL({precision},{scale}): {}",
                        crate::modes::ansi_hint(Some("try_divide"))
                    )
                }),
            };
            match quotient {
                Ok(q) => out.push(Some(q)),
                Err(e) => {
                    failure.get_or_insert(e);
                    out.push(None);
                }
            }
        }
        if let (Some(e), OnFailure::Error) = (failure, self.on_failure) {
            return exec_err!("{e}");
        }
        let quotients = PrimitiveArray::<Decimal128Type>::from(out).with_precision_and_scale(precision, scale)?;
        crate::columnar::columnar(Arc::new(quotients), scalar)
    }
}

/// `a·up / (b·down)` rounded half up (away from zero), if it has fewer digits than `bound`.
fn half_up_quotient(
    a: i128,
    b: i128,
    up: Option<arrow::datatypes::i256>,
    down: Option<arrow::datatypes::i256>,
    bound: Option<arrow::datatypes::i256>,
) -> Option<i128> {
    use arrow::datatypes::i256;
    let numerator = i256::from_i128(a).checked_mul(up?)?;
    let divisor = i256::from_i128(b).checked_mul(down?)?;
    let (q, rem) = (numerator.checked_div(divisor)?, numerator.checked_rem(divisor)?);
    let twice = rem.wrapping_abs().checked_mul(i256::from_i128(2))?;
    let q = match twice >= divisor.wrapping_abs() {
        true if (numerator < i256::ZERO) != (divisor < i256::ZERO) => q.checked_sub(i256::ONE)?,
        true => q.checked_add(i256::ONE)?,
        false => q,
    };
    if q.wrapping_abs() >= bound? {
        return None;
    }
    q.to_i128()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Array, ArrayRef, AsArray, Decimal128Array};
    use arrow::datatypes::{DataType, Decimal128Type};

    use super::{as_decimal, decimal_result_type, exact, row_by_row, DecimalSteps, OnFailure, Op};

    /// Values of `digits` digits at most, some NULL, some at the edge of the type.
    fn column(seed: u64, n: usize, digits: u32, scale: i8, edges: bool) -> ArrayRef {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            state >> 11
        };
        let bound = 10i128.pow(digits);
        let values: Vec<Option<i128>> = (0..n)
            .map(|_| match next() % 10 {
                0 => None,
                1 if edges => Some(bound - 1),
                2 if edges => Some(-(bound - 1)),
                3 => Some(0),
                _ => Some((next() as i128 * next() as i128) % bound * if next() % 2 == 0 { 1 } else { -1 }),
            })
            .collect();
        Arc::new(Decimal128Array::from(values).with_precision_and_scale(digits as u8, scale).unwrap())
    }

    /// A whole batch through Arrow's kernels answers as the row-by-row path does, row for row:
    /// sums, differences and products of DECIMALs of every width, with digits rounded away
    /// (half up, negative values too) and zeros added, NULLs, values at the edge of their types.
    /// A batch where some row overflows (128 bits, or its type) goes row by row whole.
    #[test]
    fn a_batch_at_once_answers_as_row_by_row() {
        let shapes: &[(u32, i8, u32, i8)] = &[
            (15, 2, 16, 2),
            (32, 4, 16, 2),
            (38, 10, 38, 20),
            (10, 0, 38, 6),
            (20, 0, 5, 5),
            (38, 0, 38, 0),
            (3, 1, 37, 30),
            (30, 8, 12, 0),
        ];
        let mut batches_at_once = 0;
        for (seed, &(p1, s1, p2, s2)) in shapes.iter().enumerate() {
            for edges in [false, true] {
                let l = column(seed as u64, 300, p1, s1, edges);
                let r = column(seed as u64 + 99, 300, p2, s2, edges);
                for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Mod] {
                    let Some(DataType::Decimal128(p, s)) = decimal_result_type(op, l.data_type(), r.data_type()) else {
                        panic!("a DECIMAL type")
                    };
                    let ((x, sx), (y, sy)) = (as_decimal(&l).unwrap(), as_decimal(&r).unwrap());
                    let steps = DecimalSteps::new(op, sx, sy, i32::from(s), p);
                    batches_at_once += usize::from(steps.at_once(&x, &y).is_some());
                    let batch = exact(op, OnFailure::Null, &l, &r, p, s).unwrap();
                    let rows = row_by_row(&steps, OnFailure::Null, &x, &y, p, s).unwrap();
                    let what = format!("{op:?} of DECIMAL({p1},{s1}) and DECIMAL({p2},{s2}), edges {edges}");
                    assert_eq!(batch.data_type(), &DataType::Decimal128(p, s), "{what}");
                    let got: Vec<Option<i128>> = batch.as_primitive::<Decimal128Type>().iter().collect();
                    let want: Vec<Option<i128>> = rows.as_primitive::<Decimal128Type>().iter().collect();
                    assert_eq!(got, want, "{what}");
                }
            }
        }
        // Most batches here are answered at once; the others (overflows, `%`) row by row.
        assert!(batches_at_once >= 25, "{batches_at_once} batches at once");
    }
}
