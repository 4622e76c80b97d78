//! Spark's spellings and answers where DataFusion's string functions differ.

use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::{lit, Expr, ExprSchemable};
use sqlparser::ast::{Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName};

use crate::declare::{call, Call, PlanContext};

/// `locate(substr, str, pos)` and `position(substr, str, pos)`: 0 before position 1 or for a
/// NULL position; an empty string is found at 1 (as Java's `indexOf` finds it at 0).
pub(super) const LOCATE_FROM: &str = "CAST(CASE WHEN __a3 IS NULL THEN 0 WHEN __a1 IS NULL OR __a2 IS NULL THEN NULL \
     WHEN __a3 < 1 THEN 0 WHEN __a1 = '' THEN 1 WHEN strpos(substring(__a2, __a3), __a1) = 0 THEN 0 \
     ELSE strpos(substring(__a2, __a3), __a1) + __a3 - 1 END AS INT)";

/// `position(substr, str)` and `locate(substr, str)` → `strpos(str, substr)`.
pub(super) fn position(expr: &SqlExpr) -> Option<SqlExpr> {
    let SqlExpr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    let [substr, string] = list.args.as_slice() else { return None };
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("strpos")]);
    let mut args = list.clone();
    args.args = vec![string.clone(), substr.clone()];
    call.args = FunctionArguments::List(args);
    Some(SqlExpr::Function(call))
}

/// `assert_true(x)` → `assert_true(x, '\'<x>\' is not true!')`: Spark's message names the
/// expression as its SQL (`'(1 < 0)' is not true!`), which the function itself cannot see.
pub(super) fn assert_true(expr: &SqlExpr) -> Option<SqlExpr> {
    let SqlExpr::Function(f) = expr else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("assert_true") || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let [x] = crate::syntax::unnamed_args(list)?[..] else { return None };
    let text = crate::analysis::names::sql(x).unwrap_or_else(|| x.to_string());
    let message = SqlExpr::value(sqlparser::ast::Value::SingleQuotedString(format!("'{text}' is not true!")));
    let mut call = f.clone();
    let mut args = list.clone();
    args.args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(message)));
    call.args = FunctionArguments::List(args);
    Some(SqlExpr::Function(call))
}

/// `format_string` (`printf`): each argument as Spark's formatter takes it (`text_arguments`).
pub(super) fn format_string(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    let name = c.name().to_string();
    let args = super::text_arguments::format_arguments(&name, c.args, cx.schema)?;
    Ok(Transformed::yes(call(c.func, args)))
}

/// `left`, `substr`/`substring`, `lpad`, `rpad` and `overlay` of a BINARY are bytes
/// (DataFusion's read the bytes as text).
pub(super) fn of_bytes(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    let bytes =
        c.args.first().is_some_and(|a| a.get_type(cx.schema).is_ok_and(|t| crate::functions::binary::is_bytes(&t)));
    if !bytes {
        return c.unchanged();
    }
    let substr = crate::functions::binary::substr;
    let name = c.name().to_string();
    let new = match name.as_str() {
        "left" if c.args.len() == 2 => call(substr(), vec![c.args[0].clone(), lit(1i64), c.args[1].clone()]),
        "substr" | "substring" => call(substr(), c.args),
        _ => match crate::functions::binary::bytes_function(&name) {
            Some(function) => call(function, c.args),
            None => return c.unchanged(),
        },
    };
    Ok(Transformed::yes(new))
}
