//! Spark's functions of BINARY values and of character sets, which DataFusion lacks or types
//! for strings only:
//!
//! - `encode(string, charset)` and `decode(binary, charset)`, in Spark's charsets (`US-ASCII`,
//!   `ISO-8859-1`, `UTF-8`, `UTF-16` with its byte-order mark, `UTF-16BE`, `UTF-16LE`,
//!   `UTF-32`); a character the charset cannot hold, or bytes that are not the charset's, fail
//!   in either mode, as Spark 4's do (`MALFORMED_CHARACTER_CODING`).
//! - `to_binary(string[, format])` (`hex`, the default; `base64`; `utf-8`) and
//!   `try_to_binary`, NULL where the text is not in the format.
//! - `validate_utf8(x)` and `try_validate_utf8(x)`: the text, if its bytes are UTF-8.
//! - `substring` (`substr`, `left`) of a BINARY: its bytes from a position, as Spark's
//!   `ByteArray.subStringSQL` (the engine plans those calls as `binary_substr`).
//! - `octet_length` and `bit_length` of strings and binaries; `startswith`, `endswith` and
//!   `contains` of two strings or two binaries, on Arrow's kernels over the batch.

mod charset;

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, BinaryBuilder, StringArray, StringBuilder};
use arrow::datatypes::{DataType, Field, FieldRef};
use base64::Engine;
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::declare::Function as Declared;
use charset::Charset;

/// Spark's functions of BINARY values and of character sets, as they run here.
pub(crate) const FUNCTIONS: &[Declared] = &[
    // Spark trims a BINARY as the text it casts it to; DataFusion's trims take text only.
    Declared::udf("btrim"),
    Declared::udf("ltrim"),
    Declared::udf("rtrim"),
    Declared::udf("trim"),
    Declared::udf("bit_length"),
    Declared::udf("octet_length"),
    Declared::udf("contains"),
    Declared::udf("startswith"),
    Declared::udf("endswith"),
    Declared::udf("encode"),
    // `decode(x, s1, r1, …)` is Spark's CASE form; `decode(binary, charset)` the charset's.
    Declared::udf("decode").parse(decode_case),
    Declared::udf("to_binary"),
    Declared::udf("try_to_binary"),
    Declared::udf("validate_utf8"),
    Declared::udf("try_validate_utf8"),
    // The bytes forms of `substr`, `lpad`, `rpad`, `overlay` (`string`'s rewrites pick them).
    Declared::udf("binary_substr"),
    Declared::udf("binary_lpad"),
    Declared::udf("binary_rpad"),
    Declared::udf("binary_overlay"),
];

/// `decode(x, s1, r1, s2, r2, …[, default])`: the first `r` whose `s` is `x` (NULL matching
/// NULL), as a CASE. (`decode(binary, charset)` is another function, left alone.)
fn decode_case(expr: &sqlparser::ast::Expr) -> Option<sqlparser::ast::Expr> {
    use sqlparser::ast::{Expr, FunctionArguments};
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("decode") || list.args.len() < 3 || f.over.is_some() {
        return None;
    }
    let args = crate::syntax::unnamed_args(list)?;
    let (subject, rest) = args.split_first()?;
    let conditions = rest
        .chunks_exact(2)
        .map(|pair| sqlparser::ast::CaseWhen {
            condition: Expr::IsNotDistinctFrom(Box::new((*subject).clone()), Box::new(pair[0].clone())),
            result: pair[1].clone(),
        })
        .collect();
    Some(Expr::Case {
        case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions,
        else_result: (rest.len() % 2 == 1).then(|| Box::new(rest[rest.len() - 1].clone())),
    })
}

pub(crate) fn register(ctx: &SessionContext) {
    // Spark trims a BINARY as the text it casts it to; DataFusion's trims take text only.
    for inner in [
        datafusion::functions::string::btrim(),
        datafusion::functions::string::ltrim(),
        datafusion::functions::string::rtrim(),
    ] {
        let aliases = inner.aliases().to_vec();
        ctx.register_udf(ScalarUDF::from(TextOfBytes {
            inner,
            aliases,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
    let udf = |f: Function, arity: usize| {
        ScalarUDF::from(Binary { function: f, signature: Signature::variadic_any(Volatility::Immutable), arity })
    };
    for (f, arity) in [
        (Function::Encode, 2..=2),
        (Function::Decode, 2..=2),
        (Function::ToBinary { try_: false }, 1..=2),
        (Function::ToBinary { try_: true }, 1..=2),
        (Function::ValidateUtf8 { try_: false }, 1..=1),
        (Function::ValidateUtf8 { try_: true }, 1..=1),
        (Function::Length { bits: false }, 1..=1),
        (Function::Length { bits: true }, 1..=1),
        (Function::Match(Match::Starts), 2..=2),
        (Function::Match(Match::Ends), 2..=2),
        (Function::Match(Match::Contains), 2..=2),
        (Function::Substr, 2..=3),
        (Function::Pad { left: true }, 2..=3),
        (Function::Pad { left: false }, 2..=3),
        (Function::Overlay, 3..=4),
    ] {
        ctx.register_udf(udf(f, *arity.end()));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Match {
    Starts,
    Ends,
    Contains,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Function {
    Encode,
    Decode,
    ToBinary {
        try_: bool,
    },
    ValidateUtf8 {
        try_: bool,
    },
    Length {
        bits: bool,
    },
    Match(Match),
    Substr,
    /// `lpad`/`rpad` of a BINARY: Spark's `ByteArray.lpad`/`rpad` (zero bytes by default).
    Pad {
        left: bool,
    },
    /// `overlay(bytes PLACING bytes FROM pos [FOR len])`.
    Overlay,
}

/// `binary_substr(bytes, pos[, len])`: Spark's substring of a BINARY.
pub(crate) fn substr() -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(Binary {
        function: Function::Substr,
        signature: Signature::variadic_any(Volatility::Immutable),
        arity: 3,
    }))
}

/// A function of text that takes a BINARY as the text it casts to (its bytes read as UTF-8,
/// failing where they are not).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TextOfBytes {
    inner: Arc<ScalarUDF>,
    aliases: Vec<String>,
    signature: Signature,
}

fn as_text(t: &DataType) -> DataType {
    if is_bytes(t) {
        DataType::Utf8
    } else {
        t.clone()
    }
}

impl ScalarUDFImpl for TextOfBytes {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        Ok(args.to_vec())
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let fields: Vec<FieldRef> = args.iter().map(|t| Arc::new(Field::new("", t.clone(), true))).collect();
        let coerced: Vec<DataType> = self.coerced(&fields)?.iter().map(|f| f.data_type().clone()).collect();
        self.inner.return_type(&coerced)
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let coerced = self.coerced(&args.arg_fields)?;
        for ((value, field), to) in args.args.iter_mut().zip(args.arg_fields.iter_mut()).zip(coerced) {
            if field.data_type() != to.data_type() {
                *value = value.cast_to(to.data_type(), None)?;
                *field = to;
            }
        }
        self.inner.invoke_with_args(args)
    }
}

impl TextOfBytes {
    /// The arguments as the inner function takes them: a BINARY as text, then its coercions.
    fn coerced(&self, fields: &[FieldRef]) -> Result<Vec<FieldRef>> {
        let texts: Vec<FieldRef> =
            fields.iter().map(|f| Arc::new(f.as_ref().clone().with_data_type(as_text(f.data_type())))).collect();
        datafusion::logical_expr::type_coercion::functions::fields_with_udf(&texts, self.inner.as_ref())
    }
}

/// `binary_lpad`/`binary_rpad(bytes, len[, pad])` or `binary_overlay(bytes, replace, pos[, len])`:
/// Spark's `lpad`, `rpad` and `overlay` of a BINARY.
pub(crate) fn bytes_function(name: &str) -> Option<Arc<ScalarUDF>> {
    let (function, arity) = match name {
        "lpad" => (Function::Pad { left: true }, 3),
        "rpad" => (Function::Pad { left: false }, 3),
        "overlay" => (Function::Overlay, 4),
        _ => return None,
    };
    Some(Arc::new(ScalarUDF::from(Binary {
        function,
        signature: Signature::variadic_any(Volatility::Immutable),
        arity,
    })))
}

/// `bytes` padded or cut to `len` bytes with `pad` repeated, before them (`left`) or after, as
/// Spark's `ByteArray.lpad`/`rpad`: an empty pad only cuts.
fn padded(bytes: &[u8], len: i64, pad: &[u8], left: bool) -> Vec<u8> {
    let len = len.max(0) as usize;
    if bytes.len() >= len || pad.is_empty() {
        return bytes[..bytes.len().min(len)].to_vec();
    }
    let fill = pad.iter().copied().cycle().take(len - bytes.len());
    if left {
        fill.chain(bytes.iter().copied()).collect()
    } else {
        bytes.iter().copied().chain(fill).collect()
    }
}

/// Spark's `Overlay.calculate` of bytes: the bytes before `pos`, `replace`, and the bytes from
/// `pos + len` (`len` is `replace`'s length when negative), each by Spark's `substring` rules.
fn overlaid(input: &[u8], replace: &[u8], pos: i64, len: i64) -> Vec<u8> {
    let len = if len >= 0 { len } else { replace.len() as i64 };
    let before = &input[byte_range(input.len(), 1, pos.saturating_sub(1))];
    let after = &input[byte_range(input.len(), pos.saturating_add(len), i64::from(i32::MAX))];
    [before, replace, after].concat()
}

/// The bytes Spark's `substring(bytes, pos, len)` takes: counted from 1, from the end for a
/// negative `pos` (0 counting as 1), at most `len`.
fn byte_range(length: usize, pos: i64, len: i64) -> std::ops::Range<usize> {
    let length = length as i64;
    if pos > length {
        return 0..0;
    }
    let start = if pos > 0 {
        pos - 1
    } else if pos < 0 {
        length + pos
    } else {
        0
    };
    let end = if length - start < len { length } else { start.saturating_add(len) };
    let start = start.max(0);
    if start >= end {
        return 0..0;
    }
    start as usize..end as usize
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Binary {
    function: Function,
    signature: Signature,
    /// The most arguments it takes.
    arity: usize,
}

fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null)
}

pub(crate) fn is_bytes(t: &DataType) -> bool {
    matches!(t, DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_))
}

/// How `to_char(binary, format)` writes bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryFormat {
    Base64,
    Hex,
    Utf8,
}

/// The constant format of `to_char(binary, format)`: `base64`, `hex` or `utf-8` (any case).
pub(crate) fn binary_format(function: &str, format: Option<&datafusion::common::ScalarValue>) -> Result<BinaryFormat> {
    let Some(text) = format.and_then(|f| f.try_as_str()).flatten() else {
        return plan_err!("{function}: the format must be a constant string");
    };
    Ok(match text.to_ascii_lowercase().as_str() {
        "base64" => BinaryFormat::Base64,
        "hex" => BinaryFormat::Hex,
        "utf-8" | "utf8" => BinaryFormat::Utf8,
        _ => {
            return plan_err!(
            "[INVALID_PARAMETER_VALUE.BINARY_FORMAT] The value of parameter(s) `format` in `{function}` is invalid: \
                 expects one of binary formats 'base64', 'hex', 'utf-8', but got '{text}'"
        )
        }
    })
}

/// `to_char(binary, format)`: base64 (padded, one line), upper-case hexadecimal, or the bytes
/// read as UTF-8 (bytes that are not fail: Spark would write replacement characters).
pub(crate) fn to_char(values: &ArrayRef, format: BinaryFormat) -> Result<ArrayRef> {
    let bytes = arrow::compute::cast(values, &DataType::Binary)?;
    let bytes = bytes.as_binary::<i32>();
    let mut out = StringBuilder::with_capacity(bytes.len(), bytes.len() * 8);
    for b in bytes.iter() {
        let Some(b) = b else {
            out.append_null();
            continue;
        };
        match format {
            BinaryFormat::Base64 => out.append_value(base64::engine::general_purpose::STANDARD.encode(b)),
            BinaryFormat::Hex => out.append_value(b.iter().map(|x| format!("{x:02X}")).collect::<String>()),
            BinaryFormat::Utf8 => match std::str::from_utf8(b) {
                Ok(s) => out.append_value(s),
                Err(_) => return exec_err!("to_char of bytes that are not UTF-8 runs on the Spark backend"),
            },
        }
    }
    Ok(Arc::new(out.finish()))
}

/// Hexadecimal digits as bytes, as Spark's `unhex` reads them: an odd count has a leading 0.
fn unhex(s: &str) -> Option<Vec<u8>> {
    let digits: Vec<u8> = s.chars().map(|c| c.to_digit(16).map(|d| d as u8)).collect::<Option<_>>()?;
    let padded: Vec<u8> =
        if !digits.len().is_multiple_of(2) { std::iter::once(0).chain(digits).collect() } else { digits };
    Some(padded.chunks(2).map(|p| p[0] << 4 | p[1]).collect())
}

impl Binary {
    fn text_argument(&self, t: &DataType) -> Result<()> {
        if is_text(t) {
            return Ok(());
        }
        plan_err!("{} of {} runs on the Spark backend", self.name(), crate::types::spark_type_name(t))
    }
}

impl ScalarUDFImpl for Binary {
    fn name(&self) -> &str {
        match self.function {
            Function::Encode => "encode",
            Function::Decode => "decode",
            Function::ToBinary { try_: false } => "to_binary",
            Function::ToBinary { try_: true } => "try_to_binary",
            Function::ValidateUtf8 { try_: false } => "validate_utf8",
            Function::ValidateUtf8 { try_: true } => "try_validate_utf8",
            Function::Length { bits: false } => "octet_length",
            Function::Length { bits: true } => "bit_length",
            Function::Match(Match::Starts) => "startswith",
            Function::Match(Match::Ends) => "endswith",
            Function::Match(Match::Contains) => "contains",
            Function::Substr => "binary_substr",
            Function::Pad { left: true } => "binary_lpad",
            Function::Pad { left: false } => "binary_rpad",
            Function::Overlay => "binary_overlay",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let minimum = match self.function {
            Function::ToBinary { .. } => 1,
            Function::Substr | Function::Pad { .. } => 2,
            Function::Overlay => 3,
            _ => self.arity,
        };
        if args.len() < minimum || args.len() > self.arity {
            return plan_err!("{} takes {} arguments, not {}", self.name(), self.arity, args.len());
        }
        match self.function {
            Function::Encode => {
                args.iter().try_for_each(|t| self.text_argument(t))?;
                Ok(DataType::Binary)
            }
            Function::Decode => {
                if !is_bytes(&args[0]) && args[0] != DataType::Null {
                    return plan_err!(
                        "decode of {} runs on the Spark backend",
                        crate::types::spark_type_name(&args[0])
                    );
                }
                self.text_argument(&args[1])?;
                Ok(DataType::Utf8)
            }
            Function::ToBinary { .. } => {
                args.iter().try_for_each(|t| self.text_argument(t))?;
                Ok(DataType::Binary)
            }
            Function::Substr
                if is_bytes(&args[0]) && args[1..].iter().all(|t| t.is_integer() || *t == DataType::Null) =>
            {
                Ok(DataType::Binary)
            }
            Function::Pad { .. }
                if is_bytes(&args[0])
                    && (args[1].is_integer() || args[1] == DataType::Null)
                    && args.get(2).is_none_or(|t| is_bytes(t) || *t == DataType::Null) =>
            {
                Ok(DataType::Binary)
            }
            Function::Overlay
                if is_bytes(&args[0])
                    && (is_bytes(&args[1]) || args[1] == DataType::Null)
                    && args[2..].iter().all(|t| t.is_integer() || *t == DataType::Null) =>
            {
                Ok(DataType::Binary)
            }
            Function::ValidateUtf8 { .. } if is_text(&args[0]) || is_bytes(&args[0]) => Ok(DataType::Utf8),
            Function::Length { .. } if is_text(&args[0]) || is_bytes(&args[0]) => Ok(DataType::Int32),
            Function::Match(_)
                if args.iter().all(is_text) || args.iter().all(|t| is_bytes(t) || *t == DataType::Null) =>
            {
                Ok(DataType::Boolean)
            }
            _ => plan_err!(
                "{} of {} runs on the Spark backend",
                self.name(),
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(" and ")
            ),
        }
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        // Spark takes the format as a constant only (`NON_FOLDABLE_INPUT` otherwise).
        if matches!(self.function, Function::ToBinary { .. })
            && args.arg_fields.len() > 1
            && args.scalar_arguments.get(1).copied().flatten().is_none()
        {
            return plan_err!("{}: the format must be a constant string", self.name());
        }
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        Ok(Arc::new(Field::new(self.name(), self.return_type(&types)?, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let out: ArrayRef = match self.function {
            Function::Match(m) => {
                // A scalar stays one: the kernels compare each row with it.
                let common =
                    if args.args.iter().any(|a| is_bytes(&a.data_type())) { DataType::Binary } else { DataType::Utf8 };
                let datum = |a: &ColumnarValue| -> Result<Box<dyn arrow::array::Datum>> {
                    Ok(match a {
                        ColumnarValue::Array(a) => Box::new(arrow::compute::cast(a, &common)?),
                        ColumnarValue::Scalar(s) => {
                            Box::new(arrow::array::Scalar::new(arrow::compute::cast(&s.to_array()?, &common)?))
                        }
                    })
                };
                let (l, r) = (datum(&args.args[0])?, datum(&args.args[1])?);
                use arrow::compute::kernels::comparison as k;
                Arc::new(match m {
                    Match::Starts => k::starts_with(&*l, &*r)?,
                    Match::Ends => k::ends_with(&*l, &*r)?,
                    Match::Contains => k::contains(&*l, &*r)?,
                })
            }
            Function::Length { bits } => {
                let a = args.args[0].to_array(n)?;
                let a = if is_bytes(a.data_type()) {
                    arrow::compute::cast(&a, &DataType::Binary)?
                } else {
                    arrow::compute::cast(&a, &DataType::Utf8)?
                };
                let bytes = arrow::compute::kernels::length::length(&a)?;
                let bytes = arrow::compute::cast(&bytes, &DataType::Int32)?;
                if bits {
                    let eight = arrow::array::Int32Array::new_scalar(8);
                    arrow::compute::kernels::numeric::mul(&bytes, &eight)?
                } else {
                    bytes
                }
            }
            _ => {
                let columns: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
                self.row_by_row(&columns, n)?
            }
        };
        crate::columnar::columnar(out, scalar)
    }
}

impl Binary {
    /// The functions that read text: each row decoded, encoded or validated on its own.
    fn row_by_row(&self, columns: &[ArrayRef], n: usize) -> Result<ArrayRef> {
        let text = |i: usize| -> Result<StringArray> {
            Ok(arrow::compute::cast(&columns[i], &DataType::Utf8)?.as_string::<i32>().clone())
        };
        let bytes = |i: usize| -> Result<BinaryArray> {
            Ok(arrow::compute::cast(&columns[i], &DataType::Binary)?.as_binary::<i32>().clone())
        };
        let int = |i: usize| -> Result<arrow::array::Int64Array> {
            Ok(arrow::compute::cast(&columns[i], &DataType::Int64)?.as_primitive().clone())
        };
        let malformed = |function: &str, charset: Charset| {
            exec_err!(
                "[MALFORMED_CHARACTER_CODING] Invalid value found when performing `{function}` with {}",
                charset.spark_name()
            )
        };
        Ok(match self.function {
            Function::Encode => {
                let (s, cs) = (text(0)?, text(1)?);
                let mut out = BinaryBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    if s.is_null(i) || cs.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let charset = Charset::named(cs.value(i), "encode")?;
                    match charset.encode(s.value(i)) {
                        Some(b) => out.append_value(b),
                        None => return malformed("encode", charset),
                    }
                }
                Arc::new(out.finish())
            }
            Function::Decode => {
                let (b, cs) = (bytes(0)?, text(1)?);
                let mut out = StringBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    if b.is_null(i) || cs.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let charset = Charset::named(cs.value(i), "decode")?;
                    match charset.decode(b.value(i)) {
                        Some(s) => out.append_value(s),
                        None => return malformed("decode", charset),
                    }
                }
                Arc::new(out.finish())
            }
            Function::ToBinary { try_ } => {
                let s = text(0)?;
                let format = if columns.len() > 1 { Some(text(1)?) } else { None };
                let mut out = BinaryBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    let fmt = match &format {
                        Some(f) if f.is_null(i) => None,
                        Some(f) => Some(f.value(i).to_ascii_lowercase()),
                        None => Some("hex".to_string()),
                    };
                    let (Some(fmt), false) = (fmt, s.is_null(i)) else {
                        out.append_null();
                        continue;
                    };
                    let v = s.value(i);
                    let value = match fmt.as_str() {
                        "hex" => unhex(v),
                        "utf-8" | "utf8" => Some(v.as_bytes().to_vec()),
                        "base64" => base64::engine::general_purpose::STANDARD.decode(v).ok(),
                        // An unknown format is NULL for `try_to_binary` (Spark 4.1.4).
                        _ if try_ => None,
                        _ => {
                            return exec_err!(
                                "[INVALID_PARAMETER_VALUE.BINARY_FORMAT] The value of parameter(s) `format` in `{}` is \
                                 invalid: expects one of binary formats 'base64', 'hex', 'utf-8', but got '{fmt}'",
                                self.name()
                            )
                        }
                    };
                    match (value, try_) {
                        (Some(b), _) => out.append_value(b),
                        (None, true) => out.append_null(),
                        (None, false) => {
                            return exec_err!(
                            "[CONVERSION_INVALID_INPUT] The value '{v}' does not represent a correct '{fmt}' binary: \
                                 use try_to_binary to get NULL instead"
                        )
                        }
                    }
                }
                Arc::new(out.finish())
            }
            Function::ValidateUtf8 { try_ } => {
                let b = if is_bytes(columns[0].data_type()) { bytes(0)? } else { return Ok(Arc::new(text(0)?)) };
                let mut out = StringBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    if b.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    match (std::str::from_utf8(b.value(i)), try_) {
                        (Ok(s), _) => out.append_value(s),
                        (Err(_), true) => out.append_null(),
                        (Err(_), false) => {
                            return exec_err!(
                            "[INVALID_UTF8_STRING] Invalid UTF8 byte sequence found in string: use try_validate_utf8 \
                                 to get NULL instead"
                        )
                        }
                    }
                }
                Arc::new(out.finish())
            }
            Function::Substr => {
                let b = bytes(0)?;
                let pos = int(1)?;
                let len = if columns.len() > 2 { Some(int(2)?) } else { None };
                let mut out = BinaryBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    let l = match &len {
                        Some(l) if l.is_null(i) => None,
                        Some(l) => Some(l.value(i)),
                        None => Some(i32::MAX as i64),
                    };
                    match (b.is_null(i) || pos.is_null(i), l) {
                        (false, Some(l)) => {
                            out.append_value(&b.value(i)[byte_range(b.value(i).len(), pos.value(i), l)])
                        }
                        _ => out.append_null(),
                    }
                }
                Arc::new(out.finish())
            }
            Function::Pad { left } => {
                let (b, len) = (bytes(0)?, int(1)?);
                let pad = if columns.len() > 2 { Some(bytes(2)?) } else { None };
                let mut out = BinaryBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    let pad = match &pad {
                        Some(p) if p.is_null(i) => None,
                        Some(p) => Some(p.value(i)),
                        None => Some(&[0u8][..]),
                    };
                    match (b.is_null(i) || len.is_null(i), pad) {
                        (false, Some(pad)) => out.append_value(padded(b.value(i), len.value(i), pad, left)),
                        _ => out.append_null(),
                    }
                }
                Arc::new(out.finish())
            }
            Function::Overlay => {
                let (input, replace, pos) = (bytes(0)?, bytes(1)?, int(2)?);
                let len = if columns.len() > 3 { Some(int(3)?) } else { None };
                let mut out = BinaryBuilder::with_capacity(n, n * 8);
                for i in 0..n {
                    let len = match &len {
                        Some(l) if l.is_null(i) => None,
                        Some(l) => Some(l.value(i)),
                        None => Some(-1),
                    };
                    match (input.is_null(i) || replace.is_null(i) || pos.is_null(i), len) {
                        (false, Some(len)) => {
                            out.append_value(overlaid(input.value(i), replace.value(i), pos.value(i), len))
                        }
                        _ => out.append_null(),
                    }
                }
                Arc::new(out.finish())
            }
            Function::Length { .. } | Function::Match(_) => {
                return exec_err!("internal error: {} is computed over the whole batch", self.name())
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_encode_and_decode_as_javas() {
        assert_eq!(Charset::Utf16.encode("a").unwrap(), vec![0xFE, 0xFF, 0, 0x61]);
        assert_eq!(Charset::Utf16Le.encode("a").unwrap(), vec![0x61, 0]);
        assert_eq!(Charset::Utf32.encode("a").unwrap(), vec![0, 0, 0, 0x61]);
        assert_eq!(Charset::Ascii.encode("é"), None);
        assert_eq!(Charset::Latin1.encode("é").unwrap(), vec![0xE9]);
        assert_eq!(Charset::Utf16.decode(&[0xFF, 0xFE, 0x61, 0]).unwrap(), "a");
        assert_eq!(Charset::Utf16.decode(&[0, 0x61]).unwrap(), "a");
        assert_eq!(Charset::Utf8.decode(&[0x80]), None);
        assert_eq!(Charset::Utf16Be.decode(&[0xD8, 0x00]), None, "an unpaired surrogate");
    }

    #[test]
    fn substrings_of_bytes_count_as_sparks() {
        assert_eq!(byte_range(5, 2, 2), 1..3);
        assert_eq!(byte_range(5, 0, 2), 0..2);
        assert_eq!(byte_range(5, -2, 10), 3..5);
        assert_eq!(byte_range(5, -7, 3), 0..1);
        assert_eq!(byte_range(5, 6, 1), 0..0);
        assert_eq!(byte_range(5, 1, -1), 0..0);
    }

    #[test]
    fn hex_digits_read_as_sparks_unhex() {
        assert_eq!(unhex("abc").unwrap(), vec![0x0A, 0xBC]);
        assert_eq!(unhex("6162").unwrap(), b"ab".to_vec());
        assert_eq!(unhex("6g"), None);
    }
}
