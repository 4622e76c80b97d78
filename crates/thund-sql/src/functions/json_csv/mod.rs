//! Spark's JSON and CSV functions (`json`, `csv`, `get_json_object`), and values written as
//! their writers write them (`value_text`).

pub(crate) mod csv;
pub(crate) mod get_json_object;
pub(crate) mod json;
pub(crate) mod value_text;

use sqlparser::ast::{Expr, FunctionArguments, Value};

use crate::declare::Function;

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    get_json_object::register(ctx);
    json::register(ctx);
    csv::register(ctx);
}

/// Spark's JSON and CSV functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("get_json_object"),
    Function::udf("from_json").parse(options_as_literals),
    Function::udf("to_json").parse(options_as_literals),
    Function::udf("json_array_length"),
    Function::udf("json_object_keys"),
    Function::udf("from_csv").parse(options_as_literals),
    Function::udf("to_csv").parse(options_as_literals),
    Function::udf("schema_of_csv").parse(options_as_literals),
    // Spark returns one column per field, DataFusion one struct: refused, but for fields
    // named by plain words ([`json_tuple`]).
    Function::refused("json_tuple", "Spark returns one column per field, DataFusion one struct").parse(json_tuple),
];

/// `from_json(text, schema, map('k', 'v', …))` → `from_json(text, schema, 'k', 'v', …)`: a map
/// of literal options is passed as literals, so that the function reads (and refuses) its
/// options when it is planned.
pub(crate) fn options_as_literals(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = crate::syntax::name_of(f);
    if f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let args = crate::syntax::unnamed_args(list)?;
    let (Expr::Function(options), before) = args.split_last()? else { return None };
    if !options.name.to_string().eq_ignore_ascii_case("map") {
        return None;
    }
    let FunctionArguments::List(entries) = &options.args else { return None };
    let entries = crate::syntax::unnamed_args(entries)?;
    let literal = |e: &Expr| matches!(e, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)));
    if !entries.iter().all(|e| literal(e)) {
        return None;
    }
    let mut flat: Vec<Expr> = before.iter().map(|e| (*e).clone()).collect();
    flat.extend(entries.into_iter().cloned());
    Some(crate::syntax::function(&name, flat))
}

/// `json_tuple(json, 'a', 'b', …)` → `inline(array(named_struct('c0', get_json_object(json,
/// '$.a'), 'c1', …)))`: one row of the fields' values as text, in columns named `c0`, `c1`, … as
/// Spark names them (a LATERAL VIEW's `AS` names them otherwise), NULLs for a NULL or malformed
/// document. Only field names that are plain words are taken (another name stays refused).
fn json_tuple(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("json_tuple") || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let args = crate::syntax::unnamed_args(list)?;
    let (json, fields) = args.split_first()?;
    if fields.is_empty() || !list.clauses.is_empty() {
        return None;
    }
    let mut named = Vec::with_capacity(2 * fields.len());
    for (i, field) in fields.iter().enumerate() {
        let Expr::Value(v) = field else { return None };
        let sqlparser::ast::Value::SingleQuotedString(name) = &v.value else { return None };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let text = |s: String| Expr::value(sqlparser::ast::Value::SingleQuotedString(s));
        named.push(text(format!("c{i}")));
        named.push(crate::syntax::function("get_json_object", vec![(*json).clone(), text(format!("$.{name}"))]));
    }
    Some(crate::syntax::function(
        "inline",
        vec![crate::syntax::function("array", vec![crate::syntax::function("named_struct", named)])],
    ))
}
