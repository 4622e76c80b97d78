//! Spark's resolution of column names, which ignores case: `customerID`, `customerid` and
//! `CustomerId` all name a column `customerID`, which keeps the case it was defined with.
//!
//! DataFusion resolves names by case (an unquoted name lower-cased). Rather than change how it
//! resolves, a query is planned as written; when the planner cannot find a name that differs
//! from exactly one of the columns it could see only in case, every identifier spelling that
//! name is written as the column's name, quoted, and the query planned again. A name several
//! columns share ignoring case stays an error, as on Spark ("ambiguous"), and so does a name
//! no column has.
//!
//! A name no column has may be a lateral column alias, as Spark resolves it: `SELECT a + 1 AS b,
//! b * 2 FROM t` (where `t` has no `b`) reads the earlier item's value. Such a name is replaced
//! in the later items of each SELECT list that defines it by the aliased expression, and the
//! query planned again; a column of the same name in the FROM clause takes precedence, since
//! only a name the planner could not find is replaced.

use std::ops::ControlFlow;

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use datafusion::sql::parser::Statement as DfStatement;
use sqlparser::ast::{Expr, Ident, Statement};

/// How many differently cased names one query may resolve (each costs one more planning).
const CASE_FIXES: usize = 64;

/// Plans `ast`, resolving column names ignoring case (see the module).
pub(crate) async fn plan_case_insensitively(
    ctx: &SessionContext,
    mut ast: sqlparser::ast::Query,
) -> datafusion::error::Result<LogicalPlan> {
    let mut fixed = 0;
    loop {
        let stmt = DfStatement::Statement(Box::new(Statement::Query(Box::new(ast.clone()))));
        let error = match ctx.state().statement_to_plan(stmt).await {
            Ok(plan) => return Ok(plan),
            Err(e) => e,
        };
        if fixed == CASE_FIXES {
            return Err(error);
        }
        let resolved = match differently_cased(&error) {
            Some((written, column)) => rename_column(&mut ast, &written, &column),
            None if error.to_string().contains("SUM not supported for Null") => sum_of_void(&mut ast),
            None => unresolved(&error).is_some_and(|name| lateral_alias(&mut ast, &name)),
        };
        if !resolved {
            return Err(error);
        }
        fixed += 1;
    }
}

/// The unqualified name a planning error could not find.
fn unresolved(e: &datafusion::error::DataFusionError) -> Option<String> {
    use datafusion::common::SchemaError;
    use datafusion::error::DataFusionError;
    let mut at = e;
    loop {
        match at {
            DataFusionError::SchemaError(schema_error, _) => {
                let SchemaError::FieldNotFound { field, .. } = schema_error.as_ref() else { return None };
                return field.relation.is_none().then(|| field.name.clone());
            }
            DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => at = inner,
            other if !std::ptr::eq(other.find_root(), other) => at = other.find_root(),
            _ => return None,
        }
    }
}

/// Replaces `name`, where a SELECT list names an earlier item so and a later item reads it, by
/// that item's expression (in the later items only, not in their subqueries). Whether any was.
fn lateral_alias(ast: &mut sqlparser::ast::Query, name: &str) -> bool {
    use sqlparser::ast::{SelectItem, VisitMut, VisitorMut};
    /// Replaces `name` at this level of a query (depth 0), not inside nested queries.
    struct Replace<'a> {
        name: &'a str,
        with: &'a Expr,
        depth: usize,
        replaced: bool,
    }
    impl VisitorMut for Replace<'_> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut sqlparser::ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut sqlparser::ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
            if let Expr::Identifier(i) = e {
                if self.depth == 0 && i.value.eq_ignore_ascii_case(self.name) {
                    *e = Expr::Nested(Box::new(self.with.clone()));
                    self.replaced = true;
                }
            }
            ControlFlow::Continue(())
        }
    }
    /// Visits every SELECT of the query, nested ones included.
    struct Selects<'a> {
        name: &'a str,
        replaced: bool,
    }
    impl VisitorMut for Selects<'_> {
        type Break = ();
        fn pre_visit_select(&mut self, select: &mut sqlparser::ast::Select) -> ControlFlow<()> {
            let items = &mut select.projection;
            let Some(defined) = items.iter().position(
                |item| matches!(item, SelectItem::ExprWithAlias { alias, .. } if alias.value.eq_ignore_ascii_case(self.name)),
            ) else {
                return ControlFlow::Continue(());
            };
            let SelectItem::ExprWithAlias { expr, .. } = &items[defined] else { return ControlFlow::Continue(()) };
            let with = expr.clone();
            let mut names: Vec<String> = items[..=defined]
                .iter()
                .filter_map(|i| match i {
                    SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.clone()),
                    _ => None,
                })
                .collect();
            for item in &mut items[defined + 1..] {
                let mut replace = Replace { name: self.name, with: &with, depth: 0, replaced: false };
                // An unnamed item is named as Spark names it (`(lateralAliasReference(b) * 2)`),
                // made unique if an earlier item has the name (Spark allows two columns of one
                // name, a DataFusion plan does not).
                let written = match item {
                    SelectItem::UnnamedExpr(e) => Some(spark_name(e, self.name)),
                    _ => None,
                };
                let _ = match item {
                    SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.visit(&mut replace),
                    _ => ControlFlow::Continue(()),
                };
                if let (true, Some(mut written), SelectItem::UnnamedExpr(e)) = (replace.replaced, written, &*item) {
                    while names.contains(&written) {
                        written.push('_');
                    }
                    *item =
                        SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::with_quote('`', written.clone()) };
                }
                if let SelectItem::ExprWithAlias { alias, .. } = &*item {
                    names.push(alias.value.clone());
                }
                self.replaced |= replace.replaced;
            }
            ControlFlow::Continue(())
        }
    }
    let mut selects = Selects { name, replaced: false };
    let _ = ast.visit(&mut selects);
    selects.replaced
}

/// Spark's sum of a VOID column is a DOUBLE NULL (DataFusion's `sum` takes no VOID): every
/// `sum`'s argument is read through `VOID_AS_DOUBLE`, which passes any other type as it is.
/// Whether there was a `sum` to change.
fn sum_of_void(ast: &mut sqlparser::ast::Query) -> bool {
    use sqlparser::ast::{FunctionArg, FunctionArgExpr, FunctionArguments};
    let mut changed = false;
    let _ = sqlparser::ast::visit_expressions_mut(ast, |e| {
        if let Expr::Function(f) = e {
            if f.name.to_string().eq_ignore_ascii_case("sum") {
                if let FunctionArguments::List(list) = &mut f.args {
                    if let [FunctionArg::Unnamed(FunctionArgExpr::Expr(x))] = list.args.as_mut_slice() {
                        let already = matches!(x, Expr::Function(g) if g.name.to_string() == crate::functions::misc::type_of::VOID_AS_DOUBLE);
                        if !already {
                            *x = crate::syntax::function(
                                crate::functions::misc::type_of::VOID_AS_DOUBLE,
                                vec![x.clone()],
                            );
                            changed = true;
                        }
                    }
                }
            }
        }
        ControlFlow::<()>::Continue(())
    });
    changed
}

/// Spark's name of an item reading the lateral alias `name`: the alias shown as
/// `lateralAliasReference(name)`.
fn spark_name(e: &Expr, name: &str) -> String {
    let mut shown = e.clone();
    let _ = sqlparser::ast::visit_expressions_mut(&mut shown, |x| {
        if let Expr::Identifier(i) = x {
            if i.value.eq_ignore_ascii_case(name) {
                *i = Ident::new(format!("lateralAliasReference({})", i.value));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    crate::analysis::names::sql(&shown).unwrap_or_else(|| shown.to_string())
}

/// The name a planning error could not find and the one column whose name it is, ignoring case.
fn differently_cased(e: &datafusion::error::DataFusionError) -> Option<(String, String)> {
    use datafusion::common::{Column, SchemaError};
    use datafusion::error::DataFusionError;
    let mut at = e;
    loop {
        match at {
            DataFusionError::SchemaError(schema_error, _) => {
                let SchemaError::FieldNotFound { field, valid_fields } = schema_error.as_ref() else { return None };
                let alike = |c: &&Column| c.name.eq_ignore_ascii_case(&field.name);
                let mut names: Vec<&str> = valid_fields
                    .iter()
                    .filter(alike)
                    .filter(|c| match (&field.relation, &c.relation) {
                        (Some(want), Some(have)) => want.table().eq_ignore_ascii_case(have.table()),
                        _ => true,
                    })
                    .map(|c| c.name.as_str())
                    .collect();
                // A subquery's reference to an outer column (`WHERE t2.k = t1.Ts`) is not found
                // among the fields the error lists, which are the subquery's own: a column of
                // theirs spelled alike names the case to try (if the outer one is cased
                // otherwise, planning fails again with this error, and it is the answer).
                if names.is_empty() && field.relation.is_some() {
                    names = valid_fields.iter().filter(alike).map(|c| c.name.as_str()).collect();
                }
                names.sort_unstable();
                names.dedup();
                return match names.as_slice() {
                    [one] if *one != field.name => Some((field.name.clone(), one.to_string())),
                    _ => None,
                };
            }
            DataFusionError::Context(_, inner) | DataFusionError::Diagnostic(_, inner) => at = inner,
            other if !std::ptr::eq(other.find_root(), other) => at = other.find_root(),
            _ => return None,
        }
    }
}

/// Writes every identifier naming `written` (ignoring case) as `column`, quoted so that it
/// keeps its case. Whether any was found.
fn rename_column(ast: &mut sqlparser::ast::Query, written: &str, column: &str) -> bool {
    // A select item that is the column alone keeps the name it is written with, as on Spark
    // (`SELECT bc FROM t` of a column `Bc` is a column `bc`).
    struct Named<'a>(&'a str, &'a str);
    impl sqlparser::ast::VisitorMut for Named<'_> {
        type Break = ();
        fn pre_visit_select(&mut self, select: &mut sqlparser::ast::Select) -> ControlFlow<()> {
            for item in &mut select.projection {
                let sqlparser::ast::SelectItem::UnnamedExpr(e) = item else { continue };
                let own = match &*e {
                    Expr::Identifier(i) => Some(i),
                    Expr::CompoundIdentifier(ids) => ids.last(),
                    _ => None,
                };
                // (Quoted or not: Spark's names resolve ignoring case either way.)
                if let Some(i) = own.filter(|i| i.value.eq_ignore_ascii_case(self.0) && i.value != self.1) {
                    let alias = Ident::with_quote('`', i.value.clone());
                    *item = sqlparser::ast::SelectItem::ExprWithAlias { expr: e.clone(), alias };
                }
            }
            ControlFlow::Continue(())
        }
    }
    let _ = sqlparser::ast::VisitMut::visit(ast, &mut Named(written, column));
    let mut renamed = false;
    let mut fix = |i: &mut Ident| {
        // (An unquoted name is lower-cased by the planner, even when written as the column is.)
        if i.value.eq_ignore_ascii_case(written) && (i.value != column || i.quote_style.is_none()) {
            *i = Ident::with_quote('`', column);
            renamed = true;
        }
    };
    let _ = sqlparser::ast::visit_expressions_mut(ast, |e| {
        match e {
            Expr::Identifier(i) => fix(i),
            Expr::CompoundIdentifier(ids) => {
                if let Some(last) = ids.last_mut() {
                    fix(last);
                }
            }
            Expr::CompoundFieldAccess { access_chain, .. } => {
                for a in access_chain.iter_mut() {
                    if let sqlparser::ast::AccessExpr::Dot(Expr::Identifier(i)) = a {
                        fix(i);
                    }
                }
            }
            _ => {}
        }
        ControlFlow::<()>::Continue(())
    });
    renamed
}
