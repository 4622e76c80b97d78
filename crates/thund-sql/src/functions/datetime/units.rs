//! Spark's datetime arithmetic by a named unit: `timestampadd(unit, n, t)` (also spelled
//! `dateadd` / `date_add` with three arguments) and `timestampdiff(unit, start, end)` (also
//! `datediff` / `date_diff` / `timediff` with three). The unit is a bare word (`HOUR`), which
//! the parser reads as a column: a parse rewrite turns it into text for the two UDFs here.
//!
//! As Spark computes them (`DateTimeUtils.timestampAdd` / `timestampDiff`, Java's
//! `LocalDateTime` in the session's zone, UTC here):
//! - adding: microseconds to weeks are a fixed length each (a day is 24 hours in UTC); months,
//!   quarters and years move the calendar and keep the day where the month has it, else its last
//!   day (`2024-01-31` + 1 MONTH is `2024-02-29`). An amount is a BIGINT (`1.5` adds 1). A
//!   result past the range fails with `DATETIME_OVERFLOW`, in both modes.
//! - the difference counts whole units towards zero: for microseconds to weeks the time between
//!   the two divided by the unit; for months (quarters and years are 3 and 12 of them) the
//!   calendar months from one to the other, less one where the end's day and time of day come
//!   before the start's (`2024-01-31 10:00` to `2024-02-29 09:00` is 0 months).
//!
//! A DATE or a text is read as a TIMESTAMP; a TIMESTAMP_NTZ stays one (the answer is the same
//! in UTC).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, PrimitiveArray};
use arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;
use sqlparser::ast::{Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, Value};

/// The UDF a three-argument `timestampadd` is planned as.
pub(crate) const ADD: &str = "__thund_timestampadd";
/// The UDF a three-argument `timestampdiff` is planned as.
pub(crate) const DIFF: &str = "__thund_timestampdiff";

/// Registers the two UDFs with `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(ByUnit { add: true, signature: Signature::any(3, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(ByUnit { add: false, signature: Signature::any(3, Volatility::Immutable) }));
}

/// `timestampadd(UNIT, n, t)` (and its other names) as a call of [`ADD`] with the unit as text;
/// other calls are left as written.
pub(crate) fn add(expr: &SqlExpr) -> Option<SqlExpr> {
    with_unit(expr, ADD)
}

/// `timestampdiff(UNIT, start, end)` (and its other names) as a call of [`DIFF`].
pub(crate) fn diff(expr: &SqlExpr) -> Option<SqlExpr> {
    with_unit(expr, DIFF)
}

fn with_unit(expr: &SqlExpr, udf: &str) -> Option<SqlExpr> {
    let SqlExpr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::Identifier(unit))), _, _] = list.args.as_slice() else {
        return None;
    };
    // A quoted word is a column, and Spark takes no unit as text: both stay errors.
    if unit.quote_style.is_some() {
        return None;
    }
    let unit = unit.value.to_ascii_uppercase();
    let known = MICROS.iter().chain(&MONTHS).any(|(u, _)| *u == unit);
    if !known || (udf == DIFF && unit == "DAYOFYEAR") {
        return None;
    }
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new(udf)]);
    let mut args = list.clone();
    args.args[0] = FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::value(Value::SingleQuotedString(unit))));
    call.args = FunctionArguments::List(args);
    Some(SqlExpr::Function(call))
}

/// A text argument read as a TIMESTAMP by Spark's cast (in ANSI mode a text that is no
/// timestamp fails, without it it is NULL), which the analysis rules give the cast written here;
/// the cast type coercion would add is Arrow's.
pub(crate) fn texts_as_timestamps(
    mut c: crate::declare::Call,
    cx: &crate::declare::PlanContext,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::logical_expr::ExprSchemable;
    let first = if c.name() == ADD { 2 } else { 1 };
    let mut changed = false;
    for arg in c.args.iter_mut().skip(first) {
        if arg.get_type(cx.schema).is_ok_and(|t| t.is_string()) {
            *arg = (cx.again)(datafusion::logical_expr::cast(arg.clone(), crate::types::spark_timestamp()))?.data;
            changed = true;
        }
    }
    match changed {
        true => Ok(datafusion::common::tree_node::Transformed::yes(c.into_expr())),
        false => c.unchanged(),
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ByUnit {
    /// `timestampadd`, or `timestampdiff`.
    add: bool,
    signature: Signature,
}

/// The units of a fixed length (a day is 24 hours in UTC), by their microseconds.
const MICROS: [(&str, i64); 8] = [
    ("MICROSECOND", 1),
    ("MILLISECOND", 1_000),
    ("SECOND", 1_000_000),
    ("MINUTE", 60_000_000),
    ("HOUR", 3_600_000_000),
    ("DAY", 86_400_000_000),
    ("DAYOFYEAR", 86_400_000_000),
    ("WEEK", 604_800_000_000),
];

/// The calendar's units, by their months.
const MONTHS: [(&str, i64); 3] = [("MONTH", 1), ("QUARTER", 3), ("YEAR", 12)];

/// The type a datetime argument is read as: a TIMESTAMP_NTZ stays one, the rest are TIMESTAMPs.
fn instant_type(t: &DataType) -> Result<DataType> {
    match t {
        DataType::Timestamp(_, None) => Ok(DataType::Timestamp(TimeUnit::Microsecond, None)),
        DataType::Timestamp(..)
        | DataType::Date32
        | DataType::Date64
        | DataType::Null
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View => Ok(crate::types::spark_timestamp()),
        other => plan_err!("a timestamp, a date or a text is expected, not {}", crate::types::spark_type_name(other)),
    }
}

impl ScalarUDFImpl for ByUnit {
    fn name(&self) -> &str {
        match self.add {
            true => ADD,
            false => DIFF,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let [unit, second, third] = args else { return plan_err!("{} takes a unit and two values", self.name()) };
        if !matches!(unit, DataType::Utf8) {
            return plan_err!("the unit of {} is a word such as HOUR", self.name());
        }
        Ok(match self.add {
            true => {
                let amount_fits = second.is_numeric() || matches!(second, DataType::Null);
                if !amount_fits {
                    return plan_err!(
                        "timestampadd adds a number of units, not a {}",
                        crate::types::spark_type_name(second)
                    );
                }
                vec![DataType::Utf8, DataType::Int64, instant_type(third)?]
            }
            false => vec![DataType::Utf8, instant_type(second)?, instant_type(third)?],
        })
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match self.add {
            true => instant_type(&args[2]),
            false => Ok(DataType::Int64),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(ScalarValue::Utf8(Some(unit))) = &args.args[0] else {
            return exec_err!("the unit of {} is a word such as HOUR", self.name());
        };
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let micros = |i: usize| -> Result<PrimitiveArray<TimestampMicrosecondType>> {
            let a = arrow::compute::cast(&args.args[i].to_array(n)?, &crate::types::spark_timestamp())?;
            Ok(a.as_primitive::<TimestampMicrosecondType>().clone())
        };
        let out: ArrayRef = match self.add {
            true => {
                // Spark's BIGINT of the amount (a fraction truncated), whatever the planner left.
                let amounts = arrow::compute::cast(&args.args[1].to_array(n)?, &DataType::Int64)?;
                let amounts = amounts.as_primitive::<arrow::datatypes::Int64Type>();
                let at = micros(2)?;
                let mut values = Vec::with_capacity(n);
                for row in 0..n {
                    values.push(match amounts.is_null(row) || at.is_null(row) {
                        true => None,
                        false => Some(add_units(unit, amounts.value(row), at.value(row))?),
                    });
                }
                let zoned = PrimitiveArray::<TimestampMicrosecondType>::from(values);
                match self.return_type(&[DataType::Utf8, DataType::Int64, args.arg_fields[2].data_type().clone()])? {
                    DataType::Timestamp(_, zone) => Arc::new(zoned.with_timezone_opt(zone)),
                    other => return exec_err!("timestampadd answers a timestamp, not {other}"),
                }
            }
            false => {
                let (start, end) = (micros(1)?, micros(2)?);
                let mut values = Vec::with_capacity(n);
                for row in 0..n {
                    values.push(match start.is_null(row) || end.is_null(row) {
                        true => None,
                        false => Some(units_between(unit, start.value(row), end.value(row))?),
                    });
                }
                Arc::new(Int64Array::from(values))
            }
        };
        crate::columnar::columnar(out, scalar)
    }
}

/// `at` (microseconds, UTC) plus `amount` `unit`s, or Spark's overflow error.
fn add_units(unit: &str, amount: i64, at: i64) -> Result<i64> {
    let overflow = || {
        let shown = chrono::DateTime::from_timestamp_micros(at)
            .map(|t| t.naive_utc().format("%Y-%m-%d %H:%M:%S%.f").to_string())
            .unwrap_or_default();
        datafusion::error::DataFusionError::Execution(format!(
            "[DATETIME_OVERFLOW] Datetime operation overflow: add {amount}L {unit} to TIMESTAMP '{shown}'"
        ))
    };
    if let Some((_, length)) = MICROS.iter().find(|(u, _)| *u == unit) {
        let moved = amount.checked_mul(*length).and_then(|d| at.checked_add(d)).ok_or_else(overflow)?;
        // Java's LocalDateTime ends at year 999,999,999; microseconds end first. Chrono's range
        // (±262,143 years) is what a TIMESTAMP can show.
        return chrono::DateTime::from_timestamp_micros(moved).map(|_| moved).ok_or_else(overflow);
    }
    let Some((_, per)) = MONTHS.iter().find(|(u, _)| *u == unit) else {
        return exec_err!("timestampadd has no unit {unit}");
    };
    let months = amount.checked_mul(*per).ok_or_else(overflow)?;
    let local = chrono::DateTime::from_timestamp_micros(at).ok_or_else(overflow)?.naive_utc();
    let magnitude = chrono::Months::new(u32::try_from(months.unsigned_abs()).map_err(|_| overflow())?);
    let moved = match months >= 0 {
        true => local.checked_add_months(magnitude),
        false => local.checked_sub_months(magnitude),
    };
    Ok(moved.ok_or_else(overflow)?.and_utc().timestamp_micros())
}

/// Whole `unit`s from `start` to `end` (microseconds, UTC), towards zero, as Java's
/// `ChronoUnit.between` counts them for two local times.
fn units_between(unit: &str, start: i64, end: i64) -> Result<i64> {
    if let Some((_, length)) = MICROS.iter().find(|(u, _)| *u == unit) {
        // i128: the difference of two instants can pass an i64 of microseconds.
        let between = (i128::from(end) - i128::from(start)) / i128::from(*length);
        return i64::try_from(between).or_else(|_| exec_err!("[ARITHMETIC_OVERFLOW] timestampdiff overflows"));
    }
    let Some((_, per)) = MONTHS.iter().find(|(u, _)| *u == unit) else {
        return exec_err!("timestampdiff has no unit {unit}");
    };
    let local = |micros: i64| -> Result<NaiveDateTime> {
        chrono::DateTime::from_timestamp_micros(micros)
            .map(|t| t.naive_utc())
            .ok_or_else(|| datafusion::error::DataFusionError::Execution("a timestamp out of range".into()))
    };
    let (from, to) = (local(start)?, local(end)?);
    // LocalDateTime.until: the end's date, a day nearer the start where its time of day has not
    // reached the start's, then LocalDate.monthsUntil.
    let time_of_day = |t: &NaiveDateTime| t.num_seconds_from_midnight() as i64 * 1_000_000_000 + t.nanosecond() as i64;
    let mut end_date = to.date();
    if end_date > from.date() && time_of_day(&to) < time_of_day(&from) {
        end_date = end_date.pred_opt().unwrap_or(end_date);
    } else if end_date < from.date() && time_of_day(&to) > time_of_day(&from) {
        end_date = end_date.succ_opt().unwrap_or(end_date);
    }
    let packed = |d: chrono::NaiveDate| (i64::from(d.year()) * 12 + i64::from(d.month0())) * 32 + i64::from(d.day());
    let months = (packed(end_date) - packed(from.date())) / 32;
    Ok(months / per)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(text: &str) -> i64 {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").unwrap().and_utc().timestamp_micros()
    }

    #[test]
    fn adding_units_follows_sparks_calendar() {
        let add = |unit, n, at| {
            let moved = add_units(unit, n, micros(at)).unwrap();
            chrono::DateTime::from_timestamp_micros(moved).unwrap().naive_utc().to_string()
        };
        assert_eq!(add("MONTH", 1, "2024-01-31 00:00:00"), "2024-02-29 00:00:00");
        assert_eq!(add("YEAR", 1, "2024-02-29 10:00:00"), "2025-02-28 10:00:00");
        assert_eq!(add("QUARTER", -1, "2024-05-31 00:00:00"), "2024-02-29 00:00:00");
        assert_eq!(add("WEEK", -1, "2024-01-01 00:00:00"), "2023-12-25 00:00:00");
        assert_eq!(add("MICROSECOND", 5, "2024-01-01 00:00:00"), "2024-01-01 00:00:00.000005");
        assert!(add_units("HOUR", 2_147_483_647_000, micros("2024-01-01 00:00:00")).is_err());
    }

    #[test]
    fn differences_count_whole_units_towards_zero() {
        let between = |unit, a, b| units_between(unit, micros(a), micros(b)).unwrap();
        assert_eq!(between("MONTH", "2024-01-31 10:00:00", "2024-02-29 09:00:00"), 0);
        assert_eq!(between("MONTH", "2024-01-31 10:00:00", "2024-02-29 10:00:00"), 0);
        assert_eq!(between("MONTH", "2024-01-29 10:00:00", "2024-02-29 10:00:00"), 1);
        assert_eq!(between("YEAR", "2020-02-29 00:00:00", "2021-02-28 00:00:00"), 0);
        assert_eq!(between("QUARTER", "2024-01-01 00:00:00", "2024-07-01 00:00:00"), 2);
        assert_eq!(between("MONTH", "2024-03-31 00:00:00", "2024-02-29 00:00:00"), -1);
        assert_eq!(between("SECOND", "2024-01-01 00:00:00", "2023-12-31 23:59:58.5"), -1);
        assert_eq!(between("WEEK", "2024-01-01 00:00:00", "2024-01-15 00:00:00"), 2);
        assert_eq!(between("DAY", "2024-01-01 12:00:00", "2024-01-02 11:00:00"), 0);
    }
}
