//! Spark's spellings DataFusion reads otherwise, rewritten on the parse, in queries and in
//! expressions alike: functions DataFusion has under another name or form (`calls`' templates
//! and rewrites), Spark's literals (`1L`, `1.5e3`, escaped strings, typed intervals), `struct`'s
//! field names, `CAST(… AS MAP<…>)`, a lambda's `x.f`, and a table function's named `input`.

use std::ops::ControlFlow;

use sqlparser::ast::{
    CastKind, DataType as SqlType, Expr, FunctionArguments, Ident, ObjectName, TableFactor, Value, VisitMut, VisitorMut,
};

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
        crate::analysis::calls::fill_grouping_id(query);
        if let sqlparser::ast::SetExpr::Values(values) = query.body.as_mut() {
            for row in values.rows.iter_mut() {
                let _ = sqlparser::ast::visit_expressions_mut(row, |e| {
                    if let Some(int) = crate::analysis::calls::int_literal(e) {
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
        // Spark's typed interval literals (`interval_literals`).
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
        if let Some(new) = crate::analysis::calls::rewrite_date_part(expr)
            .or_else(|| crate::analysis::calls::rewrite_call(expr))
            .or_else(|| crate::analysis::calls::rewrite_decode(expr))
            .or_else(|| crate::analysis::calls::rewrite_listagg(expr))
            .or_else(|| crate::analysis::calls::rewrite_mode(expr))
            .or_else(|| crate::analysis::calls::rewrite_assert_true(expr))
            .or_else(|| crate::analysis::calls::rewrite_json_tuple(expr))
            .or_else(|| crate::analysis::calls::rewrite_options(expr))
            .or_else(|| crate::analysis::calls::rewrite_ceil_floor(expr))
            .or_else(|| crate::analysis::calls::rewrite_int_fields(expr))
            .or_else(|| crate::analysis::calls::rewrite_operator(expr))
            .or_else(|| crate::analysis::calls::rewrite_ignore_nulls(expr))
            .or_else(|| crate::analysis::calls::rewrite_rank_arguments(expr))
            .or_else(|| crate::analysis::calls::rewrite_negative_bigint(expr))
            .or_else(|| crate::analysis::calls::rewrite_like_escape(expr))
            .or_else(|| rewrite_position(expr))
            .or_else(|| rewrite_struct(expr))
            .or_else(|| rewrite_any_value(expr))
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
    let call = crate::analysis::calls::function;
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
    Some(crate::analysis::calls::function("named_struct", args))
}

/// `any_value(x)` → `first_value(x)`: Spark's is the group's first value, NULL included
/// (DataFusion's skips NULLs).
fn rewrite_any_value(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("any_value") || list.args.len() != 1 {
        return None;
    }
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("first_value")]);
    Some(Expr::Function(call))
}

/// `position(substr, str)` and `locate(substr, str)` → `strpos(str, substr)`: DataFusion takes
/// `position`'s arguments the other way (the `POSITION(substr IN str)` syntax is planned right).
fn rewrite_position(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    if name != "position" && name != "locate" {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let [substr, string] = list.args.as_slice() else { return None };
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("strpos")]);
    let mut args = list.clone();
    args.args = vec![string.clone(), substr.clone()];
    call.args = FunctionArguments::List(args);
    Some(Expr::Function(call))
}
