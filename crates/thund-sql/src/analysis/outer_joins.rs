//! An outer join under a filter that no row of its NULL-padded side passes becomes the inner
//! (or one-sided) join it then is, as Spark's `EliminateOuterJoin` decides it: a conjunct of the
//! filter that reads only one side's columns, evaluated with every one of them NULL, is NULL or
//! false. DataFusion's `eliminate_outer_join` decides it by the shape of the predicate instead
//! and misses some Spark finds: `WHERE r.s != 7.0 OR r.q <> r.q` (no column both sides of the
//! `OR` read). The answer's rows are the same either way; what differs is where the filter
//! runs: on Spark it is pushed into the side and meets every one of its rows, so in ANSI mode a
//! row that would have failed the filter's cast (`'true'` as a DOUBLE) fails the query even
//! when the join would have dropped it. Converted here too, the filter meets the same rows.

use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ExprSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, Filter, Join, JoinType, LogicalPlan};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The rule (see the module), an optimizer rule right before DataFusion's own.
#[derive(Debug)]
pub(crate) struct NullRejectedOuterJoins;

impl OptimizerRule for NullRejectedOuterJoins {
    fn name(&self) -> &str {
        "null_rejected_outer_joins"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(&self, plan: LogicalPlan, config: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        let LogicalPlan::Filter(filter) = &plan else { return Ok(Transformed::no(plan)) };
        let LogicalPlan::Join(join) = filter.input.as_ref() else { return Ok(Transformed::no(plan)) };
        if !join.join_type.is_outer() {
            return Ok(Transformed::no(plan));
        }
        // Functions read the session's settings (its ANSI mode) as they would at execution.
        let mut props = ExecutionProps::new();
        props.mark_start_execution(config.options());
        let rejects =
            |side: &DFSchema| split_conjunction(&filter.predicate).into_iter().any(|p| rejects_nulls(p, side, &props));
        let (left, right) = (join.left.schema(), join.right.schema());
        let joined = match join.join_type {
            JoinType::Left if rejects(right) => JoinType::Inner,
            JoinType::Right if rejects(left) => JoinType::Inner,
            JoinType::Full => match (rejects(left), rejects(right)) {
                (true, true) => JoinType::Inner,
                (true, false) => JoinType::Left,
                (false, true) => JoinType::Right,
                (false, false) => return Ok(Transformed::no(plan)),
            },
            _ => return Ok(Transformed::no(plan)),
        };
        // (The schema stays as it was, its fields nullable, as DataFusion's own rule keeps it.)
        let join = Join { join_type: joined, ..join.clone() };
        Ok(Transformed::yes(LogicalPlan::Filter(Filter::try_new(
            filter.predicate.clone(),
            Arc::new(LogicalPlan::Join(join)),
        )?)))
    }
}

/// Whether `predicate`, which must read only columns of `side` (and one at least), is NULL or
/// false when every one of them is NULL: Spark's `canFilterOutNull`. A volatile predicate, one
/// with a subquery, or one that fails so evaluated is not.
fn rejects_nulls(predicate: &Expr, side: &DFSchema, props: &ExecutionProps) -> bool {
    let columns = predicate.column_refs();
    if columns.is_empty() || !columns.iter().all(|c| side.has_column(c)) || predicate.is_volatile() {
        return false;
    }
    let mut subquery = false;
    let _ = predicate.apply(|e| {
        subquery |= matches!(
            e,
            Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_) | Expr::OuterReferenceColumn(..)
        );
        Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
    });
    if subquery {
        return false;
    }
    let nulls = predicate.clone().transform(|e| match &e {
        Expr::Column(c) => {
            let null = ScalarValue::try_from(side.field_from_column(c)?.data_type())?;
            Ok(Transformed::yes(Expr::Literal(null, None)))
        }
        _ => Ok(Transformed::no(e)),
    });
    let Ok(nulls) = nulls else { return false };
    let Some(answer) = super::folding::value(&nulls.data, props) else { return false };
    answer.is_null() || answer == ScalarValue::Boolean(Some(false))
}
