//! The character sets Spark's `encode` and `decode` take, read and written as Java's charsets
//! read and write them: a character a charset cannot hold, or bytes that are not the charset's,
//! give `None` (the functions fail on it, as Spark 4's do).

use datafusion::common::{exec_err, Result};

/// A charset Spark knows, by the name it is given in (any case).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Charset {
    Ascii,
    Latin1,
    Utf8,
    Utf16,
    Utf16Be,
    Utf16Le,
    Utf32,
}

impl Charset {
    pub(super) fn named(name: &str, function: &str) -> Result<Charset> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "us-ascii" => Charset::Ascii,
            "iso-8859-1" => Charset::Latin1,
            "utf-8" => Charset::Utf8,
            "utf-16" => Charset::Utf16,
            "utf-16be" => Charset::Utf16Be,
            "utf-16le" => Charset::Utf16Le,
            "utf-32" => Charset::Utf32,
            _ => {
                return exec_err!(
                    "[INVALID_PARAMETER_VALUE.CHARSET] The value of parameter(s) `charset` in `{function}` is invalid: \
                     expects one of the iso-8859-1, us-ascii, utf-16, utf-16be, utf-16le, utf-32, utf-8, but got {name}"
                )
            }
        })
    }

    pub(super) fn encode(self, s: &str) -> Option<Vec<u8>> {
        let units = |be: bool| s.encode_utf16().flat_map(move |u| if be { u.to_be_bytes() } else { u.to_le_bytes() });
        Some(match self {
            Charset::Ascii => s.chars().map(|c| u8::try_from(c).ok().filter(u8::is_ascii)).collect::<Option<_>>()?,
            Charset::Latin1 => s.chars().map(|c| u8::try_from(c).ok()).collect::<Option<_>>()?,
            Charset::Utf8 => s.as_bytes().to_vec(),
            // Java writes the big-endian byte-order mark first.
            Charset::Utf16 => [0xFE, 0xFF].into_iter().chain(units(true)).collect(),
            Charset::Utf16Be => units(true).collect(),
            Charset::Utf16Le => units(false).collect(),
            Charset::Utf32 => s.chars().flat_map(|c| (c as u32).to_be_bytes()).collect(),
        })
    }

    pub(super) fn decode(self, b: &[u8]) -> Option<String> {
        let utf16 = |b: &[u8], be: bool| -> Option<String> {
            if !b.len().is_multiple_of(2) {
                return None;
            }
            let units =
                b.chunks(2)
                    .map(|p| if be { u16::from_be_bytes([p[0], p[1]]) } else { u16::from_le_bytes([p[0], p[1]]) });
            char::decode_utf16(units).collect::<std::result::Result<String, _>>().ok()
        };
        match self {
            Charset::Ascii => b.iter().map(|&c| c.is_ascii().then_some(c as char)).collect(),
            Charset::Latin1 => Some(b.iter().map(|&c| c as char).collect()),
            Charset::Utf8 => std::str::from_utf8(b).ok().map(str::to_string),
            // A byte-order mark says the order (and is not text); big-endian without one.
            Charset::Utf16 => match b {
                [0xFE, 0xFF, rest @ ..] => utf16(rest, true),
                [0xFF, 0xFE, rest @ ..] => utf16(rest, false),
                _ => utf16(b, true),
            },
            Charset::Utf16Be => utf16(b, true),
            Charset::Utf16Le => utf16(b, false),
            Charset::Utf32 => {
                let (b, be) = match b {
                    [0, 0, 0xFE, 0xFF, rest @ ..] => (rest, true),
                    [0xFF, 0xFE, 0, 0, rest @ ..] => (rest, false),
                    _ => (b, true),
                };
                if !b.len().is_multiple_of(4) {
                    return None;
                }
                b.chunks(4)
                    .map(|p| {
                        let p = [p[0], p[1], p[2], p[3]];
                        char::from_u32(if be { u32::from_be_bytes(p) } else { u32::from_le_bytes(p) })
                    })
                    .collect()
            }
        }
    }

    pub(super) fn spark_name(self) -> &'static str {
        match self {
            Charset::Ascii => "US-ASCII",
            Charset::Latin1 => "ISO-8859-1",
            Charset::Utf8 => "UTF-8",
            Charset::Utf16 => "UTF-16",
            Charset::Utf16Be => "UTF-16BE",
            Charset::Utf16Le => "UTF-16LE",
            Charset::Utf32 => "UTF-32",
        }
    }
}
