//! Spark's number formats (`ToNumberParser`): `to_number(text, format)` and `try_to_number`
//! read a text as a DECIMAL, `to_char(number, format)` (`to_varchar`) writes one.
//!
//! A format is made of `0` and `9` (digits: a `0` before the point demands its digit, a `9`
//! takes at most one), `.` or `D` (the decimal point), `,` or `G` (a thousands separator), `$`,
//! `S` (an optional `+` or `-`), `MI` (an optional `-`) and `PR` (a negative number in angle
//! brackets), in the order `[MI|S] [$] digits [. digits] [$] [PR|MI|S]`. Its digits give the
//! DECIMAL's precision and scale. The format is checked when the query is planned, with
//! Spark's reasons, and must be a constant (Spark's rule too).
//!
//! The reading and the writing follow Spark's parser step by step (its digit groups read from
//! the right, so leading optional groups may be absent; the spaces and zeros of a written
//! number; `#`s for a number with more digits than the format). Spark reads Java's digits and
//! whitespace; a text holding a digit of another script is refused rather than read otherwise.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Decimal128Builder, StringBuilder};
use arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for try_ in [false, true] {
        ctx.register_udf(ScalarUDF::from(ToNumber { try_, signature: Signature::any(2, Volatility::Immutable) }));
    }
}

/// One element of a format.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    /// Exactly this many digits (`0…`, before the point).
    Exactly(usize),
    /// At most this many digits.
    AtMost(usize),
    Point,
    Thousands,
    /// Digits and thousands separators, right to left (as Spark keeps them).
    Groups {
        tokens: Vec<Token>,
    },
    Dollar,
    PlusOrMinus,
    Minus,
    OpenAngle,
    CloseAngle,
    Invalid(char),
}

impl Token {
    fn digits(&self) -> usize {
        match self {
            Token::Exactly(n) | Token::AtMost(n) => *n,
            Token::Groups { tokens } => tokens.iter().map(Token::digits).sum(),
            _ => 0,
        }
    }

    fn is_digits(&self) -> bool {
        matches!(self, Token::Exactly(_) | Token::AtMost(_))
    }
}

/// A parsed, checked number format.
#[derive(Debug, Clone)]
pub(crate) struct NumberFormat {
    text: String,
    tokens: Vec<Token>,
    precision: usize,
    scale: usize,
}

impl NumberFormat {
    /// The format `text`, or Spark's reason it is not one.
    pub(crate) fn new(text: &str) -> std::result::Result<NumberFormat, String> {
        let chars: Vec<char> = text.chars().collect();
        let mut raw: Vec<Token> = Vec::new();
        let (mut i, mut after_point) = (0, false);
        while i < chars.len() {
            match chars[i] {
                c @ ('0' | '9') => {
                    let start = i;
                    i += 1;
                    while i < chars.len() && matches!(chars[i], '0' | '9') {
                        i += 1;
                    }
                    raw.push(if c == '0' && !after_point {
                        Token::Exactly(i - start)
                    } else {
                        Token::AtMost(i - start)
                    });
                    continue;
                }
                '.' | 'D' => {
                    raw.push(Token::Point);
                    after_point = true;
                }
                ',' | 'G' => raw.push(Token::Thousands),
                '$' => raw.push(Token::Dollar),
                'S' => raw.push(Token::PlusOrMinus),
                'M' if chars.get(i + 1) == Some(&'I') => {
                    raw.push(Token::Minus);
                    i += 1;
                }
                'P' if chars.get(i + 1) == Some(&'R') => {
                    raw.insert(0, Token::OpenAngle);
                    raw.push(Token::CloseAngle);
                    i += 1;
                }
                c => raw.push(Token::Invalid(c)),
            }
            i += 1;
        }
        // Consecutive digits and separators make one group, kept right to left.
        let mut tokens = Vec::new();
        let mut group: Vec<Token> = Vec::new();
        for t in raw {
            if t.is_digits() || t == Token::Thousands {
                group.push(t);
                continue;
            }
            if !group.is_empty() {
                group.reverse();
                tokens.push(Token::Groups { tokens: std::mem::take(&mut group) });
            }
            tokens.push(t);
        }
        if !group.is_empty() {
            group.reverse();
            tokens.push(Token::Groups { tokens: group });
        }
        let precision = tokens.iter().map(Token::digits).sum();
        let scale = match tokens.iter().position(|t| *t == Token::Point) {
            Some(p) => tokens[p..].iter().map(Token::digits).sum(),
            None => 0,
        };
        let format = NumberFormat { text: text.to_string(), tokens, precision, scale };
        format.check()?;
        Ok(format)
    }

    /// Spark's `checkInputDataTypes`.
    fn check(&self) -> std::result::Result<(), String> {
        let why = |sub: &str| Err(format!("[INVALID_FORMAT.{sub}] The format is invalid: '{}'", self.text));
        if self.text.is_empty() {
            return why("EMPTY");
        }
        let is_group = |t: &Token| matches!(t, Token::Groups { .. });
        let first_digit = self.tokens.iter().position(is_group);
        let Some(first_digit) = first_digit else { return why("WRONG_NUM_DIGIT") };
        let dollar = self.tokens.iter().position(|t| *t == Token::Dollar);
        let point = self.tokens.iter().position(|t| *t == Token::Point);
        if dollar.is_some_and(|d| first_digit < d) {
            return why("CUR_MUST_BEFORE_DIGIT");
        }
        if let (Some(p), Some(d)) = (point, dollar) {
            if p < d {
                return why("CUR_MUST_BEFORE_DEC");
            }
        }
        for (i, t) in self.tokens.iter().enumerate() {
            let Token::Groups { tokens } = t else { continue };
            let before_point = point.is_none_or(|p| i < p);
            let separators = tokens.iter().filter(|t| **t == Token::Thousands).count();
            if before_point {
                let bad = tokens.iter().enumerate().any(|(j, t)| {
                    *t == Token::Thousands
                        && (j == 0
                            || j == tokens.len() - 1
                            || tokens[j - 1] == Token::Thousands
                            || tokens[j + 1] == Token::Thousands)
                });
                if bad {
                    return why("CONT_THOUSANDS_SEPS");
                }
            } else if separators > 0 {
                return why("THOUSANDS_SEPS_MUST_BEFORE_DEC");
            }
        }
        for token in [Token::Point, Token::PlusOrMinus, Token::Minus, Token::Dollar, Token::CloseAngle] {
            if self.tokens.iter().filter(|t| **t == token).count() > 1 {
                return why("WRONG_NUM_TOKEN");
            }
        }
        // [PR<] [MI|S] [$] digits [.] digits [$] [PR>|MI|S]
        let allowed: [&[Token]; 8] = [
            &[Token::OpenAngle],
            &[Token::Minus, Token::PlusOrMinus],
            &[Token::Dollar],
            &[],
            &[Token::Point],
            &[],
            &[Token::Dollar],
            &[Token::Minus, Token::PlusOrMinus, Token::CloseAngle],
        ];
        let mut at = 0;
        for slot in allowed {
            let Some(t) = self.tokens.get(at) else { break };
            if (slot.is_empty() && is_group(t)) || slot.contains(t) {
                at += 1;
            }
        }
        if at < self.tokens.len() {
            return why("UNEXPECTED_TOKEN");
        }
        Ok(())
    }

    /// The DECIMAL a text reads as: its unscaled value at `scale`, or `None` where the text does
    /// not match the format. A digit of another script is an error.
    fn parse(&self, input: &str) -> Result<Option<i128>> {
        let chars: Vec<char> = input.chars().collect();
        if chars.iter().any(|c| !c.is_ascii_digit() && c.is_numeric()) {
            return exec_err!("to_number of a text with digits other than 0-9 runs on the Spark backend");
        }
        let (mut before, mut after) = (String::new(), String::new());
        let (mut point, mut open, mut close, mut negate) = (false, false, false, false);
        let mut at = 0;
        for token in &self.tokens {
            let c = chars.get(at).copied();
            match token {
                Token::Groups { tokens } => {
                    let digits: Vec<&Token> = tokens.iter().filter(|t| t.is_digits()).collect();
                    let mut sizes: Vec<usize> = Vec::new();
                    let mut current = 0;
                    loop {
                        let Some(&c) = chars.get(at) else {
                            sizes.insert(0, current);
                            break;
                        };
                        if java_whitespace(c) {
                        } else if c.is_ascii_digit() {
                            current += 1;
                            if point {
                                after.push(c)
                            } else {
                                before.push(c)
                            }
                        } else if c == ',' {
                            sizes.insert(0, current);
                            current = 0;
                        } else {
                            sizes.insert(0, current);
                            break;
                        }
                        at += 1;
                    }
                    if sizes.len() > digits.len() {
                        return Ok(None);
                    }
                    for (i, expected) in digits.iter().enumerate() {
                        let actual = sizes.get(i).copied().unwrap_or(0);
                        match expected {
                            Token::Exactly(n) if actual != *n => return Ok(None),
                            Token::AtMost(n) if actual > *n => return Ok(None),
                            _ => {}
                        }
                    }
                }
                Token::Point => {
                    if c == Some('.') {
                        point = true;
                        at += 1;
                    }
                }
                Token::Dollar => match c {
                    Some('$') => at += 1,
                    Some(_) => return Ok(None),
                    None => {}
                },
                Token::PlusOrMinus => match c {
                    Some('+') => at += 1,
                    Some('-') => {
                        negate = !negate;
                        at += 1;
                    }
                    _ => {}
                },
                Token::Minus => {
                    if c == Some('-') {
                        negate = !negate;
                        at += 1;
                    }
                }
                Token::OpenAngle => {
                    if c == Some('<') {
                        if open {
                            return Ok(None);
                        }
                        open = true;
                        at += 1;
                    }
                }
                Token::CloseAngle => {
                    if c == Some('>') {
                        if !open {
                            return Ok(None);
                        }
                        close = true;
                        negate = !negate;
                        at += 1;
                    }
                }
                Token::Exactly(_) | Token::AtMost(_) | Token::Thousands | Token::Invalid(_) => {}
            }
        }
        if at < chars.len() || open != close || (before.is_empty() && after.is_empty()) {
            return Ok(None);
        }
        while after.len() < self.scale {
            after.push('0');
        }
        let digits = format!("{before}{after}");
        let Ok(value) = (if digits.is_empty() { Ok(0) } else { digits.parse::<i128>() }) else { return Ok(None) };
        Ok(Some(if negate { -value } else { value }))
    }

    /// A DECIMAL (its unscaled value at `scale`) written in the format, or `None` where Spark
    /// fails.
    pub(crate) fn format(&self, unscaled: i128, scale: u32) -> Option<String> {
        let negative = unscaled < 0;
        let digits = unscaled.unsigned_abs().to_string();
        let scale = scale as usize;
        let (int_part, frac_part) = if digits.len() > scale {
            (digits[..digits.len() - scale].to_string(), digits[digits.len() - scale..].to_string())
        } else {
            ("0".to_string(), format!("{}{digits}", "0".repeat(scale - digits.len())))
        };
        let mut before: String = int_part.trim_start_matches('0').to_string();
        let mut after: String = frac_part.trim_end_matches('0').to_string();
        let (mut before_digits, mut after_digits, mut reached) = (0, 0, false);
        for t in &self.tokens {
            match t {
                Token::Groups { .. } if !reached => before_digits += t.digits(),
                Token::Groups { .. } => after_digits += t.digits(),
                Token::Point => reached = true,
                _ => {}
            }
        }
        if before_digits < before.len() || after_digits < after.len() {
            before = "#".repeat(before_digits);
            after = "#".repeat(after_digits);
        }
        let before: Vec<char> = format!("{}{before}", " ".repeat(before_digits - before.len())).chars().collect();
        let after: Vec<char> = format!("{after}{}", "0".repeat(after_digits - after.len())).chars().collect();
        let (mut bi, mut ai) = (0, 0);
        let mut out: Vec<char> = Vec::new();
        let mut reached = false;
        for t in &self.tokens {
            match t {
                Token::Groups { tokens } => {
                    for g in tokens.iter().rev() {
                        match g {
                            Token::Exactly(n) | Token::AtMost(n) if !reached => {
                                for _ in 0..*n {
                                    match before[bi] {
                                        ' ' if matches!(g, Token::Exactly(_)) => out.push('0'),
                                        ' ' => push_space(&mut out),
                                        c => out.push(c),
                                    }
                                    bi += 1;
                                }
                            }
                            Token::Exactly(n) | Token::AtMost(n) => {
                                for _ in 0..*n {
                                    out.push(after[ai]);
                                    ai += 1;
                                }
                            }
                            _ => {
                                if out.last().is_some_and(|c| c.is_ascii_digit()) {
                                    out.push(',');
                                } else {
                                    push_space(&mut out);
                                }
                            }
                        }
                    }
                }
                Token::Point => {
                    if let Some(last @ ' ') = out.last_mut() {
                        *last = '0';
                    }
                    out.push('.');
                    reached = true;
                }
                Token::Dollar => out.push('$'),
                Token::PlusOrMinus => {
                    strip_lone_point(&mut out);
                    push_char(&mut out, if negative { '-' } else { '+' });
                }
                Token::Minus => {
                    if negative {
                        strip_lone_point(&mut out);
                        push_char(&mut out, '-');
                    } else {
                        out.push(' ');
                    }
                }
                Token::OpenAngle => {
                    if negative {
                        out.push('<');
                    }
                }
                Token::CloseAngle => {
                    strip_lone_point(&mut out);
                    if negative {
                        push_char(&mut out, '>');
                    } else {
                        out.extend([' ', ' ']);
                    }
                }
                Token::Exactly(_) | Token::AtMost(_) | Token::Thousands | Token::Invalid(_) => {}
            }
        }
        if bi < before.len() || ai < after.len() {
            return None;
        }
        strip_lone_point(&mut out);
        let s: String = out.into_iter().collect();
        Some(if s.is_empty() || s == "+" || s == "-" { "0".into() } else { s })
    }
}

/// Java's `Character.isWhitespace`: separators but the non-breaking ones, and the controls
/// \t \n \u000B \f \r \u001C–\u001F.
fn java_whitespace(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | '\u{1C}'..='\u{1F}')
        || (c.is_whitespace() && !matches!(c, '\u{85}' | '\u{A0}' | '\u{2007}' | '\u{202F}'))
}

/// Spark's `addCharacterCheckingTrailingSpaces`: the character moves before the spaces it follows.
fn push_char(out: &mut Vec<char>, c: char) {
    out.push(c);
    let mut i = out.len() - 1;
    while i >= 1 && out[i - 1] == ' ' && out[i] == c {
        out.swap(i - 1, i);
        i -= 1;
    }
}

/// Spark's `addSpaceCheckingTrailingCharacters`: a space moves before a sign or `<` it follows.
fn push_space(out: &mut Vec<char>) {
    out.push(' ');
    let mut i = out.len() - 1;
    while i >= 1 && matches!(out[i - 1], '+' | '-' | '<') && out[i] == ' ' {
        out.swap(i - 1, i);
        i -= 1;
    }
}

/// Spark's `stripTrailingLoneDecimalPoint`: a point with no digit after it becomes a space.
fn strip_lone_point(out: &mut [char]) {
    if let Some(i) = out.iter().position(|c| *c == '.') {
        if i == out.len() - 1 || out[i + 1] == ' ' {
            out[i] = ' ';
        }
    }
}

/// The constant format of a call, checked.
pub(crate) fn constant_format(name: &str, format: Option<&ScalarValue>) -> Result<NumberFormat> {
    let Some(text) = format.and_then(|f| f.try_as_str()).flatten() else {
        return plan_err!("{name}: the format must be a constant string");
    };
    let format = match NumberFormat::new(text) {
        Ok(f) => f,
        Err(why) => return plan_err!("{name}: {why}"),
    };
    if format.precision > 38 {
        return plan_err!("{name}: a format of more than 38 digits runs on the Spark backend");
    }
    Ok(format)
}

/// `to_number(text, format)` and `try_to_number`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct ToNumber {
    try_: bool,
    signature: Signature,
}

impl ScalarUDFImpl for ToNumber {
    fn name(&self) -> &str {
        if self.try_ {
            "try_to_number"
        } else {
            "to_number"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        plan_err!("{}: typed from its format", self.name())
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let t = args.arg_fields[0].data_type();
        if !t.is_string() && t != &DataType::Null {
            return plan_err!("{} reads a text, not {}", self.name(), crate::types::spark_type_name(t));
        }
        let format = constant_format(self.name(), args.scalar_arguments.get(1).copied().flatten())?;
        let t = DataType::Decimal128(format.precision as u8, format.scale as i8);
        Ok(Arc::new(Field::new(self.name(), t, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let format = match &args.args[1] {
            ColumnarValue::Scalar(s) => constant_format(self.name(), Some(s))?,
            ColumnarValue::Array(_) => return exec_err!("{}: the format must be a constant string", self.name()),
        };
        let text = arrow::compute::cast(&args.args[0].to_array(args.number_rows)?, &DataType::Utf8)?;
        let text = text.as_string::<i32>();
        let mut out = Decimal128Builder::with_capacity(text.len());
        for v in text.iter() {
            let Some(v) = v else {
                out.append_null();
                continue;
            };
            match (format.parse(v)?, self.try_) {
                (Some(x), _) => out.append_value(x),
                (None, true) => out.append_null(),
                (None, false) => {
                    return exec_err!(
                        "[INVALID_FORMAT.MISMATCH_INPUT] The input '{v}' does not match the format '{}': use \
                         try_to_number to get NULL instead",
                        format.text
                    )
                }
            }
        }
        let out = out.finish().with_precision_and_scale(format.precision as u8, format.scale as i8)?;
        crate::columnar::columnar(Arc::new(out), scalar)
    }
}

/// `to_char(number, format)`: each value, as an unscaled DECIMAL, written in the format.
pub(crate) fn to_char(values: &ArrayRef, format: &NumberFormat, function: &str) -> Result<ArrayRef> {
    let (decimals, scale) = match values.data_type() {
        DataType::Decimal128(_, s) => (values.as_primitive::<Decimal128Type>().clone(), *s),
        t if t.is_integer() || t == &DataType::Null => {
            let wide = arrow::compute::cast(values, &DataType::Decimal128(38, 0))?;
            (wide.as_primitive::<Decimal128Type>().clone(), 0)
        }
        t => return plan_err!("{function} of {} runs on the Spark backend", crate::types::spark_type_name(t)),
    };
    if scale < 0 {
        return plan_err!("{function} of a DECIMAL with a negative scale runs on the Spark backend");
    }
    let mut out = StringBuilder::with_capacity(decimals.len(), decimals.len() * 8);
    for v in decimals.iter() {
        match v.map(|v| format.format(v, scale as u32)) {
            None => out.append_null(),
            Some(Some(s)) => out.append_value(s),
            Some(None) => {
                return exec_err!("[INVALID_FORMAT.MISMATCH_INPUT] {v:?} does not fit the format '{}'", format.text)
            }
        }
    }
    Ok(Arc::new(out.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(s: &str) -> NumberFormat {
        NumberFormat::new(s).unwrap()
    }

    #[test]
    fn formats_are_checked_with_sparks_reasons() {
        assert!(NumberFormat::new("").unwrap_err().contains("EMPTY"));
        assert!(NumberFormat::new("$").unwrap_err().contains("WRONG_NUM_DIGIT"));
        assert!(NumberFormat::new("9$").unwrap_err().contains("CUR_MUST_BEFORE_DIGIT"));
        assert!(NumberFormat::new("9,,9").unwrap_err().contains("CONT_THOUSANDS_SEPS"));
        assert!(NumberFormat::new("9.9,9").unwrap_err().contains("THOUSANDS_SEPS_MUST_BEFORE_DEC"));
        assert!(NumberFormat::new("9.9.9").unwrap_err().contains("WRONG_NUM_TOKEN"));
        assert!(NumberFormat::new("9x").unwrap_err().contains("UNEXPECTED_TOKEN"));
        let g = f("99,999.9S");
        assert_eq!((g.precision, g.scale), (6, 1));
    }

    #[test]
    fn texts_read_as_sparks_parser_reads_them() {
        assert_eq!(f("999").parse("454").unwrap(), Some(454));
        assert_eq!(f("000.00").parse("454.00").unwrap(), Some(45400));
        assert_eq!(f("99,999").parse("12,454").unwrap(), Some(12454));
        assert_eq!(f("$99.99").parse("$78.12").unwrap(), Some(7812));
        assert_eq!(f("99,999.9S").parse("12,454.8-").unwrap(), Some(-124548));
        assert_eq!(f("999").parse("4545").unwrap(), None);
        assert_eq!(f("000").parse("45").unwrap(), None, "a 0 demands its digit");
        assert_eq!(f("999PR").parse("<45>").unwrap(), Some(-45));
    }

    #[test]
    fn numbers_write_as_sparks_formatter_writes_them() {
        assert_eq!(f("999").format(454, 0).unwrap(), "454");
        assert_eq!(f("000D00").format(45400, 2).unwrap(), "454.00");
        assert_eq!(f("99G999").format(12454, 0).unwrap(), "12,454");
        assert_eq!(f("$99.99").format(7812, 2).unwrap(), "$78.12");
        assert_eq!(f("99G999D9S").format(-124548, 1).unwrap(), "12,454.8-");
        assert_eq!(f("99").format(454, 0).unwrap(), "##");
    }
}
