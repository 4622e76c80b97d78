//! A filter that reads no column (`HAVING 1 = 0`, `WHERE (SELECT max(x) FROM t) > 10`) above an
//! aggregate without GROUP BY: on Spark it removes the aggregate's one row, or keeps it.
//! DataFusion's filter pushdown moves a predicate that names only grouping columns below the
//! aggregate, and one that names no column qualifies vacuously: below an aggregate without
//! groups it removes the input rows instead, and the aggregate of no rows is still one row
//! (`count(*)` 0 where Spark has no row at all).
//!
//! Such a predicate is put on a one-row relation joined to the aggregate instead: it decides,
//! as on Spark, whether the row is kept, and no rule moves it past the aggregate. It is an
//! optimizer rule right before the pushdown ([`KeptAboveGlobalAggregates`]) rather than a rule
//! on the planned query: the simplifier makes predicates column-free too (`c NOT IN (NULL,
//! 47)` is never true: `false`), and the planned query keeps the shape the user wrote.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::utils::{conjunction, split_conjunction};
use datafusion::logical_expr::{EmptyRelation, Filter, LogicalPlan, LogicalPlanBuilder};
use datafusion::optimizer::optimizer::ApplyOrder;
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// The session's optimizer rules: DataFusion's, with [`KeptAboveGlobalAggregates`] right
/// before its filter pushdown, `outer_joins::NullRejectedOuterJoins` right before its
/// `eliminate_outer_join` and `null_aware_joins::NullAwareAntiJoins` right after its
/// `decorrelate_predicate_subquery`.
pub(crate) fn optimizer_rules() -> Vec<Arc<dyn OptimizerRule + Send + Sync>> {
    let mut rules = datafusion::optimizer::Optimizer::new().rules;
    let at = rules.iter().position(|r| r.name() == "push_down_filter").unwrap_or(rules.len());
    rules.insert(at, Arc::new(KeptAboveGlobalAggregates));
    let at = rules.iter().position(|r| r.name() == "eliminate_outer_join").unwrap_or(0);
    rules.insert(at, Arc::new(super::outer_joins::NullRejectedOuterJoins));
    let at = rules.iter().position(|r| r.name() == "decorrelate_predicate_subquery").map_or(0, |at| at + 1);
    rules.insert(at, Arc::new(super::null_aware_joins::NullAwareAntiJoins));
    rules
}

/// [`kept_above_global_aggregates`] as an optimizer rule, on every node.
#[derive(Debug)]
pub(crate) struct KeptAboveGlobalAggregates;

impl OptimizerRule for KeptAboveGlobalAggregates {
    fn name(&self) -> &str {
        "kept_above_global_aggregates"
    }

    fn apply_order(&self) -> Option<ApplyOrder> {
        Some(ApplyOrder::TopDown)
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(&self, plan: LogicalPlan, _: &dyn OptimizerConfig) -> Result<Transformed<LogicalPlan>> {
        kept_above_global_aggregates(plan)
    }
}

/// `node` with the column-free part of its predicate on a one-row relation joined to its
/// input, when it is a filter above an aggregate without groups.
fn kept_above_global_aggregates(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Filter(filter) = &node else { return Ok(Transformed::no(node)) };
    if !reaches_global_aggregate(&filter.input) {
        return Ok(Transformed::no(node));
    }
    let (free, bound): (Vec<_>, Vec<_>) =
        split_conjunction(&filter.predicate).into_iter().cloned().partition(|p| p.column_refs().is_empty());
    let Some(free) = conjunction(free) else { return Ok(Transformed::no(node)) };
    let one_row =
        LogicalPlan::EmptyRelation(EmptyRelation { produce_one_row: true, schema: Arc::new(DFSchema::empty()) });
    let gate = LogicalPlanBuilder::from(one_row).filter(free)?.build()?;
    let joined = LogicalPlanBuilder::from(filter.input.as_ref().clone()).cross_join(gate)?.build()?;
    Ok(Transformed::yes(match conjunction(bound) {
        Some(rest) => LogicalPlan::Filter(Filter::try_new(rest, Arc::new(joined))?),
        None => joined,
    }))
}

/// Whether filter pushdown would reach an aggregate without groups below `plan`.
fn reaches_global_aggregate(plan: &LogicalPlan) -> bool {
    match plan {
        LogicalPlan::Aggregate(a) => a.group_expr.is_empty(),
        LogicalPlan::Projection(_) | LogicalPlan::SubqueryAlias(_) | LogicalPlan::Filter(_) | LogicalPlan::Sort(_) => {
            plan.inputs().into_iter().any(reaches_global_aggregate)
        }
        _ => false,
    }
}
