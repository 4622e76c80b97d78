//! Spark's datetime functions: its datetime patterns in formatting and strict parsing
//! (`patterns`), `make_timestamp` and its forms with Java's reading of a local time in a zone
//! (`make_timestamp`), text read as a TIMESTAMP by Spark's cast rules (`timestamp_text`),
//! `window(…)` in a batch GROUP BY (`windows`), and the spellings and answers of DataFusion's
//! own (`rewrites`).

pub(crate) mod make_timestamp;
pub(crate) mod patterns;
mod rewrites;
pub(crate) mod timestamp_text;
mod units;
pub(crate) mod windows;

use crate::declare::Function;

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    patterns::register(ctx);
    make_timestamp::register(ctx);
    windows::register(ctx);
    units::register(ctx);
}

/// Spark's datetime functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("date_format"),
    Function::udf("from_unixtime"),
    Function::udf("to_char"),
    Function::udf("to_varchar"),
    // Without ANSI mode, a text the parsing functions cannot read is NULL.
    Function::udf("to_date").plan(rewrites::lenient_parse),
    Function::udf("to_timestamp").plan(rewrites::lenient_parse),
    Function::udf("unix_timestamp").plan(rewrites::lenient_parse),
    Function::udf("to_unix_timestamp").plan(rewrites::lenient_parse),
    Function::udf("try_to_date"),
    Function::udf("try_to_timestamp"),
    Function::udf("unix_date"),
    Function::udf("unix_micros"),
    Function::udf("unix_millis"),
    Function::udf("unix_seconds"),
    Function::udf("date_from_unix_date"),
    Function::udf("timestamp_micros"),
    Function::udf("timestamp_millis"),
    Function::udf("timestamp_seconds"),
    Function::udf("convert_timezone"),
    // Without ANSI mode, a field out of its range (month 13) is NULL.
    Function::udf("make_timestamp").ints(&[0, 1, 2, 3, 4]).plan(rewrites::lenient_make),
    Function::udf("make_timestamp_ltz").ints(&[0, 1, 2, 3, 4]).plan(rewrites::lenient_make),
    Function::udf("make_timestamp_ntz").ints(&[0, 1, 2, 3, 4]).plan(rewrites::lenient_make),
    Function::udf("try_make_timestamp").ints(&[0, 1, 2, 3, 4]),
    Function::udf("try_make_timestamp_ltz").ints(&[0, 1, 2, 3, 4]),
    Function::udf("try_make_timestamp_ntz").ints(&[0, 1, 2, 3, 4]),
    Function::udf("months_between").templates(&[
        (2, "months_between(CAST(__a1 AS TIMESTAMP), CAST(__a2 AS TIMESTAMP))"),
        (3, "months_between(CAST(__a1 AS TIMESTAMP), CAST(__a2 AS TIMESTAMP), __a3)"),
    ]),
    // Date and time parts Spark takes from a string too (cast as Spark casts it implicitly).
    Function::builtin("hour").templates(&[(1, "CAST(date_part('hour', CAST(__a1 AS TIMESTAMP)) AS INT)")]),
    Function::builtin("minute").templates(&[(1, "CAST(date_part('minute', CAST(__a1 AS TIMESTAMP)) AS INT)")]),
    Function::builtin("second").templates(&[(1, "second(CAST(__a1 AS TIMESTAMP))")]),
    // 0 = Monday; the session's `dow` is Spark's, 1 = Sunday.
    Function::spelled("weekday", &[(1, "CAST((date_part('dow', CAST(__a1 AS DATE)) + 5) % 7 AS INT)")]),
    Function::spelled("year", &[]).parse(rewrites::date_part_of),
    Function::spelled("month", &[]).parse(rewrites::date_part_of),
    Function::spelled("day", &[]).parse(rewrites::date_part_of),
    Function::spelled("dayofmonth", &[]).parse(rewrites::date_part_of),
    Function::spelled("quarter", &[]).parse(rewrites::date_part_of),
    Function::spelled("dayofyear", &[]).parse(rewrites::date_part_of),
    Function::spelled("weekofyear", &[]).parse(rewrites::date_part_of),
    Function::spelled("dayofweek", &[]).parse(rewrites::date_part_of),
    Function::spelled("yearofweek", &[]).parse(rewrites::date_part_of),
    // Spark's seconds of a timestamp keep their fraction.
    Function::builtin("date_part").plan(rewrites::seconds),
    // Spark's date functions take a DATE, to which it casts a string or a timestamp (in ANSI
    // mode a string that is no date fails, without it it is NULL: the cast's rules); a literal
    // count of days or months is an INT.
    Function::builtin("date_add").templates(&[(2, "date_add(CAST(__a1 AS DATE), __a2)")]).ints(&[1]).parse(units::add),
    Function::spelled("dateadd", &[(2, "date_add(CAST(__a1 AS DATE), __a2)")]).ints(&[1]).parse(units::add),
    // Arithmetic by a named unit (`units`): `timestampadd(HOUR, 2, t)`, also spelled `dateadd` /
    // `date_add`, and `timestampdiff(MONTH, a, b)`, also `datediff` / `date_diff` / `timediff`.
    Function::spelled("timestampadd", &[]).parse(units::add),
    Function::spelled("timestampdiff", &[]).parse(units::diff),
    Function::spelled("timediff", &[]).parse(units::diff),
    Function::builtin("datediff").parse(units::diff),
    Function::builtin("date_diff").parse(units::diff),
    Function::udf(units::ADD).plan(units::texts_as_timestamps),
    Function::udf(units::DIFF).plan(units::texts_as_timestamps),
    Function::builtin("date_sub").templates(&[(2, "date_sub(CAST(__a1 AS DATE), __a2)")]).ints(&[1]),
    Function::builtin("add_months").templates(&[(2, "add_months(CAST(__a1 AS DATE), __a2)")]).ints(&[1]),
    Function::builtin("last_day").templates(&[(1, "last_day(CAST(__a1 AS DATE))")]),
    Function::builtin("next_day").templates(&[(2, "next_day(CAST(__a1 AS DATE), __a2)")]).plan(rewrites::next_day),
    Function::builtin("monthname").templates(&[(1, "monthname(CAST(__a1 AS DATE))")]),
    Function::spelled("dayname", &[(1, "date_format(CAST(__a1 AS DATE), 'EEE')")]),
    // The session's zone is UTC: a TIMESTAMP (an instant) is its local time there.
    Function::spelled("to_timestamp_ltz", &[(1, "to_timestamp(__a1)"), (2, "to_timestamp(__a1, __a2)")]),
    Function::spelled(
        "to_timestamp_ntz",
        &[(1, "CAST(to_timestamp(__a1) AS TIMESTAMP_NTZ)"), (2, "CAST(to_timestamp(__a1, __a2) AS TIMESTAMP_NTZ)")],
    ),
    Function::builtin("date_trunc").plan(rewrites::zoned),
    Function::builtin("from_utc_timestamp").plan(rewrites::zoned),
    Function::builtin("to_utc_timestamp").plan(rewrites::zoned),
    // `GROUP BY window(…)` is the analysis rule `time_windows` (`windows::rewrite`): a lateral view over
    // each row's windows, computed by this UDF.
    Function::spelled("window", &[]),
    Function::udf("__thund_time_windows"),
    // The last instant of a window.
    Function::spelled("window_time", &[(1, "get_field(__a1, 'end') - INTERVAL '0.000001' SECOND")]),
];
