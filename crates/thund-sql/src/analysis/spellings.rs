//! Spark's spellings DataFusion reads otherwise, rewritten on the parse, in queries and in
//! expressions alike: functions DataFusion has under another name or form (each function's
//! declaration in its category: templates and rewrites), Spark's literals (`1L`, `1.5e3`, escaped strings, typed intervals), `struct`'s
//! field names, `MINUS` as `EXCEPT`, `CAST(… AS MAP<…>)`, a lambda's `x.f`, and a table function's named `input`.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::OnceLock;

use sqlparser::ast::{CastKind, DataType as SqlType, Expr, TableFactor, Value, VisitMut, VisitorMut};

use crate::modes::SqlModes;

/// The analysis rule: every spelling of `query` as DataFusion reads it.
pub(crate) fn rewrite_query(query: &mut sqlparser::ast::Query, _: &SqlModes) -> Result<(), String> {
    let _ = query.visit(&mut SparkFunctions);
    Ok(())
}

/// Every spelling of `expr` (an expectation, an AUTO CDC clause) as DataFusion reads it.
pub(crate) fn rewrite_expr(expr: &mut Expr) {
    let _ = expr.visit(&mut SparkFunctions);
}

/// Spark's `MINUS` (and `MINUS ALL`) is `EXCEPT`, which DataFusion's planner knows by that name only.
fn minus_as_except(body: &mut sqlparser::ast::SetExpr) {
    use sqlparser::ast::{SetExpr, SetOperator};
    if let SetExpr::SetOperation { op, left, right, .. } = body {
        if *op == SetOperator::Minus {
            *op = SetOperator::Except;
        }
        minus_as_except(left);
        minus_as_except(right);
    }
}

/// The Spark functions DataFusion spells differently, rewritten in a parse (queries' and
/// expressions' alike).
struct SparkFunctions;

impl VisitorMut for SparkFunctions {
    type Break = ();

    /// A `VALUES` row's integer literals are INTs, as Spark types them, before the planner
    /// gives each column its rows' common type: a BIGINT nested in a row (`array(1)`,
    /// `named_struct('q', 2)`) would make the column's type BIGINT however the literal is
    /// retyped later.
    fn pre_visit_query(&mut self, query: &mut sqlparser::ast::Query) -> ControlFlow<()> {
        crate::functions::aggregate::spellings::fill_grouping_id(query);
        minus_as_except(&mut query.body);
        if let sqlparser::ast::SetExpr::Values(values) = query.body.as_mut() {
            for row in values.rows.iter_mut() {
                let _ = sqlparser::ast::visit_expressions_mut(row, |e| {
                    if let Some(int) = crate::syntax::int_literal(e) {
                        *e = int;
                    }
                    ControlFlow::<()>::Continue(())
                });
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Some(new) = crate::functions::interval::literals::rewrite_around_literal(expr) {
            *expr = new;
        }
        ControlFlow::Continue(())
    }

    /// `variant_explode(input => v)`: DataFusion's table functions take their arguments by
    /// position.
    fn pre_visit_table_factor(&mut self, tf: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { args: Some(targs), .. } = tf {
            for a in targs.args.iter_mut() {
                if let sqlparser::ast::FunctionArg::Named { name, arg, .. } = a {
                    if name.value.eq_ignore_ascii_case("input") {
                        *a = sqlparser::ast::FunctionArg::Unnamed(arg.clone());
                    }
                }
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        // Spark names a lambda's `(x, y)` struct after its variables, as `struct(x, y)`; `x.f`
        // is a field of the variable `x` (the planner would look for a table `x`).
        if let Expr::Lambda(lambda) = expr {
            let params: Vec<String> = lambda.params.iter().map(|p| p.name.value.clone()).collect();
            let _ = sqlparser::ast::visit_expressions_mut(&mut lambda.body, |e| {
                if let Expr::CompoundIdentifier(ids) = e {
                    if ids.len() > 1 && params.contains(&ids[0].value) {
                        // As `x['f']`: the planner reads `x.f` back as a table's column.
                        let access_chain = ids[1..]
                            .iter()
                            .map(|f| {
                                sqlparser::ast::AccessExpr::Subscript(sqlparser::ast::Subscript::Index {
                                    index: Expr::value(Value::SingleQuotedString(f.value.clone())),
                                })
                            })
                            .collect();
                        *e = Expr::CompoundFieldAccess {
                            root: Box::new(Expr::Identifier(ids[0].clone())),
                            access_chain,
                        };
                    }
                }
                if let Expr::Tuple(values) = e {
                    let as_struct = Expr::Struct { values: std::mem::take(values), fields: Vec::new() };
                    *e = rewrite_struct(&as_struct).unwrap_or(as_struct);
                }
                ControlFlow::<()>::Continue(())
            });
        }
        // Spark's typed interval literals (`functions::interval::literals`).
        if let Expr::Interval(i) = expr {
            *expr = match crate::functions::interval::literals::Literal::parse(i) {
                Ok(literal) => literal.to_sql(),
                Err(why) => crate::functions::interval::literals::refusal_sql(&why),
            };
            return ControlFlow::Continue(());
        }
        if let Some(new) = rewrite_map_cast(expr) {
            *expr = new;
        }
        if let Some(new) = spell_call(expr)
            .or_else(|| rewrite_ceil_floor(expr))
            .or_else(|| rewrite_operator(expr))
            .or_else(|| rewrite_negative_bigint(expr))
            .or_else(|| rewrite_like_escape(expr))
            .or_else(|| rewrite_struct(expr))
        {
            *expr = new;
        }
        if let Expr::Value(v) = expr {
            if let Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) = &mut v.value {
                *s = crate::analysis::string_literals::spark_unescape(s);
            }
            // Spark's `1L` is a BIGINT, whatever its size (the parser reads the suffix).
            if let Value::Number(n, true) = &mut v.value {
                let n = std::mem::take(n);
                *expr = Expr::Cast {
                    kind: sqlparser::ast::CastKind::Cast,
                    expr: Box::new(Expr::value(Value::Number(n, false))),
                    data_type: sqlparser::ast::DataType::BigInt(None),
                    array: false,
                    format: None,
                };
                return ControlFlow::Continue(());
            }
            // Spark's `1.5e3` is a DOUBLE; the parser's option (see `new_context`) makes every
            // other number with a fraction a DECIMAL, as Spark's `1.5` is. The number is read as
            // text: through a DECIMAL, `1e30` (scale -30) would be multiplied by an inexact power
            // of ten and answer 1.0000000000000002E30.
            if let Value::Number(n, _) = &v.value {
                if !n.contains(['e', 'E']) {
                    return ControlFlow::Continue(());
                }
                *expr = Expr::Cast {
                    kind: sqlparser::ast::CastKind::Cast,
                    expr: Box::new(Expr::value(Value::SingleQuotedString(n.clone()))),
                    data_type: sqlparser::ast::DataType::Double(sqlparser::ast::ExactNumberInfo::None),
                    array: false,
                    format: None,
                };
            }
        }
        ControlFlow::Continue(())
    }
}

/// `CAST(m AS MAP<K, V>)` → `map_from_arrays(CAST(map_keys(m) AS ARRAY<K>), CAST(map_values(m)
/// AS ARRAY<V>))`: DataFusion's SQL has no map type to cast to. A NULL stays NULL.
fn rewrite_map_cast(expr: &Expr) -> Option<Expr> {
    let Expr::Cast { kind: CastKind::Cast, expr: inner, data_type: SqlType::Map(k, v), format: None, .. } = expr else {
        return None;
    };
    let call = crate::syntax::function;
    let array_of = |e: Expr, t: &SqlType| Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(e),
        data_type: SqlType::Array(sqlparser::ast::ArrayElemTypeDef::AngleBracket(Box::new(t.clone()))),
        array: false,
        format: None,
    };
    // A NULL has no keys to take: it becomes NULL arrays of the types.
    let null = matches!(inner.as_ref(), Expr::Value(v) if v.value == Value::Null);
    let part = |name: &str| if null { inner.as_ref().clone() } else { call(name, vec![inner.as_ref().clone()]) };
    let keys = array_of(part("map_keys"), k);
    let values = array_of(part("map_values"), v);
    Some(call("map_from_arrays", vec![keys, values]))
}

/// `struct(a, s.b, 1)` → `named_struct('a', a, 'b', s.b, 'col3', 1)`: Spark names a struct's
/// fields after the columns given, and `col1`, `col2`, … otherwise (DataFusion: `c0`, `c1`, …).
pub(crate) fn rewrite_struct(expr: &Expr) -> Option<Expr> {
    // The parser reads `struct(…)` as a struct literal.
    let Expr::Struct { values, fields } = expr else { return None };
    if !fields.is_empty() {
        return None;
    }
    let mut args = Vec::new();
    for (i, e) in values.iter().enumerate() {
        let (name, value) = match e {
            Expr::Named { expr, name } => (name.value.clone(), expr.as_ref().clone()),
            Expr::Identifier(id) => (id.value.clone(), e.clone()),
            Expr::CompoundIdentifier(ids) => (ids.last()?.value.clone(), e.clone()),
            _ => (format!("col{}", i + 1), e.clone()),
        };
        args.push(Expr::value(Value::SingleQuotedString(name)));
        args.push(value);
    }
    Some(crate::syntax::function("named_struct", args))
}

/// A call as its function's declaration spells it (`crate::declare`): by its template for the
/// call's argument count, else with the integer literals it takes as INTs, else by its parse
/// rewrite. The templates are parsed once, by the front-end.
fn spell_call(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let function = crate::functions::lookup(&crate::syntax::name_of(f))?;
    if let Some(mut args) = crate::syntax::plain_args(f) {
        if let Some(template) = template(function, args.len()) {
            for &i in function.ints {
                if let Some(int) = args.get(i).and_then(crate::syntax::int_literal) {
                    args[i] = int;
                }
            }
            let mut out = template.clone();
            let _ = out.visit(&mut Substitute { args: &args });
            return Some(out);
        }
    }
    if function.templates.is_empty() && !function.ints.is_empty() {
        if let Some(call) = crate::syntax::int_arguments(f, function.ints) {
            return Some(Expr::Function(call));
        }
    }
    function.parse.and_then(|rewrite| rewrite(expr))
}

/// The parsed template of `function` for `arity` arguments. (A template that does not parse, a
/// defect this module's tests find, is left out: its calls stay missing functions, refused.)
fn template(function: &crate::declare::Function, arity: usize) -> Option<&'static Expr> {
    static PARSED: OnceLock<HashMap<(&'static str, usize), Expr>> = OnceLock::new();
    let parsed = PARSED.get_or_init(|| {
        crate::functions::all()
            .flat_map(|f| f.templates.iter().map(move |(n, sql)| (f.name, *n, *sql)))
            .filter_map(|(name, n, sql)| {
                let ast = knut_thund::frontend::parse_expression(sql).ok()?.ast?;
                Some(((name, n), ast.as_ref().clone()))
            })
            .collect()
    });
    parsed.get(&(function.name, arity))
}

/// Puts the call's arguments where the template names them.
struct Substitute<'a> {
    args: &'a [Expr],
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(id) = expr {
            if let Some(i) = id.value.strip_prefix("__a").and_then(|n| n.parse::<usize>().ok()) {
                if let Some(arg) = self.args.get(i - 1) {
                    *expr = arg.clone();
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Spark's operators DataFusion's SQL lacks, as the functions computing them (`datafusion-spark`'s
/// and `arithmetic`'s): `!x` is `NOT x`, `~x` `bitwise_not(x)`, `a << b` `shiftleft(a, b)`,
/// `a >> b` `shiftright`, `a >>> b` `shiftrightunsigned`, and `a DIV b` `div(a, b)` (integer
/// division, a BIGINT).
fn rewrite_operator(expr: &Expr) -> Option<Expr> {
    use sqlparser::ast::{BinaryOperator, UnaryOperator};
    match expr {
        Expr::UnaryOp { op: UnaryOperator::BangNot, expr } => {
            Some(Expr::UnaryOp { op: UnaryOperator::Not, expr: expr.clone() })
        }
        Expr::UnaryOp { op: UnaryOperator::BitwiseNot, expr } => {
            Some(crate::syntax::function("bitwise_not", vec![*expr.clone()]))
        }
        Expr::BinaryOp { left, op, right } => {
            let name = match op {
                BinaryOperator::PGBitwiseShiftLeft => "shiftleft",
                BinaryOperator::PGBitwiseShiftRight => "shiftright",
                BinaryOperator::Custom(s) if s == ">>>" => "shiftrightunsigned",
                BinaryOperator::MyIntegerDivide => "div",
                _ => return None,
            };
            Some(crate::syntax::function(name, vec![*left.clone(), *right.clone()]))
        }
        _ => None,
    }
}

/// `-1L` where `1L` was already made `CAST(1 AS BIGINT)`: the negative number cast, so the
/// least BIGINT, `-9223372036854775808L`, whose digits alone do not fit, is read as one.
fn rewrite_negative_bigint(expr: &Expr) -> Option<Expr> {
    let Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Minus, expr } = expr else { return None };
    let Expr::Cast { expr: inner, data_type: sqlparser::ast::DataType::BigInt(None), .. } = expr.as_ref() else {
        return None;
    };
    let Expr::Value(v) = inner.as_ref() else { return None };
    let sqlparser::ast::Value::Number(n, false) = &v.value else { return None };
    let mut cast = expr.as_ref().clone();
    if let Expr::Cast { expr, .. } = &mut cast {
        **expr = Expr::value(sqlparser::ast::Value::Number(format!("-{n}"), false));
    }
    Some(cast)
}

/// `x LIKE 'p' ESCAPE 'e'` (`ILIKE`) with a literal pattern: the pattern with `e` escapes
/// written as backslash ones, the only escape DataFusion's LIKE takes (a backslash that `e`
/// does not escape is written escaped). An escape before anything but `%`, `_` or itself is
/// Spark's error; it is left to fail.
fn rewrite_like_escape(expr: &Expr) -> Option<Expr> {
    use sqlparser::ast::Value;
    let (Expr::Like { escape_char: Some(e), pattern, .. } | Expr::ILike { escape_char: Some(e), pattern, .. }) = expr
    else {
        return None;
    };
    let (Value::SingleQuotedString(e) | Value::DoubleQuotedString(e)) = &e.value else { return None };
    let mut e = e.chars();
    let (Some(escape), None) = (e.next(), e.next()) else { return None };
    let Expr::Value(p) = pattern.as_ref() else { return None };
    let (Value::SingleQuotedString(p) | Value::DoubleQuotedString(p)) = &p.value else { return None };
    // A character matched as itself, escaped where DataFusion's LIKE would read it otherwise.
    let literal = |out: &mut String, c: char| {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    };
    let mut out = String::new();
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c != escape {
            if c == '\\' {
                literal(&mut out, c);
            } else {
                out.push(c);
            }
            continue;
        }
        match chars.next() {
            Some(n) if matches!(n, '%' | '_') || n == escape => literal(&mut out, n),
            _ => return None,
        }
    }
    let mut rewritten = expr.clone();
    if let Expr::Like { escape_char, pattern, .. } | Expr::ILike { escape_char, pattern, .. } = &mut rewritten {
        *escape_char = None;
        **pattern = Expr::value(Value::SingleQuotedString(out));
    }
    Some(rewritten)
}

/// `ceil(x, d)` and `floor(x, d)` where the parser reads them as CEIL and FLOOR with a scale
/// (else they are calls, rewritten by their templates), as the functions `rounding` has for
/// them: `ceil_at(x, d)`, `floor_at(x, d)`.
fn rewrite_ceil_floor(expr: &Expr) -> Option<Expr> {
    let (name, value, scale) = match expr {
        Expr::Ceil { expr, field: sqlparser::ast::CeilFloorKind::Scale(scale) } => ("ceil_at", expr, scale),
        Expr::Floor { expr, field: sqlparser::ast::CeilFloorKind::Scale(scale) } => ("floor_at", expr, scale),
        _ => return None,
    };
    Some(crate::syntax::function(name, vec![value.as_ref().clone(), Expr::Value(scale.clone())]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spelled(sql: &str) -> String {
        let e = knut_thund::frontend::parse_expression(sql).unwrap().ast.unwrap();
        spell_call(&e).map_or_else(|| "unchanged".into(), |e| e.to_string())
    }

    #[test]
    fn every_template_parses_and_arguments_are_substituted_as_parsed() {
        for f in crate::functions::all() {
            for (arity, sql) in f.templates {
                assert!(template(f, *arity).is_some(), "{}: {sql}", f.name);
            }
        }
        assert_eq!(spelled("lcase('A''b')"), "lower('A''b')");
        assert_eq!(
            spelled("max_by(x, y + 1)"),
            "first_value(CASE WHEN y + 1 IS NOT NULL THEN x END ORDER BY y + 1 DESC NULLS LAST)"
        );
        assert_eq!(spelled("date_add(d, 1)"), "date_add(CAST(d AS DATE), CAST(1 AS INT))");
        // Another argument count, a named argument, or a window is left alone.
        assert_eq!(spelled("lcase(a, b)"), "unchanged");
        assert_eq!(spelled("first(x) OVER (ORDER BY y)"), "unchanged");
    }

    #[test]
    fn a_call_without_a_template_takes_its_ints_then_its_rewrite() {
        assert_eq!(spelled("make_timestamp(2024, 1, 2, 3, 4, 5.5)").matches("CAST(").count(), 5);
        assert_eq!(spelled("first(x, true)"), "first_value(x) IGNORE NULLS");
        assert_eq!(spelled("position('b', s)"), "strpos(s, 'b')");
        assert_eq!(spelled("no_such_function(1)"), "unchanged");
    }
}
