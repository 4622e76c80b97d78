//! An operator after a predicate written without parentheses (`a IS NULL <=> b`,
//! `x IN (1, 2) = true`, `s LIKE 'a%' = true`): Spark's grammar reads a predicate (`IS [NOT]
//! NULL`, `IS [NOT] TRUE/FALSE/UNKNOWN`, `IN`, `BETWEEN`, `LIKE`, `RLIKE`, `IS [NOT] DISTINCT
//! FROM`) over the whole comparison or arithmetic before it, so what follows one is either a
//! syntax error there (`IS NULL`, `IN`) or part of its last operand (`1 BETWEEN 0 AND 2 = true`
//! is `1 BETWEEN 0 AND (2 = true)`); sqlparser reads `(a IS NULL) <=> b`. Such a query is
//! refused with Spark's error, and parentheses are the way out.

use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, Query, Visit, Visitor};

use crate::modes::SqlModes;

/// Refuses `query` where an operator follows a predicate written without parentheses.
pub(super) fn refuse_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Find(Option<String>);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
            let Expr::BinaryOp { left, op, .. } = e else { return ControlFlow::Continue(()) };
            if matches!(op, BinaryOperator::And | BinaryOperator::Or | BinaryOperator::Xor) {
                return ControlFlow::Continue(());
            }
            match predicate(left) {
                Some(predicate) => {
                    self.0 = Some(format!(
                        "[PARSE_SYNTAX_ERROR] Spark does not read `{e}` as `({left}) {op} …`: an operator after \
                         `{predicate}` is a syntax error there or applies to its last operand; put the part \
                         meant first in parentheses"
                    ));
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            }
        }
    }
    let mut find = Find(None);
    let _ = Visit::visit(&*query, &mut find);
    find.0.map_or(Ok(()), Err)
}

/// The predicate `e` is, when it is one written without parentheses.
fn predicate(e: &Expr) -> Option<&'static str> {
    Some(match e {
        Expr::IsNull(_) => "IS NULL",
        Expr::IsNotNull(_) => "IS NOT NULL",
        Expr::IsTrue(_) | Expr::IsNotTrue(_) => "IS [NOT] TRUE",
        Expr::IsFalse(_) | Expr::IsNotFalse(_) => "IS [NOT] FALSE",
        Expr::IsUnknown(_) | Expr::IsNotUnknown(_) => "IS [NOT] UNKNOWN",
        Expr::IsDistinctFrom(..) | Expr::IsNotDistinctFrom(..) => "IS [NOT] DISTINCT FROM",
        Expr::InList { .. } | Expr::InSubquery { .. } | Expr::InUnnest { .. } => "IN",
        Expr::Between { .. } => "BETWEEN",
        Expr::Like { .. } | Expr::ILike { .. } | Expr::SimilarTo { .. } => "LIKE",
        Expr::RLike { .. } => "RLIKE",
        _ => return None,
    })
}
