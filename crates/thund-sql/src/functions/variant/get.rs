//! Out of a variant: paths (`$.a[0]`) and casts to SQL types, by Spark's rules for variants.

use arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::{exec_err, Result, ScalarValue};

use super::encoding::{ARRAY, OBJECT};
use super::is_variant;
use super::value::{java_float, plain_string, to_json, Scalar, Value};

/// One step of a variant path.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Step {
    Key(String),
    Index(usize),
}

/// The steps of a path as Spark reads one: `$`, then `.key`, `['key']`, `["key"]` or `[n]`.
pub(super) fn parse_path(path: &str) -> Option<Vec<Step>> {
    let rest = path.strip_prefix('$')?;
    let b = rest.as_bytes();
    let mut steps = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                let end = rest[i + 1..].find(['.', '[']).map_or(rest.len(), |e| i + 1 + e);
                if end == i + 1 {
                    return None;
                }
                steps.push(Step::Key(rest[i + 1..end].to_string()));
                i = end;
            }
            b'[' => match b.get(i + 1) {
                Some(q @ (b'\'' | b'"')) => {
                    let close = rest[i + 2..].find(*q as char)? + i + 2;
                    if b.get(close + 1) != Some(&b']') {
                        return None;
                    }
                    steps.push(Step::Key(rest[i + 2..close].to_string()));
                    i = close + 2;
                }
                _ => {
                    let close = rest[i + 1..].find(']')? + i + 1;
                    let n = &rest[i + 1..close];
                    if n.is_empty() || !n.bytes().all(|c| c.is_ascii_digit()) {
                        return None;
                    }
                    steps.push(Step::Index(n.parse().ok()?));
                    i = close + 1;
                }
            },
            _ => return None,
        }
    }
    Some(steps)
}

/// The value at `steps` in `v`; `None` where a key or index is missing or the value is not an
/// object or array as the step needs.
pub(super) fn walk<'a>(v: Value<'a>, steps: &[Step]) -> Result<Option<Value<'a>>> {
    let mut v = v;
    for s in steps {
        let next = match (s, v.basic_type()?) {
            (Step::Key(k), OBJECT) => v.field(k)?,
            (Step::Index(i), ARRAY) if *i < v.array_size()? => Some(v.element_at(*i)?),
            _ => None,
        };
        match next {
            Some(n) => v = n,
            None => return Ok(None),
        }
    }
    Ok(Some(v))
}

// ---------------------------------------------------------------------------------------------
// Casts out of a variant.

/// `v` converted to `to` (not VARIANT, not nested) by Spark's rules for variants; `Ok(None)` if
/// it does not convert, `ScalarValue` NULL for a JSON `null`.
pub(super) fn cast(v: &Value, to: &DataType) -> Result<Option<ScalarValue>> {
    let s = v.scalar()?;
    if s == Scalar::Null {
        return Ok(Some(ScalarValue::try_from(to)?));
    }
    let ten = |n: u8| 10i128.pow(u32::from(n));
    let truncated = |u: i128, scale: u8| u / ten(scale);
    let integer = |i: i128| -> Option<ScalarValue> {
        Some(match to {
            DataType::Int8 => ScalarValue::Int8(Some(i8::try_from(i).ok()?)),
            DataType::Int16 => ScalarValue::Int16(Some(i16::try_from(i).ok()?)),
            DataType::Int32 => ScalarValue::Int32(Some(i32::try_from(i).ok()?)),
            _ => ScalarValue::Int64(Some(i64::try_from(i).ok()?)),
        })
    };
    let from_double = |d: f64| -> Option<ScalarValue> {
        if !d.is_finite() {
            return None;
        }
        let t = d.trunc();
        if !(-1.8e38..=1.8e38).contains(&t) {
            return None;
        }
        integer(t as i128)
    };
    let out = match to {
        DataType::Boolean => ScalarValue::Boolean(match s {
            Scalar::Boolean(b) => Some(b),
            Scalar::Long(l) => Some(l != 0),
            Scalar::Decimal(u, _) => Some(u != 0),
            Scalar::Double(d) => Some(d != 0.0),
            Scalar::Float(f) => Some(f != 0.0),
            Scalar::String(t) => crate::functions::cast::boolean(t),
            _ => None,
        }),
        DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64 => {
            let r = match s {
                Scalar::Boolean(b) => integer(i128::from(b)),
                Scalar::Long(l) => integer(i128::from(l)),
                Scalar::Decimal(u, scale) => integer(truncated(u, scale)),
                Scalar::Double(d) => from_double(d),
                Scalar::Float(f) => from_double(f64::from(f)),
                Scalar::String(t) => {
                    let t = t.trim_matches(|c: char| c.is_whitespace() || c.is_control());
                    let digits = t.strip_prefix(['+', '-']).unwrap_or(t);
                    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
                        None
                    } else {
                        t.trim_start_matches('+').parse::<i128>().ok().and_then(integer)
                    }
                }
                _ => None,
            };
            return Ok(r);
        }
        DataType::Float64 | DataType::Float32 => {
            let d = match s {
                Scalar::Boolean(b) => Some(f64::from(u8::from(b))),
                Scalar::Long(l) => Some(l as f64),
                Scalar::Decimal(u, scale) => plain_string(u, scale).parse().ok(),
                Scalar::Double(d) => Some(d),
                Scalar::Float(f) => Some(f64::from(f)),
                Scalar::String(t) => crate::functions::cast::floating(t),
                _ => None,
            };
            match (to, s) {
                (DataType::Float32, Scalar::Float(f)) => ScalarValue::Float32(Some(f)),
                (DataType::Float32, Scalar::Long(l)) => ScalarValue::Float32(Some(l as f32)),
                (DataType::Float32, _) => ScalarValue::Float32(d.map(|d| d as f32)),
                _ => ScalarValue::Float64(d),
            }
        }
        DataType::Decimal128(p, scale) => {
            let read = match s {
                Scalar::Boolean(b) => crate::functions::decimal::read(if b { "1" } else { "0" }),
                Scalar::Long(l) => crate::functions::decimal::read(&l.to_string()),
                Scalar::Decimal(u, sc) => crate::functions::decimal::read(&plain_string(u, sc)),
                Scalar::Double(d) => match crate::functions::decimal::of_double(d) {
                    Some(n) => crate::functions::decimal::Read::Number(n),
                    None => crate::functions::decimal::Read::Invalid,
                },
                Scalar::Float(f) => crate::functions::decimal::read(&java_float(f)),
                Scalar::String(t) => crate::functions::decimal::read(t),
                _ => crate::functions::decimal::Read::Invalid,
            };
            match read {
                crate::functions::decimal::Read::Number(n) => ScalarValue::Decimal128(n.fit(*p, *scale), *p, *scale),
                _ => return Ok(None),
            }
        }
        DataType::Utf8 => ScalarValue::Utf8(Some(match s {
            Scalar::String(t) => t.to_string(),
            _ => {
                let mut out = String::new();
                to_json(v, &mut out)?;
                out
            }
        })),
        DataType::Binary => ScalarValue::Binary(match s {
            Scalar::String(t) => Some(t.as_bytes().to_vec()),
            Scalar::Binary(b) => Some(b.to_vec()),
            _ => None,
        }),
        DataType::Date32 => ScalarValue::Date32(match s {
            Scalar::Date(d) => Some(d),
            Scalar::Timestamp(t) | Scalar::TimestampNtz(t) => Some(t.div_euclid(86_400_000_000) as i32),
            Scalar::String(t) => crate::functions::cast::date(t),
            _ => None,
        }),
        DataType::Timestamp(TimeUnit::Microsecond, zone) => {
            // A number is seconds since the epoch (a fraction kept to the microsecond).
            let seconds = |d: f64| (d.is_finite() && (d * 1e6).abs() < 9.2e18).then_some((d * 1e6) as i64);
            let micros = match s {
                Scalar::Timestamp(t) | Scalar::TimestampNtz(t) => Some(t),
                Scalar::Long(l) => l.checked_mul(1_000_000),
                Scalar::Decimal(u, scale) => {
                    i64::try_from(u.checked_mul(1_000_000).map_or(i128::MAX, |m| m / ten(scale))).ok()
                }
                Scalar::Double(d) => seconds(d),
                Scalar::Float(f) => seconds(f64::from(f)),
                Scalar::Date(d) => Some(i64::from(d) * 86_400_000_000),
                Scalar::String(t) => match crate::functions::datetime::timestamp_text::read(t) {
                    crate::functions::datetime::timestamp_text::TextTimestamp::Micros(m) => Some(m),
                    crate::functions::datetime::timestamp_text::TextTimestamp::Invalid => None,
                    crate::functions::datetime::timestamp_text::TextTimestamp::Unsupported(why) => {
                        return exec_err!("the text '{t}' as a TIMESTAMP runs on the Spark backend ({why})")
                    }
                },
                _ => None,
            };
            ScalarValue::TimestampMicrosecond(micros, zone.clone())
        }
        other => {
            return exec_err!("a VARIANT cast to {} runs on the Spark backend", crate::types::spark_type_name(other))
        }
    };
    Ok((!out.is_null()).then_some(out))
}

/// Whether `variant_get`/`CAST` converts a variant to `to` natively.
pub(super) fn castable(to: &DataType) -> bool {
    is_variant(to)
        || matches!(
            to,
            DataType::Boolean
                | DataType::Int8
                | DataType::Int16
                | DataType::Int32
                | DataType::Int64
                | DataType::Float32
                | DataType::Float64
                | DataType::Decimal128(..)
                | DataType::Utf8
                | DataType::Binary
                | DataType::Date32
                | DataType::Timestamp(TimeUnit::Microsecond, _)
        )
}
