//! Spark's VARIANT natively: `parse_json`, `try_parse_json`, `is_variant_null`, `variant_get`,
//! `try_variant_get`, `schema_of_variant`, `schema_of_variant_agg`, `to_variant_object`, and
//! a VARIANT cast to a type or written as JSON (`CAST(v AS STRING)`, `to_json(v)`).
//!
//! A VARIANT is Arrow's `Struct<value: Binary, metadata: Binary>`, the shape Spark sends one in
//! over Arrow, holding the binary encoding Spark and Parquet share (the variant spec):
//! `metadata` is a dictionary of object keys, `value` a self-describing value whose objects name
//! their keys by dictionary id, listed in key order. `Builder` writes the bytes Spark's builder
//! writes: keys enter the dictionary in the order met, an integer takes the smallest of 1, 2, 4
//! or 8 bytes, a JSON number with a point and no exponent is a DECIMAL when its digits fit 38
//! (4, 8 or 16 bytes by its precision), any other number a DOUBLE, and a key twice in one
//! object is malformed JSON. So `parse_json` answers Spark's very bytes.
//!
//! Reading goes through `Value`, a bounds-checked view of one value: bytes that do not follow
//! the spec are Spark's `MALFORMED_VARIANT`, never a panic or a guess.
//!
//! Out of a variant (`variant_get(v, path, type)`, `CAST(v AS type)`), a value converts by
//! Spark's rules for variants, read off Spark 4.1.4: numbers narrow with a range check (a
//! fraction cut off), text reads as Spark's casts read it, anything becomes text as its JSON;
//! what does not convert is `[INVALID_VARIANT_CAST]` (`variant_get`, `CAST`) or NULL
//! (`try_variant_get`, `try_cast`). A VARIANT JSON `null` is SQL NULL for every type but
//! VARIANT. Casts to ARRAY, STRUCT and MAP run on the Spark backend.
//!
//! A VARIANT column is not stored in Delta natively (Spark writes Delta's `variantType`
//! feature): `table::shape` refuses a dataset with one before its run.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryBuilder, StructArray};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Fields, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use serde::{Deserialize, Serialize};

use crate::functions::{columnar, utf8};

pub(crate) fn register(ctx: &SessionContext) {
    let any = || Signature::variadic_any(Volatility::Immutable);
    for try_ in [false, true] {
        ctx.register_udf(ScalarUDF::from(ParseJson { try_, signature: Signature::any(1, Volatility::Immutable) }));
        ctx.register_udf(ScalarUDF::from(VariantGet { try_, signature: any() }));
    }
    ctx.register_udf(ScalarUDF::from(IsVariantNull { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(SchemaOfVariant { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(ToVariantObject { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(SchemaOfJson { signature: Signature::variadic_any(Volatility::Immutable) }));
    ctx.register_udaf(AggregateUDF::from(SchemaOfVariantAgg { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udtf("variant_explode", Arc::new(VariantExplode { outer: false }));
    ctx.register_udtf("variant_explode_outer", Arc::new(VariantExplode { outer: true }));
}

/// The Arrow type of a VARIANT.
pub(crate) fn variant_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        Field::new("value", DataType::Binary, false),
        Field::new("metadata", DataType::Binary, false),
    ]))
}

/// Whether `dt` is a VARIANT (the struct Spark sends one as).
pub fn is_variant(dt: &DataType) -> bool {
    match dt {
        DataType::Struct(f) => {
            f.len() == 2
                && f[0].name() == "value"
                && f[1].name() == "metadata"
                && f.iter()
                    .all(|f| matches!(f.data_type(), DataType::Binary | DataType::LargeBinary | DataType::BinaryView))
        }
        _ => false,
    }
}

/// Whether a VARIANT is anywhere in `dt`.
pub(crate) fn holds_variant(dt: &DataType) -> bool {
    is_variant(dt)
        || match dt {
            DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => {
                holds_variant(f.data_type())
            }
            DataType::Struct(fields) => fields.iter().any(|f| holds_variant(f.data_type())),
            _ => false,
        }
}

/// The variant spec's largest value or metadata (Spark's `SIZE_LIMIT`).
const SIZE_LIMIT: usize = 16 * 1024 * 1024;

// Basic types (the low two bits of a value's header).
const PRIMITIVE: u8 = 0;
const SHORT_STR: u8 = 1;
const OBJECT: u8 = 2;
const ARRAY: u8 = 3;

// Primitive type ids (the header's upper six bits when the basic type is PRIMITIVE).
const NULL: u8 = 0;
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const INT1: u8 = 3;
const INT2: u8 = 4;
const INT4: u8 = 5;
const INT8: u8 = 6;
const DOUBLE: u8 = 7;
const DECIMAL4: u8 = 8;
const DECIMAL8: u8 = 9;
const DECIMAL16: u8 = 10;
const DATE: u8 = 11;
const TIMESTAMP: u8 = 12;
const TIMESTAMP_NTZ: u8 = 13;
const FLOAT: u8 = 14;
const BINARY: u8 = 15;
const LONG_STR: u8 = 16;

/// The longest string stored inline in its header.
const MAX_SHORT_STR: usize = 63;

fn primitive_header(t: u8) -> u8 {
    (t << 2) | PRIMITIVE
}

/// The fewest bytes (1 to 3) an unsigned offset or id of at most `v` takes.
fn int_size(v: usize) -> usize {
    match v {
        0..=0xFF => 1,
        0x100..=0xFFFF => 2,
        _ => 3,
    }
}

fn write_le(buf: &mut [u8], at: usize, v: u64, n: usize) {
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
struct FieldEntry {
    key: String,
    id: usize,
    offset: usize,
}

impl Builder {
    fn pos(&self) -> usize {
        self.buf.len()
    }

    fn null(&mut self) {
        self.buf.push(primitive_header(NULL));
    }

    fn boolean(&mut self, b: bool) {
        self.buf.push(primitive_header(if b { TRUE } else { FALSE }));
    }

    fn long(&mut self, l: i64) {
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

    fn double(&mut self, d: f64) {
        self.buf.push(primitive_header(DOUBLE));
        self.buf.extend_from_slice(&d.to_bits().to_le_bytes());
    }

    fn float(&mut self, f: f32) {
        self.buf.push(primitive_header(FLOAT));
        self.buf.extend_from_slice(&f.to_bits().to_le_bytes());
    }

    /// A decimal `unscaled × 10^-scale` (scale and digits at most 38), in the narrowest of the
    /// three decimal widths its digits and scale fit.
    fn decimal(&mut self, unscaled: i128, scale: u8) {
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

    fn string(&mut self, s: &str) {
        if s.len() > MAX_SHORT_STR {
            self.buf.push(primitive_header(LONG_STR));
            self.buf.extend_from_slice(&(s.len() as u32).to_le_bytes());
        } else {
            self.buf.push(((s.len() as u8) << 2) | SHORT_STR);
        }
        self.buf.extend_from_slice(s.as_bytes());
    }

    fn fixed(&mut self, t: u8, bytes: &[u8]) {
        self.buf.push(primitive_header(t));
        self.buf.extend_from_slice(bytes);
    }

    fn binary(&mut self, b: &[u8]) {
        self.buf.push(primitive_header(BINARY));
        self.buf.extend_from_slice(&(b.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(b);
    }

    fn add_key(&mut self, key: &str) -> usize {
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
    fn finish_object(&mut self, start: usize, mut fields: Vec<FieldEntry>) -> Result<(), BuildError> {
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
    fn finish_array(&mut self, start: usize, offsets: &[usize]) -> Result<(), BuildError> {
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

    fn check_size(&self) -> Result<(), BuildError> {
        if self.buf.len() > SIZE_LIMIT {
            return Err(BuildError::TooLarge);
        }
        Ok(())
    }

    /// Copies `v` (of another variant) into this one, its keys entered in this dictionary.
    fn append(&mut self, v: &Value) -> Result<()> {
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

fn build_error(e: BuildError) -> datafusion::error::DataFusionError {
    datafusion::error::DataFusionError::Execution(match e {
        BuildError::DuplicateKey(k) => {
            format!("[VARIANT_DUPLICATE_KEY] the variant has the key `{k}` twice in one object")
        }
        BuildError::TooLarge => "[VARIANT_SIZE_LIMIT] the variant is larger than 16 MiB".to_string(),
        BuildError::Json(why) => format!("[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] {why}"),
    })
}

/// The number of decimal digits of `v` (1 for zero), as `BigDecimal.precision` counts them.
fn digits(v: i128) -> u8 {
    let mut n = 1;
    let mut v = v.unsigned_abs() / 10;
    while v > 0 {
        n += 1;
        v /= 10;
    }
    n
}

// ---------------------------------------------------------------------------------------------
// JSON text into a variant.

/// The deepest nesting read (Jackson's default limit, which Spark's parser has).
const MAX_DEPTH: usize = 1000;

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

struct JsonReader<'a> {
    s: &'a [u8],
    at: usize,
}

impl JsonReader<'_> {
    fn fail<T>(&self, what: &str) -> Result<T, BuildError> {
        Err(BuildError::Json(format!("{what} at character {}", self.at + 1)))
    }

    fn skip_space(&mut self) {
        while matches!(self.s.get(self.at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.at += 1;
        }
    }

    fn value(&mut self, b: &mut Builder, depth: usize) -> Result<(), BuildError> {
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

    fn word(&mut self, w: &str, put: impl Fn(&mut Builder), b: &mut Builder) -> Result<(), BuildError> {
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
    fn number(&mut self, b: &mut Builder) -> Result<(), BuildError> {
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
    fn string(&mut self) -> Result<String, BuildError> {
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
    fn hex4(&mut self) -> Result<u32, BuildError> {
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
fn plain_decimal(text: &str) -> Option<(i128, u8)> {
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

// ---------------------------------------------------------------------------------------------
// Reading a variant.

/// One value inside a variant: the value bytes from `pos`, and the variant's metadata.
#[derive(Clone, Copy)]
pub(crate) struct Value<'a> {
    value: &'a [u8],
    metadata: &'a [u8],
    pos: usize,
}

fn malformed<T>() -> Result<T> {
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

    fn byte(&self, at: usize) -> Result<u8> {
        self.value.get(at).copied().map_or_else(malformed, Ok)
    }

    fn read_le(&self, at: usize, n: usize) -> Result<u64> {
        let bytes = self.value.get(at..at + n).map_or_else(malformed, Ok)?;
        Ok(bytes.iter().rev().fold(0u64, |acc, b| (acc << 8) | u64::from(*b)))
    }

    fn slice(&self, at: usize, n: usize) -> Result<&'a [u8]> {
        self.value.get(at..at.saturating_add(n)).map_or_else(malformed, Ok)
    }

    fn header(&self) -> Result<u8> {
        self.byte(self.pos)
    }

    fn basic_type(&self) -> Result<u8> {
        Ok(self.header()? & 3)
    }

    /// An object's layout: (size, id bytes, offset bytes, where the ids start).
    fn object_layout(&self) -> Result<(usize, usize, usize, usize)> {
        let t = self.header()? >> 2;
        let large = (t >> 4) & 1 == 1;
        let id_size = usize::from((t >> 2) & 3) + 1;
        let offset_size = usize::from(t & 3) + 1;
        let size_bytes = if large { 4 } else { 1 };
        let size = self.read_le(self.pos + 1, size_bytes)? as usize;
        Ok((size, id_size, offset_size, self.pos + 1 + size_bytes))
    }

    fn object_size(&self) -> Result<usize> {
        if self.basic_type()? != OBJECT {
            return malformed();
        }
        Ok(self.object_layout()?.0)
    }

    /// The `i`th field of an object, in key order.
    fn field_at(&self, i: usize) -> Result<(&'a str, Value<'a>)> {
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
    fn field(&self, key: &str) -> Result<Option<Value<'a>>> {
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

    fn array_layout(&self) -> Result<(usize, usize, usize)> {
        let t = self.header()? >> 2;
        let large = (t >> 2) & 1 == 1;
        let offset_size = usize::from(t & 3) + 1;
        let size_bytes = if large { 4 } else { 1 };
        let size = self.read_le(self.pos + 1, size_bytes)? as usize;
        Ok((size, offset_size, self.pos + 1 + size_bytes))
    }

    fn array_size(&self) -> Result<usize> {
        if self.basic_type()? != ARRAY {
            return malformed();
        }
        Ok(self.array_layout()?.0)
    }

    fn element_at(&self, i: usize) -> Result<Value<'a>> {
        let (size, offset_size, offsets) = self.array_layout()?;
        if i >= size {
            return malformed();
        }
        let data = offsets + (size + 1) * offset_size;
        let offset = self.read_le(offsets + i * offset_size, offset_size)? as usize;
        Ok(Value { pos: data + offset, ..*self })
    }

    /// The bytes of a primitive or string value, header included.
    fn scalar_bytes(&self) -> Result<&'a [u8]> {
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
    fn size(&self) -> Result<usize> {
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
    fn sliced(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        Ok((self.slice(self.pos, self.size()?)?.to_vec(), self.metadata.to_vec()))
    }

    /// This value as a variant of its own (its keys alone in its dictionary), as Spark rebuilds
    /// an extracted value.
    fn rebuilt(&self) -> Result<(Vec<u8>, Vec<u8>)> {
        let mut b = Builder::default();
        b.append(self)?;
        b.finish().map_err(build_error)
    }
}

fn text(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_or_else(|_| malformed(), Ok)
}

/// The key of dictionary id `id`.
fn metadata_key(m: &[u8], id: usize) -> Result<&str> {
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
                crate::value_text::json_string(k, out);
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
        Scalar::String(s) => crate::value_text::json_string(s, out),
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

fn date_text(days: i32) -> String {
    let epoch = chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap_or_default();
    epoch.checked_add_signed(chrono::TimeDelta::days(i64::from(days))).map_or_else(String::new, |d| d.to_string())
}

/// `yyyy-MM-dd HH:mm:ss[.fraction]`, the fraction without trailing zeros.
fn timestamp_text(micros: i64) -> String {
    let Some(t) = chrono::DateTime::from_timestamp_micros(micros) else { return String::new() };
    let mut s = t.naive_utc().format("%Y-%m-%d %H:%M:%S").to_string();
    let fraction = micros.rem_euclid(1_000_000);
    if fraction != 0 {
        s.push_str(format!(".{fraction:06}").trim_end_matches('0'));
    }
    s
}

/// A decimal as `BigDecimal.stripTrailingZeros().toPlainString()` writes it.
fn plain_string(unscaled: i128, scale: u8) -> String {
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
fn stripped(mut unscaled: i128, scale: u8) -> (i128, i32) {
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
fn java_floating(nan: bool, infinite: bool, negative: bool, zero: bool, sci: String) -> String {
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

// ---------------------------------------------------------------------------------------------
// Paths.

/// One step of a variant path.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of a path as Spark reads one: `$`, then `.key`, `['key']`, `["key"]` or `[n]`.
fn parse_path(path: &str) -> Option<Vec<Step>> {
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
fn walk<'a>(v: Value<'a>, steps: &[Step]) -> Result<Option<Value<'a>>> {
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
fn cast(v: &Value, to: &DataType) -> Result<Option<ScalarValue>> {
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
            Scalar::String(t) => crate::casts::boolean(t),
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
                Scalar::String(t) => crate::casts::floating(t),
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
                Scalar::Boolean(b) => crate::decimals::read(if b { "1" } else { "0" }),
                Scalar::Long(l) => crate::decimals::read(&l.to_string()),
                Scalar::Decimal(u, sc) => crate::decimals::read(&plain_string(u, sc)),
                Scalar::Double(d) => match crate::decimals::of_double(d) {
                    Some(n) => crate::decimals::Read::Number(n),
                    None => crate::decimals::Read::Invalid,
                },
                Scalar::Float(f) => crate::decimals::read(&java_float(f)),
                Scalar::String(t) => crate::decimals::read(t),
                _ => crate::decimals::Read::Invalid,
            };
            match read {
                crate::decimals::Read::Number(n) => ScalarValue::Decimal128(n.fit(*p, *scale), *p, *scale),
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
            Scalar::String(t) => crate::casts::date(t),
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
                Scalar::String(t) => match crate::timestamp_text::read(t) {
                    crate::timestamp_text::TextTimestamp::Micros(m) => Some(m),
                    crate::timestamp_text::TextTimestamp::Invalid => None,
                    crate::timestamp_text::TextTimestamp::Unsupported(why) => {
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
fn castable(to: &DataType) -> bool {
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

/// A variant column's value and metadata bytes.
fn parts(a: &ArrayRef) -> Result<(StructArray, ArrayRef, ArrayRef)> {
    let Some(s) = a.as_any().downcast_ref::<StructArray>() else {
        return exec_err!("expected a VARIANT, got {}", crate::types::spark_type_name(a.data_type()));
    };
    let value = arrow::compute::cast(s.column(0), &DataType::Binary)?;
    let metadata = arrow::compute::cast(s.column(1), &DataType::Binary)?;
    Ok((s.clone(), value, metadata))
}

/// The variant of row `i`, `None` when the row is NULL.
fn row<'a>(s: &StructArray, value: &'a ArrayRef, metadata: &'a ArrayRef, i: usize) -> Result<Option<Value<'a>>> {
    if s.is_null(i) || value.is_null(i) || metadata.is_null(i) {
        return Ok(None);
    }
    Value::new(value.as_binary::<i32>().value(i), metadata.as_binary::<i32>().value(i)).map(Some)
}

/// `f` of each row of a VARIANT column (`None` for a NULL row; a VOID column is all NULL).
fn each_variant(a: &ArrayRef, mut f: impl FnMut(Option<Value>) -> Result<()>) -> Result<()> {
    if a.data_type() == &DataType::Null {
        return (0..a.len()).try_for_each(|_| f(None));
    }
    let (s, value, metadata) = parts(a)?;
    (0..a.len()).try_for_each(|i| f(row(&s, &value, &metadata, i)?))
}

/// Variants from their parts, NULL where `parts` is `None`.
fn variant_array(rows: Vec<Option<(Vec<u8>, Vec<u8>)>>) -> Result<ArrayRef> {
    let mut values = BinaryBuilder::new();
    let mut metadata = BinaryBuilder::new();
    let mut valid = Vec::with_capacity(rows.len());
    for r in &rows {
        match r {
            Some((v, m)) => {
                values.append_value(v);
                metadata.append_value(m);
            }
            // A NULL variant's children still hold values: they are not nullable.
            None => {
                values.append_value([primitive_header(NULL)]);
                metadata.append_value([1u8, 0, 0]);
            }
        }
        valid.push(r.is_some());
    }
    let DataType::Struct(fields) = variant_type() else { unreachable!("a variant is a struct") };
    let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
    Ok(Arc::new(StructArray::try_new(
        fields,
        vec![Arc::new(values.finish()) as ArrayRef, Arc::new(metadata.finish())],
        nulls,
    )?))
}

// ---------------------------------------------------------------------------------------------
// Functions.

/// `parse_json(text)` and `try_parse_json(text)` (NULL for text that is not JSON).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ParseJson {
    try_: bool,
    signature: Signature,
}

impl ScalarUDFImpl for ParseJson {
    fn name(&self) -> &str {
        if self.try_ {
            "try_parse_json"
        } else {
            "parse_json"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !matches!(args[0], DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null) {
            return plan_err!("{} takes a STRING, not {}", self.name(), crate::types::spark_type_name(&args[0]));
        }
        Ok(variant_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let text = utf8(&args.args[0].to_array(args.number_rows)?)?;
        let mut out = Vec::with_capacity(text.len());
        for t in text.iter() {
            out.push(match t {
                None => None,
                Some(t) => match parse_json(t) {
                    Ok(v) => Some(v),
                    Err(_) if self.try_ => None,
                    Err(BuildError::TooLarge) => return Err(build_error(BuildError::TooLarge)),
                    Err(_) => {
                        return exec_err!(
                            "[MALFORMED_RECORD_IN_PARSING.WITHOUT_SUGGESTION] Malformed records are detected in record \
                             parsing: {t}"
                        )
                    }
                },
            });
        }
        columnar(variant_array(out)?, scalar)
    }
}

/// `is_variant_null(v)`: whether `v` is a JSON `null` (false for a SQL NULL).
#[derive(Debug, PartialEq, Eq, Hash)]
struct IsVariantNull {
    signature: Signature,
}

impl ScalarUDFImpl for IsVariantNull {
    fn name(&self) -> &str {
        "is_variant_null"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        expect_variant(self.name(), &args[0])?;
        Ok(DataType::Boolean)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let mut out = Vec::with_capacity(a.len());
        each_variant(&a, |v| {
            out.push(v.map(|v| v.scalar()).transpose()? == Some(Scalar::Null));
            Ok(())
        })?;
        columnar(Arc::new(arrow::array::BooleanArray::from(out)), scalar)
    }
}

fn expect_variant(function: &str, t: &DataType) -> Result<()> {
    if !is_variant(t) && t != &DataType::Null {
        return plan_err!("{function} takes a VARIANT, not {}", crate::types::spark_type_name(t));
    }
    Ok(())
}

/// `variant_get(v, path[, type])` and `try_variant_get` (NULL where the value does not
/// convert); also `CAST(v AS type)` and `try_cast`, as `variant_get(v, '$', type)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct VariantGet {
    try_: bool,
    signature: Signature,
}

/// A literal text argument.
fn literal_text<'a>(args: &ReturnFieldArgs<'a>, i: usize) -> Option<&'a str> {
    match args.scalar_arguments.get(i).copied().flatten() {
        Some(ScalarValue::Utf8(Some(s)) | ScalarValue::Utf8View(Some(s)) | ScalarValue::LargeUtf8(Some(s))) => {
            Some(s.as_str())
        }
        _ => None,
    }
}

/// The type named by `variant_get`'s third argument.
fn target_type(name: &str) -> std::result::Result<DataType, String> {
    if name.trim().eq_ignore_ascii_case("variant") {
        return Ok(variant_type());
    }
    crate::types::parse_type(name)
}

impl ScalarUDFImpl for VariantGet {
    fn name(&self) -> &str {
        if self.try_ {
            "try_variant_get"
        } else {
            "variant_get"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("{}'s type is its type argument", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let name = self.name();
        if !(2..=3).contains(&args.arg_fields.len()) {
            return plan_err!("{name} is called as {name}(v, path[, type])");
        }
        expect_variant(name, args.arg_fields[0].data_type())?;
        let Some(path) = literal_text(&args, 1) else {
            return plan_err!("{name}'s path must be a literal, as '$.a[0]'");
        };
        if parse_path(path).is_none() {
            return plan_err!(
                "[INVALID_VARIANT_GET_PATH] The path `{path}` is not a valid variant extraction path in `{name}`"
            );
        }
        let to = match args.arg_fields.len() {
            2 => variant_type(),
            _ => {
                let Some(t) = literal_text(&args, 2) else {
                    return plan_err!("{name}'s type must be a literal, as 'int'");
                };
                target_type(t).or_else(|e| plan_err!("{name}'s type `{t}`: {e}"))?
            }
        };
        if !castable(&to) {
            return plan_err!(
                "{name} to {} runs on the Spark backend (natively a variant converts to scalar types)",
                crate::types::spark_type_name(&to)
            );
        }
        Ok(Arc::new(Field::new(name, to, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let to = args.return_field.data_type().clone();
        let path = match &args.args[1] {
            ColumnarValue::Scalar(s) => s.try_as_str().flatten().unwrap_or("").to_string(),
            ColumnarValue::Array(_) => return exec_err!("{}'s path must be a literal", self.name()),
        };
        let Some(steps) = parse_path(&path) else {
            return exec_err!("[INVALID_VARIANT_GET_PATH] The path `{path}` is not a valid variant extraction path");
        };
        let a = args.args[0].to_array(n)?;
        if a.data_type() == &DataType::Null {
            return columnar(arrow::array::new_null_array(&to, n), scalar);
        }
        let (s, value, metadata) = parts(&a)?;
        let mut found = Vec::with_capacity(n);
        for i in 0..n {
            found.push(match row(&s, &value, &metadata, i)? {
                Some(v) => walk(v, &steps)?,
                None => None,
            });
        }
        if is_variant(&to) {
            let rows = found.iter().map(|v| v.map(|v| v.rebuilt()).transpose()).collect::<Result<Vec<_>>>()?;
            return columnar(variant_array(rows)?, scalar);
        }
        let mut out = Vec::with_capacity(n);
        for v in &found {
            out.push(match v {
                None => ScalarValue::try_from(&to)?,
                Some(v) => match cast(v, &to)? {
                    Some(x) => x,
                    None if self.try_ => ScalarValue::try_from(&to)?,
                    None => {
                        let mut shown = String::new();
                        to_json(v, &mut shown)?;
                        return exec_err!(
                            "[INVALID_VARIANT_CAST] The variant value `{shown}` cannot be cast into `\"{}\"`. Please \
                             use `try_variant_get` instead.",
                            crate::types::spark_type_name(&to)
                        );
                    }
                },
            });
        }
        let out = if out.is_empty() { arrow::array::new_empty_array(&to) } else { ScalarValue::iter_to_array(out)? };
        // A DECIMAL's type is carried by its values; one whose digits do not fit was cut to NULL.
        let out = if out.data_type() != &to { arrow::compute::cast(&out, &to)? } else { out };
        columnar(out, scalar)
    }
}

/// `CAST(v AS to)` of a VARIANT: `variant_get(v, '$', to)` (`try_variant_get` for
/// `try_cast`), which refuses a type natively out of reach; `None` for a cast to VARIANT.
pub(crate) fn cast_expr(
    value: datafusion::logical_expr::Expr,
    to: &DataType,
    try_: bool,
) -> Option<datafusion::logical_expr::Expr> {
    use datafusion::logical_expr::expr::ScalarFunction;
    if is_variant(to) {
        return None;
    }
    let udf = Arc::new(ScalarUDF::from(VariantGet { try_, signature: Signature::variadic_any(Volatility::Immutable) }));
    let type_name = crate::types::spark_type_name(to);
    Some(datafusion::logical_expr::Expr::ScalarFunction(ScalarFunction::new_udf(
        udf,
        vec![value, datafusion::prelude::lit("$"), datafusion::prelude::lit(type_name)],
    )))
}

/// Each variant of `a` as JSON text (`to_json(v)`), NULL for NULL.
pub(crate) fn json_texts(a: &ArrayRef) -> Result<ArrayRef> {
    let mut out = arrow::array::StringBuilder::new();
    each_variant(a, |v| {
        match v {
            Some(v) => {
                let mut t = String::new();
                to_json(&v, &mut t)?;
                out.append_value(t);
            }
            None => out.append_null(),
        }
        Ok(())
    })?;
    Ok(Arc::new(out.finish()))
}

/// `variant_explode(v)` and `variant_explode_outer(v)` in FROM: a row per element of an array
/// or field of an object (`pos`, `key` — NULL for an array — and `value`); none for anything
/// else, or one row of NULLs for the `_outer` form. `v` is a constant here (a column of
/// another table, as in a lateral join, runs on the Spark backend).
#[derive(Debug)]
pub(crate) struct VariantExplode {
    pub(crate) outer: bool,
}

impl datafusion::catalog::TableFunctionImpl for VariantExplode {
    fn call_with_args(
        &self,
        args: datafusion::catalog::TableFunctionArgs,
    ) -> Result<Arc<dyn datafusion::catalog::TableProvider>> {
        let name = if self.outer { "variant_explode_outer" } else { "variant_explode" };
        let [arg] = args.exprs() else { return plan_err!("{name} takes one VARIANT") };
        let empty = datafusion::common::DFSchema::empty();
        let physical = args.session().create_physical_expr(arg.clone(), &empty)?;
        let one_row = arrow::record_batch::RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &arrow::record_batch::RecordBatchOptions::new().with_row_count(Some(1)),
        )?;
        let a = physical.evaluate(&one_row).map_err(|_| {
            datafusion::error::DataFusionError::Plan(format!(
                "{name} of a column runs on the Spark backend (natively its argument is a constant)"
            ))
        })?;
        let a = a.to_array(1)?;
        if !is_variant(a.data_type()) && a.data_type() != &DataType::Null {
            return plan_err!("{name} takes a VARIANT, not {}", crate::types::spark_type_name(a.data_type()));
        }
        let (mut pos, mut keys, mut values) = (Vec::new(), Vec::new(), Vec::new());
        if is_variant(a.data_type()) {
            let (s, value, metadata) = parts(&a)?;
            if let Some(v) = row(&s, &value, &metadata, 0)? {
                match v.basic_type()? {
                    OBJECT => {
                        for i in 0..v.object_size()? {
                            let (k, f) = v.field_at(i)?;
                            pos.push(Some(i as i32));
                            keys.push(Some(k.to_string()));
                            values.push(Some(f.sliced()?));
                        }
                    }
                    ARRAY => {
                        for i in 0..v.array_size()? {
                            pos.push(Some(i as i32));
                            keys.push(None);
                            values.push(Some(v.element_at(i)?.sliced()?));
                        }
                    }
                    _ => {}
                }
            }
        }
        if self.outer && pos.is_empty() {
            pos.push(None);
            keys.push(None);
            values.push(None);
        }
        let schema = Arc::new(arrow::datatypes::Schema::new(vec![
            Field::new("pos", DataType::Int32, self.outer),
            Field::new("key", DataType::Utf8, true),
            Field::new("value", variant_type(), self.outer),
        ]));
        let batch = arrow::record_batch::RecordBatch::try_new(
            Arc::clone(&schema),
            vec![
                Arc::new(arrow::array::Int32Array::from(pos)),
                Arc::new(arrow::array::StringArray::from(keys)),
                variant_array(values)?,
            ],
        )?;
        Ok(Arc::new(datafusion::datasource::MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

// ---------------------------------------------------------------------------------------------
// Schemas of variants.

/// The SQL type of a variant value, as `schema_of_variant` infers and merges them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
enum Shape {
    Void,
    Boolean,
    Bigint,
    Float,
    Double,
    Decimal(u8, u8),
    String,
    Date,
    Timestamp,
    TimestampNtz,
    Binary,
    Variant,
    Array(Box<Shape>),
    /// Fields in key order.
    Object(Vec<(String, Shape)>),
}

fn shape_of(v: &Value) -> Result<Shape> {
    Ok(match v.scalar()? {
        Scalar::Object => {
            let mut fields = Vec::new();
            for i in 0..v.object_size()? {
                let (k, f) = v.field_at(i)?;
                fields.push((k.to_string(), shape_of(&f)?));
            }
            Shape::Object(fields)
        }
        Scalar::Array => {
            let mut element = Shape::Void;
            for i in 0..v.array_size()? {
                element = merge(element, shape_of(&v.element_at(i)?)?);
            }
            Shape::Array(Box::new(element))
        }
        Scalar::Null => Shape::Void,
        Scalar::Boolean(_) => Shape::Boolean,
        Scalar::Long(_) => Shape::Bigint,
        Scalar::Double(_) => Shape::Double,
        Scalar::Float(_) => Shape::Float,
        Scalar::Decimal(u, s) => {
            // Spark's `Decimal(bigDecimal.stripTrailingZeros)`: a precision below the scale is
            // raised to it, a negative scale folded into the precision.
            let (u, s) = stripped(u, s);
            let p = i32::from(digits(u));
            let (p, s) = if p < s {
                (s, s)
            } else if s < 0 {
                (p - s, 0)
            } else {
                (p, s)
            };
            if p > 38 {
                Shape::Double
            } else {
                Shape::Decimal(p as u8, s as u8)
            }
        }
        Scalar::String(_) => Shape::String,
        Scalar::Date(_) => Shape::Date,
        Scalar::Timestamp(_) => Shape::Timestamp,
        Scalar::TimestampNtz(_) => Shape::TimestampNtz,
        Scalar::Binary(_) => Shape::Binary,
    })
}

/// The tightest type of both, as Spark's JSON schema inference merges them, VARIANT when
/// there is none.
fn merge(a: Shape, b: Shape) -> Shape {
    use Shape::*;
    let rank = |s: &Shape| match s {
        Bigint => Some(0),
        Float => Some(1),
        Double => Some(2),
        _ => None,
    };
    match (a, b) {
        (a, b) if a == b => a,
        (Void, x) | (x, Void) => x,
        (a, b) if rank(&a).is_some() && rank(&b).is_some() => {
            if rank(&a) > rank(&b) {
                a
            } else {
                b
            }
        }
        (Double, Decimal(..)) | (Decimal(..), Double) => Double,
        (Decimal(p1, s1), Decimal(p2, s2)) => {
            let scale = s1.max(s2);
            let range = (p1 - s1).max(p2 - s2);
            if u32::from(range) + u32::from(scale) > 38 {
                Double
            } else {
                Decimal(range + scale, scale)
            }
        }
        (Bigint, d @ Decimal(..)) | (d @ Decimal(..), Bigint) => merge(Decimal(20, 0), d),
        (Date, Timestamp) | (Timestamp, Date) | (TimestampNtz, Timestamp) | (Timestamp, TimestampNtz) => Timestamp,
        (Date, TimestampNtz) | (TimestampNtz, Date) => TimestampNtz,
        (Array(x), Array(y)) => Array(Box::new(merge(*x, *y))),
        (Object(x), Object(y)) => {
            let mut out: Vec<(std::string::String, Shape)> = Vec::with_capacity(x.len().max(y.len()));
            let (mut x, mut y) = (x.into_iter().peekable(), y.into_iter().peekable());
            loop {
                let order = match (x.peek(), y.peek()) {
                    (Some(a), Some(b)) => a.0.encode_utf16().cmp(b.0.encode_utf16()),
                    (Some(_), None) => std::cmp::Ordering::Less,
                    (None, Some(_)) => std::cmp::Ordering::Greater,
                    (None, None) => break,
                };
                match order {
                    std::cmp::Ordering::Less => out.extend(x.next()),
                    std::cmp::Ordering::Greater => out.extend(y.next()),
                    std::cmp::Ordering::Equal => {
                        if let (Some((k, a)), Some((_, b))) = (x.next(), y.next()) {
                            out.push((k, merge(a, b)));
                        }
                    }
                }
            }
            Object(out)
        }
        _ => Variant,
    }
}

/// A key as Spark writes it in a type: bare when it is letters, digits and `_` (not digits
/// alone), else in backquotes.
fn quoted(key: &str) -> String {
    let bare = !key.is_empty()
        && key.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_')
        && !key.bytes().all(|c| c.is_ascii_digit());
    if bare {
        key.to_string()
    } else {
        format!("`{}`", key.replace('`', "``"))
    }
}

impl std::fmt::Display for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Shape::Void => f.write_str("VOID"),
            Shape::Boolean => f.write_str("BOOLEAN"),
            Shape::Bigint => f.write_str("BIGINT"),
            Shape::Float => f.write_str("FLOAT"),
            Shape::Double => f.write_str("DOUBLE"),
            Shape::Decimal(p, s) => write!(f, "DECIMAL({p},{s})"),
            Shape::String => f.write_str("STRING"),
            Shape::Date => f.write_str("DATE"),
            Shape::Timestamp => f.write_str("TIMESTAMP"),
            Shape::TimestampNtz => f.write_str("TIMESTAMP_NTZ"),
            Shape::Binary => f.write_str("BINARY"),
            Shape::Variant => f.write_str("VARIANT"),
            Shape::Array(e) => write!(f, "ARRAY<{e}>"),
            Shape::Object(fields) => {
                f.write_str("OBJECT<")?;
                for (i, (k, t)) in fields.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{}: {t}", quoted(k))?;
                }
                f.write_str(">")
            }
        }
    }
}

/// `schema_of_variant(v)`: the type of `v` as text (`OBJECT<a: BIGINT>`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SchemaOfVariant {
    signature: Signature,
}

impl ScalarUDFImpl for SchemaOfVariant {
    fn name(&self) -> &str {
        "schema_of_variant"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        expect_variant(self.name(), &args[0])?;
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let mut out = arrow::array::StringBuilder::new();
        each_variant(&a, |v| {
            out.append_option(v.map(|v| shape_of(&v)).transpose()?.map(|shape| shape.to_string()));
            Ok(())
        })?;
        columnar(Arc::new(out.finish()), scalar)
    }
}

/// `schema_of_variant_agg(v)`: the merged type of a group's variants (`VOID` for none).
#[derive(Debug, PartialEq, Eq, Hash)]
struct SchemaOfVariantAgg {
    signature: Signature,
}

impl AggregateUDFImpl for SchemaOfVariantAgg {
    fn name(&self) -> &str {
        "schema_of_variant_agg"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        expect_variant(self.name(), &args[0])?;
        Ok(DataType::Utf8)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "shape"), DataType::Utf8, true))])
    }

    fn accumulator(&self, _: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Merged { shape: Shape::Void }))
    }
}

#[derive(Debug)]
struct Merged {
    shape: Shape,
}

impl Accumulator for Merged {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        each_variant(&values[0], |v| {
            if let Some(v) = v {
                let shape = std::mem::replace(&mut self.shape, Shape::Void);
                self.shape = merge(shape, shape_of(&v)?);
            }
            Ok(())
        })
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for s in utf8(&states[0])?.iter().flatten() {
            let other: Shape = serde_json::from_str(s)
                .or_else(|e| exec_err!("schema_of_variant_agg: a partial state does not read: {e}"))?;
            let shape = std::mem::replace(&mut self.shape, Shape::Void);
            self.shape = merge(shape, other);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let text = serde_json::to_string(&self.shape)
            .or_else(|e| exec_err!("schema_of_variant_agg: the state does not write: {e}"))?;
        Ok(vec![ScalarValue::Utf8(Some(text))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Utf8(Some(self.shape.to_string())))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// `schema_of_json(text)`: the type Spark's JSON schema inference gives a JSON text, as SQL
/// (`ARRAY<STRUCT<col: BIGINT>>`). It shares the variant's reading of the text and its merging
/// of types, with JSON inference's own rules on top: a number with a point or an exponent is a
/// DOUBLE, an integer beyond BIGINT a DECIMAL of its digits, and where two types have no common
/// one the answer is STRING (not VARIANT); a `null` alone is STRING. The text must be a literal,
/// as on Spark. Of the options, `allowNumericLeadingZeros` is kept (`01` reads as 1); the
/// others run on the Spark backend.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SchemaOfJson {
    signature: Signature,
}

/// `text` with the leading zeros of its numbers (outside strings) left out: `01` is `1`, `00.5`
/// is `0.5`, as Jackson reads them with `allowNumericLeadingZeros`.
fn without_leading_zeros(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let (mut out, mut in_string, mut i) = (String::with_capacity(text.len()), false, 0);
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            match c {
                '\\' if i + 1 < chars.len() => {
                    out.push(chars[i + 1]);
                    i += 1;
                }
                '"' => in_string = false,
                _ => {}
            }
        } else if c == '"' {
            in_string = true;
            out.push(c);
        } else if c == '0' && !out.ends_with(|p: char| p.is_ascii_digit() || p == '.' || p == 'e' || p == 'E') {
            // The start of a number: drop zeros that another digit follows.
            let mut j = i;
            while j + 1 < chars.len() && chars[j] == '0' && chars[j + 1].is_ascii_digit() {
                j += 1;
            }
            out.push(chars[j]);
            i = j;
        } else {
            out.push(c);
        }
        i += 1;
    }
    out
}

/// JSON inference's type of `v`.
fn json_shape(v: &Value) -> Result<Shape> {
    Ok(match v.scalar()? {
        Scalar::Object => {
            let mut fields = Vec::new();
            for i in 0..v.object_size()? {
                let (k, f) = v.field_at(i)?;
                fields.push((k.to_string(), json_shape(&f)?));
            }
            Shape::Object(fields)
        }
        Scalar::Array => {
            let mut element = Shape::Void;
            for i in 0..v.array_size()? {
                element = merge(element, json_shape(&v.element_at(i)?)?);
            }
            Shape::Array(Box::new(element))
        }
        // An integer past BIGINT is held as a DECIMAL of scale 0; a number with a point keeps
        // its scale: JSON inference reads that one as a DOUBLE.
        Scalar::Decimal(u, 0) => Shape::Decimal(digits(u), 0),
        Scalar::Decimal(..) | Scalar::Double(_) => Shape::Double,
        _ => shape_of(v)?,
    })
}

/// `s` with VARIANT (no common type: JSON inference's fallback is STRING), and VOID (JSON's
/// `null` and `[]`'s element), as STRING, as JSON inference's canonical types have them; the
/// types are merged first, so `[null, 1]` is still an ARRAY<BIGINT>.
fn strings_for_variants(s: Shape) -> Shape {
    match s {
        Shape::Variant | Shape::Void => Shape::String,
        Shape::Array(e) => Shape::Array(Box::new(strings_for_variants(*e))),
        Shape::Object(fields) => Shape::Object(fields.into_iter().map(|(k, t)| (k, strings_for_variants(t))).collect()),
        other => other,
    }
}

impl ScalarUDFImpl for SchemaOfJson {
    fn name(&self) -> &str {
        "schema_of_json"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t, options @ ..]
                if t.is_string() && options.len().is_multiple_of(2) && options.iter().all(DataType::is_string) =>
            {
                Ok(DataType::Utf8)
            }
            [_] => plan_err!("schema_of_json takes a STRING"),
            _ => plan_err!("schema_of_json's options must be a map of literal strings"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let text = match &args.args[0] {
            ColumnarValue::Scalar(s) => s.try_as_str().flatten().map(str::to_string),
            ColumnarValue::Array(_) => return exec_err!("schema_of_json's text must be a literal, as on Spark"),
        };
        let Some(mut text) = text else { return Ok(ColumnarValue::Scalar(ScalarValue::Utf8(None))) };
        let scalars = crate::value_text::scalar_arguments(&args.args[1..]);
        let options = crate::value_text::option_pairs("schema_of_json", &scalars).or_else(|e| exec_err!("{e}"))?;
        for (key, value) in options {
            match (key.to_ascii_lowercase().as_str(), value.to_ascii_lowercase().as_str()) {
                ("allownumericleadingzeros", "true") => text = without_leading_zeros(&text),
                ("allownumericleadingzeros", "false") => {}
                _ => return exec_err!("schema_of_json's option `{key}` runs on the Spark backend"),
            }
        }
        let (value, metadata) = match parse_json(&text) {
            Ok(v) => v,
            Err(BuildError::DuplicateKey(k)) => {
                return exec_err!(
                    "schema_of_json of a text with the key `{k}` twice in an object runs on the Spark backend"
                )
            }
            Err(_) => return exec_err!("[MALFORMED_RECORD_IN_PARSING] schema_of_json: `{text}` is not JSON"),
        };
        let shape = strings_for_variants(json_shape(&Value::new(&value, &metadata)?)?);
        let sql = shape.to_string().replace("OBJECT<", "STRUCT<");
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(sql))))
    }
}

// ---------------------------------------------------------------------------------------------
// Values into variants.

/// `to_variant_object(x)`: a STRUCT or a MAP keyed by STRING as a variant object, an ARRAY as a
/// variant array, nested values likewise (a struct's fields keep their order in the dictionary).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToVariantObject {
    signature: Signature,
}

/// Whether a value of type `t` goes into a variant natively.
fn storable(t: &DataType, top: bool) -> bool {
    match t {
        DataType::Struct(fields) if is_variant(t) => !top && !fields.is_empty(),
        DataType::Struct(fields) => fields.iter().all(|f| storable(f.data_type(), false)),
        DataType::List(f) | DataType::LargeList(f) => storable(f.data_type(), false),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                matches!(kv[0].data_type(), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
                    && storable(kv[1].data_type(), false)
            }
            _ => false,
        },
        _ if top => false,
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(..)
        | DataType::Utf8
        | DataType::Utf8View
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::Date32
        | DataType::Timestamp(TimeUnit::Microsecond, _) => true,
        _ => false,
    }
}

impl ScalarUDFImpl for ToVariantObject {
    fn name(&self) -> &str {
        "to_variant_object"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !storable(&args[0], true) {
            return plan_err!(
                "to_variant_object of {} runs on the Spark backend (natively it takes a STRUCT, an ARRAY or a MAP keyed \
                 by STRING, of scalar values)",
                crate::types::spark_type_name(&args[0])
            );
        }
        Ok(variant_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let mut out = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            out.push(match a.is_null(i) {
                true => None,
                false => {
                    let mut b = Builder::default();
                    put(&mut b, &a, i)?;
                    Some(b.finish().map_err(build_error)?)
                }
            });
        }
        columnar(variant_array(out)?, scalar)
    }
}

/// Writes row `i` of `a` into `b`.
fn put(b: &mut Builder, a: &ArrayRef, i: usize) -> Result<()> {
    use arrow::datatypes::*;
    if a.is_null(i) {
        b.null();
        return Ok(());
    }
    match a.data_type() {
        DataType::Null => b.null(),
        DataType::Boolean => b.boolean(a.as_boolean().value(i)),
        DataType::Int8 => b.long(i64::from(a.as_primitive::<Int8Type>().value(i))),
        DataType::Int16 => b.long(i64::from(a.as_primitive::<Int16Type>().value(i))),
        DataType::Int32 => b.long(i64::from(a.as_primitive::<Int32Type>().value(i))),
        DataType::Int64 => b.long(a.as_primitive::<Int64Type>().value(i)),
        DataType::Float32 => b.float(a.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => b.double(a.as_primitive::<Float64Type>().value(i)),
        DataType::Decimal128(_, s) => b.decimal(a.as_primitive::<Decimal128Type>().value(i), *s as u8),
        DataType::Date32 => b.fixed(DATE, &a.as_primitive::<Date32Type>().value(i).to_le_bytes()),
        DataType::Timestamp(TimeUnit::Microsecond, zone) => {
            let t = a.as_primitive::<TimestampMicrosecondType>().value(i);
            b.fixed(if zone.is_some() { TIMESTAMP } else { TIMESTAMP_NTZ }, &t.to_le_bytes());
        }
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let s = arrow::compute::cast(&a.slice(i, 1), &DataType::Utf8)?;
            b.string(s.as_string::<i32>().value(0));
        }
        DataType::Binary | DataType::BinaryView | DataType::LargeBinary => {
            let s = arrow::compute::cast(&a.slice(i, 1), &DataType::Binary)?;
            b.binary(s.as_binary::<i32>().value(0));
        }
        t if is_variant(t) => {
            let (s, value, metadata) = parts(a)?;
            if let Some(v) = row(&s, &value, &metadata, i)? {
                b.append(&v)?;
            }
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let start = b.pos();
            let mut entries = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(s.columns()) {
                let id = b.add_key(f.name());
                entries.push(FieldEntry { key: f.name().clone(), id, offset: b.pos() - start });
                put(b, c, i)?;
            }
            b.finish_object(start, entries).map_err(build_error)?;
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let list = arrow::compute::cast(&a.slice(i, 1), &DataType::List(list_field(a.data_type())))?;
            let items = list.as_list::<i32>().value(0);
            let start = b.pos();
            let mut offsets = Vec::with_capacity(items.len());
            for k in 0..items.len() {
                offsets.push(b.pos() - start);
                put(b, &items, k)?;
            }
            b.finish_array(start, &offsets).map_err(build_error)?;
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let entries = m.value(i);
            let keys = arrow::compute::cast(entries.column(0), &DataType::Utf8)?;
            let values = entries.column(1);
            let start = b.pos();
            let mut fields = Vec::with_capacity(keys.len());
            for k in 0..keys.len() {
                let key = keys.as_string::<i32>().value(k).to_string();
                let id = b.add_key(&key);
                fields.push(FieldEntry { key, id, offset: b.pos() - start });
                put(b, values, k)?;
            }
            b.finish_object(start, fields).map_err(build_error)?;
        }
        other => return exec_err!("a {} in a VARIANT runs on the Spark backend", crate::types::spark_type_name(other)),
    }
    Ok(())
}

fn list_field(t: &DataType) -> FieldRef {
    match t {
        DataType::List(f) | DataType::LargeList(f) => Arc::clone(f),
        _ => Arc::new(Field::new_list_field(DataType::Null, true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(json: &str) -> (Vec<u8>, Vec<u8>) {
        parse_json(json).unwrap_or_else(|e| panic!("{json}: {e:?}"))
    }

    #[test]
    fn json_is_built_into_sparks_bytes() {
        // Each pair of bytes as Spark 4.1.4's `parse_json` answers it.
        assert_eq!(
            parsed(r#"{"a":1,"b":0.8}"#),
            (
                b"\x02\x02\x00\x01\x00\x02\x08\x0c\x01\x20\x01\x08\x00\x00\x00".to_vec(),
                b"\x01\x02\x00\x01\x02ab".to_vec()
            )
        );
        assert_eq!(
            parsed(r#"{"b":1,"a":[1,2.5e3,"x",null,true]}"#).0,
            b"\x02\x02\x01\x00\x02\x00\x19\x0c\x01\x03\x05\x00\x02\x0b\x0d\x0e\x0f\x0c\x01\x1c\x00\x00\x00\x00\x00\x88\xa3\x40\x05x\x00\x04"
                .to_vec()
        );
        assert_eq!(parsed("  12  "), (b"\x0c\x0c".to_vec(), b"\x01\x00\x00".to_vec()));
        assert_eq!(parsed("12345678901234567890").0[..2], *b"\x28\x00");
        assert_eq!(parsed("1234567890123456789012345678901234567890").0[0], primitive_header(DOUBLE));
        assert_eq!(parsed("-0.0").0, b"\x20\x01\x00\x00\x00\x00".to_vec());
        assert_eq!(parsed("1 2").0, b"\x0c\x01".to_vec());
    }

    #[test]
    fn malformed_json_and_duplicate_keys_are_refused() {
        for bad in ["01", "NaN", "[1,", r#"{"a":1,"a":2}"#, "12x", "", "\"a\nb\""] {
            assert!(parse_json(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn values_read_back_and_write_as_sparks_json() {
        let (v, m) = parsed(r#"{"a":1,"b":0.80,"c":[1e3,"x\n",null,1.0E-7],"d":{"z":true}}"#);
        let mut out = String::new();
        to_json(&Value::new(&v, &m).unwrap(), &mut out).unwrap();
        assert_eq!(out, r#"{"a":1,"b":0.8,"c":[1000.0,"x\n",null,1.0E-7],"d":{"z":true}}"#);
        let shape = shape_of(&Value::new(&v, &m).unwrap()).unwrap().to_string();
        assert_eq!(shape, "OBJECT<a: BIGINT, b: DECIMAL(1,1), c: ARRAY<VARIANT>, d: OBJECT<z: BOOLEAN>>");
    }

    #[test]
    fn shapes_merge_as_sparks_schema_inference() {
        let shape = |j: &str| {
            let (v, m) = parsed(j);
            shape_of(&Value::new(&v, &m).unwrap()).unwrap().to_string()
        };
        assert_eq!(shape("[1, 300, 70000, 5000000000, 1.5, 1.25, 12345678901.5]"), "ARRAY<DECIMAL(22,2)>");
        assert_eq!(shape("[[1],[1.5]]"), "ARRAY<ARRAY<DECIMAL(21,1)>>");
        assert_eq!(shape("[1.5, 1e2]"), "ARRAY<DOUBLE>");
        assert_eq!(shape(r#"[{"a":1}, {"b":"x"}]"#), "ARRAY<OBJECT<a: BIGINT, b: STRING>>");
        assert_eq!(shape(r#"[{"a":1}, {"a":"x"}]"#), "ARRAY<OBJECT<a: VARIANT>>");
        assert_eq!(shape("[]"), "ARRAY<VOID>");
        assert_eq!(shape("0.08"), "DECIMAL(2,2)");
        assert_eq!(shape(r#"{"x y": 1}"#), "OBJECT<`x y`: BIGINT>");
    }

    #[test]
    fn json_schemas_are_inferred_as_sparks() {
        // Each as Spark 4.1.4's schema_of_json answers.
        let schema = |j: &str| {
            let (v, m) = parsed(j);
            strings_for_variants(json_shape(&Value::new(&v, &m).unwrap()).unwrap())
                .to_string()
                .replace("OBJECT<", "STRUCT<")
        };
        assert_eq!(schema(r#"[{"col":0}]"#), "ARRAY<STRUCT<col: BIGINT>>");
        assert_eq!(
            schema(r#"{"b":1.5,"a":"x","c":null,"d":[],"e":true,"f":12345678901234567890,"g":{"z":[1,2.5]}}"#),
            "STRUCT<a: STRING, b: DOUBLE, c: STRING, d: ARRAY<STRING>, e: BOOLEAN, f: DECIMAL(20,0), g: STRUCT<z: ARRAY<DOUBLE>>>"
        );
        assert_eq!(schema("1"), "BIGINT");
        assert_eq!(schema("[null, 1]"), "ARRAY<BIGINT>");
        assert_eq!(schema(r#"[1,"a"]"#), "ARRAY<STRING>");
        assert_eq!(schema(r#"{"a b":1,"A":2,"a":3}"#), "STRUCT<A: BIGINT, a: BIGINT, `a b`: BIGINT>");
    }

    #[test]
    fn doubles_are_written_as_java_writes_them() {
        for (d, text) in [(1000.0, "1000.0"), (1e30, "1.0E30"), (1e-7, "1.0E-7"), (0.001, "0.001"), (1.5e7, "1.5E7")] {
            assert_eq!(java_double(d), text);
        }
        assert_eq!(java_double(1234567.0), "1234567.0");
        assert_eq!(java_double(-0.0), "-0.0");
    }

    #[test]
    fn paths_read_as_sparks() {
        assert_eq!(
            parse_path("$.a['b c'][1]"),
            Some(vec![Step::Key("a".into()), Step::Key("b c".into()), Step::Index(1)])
        );
        assert_eq!(parse_path("$"), Some(vec![]));
        for bad in ["a", "$[-1]", "$.", "$[x]", "$['a'"] {
            assert_eq!(parse_path(bad), None, "{bad}");
        }
    }
}
