//! Building and reading calls in a query's syntax tree (sqlparser's), for the rewrites every
//! category and analysis rule makes on the parse.

use sqlparser::ast::{Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName};

/// The call `name(args…)`, as the parser would read it.
pub(crate) fn function(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(sqlparser::ast::Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a))).collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// A call's name, lower case (as Spark's function names ignore case).
pub(crate) fn name_of(f: &sqlparser::ast::Function) -> String {
    f.name.to_string().to_ascii_lowercase()
}

/// An integer literal that fits an INT, cast to one (`-2147483648` too, though its digits
/// alone do not fit).
pub(crate) fn int_literal(e: &Expr) -> Option<Expr> {
    let number = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, false) => Some(n.clone()),
            _ => None,
        },
        _ => None,
    };
    let digits = match e {
        Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Minus, expr } => format!("-{}", number(expr)?),
        e => number(e)?,
    };
    digits.parse::<i32>().ok()?;
    Some(Expr::Cast {
        kind: sqlparser::ast::CastKind::Cast,
        expr: Box::new(e.clone()),
        data_type: sqlparser::ast::DataType::Int(None),
        array: false,
        format: None,
    })
}

/// A call's arguments when each is a plain expression (none named, none `*`).
pub(crate) fn unnamed_args(list: &sqlparser::ast::FunctionArgumentList) -> Option<Vec<&Expr>> {
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// The arguments of a plain call — no window, filter, `WITHIN GROUP`, `DISTINCT` or clause,
/// every argument a plain expression — or `None`.
pub(crate) fn plain_args(f: &sqlparser::ast::Function) -> Option<Vec<Expr>> {
    if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
        return None;
    }
    match &f.args {
        FunctionArguments::None => Some(Vec::new()),
        FunctionArguments::List(list) if list.duplicate_treatment.is_none() && list.clauses.is_empty() => {
            unnamed_args(list).map(|args| args.into_iter().cloned().collect())
        }
        _ => None,
    }
}

/// `f` with the integer literals among its first arguments at `positions` typed INT, or `None`
/// when none is one.
pub(crate) fn int_arguments(f: &sqlparser::ast::Function, positions: &[usize]) -> Option<sqlparser::ast::Function> {
    let FunctionArguments::List(list) = &f.args else { return None };
    let mut list = list.clone();
    let mut changed = false;
    for (i, arg) in list.args.iter_mut().enumerate() {
        if !positions.contains(&i) {
            continue;
        }
        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
            if let Some(int) = int_literal(e) {
                *e = int;
                changed = true;
            }
        }
    }
    let mut call = f.clone();
    call.args = FunctionArguments::List(list);
    changed.then_some(call)
}

/// `SELECT items FROM from` as a query, every other clause empty.
pub(crate) fn select_query(
    projection: Vec<sqlparser::ast::SelectItem>,
    from: Vec<sqlparser::ast::TableWithJoins>,
) -> sqlparser::ast::Query {
    use sqlparser::ast::{GroupByExpr, Select, SelectFlavor, SetExpr};
    let select = Select {
        select_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        optimizer_hints: Vec::new(),
        distinct: None,
        select_modifiers: None,
        top: None,
        top_before_distinct: false,
        projection,
        exclude: None,
        into: None,
        from,
        lateral_views: Vec::new(),
        prewhere: None,
        selection: None,
        connect_by: Vec::new(),
        group_by: GroupByExpr::Expressions(Vec::new(), Vec::new()),
        cluster_by: Vec::new(),
        distribute_by: Vec::new(),
        sort_by: Vec::new(),
        having: None,
        named_window: Vec::new(),
        qualify: None,
        window_before_qualify: false,
        value_table_mode: None,
        flavor: SelectFlavor::Standard,
    };
    query(SetExpr::Select(Box::new(select)))
}

/// `body` as a query, every other clause empty.
pub(crate) fn query(body: sqlparser::ast::SetExpr) -> sqlparser::ast::Query {
    sqlparser::ast::Query {
        with: None,
        body: Box::new(body),
        order_by: None,
        limit_clause: None,
        fetch: None,
        locks: Vec::new(),
        for_clause: None,
        settings: None,
        format_clause: None,
        pipe_operators: Vec::new(),
    }
}
