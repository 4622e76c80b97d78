//! Numbers read into a DECIMAL(p, s) as Spark reads them: through Java's `BigDecimal`.
//!
//! Spark's cast of text to a DECIMAL is `new BigDecimal(text.trim)` followed by a change of
//! precision that rounds half up and gives NULL (or fails, in ANSI mode) when the digits left of
//! the point do not fit. A DOUBLE or FLOAT goes the same way through `Double.toString`, so
//! `CAST(1.005D AS DECIMAL(3,2))` is 1.01: the double's shortest decimal form is rounded, not
//! its binary value (Arrow's cast multiplies the binary value, 100.49999…, and answers 1.00).
//!
//! `BigDecimal` reads an optional sign, digits with at most one point, and an optional exponent
//! (`1e3`, `1.5E-2`); its digits are any script's decimal digits (`'１２'` is 12). Digits of a
//! script not listed here are refused (`Digits::Unknown`), never read as something else.

pub(crate) mod sign;

/// Spark's DECIMAL has no function of its own: this category is how casts and arithmetic read
/// numbers into one (Java's `BigDecimal`) and round them.
pub(crate) const FUNCTIONS: &[crate::declare::Function] = &[];

/// A number read as `BigDecimal` reads it: `digits × 10^-scale`, without leading zeros.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct BigDecimal {
    negative: bool,
    digits: Vec<u8>,
    scale: i64,
}

/// What a text gives.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Read {
    Number(BigDecimal),
    /// Not a number (Java's `NumberFormatException`).
    Invalid,
    /// A digit of a script this reader does not know.
    Unknown(char),
}

/// The first code point of each script's ten decimal digits (Unicode's `Nd` blocks in the Basic
/// Multilingual Plane that Java's `Character.digit` reads).
const ZEROS: [u32; 37] = [
    0x30, 0x660, 0x6F0, 0x7C0, 0x966, 0x9E6, 0xA66, 0xAE6, 0xB66, 0xBE6, 0xC66, 0xCE6, 0xD66, 0xDE6, 0xE50, 0xED0,
    0xF20, 0x1040, 0x1090, 0x17E0, 0x1810, 0x1946, 0x19D0, 0x1A80, 0x1A90, 0x1B50, 0x1BB0, 0x1C40, 0x1C50, 0xA620,
    0xA8D0, 0xA900, 0xA9D0, 0xA9F0, 0xAA50, 0xABF0, 0xFF10,
];

/// A decimal digit's value, `Err` for a numeric character of an unknown script.
fn digit(c: char) -> Result<Option<u8>, char> {
    if c.is_ascii_digit() {
        return Ok(Some(c as u8 - b'0'));
    }
    let code = u32::from(c);
    if let Some(zero) = ZEROS.iter().find(|z| (**z..**z + 10).contains(&code)) {
        return Ok(Some((code - zero) as u8));
    }
    if c.is_numeric() {
        return Err(c);
    }
    Ok(None)
}

/// `text` as `new BigDecimal(text.trim())` reads it (`trim` drops characters up to U+0020).
pub(crate) fn read(text: &str) -> Read {
    let s = text.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(i) => (&body[..i], Some(&body[i + 1..])),
        None => (body, None),
    };
    let mut digits = Vec::with_capacity(mantissa.len());
    let (mut fraction, mut point) = (0i64, false);
    for c in mantissa.chars() {
        if c == '.' && !point {
            point = true;
            continue;
        }
        match digit(c) {
            Ok(Some(d)) => digits.push(d),
            Ok(None) => return Read::Invalid,
            Err(c) => return Read::Unknown(c),
        }
        fraction += i64::from(point);
    }
    if digits.is_empty() {
        return Read::Invalid;
    }
    let exponent = match exponent {
        None => 0,
        Some(e) => {
            let (sign, e) = match e.as_bytes().first() {
                Some(b'-') => (-1, &e[1..]),
                Some(b'+') => (1, &e[1..]),
                _ => (1, e),
            };
            let mut value: i64 = 0;
            for c in e.chars() {
                match digit(c) {
                    Ok(Some(d)) => match value.checked_mul(10).and_then(|v| v.checked_add(i64::from(d))) {
                        // Java's exponent is an int.
                        Some(v) if v <= i64::from(i32::MAX) => value = v,
                        _ => return Read::Invalid,
                    },
                    Ok(None) => return Read::Invalid,
                    Err(c) => return Read::Unknown(c),
                }
            }
            if e.is_empty() {
                return Read::Invalid;
            }
            sign * value
        }
    };
    let first = digits.iter().position(|d| *d != 0).unwrap_or(digits.len());
    digits.drain(..first);
    Read::Number(BigDecimal { negative, digits, scale: fraction - exponent })
}

/// A finite DOUBLE as Spark casts it to a DECIMAL: its shortest decimal form (`Double.toString`).
pub(crate) fn of_double(v: f64) -> Option<BigDecimal> {
    if !v.is_finite() {
        return None;
    }
    match read(&format!("{v:e}")) {
        Read::Number(n) => Some(n),
        _ => None,
    }
}

impl BigDecimal {
    /// The unscaled value of this number in DECIMAL(precision, scale), rounded half up; `None`
    /// if it does not fit.
    pub(crate) fn fit(&self, precision: u8, scale: i8) -> Option<i128> {
        if self.digits.is_empty() {
            return Some(0);
        }
        let scale = i64::from(scale);
        let len = self.digits.len() as i64;
        let (kept, round_up): (&[u8], bool) = if self.scale <= scale {
            // Zeros appended: the digits must fit with them.
            if len + (scale - self.scale) > i64::from(precision) {
                return None;
            }
            (&self.digits, false)
        } else {
            let dropped = self.scale - scale;
            if dropped > len {
                (&[], false)
            } else {
                let cut = (len - dropped) as usize;
                (&self.digits[..cut], self.digits[cut] >= 5)
            }
        };
        if kept.len() > 38 {
            return None;
        }
        let mut unscaled = kept.iter().fold(0i128, |v, d| v * 10 + i128::from(*d));
        if self.scale < scale {
            unscaled *= 10i128.pow((scale - self.scale) as u32);
        }
        unscaled += i128::from(round_up);
        if unscaled >= 10i128.pow(u32::from(precision)) {
            return None;
        }
        Some(if self.negative { -unscaled } else { unscaled })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fit(text: &str, precision: u8, scale: i8) -> Option<i128> {
        match read(text) {
            Read::Number(n) => n.fit(precision, scale),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn text_is_read_as_javas_big_decimal_and_rounded_half_up() {
        // Each value as Spark 4.1.4 casts it to DECIMAL(3,2) (or as noted).
        assert_eq!(fit("1.255", 3, 2), Some(126));
        assert_eq!(fit(" 1.5 ", 3, 2), Some(150));
        assert_eq!(fit("1e0", 3, 2), Some(100));
        assert_eq!(fit("-1.245", 3, 2), Some(-125));
        assert_eq!(fit(".5", 3, 2), Some(50));
        assert_eq!(fit("+2.1", 3, 2), Some(210));
        assert_eq!(fit("1.", 3, 2), Some(100));
        assert_eq!(fit("9.995", 3, 2), None);
        assert_eq!(fit("-0.005", 3, 2), Some(-1));
        assert_eq!(fit("1E+2", 10, 2), Some(10000));
        assert_eq!(fit("1.5e-1", 10, 2), Some(15));
        assert_eq!(fit("12345678901234567890", 10, 2), None);
        assert_eq!(fit("１２", 5, 2), Some(1200));
        assert_eq!(fit("0.0000", 1, 0), Some(0));
        assert_eq!(fit("1e400", 38, 0), None);
        assert_eq!(fit("1e-400", 38, 2), Some(0));
        for bad in ["1_000", "0x10", "1e", "e1", "-", ".", "", "1,000.00", "$5", "1.2.3", "NaN", "Infinity"] {
            assert_eq!(read(bad), Read::Invalid, "{bad}");
        }
        assert_eq!(read("\u{2460}"), Read::Unknown('\u{2460}'));
    }

    #[test]
    fn doubles_are_read_through_their_shortest_form() {
        let fit = |v: f64, p, s| of_double(v).and_then(|n| n.fit(p, s));
        assert_eq!(fit(1.005, 3, 2), Some(101));
        assert_eq!(fit(2.675, 3, 2), Some(268));
        assert_eq!(fit(1e30, 38, 0), Some(10i128.pow(30)));
        assert_eq!(fit(1.23456785e-3, 10, 8), Some(123457));
        assert_eq!(fit(f64::from(0.1f32), 10, 9), Some(100000001));
        assert_eq!(fit(f64::NAN, 10, 2), None);
    }
}
