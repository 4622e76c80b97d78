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
//! and rounding (`decimals`); `try_divide` of decimals is refused.

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

use super::decimals;

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
    pub(super) fn function(self) -> &'static str {
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
            if let Some(DataType::Decimal128(p, s)) = decimals::decimal_result_type(self.op, l, r) {
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
            Plan::Decimal(p, s) => decimals::exact(self.op, self.on_failure, &l.to_array(n)?, &r.to_array(n)?, p, s)?,
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
                    DataType::Decimal128(precision, _) => {
                        decimals::within_precision(self.op, self.on_failure, answer, precision)?
                    }
                    _ => answer,
                }
            }
        };
        // A NaN this computed (`∞ / ∞`) has its sign bit set on some machines.
        let out = crate::functions::window::float_keys::one_nan(out);
        crate::columnar::columnar(out, scalar)
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
