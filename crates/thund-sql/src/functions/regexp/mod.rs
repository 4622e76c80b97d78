//! Spark's regular-expression functions that DataFusion lacks: `split(str, regex[, limit])`,
//! `regexp_extract(str, regex[, idx])` and `regexp_extract_all(str, regex[, idx])`, vectorised
//! over Arrow string arrays, the pattern compiled once per distinct value (nearly always one
//! literal).
//!
//! Spark runs Java's regular expressions; these run the `regex` crate's, which agree on the
//! syntax pipelines use (classes, groups, alternation, quantifiers, anchors). What Java has and
//! the crate lacks (look-around, back-references, possessive quantifiers) does not compile, and
//! the query fails with the pattern named, rather than matching otherwise. `split` follows
//! Java's `String.split`: no leading empty piece for a match of nothing at the start, trailing
//! empty pieces kept, `limit > 0` pieces at most.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, ListBuilder, StringBuilder};
use arrow::datatypes::{DataType, Field};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};
use regex::Regex;

use crate::columnar::{columnar, utf8};
use crate::declare::{Call, Function, PlanContext};

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    for f in RegexpFunction::all() {
        ctx.register_udf(datafusion::logical_expr::ScalarUDF::from(f));
    }
}

/// Spark's regular-expression functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("split"),
    Function::udf("regexp_extract"),
    Function::udf("regexp_extract_all"),
    Function::spelled("rlike", &[(2, "regexp_like(__a1, __a2)")]),
    Function::spelled("regexp", &[(2, "regexp_like(__a1, __a2)")]),
    // The first match, NULL where there is none or it is empty (Spark's `NullIf` of
    // `regexp_extract`, which gives '').
    Function::spelled("regexp_substr", &[(2, "nullif(regexp_extract(__a1, __a2, 0), '')")]),
    // Java's matches (`java_captures`) and replacement text (`$1`, `\\$`).
    Function::udf("regexp_replace").plan(position_refused),
    Function::udf("regexp_count"),
    Function::builtin("regexp_instr").plan(crate::declare::counted_as_int),
];

/// Spark's `regexp_replace(s, regex, rep, position)`: the position is not taken here.
fn position_refused(
    c: Call,
    _: &PlanContext,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    match c.args.len() {
        4 => Err(crate::declare::refused("regexp_replace", "its fourth argument, a position, is not taken here")),
        _ => c.unchanged(),
    }
}

/// Which function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Split,
    Extract,
    ExtractAll,
    Replace,
    Count,
}

/// One of this module's functions.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct RegexpFunction {
    kind: Kind,
    signature: Signature,
}

impl RegexpFunction {
    fn new(kind: Kind) -> Self {
        RegexpFunction { kind, signature: Signature::user_defined(Volatility::Immutable) }
    }

    /// The module's functions.
    pub(crate) fn all() -> [RegexpFunction; 5] {
        [Kind::Split, Kind::Extract, Kind::ExtractAll, Kind::Replace, Kind::Count].map(RegexpFunction::new)
    }
}

/// The element field of the lists `split` and `regexp_extract_all` return, as Spark names it.
fn element() -> Arc<Field> {
    Arc::new(Field::new("element", DataType::Utf8, true))
}
impl ScalarUDFImpl for RegexpFunction {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Split => "split",
            Kind::Extract => "regexp_extract",
            Kind::ExtractAll => "regexp_extract_all",
            Kind::Replace => "regexp_replace",
            Kind::Count => "regexp_count",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, types: &[DataType]) -> Result<Vec<DataType>> {
        let arity = match self.kind {
            Kind::Count => 2..=2,
            Kind::Replace => 3..=3,
            _ => 2..=3,
        };
        if !arity.contains(&types.len()) {
            return plan_err!("{} takes {} to {} arguments", self.name(), arity.start(), arity.end());
        }
        let texts = if self.kind == Kind::Replace { 3 } else { 2 };
        types
            .iter()
            .enumerate()
            .map(|(i, t)| match (i, t) {
                (_, DataType::Null) => Ok(if i < texts { DataType::Utf8 } else { DataType::Int64 }),
                (2, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) if texts == 3 => Ok(DataType::Utf8),
                (0 | 1, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View) => Ok(DataType::Utf8),
                (2, t) if t.is_integer() => Ok(DataType::Int64),
                _ => plan_err!("{}: argument {} cannot be {t}", self.name(), i + 1),
            })
            .collect()
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(match self.kind {
            Kind::Extract | Kind::Replace => DataType::Utf8,
            Kind::Count => DataType::Int32,
            Kind::Split | Kind::ExtractAll => DataType::List(element()),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let (subject, pattern) = (utf8(&arrays[0])?, utf8(&arrays[1])?);
        let third = match arrays.get(2) {
            Some(_) if self.kind == Kind::Replace => None,
            Some(a) => {
                let c = arrow::compute::cast(a, &DataType::Int64)?;
                c.as_any().downcast_ref::<Int64Array>().cloned()
            }
            None => None,
        };
        let number = |i: usize| -> Option<i64> {
            match &third {
                None => Some(if self.kind == Kind::Split { -1 } else { 1 }),
                Some(a) if a.is_null(i) => None,
                Some(a) => Some(a.value(i)),
            }
        };
        let mut compiled = Compiled::default();
        let result: ArrayRef = match self.kind {
            Kind::Replace => {
                let replacement = utf8(&arrays[2])?;
                let mut out = StringBuilder::new();
                for i in 0..subject.len() {
                    if subject.is_null(i) || pattern.is_null(i) || replacement.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let re = compiled.get(pattern.value(i), self.name())?;
                    out.append_value(java_replace(re, subject.value(i), replacement.value(i))?);
                }
                Arc::new(out.finish())
            }
            Kind::Count => {
                let mut out = arrow::array::Int32Builder::new();
                for i in 0..subject.len() {
                    if subject.is_null(i) || pattern.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let re = compiled.get(pattern.value(i), self.name())?;
                    out.append_value(java_captures(re, subject.value(i)).count() as i32);
                }
                Arc::new(out.finish())
            }
            Kind::Extract => {
                let mut out = StringBuilder::new();
                for i in 0..subject.len() {
                    match (subject.is_valid(i) && pattern.is_valid(i)).then(|| number(i)).flatten() {
                        None => out.append_null(),
                        Some(idx) => {
                            let re = compiled.get(pattern.value(i), self.name())?;
                            let group = group_index(re, idx, self.name())?;
                            let found = re.captures(subject.value(i)).and_then(|c| c.get(group).map(|m| m.as_str()));
                            // No match, or a group that took no part in it: the empty string.
                            out.append_value(found.unwrap_or(""));
                        }
                    }
                }
                Arc::new(out.finish())
            }
            Kind::Split | Kind::ExtractAll => {
                let mut out = ListBuilder::new(StringBuilder::new()).with_field(element());
                for i in 0..subject.len() {
                    let Some(n) = (subject.is_valid(i) && pattern.is_valid(i)).then(|| number(i)).flatten() else {
                        out.append_null();
                        continue;
                    };
                    let re = compiled.get(pattern.value(i), self.name())?;
                    let s = subject.value(i);
                    if self.kind == Kind::Split {
                        for piece in spark_split(s, pattern.value(i), re, n) {
                            out.values().append_value(piece);
                        }
                    } else {
                        let group = group_index(re, n, self.name())?;
                        for c in java_captures(re, s) {
                            out.values().append_value(c.get(group).map_or("", |m| m.as_str()));
                        }
                    }
                    out.append(true);
                }
                Arc::new(out.finish())
            }
        };
        columnar(result, scalar)
    }
}

/// The last pattern compiled (patterns are nearly always one literal).
#[derive(Default)]
struct Compiled {
    last: Option<(String, Regex)>,
}

impl Compiled {
    fn get(&mut self, pattern: &str, function: &str) -> Result<&Regex> {
        if self.last.as_ref().is_none_or(|(p, _)| p != pattern) {
            let re = match Regex::new(pattern) {
                Ok(re) => re,
                Err(e) => {
                    return exec_err!(
                        "{function}: the regular expression `{pattern}` is not supported by the native backend \
                         (it runs on the Spark backend): {}",
                        e.to_string().lines().last().unwrap_or_default()
                    )
                }
            };
            self.last = Some((pattern.to_string(), re));
        }
        match &self.last {
            Some((_, re)) => Ok(re),
            None => exec_err!("internal error: {function}'s pattern was not compiled"),
        }
    }
}

/// A group index as Spark checks it: 0 is the whole match, at most the pattern's groups.
fn group_index(re: &Regex, idx: i64, function: &str) -> Result<usize> {
    let groups = re.captures_len() - 1;
    match usize::try_from(idx) {
        Ok(i) if i <= groups => Ok(i),
        _ => exec_err!("{function}: the regular expression has {groups} group(s), so the group index {idx} is invalid"),
    }
}

/// Spark's `split(s, regex, limit)`: Java's, except that an empty pattern splits between
/// characters and leaves no trailing empty piece (`split('abc', '')` is `[a, b, c]`, Java's
/// `[a, b, c, ""]`); with a positive limit the last piece holds the rest (`[a, bc]` for 2).
fn spark_split<'a>(s: &'a str, pattern: &str, re: &Regex, limit: i64) -> Vec<&'a str> {
    if !pattern.is_empty() {
        return java_split(s, re, limit);
    }
    if s.is_empty() {
        return vec![s];
    }
    let starts: Vec<usize> = s.char_indices().map(|(i, _)| i).collect();
    let pieces = match usize::try_from(limit) {
        Ok(n) if n > 0 && n < starts.len() => n,
        _ => starts.len(),
    };
    let mut out: Vec<&str> = starts.windows(2).take(pieces - 1).map(|w| &s[w[0]..w[1]]).collect();
    out.push(&s[starts[pieces - 1]..]);
    out
}

/// Every match of `re` in `s` as Java's `Matcher.find` finds them: after a match the search
/// goes on where it ended, and an empty match there is one (Rust's iterators skip an empty match
/// right after another match: `(\d+)?` over `1a` finds `1`, ``, `` in Java and `1`, `` in Rust);
/// after an empty match it goes on one character further.
fn java_captures<'a>(re: &'a Regex, s: &'a str) -> impl Iterator<Item = regex::Captures<'a>> + 'a {
    let mut at = Some(0);
    std::iter::from_fn(move || {
        let from = at?;
        let c = re.captures_at(s, from)?;
        let m = c.get(0)?;
        at = match m.is_empty() {
            true => s[m.end()..].chars().next().map(|ch| m.end() + ch.len_utf8()),
            false => Some(m.end()),
        };
        Some(c)
    })
}

/// `s` with every match of `re` (found as [`java_captures`] finds them) replaced by
/// `replacement` read as Java's `Matcher.appendReplacement` reads it: `$n` a group (as many
/// digits as still name one), `\\x` the character `x`.
fn java_replace(re: &Regex, s: &str, replacement: &str) -> Result<String> {
    let groups = re.captures_len() - 1;
    let mut out = String::with_capacity(s.len());
    let mut last = 0;
    for c in java_captures(re, s) {
        let Some(m) = c.get(0) else { continue };
        out.push_str(&s[last..m.start()]);
        let mut chars = replacement.chars().peekable();
        while let Some(ch) = chars.next() {
            match ch {
                '\\' => match chars.next() {
                    Some(next) => out.push(next),
                    None => return exec_err!("regexp_replace: character to be escaped is missing"),
                },
                '$' => match chars.next() {
                    // Spark 4.1 answers `${name}` otherwise than Java documents it: not taken here.
                    Some('{') => {
                        return exec_err!(
                            "regexp_replace: a named group in the replacement (`${{…}}`) runs on the Spark backend"
                        )
                    }
                    Some(d) if d.is_ascii_digit() => {
                        let mut group = d.to_digit(10).unwrap_or(0) as usize;
                        if group > groups {
                            return exec_err!("regexp_replace: no group {group}");
                        }
                        while let Some(next) = chars.peek().and_then(|c| c.to_digit(10)) {
                            let longer = group * 10 + next as usize;
                            if longer > groups {
                                break;
                            }
                            group = longer;
                            chars.next();
                        }
                        out.push_str(c.get(group).map_or("", |g| g.as_str()));
                    }
                    _ => return exec_err!("regexp_replace: illegal group reference in `{replacement}`"),
                },
                other => out.push(other),
            }
        }
        last = m.end();
    }
    out.push_str(&s[last..]);
    Ok(out)
}

/// Java's `String.split(regex, limit)`.
fn java_split<'a>(s: &'a str, re: &Regex, limit: i64) -> Vec<&'a str> {
    let mut out = Vec::new();
    let mut start = 0;
    for c in java_captures(re, s) {
        let Some(m) = c.get(0) else { continue };
        if limit > 0 && out.len() as i64 == limit - 1 {
            break;
        }
        // A match of nothing at the very start gives no leading empty piece.
        if m.end() == 0 {
            continue;
        }
        out.push(&s[start..m.start()]);
        start = m.end();
    }
    out.push(&s[start..]);
    if limit == 0 {
        while out.len() > 1 && out.last() == Some(&"") {
            out.pop();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_is_javas() {
        let re = |p: &str| Regex::new(p).unwrap();
        assert_eq!(java_split("oneAtwoBthreeC", &re("[ABC]"), -1), ["one", "two", "three", ""]);
        assert_eq!(java_split("oneAtwoBthreeC", &re("[ABC]"), 2), ["one", "twoBthreeC"]);
        assert_eq!(java_split("a,b,,", &re(","), 0), ["a", "b"]);
        assert_eq!(java_split("abc", &re(""), -1), ["a", "b", "c", ""]);
        assert_eq!(java_split("", &re(","), -1), [""]);
        // Spark's own for an empty pattern.
        assert_eq!(spark_split("abc", "", &re(""), -1), ["a", "b", "c"]);
        assert_eq!(spark_split("abc", "", &re(""), 2), ["a", "bc"]);
        assert_eq!(spark_split("abc", "", &re(""), 5), ["a", "b", "c"]);
        assert_eq!(spark_split("", "", &re(""), -1), [""]);
        assert_eq!(spark_split("aé,b", "", &re(""), 0), ["a", "é", ",", "b"]);
    }
}
