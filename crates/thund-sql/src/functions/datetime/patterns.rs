//! Spark's datetime patterns (`yyyy-MM-dd HH:mm:ss`, Java's `DateTimeFormatter` letters) for
//! formatting and parsing: `date_format`, `to_char`/`to_varchar` of a date or timestamp,
//! `from_unixtime`, and `to_date`, `to_timestamp`, `try_to_date`, `try_to_timestamp`,
//! `unix_timestamp`, `to_unix_timestamp` with a pattern; and the counts since the epoch
//! (`timestamp_seconds`, `unix_millis`, `unix_date`, …).
//!
//! A pattern is translated once per distinct pattern into chrono's items; a letter this
//! translation does not know (`k`, `K`, `Q`, `w`, `G`, two-digit fractions …) is an error naming
//! it, never formatted some other way. Times are the session's, UTC.
//!
//! Parsing is as strict as Spark's: a text parses only if formatting the parsed value with the
//! same pattern gives the text back, so `2016-1-5` does not parse as `yyyy-MM-dd` (chrono alone
//! would accept it; Spark does not). A text that does not parse is an error naming it (Spark's
//! ANSI mode), or NULL for the `try_` forms.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Date32Array, Int64Array, StringArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Field, FieldRef};
use chrono::format::{Item, StrftimeItems};
use chrono::{DateTime, NaiveDate, NaiveDateTime};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::columnar::{columnar, utf8};

/// Registers the functions with `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    for name in ["date_format", "to_char", "to_varchar", "from_unixtime"] {
        ctx.register_udf(ScalarUDF::from(Format::new(name)));
    }
    for (name, target, strict) in [
        ("to_timestamp", Target::Timestamp, true),
        ("try_to_timestamp", Target::Timestamp, false),
        ("to_date", Target::Date, true),
        ("try_to_date", Target::Date, false),
        ("unix_timestamp", Target::Seconds, true),
        ("to_unix_timestamp", Target::Seconds, true),
    ] {
        ctx.register_udf(ScalarUDF::from(Parse {
            name,
            target,
            strict,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
    for kind in [
        Epoch::TimestampSeconds,
        Epoch::TimestampMillis,
        Epoch::TimestampMicros,
        Epoch::UnixSeconds,
        Epoch::UnixMillis,
        Epoch::UnixMicros,
        Epoch::UnixDate,
        Epoch::DateFromUnixDate,
    ] {
        ctx.register_udf(ScalarUDF::from(EpochFunction { kind, signature: Signature::any(1, Volatility::Immutable) }));
    }
}

/// Without ANSI mode, Spark's parsing functions give NULL for a text that does not parse:
/// `name`'s lenient form, if it is one of them.
pub(crate) fn lenient(name: &str) -> Option<ScalarUDF> {
    let (name, target) = match name {
        "to_timestamp" => ("to_timestamp", Target::Timestamp),
        "to_date" => ("to_date", Target::Date),
        "unix_timestamp" => ("unix_timestamp", Target::Seconds),
        "to_unix_timestamp" => ("to_unix_timestamp", Target::Seconds),
        _ => return None,
    };
    Some(ScalarUDF::from(Parse {
        name,
        target,
        strict: false,
        signature: Signature::variadic_any(Volatility::Immutable),
    }))
}

/// Conversions between instants or dates and counts since the epoch: `timestamp_seconds`
/// (a number, fractions kept to the microsecond), `timestamp_millis`, `timestamp_micros`,
/// `unix_seconds`, `unix_millis`, `unix_micros` (rounded down, as Spark's), `unix_date`,
/// `date_from_unix_date`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Epoch {
    TimestampSeconds,
    TimestampMillis,
    TimestampMicros,
    UnixSeconds,
    UnixMillis,
    UnixMicros,
    UnixDate,
    DateFromUnixDate,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct EpochFunction {
    kind: Epoch,
    signature: Signature,
}

impl ScalarUDFImpl for EpochFunction {
    fn name(&self) -> &str {
        match self.kind {
            Epoch::TimestampSeconds => "timestamp_seconds",
            Epoch::TimestampMillis => "timestamp_millis",
            Epoch::TimestampMicros => "timestamp_micros",
            Epoch::UnixSeconds => "unix_seconds",
            Epoch::UnixMillis => "unix_millis",
            Epoch::UnixMicros => "unix_micros",
            Epoch::UnixDate => "unix_date",
            Epoch::DateFromUnixDate => "date_from_unix_date",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let t = &args[0];
        let fits = match self.kind {
            Epoch::TimestampSeconds => t.is_numeric(),
            Epoch::TimestampMillis | Epoch::TimestampMicros | Epoch::DateFromUnixDate => t.is_integer(),
            Epoch::UnixSeconds | Epoch::UnixMillis | Epoch::UnixMicros => matches!(t, DataType::Timestamp(..)),
            Epoch::UnixDate => matches!(t, DataType::Date32),
        };
        if !fits && t != &DataType::Null {
            return plan_err!("{} does not take a {}", self.name(), crate::types::spark_type_name(t));
        }
        Ok(match self.kind {
            Epoch::TimestampSeconds | Epoch::TimestampMillis | Epoch::TimestampMicros => {
                crate::types::spark_timestamp()
            }
            Epoch::UnixSeconds | Epoch::UnixMillis | Epoch::UnixMicros => DataType::Int64,
            Epoch::UnixDate => DataType::Int32,
            Epoch::DateFromUnixDate => DataType::Date32,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use arrow::datatypes::{Date32Type, Int32Type};
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let out: ArrayRef = match self.kind {
            Epoch::TimestampSeconds => Arc::new(seconds_instants(&a)?),
            Epoch::TimestampMillis => Arc::new(counted_instants(&a, 1_000)?),
            Epoch::TimestampMicros => Arc::new(counted_instants(&a, 1)?),
            Epoch::UnixSeconds | Epoch::UnixMillis | Epoch::UnixMicros => {
                let per = match self.kind {
                    Epoch::UnixSeconds => 1_000_000,
                    Epoch::UnixMillis => 1_000,
                    _ => 1,
                };
                Arc::new(instants(&a)?.iter().map(|m| m.map(|m| m.div_euclid(per))).collect::<Int64Array>())
            }
            Epoch::UnixDate => {
                let dates = arrow::compute::cast(&a, &DataType::Date32)?;
                Arc::new(dates.as_primitive::<Date32Type>().reinterpret_cast::<Int32Type>())
            }
            Epoch::DateFromUnixDate => {
                let days = arrow::compute::cast(&a, &DataType::Int32)?;
                Arc::new(days.as_primitive::<Int32Type>().reinterpret_cast::<Date32Type>())
            }
        };
        columnar(out, scalar)
    }
}

/// Spark's pattern as a chrono format string; an error names what cannot be translated.
pub(crate) fn chrono_pattern(pattern: &str) -> std::result::Result<String, String> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            // 'text' is literal; '' is one quote.
            if chars.get(i + 1) == Some(&'\'') {
                out.push('\'');
                i += 2;
                continue;
            }
            let end = chars[i + 1..].iter().position(|&q| q == '\'').ok_or("an unclosed quote")?;
            for &l in &chars[i + 1..i + 1 + end] {
                push_literal(&mut out, l);
            }
            i += end + 2;
            continue;
        }
        if !c.is_ascii_alphabetic() {
            push_literal(&mut out, c);
            i += 1;
            continue;
        }
        let n = chars[i..].iter().take_while(|&&x| x == c).count();
        let spec = match (c, n) {
            ('y' | 'u', 2) => "%y",
            ('y' | 'u', _) => "%Y",
            ('M' | 'L', 1) => "%-m",
            ('M' | 'L', 2) => "%m",
            ('M' | 'L', 3) => "%b",
            ('M' | 'L', 4) => "%B",
            ('d', 1) => "%-d",
            ('d', 2) => "%d",
            ('D', 1) => "%-j",
            ('D', 3) => "%j",
            ('H', 1) => "%-H",
            ('H', 2) => "%H",
            ('h', 1) => "%-I",
            ('h', 2) => "%I",
            ('m', 1) => "%-M",
            ('m', 2) => "%M",
            ('s', 1) => "%-S",
            ('s', 2) => "%S",
            ('S', 3) => "%3f",
            ('S', 6) => "%6f",
            ('S', 9) => "%9f",
            ('a', 1) => "%p",
            ('E', 1..=3) => "%a",
            ('E', 4) => "%A",
            // The session's time zone is UTC.
            ('z', 1..=3) => "UTC",
            ('Z', 1..=3) => "+0000",
            ('X', 1..=3) => "Z",
            ('x', 1) => "+00",
            ('x', 2) => "+0000",
            ('x', 3) => "+00:00",
            _ => return Err(format!("the pattern letter `{}` is not supported natively", c.to_string().repeat(n))),
        };
        out.push_str(spec);
        i += n;
    }
    Ok(out)
}

fn push_literal(out: &mut String, c: char) {
    if c == '%' {
        out.push_str("%%");
    } else {
        out.push(c);
    }
}

/// A translated pattern, kept while rows repeat it: the pattern with every optional section
/// (`[…]`), which formats, and each way of reading it, most sections first, which parse.
pub(crate) struct Compiled {
    pattern: String,
    items: Vec<Item<'static>>,
    readings: Vec<Vec<Item<'static>>>,
}

/// How many optional sections a pattern may have (each doubles the ways it is read).
const OPTIONAL_SECTIONS: usize = 6;

pub(crate) fn compile(pattern: &str) -> Result<Compiled> {
    let translate = |p: &str| -> Result<Vec<Item<'static>>> {
        let chrono = chrono_pattern(p).or_else(|e| plan_err!("datetime pattern '{pattern}': {e}"))?;
        StrftimeItems::new(&chrono)
            .parse_to_owned()
            .or_else(|_| plan_err!("datetime pattern '{pattern}' is not supported natively"))
    };
    let variants = optional_sections(pattern).or_else(|e| plan_err!("datetime pattern '{pattern}': {e}"))?;
    let items = translate(&variants[0])?;
    let readings = variants.iter().map(|v| translate(v)).collect::<Result<Vec<_>>>()?;
    Ok(Compiled { pattern: pattern.to_string(), items, readings })
}

/// `pattern` with its optional sections (`[…]`, nested or not) each kept or left out, as
/// patterns without brackets: the one keeping every section first (Java's formatter writes
/// those; its parser reads a section where it can), then by fewer sections kept.
fn optional_sections(pattern: &str) -> std::result::Result<Vec<String>, String> {
    let chars: Vec<char> = pattern.chars().collect();
    // Each character's enclosing sections, outermost first; brackets inside quotes are text.
    let mut sections = 0usize;
    let mut open: Vec<usize> = Vec::new();
    let mut placed: Vec<(char, Vec<usize>)> = Vec::new();
    let mut quoted = false;
    for &c in &chars {
        match c {
            '\'' => {
                quoted = !quoted;
                placed.push((c, open.clone()));
            }
            '[' if !quoted => {
                open.push(sections);
                sections += 1;
            }
            ']' if !quoted => {
                open.pop().ok_or("a `]` without its `[`")?;
            }
            _ => placed.push((c, open.clone())),
        }
    }
    if !open.is_empty() {
        return Err("a `[` without its `]`".into());
    }
    if sections > OPTIONAL_SECTIONS {
        return Err(format!("more than {OPTIONAL_SECTIONS} optional sections are not read natively"));
    }
    let mut masks: Vec<usize> = (0..1usize << sections).collect();
    masks.sort_by_key(|m| std::cmp::Reverse(m.count_ones()));
    Ok(masks
        .into_iter()
        .map(|mask| {
            placed.iter().filter(|(_, within)| within.iter().all(|s| mask & (1 << s) != 0)).map(|(c, _)| c).collect()
        })
        .collect())
}

/// The compiled pattern for `text`, compiled again only when it changes.
fn pattern_for<'a>(cache: &'a mut Option<Compiled>, text: &str) -> Result<&'a Compiled> {
    if cache.as_ref().is_none_or(|c| c.pattern != text) {
        *cache = Some(compile(text)?);
    }
    match cache {
        Some(compiled) => Ok(compiled),
        None => plan_err!("internal error: datetime pattern '{text}' was not compiled"),
    }
}

/// An argument's values as instants (microseconds since the epoch, UTC), the way Spark casts a
/// date, a string or a timestamp to a timestamp.
fn instants(a: &ArrayRef) -> Result<TimestampMicrosecondArray> {
    instants_or_null(a, false)
}

/// [`instants`], a text that is no instant NULL when `lenient` (else an error).
fn instants_or_null(a: &ArrayRef, lenient: bool) -> Result<TimestampMicrosecondArray> {
    if a.data_type().is_numeric() {
        // Spark casts a number to a timestamp as seconds since the epoch (Arrow: microseconds).
        let seconds = arrow::compute::cast(a, &DataType::Float64)?;
        return Ok(seconds
            .as_primitive::<arrow::datatypes::Float64Type>()
            .iter()
            .map(|s| s.map(|s| (s * 1e6).round() as i64))
            .collect::<TimestampMicrosecondArray>()
            .with_timezone("UTC"));
    }
    if a.data_type().is_string() {
        // Text as Spark's cast reads it.
        return crate::functions::datetime::timestamp_text::instants(&utf8(a)?, lenient);
    }
    let t = crate::types::spark_timestamp();
    let options = arrow::compute::CastOptions { safe: lenient, ..Default::default() };
    let cast = arrow::compute::cast_with_options(a, &t, &options)?;
    Ok(cast.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().clone())
}

/// Counts of a unit since the epoch (`micros_per_unit` microseconds each) as instants; one too
/// large fails the query in either mode, as Spark's `Math.multiplyExact` does.
fn counted_instants(a: &ArrayRef, micros_per_unit: i64) -> Result<TimestampMicrosecondArray> {
    let counts = arrow::compute::cast(a, &DataType::Int64)?;
    let micros = counts
        .as_primitive::<arrow::datatypes::Int64Type>()
        .iter()
        .map(|v| v.map(|v| v.checked_mul(micros_per_unit)).map(|m| m.ok_or(())).transpose())
        .collect::<std::result::Result<TimestampMicrosecondArray, ()>>();
    match micros {
        Ok(micros) => Ok(micros.with_timezone("UTC")),
        Err(()) => exec_err!("[ARITHMETIC_OVERFLOW] long overflow"),
    }
}

/// `timestamp_seconds(x)` as Spark's `SecondsToTimestamp`: an integer exactly (too large fails),
/// floating point truncated toward zero to the microsecond (`(x * 1e6).toLong`; NaN and the
/// infinities NULL), a DECIMAL exactly (a fraction of a microsecond fails: "Rounding
/// necessary").
fn seconds_instants(a: &ArrayRef) -> Result<TimestampMicrosecondArray> {
    match a.data_type() {
        t if t.is_integer() => counted_instants(a, 1_000_000),
        DataType::Decimal128(_, scale) => {
            let scale = i32::from(*scale);
            let micros: Result<TimestampMicrosecondArray> = a
                .as_primitive::<arrow::datatypes::Decimal128Type>()
                .iter()
                .map(|v| {
                    let Some(v) = v else { return Ok(None) };
                    let exact = if scale <= 6 {
                        v.checked_mul(10i128.pow((6 - scale) as u32))
                    } else {
                        let unit = 10i128.pow((scale - 6) as u32);
                        if v % unit != 0 {
                            return exec_err!("[ARITHMETIC_OVERFLOW] Rounding necessary");
                        }
                        Some(v / unit)
                    };
                    match exact.and_then(|m| i64::try_from(m).ok()) {
                        Some(m) => Ok(Some(m)),
                        None => exec_err!("[ARITHMETIC_OVERFLOW] Overflow"),
                    }
                })
                .collect();
            Ok(micros?.with_timezone("UTC"))
        }
        _ => {
            let seconds = arrow::compute::cast(a, &DataType::Float64)?;
            Ok(seconds
                .as_primitive::<arrow::datatypes::Float64Type>()
                .iter()
                .map(|s| s.filter(|s| s.is_finite()).map(|s| (s * 1e6) as i64))
                .collect::<TimestampMicrosecondArray>()
                .with_timezone("UTC"))
        }
    }
}

/// `date_format(t, pattern)` and the functions formatting the same way; `to_char` and
/// `to_varchar` of a number (`numbers`) or a binary (`binary`) too.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Format {
    name: &'static str,
    signature: Signature,
}

impl Format {
    fn new(name: &'static str) -> Self {
        Self { name, signature: Signature::variadic_any(Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for Format {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let arity = if self.name == "from_unixtime" { 1..=2 } else { 2..=2 };
        if !arity.contains(&args.len()) {
            return plan_err!("{} is called as {}(value, pattern)", self.name, self.name);
        }
        match (&args[0], self.name) {
            (t, "from_unixtime") if t.is_numeric() || t == &DataType::Null => {}
            (t, "from_unixtime") => return plan_err!("from_unixtime takes seconds, not {t}"),
            (DataType::Date32 | DataType::Date64 | DataType::Timestamp(..) | DataType::Null, _) => {}
            (t, "date_format") if t.is_string() => {}
            // A number or binary format (`numbers`, `binary`); see `return_field_from_args`.
            (t, "to_char" | "to_varchar")
                if t.is_integer() || matches!(t, DataType::Decimal128(..)) || crate::functions::binary::is_bytes(t) => {
            }
            (t, _) if t.is_numeric() || crate::functions::binary::is_bytes(t) => {
                return plan_err!(
                    "`{}` of a {} runs on the Spark backend; natively it formats dates, timestamps, integers, \
                     decimals and binaries",
                    self.name,
                    crate::types::spark_type_name(t)
                )
            }
            (t, _) => return plan_err!("{} formats a date or a timestamp, not {t}", self.name),
        }
        Ok(DataType::Utf8)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        let t = self.return_type(&types)?;
        // A number's or a binary's format is a constant (Spark's rule), checked here.
        let formats_values = matches!(self.name, "to_char" | "to_varchar");
        match types.first() {
            Some(v) if formats_values && v.is_numeric() => {
                crate::functions::string::number_format::constant_format(
                    self.name,
                    args.scalar_arguments.get(1).copied().flatten(),
                )?;
            }
            Some(v) if formats_values && crate::functions::binary::is_bytes(v) => {
                crate::functions::binary::binary_format(self.name, args.scalar_arguments.get(1).copied().flatten())?;
            }
            _ => {}
        }
        Ok(Arc::new(Field::new(self.name, t, true)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let values = args.args[0].to_array(n)?;
        let constant = match args.args.get(1) {
            Some(ColumnarValue::Scalar(s)) => Some(s),
            _ => None,
        };
        let formats_values = matches!(self.name, "to_char" | "to_varchar");
        if formats_values && values.data_type().is_numeric() {
            let format = crate::functions::string::number_format::constant_format(self.name, constant)?;
            return columnar(crate::functions::string::number_format::to_char(&values, &format, self.name)?, scalar);
        }
        if formats_values && crate::functions::binary::is_bytes(values.data_type()) {
            let format = crate::functions::binary::binary_format(self.name, constant)?;
            return columnar(crate::functions::binary::to_char(&values, format)?, scalar);
        }
        let pattern = match args.args.get(1) {
            Some(p) => utf8(&p.to_array(n)?)?,
            None => StringArray::from(vec!["yyyy-MM-dd HH:mm:ss"; n]),
        };
        let instants = if self.name == "from_unixtime" {
            // Whole seconds, as Spark casts them to a BIGINT.
            counted_instants(&values, 1_000_000)?
        } else {
            instants(&values)?
        };
        let mut cache = None;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            if instants.is_null(i) || pattern.is_null(i) {
                out.push(None);
                continue;
            }
            let compiled = pattern_for(&mut cache, pattern.value(i))?;
            let Some(at) = DateTime::from_timestamp_micros(instants.value(i)) else {
                return exec_err!("{}: a timestamp out of range", self.name);
            };
            out.push(Some(at.naive_utc().format_with_items(compiled.items.iter()).to_string()));
        }
        columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Target {
    Timestamp,
    Date,
    /// Seconds since the epoch (`unix_timestamp`).
    Seconds,
}

/// `to_timestamp(text, pattern)` and the other parsing functions.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Parse {
    name: &'static str,
    target: Target,
    /// A text that does not parse is an error (else NULL).
    strict: bool,
    signature: Signature,
}

impl ScalarUDFImpl for Parse {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !(1..=2).contains(&args.len()) {
            return plan_err!("{} is called as {}(value[, pattern])", self.name, self.name);
        }
        Ok(match self.target {
            Target::Timestamp => crate::types::spark_timestamp(),
            Target::Date => DataType::Date32,
            Target::Seconds => DataType::Int64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let values = args.args[0].to_array(n)?;
        let micros: Vec<Option<i64>> = match args.args.get(1) {
            // Without a pattern, text is cast as Spark casts it; dates and timestamps are taken
            // as they are.
            None => instants_or_null(&values, !self.strict)?.iter().collect(),
            Some(_) if !values.data_type().is_string() && values.data_type() != &DataType::Null => {
                instants_or_null(&values, !self.strict)?.iter().collect()
            }
            Some(p) => {
                let pattern = utf8(&p.to_array(n)?)?;
                let text = utf8(&values)?;
                let mut cache = None;
                let mut out = Vec::with_capacity(n);
                for i in 0..n {
                    if text.is_null(i) || pattern.is_null(i) {
                        out.push(None);
                        continue;
                    }
                    let compiled = pattern_for(&mut cache, pattern.value(i))?;
                    match parse(text.value(i), compiled) {
                        Some(at) => out.push(Some(at.and_utc().timestamp_micros())),
                        None if self.strict => {
                            return exec_err!(
                            "{}: '{}' does not match the pattern '{}' (Spark fails on it too; try_to_{} gives NULL)",
                            self.name,
                            text.value(i),
                            compiled.pattern,
                            if self.target == Target::Date { "date" } else { "timestamp" }
                        )
                        }
                        None => out.push(None),
                    }
                }
                out
            }
        };
        let array: ArrayRef = match self.target {
            Target::Timestamp => Arc::new(TimestampMicrosecondArray::from(micros).with_timezone("UTC")),
            Target::Date => Arc::new(Date32Array::from(
                micros.iter().map(|m| m.map(|m| m.div_euclid(86_400_000_000) as i32)).collect::<Vec<_>>(),
            )),
            Target::Seconds => Arc::new(Int64Array::from(
                micros.iter().map(|m| m.map(|m| m.div_euclid(1_000_000))).collect::<Vec<_>>(),
            )),
        };
        columnar(array, scalar)
    }
}

/// `at` written with the pattern (a time in the session's zone, UTC).
pub(crate) fn format(at: NaiveDateTime, compiled: &Compiled) -> String {
    at.format_with_items(compiled.items.iter()).to_string()
}

/// `text` read with the pattern, if it reads back as itself. A pattern without a time of day
/// gives midnight.
pub(crate) fn parse(text: &str, compiled: &Compiled) -> Option<NaiveDateTime> {
    compiled.readings.iter().find_map(|items| parse_with(text, items))
}

/// `text` read with one reading of a pattern. A field the pattern does not hold is Spark's
/// default: the first month, the first day, midnight.
fn parse_with(text: &str, items: &[Item<'static>]) -> Option<NaiveDateTime> {
    let mut parsed = chrono::format::Parsed::new();
    chrono::format::parse(&mut parsed, text, items.iter()).ok()?;
    if parsed.year.is_some() && parsed.ordinal.is_none() {
        if parsed.month.is_none() {
            parsed.set_month(1).ok()?;
        }
        if parsed.day.is_none() {
            parsed.set_day(1).ok()?;
        }
    }
    if parsed.hour_div_12.is_some() || parsed.hour_mod_12.is_some() {
        if parsed.minute.is_none() {
            parsed.set_minute(0).ok()?;
        }
        if parsed.second.is_none() {
            parsed.set_second(0).ok()?;
        }
    }
    let at = match parsed.to_naive_datetime_with_offset(0) {
        Ok(at) => at,
        Err(_) => parsed.to_naive_date().ok().map(|d: NaiveDate| d.and_hms_opt(0, 0, 0))??,
    };
    (at.format_with_items(items.iter()).to_string() == text).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spark_patterns_translate_and_unknown_letters_are_named() {
        assert_eq!(chrono_pattern("yyyy-MM-dd HH:mm:ss").unwrap(), "%Y-%m-%d %H:%M:%S");
        assert_eq!(chrono_pattern("d MMM y, EEEE 'at' h a").unwrap(), "%-d %b %Y, %A at %-I %p");
        assert_eq!(chrono_pattern("HH:mm:ss.SSS '100%'''").unwrap(), "%H:%M:%S.%3f 100%%'");
        assert!(chrono_pattern("QQ").unwrap_err().contains("`QQ`"));
        assert!(chrono_pattern("ss.SS").unwrap_err().contains("`SS`"));
    }

    #[test]
    fn parsing_is_as_strict_as_sparks() {
        let c = compile("yyyy-MM-dd").unwrap();
        assert_eq!(parse("2016-12-31", &c).unwrap().to_string(), "2016-12-31 00:00:00");
        assert!(parse("2016-1-5", &c).is_none());
        assert!(parse("2016-12-31 10:00", &c).is_none());
        let c = compile("dd/MM/yyyy HH:mm").unwrap();
        assert_eq!(parse("05/01/2024 07:30", &c).unwrap().to_string(), "2024-01-05 07:30:00");
    }

    #[test]
    fn optional_sections_are_read_where_present_and_written_in_full() {
        let c = compile("yyyy-MM-dd HH[:mm[:ss]]").unwrap();
        assert_eq!(parse("2024-01-01 10", &c).unwrap().to_string(), "2024-01-01 10:00:00");
        assert_eq!(parse("2024-01-01 10:07", &c).unwrap().to_string(), "2024-01-01 10:07:00");
        assert_eq!(parse("2024-01-01 10:07:09", &c).unwrap().to_string(), "2024-01-01 10:07:09");
        assert!(parse("2024-01-01 10:07:", &c).is_none());
        let at = parse("2024-01-01 10:07:09", &c).unwrap();
        assert_eq!(format(at, &c), "2024-01-01 10:07:09");
        assert_eq!(parse("2024-01", &compile("yyyy-MM[-dd]").unwrap()).unwrap().to_string(), "2024-01-01 00:00:00");
        assert_eq!(optional_sections("'[x]'[y]").unwrap(), vec!["'[x]'y", "'[x]'"]);
        assert!(optional_sections("yyyy[MM").is_err());
    }
}
