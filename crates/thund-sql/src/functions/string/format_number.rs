//! Spark's `format_number(x, d)` and `format_number(x, pattern)`: a number as Java's
//! `DecimalFormat` writes it in the US locale.
//!
//! `d` decimal places use the pattern `#,###,###,###,###,###,##0.000…` (a negative `d` gives
//! NULL); a pattern of `#`, `0`, `,` and `.` is read as `DecimalFormat` reads one (the least and
//! most fraction digits, the least integer digits, the grouping size after the last `,`; an empty
//! pattern is the default without decimals). Other pattern characters (prefixes, `%`, `E`, `;`)
//! run on the Spark backend.
//!
//! Rounding is `DecimalFormat`'s half-even on the number's decimal digits: a DECIMAL's own, a
//! DOUBLE's shortest (`Double.toString`'s) — except where those end exactly on the half, where
//! Java looks at the double's exact binary value (`format_number(1.015D, 2)` is `1.01`, the
//! double being just below 1.015). A negative number that rounds to zero keeps its sign (`-0`).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, StringBuilder};
use arrow::datatypes::{DataType, Decimal128Type, Float64Type, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(FormatNumber { signature: Signature::any(2, Volatility::Immutable) }));
}

/// `DecimalFormat`'s settings read from a pattern.
#[derive(Debug, Clone, PartialEq)]
struct Pattern {
    min_int: usize,
    min_frac: usize,
    max_frac: usize,
    /// Digits per group, `None` without grouping.
    grouping: Option<usize>,
}

const DEFAULT: &str = "#,###,###,###,###,###,##0";

/// A pattern as `DecimalFormat.applyPattern` reads it, or why it is not read natively.
fn read_pattern(p: &str) -> std::result::Result<Pattern, String> {
    let p = if p.is_empty() { DEFAULT } else { p };
    if let Some(c) = p.chars().find(|c| !matches!(c, '#' | '0' | ',' | '.')) {
        return Err(format!("the pattern character `{c}`"));
    }
    let (int, frac) = p.split_once('.').unwrap_or((p, ""));
    if frac.contains(['.', ',']) {
        return Err("a `,` or second `.` after the point".into());
    }
    let grouping = int.rfind(',').map(|i| int[i + 1..].chars().filter(|c| *c != ',').count()).filter(|g| *g > 0);
    // After a `0`, a `#` in the integer part is malformed for Java; so is a `0` before a `#` in
    // the fraction.
    if int.trim_start_matches(['#', ',']).contains('#') || frac.trim_end_matches('#').contains('#') {
        return Err("a malformed pattern".into());
    }
    let mut min_int = int.chars().filter(|c| *c == '0').count();
    let mut min_frac = frac.chars().filter(|c| *c == '0').count();
    // Java reads a pattern without a `0` but with a point as if its digit next to the point
    // were one: `##.###` as `#0.###`, `.###` as `.0##`.
    if min_int + min_frac == 0 && p.contains('.') {
        if int.contains('#') {
            min_int = 1;
        } else {
            min_frac = 1;
        }
    }
    Ok(Pattern { min_int, min_frac, max_frac: frac.len(), grouping })
}

fn decimals_pattern(d: i64) -> Pattern {
    let d = d as usize;
    Pattern { min_int: 1, min_frac: d, max_frac: d, grouping: Some(3) }
}

/// A number's decimal digits: `digits × 10^-scale`, and how a half is to be broken where the
/// digits end exactly on one (`Some(ordering)` of the exact value against those digits).
struct Digits {
    negative: bool,
    digits: Vec<u8>,
    scale: i64,
    exact: Option<String>,
}

fn of_integer(v: i128) -> Digits {
    Digits {
        negative: v < 0,
        digits: v.unsigned_abs().to_string().bytes().map(|b| b - b'0').collect(),
        scale: 0,
        exact: None,
    }
}

fn of_decimal(v: i128, scale: i8) -> Digits {
    Digits { scale: i64::from(scale), ..of_integer(v) }
}

fn of_double(v: f64) -> Option<Digits> {
    if !v.is_finite() {
        return None;
    }
    let sci = format!("{:e}", v.abs());
    let (mantissa, exponent) = sci.split_once('e')?;
    let exponent: i64 = exponent.parse().ok()?;
    let digits: Vec<u8> = mantissa.bytes().filter(u8::is_ascii_digit).map(|b| b - b'0').collect();
    let scale = digits.len() as i64 - 1 - exponent;
    // The exact binary value, all its digits (a double's expansion ends within 1,074 places).
    let exact = format!("{:.1074}", v.abs());
    Some(Digits { negative: v.is_sign_negative(), digits, scale, exact: Some(exact) })
}

/// `d` rounded half-even to `places` fraction digits: (integer digits, fraction digits).
fn rounded(d: &Digits, places: usize) -> (Vec<u8>, Vec<u8>) {
    // Align to exactly `places` fraction digits.
    let mut digits = d.digits.clone();
    let keep = places as i64;
    if d.scale <= keep {
        digits.extend(std::iter::repeat_n(0, (keep - d.scale) as usize));
    } else {
        let drop = (d.scale - keep) as usize;
        let (kept, dropped) = if drop >= digits.len() {
            let mut padded = vec![0u8; drop - digits.len() + 1];
            padded.extend_from_slice(&digits);
            let split = padded.len() - drop;
            (padded[..split].to_vec(), padded[split..].to_vec())
        } else {
            let split = digits.len() - drop;
            (digits[..split].to_vec(), digits[split..].to_vec())
        };
        let first = dropped[0];
        let rest_zero = dropped[1..].iter().all(|x| *x == 0);
        let up = match (first, rest_zero) {
            (5, true) => {
                // Exactly half by these digits: the exact value breaks the tie when it differs.
                let tie = tie_text(&kept, &dropped, d.scale);
                match d.exact.as_deref().map(|x| compare_decimal(x, &tie)) {
                    Some(std::cmp::Ordering::Greater) => true,
                    Some(std::cmp::Ordering::Less) => false,
                    _ => kept.last().is_some_and(|l| l % 2 == 1),
                }
            }
            (f, _) => f > 5 || (f == 5 && !rest_zero),
        };
        digits = kept;
        if up {
            let mut i = digits.len();
            loop {
                if i == 0 {
                    digits.insert(0, 1);
                    break;
                }
                i -= 1;
                if digits[i] == 9 {
                    digits[i] = 0;
                } else {
                    digits[i] += 1;
                    break;
                }
            }
        }
    }
    let split = digits.len() - places.min(digits.len());
    let (int, frac) = digits.split_at(split);
    let mut frac = frac.to_vec();
    while frac.len() < places {
        frac.insert(0, 0);
    }
    let first_nonzero = int.iter().position(|x| *x != 0).unwrap_or(int.len());
    (int[first_nonzero..].to_vec(), frac)
}

/// The decimal text of `kept` followed by `dropped` at `scale`.
fn tie_text(kept: &[u8], dropped: &[u8], scale: i64) -> String {
    let all: String = kept.iter().chain(dropped).map(|d| char::from(b'0' + d)).collect();
    let scale = scale.max(0) as usize;
    let padded = if all.len() <= scale { format!("{}{all}", "0".repeat(scale + 1 - all.len())) } else { all };
    let (int, frac) = padded.split_at(padded.len() - scale);
    format!("{int}.{frac}")
}

/// Two non-negative decimal texts compared by value.
fn compare_decimal(a: &str, b: &str) -> std::cmp::Ordering {
    let split = |s: &str| {
        let (i, f) = s.split_once('.').unwrap_or((s, ""));
        (i.trim_start_matches('0').to_string(), f.trim_end_matches('0').to_string())
    };
    let ((ai, af), (bi, bf)) = (split(a), split(b));
    ai.len().cmp(&bi.len()).then_with(|| ai.cmp(&bi)).then_with(|| af.cmp(&bf))
}

/// `d` written by `p`.
fn format(d: &Digits, p: &Pattern) -> String {
    let (int, frac) = rounded(d, p.max_frac);
    let mut frac = frac;
    while frac.len() > p.min_frac && frac.last() == Some(&0) {
        frac.pop();
    }
    let mut int: Vec<u8> = int;
    while int.len() < p.min_int {
        int.insert(0, 0);
    }
    // No digit at all: Java writes a zero.
    if int.is_empty() && frac.is_empty() {
        int.push(0);
    }
    let mut out = String::new();
    if d.negative {
        out.push('-');
    }
    for (i, x) in int.iter().enumerate() {
        let left = int.len() - i;
        if i > 0 && p.grouping.is_some_and(|g| left.is_multiple_of(g)) {
            out.push(',');
        }
        out.push(char::from(b'0' + x));
    }
    if !frac.is_empty() {
        out.push('.');
        out.extend(frac.iter().map(|x| char::from(b'0' + x)));
    }
    out
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct FormatNumber {
    signature: Signature,
}

impl ScalarUDFImpl for FormatNumber {
    fn name(&self) -> &str {
        "format_number"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let number = args[0].is_numeric() || args[0] == DataType::Null;
        let format = args[1].is_integer()
            || args[1].is_null()
            || matches!(args[1], DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
        if !number || !format {
            return plan_err!(
                "format_number({}, {}): it takes a number and a number of decimal places or a pattern",
                crate::types::spark_type_name(&args[0]),
                crate::types::spark_type_name(&args[1])
            );
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let values = args.args[0].to_array(n)?;
        let formats = args.args[1].to_array(n)?;
        // Each column converted once: integers to BIGINT, floating point to DOUBLE, patterns to
        // text (a DECIMAL is read as it is).
        let wide = match values.data_type() {
            DataType::Float32 | DataType::Float64 => arrow::compute::cast(&values, &DataType::Float64)?,
            t if t.is_integer() => arrow::compute::cast(&values, &DataType::Int64)?,
            _ => Arc::clone(&values),
        };
        let places =
            formats.data_type().is_integer().then(|| arrow::compute::cast(&formats, &DataType::Int64)).transpose()?;
        let texts = match places {
            Some(_) => None,
            None => Some(crate::columnar::utf8(&formats)?),
        };
        // A pattern is read once per distinct text (most often a constant).
        let mut cache: Option<(String, Pattern)> = None;
        let pattern_at = |i: usize, cache: &mut Option<(String, Pattern)>| -> Result<Option<Pattern>> {
            if formats.is_null(i) {
                return Ok(None);
            }
            if let Some(places) = &places {
                let d = places.as_primitive::<Int64Type>().value(i);
                return Ok((d >= 0).then(|| decimals_pattern(d)));
            }
            let text = texts.as_ref().map_or("", |t| t.value(i)).to_string();
            if let Some((t, p)) = cache.as_ref() {
                if *t == text {
                    return Ok(Some(p.clone()));
                }
            }
            match read_pattern(&text) {
                Ok(p) => {
                    *cache = Some((text, p.clone()));
                    Ok(Some(p))
                }
                Err(why) => exec_err!("format_number with the pattern '{text}' runs on the Spark backend ({why})"),
            }
        };
        let mut out = StringBuilder::new();
        for i in 0..n {
            if values.is_null(i) {
                out.append_null();
                continue;
            }
            let Some(p) = pattern_at(i, &mut cache)? else {
                out.append_null();
                continue;
            };
            let digits = match values.data_type() {
                DataType::Decimal128(_, s) => Some(of_decimal(values.as_primitive::<Decimal128Type>().value(i), *s)),
                DataType::Float32 | DataType::Float64 => of_double(wide.as_primitive::<Float64Type>().value(i)),
                t if t.is_integer() => Some(of_integer(i128::from(wide.as_primitive::<Int64Type>().value(i)))),
                other => return exec_err!("format_number of {other}"),
            };
            match digits {
                Some(d) => out.append_value(format(&d, &p)),
                // NaN and the infinities: Java's symbols.
                None => {
                    let v = wide.as_primitive::<Float64Type>().value(i);
                    out.append_value(if v.is_nan() {
                        "NaN"
                    } else if v > 0.0 {
                        "\u{221E}"
                    } else {
                        "-\u{221E}"
                    });
                }
            }
        }
        let result: ArrayRef = Arc::new(out.finish());
        if scalar {
            return Ok(ColumnarValue::Scalar(ScalarValue::try_from_array(&result, 0)?));
        }
        Ok(ColumnarValue::Array(result))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn double(v: f64, p: &str) -> String {
        format(&of_double(v).unwrap(), &read_pattern(p).unwrap())
    }

    #[test]
    fn numbers_are_written_as_javas_decimal_format() {
        // Each as Spark 4.1.4 answers format_number.
        assert_eq!(format(&of_decimal(12332123456, 6), &decimals_pattern(4)), "12,332.1235");
        assert_eq!(format(&of_decimal(12332123456, 6), &read_pattern("##################.###").unwrap()), "12332.123");
        assert_eq!(format(&of_decimal(-5, 1), &decimals_pattern(0)), "-0");
        assert_eq!(format(&of_decimal(15, 1), &decimals_pattern(0)), "2");
        assert_eq!(format(&of_decimal(25, 1), &decimals_pattern(0)), "2");
        assert_eq!(double(1234567.891, "#,###,###,###,###,###,##0.00"), "1,234,567.89");
        assert_eq!(double(1e20, "#,##0.0"), "100,000,000,000,000,000,000.0");
        assert_eq!(format(&of_integer(12345), &read_pattern("#,##0.00").unwrap()), "12,345.00");
        assert_eq!(format(&of_decimal(125, 3), &read_pattern("0.00").unwrap()), "0.12");
        assert_eq!(format(&of_decimal(12345, 1), &read_pattern("").unwrap()), "1,234");
        assert_eq!(double(12.5, "0"), "12");
    }

    #[test]
    fn a_double_on_the_half_is_rounded_by_its_exact_value() {
        assert_eq!(double(1.015, "0.00"), "1.01");
        assert_eq!(double(0.125, "0.00"), "0.12");
        assert_eq!(double(2.675, "0.00"), "2.67");
        assert_eq!(double(0.5, "#.##"), "0.5");
        assert_eq!(double(0.001, "#.##"), "0");
        assert_eq!(double(-0.0, "#,##0.0"), "-0.0");
    }

    #[test]
    fn other_patterns_are_not_read() {
        assert!(read_pattern("0.00%").is_err());
        assert!(read_pattern("0.0E0").is_err());
    }
}
