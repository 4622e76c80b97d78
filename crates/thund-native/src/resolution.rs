//! Spark's resolution of column names, which ignores case: `customerID`, `customerid` and
//! `CustomerId` all name a column `customerID`, which keeps the case it was defined with.
//!
//! DataFusion resolves names by case (an unquoted name lower-cased). Rather than change how it
//! resolves, a query is planned as written; when the planner cannot find a name that differs
//! from exactly one of the columns it could see only in case, every identifier spelling that
//! name is written as the column's name, quoted, and the query planned again. A name several
//! columns share ignoring case stays an error, as on Spark ("ambiguous"), and so does a name
//! no column has.

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
        let Some((written, column)) = differently_cased(&error) else { return Err(error) };
        if fixed == CASE_FIXES || !rename_column(&mut ast, &written, &column) {
            return Err(error);
        }
        fixed += 1;
    }
}

/// The name a planning error could not find and the one column whose name it is, ignoring case.
fn differently_cased(e: &datafusion::error::DataFusionError) -> Option<(String, String)> {
    use datafusion::common::SchemaError;
    use datafusion::error::DataFusionError;
    let mut at = e;
    loop {
        match at {
            DataFusionError::SchemaError(schema_error, _) => {
                let SchemaError::FieldNotFound { field, valid_fields } = schema_error.as_ref() else { return None };
                let mut names: Vec<&str> = valid_fields
                    .iter()
                    .filter(|c| c.name.eq_ignore_ascii_case(&field.name))
                    .filter(|c| match (&field.relation, &c.relation) {
                        (Some(want), Some(have)) => want.table().eq_ignore_ascii_case(have.table()),
                        _ => true,
                    })
                    .map(|c| c.name.as_str())
                    .collect();
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
