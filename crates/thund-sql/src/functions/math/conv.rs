//! Spark's `conv(num, from_base, to_base)`: a number's digits from one base to another.
//!
//! A port of Spark's `NumberConverter`, step by step, because its corners are its own: the text
//! is trimmed of spaces and read up to its first character that is not a digit of the base
//! (`'1.5'` is 1, `'x'` is 0); the value is an unsigned 64-bit number, so `'-1'` to base 16 is
//! `FFFFFFFFFFFFFFFF`, and a negative `to_base` writes it signed (`-1`); a base outside 2..36
//! (either sign for `to_base`) or an empty text gives NULL. An overflow while reading fails
//! in ANSI mode (`[ARITHMETIC_OVERFLOW]`) and reads as -1 without it; Spark's check compares
//! signed values, so a value past 2^63 read further wraps silently, and so it does here.

use std::sync::Arc;

use arrow::array::{Array, AsArray, StringBuilder};
use arrow::datatypes::{DataType, Int32Type};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

/// Registers `conv` as in ANSI mode (`lenient` is its form without).
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(udf(true));
}

/// `conv` without ANSI mode: an overflow reads as -1.
pub(crate) fn lenient() -> Arc<ScalarUDF> {
    Arc::new(udf(false))
}

fn udf(ansi: bool) -> ScalarUDF {
    ScalarUDF::from(Conv { ansi, signature: Signature::any(3, Volatility::Immutable) })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Conv {
    ansi: bool,
    signature: Signature,
}

/// Overflow while reading the digits.
struct Overflow;

/// `text` in base `from` written in base `to`, as Spark's `NumberConverter.convert`.
fn convert(text: &str, from: i32, to: i32, ansi: bool) -> std::result::Result<Option<String>, Overflow> {
    if !(2..=36).contains(&from) || !(2..=36).contains(&to.abs()) {
        return Ok(None);
    }
    let text = text.trim_matches(' ');
    if text.is_empty() {
        return Ok(None);
    }
    let (mut negative, digits) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    // Java's `encode`: unsigned arithmetic in a signed long, checked as Spark checks it.
    let radix = i64::from(from);
    let bound = ((-1 - radix) as u64 / radix as u64) as i64;
    let mut v: i64 = 0;
    for b in digits.bytes() {
        let Some(d) = char::from(b).to_digit(from as u32).filter(|_| b.is_ascii()) else { break };
        let d = i64::from(d);
        if v >= bound && (((-1 - d) as u64 / radix as u64) as i64) < v {
            if ansi {
                return Err(Overflow);
            }
            v = -1;
            break;
        }
        v = v.wrapping_mul(radix).wrapping_add(d);
    }
    if negative && to > 0 {
        v = if v < 0 { -1 } else { -v };
    }
    if to < 0 && v < 0 {
        v = v.wrapping_neg();
        negative = true;
    }
    // Java's `decode`: the digits of `v`, unsigned.
    let base = u64::from(to.unsigned_abs());
    let mut rest = v as u64;
    let mut out = Vec::new();
    while rest != 0 {
        let digit = (rest % base) as u32;
        // A remainder of `base` (2 to 36) is one of its digits.
        out.extend(char::from_digit(digit, base as u32).map(|c| c.to_ascii_uppercase()));
        rest /= base;
    }
    if out.is_empty() {
        out.push('0');
    }
    if negative && to < 0 {
        out.push('-');
    }
    Ok(Some(out.iter().rev().collect()))
}

impl ScalarUDFImpl for Conv {
    fn name(&self) -> &str {
        "conv"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let number = |t: &DataType| t.is_string() || t.is_integer() || t == &DataType::Null;
        let base = |t: &DataType| t.is_integer() || t == &DataType::Null;
        if !(number(&args[0]) && base(&args[1]) && base(&args[2])) {
            return plan_err!(
                "conv of {} runs on the Spark backend (it takes a text or an integer and two integer bases here)",
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let text = crate::columnar::utf8(&args.args[0].to_array(n)?)?;
        let base = |i: usize| -> Result<arrow::array::Int32Array> {
            Ok(arrow::compute::cast(&args.args[i].to_array(n)?, &DataType::Int32)?.as_primitive::<Int32Type>().clone())
        };
        let (from, to) = (base(1)?, base(2)?);
        let mut out = StringBuilder::with_capacity(n, n * 8);
        for i in 0..n {
            if text.is_null(i) || from.is_null(i) || to.is_null(i) {
                out.append_null();
                continue;
            }
            match convert(text.value(i), from.value(i), to.value(i), self.ansi) {
                Ok(v) => out.append_option(v),
                Err(Overflow) => {
                    return exec_err!(
                        "[ARITHMETIC_OVERFLOW] overflow in conv('{}', {}, {}): {}",
                        text.value(i),
                        from.value(i),
                        to.value(i),
                        crate::modes::ansi_hint(None)
                    )
                }
            }
        }
        crate::columnar::columnar(Arc::new(out.finish()), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn conv(text: &str, from: i32, to: i32) -> Option<String> {
        convert(text, from, to, false).ok().flatten()
    }

    #[test]
    fn converts_as_sparks_number_converter() {
        // Spark 4.1.4's answers.
        assert_eq!(conv("100", 2, 10).as_deref(), Some("4"));
        assert_eq!(conv("-10", 16, -10).as_deref(), Some("-16"));
        assert_eq!(conv("ff", 16, 2).as_deref(), Some("11111111"));
        assert_eq!(conv("-1", 10, 16).as_deref(), Some("FFFFFFFFFFFFFFFF"));
        assert_eq!(conv("-1", 10, -16).as_deref(), Some("-1"));
        assert_eq!(conv("zz", 36, 10).as_deref(), Some("1295"));
        assert_eq!(conv("12x", 10, 10).as_deref(), Some("12"));
        assert_eq!(conv("x", 10, 10).as_deref(), Some("0"));
        assert_eq!(conv("", 10, 10), None);
        assert_eq!(conv(" 10", 10, 2).as_deref(), Some("1010"));
        assert_eq!(conv("18446744073709551615", 10, 16).as_deref(), Some("FFFFFFFFFFFFFFFF"));
        assert_eq!(conv("18446744073709551616", 10, 16).as_deref(), Some("FFFFFFFFFFFFFFFF"));
        assert_eq!(conv("-18446744073709551616", 10, -10).as_deref(), Some("-1"));
        assert_eq!(conv("-255", 10, 16).as_deref(), Some("FFFFFFFFFFFFFF01"));
        assert_eq!(conv("7fffffffffffffff", 16, -10).as_deref(), Some("9223372036854775807"));
        assert_eq!(conv("8000000000000000", 16, -10).as_deref(), Some("-9223372036854775808"));
        assert_eq!(conv("100", 1, 10), None);
        assert_eq!(conv("100", 37, 10), None);
        assert!(convert("18446744073709551616", 10, 16, true).is_err());
    }
}
