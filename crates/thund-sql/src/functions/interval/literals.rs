//! Spark's interval literals: `INTERVAL '1-1' YEAR TO MONTH`, `INTERVAL 3 HOURS`,
//! `INTERVAL '5 days 3 hours'` (and `INTERVAL 5 days 3 hours`, which the parser reads as it).
//!
//! Spark 4 types a literal of years and months as a year-month interval (months in an INT, sent
//! over Arrow as `Interval(YearMonth)`) and one of weeks, days, hours, minutes and seconds as a
//! day-time interval (microseconds in a BIGINT, Arrow's `Duration(Microsecond)`); each type
//! carries its first and last field (`INTERVAL DAY TO HOUR`), which Arrow's types do not. So a
//! literal is read here, in the parse, where its fields are known: its value becomes
//! `spark_interval(value, 'START', 'END')`, and its column name is Spark's text of it
//! (`INTERVAL '5 03' DAY TO HOUR`, [`Literal::text`]). A literal of days only stays
//! recognisable by its fields, since a date plus days is a date on Spark where a date plus
//! hours is a timestamp ([`day_count`]). Mixing the two kinds, a fraction of anything but
//! seconds, or a field out of its range fails as it does on Spark.

use std::sync::Arc;

use arrow::array::{Array, AsArray, DurationMicrosecondArray, IntervalYearMonthArray};
use arrow::datatypes::{DataType, Int64Type, IntervalUnit, TimeUnit};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use sqlparser::ast::{Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator, Value};

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(SparkInterval { signature: Signature::variadic_any(Volatility::Immutable) }));
}

const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_MINUTE: i64 = 60 * MICROS_PER_SECOND;
const MICROS_PER_HOUR: i64 = 60 * MICROS_PER_MINUTE;
const MICROS_PER_DAY: i64 = 24 * MICROS_PER_HOUR;

/// A field of Spark's ANSI intervals, from the widest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Field {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

impl Field {
    fn name(self) -> &'static str {
        match self {
            Field::Year => "YEAR",
            Field::Month => "MONTH",
            Field::Day => "DAY",
            Field::Hour => "HOUR",
            Field::Minute => "MINUTE",
            Field::Second => "SECOND",
        }
    }

    fn from_name(name: &str) -> Option<Field> {
        [Field::Year, Field::Month, Field::Day, Field::Hour, Field::Minute, Field::Second]
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    fn is_year_month(self) -> bool {
        matches!(self, Field::Year | Field::Month)
    }
}

/// A unit of a literal's text (`days`, `ms`…): its field and how many of the field's base unit
/// (months, or microseconds) one of it is.
fn unit(word: &str) -> Option<(Field, i64)> {
    let w = word.to_ascii_lowercase();
    let singular = w.strip_suffix('s').unwrap_or(&w);
    Some(match singular {
        "year" => (Field::Year, 12),
        "month" => (Field::Month, 1),
        "week" => (Field::Day, 7 * MICROS_PER_DAY),
        "day" => (Field::Day, MICROS_PER_DAY),
        "hour" => (Field::Hour, MICROS_PER_HOUR),
        "minute" => (Field::Minute, MICROS_PER_MINUTE),
        "second" => (Field::Second, MICROS_PER_SECOND),
        "millisecond" => (Field::Second, 1_000),
        "microsecond" => (Field::Second, 1),
        _ => return None,
    })
}

/// An interval literal as Spark types it: months or microseconds, and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Literal {
    /// Months (a year-month interval) or microseconds (a day-time one).
    pub(crate) value: i64,
    pub(crate) start: Field,
    pub(crate) end: Field,
}

impl Literal {
    /// The literal `INTERVAL …` of the parse, or Spark's reason to refuse it.
    pub(crate) fn parse(i: &sqlparser::ast::Interval) -> std::result::Result<Literal, String> {
        let (negative, text) = signed_text(&i.value).ok_or_else(|| {
            format!("the interval `{i}` runs on the Spark backend (its value is no number or string literal)")
        })?;
        let invalid = |why: &str| format!("[INVALID_INTERVAL_FORMAT] Error parsing '{text}' to interval: {why}");
        let literal = match (&i.leading_field, &i.last_field) {
            (None, None) => units(&text).map_err(|e| invalid(&e))?,
            (Some(f), None) => units(&format!("{text} {f}")).map_err(|e| invalid(&e))?,
            (Some(from), Some(to)) => {
                let field = |f: &sqlparser::ast::DateTimeField| {
                    unit(&f.to_string()).map(|u| u.0).ok_or_else(|| invalid(&format!("{f} is no interval field")))
                };
                from_to(&text, field(from)?, field(to)?).map_err(|e| invalid(&e))?
            }
            (None, Some(_)) => return Err(invalid("an interval's last field needs its first")),
        };
        if !negative {
            return Ok(literal);
        }
        Ok(Literal { value: -literal.value, ..literal })
    }

    fn is_year_month(&self) -> bool {
        self.start.is_year_month()
    }

    /// Spark's text of the literal, its column name: `INTERVAL '-1-1' YEAR TO MONTH`,
    /// `INTERVAL '03' HOUR`, `INTERVAL '05:00:30.001001' HOUR TO SECOND`.
    pub(crate) fn text(&self) -> String {
        let fields = if self.start == self.end {
            self.start.name().to_string()
        } else {
            format!("{} TO {}", self.start.name(), self.end.name())
        };
        let sign = if self.value < 0 { "-" } else { "" };
        let mut rest = self.value.unsigned_abs();
        let value = if self.is_year_month() {
            match (self.start, self.end) {
                (Field::Year, Field::Year) => format!("{sign}{}", rest / 12),
                (Field::Month, _) => format!("{}", self.value),
                _ => format!("{sign}{}-{}", rest / 12, rest % 12),
            }
        } else {
            let (day, hour, minute) = (MICROS_PER_DAY as u64, MICROS_PER_HOUR as u64, MICROS_PER_MINUTE as u64);
            let mut out = String::from(sign);
            let mut first = true;
            for (field, size, separator) in
                [(Field::Day, day, ""), (Field::Hour, hour, " "), (Field::Minute, minute, ":"), (Field::Second, 1, ":")]
            {
                if field < self.start || field > self.end {
                    continue;
                }
                if !first {
                    out.push_str(separator);
                }
                if field == Field::Second {
                    out.push_str(&seconds_text(rest));
                } else {
                    let n = rest / size;
                    rest %= size;
                    out.push_str(&if field == Field::Day { n.to_string() } else { format!("{n:02}") });
                }
                first = false;
            }
            out
        };
        format!("INTERVAL '{value}' {fields}")
    }

    /// The literal's value in a parse: `spark_interval(value, 'START', 'END')`.
    pub(crate) fn to_sql(&self) -> SqlExpr {
        call_sql(vec![
            SqlExpr::value(Value::Number(self.value.to_string(), false)),
            SqlExpr::value(Value::SingleQuotedString(self.start.name().into())),
            SqlExpr::value(Value::SingleQuotedString(self.end.name().into())),
        ])
    }
}

/// What the parse `e` becomes where an interval literal decides it: `-INTERVAL …` the negated
/// literal, `CAST(INTERVAL … AS STRING)` its text, a cast of a one-field literal to an integer
/// its count of that field, `typeof(INTERVAL …)` its type's name, all as on Spark.
pub(crate) fn rewrite_around_literal(e: &SqlExpr) -> Option<SqlExpr> {
    use sqlparser::ast::DataType as T;
    match e {
        SqlExpr::UnaryOp { op: UnaryOperator::Minus, expr } => match expr.as_ref() {
            SqlExpr::Interval(i) => {
                let mut negated = i.clone();
                negated.value = Box::new(SqlExpr::UnaryOp { op: UnaryOperator::Minus, expr: i.value.clone() });
                Some(SqlExpr::Interval(negated))
            }
            _ => None,
        },
        SqlExpr::Cast { kind: sqlparser::ast::CastKind::Cast, expr, data_type, format: None, .. } => {
            let SqlExpr::Interval(i) = expr.as_ref() else { return None };
            let literal = Literal::parse(i).ok()?;
            match data_type {
                T::String(_) | T::Varchar(_) | T::Text => {
                    Some(SqlExpr::value(Value::SingleQuotedString(literal.text())))
                }
                T::Int(_) | T::Integer(_) | T::BigInt(_) | T::SmallInt(_) | T::TinyInt(_)
                    if literal.start == literal.end =>
                {
                    let size = match literal.start {
                        Field::Year => 12,
                        Field::Month | Field::Second => 1,
                        Field::Day => MICROS_PER_DAY,
                        Field::Hour => MICROS_PER_HOUR,
                        Field::Minute => MICROS_PER_MINUTE,
                    };
                    // Seconds are a DECIMAL's worth; only whole ones make an integer exactly.
                    if literal.start == Field::Second {
                        return None;
                    }
                    let mut cast = e.clone();
                    if let SqlExpr::Cast { expr, .. } = &mut cast {
                        **expr = SqlExpr::value(Value::Number((literal.value / size).to_string(), false));
                    }
                    Some(cast)
                }
                _ => None,
            }
        }
        SqlExpr::Function(f) if f.name.to_string().eq_ignore_ascii_case("typeof") => {
            let FunctionArguments::List(list) = &f.args else { return None };
            let [FunctionArg::Unnamed(FunctionArgExpr::Expr(SqlExpr::Interval(i)))] = list.args.as_slice() else {
                return None;
            };
            let literal = Literal::parse(i).ok()?;
            let name = if literal.start == literal.end {
                format!("interval {}", literal.start.name().to_ascii_lowercase())
            } else {
                format!(
                    "interval {} to {}",
                    literal.start.name().to_ascii_lowercase(),
                    literal.end.name().to_ascii_lowercase()
                )
            };
            Some(SqlExpr::value(Value::SingleQuotedString(name)))
        }
        _ => None,
    }
}

/// `spark_interval('why')`: a literal Spark refuses, refused when the query is planned.
pub(crate) fn refusal_sql(why: &str) -> SqlExpr {
    call_sql(vec![SqlExpr::value(Value::SingleQuotedString(why.to_string()))])
}

fn call_sql(args: Vec<SqlExpr>) -> SqlExpr {
    crate::syntax::function("spark_interval", args)
}

/// Seconds as Spark writes them in an interval: at least two digits before the point, the
/// fraction without trailing zeros (`01.5`, `30.001001`, `00`).
fn seconds_text(micros: u64) -> String {
    let (whole, fraction) = (micros / 1_000_000, micros % 1_000_000);
    let mut s = format!("{whole:02}");
    if fraction > 0 {
        let digits = format!("{fraction:06}");
        s.push('.');
        s.push_str(digits.trim_end_matches('0'));
    }
    s
}

/// The value of `INTERVAL <value>`: whether a `-` stands before it, and its text (a number's
/// digits or a string's contents).
fn signed_text(e: &SqlExpr) -> Option<(bool, String)> {
    match e {
        SqlExpr::UnaryOp { op: UnaryOperator::Minus, expr } => signed_text(expr).map(|(n, t)| (!n, t)),
        SqlExpr::UnaryOp { op: UnaryOperator::Plus, expr } => signed_text(expr),
        SqlExpr::Nested(inner) => signed_text(inner),
        // A VALUES row's integers are typed INT before its intervals are read.
        SqlExpr::Cast { expr, data_type: sqlparser::ast::DataType::Int(None), .. } => signed_text(expr),
        SqlExpr::Value(v) => match &v.value {
            Value::Number(n, _) => Some((false, n.clone())),
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some((false, s.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// A literal of `value unit` pairs (`1 day -2 hours`), all of years and months or all of the
/// day-time units.
fn units(text: &str) -> std::result::Result<Literal, String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let words = match words.first() {
        Some(w) if w.eq_ignore_ascii_case("interval") => &words[1..],
        _ => &words[..],
    };
    if words.is_empty() || words.len() % 2 != 0 {
        return Err("expected pairs of a number and a unit".into());
    }
    let (mut months, mut micros, mut fields) = (0i64, 0i64, Vec::new());
    for pair in words.chunks(2) {
        let (field, size) = unit(pair[1]).ok_or_else(|| format!("invalid unit '{}'", pair[1]))?;
        let n = pair[0];
        let (negative, digits) = match n.strip_prefix('-') {
            Some(d) => (true, d),
            None => (false, n.strip_prefix('+').unwrap_or(n)),
        };
        let (whole, fraction) = digits.split_once('.').unwrap_or((digits, ""));
        if whole.is_empty() && fraction.is_empty()
            || !whole.bytes().all(|b| b.is_ascii_digit())
            || !fraction.bytes().all(|b| b.is_ascii_digit())
        {
            return Err(format!("invalid value '{n}'"));
        }
        let overflow = || "the interval overflows".to_string();
        let whole: i64 = if whole.is_empty() { 0 } else { whole.parse().map_err(|_| overflow())? };
        let mut amount = whole.checked_mul(size).ok_or_else(overflow)?;
        if !fraction.is_empty() {
            if field != Field::Second {
                return Err(format!("{} cannot have fractional part", pair[1].to_ascii_lowercase()));
            }
            // The fraction's digits beyond a microsecond are dropped, as Spark drops them.
            let mut digits = fraction.chars().take(6).collect::<String>();
            while digits.len() < 6 {
                digits.push('0');
            }
            let part: i64 = digits.parse().map_err(|_| overflow())?;
            amount = amount.checked_add(part * size / MICROS_PER_SECOND).ok_or_else(overflow)?;
        }
        let amount = if negative { -amount } else { amount };
        if field.is_year_month() {
            months = months.checked_add(amount).ok_or_else(overflow)?;
        } else {
            micros = micros.checked_add(amount).ok_or_else(overflow)?;
        }
        fields.push(field);
    }
    let (Some(&start), Some(&end)) = (fields.iter().min(), fields.iter().max()) else {
        return Err("an interval names no field".to_string());
    };
    if start.is_year_month() != end.is_year_month() {
        return Err("cannot mix year-month and day-time fields".into());
    }
    if start.is_year_month() {
        if i32::try_from(months).is_err() {
            return Err("the interval overflows".into());
        }
        return Ok(Literal { value: months, start, end });
    }
    Ok(Literal { value: micros, start, end })
}

/// A literal `'text' FROM TO TO` (`'1-1' YEAR TO MONTH`, `'5 03:07' DAY TO MINUTE`), read as
/// Spark reads the text for those fields: a sign, the first field unbounded, the others in
/// their ranges, seconds with a fraction.
fn from_to(text: &str, start: Field, end: Field) -> std::result::Result<Literal, String> {
    if start >= end || start.is_year_month() != end.is_year_month() {
        return Err(format!("{} TO {} is no interval type", start.name(), end.name()));
    }
    let t = text.trim();
    let (negative, t) = match t.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, t.strip_prefix('+').unwrap_or(t)),
    };
    let pattern = || format!("'{text}' does not match the {} TO {} format", start.name(), end.name());
    let number = |s: &str| -> std::result::Result<i64, String> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(pattern());
        }
        s.parse::<i64>().map_err(|_| "the interval overflows".to_string())
    };
    if start.is_year_month() {
        let (y, m) = t.split_once('-').ok_or_else(pattern)?;
        let (y, m) = (number(y)?, number(m)?);
        if m > 11 {
            return Err(format!("month {m} outside range [0, 11]"));
        }
        let months = y.checked_mul(12).and_then(|v| v.checked_add(m)).filter(|v| i32::try_from(*v).is_ok());
        let months = months.ok_or("the interval overflows")?;
        return Ok(Literal { value: if negative { -months } else { months }, start, end });
    }
    // The parts of the text, one per field from `start` to `end`.
    let mut parts: Vec<&str> = Vec::new();
    let mut rest = t;
    if start == Field::Day {
        let (d, r) = rest.split_once(' ').ok_or_else(pattern)?;
        parts.push(d);
        rest = r;
    }
    parts.extend(rest.split(':'));
    let fields: Vec<Field> = [Field::Day, Field::Hour, Field::Minute, Field::Second]
        .into_iter()
        .filter(|f| *f >= start && *f <= end)
        .collect();
    if parts.len() != fields.len() {
        return Err(pattern());
    }
    let mut micros: i64 = 0;
    for (i, (part, field)) in parts.iter().zip(&fields).enumerate() {
        let (value, size, bound) = match field {
            Field::Day => (number(part)?, MICROS_PER_DAY, None),
            Field::Hour => (number(part)?, MICROS_PER_HOUR, Some(23)),
            Field::Minute => (number(part)?, MICROS_PER_MINUTE, Some(59)),
            _ => {
                let (whole, fraction) = part.split_once('.').unwrap_or((part, ""));
                let whole = number(whole)?;
                if fraction.len() > 9 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(pattern());
                }
                let digits = format!("{:0<6}", &fraction[..fraction.len().min(6)]);
                let part: i64 = digits.parse().map_err(|_| pattern())?;
                let total = whole.checked_mul(MICROS_PER_SECOND).and_then(|w| w.checked_add(part));
                let total = total.ok_or("the interval overflows")?;
                if i > 0 && whole > 59 {
                    return Err(format!("second {whole} outside range [0, 59]"));
                }
                micros = micros.checked_add(total).ok_or("the interval overflows")?;
                continue;
            }
        };
        if let (Some(bound), true) = (bound, i > 0) {
            if value > bound {
                return Err(format!("{} {value} outside range [0, {bound}]", field.name().to_ascii_lowercase()));
            }
        }
        micros = value.checked_mul(size).and_then(|v| micros.checked_add(v)).ok_or("the interval overflows")?;
    }
    Ok(Literal { value: if negative { -micros } else { micros }, start, end })
}

/// The day count of a literal of days only (`INTERVAL 3 DAYS`, `INTERVAL '1' DAY`) as planned:
/// a date plus it is a date on Spark (plus any other day-time interval, a timestamp).
pub(crate) fn day_count(e: &datafusion::logical_expr::Expr) -> Option<i64> {
    use datafusion::logical_expr::Expr;
    let Expr::ScalarFunction(f) = e else { return None };
    if f.func.name() != "spark_interval" {
        return None;
    }
    let text = |i: usize| match f.args.get(i) {
        Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => Some(s.as_str()),
        _ => None,
    };
    if text(1)? != "DAY" || text(2)? != "DAY" {
        return None;
    }
    match f.args.first()? {
        Expr::Literal(v, _) => Some(v.cast_to(&DataType::Int64).ok().and_then(|v| match v {
            ScalarValue::Int64(Some(micros)) => Some(micros / MICROS_PER_DAY),
            _ => None,
        })?),
        _ => None,
    }
}

/// `spark_interval(value, 'START', 'END')`: an interval literal's value, months as a
/// year-month interval or microseconds as a day-time one; `spark_interval('why')` refuses.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkInterval {
    signature: Signature,
}

impl ScalarUDFImpl for SparkInterval {
    fn name(&self) -> &str {
        "spark_interval"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        plan_err!("spark_interval is typed by its arguments")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<arrow::datatypes::FieldRef> {
        let text = |i: usize| match args.scalar_arguments.get(i) {
            Some(Some(ScalarValue::Utf8(Some(s)))) => Some(s.clone()),
            _ => None,
        };
        if args.arg_fields.len() == 1 {
            return plan_err!("{}", text(0).unwrap_or_else(|| "spark_interval takes a literal's fields".into()));
        }
        let Some(start) = text(1).as_deref().and_then(Field::from_name) else {
            return plan_err!("spark_interval takes a value and its literal fields");
        };
        let t = if start.is_year_month() {
            DataType::Interval(IntervalUnit::YearMonth)
        } else {
            DataType::Duration(TimeUnit::Microsecond)
        };
        Ok(Arc::new(arrow::datatypes::Field::new(self.name(), t, false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let values = arrow::compute::cast(&args.args[0].to_array(n)?, &DataType::Int64)?;
        let values = values.as_primitive::<Int64Type>();
        let out: Arc<dyn Array> = match args.return_field.data_type() {
            DataType::Interval(_) => Arc::new(
                values.iter().map(|v| v.and_then(|v| i32::try_from(v).ok())).collect::<IntervalYearMonthArray>(),
            ),
            _ => Arc::new(values.iter().collect::<DurationMicrosecondArray>()),
        };
        crate::columnar::columnar(out, matches!(args.args[0], ColumnarValue::Scalar(_)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn literal(sql: &str) -> std::result::Result<Literal, String> {
        let dialect = sqlparser::dialect::GenericDialect {};
        let e = sqlparser::parser::Parser::new(&dialect).try_with_sql(sql).unwrap().parse_expr().unwrap();
        let SqlExpr::Interval(i) = e else { panic!("{sql} is no interval") };
        Literal::parse(&i)
    }

    #[test]
    fn literals_are_typed_and_named_as_spark_names_them() {
        // Spark 4.1's names for these literals.
        for (sql, text) in [
            ("INTERVAL '1-1' YEAR TO MONTH", "INTERVAL '1-1' YEAR TO MONTH"),
            ("INTERVAL -'1-1' YEAR TO MONTH", "INTERVAL '-1-1' YEAR TO MONTH"),
            ("INTERVAL '5 days 3 hours'", "INTERVAL '5 03' DAY TO HOUR"),
            (
                "INTERVAL '5 hours 30 seconds 1 milliseconds 1 microseconds'",
                "INTERVAL '05:00:30.001001' HOUR TO SECOND",
            ),
            ("INTERVAL '10' SECOND", "INTERVAL '10' SECOND"),
            ("INTERVAL '123 23:55:59.002001' DAY TO SECOND", "INTERVAL '123 23:55:59.002001' DAY TO SECOND"),
            ("INTERVAL '2 weeks'", "INTERVAL '14' DAY"),
            ("INTERVAL '1500 milliseconds'", "INTERVAL '01.5' SECOND"),
            ("INTERVAL '100 minutes'", "INTERVAL '100' MINUTE"),
            ("INTERVAL '-1 day 2 hours'", "INTERVAL '-0 22' DAY TO HOUR"),
            ("INTERVAL '-3' MINUTE", "INTERVAL '-03' MINUTE"),
            ("INTERVAL '2 years 25 months'", "INTERVAL '4-1' YEAR TO MONTH"),
            ("INTERVAL '3 4:5:6' DAY TO SECOND", "INTERVAL '3 04:05:06' DAY TO SECOND"),
            ("INTERVAL '0' SECOND", "INTERVAL '00' SECOND"),
            ("INTERVAL -'100' YEAR", "INTERVAL '-100' YEAR"),
            ("INTERVAL '2147483647 months'", "INTERVAL '2147483647' MONTH"),
            ("INTERVAL 3 HOURS", "INTERVAL '03' HOUR"),
        ] {
            assert_eq!(literal(sql).map(|l| l.text()), Ok(text.to_string()), "{sql}");
        }
        assert_eq!(literal("INTERVAL '1 day'").unwrap().value, MICROS_PER_DAY);
        assert_eq!(literal("INTERVAL '25' MONTH").unwrap().value, 25);
        for refused in
            ["INTERVAL '1.5 days'", "INTERVAL '1 year 1 day'", "INTERVAL '1-12' YEAR TO MONTH", "INTERVAL 'x'"]
        {
            assert!(literal(refused).is_err(), "{refused}");
        }
    }
}
