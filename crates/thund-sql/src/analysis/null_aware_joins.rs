//! `x NOT IN (subquery)` as a filter's own conjunct, where DataFusion's null-aware anti join does
//! not answer as Spark does. DataFusion decorrelates it into an anti join on `x = k` marked
//! null-aware: with `x = k` its only condition, `x` reading the outer rows and `k` the
//! subquery's, that is a hash join on one key that drops every row once the subquery holds a
//! NULL, and a NULL `x` once it holds a row — Spark's answer. Otherwise the mark is lost or
//! misread:
//! - a constant operand (`1 NOT IN (…)`): no key, so a nested-loop join that ignores the mark
//!   (it answered rows where a NULL among the subquery's rows makes Spark's answer false);
//! - a correlated subquery: with a condition besides the key (`WHERE s.g > t.x`) the hash join
//!   decides by the NULLs of all the subquery's rows, not of those the condition pairs with the
//!   outer row (an empty answer where Spark has rows); with a second equality it fails to plan
//!   (a null-aware join takes one key).
//!
//! There the join is written as Spark's `RewritePredicateSubquery` writes it: an anti join on
//! `(x = k OR (x = k) IS NULL) AND <the correlation>`, not null-aware — a nested-loop join, as
//! Spark's is. The rule runs right after DataFusion's `decorrelate_predicate_subquery`, before
//! the equalities of the condition become join keys, while the membership's `x = k` is still the
//! condition's first conjunct (as that rule writes it).

use datafusion::common::tree_node::Transformed;
use datafusion::common::{Column, DFSchema};
use datafusion::error::Result;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{BinaryExpr, Expr, Join, LogicalPlan, Operator};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The rule (see the module).
#[derive(Debug)]
pub(crate) struct NullAwareAntiJoins;

impl OptimizerRule for NullAwareAntiJoins {
    fn name(&self) -> &str {
        "null_aware_anti_joins"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(&self, plan: LogicalPlan, _: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Join(join) = &plan else { return Ok(Transformed::no(plan)) };
        match sparks_condition(join) {
            Some(filter) => {
                let join = Join { filter: Some(filter), null_aware: false, ..join.clone() };
                Ok(Transformed::yes(LogicalPlan::Join(join)))
            }
            None => Ok(Transformed::no(plan)),
        }
    }
}

/// The condition of Spark's anti join for a null-aware join DataFusion's hash join would not
/// answer as Spark does; `None` for any other join.
fn sparks_condition(join: &Join) -> Option<Expr> {
    if !join.null_aware || !join.on.is_empty() {
        return None;
    }
    let conjuncts = split_conjunction(join.filter.as_ref()?);
    let (&membership, rest) = conjuncts.split_first()?;
    let Expr::BinaryExpr(BinaryExpr { left: x, op: Operator::Eq, right: k }) = membership else { return None };
    let keyed = rest.is_empty() && reads_only(x, join.left.schema()) && reads_only(k, join.right.schema());
    if keyed {
        return None;
    }
    let matched = membership.clone();
    let existence = matched.clone().or(Expr::IsNull(Box::new(matched)));
    conjunction(std::iter::once(existence).chain(rest.iter().map(|&e| e.clone())))
}

/// Whether `e` reads columns, all of them of `side`.
fn reads_only(e: &Expr, side: &DFSchema) -> bool {
    let columns = e.column_refs();
    !columns.is_empty() && columns.iter().all(|c: &&Column| side.has_column(c))
}
