//! Reading a variant: `Value`, a bounds-checked view of one value, and a value written as JSON
//! text as Spark writes one.

use datafusion::common::{exec_err, Result};

use super::encoding::{
    build_error, digits, Builder, ARRAY, BINARY, DATE, DECIMAL16, DECIMAL4, DECIMAL8, DOUBLE, FALSE, FLOAT, INT1, INT2,
    INT4, INT8, LONG_STR, NULL, OBJECT, PRIMITIVE, SHORT_STR, TIMESTAMP, TIMESTAMP_NTZ, TRUE,
};

/// One value inside a variant: the value bytes from `pos`, and the variant's metadata.
#[derive(Clone, Copy)]
pub(crate) struct Value<'a> {
    value: &'a [u8],
    metadata: &'a [u8],
    pos: usize,
}

pub(super) fn malformed<T>() -> Result<T> {
    exec_err!("[MALFORMED_VARIANT] the variant's bytes do not follow the variant encoding")
}

/// A primitive value's content.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Scalar<'a> {
    Null,
    Boolean(bool),
    Long(i64),
    Double(f64),
    Float(f32),
    Decimal(i128, u8),
    String(&'a str),
    Date(i32),
    Timestamp(i64),
    TimestampNtz(i64),
    Binary(&'a [u8]),
    Object,
    Array,
}

impl<'a> Value<'a> {
    pub(crate) fn new(value: &'a [u8], metadata: &'a [u8]) -> Result<Self> {
        if metadata.is_empty() || metadata[0] & 0x0F != 1 || value.is_empty() {
            return malformed();
        }
        Ok(Value { value, metadata, pos: 0 })
    }

    pub(super) fn byte(&self, at: usize) -> Result<u8> {
        self.value.get(at).copied().map_or_else(malformed, Ok)
    }

    pub(super) fn read_le(&self, at: usize, n: usize) -> Result<u64> {
        let bytes = self.value.get(at..at + n).map_or_else(malformed, Ok)?;
        Ok(bytes.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    pub(super) fn slice(&self, at: usize, n: usize) -> Result<&'a [u8]> {
        self.value.get(at..at.saturating_add(n)).map_or_else(malformed, Ok)
    }

    pub(super) fn header(&self) -> Result<u8> {
        self.byte(self.pos)
    }

    pub(super) fn basic_type(&self) -> Result<u8> {
        Ok(self.header()? & 3)
    }

    /// An object's layout: (size, id bytes, offset bytes, where the ids start).
    pub(super) fn object_layout(&self) -> Result<(usize, usize, usize, usize)> {
        let t = self.header()? >> 2;
        let large = (t >> 4) & 1 == 1;
        let id_size = usize::from((t >> 2) & 3) + 1;
        let offset_size = usize::from(t & 3) + 1;
        let size_bytes = if large { 4 } else { 1 };
        let size = self.read_le(self.pos + 1, size_bytes)? as usize;
        Ok((size, id_size, offset_size, self.pos + 1 + size_bytes))
    }

    pub(super) fn object_size(&self) -> Result<usize> {
        if self.basic_type()? != OBJECT {
            return malformed();
        }
        Ok(self.object_layout()?.0)
    }

    /// The `i`th field of an object, in key order.
    pub(super) fn field_at(&self, i: usize) -> Result<(&'a str, Value<'a>)> {
        let (size, id_size, offset_size, ids) = self.object_layout()?;
        if i >= size {
            return malformed();
        }
        let offsets = ids + size * id_size;
        let data = offsets + (size + 1) * offset_size;
        let id = self.read_le(ids + i * id_size, id_size)? as usize;
        let offset = self.read_le(offsets + i * offset_size, offset_size)? as usize;
        let key = metadata_key(self.metadata, id)?;
        Ok((key, Value { pos: data + offset, ..*self }))
    }

    /// The field `key` of an object, by binary search (fields are in key order).
    pub(super) fn field(&self, key: &str) -> Result<Option<Value<'a>>> {
        let size = self.object_size()?;
        let (mut lo, mut hi) = (0, size);
        while lo < hi {
            let mid = (lo + hi) / 2;
            let (k, v) = self.field_at(mid)?;
            match k.encode_utf16().cmp(key.encode_utf16()) {
                std::cmp::Ordering::Equal => return Ok(Some(v)),
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
            }
        }
        Ok(None)
    }

    pub(super) fn array_layout(&self) -> Result<(usize, usize, usize)> {
        let t = self.header()? >> 2;
        let large = (t >> 2) & 1 == 1;
        let offset_size = usize::from(t & 3) + 1;
        let size_bytes = if large { 4 } else { 1 };
        let size = self.read_le(self.pos + 1, size_bytes)? as usize;
        Ok((size, offset_size, self.pos + 1 + size_bytes))
    }

    pub(super) fn array_size(&self) -> Result<usize> {
        if self.basic_type()? != ARRAY {
            return malformed();
        }
        Ok(self.array_layout()?.0)
    }

    pub(super) fn element_at(&self, i: usize) -> Result<Value<'a>> {
        let (size, offset_size, offsets) = self.array_layout()?;
        if i >= size {
            return malformed();
        }
        let data = offsets + (size + 1) * offset_size;
        let offset = self.read_le(offsets + i * offset_size, offset_size)? as usize;
        Ok(Value { pos: data + offset, ..*self })
    }

    /// The bytes of a primitive or string value, header included.
    pub(super) fn scalar_bytes(&self) -> Result<&'a [u8]> {
        let h = self.header()?;
        let n = match h & 3 {
            SHORT_STR => 1 + usize::from(h >> 2),
            PRIMITIVE => match h >> 2 {
                NULL | TRUE | FALSE => 1,
                INT1 => 2,
                INT2 => 3,
                INT4 | DATE | FLOAT => 5,
                INT8 | DOUBLE | TIMESTAMP | TIMESTAMP_NTZ => 9,
                DECIMAL4 => 6,
                DECIMAL8 => 10,
                DECIMAL16 => 18,
                BINARY | LONG_STR => 5 + self.read_le(self.pos + 1, 4)? as usize,
                _ => return exec_err!("[UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT] a variant type natively unknown"),
            },
            _ => return malformed(),
        };
        self.slice(self.pos, n)
    }

    pub(crate) fn scalar(&self) -> Result<Scalar<'a>> {
        let h = self.header()?;
        let p = self.pos + 1;
        Ok(match h & 3 {
            OBJECT => Scalar::Object,
            ARRAY => Scalar::Array,
            SHORT_STR => Scalar::String(text(self.slice(p, usize::from(h >> 2))?)?),
            _ => match h >> 2 {
                NULL => Scalar::Null,
                TRUE => Scalar::Boolean(true),
                FALSE => Scalar::Boolean(false),
                INT1 => Scalar::Long(i64::from(self.read_le(p, 1)? as i8)),
                INT2 => Scalar::Long(i64::from(self.read_le(p, 2)? as i16)),
                INT4 => Scalar::Long(i64::from(self.read_le(p, 4)? as i32)),
                INT8 => Scalar::Long(self.read_le(p, 8)? as i64),
                DOUBLE => Scalar::Double(f64::from_bits(self.read_le(p, 8)?)),
                FLOAT => Scalar::Float(f32::from_bits(self.read_le(p, 4)? as u32)),
                DECIMAL4 | DECIMAL8 | DECIMAL16 => {
                    let n = match h >> 2 {
                        DECIMAL4 => 4,
                        DECIMAL8 => 8,
                        _ => 16,
                    };
                    let scale = self.byte(p)?;
                    let bytes = self.slice(p + 1, n)?;
                    let mut full = [if bytes[n - 1] & 0x80 != 0 { 0xFF } else { 0 }; 16];
                    full[..n].copy_from_slice(bytes);
                    let unscaled = i128::from_le_bytes(full);
                    if scale > 38 || digits(unscaled) > 38 {
                        return malformed();
                    }
                    Scalar::Decimal(unscaled, scale)
                }
                DATE => Scalar::Date(self.read_le(p, 4)? as i32),
                TIMESTAMP => Scalar::Timestamp(self.read_le(p, 8)? as i64),
                TIMESTAMP_NTZ => Scalar::TimestampNtz(self.read_le(p, 8)? as i64),
                BINARY => Scalar::Binary(self.slice(p + 4, self.read_le(p, 4)? as usize)?),
                LONG_STR => Scalar::String(text(self.slice(p + 4, self.read_le(p, 4)? as usize)?)?),
                _ => return exec_err!("[UNKNOWN_PRIMITIVE_TYPE_IN_VARIANT] a variant type natively unknown"),
            },
        })
    }

    /// The number of bytes this value takes, header included.
    pub(super) fn size(&self) -> Result<usize> {
        match self.basic_type()? {
            OBJECT => {
                let (size, id_size, offset_size, ids) = self.object_layout()?;
                let offsets = ids + size * id_size;
                let data = offsets + (size + 1) * offset_size;
                Ok(data + self.read_le(offsets + size * offset_size, offset_size)? as usize - self.pos)
            }
            ARRAY => {
                let (size, offset_size, offsets) = self.array_layout()?;
                let data = offsets + (size + 1) * offset_size;
                Ok(data + self.read_le(offsets + size * offset_size, offset_size)? as usize - self.pos)
            }
            _ => Ok(self.scalar_bytes()?.len()),
        }
    }

    /// This value's bytes with the variant's own metadata (what `variant_explode` answers: the
    /// dictionary is not rebuilt).
    pub(super) fn sliced(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        Ok((self.slice(self.pos, self.size()?)?.to_vec(), self.metadata.to_vec()))
    }

    /// This value as a variant of its own (its keys alone in its dictionary), as Spark rebuilds
    /// an extracted value.
    pub(super) fn rebuilt(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let mut b = Builder::default();
        b.append(self)?;
        b.finish().map_err(build_error)
    }
}

pub(super) fn text(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_or_else(|_| malformed(), Ok)
}

/// The key of dictionary id `id`.
pub(super) fn metadata_key(m: &[u8], id: usize) -> Result<&str> {
    let offset_size = usize::from(m[0] >> 6) + 1;
    let read = |at: usize| -> Result<usize> {
        let bytes = m.get(at..at + offset_size).map_or_else(malformed, Ok)?;
        Ok(bytes.iter().rev().fold(0usize, |acc, b| (acc << 8) | usize::from(*b)))
    };
    let size = read(1)?;
    if id >= size {
        return malformed();
    }
    let strings = 1 + offset_size * (size + 2);
    let (from, to) = (read(1 + offset_size * (id + 1))?, read(1 + offset_size * (id + 2))?);
    if from > to {
        return malformed();
    }
    m.get(strings + from..strings + to).map_or_else(malformed, text)
}

// ---------------------------------------------------------------------------------------------
// A variant as JSON text, as Spark writes one.

/// `v` as Spark's `Variant.toJson` writes it (timestamps in the session zone, UTC).
pub(crate) fn to_json(v: &Value, out: &mut String) -> Result<()> {
    match v.scalar()? {
        Scalar::Object => {
            out.push('{');
            for i in 0..v.object_size()? {
                if i > 0 {
                    out.push(',');
                }
                let (k, f) = v.field_at(i)?;
                crate::functions::json_csv::value_text::json_string(k, out);
                out.push(':');
                to_json(&f, out)?;
            }
            out.push('}');
        }
        Scalar::Array => {
            out.push('[');
            for i in 0..v.array_size()? {
                if i > 0 {
                    out.push(',');
                }
                to_json(&v.element_at(i)?, out)?;
            }
            out.push(']');
        }
        Scalar::Null => out.push_str("null"),
        Scalar::Boolean(b) => out.push_str(if b { "true" } else { "false" }),
        Scalar::Long(l) => out.push_str(&l.to_string()),
        Scalar::Double(d) => out.push_str(&java_double(d)),
        Scalar::Float(f) => out.push_str(&java_float(f)),
        Scalar::Decimal(u, s) => out.push_str(&plain_string(u, s)),
        Scalar::String(s) => crate::functions::json_csv::value_text::json_string(s, out),
        Scalar::Date(d) => {
            out.push('"');
            out.push_str(&date_text(d));
            out.push('"');
        }
        Scalar::Timestamp(t) => {
            out.push('"');
            out.push_str(&timestamp_text(t));
            out.push_str("+00:00\"");
        }
        Scalar::TimestampNtz(t) => {
            out.push('"');
            out.push_str(&timestamp_text(t));
            out.push('"');
        }
        Scalar::Binary(b) => {
            use base64::Engine;
            out.push('"');
            out.push_str(&base64::engine::general_purpose::STANDARD.encode(b));
            out.push('"');
        }
    }
    Ok(())
}

pub(super) fn date_text(days: i32) -> String {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    epoch.checked_add_signed(chrono::TimeDelta::days(i64::from(days))).map_or_else(String::new, |d| d.to_string())
}

/// `yyyy-MM-dd HH:mm:ss[.fraction]`, the fraction without trailing zeros.
pub(super) fn timestamp_text(micros: i64) -> String {
    let Some(t) = chrono::DateTime::from_timestamp_micros(micros) else { return String::new() };
    let mut s = t.naive_utc().format("%Y-%m-%d %H:%M:%S").to_string();
    let fraction = micros.rem_euclid(1_000_000);
    if fraction != 0 {
        s.push_str(format!(".{fraction:06}").trim_end_matches('0'));
    }
    s
}

/// A decimal as `BigDecimal.stripTrailingZeros().toPlainString()` writes it.
pub(super) fn plain_string(unscaled: i128, scale: u8) -> String {
    let (u, s) = stripped(unscaled, scale);
    let digits = u.unsigned_abs().to_string();
    let sign = if u < 0 { "-" } else { "" };
    if s <= 0 {
        return format!("{sign}{digits}{}", "0".repeat(s.unsigned_abs() as usize));
    }
    let s = s as usize;
    let padded = if digits.len() <= s { format!("{}{digits}", "0".repeat(s + 1 - digits.len())) } else { digits };
    let (whole, fraction) = padded.split_at(padded.len() - s);
    format!("{sign}{whole}.{fraction}")
}

/// `unscaled × 10^-scale` without trailing zeros (zero is 0 with scale 0), as
/// `BigDecimal.stripTrailingZeros` gives; the scale may turn negative.
pub(super) fn stripped(mut unscaled: i128, scale: u8) -> (i128, i32) {
    if unscaled == 0 {
        return (0, 0);
    }
    let mut s = i32::from(scale);
    while unscaled % 10 == 0 {
        unscaled /= 10;
        s -= 1;
    }
    (unscaled, s)
}

/// A DOUBLE as Java's `Double.toString` writes it (`1000.0`, `1.0E30`, `1.0E-7`).
pub(crate) fn java_double(d: f64) -> String {
    java_floating(d.is_nan(), d.is_infinite(), d.is_sign_negative(), d == 0.0, format!("{:e}", d.abs()))
}

/// A FLOAT as Java's `Float.toString` writes it.
pub(crate) fn java_float(f: f32) -> String {
    java_floating(f.is_nan(), f.is_infinite(), f.is_sign_negative(), f == 0.0, format!("{:e}", f.abs()))
}

/// Java's form of a number from its shortest digits (`sci`, Rust's `{:e}` of its magnitude):
/// plain with at least one fraction digit from 10^-3 up to 10^7, else `d.dddE±n`.
pub(super) fn java_floating(nan: bool, infinite: bool, negative: bool, zero: bool, sci: String) -> String {
    if nan {
        return "NaN".into();
    }
    let sign = if negative { "-" } else { "" };
    if infinite {
        return format!("{sign}Infinity");
    }
    if zero {
        return format!("{sign}0.0");
    }
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-3..7).contains(&exponent) {
        if exponent >= 0 {
            let e = exponent as usize;
            let whole =
                if digits.len() > e { digits[..=e].to_string() } else { format!("{digits:0<width$}", width = e + 1) };
            let fraction = if digits.len() > e + 1 { &digits[e + 1..] } else { "0" };
            format!("{sign}{whole}.{fraction}")
        } else {
            format!("{sign}0.{}{digits}", "0".repeat((-exponent - 1) as usize))
        }
    } else {
        let fraction = if digits.len() > 1 { &digits[1..] } else { "0" };
        format!("{sign}{}.{fraction}E{exponent}", &digits[..1])
    }
}
