//! `LATERAL VIEW [OUTER] generator(…) view [AS a, b]`, rewritten on the parse into a generator
//! item of a derived table that `functions::generator` then plans (DataFusion's SQL planner has no
//! lateral views).

use crate::functions::generator::{is_generator, LATERAL};

/// Rewrites each `LATERAL VIEW [OUTER] gen(…) v [AS a, b]` of the query's selects into a
/// generator item of derived tables that stand where the FROM clause stood:
///
/// `SELECT … FROM t LATERAL VIEW posexplode(t.xs) v AS i, x` →
/// `SELECT … FROM (SELECT * EXCEPT (__thund_lv), __thund_lv.i AS i, __thund_lv.x AS x
///   FROM (SELECT *, __thund_lateral(posexplode(t.xs), 'i', 'x') AS __thund_lv FROM t) AS t) AS t`
///
/// with `v.x` read as `t.x`, so the query's references to the table and the view both hold.
/// (The generator's columns travel as one struct, so that the planner knows their names before
/// `generators::plan_generators` has run.) Several views nest in order. A FROM clause with joins or
/// several tables is refused: its columns could not all keep their qualifiers under one alias.
pub(crate) fn rewrite_rule(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    rewrite_lateral_views(query)
}

/// Rewrites every `LATERAL VIEW` of `query` (see the module).
pub(crate) fn rewrite_lateral_views(query: &mut sqlparser::ast::Query) -> std::result::Result<(), String> {
    use sqlparser::ast::{SetExpr, VisitMut};
    struct Views(Option<String>);
    impl sqlparser::ast::VisitorMut for Views {
        type Break = ();
        fn post_visit_query(&mut self, q: &mut sqlparser::ast::Query) -> std::ops::ControlFlow<()> {
            let mut renames = Vec::new();
            let mut selects = Vec::new();
            collect_selects(&mut q.body, &mut selects);
            for select in selects {
                if let Err(e) = rewrite_select(select, &mut renames) {
                    self.0 = Some(e);
                    return std::ops::ControlFlow::Break(());
                }
            }
            // ORDER BY belongs to the query, not its select.
            if let Some(order_by) = q.order_by.as_mut() {
                rename_references(order_by, &renames);
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    fn collect_selects<'a>(body: &'a mut SetExpr, out: &mut Vec<&'a mut sqlparser::ast::Select>) {
        match body {
            SetExpr::Select(s) => out.push(s),
            SetExpr::SetOperation { left, right, .. } => {
                collect_selects(left, out);
                collect_selects(right, out);
            }
            _ => {}
        }
    }
    let mut views = Views(None);
    let _ = query.visit(&mut views);
    views.0.map_or(Ok(()), Err)
}

/// `(view, alias, column)`: `view.column` is read as `alias.column`.
type Renames = Vec<(String, String, String)>;

fn rewrite_select(select: &mut sqlparser::ast::Select, renames: &mut Renames) -> std::result::Result<(), String> {
    use sqlparser::ast::{ExceptSelectItem, Expr as SqlExpr, Ident, ObjectName, SelectItem, TableFactor, Value};
    let views = std::mem::take(&mut select.lateral_views);
    for (n, view) in views.into_iter().enumerate() {
        let [from] = select.from.as_slice() else {
            return Err("LATERAL VIEW over several tables runs on the Spark backend".into());
        };
        if !from.joins.is_empty() {
            return Err("LATERAL VIEW over a join runs on the Spark backend".into());
        }
        let alias = match &from.relation {
            TableFactor::Table { alias: Some(a), .. } | TableFactor::Derived { alias: Some(a), .. } => a.name.clone(),
            TableFactor::Table { name, .. } => {
                name.0.last().and_then(|p| p.as_ident()).cloned().unwrap_or_else(|| Ident::new("__thund_view"))
            }
            _ => Ident::new("__thund_view"),
        };
        let SqlExpr::Function(mut call) = view.lateral_view.clone() else {
            return Err(format!("LATERAL VIEW takes a generator call, not `{}`", view.lateral_view));
        };
        let name = call.name.to_string().to_ascii_lowercase();
        if !is_generator(&name) {
            return Err(format!("`{name}` is not a generator (explode, posexplode, inline, stack)"));
        }
        if view.outer && !name.ends_with("_outer") && name != "stack" {
            call.name = ObjectName::from(vec![Ident::new(format!("{name}_outer"))]);
        }
        let names: Vec<String> = match view.lateral_col_alias.as_slice() {
            [] => default_names(&name, &call),
            given => given.iter().map(|i| i.value.clone()).collect(),
        };
        let view_name = view.lateral_view_name.to_string();
        let mut generator = SqlExpr::Function(call);
        // Earlier views' columns are read from the derived table.
        rename_references(&mut generator, renames);
        let holder = Ident::new(format!("__thund_lv{n}"));
        let mut args = vec![generator];
        args.extend(names.iter().map(|n| SqlExpr::value(Value::SingleQuotedString(n.clone()))));
        let lateral = crate::syntax::function(LATERAL, args);
        let inner = derived(
            vec![wildcard(None), SelectItem::ExprWithAlias { expr: lateral, alias: holder.clone() }],
            std::mem::take(&mut select.from),
            &alias,
        );
        let mut items =
            vec![wildcard(Some(ExceptSelectItem { first_element: holder.clone(), additional_elements: vec![] }))];
        for n in &names {
            items.push(SelectItem::ExprWithAlias {
                expr: SqlExpr::CompoundIdentifier(vec![holder.clone(), Ident::with_quote('`', n.clone())]),
                alias: Ident::with_quote('`', n.clone()),
            });
            renames.push((view_name.clone(), alias.value.clone(), n.clone()));
        }
        select.from = derived(items, inner, &alias);
    }
    rename_references(select, renames);
    Ok(())
}

/// A view's column names when it gives none: Spark's names where they do not depend on the
/// argument's type (an array's `col`, `pos`; `stack`'s `col0`, …); none otherwise, which the
/// plan then refuses with the number it needs.
fn default_names(name: &str, call: &sqlparser::ast::Function) -> Vec<String> {
    match name.trim_end_matches("_outer") {
        "explode" => vec!["col".into()],
        "posexplode" => vec!["pos".into(), "col".into()],
        "stack" => {
            let sqlparser::ast::FunctionArguments::List(list) = &call.args else { return vec![] };
            let rows = match list.args.first() {
                Some(sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(
                    sqlparser::ast::Expr::Value(v),
                ))) => match &v.value {
                    sqlparser::ast::Value::Number(n, _) => n.parse::<usize>().unwrap_or(0),
                    _ => 0,
                },
                _ => 0,
            };
            let values = list.args.len().saturating_sub(1);
            if rows == 0 {
                return vec![];
            }
            (0..values.div_ceil(rows)).map(|i| format!("col{i}")).collect()
        }
        _ => vec![],
    }
}

fn wildcard(except: Option<sqlparser::ast::ExceptSelectItem>) -> sqlparser::ast::SelectItem {
    sqlparser::ast::SelectItem::Wildcard(sqlparser::ast::WildcardAdditionalOptions {
        opt_except: except,
        ..Default::default()
    })
}

/// `FROM (SELECT items FROM from) AS alias`.
fn derived(
    items: Vec<sqlparser::ast::SelectItem>,
    from: Vec<sqlparser::ast::TableWithJoins>,
    alias: &sqlparser::ast::Ident,
) -> Vec<sqlparser::ast::TableWithJoins> {
    use sqlparser::ast::{TableAlias, TableFactor, TableWithJoins};
    let query = crate::syntax::select_query(items, from);
    vec![TableWithJoins {
        relation: TableFactor::Derived {
            lateral: false,
            subquery: Box::new(query),
            alias: Some(TableAlias { explicit: true, name: alias.clone(), columns: Vec::new(), at: None }),
            sample: None,
        },
        joins: Vec::new(),
    }]
}

/// Rewrites `view.column` to `alias.column` in `node` for each rename.
fn rename_references<T: sqlparser::ast::VisitMut>(node: &mut T, renames: &Renames) {
    use sqlparser::ast::{Expr as SqlExpr, Ident};
    let _ = sqlparser::ast::visit_expressions_mut(node, |e| {
        if let SqlExpr::CompoundIdentifier(parts) = e {
            if let [v, c] = parts.as_slice() {
                for (view, alias, column) in renames {
                    if v.value.eq_ignore_ascii_case(view) && c.value.eq_ignore_ascii_case(column) {
                        *parts = vec![Ident::new(alias), c.clone()];
                        break;
                    }
                }
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
}
