//! Spark's aggregate spellings DataFusion reads otherwise, rewritten on the parse.

use std::ops::ControlFlow;

use sqlparser::ast::{
    CastKind, DataType as SqlType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName,
};

/// `first(x, true)` (`last`, `first_value`, `last_value`, `any_value`): the function skipping
/// NULLs (`IGNORE NULLS`); with `false`, the function of one argument. Only a literal says
/// which; any other second argument is left to fail.
pub(super) fn ignore_nulls(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let target = match crate::syntax::name_of(f).as_str() {
        "first" | "first_value" | "any_value" => "first_value",
        "last" | "last_value" => "last_value",
        _ => return None,
    };
    let FunctionArguments::List(list) = &f.args else { return None };
    let [value, FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(flag)))] = list.args.as_slice() else {
        return None;
    };
    let ignore = match flag.value {
        sqlparser::ast::Value::Boolean(b) => b,
        _ => return None,
    };
    let mut call = f.clone();
    let mut list = list.clone();
    list.args = vec![value.clone()];
    call.args = FunctionArguments::List(list);
    // `any_value(x)` keeps the group's first value, NULL or not (see [`any_value`]).
    call.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(target)]);
    if ignore {
        call.null_treatment = Some(sqlparser::ast::NullTreatment::IgnoreNulls);
    }
    Some(Expr::Function(call))
}

/// `any_value(x)` → `first_value(x)`: Spark's is the group's first value, NULL included
/// (DataFusion's skips NULLs); `any_value(x, true)` skips them ([`ignore_nulls`]).
pub(super) fn any_value(expr: &Expr) -> Option<Expr> {
    if let Some(skipping) = ignore_nulls(expr) {
        return Some(skipping);
    }
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if list.args.len() != 1 {
        return None;
    }
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("first_value")]);
    Some(Expr::Function(call))
}

/// `mode() WITHIN GROUP (ORDER BY x [ASC | DESC])` → `mode(x, true, ascending)`: the most
/// frequent value, the least (greatest) of tied ones (`mode`).
pub(super) fn mode_within_group(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("mode") || f.over.is_some() || f.within_group.len() != 1 {
        return None;
    }
    match &f.args {
        FunctionArguments::None => {}
        FunctionArguments::List(list) if list.args.is_empty() && list.clauses.is_empty() => {}
        _ => return None,
    }
    let order = &f.within_group[0];
    let ascending = order.options.asc.unwrap_or(true);
    let flag = |b: bool| Expr::value(sqlparser::ast::Value::Boolean(b));
    let mut call = f.clone();
    call.within_group = Vec::new();
    call.args = FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
        duplicate_treatment: None,
        args: [order.expr.clone(), flag(true), flag(ascending)]
            .into_iter()
            .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
            .collect(),
        clauses: Vec::new(),
    });
    Some(Expr::Function(call))
}

/// `listagg(x[, delimiter]) [WITHIN GROUP (ORDER BY …)]` (and its other name `string_agg`) →
/// `string_agg(x, delimiter ORDER BY …)`: Spark's default delimiter is none (`''`) and its
/// order is given in `WITHIN GROUP`, DataFusion's in the argument list. DISTINCT is kept.
pub(super) fn listagg(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    if !matches!(name.as_str(), "listagg" | "string_agg") || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    if !list.clauses.is_empty() || !(1..=2).contains(&list.args.len()) {
        return None;
    }
    let mut call = f.clone();
    let mut args = list.clone();
    let empty = || {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(sqlparser::ast::Value::SingleQuotedString(
            String::new(),
        ))))
    };
    match args.args.get(1) {
        None => args.args.push(empty()),
        // A NULL delimiter is none, as in Spark.
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) if v.value == sqlparser::ast::Value::Null => {
            args.args[1] = empty();
        }
        Some(_) => {}
    }
    if !f.within_group.is_empty() {
        args.clauses.push(sqlparser::ast::FunctionArgumentClause::OrderBy(f.within_group.clone()));
        call.within_group = Vec::new();
    } else if args.duplicate_treatment == Some(sqlparser::ast::DuplicateTreatment::Distinct) {
        // Distinct values come in no order on either engine: in theirs, for one answer always.
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(value)) = &args.args[0] else { return None };
        args.clauses.push(sqlparser::ast::FunctionArgumentClause::OrderBy(vec![sqlparser::ast::OrderByExpr {
            expr: value.clone(),
            options: sqlparser::ast::OrderByOptions { asc: None, nulls_first: None },
            with_fill: None,
        }]));
    }
    call.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new("string_agg")]);
    call.args = FunctionArguments::List(args);
    Some(Expr::Function(call))
}

/// `grouping_id()` and `grouping_id(a, b, …)` → `CAST(grouping(a, b, …) AS BIGINT)`: the same
/// bits (the first column's the most significant) as Spark's BIGINT. Spark's form without
/// arguments stands for every grouping column, in the order the GROUP BY first names them, and
/// Spark takes arguments only when they are exactly those columns: other arguments are left
/// to be refused as a function this engine lacks (Spark fails on them too).
pub(crate) fn fill_grouping_id(query: &mut sqlparser::ast::Query) {
    let sqlparser::ast::SetExpr::Select(select) = query.body.as_mut() else { return };
    let sqlparser::ast::GroupByExpr::Expressions(exprs, _) = &select.group_by else { return };
    let mut columns: Vec<Expr> = Vec::new();
    for e in exprs {
        let sets: Vec<&Expr> = match e {
            Expr::Cube(sets) | Expr::Rollup(sets) | Expr::GroupingSets(sets) => sets.iter().flatten().collect(),
            e => vec![e],
        };
        for e in sets {
            if !columns.contains(e) {
                columns.push(e.clone());
            }
        }
    }
    if columns.is_empty() {
        return;
    }
    let fill = |e: &mut Expr| {
        if let Expr::Function(f) = e {
            let empty = match &f.args {
                FunctionArguments::None => true,
                FunctionArguments::List(l) => l.args.is_empty(),
                FunctionArguments::Subquery(_) => false,
            };
            let matching = match &f.args {
                FunctionArguments::List(l) => {
                    l.args.len() == columns.len()
                        && l.args.iter().zip(&columns).all(|(a, c)| {
                            matches!(a, sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(x)) if x == c)
                        })
                }
                _ => false,
            };
            if (empty || matching) && f.name.to_string().eq_ignore_ascii_case("grouping_id") {
                *e = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(crate::syntax::function("grouping", columns.clone())),
                    data_type: SqlType::BigInt(None),
                    array: false,
                    format: None,
                };
            }
        }
        ControlFlow::<()>::Continue(())
    };
    let _ = sqlparser::ast::visit_expressions_mut(&mut select.projection, fill);
    let _ = sqlparser::ast::visit_expressions_mut(&mut select.having, fill);
    let _ = sqlparser::ast::visit_expressions_mut(&mut query.order_by, fill);
}

/// `count(DISTINCT a, b, …)`: Spark counts the distinct tuples whose values are all non-NULL
/// (DataFusion takes one argument with DISTINCT): `count(DISTINCT CASE WHEN a IS NOT NULL AND b
/// IS NOT NULL … THEN struct(a, b, …) END)`. Floating-point values in the tuple are read as
/// Spark groups them by the plan rule for DISTINCT arguments (`float_keys::group_keys`).
pub(super) fn distinct_tuples(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if list.duplicate_treatment != Some(sqlparser::ast::DuplicateTreatment::Distinct) || list.args.len() < 2 {
        return None;
    }
    let values: Vec<Expr> = list
        .args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
            _ => None,
        })
        .collect::<Option<_>>()?;
    let all_present = values.iter().map(|v| Expr::IsNotNull(Box::new(v.clone()))).reduce(|a, b| Expr::BinaryOp {
        left: Box::new(a),
        op: sqlparser::ast::BinaryOperator::And,
        right: Box::new(b),
    })?;
    let mut tuple = sqlparser::ast::Function {
        name: ObjectName::from(vec![Ident::new("struct")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: values.into_iter().map(|v| FunctionArg::Unnamed(FunctionArgExpr::Expr(v))).collect(),
            clauses: vec![],
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: vec![],
    };
    tuple.name = ObjectName::from(vec![Ident::new("struct")]);
    let when = Expr::Case {
        case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions: vec![sqlparser::ast::CaseWhen { condition: all_present, result: Expr::Function(tuple) }],
        else_result: None,
    };
    let mut call = f.clone();
    let mut list = list.clone();
    list.args = vec![FunctionArg::Unnamed(FunctionArgExpr::Expr(when))];
    call.args = FunctionArguments::List(list);
    Some(Expr::Function(call))
}
