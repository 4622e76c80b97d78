//! Spark SQL functions that neither DataFusion nor `datafusion-spark` provide, registered in
//! every session (`engine::new_context`).
//!
//! - `range(end)`, `range(start, end[, step[, numPartitions]])`: Spark's table function, whose
//!   column is `id` (DataFusion's own `range` calls it `value`, so `SELECT id FROM range(10)`,
//!   valid Spark, failed); the partition count only splits Spark's work and is dropped.
//! - `get_json_object(json, path)`: the value at a JSON path (`$.a.b`, `$['a']`, `$.list[0]`),
//!   a string as its text and anything else as JSON; NULL when the JSON is invalid or the path
//!   leads nowhere, as in Spark. How the event log's `details` column is read with SQL. Wildcards
//!   (`[*]`) are refused rather than answered differently from Spark.
//! - `split`, `regexp_extract`, `regexp_extract_all`: see `regexp`.
//! - `typeof(x)`: the argument's type as Spark writes it.
//! - the higher-order functions (`lambdas`), generators (`generators`), datetime patterns
//!   (`datetime`), JSON (`json`), the `try_` operators (`arithmetic`) and `mask` (`strings`)
//!   are registered from here too.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, StringArray};
use arrow::datatypes::DataType;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::datasource::{provider_as_source, ViewTable};
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TypeSignature, Volatility,
};
use datafusion::prelude::{col, SessionContext};
use serde_json::Value;

/// Registers this module's functions with `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(GetJsonObject::new()));
    ctx.register_udf(ScalarUDF::from(TypeOf { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(VoidAsDouble { signature: Signature::any(1, Volatility::Immutable) }));
    for name in ["element_at", "try_element_at"] {
        ctx.register_udf(ScalarUDF::from(ElementAt { name, signature: Signature::any(2, Volatility::Immutable) }));
    }
    for f in crate::regexp::RegexpFunction::all() {
        ctx.register_udf(ScalarUDF::from(f));
    }
    crate::lambdas::register(ctx);
    crate::datetime::register(ctx);
    crate::timestamps::register(ctx);
    crate::modes::register(ctx);
    crate::moments::register(ctx);
    crate::bitmaps::register(ctx);
    crate::sketches::register(ctx);
    crate::aes::register(ctx);
    crate::conv::register(ctx);
    crate::murmur3::register(ctx);
    crate::intervals::register(ctx);
    crate::interval_literals::register(ctx);
    crate::percentiles::register(ctx);
    crate::approx_percentile::register(ctx);
    crate::binary::register(ctx);
    crate::numbers::register(ctx);
    crate::format_number::register(ctx);
    crate::arrays::register(ctx);
    crate::maps::register(ctx);
    crate::rounding::register(ctx);
    crate::strings::register(ctx);
    crate::text_arguments::register(ctx);
    crate::arithmetic::register(ctx);
    crate::json::register(ctx);
    crate::csv::register(ctx);
    crate::set_order::register(ctx);
    crate::time_windows::register(ctx);
    crate::variant::register(ctx);
    crate::xpath::register(ctx);
    crate::generators::register(ctx);
    // Last: it wraps functions registered before it.
    crate::interval_arithmetic::register(ctx);
    crate::interval_aggregates::register(ctx);
    if let Ok(builtin) = ctx.table_function("range") {
        ctx.register_udtf("range", Arc::new(SparkRange { inner: Arc::clone(builtin.function()) }));
    }
}

/// Spark's `range`: DataFusion's, with its column named `id`.
#[derive(Debug)]
struct SparkRange {
    inner: Arc<dyn TableFunctionImpl>,
}

impl TableFunctionImpl for SparkRange {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if exprs.is_empty() || exprs.len() > 4 {
            return datafusion::common::plan_err!(
                "range takes 1 to 4 arguments: range(end) or range(start, end[, step[, numPartitions]])"
            );
        }
        let provider =
            self.inner.call_with_args(TableFunctionArgs::new(&exprs[..exprs.len().min(3)], args.session()))?;
        let plan = LogicalPlanBuilder::scan("range", provider_as_source(provider), None)?
            .project(vec![col("value").alias("id")])?
            .build()?;
        Ok(Arc::new(ViewTable::new(plan, None)))
    }
}

/// The name of [`VoidAsDouble`].
pub(crate) const VOID_AS_DOUBLE: &str = "__thund_void_as_double";

/// `__thund_void_as_double(x)`: `x`, or a DOUBLE NULL where `x` is of type VOID (`resolution`
/// puts it around the arguments of `sum` when one is VOID: Spark's sum of VOID is a DOUBLE).
#[derive(Debug, PartialEq, Eq, Hash)]
struct VoidAsDouble {
    signature: Signature,
}

impl ScalarUDFImpl for VoidAsDouble {
    fn name(&self) -> &str {
        VOID_AS_DOUBLE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(match &args[0] {
            DataType::Null => DataType::Float64,
            other => other.clone(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let value = args.args.into_iter().next().expect("one argument");
        Ok(match value {
            ColumnarValue::Scalar(s) if s.data_type() == DataType::Null => {
                ColumnarValue::Scalar(datafusion::common::ScalarValue::Float64(None))
            }
            ColumnarValue::Array(a) if a.data_type() == &DataType::Null => {
                ColumnarValue::Array(arrow::array::new_null_array(&DataType::Float64, a.len()))
            }
            other => other,
        })
    }
}

/// `typeof(x)`: the argument's type as Spark writes it (`int`, `array<struct<q:int>>`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        // An interval's type names its fields (`interval day to hour`), which its Arrow type
        // does not keep (a literal's is answered in the parse, `interval_literals`).
        if args.first().is_some_and(crate::interval_arithmetic::is_interval) {
            return plan_err!("typeof of an interval runs on the Spark backend (its fields are not kept here)");
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = crate::types::spark_simple_string(args.arg_fields[0].data_type());
        Ok(ColumnarValue::Scalar(datafusion::common::ScalarValue::Utf8(Some(name))))
    }
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

/// `a` with the rows `nulls` marks NULL made NULL too (a parent's NULLs over its children).
pub(crate) fn with_nulls(a: ArrayRef, nulls: Option<&arrow::buffer::NullBuffer>) -> Result<ArrayRef> {
    let Some(nulls) = nulls else { return Ok(a) };
    let data = a.to_data();
    let merged = arrow::buffer::NullBuffer::union(data.nulls(), Some(nulls));
    Ok(arrow::array::make_array(data.into_builder().nulls(merged).build()?))
}

/// An argument's values as UTF-8 strings.
pub(crate) fn utf8(a: &ArrayRef) -> Result<StringArray> {
    let c = arrow::compute::cast(a, &DataType::Utf8)?;
    Ok(c.as_any().downcast_ref::<StringArray>().cloned().unwrap_or_else(|| StringArray::new_null(a.len())))
}

/// A function's result: one value when every argument was one.
pub(crate) fn columnar(result: ArrayRef, scalar: bool) -> Result<ColumnarValue> {
    Ok(if scalar {
        ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&result, 0)?)
    } else {
        ColumnarValue::Array(result)
    })
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
    fn range_is_sparks_with_an_id_column() {
        let ctx = crate::engine::new_context("spark_catalog", "default", &Default::default()).unwrap();
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let rows = |sql: &str| {
            let batches = rt.block_on(async { ctx.sql(sql).await?.collect().await }).unwrap();
            arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string()
        };
        assert!(rows("SELECT sum(id) AS s, count(*) AS n FROM range(1, 11)").contains("| 55 | 10 |"));
        assert!(rows("SELECT max(id) AS m FROM range(5)").contains("| 4 |"));
        assert!(rows("SELECT count(*) AS n FROM range(0, 10, 3, 4)").contains("| 4 |"), "numPartitions is dropped");
        assert!(rt.block_on(async { ctx.sql("SELECT * FROM range()").await }).is_err());
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

/// `index` (counted from 1) checked against `array`'s length: an index outside a (non-NULL)
/// array fails the query, as a subscript does in Spark's ANSI mode.
pub(crate) fn index_within(
    array: datafusion::logical_expr::Expr,
    index: datafusion::logical_expr::Expr,
) -> datafusion::logical_expr::Expr {
    checked_index(array, index, IndexRule::Subscript)
}

/// `element_at(array, index)`'s index (counted from 1, or from the end when negative) checked
/// against `array`: 0 fails the query in either mode, an index outside the array in ANSI mode.
pub(crate) fn element_at_index(
    array: datafusion::logical_expr::Expr,
    index: datafusion::logical_expr::Expr,
    ansi: bool,
) -> datafusion::logical_expr::Expr {
    checked_index(array, index, IndexRule::ElementAt { ansi })
}

/// `element_at` and `try_element_at` of an array or a map, typed here and planned by `fidelity` (DataFusion's
/// `element_at` is `map_extract`, which takes no array, and answers a list of one value).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ElementAt {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for ElementAt {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
                Ok(item.data_type().clone())
            }
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(fields) if fields.len() == 2 => Ok(fields[1].data_type().clone()),
                other => exec_err!("element_at: a map's entries are {other}"),
            },
            DataType::Null => Ok(DataType::Null),
            other => plan_err!("element_at takes an array or a map, not a {}", crate::types::spark_type_name(other)),
        }
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // Every query's plan goes through `fidelity::spark_semantics`, which replaces the call.
        exec_err!("{} is planned as array_element or map_extract before it runs", self.name)
    }
}

/// How an index is checked against its array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum IndexRule {
    /// A subscript's, counted from 1 here: it fails outside the array.
    Subscript,
    /// `element_at`'s.
    ElementAt { ansi: bool },
}

fn checked_index(
    array: datafusion::logical_expr::Expr,
    index: datafusion::logical_expr::Expr,
    rule: IndexRule,
) -> datafusion::logical_expr::Expr {
    let udf = ScalarUDF::from(IndexWithin { rule, signature: Signature::any(2, Volatility::Immutable) });
    datafusion::logical_expr::Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction {
        func: Arc::new(udf),
        args: vec![array, index],
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IndexWithin {
    rule: IndexRule,
    signature: Signature,
}

impl ScalarUDFImpl for IndexWithin {
    fn name(&self) -> &str {
        "index_within"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use arrow::array::AsArray;
        let n = args.number_rows;
        let (arrays, index) = (args.args[0].to_array(n)?, &args.args[1]);
        let positions = arrow::compute::cast(&index.to_array(n)?, &DataType::Int64)?;
        let positions = positions.as_primitive::<arrow::datatypes::Int64Type>();
        let lengths: Vec<Option<usize>> = match arrays.data_type() {
            DataType::List(_) => arrays.as_list::<i32>().iter().map(|a| a.map(|a| a.len())).collect(),
            DataType::LargeList(_) => arrays.as_list::<i64>().iter().map(|a| a.map(|a| a.len())).collect(),
            DataType::FixedSizeList(_, size) => (0..n).map(|i| arrays.is_valid(i).then_some(*size as usize)).collect(),
            _ => return Ok(index.clone()),
        };
        for (len, at) in lengths.iter().zip(positions.iter()) {
            let (Some(len), Some(at)) = (len, at) else { continue };
            if let IndexRule::ElementAt { ansi } = self.rule {
                if at == 0 {
                    return exec_err!(
                        "[INVALID_INDEX_OF_ZERO] element_at: the index 0 is invalid (the first element has index 1, \
                         the last -1)"
                    );
                }
                if ansi && at.unsigned_abs() > *len as u64 {
                    return exec_err!(
                        "[INVALID_ARRAY_INDEX_IN_ELEMENT_AT] element_at: the index {at} is out of bounds: the array \
                         has {len} elements. Use try_element_at to get NULL instead, or set spark.sql.ansi.enabled \
                         to false"
                    );
                }
                continue;
            }
            if at < 1 || at as usize > *len {
                return exec_err!(
                    "[INVALID_ARRAY_INDEX] the index {} is out of bounds: the array has {len} elements. Use get() to \
                     get NULL for an index outside the array, or set spark.sql.ansi.enabled to false",
                    at - 1
                );
            }
        }
        Ok(index.clone())
    }
}
