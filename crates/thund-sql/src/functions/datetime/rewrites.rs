//! Spark's spellings and answers where DataFusion's datetime functions differ.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{cast, lit, Expr, ExprSchemable};
use sqlparser::ast::{
    CastKind, DataType as SqlType, Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
    Value,
};

use crate::declare::{call, refused, Call, PlanContext};
use crate::functions::math::arithmetic::OnFailure;

/// Without ANSI mode, a text `to_date`, `to_timestamp`, `unix_timestamp` or
/// `to_unix_timestamp` cannot read is NULL.
pub(super) fn lenient_parse(mut c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    // `unix_timestamp(text)` reads the text with Spark's default pattern, strictly (a date alone,
    // a fraction or an ISO `T…Z` do not read).
    let mut defaulted = false;
    if matches!(c.name(), "unix_timestamp" | "to_unix_timestamp")
        && c.args.len() == 1
        && c.args[0].get_type(cx.schema).is_ok_and(|t| t.is_string())
    {
        c.args.push(lit("yyyy-MM-dd HH:mm:ss"));
        defaulted = true;
    }
    let c = c;
    match super::patterns::lenient(c.name()).filter(|_| !cx.ansi) {
        Some(lenient) => Ok(Transformed::yes(call(Arc::new(lenient), c.args))),
        None if defaulted => Ok(Transformed::yes(c.into_expr())),
        None => c.unchanged(),
    }
}

/// Without ANSI mode, a field of `make_timestamp` (`_ltz`, `_ntz`) out of its range (month 13)
/// is NULL.
pub(super) fn lenient_make(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    match super::make_timestamp::lenient(c.name()).filter(|_| !cx.ansi) {
        Some(lenient) => Ok(Transformed::yes(call(Arc::new(lenient), c.args))),
        None => c.unchanged(),
    }
}

/// In ANSI mode, a day that is not one fails `next_day` (DataFusion's: NULL).
pub(super) fn next_day(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if cx.ansi && !c.args.get(1).is_some_and(is_day_of_week) {
        return Err(refused("next_day", "in ANSI mode Spark fails on a day of the week it cannot read"));
    }
    c.unchanged()
}

/// `date_trunc`, `from_utc_timestamp` and `to_utc_timestamp`. A local time the clocks pass
/// twice (or skip) is read as Java reads it (the earlier offset; moved forward by the gap) in a
/// zone that changes its clocks: datafusion-spark's `to_utc_timestamp` takes the later offset.
/// Spark reads a string or a TIMESTAMP_NTZ given for the timestamp as a TIMESTAMP (an instant, in
/// the session's zone, UTC here; the functions take only TIMESTAMP), so the answer is a
/// TIMESTAMP; DataFusion keeps the argument's type. (A DATE fails DataFusion's signature before
/// this rewrite sees it: refused.)
pub(super) fn zoned(mut c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    let name = c.name().to_string();
    if name == "to_utc_timestamp" && c.args.len() == 2 && !c.args.get(1).is_some_and(is_fixed_zone) {
        return Ok(Transformed::yes(call(Arc::new(super::make_timestamp::to_utc_timestamp()), c.args)));
    }
    // Which argument is the timestamp: `date_trunc(unit, ts)`, `from_utc_timestamp(ts, zone)`.
    let at = usize::from(name == "date_trunc");
    let read_as_instant = |t: DataType| t.is_string() || matches!(t, DataType::Timestamp(_, None));
    if !c.args.get(at).is_some_and(|a| a.get_type(cx.schema).is_ok_and(read_as_instant)) {
        return c.unchanged();
    }
    let instant = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()));
    c.args[at] = cast(c.args[at].clone(), instant);
    Ok(Transformed::yes(c.into_expr()))
}

/// Spark's seconds of a timestamp keep their fraction (`DECIMAL(8,6)`): DataFusion's
/// microseconds of the minute, divided exactly. Spark's seconds of an interval or a date are
/// other types (refused); an interval's are `interval`'s.
pub(super) fn seconds(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    let interval = c
        .args
        .get(1)
        .is_some_and(|a| a.get_type(cx.schema).is_ok_and(|t| crate::functions::interval::arithmetic::is_interval(&t)));
    if !c.args.first().is_some_and(is_seconds) || interval {
        return c.unchanged();
    }
    if !matches!(c.args.get(1).map(|a| a.get_type(cx.schema)), Some(Ok(DataType::Timestamp(..)))) {
        return Err(refused("date_part", "Spark's seconds of an interval or a date are other types"));
    }
    let micros = call(Arc::clone(&c.func), vec![lit("microsecond"), c.args[1].clone()]);
    let divide = Arc::new(crate::functions::math::decimals::decimal_divide(OnFailure::Null));
    let million = lit(ScalarValue::Decimal128(Some(1_000_000), 7, 0));
    let seconds = call(divide, vec![cast(micros, DataType::Decimal128(8, 0)), million]);
    Ok(Transformed::yes(cast(seconds, DataType::Decimal128(8, 6))))
}

/// Whether `e` is a literal time zone whose offset is the same all year (UTC, `+02:00`,
/// `Asia/Seoul`), so that every local time is one instant.
fn is_fixed_zone(e: &Expr) -> bool {
    use arrow::array::timezone::Tz;
    use chrono::{Offset, TimeZone};
    let Expr::Literal(ScalarValue::Utf8(Some(z)) | ScalarValue::Utf8View(Some(z)) | ScalarValue::LargeUtf8(Some(z)), _) =
        e
    else {
        return false;
    };
    let Ok(tz) = z.parse::<Tz>() else { return false };
    // Two instants half a year apart, in a year recent enough for today's rules.
    let offset = |month| {
        chrono::NaiveDate::from_ymd_opt(2025, month, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| tz.offset_from_utc_datetime(&t).fix())
    };
    offset(1).is_some() && offset(1) == offset(7)
}

/// Whether `e` is a literal day of the week `next_day` reads (`MO`, `MON`, `MONDAY`, any case).
fn is_day_of_week(e: &Expr) -> bool {
    let Expr::Literal(ScalarValue::Utf8(Some(d)) | ScalarValue::Utf8View(Some(d)) | ScalarValue::LargeUtf8(Some(d)), _) =
        e
    else {
        return false;
    };
    let d = d.to_ascii_uppercase();
    ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]
        .iter()
        .any(|day| *day == d || day[..3] == d || day[..2] == d)
}

/// Whether `e` is the literal field name of seconds (`'second'`, `'SECONDS'`, `'s'`, …).
fn is_seconds(e: &Expr) -> bool {
    let Expr::Literal(ScalarValue::Utf8(Some(f)) | ScalarValue::Utf8View(Some(f)) | ScalarValue::LargeUtf8(Some(f)), _) =
        e
    else {
        return false;
    };
    matches!(f.to_ascii_lowercase().as_str(), "second" | "seconds" | "s" | "sec" | "secs")
}

/// Spark's date-part functions DataFusion lacks, as `(name, date_part field)`. (The session's
/// `date_part` is Spark's: its `dow` counts 1 = Sunday, as `dayofweek` does.)
const DATE_PARTS: [(&str, &str); 9] = [
    ("year", "year"),
    ("month", "month"),
    ("day", "day"),
    ("dayofmonth", "day"),
    ("quarter", "quarter"),
    ("dayofyear", "doy"),
    ("weekofyear", "week"),
    ("dayofweek", "dow"),
    ("yearofweek", "isoyear"),
];

/// `year(x)` → `CAST(date_part('year', CAST(x AS DATE)) AS INT)` (and the other date parts
/// above), built from the call's own node. Spark takes a string too, cast to a date as Spark
/// casts it implicitly (a timestamp's date is its date in the session's time zone, UTC).
pub(super) fn date_part_of(expr: &SqlExpr) -> Option<SqlExpr> {
    let SqlExpr::Function(f) = expr else { return None };
    let name = crate::syntax::name_of(f);
    let (_, field) = DATE_PARTS.iter().find(|(n, _)| *n == name)?;
    let FunctionArguments::List(list) = &f.args else { return None };
    let [FunctionArg::Unnamed(FunctionArgExpr::Expr(inner))] = list.args.as_slice() else { return None };
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("date_part")]);
    let mut args = list.clone();
    let as_date = SqlExpr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(inner.clone()),
        data_type: SqlType::Date,
        array: false,
        format: None,
    };
    args.args = vec![
        FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::value(Value::SingleQuotedString(field.to_string())))),
        FunctionArg::Unnamed(FunctionArgExpr::Expr(as_date)),
    ];
    call.args = FunctionArguments::List(args);
    Some(SqlExpr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(SqlExpr::Function(call)),
        data_type: SqlType::Int(None),
        array: false,
        format: None,
    })
}
