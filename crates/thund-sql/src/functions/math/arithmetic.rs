//! Spark's arithmetic where DataFusion's operators answer otherwise, in both of Spark's modes:
//!
//! - `try_add`, `try_subtract`, `try_multiply`, `try_divide` and `try_mod`: the operator's answer,
//!   or NULL where the operator would fail (an integer overflow, a division by zero). Without
//!   ANSI mode, `/` and `%` are these (a zero divisor gives NULL).
//! - In ANSI mode (Spark 4's default), the operators `+`, `-`, `*` of integers, and `/` and `%`
//!   of integers and floating point, fail the query on an overflow or a zero divisor, as Spark's
//!   do (DataFusion's integer operators wrap, and its floating-point ones give infinities).
//!
//! Integers are computed here with checked arithmetic, vectorised over the arrays, in the wider
//! of the two types (TINYINT + TINYINT is a TINYINT, as on Spark). Division of numbers is a
//! DOUBLE, as Spark's. A date plus or minus an integer moves by days. Every other pair
//! (decimals, dates and timestamps with intervals) takes DataFusion's operator with its own type
//! rules; a row it cannot compute is NULL (`try_`) or fails. Decimal division has Spark's type
//! and rounding (`decimal_divide`); `try_divide` of decimals is refused.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::compute::kernels::numeric;
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{
    ColumnarValue, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Divide, Op::Mod, Op::IntDivide] {
        ctx.register_udf(operator(op, OnFailure::Null));
    }
}

/// The function computing `op`: NULL where it fails (`try_`), or failing the query (ANSI).
pub(crate) fn operator(op: Op, on_failure: OnFailure) -> ScalarUDF {
    ScalarUDF::from(Arithmetic { op, on_failure, signature: Signature::any(2, Volatility::Immutable) })
}

/// Whether `f` is this module's subtraction (`a - b` as planned for intervals and dates).
pub(crate) fn is_subtraction(f: &ScalarUDF) -> bool {
    f.inner().downcast_ref::<Arithmetic>().is_some_and(|a| a.op == Op::Subtract)
}

/// What a row the operator cannot compute gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum OnFailure {
    /// NULL (the `try_` functions, and `/` and `%` without ANSI mode).
    Null,
    /// An error that fails the query (ANSI mode).
    Error,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Op {
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
    /// `a DIV b`: integer division, truncating, a BIGINT.
    IntDivide,
}

impl Op {
    /// The operation's name in Spark's `try_` functions.
    fn function(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Subtract => "subtract",
            Op::Multiply => "multiply",
            Op::Divide | Op::IntDivide => "divide",
            Op::Mod => "mod",
        }
    }

    fn operator(self) -> Operator {
        match self {
            Op::Add => Operator::Plus,
            Op::Subtract => Operator::Minus,
            Op::Multiply => Operator::Multiply,
            Op::Divide | Op::IntDivide => Operator::Divide,
            Op::Mod => Operator::Modulo,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Arithmetic {
    op: Op,
    on_failure: OnFailure,
    signature: Signature,
}

/// How a pair of argument types is computed.
enum Plan {
    /// Checked integer arithmetic in this type.
    Integers(DataType),
    /// Division as DOUBLEs.
    Doubles,
    /// A date moved by a number of days.
    DateDays,
    /// DataFusion's operator over the arguments cast to these types, answering that type.
    Operator(DataType, DataType, DataType),
    /// Spark's interval arithmetic (`interval_arithmetic`).
    Interval(crate::functions::interval::arithmetic::IntervalPlan),
    /// Exact DECIMAL arithmetic rounded half up to Spark's result type (`decimal_result_type`).
    Decimal(u8, i8),
}

impl Arithmetic {
    fn plan(&self, l: &DataType, r: &DataType) -> Result<Plan> {
        if let Some(p) = crate::functions::interval::arithmetic::plan(self.op, l, r) {
            return Ok(Plan::Interval(p));
        }
        let int = |t: &DataType| t.is_integer() || t == &DataType::Null;
        if self.op == Op::IntDivide {
            if int(l) && int(r) {
                return Ok(Plan::Integers(DataType::Int64));
            }
            return plan_err!(
                "div of {} and {} runs on the Spark backend (only integers are divided here)",
                crate::types::spark_type_name(l),
                crate::types::spark_type_name(r)
            );
        }
        if int(l) && int(r) {
            if self.op == Op::Divide {
                return Ok(Plan::Doubles);
            }
            return Ok(Plan::Integers(wider_integer(l, r)));
        }
        if matches!(self.op, Op::Add | Op::Subtract) && l == &DataType::Date32 && int(r) {
            return Ok(Plan::DateDays);
        }
        if self.op == Op::Divide {
            if [l, r]
                .iter()
                .all(|t| t.is_numeric() && !matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..)))
            {
                return Ok(Plan::Doubles);
            }
            return plan_err!(
                "try_divide of {} and {} runs on the Spark backend (Spark's decimal and interval division types differ)",
                crate::types::spark_type_name(l),
                crate::types::spark_type_name(r)
            );
        }
        // A timestamp (with or without a zone) plus or minus an interval keeps its type.
        let interval = crate::functions::interval::arithmetic::is_interval;
        if matches!(self.op, Op::Add | Op::Subtract) && matches!(l, DataType::Timestamp(..)) && interval(r) {
            return Ok(Plan::Operator(l.clone(), r.clone(), l.clone()));
        }
        if self.op == Op::Add && interval(l) && matches!(r, DataType::Timestamp(..)) {
            return Ok(Plan::Operator(l.clone(), r.clone(), r.clone()));
        }
        // A date plus or minus a day-time interval is a timestamp (that of the date's midnight).
        let day_time = |t: &DataType| matches!(t, DataType::Duration(_));
        if matches!(self.op, Op::Add | Op::Subtract) && l == &DataType::Date32 && day_time(r) {
            let ts = crate::types::spark_timestamp();
            return Ok(Plan::Operator(ts.clone(), crate::functions::interval::arithmetic::DAY_TIME, ts));
        }
        if self.op == Op::Add && day_time(l) && r == &DataType::Date32 {
            let ts = crate::types::spark_timestamp();
            return Ok(Plan::Operator(crate::functions::interval::arithmetic::DAY_TIME, ts.clone(), ts));
        }
        if [l, r].iter().any(|t| matches!(t, DataType::Interval(_) | DataType::Duration(_)))
            && !matches!(l, DataType::Date32 | DataType::Date64 | DataType::Timestamp(..))
            && !(self.op == Op::Add && matches!(r, DataType::Date32 | DataType::Timestamp(..)))
        {
            return plan_err!(
                "{} of {} and {} runs on the Spark backend (Spark's year-month and day-time intervals are other types)",
                self.name(),
                crate::types::spark_type_name(l),
                crate::types::spark_type_name(r)
            );
        }
        let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..));
        if matches!(self.op, Op::Add | Op::Subtract | Op::Multiply | Op::Mod) && (decimal(l) || decimal(r)) {
            if let Some(DataType::Decimal128(p, s)) = decimal_result_type(self.op, l, r) {
                return Ok(Plan::Decimal(p, s));
            }
        }
        let op = self.op.operator();
        let coercer = BinaryTypeCoercer::new(l, &op, r);
        let (lt, rt) = coercer.get_input_types()?;
        let result = match coercer.get_result_type()? {
            // Spark's timestamps are instants (the session's zone is UTC).
            DataType::Timestamp(_, None) => crate::types::spark_timestamp(),
            other => other,
        };
        Ok(Plan::Operator(lt, rt, result))
    }
}

impl ScalarUDFImpl for Arithmetic {
    fn name(&self) -> &str {
        match (self.on_failure, self.op) {
            (OnFailure::Null, Op::Add) => "try_add",
            (OnFailure::Null, Op::Subtract) => "try_subtract",
            (OnFailure::Null, Op::Multiply) => "try_multiply",
            (OnFailure::Null, Op::Divide) => "try_divide",
            (OnFailure::Null, Op::Mod) => "try_mod",
            // Not a `try_`: `div` without ANSI mode, whose zero divisor gives NULL.
            (OnFailure::Null, Op::IntDivide) => "div",
            (OnFailure::Error, Op::IntDivide) => "ansi_div",
            (OnFailure::Error, Op::Add) => "ansi_add",
            (OnFailure::Error, Op::Subtract) => "ansi_subtract",
            (OnFailure::Error, Op::Multiply) => "ansi_multiply",
            (OnFailure::Error, Op::Divide) => "ansi_divide",
            (OnFailure::Error, Op::Mod) => "ansi_mod",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(match self.plan(&args[0], &args[1])? {
            Plan::Integers(t) => t,
            Plan::Doubles => DataType::Float64,
            Plan::DateDays => DataType::Date32,
            Plan::Operator(_, _, t) => t,
            Plan::Interval(p) => crate::functions::interval::arithmetic::result_type(p),
            Plan::Decimal(p, s) => DataType::Decimal128(p, s),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let (l, r) = (Arg::new(&args.args[0])?, Arg::new(&args.args[1])?);
        let plan = self.plan(l.values.data_type(), r.values.data_type())?;
        if let Plan::Interval(p) = plan {
            let out =
                crate::functions::interval::arithmetic::compute(p, self.op, self.on_failure, &l.values, &r.values)?;
            return crate::columnar::columnar(out, scalar);
        }
        let dividing = matches!(self.op, Op::Divide | Op::Mod | Op::IntDivide);
        if dividing && self.on_failure == OnFailure::Error && has_zero(&r.values)? {
            return exec_err!(
                "{}: {}",
                if self.op == Op::Mod {
                    "[REMAINDER_BY_ZERO] remainder by zero"
                } else {
                    "[DIVIDE_BY_ZERO] division by zero"
                },
                crate::modes::ansi_hint(Some(&format!("try_{}", self.op.function())))
            );
        }
        let out: ArrayRef = match plan {
            // Arrow's kernels, over the whole batch (a scalar kept as one): checked `+ - *` fail
            // on the first overflow, and a remainder by a divisor made NULL where it is zero is
            // NULL there (the one remainder that overflows, MIN % -1, is 0 in Arrow, as on Spark).
            Plan::Integers(t) if matches!(self.op, Op::Mod | Op::IntDivide) || self.on_failure == OnFailure::Error => {
                let (x, y) = (l.cast(&t)?, r.cast(&t)?);
                let y = if dividing { y.zero_as_null()? } else { y };
                match operate(self.op, &*x.datum(), &*y.datum()) {
                    Ok(answer) => answer,
                    // The one quotient that overflows, MIN DIV -1, wraps without ANSI mode.
                    Err(_) if self.op == Op::IntDivide && self.on_failure == OnFailure::Null => {
                        let (x, y) = (as_type::<Int64Type>(&x.to_array(n)?)?, as_type::<Int64Type>(&y.to_array(n)?)?);
                        let q: PrimitiveArray<Int64Type> =
                            x.iter().zip(y.iter()).map(|(a, b)| Some(a?.wrapping_div(b?))).collect();
                        Arc::new(q)
                    }
                    Err(e) => {
                        return exec_err!(
                            "[ARITHMETIC_OVERFLOW] {} overflow{}: {}",
                            crate::types::spark_type_name(&t).to_ascii_lowercase(),
                            overflowing(&e).map(|on| format!(" in {on}")).unwrap_or_default(),
                            crate::modes::ansi_hint(Some(&format!("try_{}", self.op.function())))
                        )
                    }
                }
            }
            Plan::Integers(t) => {
                let (l, r) = (l.to_array(n)?, r.to_array(n)?);
                match t {
                    DataType::Int8 => Arc::new(self.overflow_as_null::<Int8Type>(&l, &r)?),
                    DataType::Int16 => Arc::new(self.overflow_as_null::<Int16Type>(&l, &r)?),
                    DataType::Int32 => Arc::new(self.overflow_as_null::<Int32Type>(&l, &r)?),
                    _ => Arc::new(self.overflow_as_null::<Int64Type>(&l, &r)?),
                }
            }
            // Floating-point division by zero is infinite in Arrow, NULL on Spark.
            Plan::Doubles => {
                let (x, y) = (l.cast(&DataType::Float64)?, r.cast(&DataType::Float64)?.zero_as_null()?);
                operate(Op::Divide, &*x.datum(), &*y.datum())?
            }
            Plan::DateDays => {
                let (l, r) = (l.to_array(n)?, r.to_array(n)?);
                let days = as_type::<Int32Type>(&r)?;
                let dates = l.as_primitive::<Date32Type>();
                let moved: PrimitiveArray<Date32Type> = dates
                    .iter()
                    .zip(days.iter())
                    .map(|(d, k)| match (d, k) {
                        (Some(d), Some(k)) if self.op == Op::Add => d.checked_add(k),
                        (Some(d), Some(k)) => d.checked_sub(k),
                        _ => None,
                    })
                    .collect();
                Arc::new(moved)
            }
            Plan::Interval(_) => return exec_err!("internal error: an interval operation planned twice"),
            Plan::Decimal(p, s) => self.exact_decimals(&l.to_array(n)?, &r.to_array(n)?, p, s)?,
            Plan::Operator(lt, rt, result) => {
                let (x, y) = (l.cast(&lt)?, r.cast(&rt)?);
                // A floating-point remainder by zero is NaN in Arrow, NULL on Spark.
                let y = if self.op == Op::Mod && result.is_floating() { y.zero_as_null()? } else { y };
                let answer = match operate(self.op, &*x.datum(), &*y.datum()) {
                    Ok(a) => a,
                    Err(e) if self.on_failure == OnFailure::Error => {
                        return match (&result, overflowing(&e)) {
                            (DataType::Decimal128(..), Some(on)) => exec_err!(
                                "[NUMERIC_VALUE_OUT_OF_RANGE] {on} cannot be represented as {}: {}",
                                crate::types::spark_type_name(&result),
                                crate::modes::ansi_hint(Some(&format!("try_{}", self.op.function())))
                            ),
                            _ => Err(e),
                        }
                    }
                    // Some row fails: each row on its own, the failing ones NULL.
                    Err(_) => row_by_row(self.op, &x.to_array(n)?, &y.to_array(n)?, &result)?,
                };
                let answer = arrow::compute::cast(&answer, &result)?;
                match result {
                    DataType::Decimal128(precision, _) => self.within_precision(answer, precision)?,
                    _ => answer,
                }
            }
        };
        // A NaN this computed (`∞ / ∞`) has its sign bit set on some machines.
        let out = crate::functions::window::float_keys::one_nan(out);
        crate::columnar::columnar(out, scalar)
    }
}

impl Arithmetic {
    /// `l op r` over DECIMALs (an integer as the DECIMAL of its type), each row exact and rounded
    /// half up to the scale `s`, as Spark's `BigDecimal` arithmetic is; a value of more than `p`
    /// digits is NULL, or fails in ANSI mode. A row is computed in 128 bits where no step
    /// overflows them (nearly always: a pipeline's sums and products of prices), else in 256.
    fn exact_decimals(&self, l: &ArrayRef, r: &ArrayRef, p: u8, s: i8) -> Result<ArrayRef> {
        use arrow::buffer::NullBuffer;
        use arrow::datatypes::{i256, Decimal128Type};
        let as_decimal = |a: &ArrayRef| -> Result<(PrimitiveArray<Decimal128Type>, i32)> {
            let (dp, ds) = decimal_of(a.data_type()).unwrap_or((38, 0));
            let d = arrow::compute::cast(a, &DataType::Decimal128(dp as u8, ds as i8))?;
            Ok((d.as_primitive::<Decimal128Type>().clone(), ds))
        };
        let ((x, sx), (y, sy)) = (as_decimal(l)?, as_decimal(r)?);
        if x.len() != y.len() {
            return exec_err!("DECIMAL {} of {} and {} values", self.op.function(), x.len(), y.len());
        }
        let steps = DecimalSteps::new(self.op, sx, sy, i32::from(s), p);
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
                Some(Err(digits)) if self.on_failure == OnFailure::Error => {
                    return exec_err!(
                        "[NUMERIC_VALUE_OUT_OF_RANGE] a value of {digits} digits cannot be represented as DECIMAL({p},{s}): {}",
                        crate::modes::ansi_hint(Some(&format!("try_{}", self.op.function())))
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
    fn within_precision(&self, answer: ArrayRef, precision: u8) -> Result<ArrayRef> {
        let decimals = answer.as_primitive::<arrow::datatypes::Decimal128Type>();
        if decimals.validate_decimal_precision(precision).is_ok() {
            return Ok(answer);
        }
        if self.on_failure == OnFailure::Error {
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
                crate::modes::ansi_hint(Some(&format!("try_{}", self.op.function())))
            );
        }
        // `null_if_overflow_precision` builds a new array of the default DECIMAL(38,10) type.
        Ok(Arc::new(decimals.null_if_overflow_precision(precision).with_data_type(decimals.data_type().clone())))
    }
}

/// The operation an Arrow overflow names (`1 + 2147483647`), from its message.
pub(crate) fn overflowing(e: &impl std::fmt::Display) -> Option<String> {
    let text = e.to_string();
    let (_, on) = text.split_once("Overflow happened on: ")?;
    Some(on.trim_end_matches(')').trim().to_string())
}

/// An argument as Arrow's kernels take it: a scalar stays one value rather than a column of
/// copies, so `id % 7` computes one pass over `id`.
struct Arg {
    values: ArrayRef,
    scalar: bool,
}

impl Arg {
    fn new(value: &ColumnarValue) -> Result<Arg> {
        Ok(match value {
            ColumnarValue::Array(a) => Arg { values: Arc::clone(a), scalar: false },
            ColumnarValue::Scalar(s) => Arg { values: s.to_array()?, scalar: true },
        })
    }

    fn cast(&self, t: &DataType) -> Result<Arg> {
        Ok(Arg { values: arrow::compute::cast(&self.values, t)?, scalar: self.scalar })
    }

    /// NULL where the value is zero: a divisor no row divides by.
    fn zero_as_null(self) -> Result<Arg> {
        if !self.values.data_type().is_numeric() {
            return Ok(self);
        }
        let zeros = zeros(&self.values)?;
        if zeros.true_count() == 0 {
            return Ok(self);
        }
        Ok(Arg { values: arrow::compute::nullif(&self.values, &zeros)?, scalar: self.scalar })
    }

    fn datum(&self) -> Box<dyn arrow::array::Datum> {
        if self.scalar {
            Box::new(arrow::array::Scalar::new(Arc::clone(&self.values)))
        } else {
            Box::new(Arc::clone(&self.values))
        }
    }

    fn to_array(&self, rows: usize) -> Result<ArrayRef> {
        if !self.scalar || rows == 1 {
            return Ok(Arc::clone(&self.values));
        }
        let at = vec![0u32; rows];
        Ok(arrow::compute::take(&self.values, &arrow::array::UInt32Array::from(at), None)?)
    }
}

/// The wider of two integer types (NULL counting as none), as Spark types `+`, `-`, `*`, `%`
/// of integers.
pub(crate) fn wider_integer(l: &DataType, r: &DataType) -> DataType {
    let rank = |t: &DataType| match t {
        DataType::Null => 0,
        DataType::Int8 | DataType::UInt8 => 1,
        DataType::Int16 | DataType::UInt16 => 2,
        DataType::Int32 => 3,
        _ => 4,
    };
    match rank(l).max(rank(r)) {
        1 => DataType::Int8,
        2 => DataType::Int16,
        0 | 3 => DataType::Int32,
        _ => DataType::Int64,
    }
}

/// A zero of type `t`, as a scalar to compare with.
fn zero(t: &DataType) -> Result<arrow::array::Scalar<ArrayRef>> {
    datafusion::common::ScalarValue::new_zero(t)?.to_scalar()
}

/// Whether a divisor column holds a zero.
fn has_zero(divisor: &ArrayRef) -> Result<bool> {
    if divisor.data_type() == &DataType::Null || !divisor.data_type().is_numeric() {
        return Ok(false);
    }
    Ok(zeros(divisor)?.true_count() > 0)
}

/// Where a number column is zero. Arrow compares floating point by its total order, in which
/// `-0.0` is not `0.0`; Spark's divisor check (`== 0`) finds both: `5.0D % -0.0D` is NULL (an
/// error in ANSI mode) on Spark, and was NaN here.
pub(super) fn zeros(values: &ArrayRef) -> Result<arrow::array::BooleanArray> {
    if values.data_type().is_floating() {
        let doubles = arrow::compute::cast(values, &DataType::Float64)?;
        return Ok(doubles.as_primitive::<Float64Type>().iter().map(|v| v.map(|v| v == 0.0)).collect());
    }
    Ok(arrow::compute::kernels::cmp::eq(values, &zero(values.data_type())?)?)
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
                let (q, r) = (exact / d, exact % d);
                // Half up, away from zero (|r| < d ≤ 10^38: twice it fits a u128).
                if r.unsigned_abs() * 2 >= d.unsigned_abs() {
                    q + exact.signum()
                } else {
                    q
                }
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

fn as_type<T: ArrowPrimitiveType>(a: &ArrayRef) -> Result<PrimitiveArray<T>> {
    Ok(arrow::compute::cast(a, &T::DATA_TYPE)?.as_primitive::<T>().clone())
}

impl Arithmetic {
    /// `try_add`, `try_subtract` and `try_multiply` of integers cast to `T`: NULL where a row
    /// overflows (Arrow's checked kernels fail the whole batch instead).
    fn overflow_as_null<T>(&self, l: &ArrayRef, r: &ArrayRef) -> Result<PrimitiveArray<T>>
    where
        T: ArrowPrimitiveType,
        T::Native: arrow::datatypes::ArrowNativeTypeOp,
    {
        use arrow::datatypes::ArrowNativeTypeOp;
        let (x, y) = (as_type::<T>(l)?, as_type::<T>(r)?);
        if let Ok(answer) = operate(self.op, &x, &y) {
            return Ok(answer.as_primitive::<T>().clone());
        }
        Ok(x.iter()
            .zip(y.iter())
            .map(|(a, b)| {
                let (a, b) = (a?, b?);
                match self.op {
                    Op::Add => a.add_checked(b).ok(),
                    Op::Subtract => a.sub_checked(b).ok(),
                    Op::Multiply => a.mul_checked(b).ok(),
                    // `%` and `/` are computed in `invoke_with_args`, never here.
                    Op::Divide | Op::Mod | Op::IntDivide => None,
                }
            })
            .collect())
    }
}

fn operate(op: Op, x: &dyn arrow::array::Datum, y: &dyn arrow::array::Datum) -> Result<ArrayRef> {
    Ok(match op {
        Op::Add => numeric::add(x, y)?,
        Op::Subtract => numeric::sub(x, y)?,
        Op::Multiply => numeric::mul(x, y)?,
        Op::Divide | Op::IntDivide => numeric::div(x, y)?,
        Op::Mod => numeric::rem(x, y)?,
    })
}

/// The operator row by row, a failing row NULL: the rare path, taken only when some row of
/// the batch fails.
fn row_by_row(op: Op, x: &ArrayRef, y: &ArrayRef, result: &DataType) -> Result<ArrayRef> {
    let mut rows = Vec::with_capacity(x.len());
    for i in 0..x.len() {
        let answer = operate(op, &x.slice(i, 1), &y.slice(i, 1))
            .and_then(|a| Ok(arrow::compute::cast(&a, result)?))
            .unwrap_or_else(|_| arrow::array::new_null_array(result, 1));
        rows.push(answer);
    }
    let refs: Vec<&dyn Array> = rows.iter().map(|a| a.as_ref()).collect();
    if refs.is_empty() {
        return Ok(arrow::array::new_empty_array(result));
    }
    Ok(arrow::compute::concat(&refs)?)
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
        let as_decimal = |a: &ArrayRef| -> Result<(PrimitiveArray<Decimal128Type>, i32)> {
            let (p, s) = decimal_of(a.data_type()).unwrap_or((38, 0));
            let d = arrow::compute::cast(a, &DataType::Decimal128(p as u8, s as i8))?;
            Ok((d.as_primitive::<Decimal128Type>().clone(), s))
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
