//! Writing a variant: the spec's encoding, `Builder` (the bytes Spark's builder writes), and
//! JSON text parsed into a variant.

use std::collections::HashMap;

use datafusion::common::Result;

use super::value::Value;

pub(super) const SIZE_LIMIT: usize = 16 * 1024 * 1024;

// Basic types (the low two bits of a value's header).
pub(super) const PRIMITIVE: u8 = 0;
pub(super) const SHORT_STR: u8 = 1;
pub(super) const OBJECT: u8 = 2;
pub(super) const ARRAY: u8 = 3;

// Primitive type ids (the header's upper six bits when the basic type is PRIMITIVE).
pub(super) const NULL: u8 = 0;
pub(super) const TRUE: u8 = 1;
pub(super) const FALSE: u8 = 2;
pub(super) const INT1: u8 = 3;
pub(super) const INT2: u8 = 4;
pub(super) const INT4: u8 = 5;
pub(super) const INT8: u8 = 6;
pub(super) const DOUBLE: u8 = 7;
pub(super) const DECIMAL4: u8 = 8;
pub(super) const DECIMAL8: u8 = 9;
pub(super) const DECIMAL16: u8 = 10;
pub(super) const DATE: u8 = 11;
pub(super) const TIMESTAMP: u8 = 12;
pub(super) const TIMESTAMP_NTZ: u8 = 13;
pub(super) const FLOAT: u8 = 14;
pub(super) const BINARY: u8 = 15;
pub(super) const LONG_STR: u8 = 16;

/// The longest string stored inline in its header.
pub(super) const MAX_SHORT_STR: usize = 63;

pub(super) fn primitive_header(t: u8) -> u8 {
    (t << 2) | PRIMITIVE
}

/// The fewest bytes (1 to 3) an unsigned offset or id of at most `v` takes.
pub(super) fn int_size(v: usize) -> usize {
    match v {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        _ => 3,
    }
}

pub(super) fn write_le(buf: &mut [u8], at: usize, v: u64, n: usize) {
    for i in 0..n {
        buf[at + i] = (v >> (8 * i)) as u8;
    }
}

/// Why bytes could not be built into a variant.
#[derive(Debug)]
pub(crate) enum BuildError {
    DuplicateKey(String),
    TooLarge,
    Json(String),
}

/// Builds one variant: its value bytes and its key dictionary.
#[derive(Default)]
pub(crate) struct Builder {
    buf: Vec<u8>,
    keys: Vec<String>,
    ids: HashMap<String, usize>,
}

/// A field written into an object being built: its key, the key's id and where its value
/// starts (from the object's start).
pub(super) struct FieldEntry {
    pub(super) key: String,
    pub(super) id: usize,
    pub(super) offset: usize,
}

impl Builder {
    pub(super) fn pos(&self) -> usize {
        self.buf.len()
    }

    pub(super) fn null(&mut self) {
        self.buf.push(primitive_header(NULL));
    }

    pub(super) fn boolean(&mut self, b: bool) {
        self.buf.push(primitive_header(if b { TRUE } else { FALSE }));
    }

    pub(super) fn long(&mut self, l: i64) {
        let (t, n) = if l == l as i8 as i64 {
            (INT1, 1)
        } else if l == l as i16 as i64 {
            (INT2, 2)
        } else if l == l as i32 as i64 {
            (INT4, 4)
        } else {
            (INT8, 8)
        };
        self.buf.push(primitive_header(t));
        self.buf.extend_from_slice(&l.to_le_bytes()[..n]);
    }

    pub(super) fn double(&mut self, d: f64) {
        self.buf.push(primitive_header(DOUBLE));
        self.buf.extend_from_slice(&d.to_bits().to_le_bytes());
    }

    pub(super) fn float(&mut self, f: f32) {
        self.buf.push(primitive_header(FLOAT));
        self.buf.extend_from_slice(&f.to_bits().to_le_bytes());
    }

    /// A decimal `unscaled × 10^-scale` (scale and digits at most 38), in the narrowest of the
    /// three decimal widths its digits and scale fit.
    pub(super) fn decimal(&mut self, unscaled: i128, scale: u8) {
        let precision = digits(unscaled);
        let (t, n) = if scale <= 9 && precision <= 9 {
            (DECIMAL4, 4)
        } else if scale <= 18 && precision <= 18 {
            (DECIMAL8, 8)
        } else {
            (DECIMAL16, 16)
        };
        self.buf.push(primitive_header(t));
        self.buf.push(scale);
        self.buf.extend_from_slice(&unscaled.to_le_bytes()[..n]);
    }

    pub(super) fn string(&mut self, s: &str) {
        if s.len() > MAX_SHORT_STR {
            self.buf.push(primitive_header(LONG_STR));
            self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        } else {
            self.buf.push(((s.len() as u8) << 2) | SHORT_STR);
        }
        self.buf.extend_from_slice(s.as_bytes());
    }

    pub(super) fn fixed(&mut self, t: u8, bytes: &[u8]) {
        self.buf.push(primitive_header(t));
        self.buf.extend_from_slice(bytes);
    }

    pub(super) fn binary(&mut self, b: &[u8]) {
        self.buf.push(primitive_header(BINARY));
        self.buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(b);
    }

    pub(super) fn add_key(&mut self, key: &str) -> usize {
        if let Some(id) = self.ids.get(key) {
            return *id;
        }
        let id = self.keys.len();
        self.ids.insert(key.to_string(), id);
        self.keys.push(key.to_string());
        id
    }

    /// Puts the object header in front of the fields written since `start`, the fields listed
    /// in key order (Java's `String.compareTo`: UTF-16 code units).
    pub(super) fn finish_object(&mut self, start: usize, mut fields: Vec<FieldEntry>) -> Result<(), BuildError> {
        let data_size = self.pos() - start;
        fields.sort_by(|a, b| a.key.encode_utf16().cmp(b.key.encode_utf16()));
        if let Some(w) = fields.windows(2).find(|w| w[0].key == w[1].key) {
            return Err(BuildError::DuplicateKey(w[0].key.clone()));
        }
        let size = fields.len();
        let max_id = fields.iter().map(|f| f.id).max().unwrap_or(0);
        let large = size > 0xFF;
        let size_bytes = if large { 4 } else { 1 };
        let (id_size, offset_size) = (int_size(max_id), int_size(data_size));
        let header_size = 1 + size_bytes + size * id_size + (size + 1) * offset_size;
        let mut header = vec![0u8; header_size];
        header[0] = (u8::from(large) << 6) | (((id_size - 1) as u8) << 4) | (((offset_size - 1) as u8) << 2) | OBJECT;
        write_le(&mut header, 1, size as u64, size_bytes);
        let ids = 1 + size_bytes;
        let offsets = ids + size * id_size;
        for (i, f) in fields.iter().enumerate() {
            write_le(&mut header, ids + i * id_size, f.id as u64, id_size);
            write_le(&mut header, offsets + i * offset_size, f.offset as u64, offset_size);
        }
        write_le(&mut header, offsets + size * offset_size, data_size as u64, offset_size);
        self.buf.splice(start..start, header);
        self.check_size()
    }

    /// Puts the array header in front of the elements written since `start`.
    pub(super) fn finish_array(&mut self, start: usize, offsets: &[usize]) -> Result<(), BuildError> {
        let data_size = self.pos() - start;
        let size = offsets.len();
        let large = size > 0xFF;
        let size_bytes = if large { 4 } else { 1 };
        let offset_size = int_size(data_size);
        let header_size = 1 + size_bytes + (size + 1) * offset_size;
        let mut header = vec![0u8; header_size];
        header[0] = (u8::from(large) << 4) | (((offset_size - 1) as u8) << 2) | ARRAY;
        write_le(&mut header, 1, size as u64, size_bytes);
        let at = 1 + size_bytes;
        for (i, o) in offsets.iter().chain(std::iter::once(&data_size)).enumerate() {
            write_le(&mut header, at + i * offset_size, *o as u64, offset_size);
        }
        self.buf.splice(start..start, header);
        self.check_size()
    }

    pub(super) fn check_size(&self) -> Result<(), BuildError> {
        if self.buf.len() > SIZE_LIMIT {
            return Err(BuildError::TooLarge);
        }
        Ok(())
    }

    /// Copies `v` (of another variant) into this one, its keys entered in this dictionary.
    pub(super) fn append(&mut self, v: &Value) -> Result<()> {
        match v.basic_type()? {
            OBJECT => {
                let start = self.pos();
                let mut fields = Vec::new();
                for i in 0..v.object_size()? {
                    let (key, field) = v.field_at(i)?;
                    let id = self.add_key(key);
                    fields.push(FieldEntry { key: key.to_string(), id, offset: self.pos() - start });
                    self.append(&field)?;
                }
                self.finish_object(start, fields).map_err(build_error)
            }
            ARRAY => {
                let start = self.pos();
                let mut offsets = Vec::new();
                for i in 0..v.array_size()? {
                    offsets.push(self.pos() - start);
                    self.append(&v.element_at(i)?)?;
                }
                self.finish_array(start, &offsets).map_err(build_error)
            }
            _ => {
                let bytes = v.scalar_bytes()?;
                self.buf.extend_from_slice(bytes);
                Ok(())
            }
        }
    }

    /// The variant: its value bytes and its metadata (the dictionary, keys in id order).
    pub(crate) fn finish(self) -> Result<(Vec<u8>, Vec<u8>), BuildError> {
        let strings: usize = self.keys.iter().map(String::len).sum();
        let offset_size = int_size(strings.max(self.keys.len()));
        let mut metadata = vec![0u8; 1 + offset_size * (self.keys.len() + 2) + strings];
        metadata[0] = 1 | (((offset_size - 1) as u8) << 6);
        write_le(&mut metadata, 1, self.keys.len() as u64, offset_size);
        let (offsets, mut at) = (1 + offset_size, 1 + offset_size * (self.keys.len() + 2));
        let mut offset = 0;
        for (i, k) in self.keys.iter().enumerate() {
            write_le(&mut metadata, offsets + i * offset_size, offset as u64, offset_size);
            metadata[at..at + k.len()].copy_from_slice(k.as_bytes());
            at += k.len();
            offset += k.len();
        }
        write_le(&mut metadata, offsets + self.keys.len() * offset_size, offset as u64, offset_size);
        if metadata.len() > SIZE_LIMIT || self.buf.len() > SIZE_LIMIT {
            return Err(BuildError::TooLarge);
        }
        Ok((self.buf, metadata))
    }
}

pub(super) fn build_error(e: BuildError) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(match e {
        BuildError::DuplicateKey(k) => {
            format!("[VARIANT_DUPLICATE_KEY] the variant has the key `{k}` twice in one object")
        }
        BuildError::TooLarge => "[VARIANT_SIZE_LIMIT] the variant is larger than 16 MiB".to_string(),
        BuildError::Json(why) => format!("[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] {why}"),
    })
}

/// The number of decimal digits of `v` (1 for zero), as `BigDecimal.precision` counts them.
pub(super) fn digits(v: i128) -> u8 {
    let mut n = 1;
    let mut v = v.unsigned_abs() / 10;
    while v > 0 {
        n += 1;
        v /= 10;
    }
    n
}

/// The deepest nesting read (Jackson's default limit, which Spark's parser has).
pub(super) const MAX_DEPTH: usize = 1000;

/// `text` as Spark's `parse_json` builds it: the first JSON value in it (what follows is not
/// read, as on Spark), its numbers by Spark's rules.
pub(crate) fn parse_json(text: &str) -> Result<(Vec<u8>, Vec<u8>), BuildError> {
    let mut p = JsonReader { s: text.as_bytes(), at: 0 };
    let mut b = Builder::default();
    p.skip_space();
    p.value(&mut b, 0)?;
    // A number must end where a token can: `12x` is malformed, `1 2` reads as 1.
    b.finish()
}

pub(super) struct JsonReader<'a> {
    s: &'a [u8],
    at: usize,
}

impl JsonReader<'_> {
    pub(super) fn fail<T>(&self, what: &str) -> Result<T, BuildError> {
        Err(BuildError::Json(format!("{what} at character {}", self.at + 1)))
    }

    pub(super) fn skip_space(&mut self) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    pub(super) fn value(&mut self, b: &mut Builder, depth: usize) -> Result<(), BuildError> {
        if depth > MAX_DEPTH {
            return self.fail("nesting deeper than 1000");
        }
        match self.s.get(self.at) {
            Some(b'{') => {
                self.at += 1;
                let start = b.pos();
                let mut fields = Vec::new();
                self.skip_space();
                if self.s.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return b.finish_object(start, fields);
                }
                loop {
                    self.skip_space();
                    if self.s.get(self.at) != Some(&b'"') {
                        return self.fail("expected a key");
                    }
                    let key = self.string()?;
                    self.skip_space();
                    if self.s.get(self.at) != Some(&b':') {
                        return self.fail("expected ':'");
                    }
                    self.at += 1;
                    self.skip_space();
                    let id = b.add_key(&key);
                    fields.push(FieldEntry { key, id, offset: b.pos() - start });
                    self.value(b, depth + 1)?;
                    self.skip_space();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return b.finish_object(start, fields);
                        }
                        _ => return self.fail("expected ',' or '}'"),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let start = b.pos();
                let mut offsets = Vec::new();
                self.skip_space();
                if self.s.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return b.finish_array(start, &offsets);
                }
                loop {
                    self.skip_space();
                    offsets.push(b.pos() - start);
                    self.value(b, depth + 1)?;
                    self.skip_space();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return b.finish_array(start, &offsets);
                        }
                        _ => return self.fail("expected ',' or ']'"),
                    }
                }
            }
            Some(b'"') => {
                let s = self.string()?;
                b.string(&s);
                Ok(())
            }
            Some(b't') => self.word("true", |b| b.boolean(true), b),
            Some(b'f') => self.word("false", |b| b.boolean(false), b),
            Some(b'n') => self.word("null", Builder::null, b),
            Some(b'-' | b'0'..=b'9') => self.number(b),
            _ => self.fail("expected a value"),
        }
    }

    pub(super) fn word(&mut self, w: &str, put: impl Fn(&mut Builder), b: &mut Builder) -> Result<(), BuildError> {
        if !self.s[self.at..].starts_with(w.as_bytes()) {
            return self.fail("unknown token");
        }
        self.at += w.len();
        if self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_') {
            return self.fail("unknown token");
        }
        put(b);
        Ok(())
    }

    /// A JSON number, by Jackson's grammar (no leading zeros, no `+`, digits after a point and
    /// in an exponent), stored by Spark's rules.
    pub(super) fn number(&mut self, b: &mut Builder) -> Result<(), BuildError> {
        let start = self.at;
        let digits_from = |r: &mut Self| {
            let from = r.at;
            while r.s.get(r.at).is_some_and(u8::is_ascii_digit) {
                r.at += 1;
            }
            r.at - from
        };
        if self.s.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let int_start = self.at;
        let n = digits_from(self);
        if n == 0 || (n > 1 && self.s[int_start] == b'0') {
            return self.fail("malformed number");
        }
        let mut integral = true;
        if self.s.get(self.at) == Some(&b'.') {
            self.at += 1;
            integral = false;
            if digits_from(self) == 0 {
                return self.fail("malformed number");
            }
        }
        let mut exponent = false;
        if matches!(self.s.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            integral = false;
            exponent = true;
            if matches!(self.s.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits_from(self) == 0 {
                return self.fail("malformed number");
            }
        }
        if self.s.get(self.at).is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.') {
            return self.fail("malformed number");
        }
        let text = std::str::from_utf8(&self.s[start..self.at]).unwrap_or_default();
        if integral {
            if let Ok(l) = text.parse::<i64>() {
                b.long(l);
                return Ok(());
            }
        }
        if !exponent {
            if let Some((unscaled, scale)) = plain_decimal(text) {
                b.decimal(unscaled, scale);
                return Ok(());
            }
        }
        match text.parse::<f64>() {
            Ok(d) => {
                b.double(d);
                Ok(())
            }
            Err(_) => self.fail("malformed number"),
        }
    }

    /// A JSON string (the reader at its opening quote), its escapes undone.
    pub(super) fn string(&mut self) -> Result<String, BuildError> {
        self.at += 1;
        let mut out: Vec<u8> = Vec::new();
        loop {
            match self.s.get(self.at) {
                None => return self.fail("unterminated string"),
                Some(b'"') => {
                    self.at += 1;
                    return String::from_utf8(out).or_else(|_| self.fail("invalid UTF-8"));
                }
                Some(b'\\') => {
                    self.at += 1;
                    let c = match self.s.get(self.at) {
                        Some(b'"') => '"',
                        Some(b'\\') => '\\',
                        Some(b'/') => '/',
                        Some(b'b') => '\u{8}',
                        Some(b'f') => '\u{c}',
                        Some(b'n') => '\n',
                        Some(b'r') => '\r',
                        Some(b't') => '\t',
                        Some(b'u') => {
                            let unit = self.hex4()?;
                            let code = if (0xD800..0xDC00).contains(&unit) {
                                // A surrogate pair: the low half follows as `\uXXXX`.
                                if self.s.get(self.at + 1..self.at + 3) != Some(b"\\u") {
                                    return self.fail("unpaired surrogate");
                                }
                                self.at += 2;
                                let low = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&low) {
                                    return self.fail("unpaired surrogate");
                                }
                                0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                unit
                            };
                            match char::from_u32(code) {
                                Some(c) => c,
                                None => return self.fail("unpaired surrogate"),
                            }
                        }
                        _ => return self.fail("bad escape"),
                    };
                    let mut tmp = [0u8; 4];
                    out.extend_from_slice(c.encode_utf8(&mut tmp).as_bytes());
                    self.at += 1;
                }
                Some(c) if *c < 0x20 => return self.fail("unescaped control character"),
                Some(c) => {
                    out.push(*c);
                    self.at += 1;
                }
            }
        }
    }

    /// The four hex digits after `\u` (the reader at the `u`), leaving the reader at the last.
    pub(super) fn hex4(&mut self) -> Result<u32, BuildError> {
        let hex = self.s.get(self.at + 1..self.at + 5).and_then(|h| std::str::from_utf8(h).ok());
        match hex.and_then(|h| u32::from_str_radix(h, 16).ok()) {
            Some(v) => {
                self.at += 4;
                Ok(v)
            }
            None => self.fail("bad \\u escape"),
        }
    }
}

/// A number written with digits and at most one point, as `(unscaled, scale)` when it fits a
/// DECIMAL (at most 38 digits and a scale of at most 38), as `new BigDecimal(text)` reads it.
pub(super) fn plain_decimal(text: &str) -> Option<(i128, u8)> {
    let (negative, body) = match text.strip_prefix('-') {
        Some(b) => (true, b),
        None => (false, text),
    };
    let (whole, fraction) = body.split_once('.').unwrap_or((body, ""));
    let all: String = format!("{whole}{fraction}");
    let significant = all.trim_start_matches('0');
    if fraction.len() > 38 || significant.len() > 38 {
        return None;
    }
    let unscaled: i128 = if significant.is_empty() { 0 } else { significant.parse().ok()? };
    Some((if negative { -unscaled } else { unscaled }, fraction.len() as u8))
}
