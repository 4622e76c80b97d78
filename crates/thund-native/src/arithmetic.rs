//! Spark's `try_add`, `try_subtract`, `try_multiply`, `try_divide` and `try_mod`: the operator's
//! answer, or NULL where the operator would fail (an integer overflow, a division by zero).
//!
//! Integers are computed here with checked arithmetic, vectorised over the arrays: the common
//! type of the two (INT, or BIGINT if either is), each overflowing row NULL. `try_divide` of
//! numbers is a DOUBLE, as Spark's, NULL for a zero divisor. A date plus or minus an integer
//! moves by days. Every other pair (decimals, floating point, dates and timestamps with
//! intervals) takes DataFusion's operator with its own type rules; a row it cannot compute is
//! NULL. Decimal division is refused: Spark's result scale differs from DataFusion's.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray};
use arrow::compute::kernels::numeric;
use arrow::datatypes::{ArrowPrimitiveType, DataType, Date32Type, Float64Type, Int32Type, Int64Type};
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::type_coercion::binary::BinaryTypeCoercer;
use datafusion::logical_expr::{
    ColumnarValue, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for op in [Op::Add, Op::Subtract, Op::Multiply, Op::Divide, Op::Mod] {
        ctx.register_udf(ScalarUDF::from(TryArithmetic { op, signature: Signature::any(2, Volatility::Immutable) }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Add,
    Subtract,
    Multiply,
    Divide,
    Mod,
}

impl Op {
    fn operator(self) -> Operator {
        match self {
            Op::Add => Operator::Plus,
            Op::Subtract => Operator::Minus,
            Op::Multiply => Operator::Multiply,
            Op::Divide => Operator::Divide,
            Op::Mod => Operator::Modulo,
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct TryArithmetic {
    op: Op,
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
}

impl TryArithmetic {
    fn plan(&self, l: &DataType, r: &DataType) -> Result<Plan> {
        let int = |t: &DataType| t.is_integer() || t == &DataType::Null;
        if int(l) && int(r) {
            if self.op == Op::Divide {
                return Ok(Plan::Doubles);
            }
            let wide = [l, r].iter().any(|t| matches!(t, DataType::Int64 | DataType::UInt32 | DataType::UInt64));
            return Ok(Plan::Integers(if wide { DataType::Int64 } else { DataType::Int32 }));
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
        if [l, r].iter().any(|t| matches!(t, DataType::Interval(_)))
            && !matches!(l, DataType::Date32 | DataType::Date64 | DataType::Timestamp(..))
        {
            return plan_err!(
                "{} of {} and {} runs on the Spark backend (Spark's year-month and day-time intervals are other types)",
                self.name(),
                crate::types::spark_type_name(l),
                crate::types::spark_type_name(r)
            );
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

impl ScalarUDFImpl for TryArithmetic {
    fn name(&self) -> &str {
        match self.op {
            Op::Add => "try_add",
            Op::Subtract => "try_subtract",
            Op::Multiply => "try_multiply",
            Op::Divide => "try_divide",
            Op::Mod => "try_mod",
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
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let (l, r) = (args.args[0].to_array(n)?, args.args[1].to_array(n)?);
        let out: ArrayRef = match self.plan(l.data_type(), r.data_type())? {
            Plan::Integers(DataType::Int32) => Arc::new(checked::<Int32Type>(self.op, &l, &r)?),
            Plan::Integers(_) => Arc::new(checked::<Int64Type>(self.op, &l, &r)?),
            Plan::Doubles => {
                let (x, y) = (as_type::<Float64Type>(&l)?, as_type::<Float64Type>(&r)?);
                let quotient: PrimitiveArray<Float64Type> = x
                    .iter()
                    .zip(y.iter())
                    .map(|(a, b)| match (a, b) {
                        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
                        _ => None,
                    })
                    .collect();
                Arc::new(quotient)
            }
            Plan::DateDays => {
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
            Plan::Operator(lt, rt, result) => {
                let (x, y) = (arrow::compute::cast(&l, &lt)?, arrow::compute::cast(&r, &rt)?);
                let answer = match operate(self.op, &x, &y) {
                    Ok(a) => a,
                    // Some row fails: each row on its own, the failing ones NULL.
                    Err(_) => row_by_row(self.op, &x, &y, &result)?,
                };
                arrow::compute::cast(&answer, &result)?
            }
        };
        crate::functions::columnar(out, scalar)
    }
}

fn as_type<T: ArrowPrimitiveType>(a: &ArrayRef) -> Result<PrimitiveArray<T>> {
    Ok(arrow::compute::cast(a, &T::DATA_TYPE)?.as_primitive::<T>().clone())
}

/// Checked integer arithmetic over two arrays cast to `T`: NULL where it overflows or divides
/// by zero.
fn checked<T>(op: Op, l: &ArrayRef, r: &ArrayRef) -> Result<PrimitiveArray<T>>
where
    T: ArrowPrimitiveType,
    T::Native: arrow::datatypes::ArrowNativeTypeOp,
{
    use arrow::datatypes::ArrowNativeTypeOp;
    let (x, y) = (as_type::<T>(l)?, as_type::<T>(r)?);
    Ok(x.iter()
        .zip(y.iter())
        .map(|(a, b)| {
            let (a, b) = (a?, b?);
            match op {
                Op::Add => a.add_checked(b).ok(),
                Op::Subtract => a.sub_checked(b).ok(),
                Op::Multiply => a.mul_checked(b).ok(),
                // The one remainder that overflows, MIN % -1, is 0 (as on Spark).
                Op::Mod => (!b.is_zero()).then(|| a.mod_wrapping(b)),
                // Integers divide as DOUBLEs (`Plan::Doubles`), never here.
                Op::Divide => None,
            }
        })
        .collect())
}

fn operate(op: Op, x: &dyn arrow::array::Datum, y: &dyn arrow::array::Datum) -> Result<ArrayRef> {
    Ok(match op {
        Op::Add => numeric::add(x, y)?,
        Op::Subtract => numeric::sub(x, y)?,
        Op::Multiply => numeric::mul(x, y)?,
        Op::Divide => numeric::div(x, y)?,
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
