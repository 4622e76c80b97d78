//! Spark's `make_timestamp`, `make_timestamp_ltz` and `make_timestamp_ntz` from a year, month,
//! day, hour, minute and seconds (and, but for `_ntz`, a time zone), and their `try_` forms.
//!
//! As Spark's: the seconds are a DECIMAL(16,6) (a fraction to the microsecond) from 0 to 60, and
//! 60 with no fraction is the next minute's start; a field out of its range (month 13, February
//! 30) fails in ANSI mode and gives NULL without it or in the `try_` forms. A local time in a
//! zone is read as Java reads it: in the hour the clocks go back, the earlier instant; in the
//! hour they skip, the time moved forward by the gap. The session's zone is UTC.
//!
//! The forms from a DATE and a TIME (`make_timestamp(date[, time[, zone]])`) read the TIME in
//! any of Arrow's units.
//!
//! `months_between(t1, t2[, round_off])` is here too, with Spark's (Hive's) rule: whole months
//! when both days of the month are the same or both are their month's last, else the months
//! plus the difference of the days and times over a 31-day month, rounded to 8 decimals unless
//! `round_off` is false. (A template casts its arguments to TIMESTAMP with Spark's casts.)

use std::sync::Arc;

use arrow::array::timezone::Tz;
use arrow::array::{Array, ArrayRef, AsArray, PrimitiveArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Decimal128Type, Int32Type};
use chrono::{NaiveDate, NaiveDateTime, Offset, TimeZone};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::functions::math::arithmetic::OnFailure;

/// Registers the functions with `ctx`, the plain ones as in ANSI mode.
pub(crate) fn register(ctx: &SessionContext) {
    for name in ["make_timestamp", "make_timestamp_ltz", "make_timestamp_ntz"] {
        ctx.register_udf(make(name, OnFailure::Error));
        ctx.register_udf(make(&format!("try_{name}"), OnFailure::Null));
    }
    ctx.register_udf(ScalarUDF::from(MonthsBetween { signature: Signature::variadic_any(Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(ConvertTimezone { signature: Signature::variadic_any(Volatility::Immutable) }));
}

/// `convert_timezone([from, ]to, t)`: the wall time `t` (a TIMESTAMP_NTZ) in zone `from` (the
/// session's, UTC, by default) as the wall time in zone `to`, a TIMESTAMP_NTZ. A TIMESTAMP is
/// taken at its wall time in UTC, a DATE at midnight; a local time the clocks skip or pass
/// twice is read by Java's rule. Zones are regions or offsets, as Java's `ZoneId` reads them.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ConvertTimezone {
    signature: Signature,
}

impl ScalarUDFImpl for ConvertTimezone {
    fn name(&self) -> &str {
        "convert_timezone"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let zone = |t: &DataType| t.is_string() || t == &DataType::Null;
        let fits = match args {
            [to, t] | [_, to, t] => {
                args[..args.len() - 1].iter().all(zone)
                    && zone(to)
                    && matches!(t, DataType::Timestamp(..) | DataType::Date32 | DataType::Null)
            }
            _ => false,
        };
        if !fits {
            return plan_err!(
                "convert_timezone of {} runs on the Spark backend (it takes zone names and a TIMESTAMP_NTZ, TIMESTAMP \
                 or DATE here)",
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let k = args.args.len();
        let wall = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None);
        let times = arrow::compute::cast(&args.args[k - 1].to_array(n)?, &wall)?;
        let times = times.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        let to = crate::columnar::utf8(&args.args[k - 2].to_array(n)?)?;
        let from = if k == 3 { Some(crate::columnar::utf8(&args.args[0].to_array(n)?)?) } else { None };
        let read = |name: &str| match crate::functions::datetime::timestamp_text::zone_of(name.trim()) {
            crate::functions::datetime::timestamp_text::Zone::Invalid => {
                exec_err!("[INVALID_TIMEZONE] convert_timezone: the time zone '{name}' is not one Spark knows")
            }
            crate::functions::datetime::timestamp_text::Zone::Unsupported => {
                exec_err!(
                    "convert_timezone: the zone '{name}', one of Java's short ids, is read only on the Spark backend"
                )
            }
            zone => Ok(zone),
        };
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            let from_null = from.as_ref().is_some_and(|f| f.is_null(row));
            if times.is_null(row) || to.is_null(row) || from_null {
                out.push(None);
                continue;
            }
            let source = match &from {
                Some(f) => read(f.value(row))?,
                None => crate::functions::datetime::timestamp_text::Zone::Offset(0),
            };
            let target = read(to.value(row))?;
            let local = chrono::DateTime::from_timestamp_micros(times.value(row)).map(|t| t.naive_utc());
            let moved = local.and_then(|l| source.instant(l)).and_then(|i| target.local(i));
            out.push(moved.map(|t| t.and_utc().timestamp_micros()));
        }
        crate::columnar::columnar(Arc::new(TimestampMicrosecondArray::from(out)), scalar)
    }
}

/// `to_utc_timestamp(t, zone)`: `t`'s wall time (in UTC, the session's zone) read as a local
/// time in `zone`, with Java's rule for the hours the clocks skip or pass twice.
pub(crate) fn to_utc_timestamp() -> ScalarUDF {
    ScalarUDF::from(ToUtcTimestamp { signature: Signature::any(2, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToUtcTimestamp {
    signature: Signature,
}

impl ScalarUDFImpl for ToUtcTimestamp {
    fn name(&self) -> &str {
        "to_utc_timestamp"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let time =
            matches!(args[0], DataType::Timestamp(..) | DataType::Date32 | DataType::Null) || args[0].is_string();
        if !time || !(args[1].is_string() || args[1] == DataType::Null) {
            return plan_err!("to_utc_timestamp takes a timestamp and a time zone");
        }
        Ok(crate::types::spark_timestamp())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let times = arrow::compute::cast(&args.args[0].to_array(n)?, &crate::types::spark_timestamp())?;
        let times = times.as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
        let zones = crate::columnar::utf8(&args.args[1].to_array(n)?)?;
        let mut zone_cache: Option<(String, Tz)> = None;
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            if times.is_null(row) || zones.is_null(row) {
                out.push(None);
                continue;
            }
            let tz = zone(&mut zone_cache, zones.value(row), "to_utc_timestamp")?;
            let Some(local) = chrono::DateTime::from_timestamp_micros(times.value(row)) else {
                out.push(None);
                continue;
            };
            out.push(Some(instant(local.naive_utc(), tz)));
        }
        let out = TimestampMicrosecondArray::from(out).with_timezone("UTC");
        crate::columnar::columnar(Arc::new(out), scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MonthsBetween {
    signature: Signature,
}

impl ScalarUDFImpl for MonthsBetween {
    fn name(&self) -> &str {
        "months_between"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let instant = |t: &DataType| matches!(t, DataType::Timestamp(..) | DataType::Null);
        let fits = match args {
            [a, b] => instant(a) && instant(b),
            [a, b, r] => instant(a) && instant(b) && matches!(r, DataType::Boolean | DataType::Null),
            _ => false,
        };
        if !fits {
            return plan_err!("months_between takes two timestamps and whether to round to 8 decimals");
        }
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let micros = |i: usize| -> Result<PrimitiveArray<arrow::datatypes::TimestampMicrosecondType>> {
            let a = arrow::compute::cast(&args.args[i].to_array(n)?, &crate::types::spark_timestamp())?;
            Ok(a.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().clone())
        };
        let (first, second) = (micros(0)?, micros(1)?);
        let round = match args.args.get(2) {
            Some(r) => Some(arrow::compute::cast(&r.to_array(n)?, &DataType::Boolean)?.as_boolean().clone()),
            None => None,
        };
        let out: arrow::array::Float64Array = (0..n)
            .map(|row| {
                if first.is_null(row) || second.is_null(row) || round.as_ref().is_some_and(|r| r.is_null(row)) {
                    return None;
                }
                let round = round.as_ref().is_none_or(|r| r.value(row));
                months_between(first.value(row), second.value(row), round)
            })
            .collect();
        crate::columnar::columnar(Arc::new(out), scalar)
    }
}

/// Spark's `months_between` of two instants (microseconds, read in UTC, the session's zone).
fn months_between(first: i64, second: i64, round: bool) -> Option<f64> {
    use chrono::Datelike;
    let (a, b) = (chrono::DateTime::from_timestamp_micros(first)?, chrono::DateTime::from_timestamp_micros(second)?);
    let months = |d: &chrono::DateTime<chrono::Utc>| i64::from(d.year()) * 12 + i64::from(d.month());
    let month_diff = (months(&a) - months(&b)) as f64;
    let last_of_month = |d: &chrono::DateTime<chrono::Utc>| d.date_naive().succ_opt().is_some_and(|n| n.day() == 1);
    if a.day() == b.day() || (last_of_month(&a) && last_of_month(&b)) {
        return Some(month_diff);
    }
    // Whole seconds of the day, as Hive's (and so Spark's) rule takes them.
    let seconds_in_day = |micros: i64| micros.rem_euclid(86_400_000_000) / 1_000_000;
    let seconds = (i64::from(a.day()) - i64::from(b.day())) * 86_400 + seconds_in_day(first) - seconds_in_day(second);
    let diff = month_diff + seconds as f64 / (31.0 * 86_400.0);
    // Java's Math.round: half up.
    Some(if round { (diff * 1e8 + 0.5).floor() / 1e8 } else { diff })
}

/// `name`'s form without ANSI mode (a field out of range gives NULL), if it is one of them.
pub(crate) fn lenient(name: &str) -> Option<ScalarUDF> {
    matches!(name, "make_timestamp" | "make_timestamp_ltz" | "make_timestamp_ntz").then(|| make(name, OnFailure::Null))
}

fn make(name: &str, on_invalid: OnFailure) -> ScalarUDF {
    ScalarUDF::from(MakeTimestamp {
        name: name.to_string(),
        zoned: !name.ends_with("_ntz"),
        on_invalid,
        signature: Signature::variadic_any(Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MakeTimestamp {
    name: String,
    /// An instant (TIMESTAMP), or a local time (TIMESTAMP_NTZ).
    zoned: bool,
    on_invalid: OnFailure,
    signature: Signature,
}

/// Spark's type of the seconds.
const SECONDS: DataType = DataType::Decimal128(16, 6);
const MICROS_PER_SECOND: i64 = 1_000_000;

impl ScalarUDFImpl for MakeTimestamp {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let result = if self.zoned {
            crate::types::spark_timestamp()
        } else {
            DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None)
        };
        if args.first().is_some_and(|t| t == &DataType::Date32) {
            // From a DATE, a TIME (midnight without one) and, but for `_ntz`, a zone.
            let time = |t: &DataType| matches!(t, DataType::Time32(_) | DataType::Time64(_) | DataType::Null);
            let zone = |t: &DataType| t.is_string() || t == &DataType::Null;
            let fits = match args {
                [_] => self.zoned,
                [_, t] => time(t),
                [_, t, z] => self.zoned && time(t) && zone(z),
                _ => false,
            };
            if !fits {
                return plan_err!("{} takes a DATE, a TIME{}", self.name, if self.zoned { " and a zone" } else { "" });
            }
            return Ok(result);
        }
        let arity = if self.zoned { 6..=7 } else { 6..=6 };
        if !arity.contains(&args.len()) {
            return plan_err!(
                "{} of {} arguments runs on the Spark backend (only the form from a year, month, day, hour, minute \
                 and seconds{} runs here)",
                self.name,
                args.len(),
                if self.zoned { " and a time zone" } else { "" }
            );
        }
        let small_integer =
            |t: &DataType| matches!(t, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Null);
        let seconds = |t: &DataType| t.is_integer() || matches!(t, DataType::Decimal128(..) | DataType::Null);
        let zone = |t: &DataType| t.is_string() || t == &DataType::Null;
        let fits = args[..5].iter().all(small_integer) && seconds(&args[5]) && args.get(6).is_none_or(zone);
        if !fits {
            let types: Vec<String> = args.iter().map(crate::types::spark_type_name).collect();
            return plan_err!(
                "{} of ({}) runs on the Spark backend (here the fields are INTs, the seconds a DECIMAL or an integer \
                 and the zone a STRING)",
                self.name,
                types.join(", ")
            );
        }
        Ok(result)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let arrays = args.args.iter().map(|a| a.to_array(n)).collect::<Result<Vec<ArrayRef>>>()?;
        if arrays[0].data_type() == &DataType::Date32 {
            return crate::columnar::columnar(self.of_date_and_time(&arrays)?, scalar);
        }
        let fields = arrays[..5]
            .iter()
            .map(|a| Ok(arrow::compute::cast(a, &DataType::Int32)?.as_primitive::<Int32Type>().clone()))
            .collect::<Result<Vec<PrimitiveArray<Int32Type>>>>()?;
        let seconds = arrow::compute::cast(&arrays[5], &SECONDS)?;
        let seconds = seconds.as_primitive::<Decimal128Type>();
        let zones = arrays.get(6).map(crate::columnar::utf8).transpose()?;
        let mut zone_cache: Option<(String, Tz)> = None;
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            if fields.iter().any(|f| f.is_null(row)) || arrays[5].is_null(row) {
                out.push(None);
                continue;
            }
            if seconds.is_null(row) {
                // The seconds did not fit a DECIMAL(16,6).
                if self.on_invalid == OnFailure::Error {
                    return exec_err!(
                        "[NUMERIC_VALUE_OUT_OF_RANGE] {}: the seconds do not fit a DECIMAL(16,6)",
                        self.name
                    );
                }
                out.push(None);
                continue;
            }
            let [year, month, day, hour, minute] = [0, 1, 2, 3, 4].map(|i| fields[i].value(row));
            let Some(local) = local_time(year, month, day, hour, minute, seconds.value(row)) else {
                if self.on_invalid == OnFailure::Error {
                    return exec_err!(
                        "[DATETIME_FIELD_OUT_OF_BOUNDS] {}: no such time as year {year}, month {month}, day {day}, \
                         {hour}:{minute} and {} seconds: {}",
                        self.name,
                        arrow::array::Decimal128Array::from(vec![seconds.value(row)])
                            .with_precision_and_scale(16, 6)?
                            .value_as_string(0),
                        crate::modes::ansi_hint(Some(&format!("try_{}", self.name.trim_start_matches("try_"))))
                    );
                }
                out.push(None);
                continue;
            };
            out.push(self.micros_at(local, zones.as_ref(), row, &mut zone_cache)?);
        }
        crate::columnar::columnar(self.typed(out), scalar)
    }
}

impl MakeTimestamp {
    /// The timestamp of a DATE at a TIME (midnight without one), local to a zone (else the
    /// session's, UTC).
    fn of_date_and_time(&self, arrays: &[ArrayRef]) -> Result<ArrayRef> {
        let dates = arrays[0].as_primitive::<arrow::datatypes::Date32Type>();
        let times = match arrays.get(1) {
            Some(t) => Some(
                arrow::compute::cast(t, &DataType::Time64(arrow::datatypes::TimeUnit::Microsecond))?
                    .as_primitive::<arrow::datatypes::Time64MicrosecondType>()
                    .clone(),
            ),
            None => None,
        };
        let zones = arrays.get(2).map(crate::columnar::utf8).transpose()?;
        let mut zone_cache: Option<(String, Tz)> = None;
        let mut out = Vec::with_capacity(dates.len());
        for row in 0..dates.len() {
            let time = match &times {
                Some(t) if t.is_null(row) => None,
                Some(t) => Some(t.value(row)),
                None => Some(0),
            };
            let (false, Some(time)) = (dates.is_null(row), time) else {
                out.push(None);
                continue;
            };
            let Some(local) = chrono::DateTime::from_timestamp_micros(
                i64::from(dates.value(row)) * 86_400 * MICROS_PER_SECOND + time,
            )
            .map(|t| t.naive_utc()) else {
                out.push(None);
                continue;
            };
            out.push(self.micros_at(local, zones.as_ref(), row, &mut zone_cache)?);
        }
        Ok(self.typed(out))
    }

    /// A local time's microseconds: in row `row`'s zone of `zones`, or in UTC without zones.
    fn micros_at(
        &self,
        local: NaiveDateTime,
        zones: Option<&arrow::array::StringArray>,
        row: usize,
        cache: &mut Option<(String, Tz)>,
    ) -> Result<Option<i64>> {
        Ok(match zones {
            None => Some(local.and_utc().timestamp_micros()),
            Some(zones) if zones.is_null(row) => None,
            Some(zones) => Some(instant(local, zone(cache, zones.value(row), &self.name)?)),
        })
    }

    /// The timestamps: instants (TIMESTAMP), or local times (TIMESTAMP_NTZ).
    fn typed(&self, micros: Vec<Option<i64>>) -> ArrayRef {
        let out = TimestampMicrosecondArray::from(micros);
        match self.zoned {
            true => Arc::new(out.with_timezone("UTC")),
            false => Arc::new(out),
        }
    }
}

/// The zone named `name`, read once for a run of rows naming the same one (`cache`).
fn zone<'a>(cache: &'a mut Option<(String, Tz)>, name: &str, function: &str) -> Result<&'a Tz> {
    if cache.as_ref().is_none_or(|(cached, _)| cached != name) {
        let Ok(tz) = name.parse::<Tz>() else {
            return exec_err!("[INVALID_TIMEZONE] {function}: the time zone '{name}' is not one Spark knows");
        };
        *cache = Some((name.to_string(), tz));
    }
    match cache {
        Some((_, tz)) => Ok(tz),
        None => exec_err!("internal error: {function}: the time zone '{name}' was not read"),
    }
}

/// The local time of the fields, as Spark's `make_timestamp` reads them (the seconds in
/// microseconds), or None if there is no such time.
fn local_time(year: i32, month: i32, day: i32, hour: i32, minute: i32, micros: i128) -> Option<NaiveDateTime> {
    let micros = i64::try_from(micros).ok().filter(|m| (0..=60 * MICROS_PER_SECOND).contains(m))?;
    let (second, fraction) = (micros / MICROS_PER_SECOND, micros % MICROS_PER_SECOND);
    let date = NaiveDate::from_ymd_opt(year, u32::try_from(month).ok()?, u32::try_from(day).ok()?)?;
    let (hour, minute) = (u32::try_from(hour).ok()?, u32::try_from(minute).ok()?);
    if second == 60 {
        // 60 seconds with no fraction is the next minute (as PostgreSQL's); with one, no time.
        if fraction != 0 {
            return None;
        }
        return date.and_hms_opt(hour, minute, 0)?.checked_add_signed(chrono::TimeDelta::minutes(1));
    }
    date.and_hms_micro_opt(hour, minute, second as u32, fraction as u32)
}

/// The instant of a local time in `zone`, as Java's `LocalDateTime.atZone` gives it: in the hour
/// the clocks go back, the earlier of the two; in the hour they skip, the time moved forward by
/// the gap (read with the offset before it). Microseconds since the epoch.
pub(crate) fn instant(local: NaiveDateTime, zone: &Tz) -> i64 {
    use chrono::LocalResult;
    match zone.from_local_datetime(&local) {
        LocalResult::Single(t) | LocalResult::Ambiguous(t, _) => t.timestamp_micros(),
        LocalResult::None => {
            // The offset in force a day before: before the gap (zones change their clocks
            // at most twice a year).
            let before = zone.offset_from_utc_datetime(&(local - chrono::TimeDelta::days(1))).fix();
            (local - chrono::TimeDelta::seconds(i64::from(before.local_minus_utc()))).and_utc().timestamp_micros()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").unwrap()
    }

    #[test]
    fn fields_read_as_sparks_make_timestamp_reads_them() {
        assert_eq!(local_time(2019, 6, 30, 23, 59, 60_000_000), Some(at("2019-07-01 00:00:00")));
        assert_eq!(local_time(2019, 6, 30, 23, 59, 60_000_001), None);
        assert_eq!(local_time(2024, 13, 22, 15, 30, 0), None);
        assert_eq!(local_time(2023, 2, 29, 0, 0, 0), None);
        assert_eq!(local_time(2024, 1, 1, 24, 0, 0), None);
        assert_eq!(local_time(2024, 1, 1, 0, 0, -1), None);
        assert_eq!(
            local_time(2014, 12, 28, 6, 30, 45_887_000).map(|t| t.and_utc().timestamp_micros() % 1_000_000),
            Some(887_000)
        );
    }

    #[test]
    fn months_between_follows_sparks_rule() {
        let micros = |t: &str| at(t).and_utc().timestamp_micros();
        let between = |a, b, round| months_between(micros(a), micros(b), round).unwrap();
        // Spark's own example: 3.94959677.
        assert_eq!(between("1997-02-28 10:30:00", "1996-10-30 00:00:00", true), 3.94959677);
        // Both the last days of their months: whole months.
        assert_eq!(between("2024-02-29 10:00:00", "2024-01-31 00:00:00", true), 1.0);
        assert_eq!(between("2024-03-15 00:00:00", "2024-01-15 12:00:00", true), 2.0);
    }

    #[test]
    fn a_local_time_in_a_zone_is_the_instant_java_gives() {
        let new_york: Tz = "America/New_York".parse().unwrap();
        let utc = |t: &str| at(t).and_utc().timestamp_micros();
        // The hour skipped in March: 02:30 is 03:30 EDT.
        assert_eq!(instant(at("2024-03-10 02:30:00"), &new_york), utc("2024-03-10 07:30:00"));
        // The hour passed twice in November: the earlier, EDT.
        assert_eq!(instant(at("2024-11-03 01:30:00"), &new_york), utc("2024-11-03 05:30:00"));
        assert_eq!(instant(at("2024-07-01 12:00:00"), &new_york), utc("2024-07-01 16:00:00"));
    }
}
