//! A text read as a TIMESTAMP the way Spark's cast reads it (`DateTimeUtils.parseTimestampString`),
//! for `CAST(text AS TIMESTAMP)` and `to_timestamp(text)`:
//!
//! `[+-]yyyy[-[m]m[-[d]d]]`, then after a space or `T` `[h]h:[m]m[:[s]s[.fraction]]`, then a
//! zone (`Z`, `+hh:mm` and Java's other offsets, `UTC`/`GMT`/`UT` with or without an offset,
//! or a region such as `Europe/Paris`); white space around. A local time is read in its zone
//! (else the session's, UTC) with Java's rule for the hours the clocks skip or pass twice.
//!
//! What Spark cannot read either is `Invalid` (NULL or an error, by mode). A text that reads only
//! on Spark's clock (a time without a date is today's) or names a zone by one of Java's short ids
//! other than the fixed `EST`, `MST`, `HST` is `Unsupported`: an error in either mode, never
//! another answer.

use arrow::array::timezone::Tz;
use arrow::array::{Array, StringArray, TimestampMicrosecondArray};
use datafusion::common::{exec_err, Result};

/// What a text reads as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextTimestamp {
    /// Microseconds since the epoch.
    Micros(i64),
    Invalid,
    Unsupported(&'static str),
}

/// Each text read as an instant (in UTC): a text Spark cannot read either is NULL when
/// `lenient` (no ANSI mode, `try_cast`), else an error; an `Unsupported` one is always an error.
pub(crate) fn instants(text: &StringArray, lenient: bool) -> Result<TimestampMicrosecondArray> {
    let mut out = Vec::with_capacity(text.len());
    for v in text.iter() {
        out.push(match v.map(|v| (v, read(v))) {
            None => None,
            Some((_, TextTimestamp::Micros(m))) => Some(m),
            Some((_, TextTimestamp::Invalid)) if lenient => None,
            Some((v, TextTimestamp::Invalid)) => {
                return exec_err!(
                    "[CAST_INVALID_INPUT] the value '{v}' of the type STRING cannot be cast to TIMESTAMP: {}",
                    crate::modes::ansi_hint(Some("try_cast"))
                )
            }
            Some((v, TextTimestamp::Unsupported(why))) => {
                return exec_err!("the text '{v}' as a TIMESTAMP runs on the Spark backend ({why})")
            }
        });
    }
    Ok(TimestampMicrosecondArray::from(out).with_timezone("UTC"))
}

/// Spark's reading of `s`.
pub(crate) fn read(s: &str) -> TextTimestamp {
    let bytes = s.trim_matches(|c: char| c.is_whitespace() || c.is_control()).as_bytes();
    if bytes.is_empty() {
        return TextTimestamp::Invalid;
    }
    let valid = |segment: usize, digits: usize| {
        segment == 6
            || (segment == 0 && (4..=6).contains(&digits))
            || (segment == 7 && digits <= 2)
            || (segment != 0 && segment != 6 && segment != 7 && digits > 0 && digits <= 2)
    };
    let mut segments = [1i64, 1, 1, 0, 0, 0, 0, 0, 0];
    let (mut i, mut value, mut digits) = (0usize, 0i64, 0usize);
    let (mut fraction_digits, mut just_time) = (0usize, false);
    let mut zone: Option<&[u8]> = None;
    let mut j = 0;
    let mut year_sign = None;
    if bytes[0] == b'-' || bytes[0] == b'+' {
        year_sign = Some(if bytes[0] == b'-' { -1 } else { 1 });
        j = 1;
    }
    macro_rules! close {
        ($segment:expr) => {{
            if !valid($segment, digits) {
                return TextTimestamp::Invalid;
            }
            segments[$segment] = value;
            value = 0;
            digits = 0;
        }};
    }
    while j < bytes.len() {
        let b = bytes[j];
        if !b.is_ascii_digit() {
            if j == 0 && b == b'T' {
                just_time = true;
                i += 3;
            } else if i < 2 {
                if b == b'-' {
                    close!(i);
                    i += 1;
                } else if i == 0 && b == b':' && year_sign.is_none() {
                    just_time = true;
                    close!(3);
                    i = 4;
                } else {
                    return TextTimestamp::Invalid;
                }
            } else if i == 2 {
                if b == b' ' || b == b'T' {
                    close!(i);
                    i += 1;
                } else {
                    return TextTimestamp::Invalid;
                }
            } else if i == 3 || i == 4 {
                if b == b':' {
                    close!(i);
                    i += 1;
                } else {
                    return TextTimestamp::Invalid;
                }
            } else if i == 5 || i == 6 {
                close!(i);
                i += 1;
                if !(b == b'.' && i == 6) {
                    zone = Some(&bytes[j..]);
                    j = bytes.len() - 1;
                }
                if i == 6 && b != b'.' {
                    i += 1;
                }
            } else if i < 9 && (b == b':' || b == b' ') {
                close!(i);
                i += 1;
            } else {
                return TextTimestamp::Invalid;
            }
        } else {
            if i == 6 {
                fraction_digits += 1;
            }
            // Digits past the sixth of a fraction are below a microsecond, dropped.
            if i != 6 || digits < 6 {
                value = value * 10 + i64::from(b - b'0');
            }
            digits += 1;
        }
        j += 1;
    }
    if !valid(i, digits) {
        return TextTimestamp::Invalid;
    }
    segments[i] = value;
    while fraction_digits < 6 {
        segments[6] *= 10;
        fraction_digits += 1;
    }
    if just_time {
        return TextTimestamp::Unsupported("a time without a date reads as today's on Spark");
    }
    segments[0] *= year_sign.unwrap_or(1);
    let local =
        chrono::NaiveDate::from_ymd_opt(segments[0] as i32, segments[1] as u32, segments[2] as u32).and_then(|d| {
            d.and_hms_micro_opt(segments[3] as u32, segments[4] as u32, segments[5] as u32, segments[6] as u32)
        });
    let (Some(local), true) = (local, segments[..6].iter().all(|v| i32::try_from(*v).is_ok())) else {
        return TextTimestamp::Invalid;
    };
    let Some(zone) = zone else { return TextTimestamp::Micros(local.and_utc().timestamp_micros()) };
    let Ok(zone) = std::str::from_utf8(zone) else { return TextTimestamp::Invalid };
    match zone_of(zone.trim()) {
        Zone::Invalid => TextTimestamp::Invalid,
        Zone::Unsupported => TextTimestamp::Unsupported("a zone named by one of Java's short ids"),
        zone => zone.instant(local).map_or(TextTimestamp::Invalid, TextTimestamp::Micros),
    }
}

pub(crate) enum Zone {
    /// Seconds east of UTC.
    Offset(i64),
    Region(Tz),
    Invalid,
    Unsupported,
}

impl Zone {
    /// The instant (microseconds) of a local time here, by Java's rule for the hours the clocks
    /// skip or pass twice; `None` for a zone that is not one.
    pub(crate) fn instant(&self, local: chrono::NaiveDateTime) -> Option<i64> {
        match self {
            Zone::Offset(seconds) => Some(local.and_utc().timestamp_micros() - seconds * 1_000_000),
            Zone::Region(tz) => Some(crate::functions::datetime::make_timestamp::instant(local, tz)),
            Zone::Invalid | Zone::Unsupported => None,
        }
    }

    /// The local time here of an instant (microseconds).
    pub(crate) fn local(&self, micros: i64) -> Option<chrono::NaiveDateTime> {
        let at = chrono::DateTime::from_timestamp_micros(micros)?;
        match self {
            Zone::Offset(seconds) => Some(at.naive_utc() + chrono::TimeDelta::seconds(*seconds)),
            Zone::Region(tz) => Some(at.with_timezone(tz).naive_local()),
            Zone::Invalid | Zone::Unsupported => None,
        }
    }
}

/// A zone as Java's `ZoneId.of` reads it (after Spark writes `+1:` as `+01:`).
pub(crate) fn zone_of(name: &str) -> Zone {
    if name == "Z" {
        return Zone::Offset(0);
    }
    for prefix in ["UTC", "GMT", "UT"] {
        if let Some(rest) = name.strip_prefix(prefix) {
            if rest.is_empty() {
                return Zone::Offset(0);
            }
            if rest.starts_with(['+', '-']) {
                return offset(rest).map_or(Zone::Invalid, Zone::Offset);
            }
        }
    }
    if name.starts_with(['+', '-']) {
        return offset(name).map_or(Zone::Invalid, Zone::Offset);
    }
    match name {
        "EST" => return Zone::Offset(-5 * 3600),
        "MST" => return Zone::Offset(-7 * 3600),
        "HST" => return Zone::Offset(-10 * 3600),
        _ => {}
    }
    if name.contains('/') {
        return name.parse::<Tz>().map_or(Zone::Invalid, Zone::Region);
    }
    // Java's other short ids (`PST`, `CST`, …) name regions Spark maps them to.
    if name.len() == 3 && name.bytes().all(|b| b.is_ascii_uppercase()) {
        return Zone::Unsupported;
    }
    name.parse::<Tz>().map_or(Zone::Invalid, Zone::Region)
}

/// `+h`, `+hh`, `+hh:mm`, `+hhmm`, `+hh:mm:ss`, `+hhmmss` (Spark writes `+h:` as `+0h:` first),
/// in seconds; at most 18 hours.
fn offset(s: &str) -> Option<i64> {
    let sign = if s.starts_with('-') { -1 } else { 1 };
    let body = &s[1..];
    let body = if body.len() > 1 && body.as_bytes()[1] == b':' { format!("0{body}") } else { body.to_string() };
    let number =
        |t: &str| (t.len() == 2 && t.bytes().all(|b| b.is_ascii_digit())).then(|| t.parse::<i64>().ok()).flatten();
    let (h, m, sec) = match body.len() {
        1 if body.as_bytes()[0].is_ascii_digit() => (i64::from(body.as_bytes()[0] - b'0'), 0, 0),
        2 => (number(&body)?, 0, 0),
        4 => (number(&body[..2])?, number(&body[2..])?, 0),
        5 if &body[2..3] == ":" => (number(&body[..2])?, number(&body[3..])?, 0),
        6 => (number(&body[..2])?, number(&body[2..4])?, number(&body[4..])?),
        8 if &body[2..3] == ":" && &body[5..6] == ":" => {
            (number(&body[..2])?, number(&body[3..5])?, number(&body[6..])?)
        }
        _ => return None,
    };
    if h > 18 || m > 59 || sec > 59 || (h == 18 && (m > 0 || sec > 0)) {
        return None;
    }
    Some(sign * (h * 3600 + m * 60 + sec))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn micros(s: &str) -> i64 {
        chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S%.f").unwrap().and_utc().timestamp_micros()
    }

    #[test]
    fn texts_read_as_sparks_cast_reads_them() {
        assert_eq!(read("2016-12-31 00:12"), TextTimestamp::Micros(micros("2016-12-31 00:12:00")));
        assert_eq!(read(" 2016-12-31T00:12:05.5 "), TextTimestamp::Micros(micros("2016-12-31 00:12:05.5")));
        assert_eq!(read("2016"), TextTimestamp::Micros(micros("2016-01-01 00:00:00")));
        assert_eq!(read("2016-2"), TextTimestamp::Micros(micros("2016-02-01 00:00:00")));
        assert_eq!(read("2016-12-31 "), TextTimestamp::Micros(micros("2016-12-31 00:00:00")));
        assert_eq!(read("2016-12-31 01:02:03Z"), TextTimestamp::Micros(micros("2016-12-31 01:02:03")));
        assert_eq!(read("2016-12-31 01:02:03+01:00"), TextTimestamp::Micros(micros("2016-12-31 00:02:03")));
        assert_eq!(read("2016-12-31 01:02:03 UTC+1"), TextTimestamp::Micros(micros("2016-12-31 00:02:03")));
        assert_eq!(read("2016-12-31 01:02:03.1234567"), TextTimestamp::Micros(micros("2016-12-31 01:02:03.123456")));
        assert_eq!(read("2016-02-30"), TextTimestamp::Invalid);
        assert_eq!(read("2016-12-31 25:00"), TextTimestamp::Invalid);
        assert_eq!(read("bogus"), TextTimestamp::Invalid);
        assert_eq!(read("16-12-31"), TextTimestamp::Invalid);
        assert!(matches!(read("12:00:00"), TextTimestamp::Unsupported(_)));
        assert!(matches!(read("2016-12-31 01:02:03 PST"), TextTimestamp::Unsupported(_)));
    }
}
