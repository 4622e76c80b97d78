//! `get_json_object(json, path)`: the value at a JSON path (`$.a.b`, `$['a']`, `$.list[0]`,
//! `[*]` wildcards as Spark's raw/quoted/flatten styles), a string as its text and anything else
//! as JSON; NULL when the JSON is invalid or the path leads nowhere, as in Spark. How the event
//! log's `details` column is read with SQL.

use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use datafusion::prelude::SessionContext;
use serde_json::Value;

use crate::columnar::{columnar, utf8};

/// Registers `get_json_object`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(GetJsonObject::new()));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct GetJsonObject {
    signature: Signature,
}

impl GetJsonObject {
    fn new() -> Self {
        let strings = [DataType::Utf8, DataType::Utf8View, DataType::LargeUtf8];
        let pairs = strings
            .iter()
            .flat_map(|a| strings.iter().map(move |b| TypeSignature::Exact(vec![a.clone(), b.clone()])))
            .collect();
        GetJsonObject { signature: Signature::one_of(pairs, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for GetJsonObject {
    fn name(&self) -> &str {
        "get_json_object"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let (json, path) = (utf8(&arrays[0])?, utf8(&arrays[1])?);
        let mut out = Vec::with_capacity(json.len());
        // The path is nearly always one literal: parsed once, not per row.
        let mut parsed: Option<(&str, Option<Vec<Step>>)> = None;
        for i in 0..json.len() {
            if json.is_null(i) || path.is_null(i) {
                out.push(None);
                continue;
            }
            let text = path.value(i);
            if parsed.as_ref().is_none_or(|(p, _)| *p != text) {
                parsed = Some((text, parse_path(text)?));
            }
            let steps = parsed.as_ref().and_then(|(_, steps)| steps.as_deref());
            out.push(steps.and_then(|steps| extract(json.value(i), steps)));
        }
        columnar(Arc::new(StringArray::from(out)), scalar)
    }
}

/// One step of a JSON path.
#[derive(Debug, PartialEq)]
enum Step {
    Key(String),
    Index(usize),
    /// `[*]`: every element of an array.
    Wildcard,
}

/// The steps of `path`; `None` for a path Spark would answer NULL for (not starting with `$`,
/// malformed).
fn parse_path(path: &str) -> Result<Option<Vec<Step>>> {
    let Some(mut rest) = path.strip_prefix('$') else { return Ok(None) };
    let mut steps = Vec::new();
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let key = &r[..end];
            if key.is_empty() {
                return Ok(None);
            }
            // `$.*` reads nothing on Spark.
            if key == "*" {
                return Ok(None);
            }
            steps.push(Step::Key(key.to_string()));
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { return Ok(None) };
            let inner = r[..end].trim();
            if inner == "*" {
                steps.push(Step::Wildcard);
                rest = &r[end + 1..];
                continue;
            }
            let quoted = inner.strip_prefix('\'').and_then(|s| s.strip_suffix('\''));
            match (quoted, inner.parse::<usize>()) {
                (Some(key), _) => steps.push(Step::Key(key.to_string())),
                (None, Ok(n)) => steps.push(Step::Index(n)),
                (None, Err(_)) => return Ok(None),
            }
            rest = &r[end + 1..];
        } else {
            return Ok(None);
        }
    }
    Ok(Some(steps))
}

fn extract(json: &str, steps: &[Step]) -> Option<String> {
    let root: Value = serde_json::from_str(json).ok()?;
    let (dirty, written) = evaluate(&root, steps, Style::Raw);
    dirty.then(|| written.join(","))
}

/// How a match is written, as in Spark's `GetJsonObject`: a string bare (`Raw`, no wildcard
/// above it), quoted (`Quoted`, inside a wildcard's array), or an array's elements spread into
/// the enclosing one (`Flatten`, under two wildcards in a row).
#[derive(Debug, Clone, Copy, PartialEq)]
enum Style {
    Raw,
    Quoted,
    Flatten,
}

/// The JSON written for `steps` from `v` (Spark's `evaluatePath`): whether anything matched,
/// and the values written, in order.
fn evaluate(v: &Value, steps: &[Step], style: Style) -> (bool, Vec<String>) {
    match (v, steps) {
        (Value::String(s), []) if style == Style::Raw => (true, vec![s.clone()]),
        (Value::Array(items), []) if style == Style::Flatten => {
            let mut out = (false, Vec::new());
            for item in items {
                let (dirty, written) = evaluate(item, &[], style);
                out.0 |= dirty;
                out.1.extend(written);
            }
            out
        }
        (_, []) => (true, vec![v.to_string()]),
        (Value::Object(fields), [Step::Key(k), rest @ ..]) => match fields.get(k) {
            Some(Value::Null) | None => (false, Vec::new()),
            Some(field) => evaluate(field, rest, style),
        },
        // Two wildcards in a row: the matches of every element flattened into one array.
        (Value::Array(items), [Step::Wildcard, Step::Wildcard, rest @ ..]) => {
            let mut dirty = false;
            let mut written = Vec::new();
            for item in items {
                let (d, w) = evaluate(item, rest, Style::Flatten);
                dirty |= d;
                written.extend(w);
            }
            (dirty, vec![format!("[{}]", written.join(","))])
        }
        // A wildcard under no other: one match is written as itself, several as an array.
        (Value::Array(items), [Step::Wildcard, rest @ ..]) if style != Style::Quoted => {
            let next = if style == Style::Raw { Style::Quoted } else { Style::Flatten };
            let mut matched = 0;
            let mut written = Vec::new();
            for item in items {
                let (d, w) = evaluate(item, rest, next);
                matched += usize::from(d);
                written.extend(w);
            }
            match matched {
                0 => (false, Vec::new()),
                1 => (true, vec![written.join(",")]),
                _ => (true, vec![format!("[{}]", written.join(","))]),
            }
        }
        (Value::Array(items), [Step::Wildcard, rest @ ..]) => {
            let mut dirty = false;
            let mut written = Vec::new();
            for item in items {
                let (d, w) = evaluate(item, rest, Style::Quoted);
                dirty |= d;
                written.extend(w);
            }
            (dirty, vec![format!("[{}]", written.join(","))])
        }
        (Value::Array(items), [Step::Index(n), rest @ ..]) => {
            // An index above a wildcard: its matches are quoted.
            let next = if matches!(rest.first(), Some(Step::Wildcard)) { Style::Quoted } else { style };
            match items.get(*n) {
                Some(item) => evaluate(item, rest, next),
                None => (false, Vec::new()),
            }
        }
        _ => (false, Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(json: &str, path: &str) -> Option<String> {
        extract(json, &parse_path(path).unwrap()?)
    }

    #[test]
    fn reads_paths_as_spark_does() {
        let j = r#"{"a": {"b": [1, {"c": "x"}], "n": null}, "s": "t", "k.y": 2}"#;
        assert_eq!(get(j, "$.s").as_deref(), Some("t"));
        assert_eq!(get(j, "$.a.b[0]").as_deref(), Some("1"));
        assert_eq!(get(j, "$.a.b[1].c").as_deref(), Some("x"));
        assert_eq!(get(j, "$['k.y']").as_deref(), Some("2"));
        assert_eq!(get(j, "$.a.b").as_deref(), Some(r#"[1,{"c":"x"}]"#));
        assert_eq!(get(j, "$.a.n"), None);
        assert_eq!(get(j, "$.missing"), None);
        assert_eq!(get(j, "a.b"), None);
        assert_eq!(get("not json", "$.a"), None);
        // Wildcards, each as Spark 4.1.4 answers.
        assert_eq!(get(r#"[{"a":"b"},{"a":"c"}]"#, "$[*].a").as_deref(), Some(r#"["b","c"]"#));
        assert_eq!(get(r#"[{"a":"b"},{"b":1}]"#, "$[*].a").as_deref(), Some(r#""b""#));
        assert_eq!(get(r#"{"a":[]}"#, "$.a[*]"), None);
        assert_eq!(get("[[1,2],[3]]", "$[*][0]").as_deref(), Some("[1,3]"));
        assert_eq!(get(r#"[{"a":[1,2]},{"a":[3]}]"#, "$[*].a[*]").as_deref(), Some("[[1,2],[3]]"));
        assert_eq!(get(r#"[{"a":null},{"a":1}]"#, "$[*].a").as_deref(), Some("1"));
        assert_eq!(get(r#"[[{"a":1}],[{"a":2}]]"#, "$[*][*].a"), None);
        assert_eq!(get(r#"{"a":{"b":1}}"#, "$.*"), None);
    }
}
