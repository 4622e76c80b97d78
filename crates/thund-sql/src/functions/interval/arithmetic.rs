//! Spark's arithmetic of its ANSI intervals (year-month ones as Arrow's `Interval(YearMonth)`,
//! day-time ones as `Duration(Microsecond)`), which DataFusion's operators either lack or type
//! otherwise:
//!
//! - an interval plus or minus one of its kind, checked (an overflow fails, or is NULL for
//!   `try_add`/`try_subtract`);
//! - an interval times or divided by a number, rounded half up as Spark rounds (an integer or
//!   a DECIMAL exactly, a DOUBLE through its value); dividing by zero fails as Spark's
//!   `[INTERVAL_DIVIDED_BY_ZERO]` (NULL for `try_divide`);
//! - `a DIV b` of two intervals of one kind, a BIGINT;
//! - a date minus a date, a day-time interval of days; a date plus or minus a day-time interval,
//!   a timestamp (a date plus a literal of days only stays a date: [`IntervalPlanner`]).
//!
//! DataFusion types these operators while the query is planned, and refuses the ones it has
//! no rule for (`Duration * Int32`), so [`IntervalPlanner`] takes them over at that point: an
//! operator with an interval operand becomes the `arithmetic` function of its operation, which
//! computes it here ([`plan`], [`compute`]). A timestamp plus or minus an interval, and a date
//! plus or minus a year-month one, are Arrow's own kernels (a date moved by months keeps its
//! day or the month's last, as Spark's does).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, DurationMicrosecondArray, Int64Array, IntervalYearMonthArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, DurationMicrosecondType, Float64Type, Int64Type, IntervalUnit,
    IntervalYearMonthType, TimeUnit,
};
use datafusion::common::{exec_err, DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{lit, Expr, ExprSchemable};
use sqlparser::ast::BinaryOperator;

use crate::functions::math::arithmetic::{OnFailure, Op};

const MICROS_PER_DAY: i64 = 86_400_000_000;

/// The Arrow type of Spark's day-time intervals.
pub(crate) const DAY_TIME: DataType = DataType::Duration(TimeUnit::Microsecond);
/// The Arrow type of Spark's year-month intervals.
pub(crate) const YEAR_MONTH: DataType = DataType::Interval(IntervalUnit::YearMonth);

/// Whether `t` is one of Spark's ANSI interval types as they arrive here.
pub(crate) fn is_interval(t: &DataType) -> bool {
    matches!(t, DataType::Interval(IntervalUnit::YearMonth) | DataType::Duration(_))
}

/// How an operator over intervals is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IntervalPlan {
    /// Two intervals of one kind added or subtracted.
    Sum { year_month: bool },
    /// An interval times or divided by a number (the interval on the left unless `swapped`).
    Scale { year_month: bool, swapped: bool },
    /// `DIV` of two intervals of one kind.
    Quotient,
    /// A date minus a date.
    DateDifference,
}

/// The plan for `l op r` where an operand is an interval (or both are dates), if it is one
/// computed here.
pub(crate) fn plan(op: Op, l: &DataType, r: &DataType) -> Option<IntervalPlan> {
    let ym = |t: &DataType| t == &YEAR_MONTH;
    let dt = |t: &DataType| matches!(t, DataType::Duration(_));
    let number = |t: &DataType| t.is_numeric() || t == &DataType::Null;
    let same_kind = (ym(l) && ym(r)) || (dt(l) && dt(r));
    match op {
        Op::Add | Op::Subtract if same_kind => Some(IntervalPlan::Sum { year_month: ym(l) }),
        Op::Subtract if l == &DataType::Date32 && r == &DataType::Date32 => Some(IntervalPlan::DateDifference),
        Op::Multiply if is_interval(l) && number(r) => Some(IntervalPlan::Scale { year_month: ym(l), swapped: false }),
        Op::Multiply if number(l) && is_interval(r) => Some(IntervalPlan::Scale { year_month: ym(r), swapped: true }),
        Op::Divide if is_interval(l) && number(r) => Some(IntervalPlan::Scale { year_month: ym(l), swapped: false }),
        Op::IntDivide if same_kind => Some(IntervalPlan::Quotient),
        _ => None,
    }
}

/// The type `plan` answers in.
pub(crate) fn result_type(plan: IntervalPlan) -> DataType {
    match plan {
        IntervalPlan::Sum { year_month: true } | IntervalPlan::Scale { year_month: true, .. } => YEAR_MONTH,
        IntervalPlan::Sum { .. } | IntervalPlan::Scale { .. } | IntervalPlan::DateDifference => DAY_TIME,
        IntervalPlan::Quotient => DataType::Int64,
    }
}

/// How many microseconds make one of the last field of the interval `e` computes, where its
/// form shows the fields: a date minus a date is an INTERVAL DAY, a timestamp minus a timestamp
/// an INTERVAL DAY TO SECOND (the Arrow type keeps neither).
pub(crate) fn end_field_micros(e: &Expr, schema: &DFSchema) -> Option<i64> {
    let types = |a: &Expr, b: &Expr| Some((a.get_type(schema).ok()?, b.get_type(schema).ok()?));
    match e {
        Expr::ScalarFunction(f) if crate::functions::math::arithmetic::is_subtraction(&f.func) => {
            match f.args.as_slice() {
                [a, b] => matches!(types(a, b)?, (DataType::Date32, DataType::Date32)).then_some(MICROS_PER_DAY),
                _ => None,
            }
        }
        Expr::BinaryExpr(b) if b.op == datafusion::logical_expr::Operator::Minus => {
            matches!(types(&b.left, &b.right)?, (DataType::Timestamp(..), DataType::Timestamp(..))).then_some(1_000_000)
        }
        _ => None,
    }
}

/// `CAST(interval AS integer type)` as Spark casts a day-time interval whose last field is
/// `unit` microseconds long: the number of whole units, cut toward zero, and an overflow of the
/// type `[CAST_OVERFLOW]` in both of Spark's modes (NULL for `try_cast`).
pub(crate) fn cast_to_integer(interval: Expr, unit: i64, to: &DataType, try_: bool) -> Expr {
    let micros = datafusion::logical_expr::cast(interval, DataType::Int64);
    let div = Arc::new(crate::functions::math::arithmetic::operator(Op::IntDivide, OnFailure::Error));
    let units = Expr::ScalarFunction(ScalarFunction { func: div, args: vec![micros, lit(unit)] });
    match crate::functions::cast::spark_cast(units.clone(), &DataType::Int64, to, try_, true) {
        Some(narrowed) => narrowed,
        None if try_ => datafusion::logical_expr::try_cast(units, to.clone()),
        None => datafusion::logical_expr::cast(units, to.clone()),
    }
}

/// Why a row has no answer.
enum Failure {
    Overflow,
    DivideByZero,
}

/// `l op r` by `plan`, over whole columns.
pub(crate) fn compute(
    plan: IntervalPlan,
    op: Op,
    on_failure: OnFailure,
    l: &ArrayRef,
    r: &ArrayRef,
) -> Result<ArrayRef> {
    let n = l.len().max(r.len());
    let at = |a: &ArrayRef, i: usize| if a.len() == 1 { 0 } else { i };
    let mut out: Vec<Option<i64>> = Vec::with_capacity(n);
    let fail = |f: Failure, out: &mut Vec<Option<i64>>| -> Result<()> {
        if on_failure == OnFailure::Null {
            out.push(None);
            return Ok(());
        }
        match f {
            Failure::Overflow => exec_err!(
                "[INTERVAL_ARITHMETIC_OVERFLOW] the interval overflows: use try_{} to get NULL instead",
                op_name(op)
            ),
            Failure::DivideByZero => {
                exec_err!("[INTERVAL_DIVIDED_BY_ZERO] division by zero: use try_divide to get NULL instead")
            }
        }
    };
    let year_month = result_type(plan) == YEAR_MONTH;
    let fits = |v: i64| !year_month || i32::try_from(v).is_ok();
    match plan {
        IntervalPlan::Sum { .. } | IntervalPlan::Quotient => {
            let (x, y) = (interval_values(l)?, interval_values(r)?);
            for i in 0..n {
                let (Some(a), Some(b)) = (x[at(l, i)], y[at(r, i)]) else {
                    out.push(None);
                    continue;
                };
                let answer = match (plan, op) {
                    (IntervalPlan::Quotient, _) if b == 0 => Err(Failure::DivideByZero),
                    (IntervalPlan::Quotient, _) => a.checked_div(b).ok_or(Failure::Overflow),
                    (_, Op::Add) => a.checked_add(b).filter(|v| fits(*v)).ok_or(Failure::Overflow),
                    _ => a.checked_sub(b).filter(|v| fits(*v)).ok_or(Failure::Overflow),
                };
                match answer {
                    Ok(v) => out.push(Some(v)),
                    Err(f) => fail(f, &mut out)?,
                }
            }
        }
        IntervalPlan::DateDifference => {
            let (x, y) = (l.as_primitive::<Date32Type>(), r.as_primitive::<Date32Type>());
            for i in 0..n {
                let (a, b) = (x.is_valid(at(l, i)), y.is_valid(at(r, i)));
                out.push(
                    (a && b).then(|| (i64::from(x.value(at(l, i))) - i64::from(y.value(at(r, i)))) * MICROS_PER_DAY),
                );
            }
        }
        IntervalPlan::Scale { swapped, .. } => {
            let (interval, number) = if swapped { (r, l) } else { (l, r) };
            let values = interval_values(interval)?;
            let factors = factors(number)?;
            for i in 0..n {
                let (Some(v), Some(f)) = (values[at(interval, i)], factors[at(number, i)]) else {
                    out.push(None);
                    continue;
                };
                match scale(v, f, op == Op::Divide).and_then(|v| if fits(v) { Ok(v) } else { Err(Failure::Overflow) }) {
                    Ok(v) => out.push(Some(v)),
                    Err(f) => fail(f, &mut out)?,
                }
            }
        }
    }
    Ok(match result_type(plan) {
        DataType::Int64 => Arc::new(Int64Array::from(out)),
        t if t == YEAR_MONTH => {
            Arc::new(out.into_iter().map(|v| v.map(|v| v as i32)).collect::<IntervalYearMonthArray>())
        }
        _ => Arc::new(DurationMicrosecondArray::from(out)),
    })
}

fn op_name(op: Op) -> &'static str {
    match op {
        Op::Add => "add",
        Op::Subtract => "subtract",
        Op::Multiply => "multiply",
        _ => "divide",
    }
}

/// An interval column's values: months, or microseconds.
pub(crate) fn interval_values(a: &ArrayRef) -> Result<Vec<Option<i64>>> {
    Ok(match a.data_type() {
        DataType::Interval(IntervalUnit::YearMonth) => {
            a.as_primitive::<IntervalYearMonthType>().iter().map(|v| v.map(i64::from)).collect()
        }
        DataType::Duration(_) => {
            let micros = arrow::compute::cast(a, &DAY_TIME)?;
            micros.as_primitive::<DurationMicrosecondType>().iter().collect()
        }
        DataType::Null => vec![None; a.len()],
        other => return exec_err!("{other} is no interval"),
    })
}

/// A number an interval is scaled by, as Spark computes with it.
#[derive(Clone, Copy)]
enum Factor {
    Integer(i64),
    /// An unscaled DECIMAL and its scale.
    Decimal(i128, u32),
    Double(f64),
}

fn factors(a: &ArrayRef) -> Result<Vec<Option<Factor>>> {
    Ok(match a.data_type() {
        t if t.is_integer() || t == &DataType::Null => {
            let ints = arrow::compute::cast(a, &DataType::Int64)?;
            ints.as_primitive::<Int64Type>().iter().map(|v| v.map(Factor::Integer)).collect()
        }
        DataType::Decimal128(_, s) => {
            let scale = u32::try_from(*s).unwrap_or(0);
            a.as_primitive::<Decimal128Type>().iter().map(|v| v.map(|v| Factor::Decimal(v, scale))).collect()
        }
        _ => {
            let doubles = arrow::compute::cast(a, &DataType::Float64)?;
            doubles.as_primitive::<Float64Type>().iter().map(|v| v.map(Factor::Double)).collect()
        }
    })
}

/// `n / d` rounded half up (a tie away from zero), as Java's `RoundingMode.HALF_UP`.
fn divide_half_up(n: i128, d: i128) -> Option<i128> {
    let (q, r) = (n.checked_div(d)?, n.checked_rem(d)?);
    if r.unsigned_abs() * 2 >= d.unsigned_abs() {
        Some(q + if (n < 0) == (d < 0) { 1 } else { -1 })
    } else {
        Some(q)
    }
}

/// `v` times (or divided by) `f`, rounded half up, as Spark's `MultiplyYMInterval`,
/// `DivideDTInterval` and their kin compute it.
fn scale(v: i64, f: Factor, divide: bool) -> std::result::Result<i64, Failure> {
    let v128 = i128::from(v);
    let exact = match f {
        Factor::Integer(k) if divide => {
            if k == 0 {
                return Err(Failure::DivideByZero);
            }
            divide_half_up(v128, i128::from(k))
        }
        Factor::Integer(k) => v128.checked_mul(i128::from(k)),
        Factor::Decimal(u, s) => {
            let ten = 10i128.checked_pow(s).ok_or(Failure::Overflow)?;
            if divide {
                if u == 0 {
                    return Err(Failure::DivideByZero);
                }
                v128.checked_mul(ten).and_then(|n| divide_half_up(n, u))
            } else {
                v128.checked_mul(u).and_then(|n| divide_half_up(n, ten))
            }
        }
        Factor::Double(k) => {
            if divide && k == 0.0 {
                return Err(Failure::DivideByZero);
            }
            let x = if divide { v as f64 / k } else { v as f64 * k };
            // `f64::round` rounds a tie away from zero, as HALF_UP does.
            let x = x.round();
            if !x.is_finite() || x.abs() >= i64::MAX as f64 {
                return Err(Failure::Overflow);
            }
            Some(x as i128)
        }
    };
    exact.and_then(|x| i64::try_from(x).ok()).ok_or(Failure::Overflow)
}

/// Plans the operators `+ - * / DIV` with an interval operand (and a date minus a date) as the
/// `arithmetic` functions that compute them by Spark's rules, before DataFusion types them.
#[derive(Debug)]
pub(crate) struct IntervalPlanner {
    /// Whether the session is in ANSI mode (where `DIV` by a zero interval fails).
    pub(crate) ansi: bool,
}

impl ExprPlanner for IntervalPlanner {
    fn plan_binary_op(&self, expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        let op = match expr.op {
            BinaryOperator::Plus => Op::Add,
            BinaryOperator::Minus => Op::Subtract,
            BinaryOperator::Multiply => Op::Multiply,
            BinaryOperator::Divide => Op::Divide,
            BinaryOperator::MyIntegerDivide => Op::IntDivide,
            _ => return Ok(PlannerResult::Original(expr)),
        };
        let (Ok(l), Ok(r)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let dates = l == DataType::Date32 && r == DataType::Date32;
        if !(is_interval(&l) || is_interval(&r) || (dates && op == Op::Subtract)) {
            return Ok(PlannerResult::Original(expr));
        }
        let RawBinaryExpr { left, right, .. } = expr;
        // A date plus or minus a literal of days is a date (`Plan::DateDays`).
        let (left, right) = match (op, &l, &r) {
            (Op::Add | Op::Subtract, DataType::Date32, _) => {
                match crate::functions::interval::literals::day_count(&right) {
                    Some(days) => (left, days_literal(days)),
                    None => (left, right),
                }
            }
            (Op::Add, _, DataType::Date32) => match crate::functions::interval::literals::day_count(&left) {
                Some(days) => (right, days_literal(days)),
                None => (left, right),
            },
            _ => (left, right),
        };
        let on_failure = if op == Op::IntDivide && !self.ansi { OnFailure::Null } else { OnFailure::Error };
        let func = Arc::new(crate::functions::math::arithmetic::operator(op, on_failure));
        Ok(PlannerResult::Planned(Expr::ScalarFunction(ScalarFunction { func, args: vec![left, right] })))
    }

    /// `EXTRACT(field FROM x)`: `date_part(field, x)`, Spark's for an interval `x` (the planner
    /// does not know `x`'s type here; for any other the call is the built-in's).
    fn plan_extract(&self, args: Vec<Expr>) -> Result<PlannerResult<Vec<Expr>>> {
        // Spark's `date_part` (the session's: its `dow` counts 1 = Sunday), as the planner this
        // one stands before would have used.
        let inner = datafusion_spark::function::datetime::date_part();
        let signature = datafusion::logical_expr::Signature::user_defined(inner.signature().volatility);
        let func = Arc::new(datafusion::logical_expr::ScalarUDF::from(IntervalUdf {
            f: IntervalFunction::Part,
            inner,
            signature,
        }));
        Ok(PlannerResult::Planned(Expr::ScalarFunction(ScalarFunction { func, args })))
    }
}

/// A function of one interval computed here.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum IntervalFunction {
    /// `abs`: the interval without its sign.
    Abs,
    /// `sign`/`signum`: -1.0, 0.0 or 1.0.
    Signum,
    /// `date_part(field, interval)` (`extract`, `datepart`): one field of it, as Spark types it.
    Part,
}

/// Replaces the functions `abs`, `signum` and `date_part` (with their aliases) by ones that
/// compute Spark's answer for an interval and the built-in's for anything else: the built-ins
/// refuse an interval while the query is planned, before any rewrite could see it.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    for (name, f) in
        [("abs", IntervalFunction::Abs), ("signum", IntervalFunction::Signum), ("date_part", IntervalFunction::Part)]
    {
        if let Ok(inner) = datafusion::execution::FunctionRegistry::udf(ctx, name) {
            let signature = datafusion::logical_expr::Signature::user_defined(inner.signature().volatility);
            ctx.register_udf(datafusion::logical_expr::ScalarUDF::from(IntervalUdf { f, inner, signature }));
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalUdf {
    f: IntervalFunction,
    /// The built-in, for every other argument.
    inner: Arc<datafusion::logical_expr::ScalarUDF>,
    signature: datafusion::logical_expr::Signature,
}

impl IntervalUdf {
    fn of_interval(types: impl Iterator<Item = DataType>) -> bool {
        types.last().is_some_and(|t| is_interval(&t))
    }
}

/// A field Spark's `extract` takes of an interval, by its names there.
fn part_field(name: &str) -> Option<crate::functions::interval::literals::Field> {
    use crate::functions::interval::literals::Field;
    Some(match name.to_ascii_uppercase().as_str() {
        "YEAR" | "Y" | "YEARS" | "YR" | "YRS" => Field::Year,
        "MONTH" | "MON" | "MONS" | "MONTHS" => Field::Month,
        "DAY" | "D" | "DAYS" => Field::Day,
        "HOUR" | "H" | "HOURS" | "HR" | "HRS" => Field::Hour,
        "MINUTE" | "M" | "MIN" | "MINS" | "MINUTES" => Field::Minute,
        "SECOND" | "S" | "SEC" | "SECONDS" | "SECS" => Field::Second,
        _ => return None,
    })
}

impl datafusion::logical_expr::ScalarUDFImpl for IntervalUdf {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &datafusion::logical_expr::Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        if Self::of_interval(arg_types.iter().cloned()) {
            return Ok(arg_types.to_vec());
        }
        let fields: Vec<arrow::datatypes::FieldRef> =
            arg_types.iter().map(|t| Arc::new(arrow::datatypes::Field::new("a", t.clone(), true))).collect();
        let coerced =
            datafusion::logical_expr::type_coercion::functions::fields_with_udf(&fields, self.inner.as_ref())?;
        Ok(coerced.iter().map(|f| f.data_type().clone()).collect())
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn simplify(
        &self,
        args: Vec<Expr>,
        info: &datafusion::logical_expr::simplify::SimplifyContext,
    ) -> Result<datafusion::logical_expr::simplify::ExprSimplifyResult> {
        self.inner.simplify(args, info)
    }

    fn preimage(
        &self,
        args: &[Expr],
        lit_expr: &Expr,
        info: &datafusion::logical_expr::simplify::SimplifyContext,
    ) -> Result<datafusion::logical_expr::preimage::PreimageResult> {
        self.inner.preimage(args, lit_expr, info)
    }

    fn output_ordering(
        &self,
        inputs: &[datafusion::logical_expr::sort_properties::ExprProperties],
    ) -> Result<datafusion::logical_expr::sort_properties::SortProperties> {
        self.inner.output_ordering(inputs)
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<arrow::datatypes::FieldRef> {
        use crate::functions::interval::literals::Field;
        if !Self::of_interval(args.arg_fields.iter().map(|f| f.data_type().clone())) {
            return self.inner.return_field_from_args(args);
        }
        let interval = args.arg_fields.last().map(|f| f.data_type().clone()).unwrap_or(DataType::Null);
        let t = match self.f {
            IntervalFunction::Abs => interval,
            IntervalFunction::Signum => DataType::Float64,
            IntervalFunction::Part => {
                let field = match args.scalar_arguments.first() {
                    Some(Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)))) => part_field(s),
                    _ => None,
                };
                let year_month = interval == YEAR_MONTH;
                match field {
                    Some(Field::Year) if year_month => DataType::Int32,
                    Some(Field::Month) if year_month => DataType::Int8,
                    Some(Field::Day) if !year_month => DataType::Int32,
                    Some(Field::Hour | Field::Minute) if !year_month => DataType::Int8,
                    Some(Field::Second) if !year_month => DataType::Decimal128(8, 6),
                    _ => {
                        return datafusion::common::plan_err!(
                            "[INVALID_EXTRACT_FIELD] the field {:?} cannot be extracted from {}",
                            args.scalar_arguments.first().cloned().flatten().map(|v| v.to_string()).unwrap_or_default(),
                            crate::types::spark_type_name(&interval)
                        )
                    }
                }
            }
        };
        Ok(Arc::new(arrow::datatypes::Field::new(self.name(), t, true)))
    }

    fn invoke_with_args(
        &self,
        args: datafusion::logical_expr::ScalarFunctionArgs,
    ) -> Result<datafusion::logical_expr::ColumnarValue> {
        use crate::functions::interval::literals::Field;
        if !Self::of_interval(args.args.iter().map(|a| a.data_type())) {
            return self.inner.invoke_with_args(args);
        }
        let n = args.number_rows;
        let scalar = args.args.iter().all(|a| matches!(a, datafusion::logical_expr::ColumnarValue::Scalar(_)));
        let Some(interval) = args.args.last() else { return exec_err!("{} takes an interval", self.name()) };
        let interval = interval.to_array(n)?;
        let values = interval_values(&interval)?;
        let year_month = interval.data_type() == &YEAR_MONTH;
        let out: ArrayRef = match self.f {
            IntervalFunction::Abs => {
                let mut abs = Vec::with_capacity(values.len());
                for v in &values {
                    match v.map(|v| v.checked_abs().filter(|a| !year_month || i32::try_from(*a).is_ok())) {
                        Some(None) => return exec_err!("[INTERVAL_ARITHMETIC_OVERFLOW] abs of the least interval"),
                        other => abs.push(other.flatten()),
                    }
                }
                if year_month {
                    Arc::new(abs.into_iter().map(|v| v.map(|v| v as i32)).collect::<IntervalYearMonthArray>())
                } else {
                    Arc::new(DurationMicrosecondArray::from(abs))
                }
            }
            IntervalFunction::Signum => {
                Arc::new(values.iter().map(|v| v.map(|v| v.signum() as f64)).collect::<arrow::array::Float64Array>())
            }
            IntervalFunction::Part => {
                let field = match args.return_field.data_type() {
                    DataType::Decimal128(..) => Field::Second,
                    _ => {
                        let text = args.args[0].to_array(1)?;
                        let text = arrow::compute::cast(&text, &DataType::Utf8)?;
                        part_field(text.as_string::<i32>().value(0)).unwrap_or(Field::Second)
                    }
                };
                let (hour, minute) = (3_600_000_000i64, 60_000_000i64);
                let part = |v: i64| match field {
                    Field::Year => v / 12,
                    Field::Month => v % 12,
                    Field::Day => v / MICROS_PER_DAY,
                    Field::Hour => v % MICROS_PER_DAY / hour,
                    Field::Minute => v % hour / minute,
                    Field::Second => v % minute,
                };
                let parts: Vec<Option<i64>> = values.iter().map(|v| v.map(part)).collect();
                match args.return_field.data_type() {
                    DataType::Decimal128(p, s) => Arc::new(
                        parts
                            .into_iter()
                            .map(|v| v.map(i128::from))
                            .collect::<arrow::array::Decimal128Array>()
                            .with_precision_and_scale(*p, *s)?,
                    ),
                    t => arrow::compute::cast(&Int64Array::from(parts), t)?,
                }
            }
        };
        crate::columnar::columnar(out, scalar)
    }
}

fn days_literal(days: i64) -> Expr {
    match i32::try_from(days) {
        Ok(d) => lit(d),
        Err(_) => lit(ScalarValue::Int64(Some(days))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scaling_rounds_half_up_as_spark_does() {
        let s = |v, f, d| scale(v, f, d).ok();
        // Spark 4.1: INTERVAL '3' MONTH * 1.5 = 5 months, '1' MONTH / 3 = 0, '5' MONTH / 3 = 2.
        assert_eq!(s(3, Factor::Decimal(15, 1), false), Some(5));
        assert_eq!(s(1, Factor::Integer(3), true), Some(0));
        assert_eq!(s(5, Factor::Integer(3), true), Some(2));
        assert_eq!(s(-5, Factor::Integer(2), true), Some(-3));
        assert_eq!(s(86_400_000_000, Factor::Double(2.5), false), Some(216_000_000_000));
        assert!(matches!(scale(1, Factor::Integer(0), true), Err(Failure::DivideByZero)));
        assert!(matches!(scale(i64::MAX, Factor::Integer(2), false), Err(Failure::Overflow)));
    }
}
