//! How partial aggregate states merge: the states of what a view's input gained, of what it
//! lost (negated) and the state kept so far become one row per group, in the schema the state
//! table keeps, so that its schema, and the view's read from it, never drift between refreshes.

use datafusion::common::DFSchema;
use datafusion::logical_expr::{cast, col, lit, Aggregate, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{coalesce, SessionContext};

use super::incremental::{udaf, Partial};
use crate::delta::delta_storable;
use crate::error::Result;

/// State columns in types a Delta table stores (strings as `Utf8`, not views).
pub(super) fn storable(plan: LogicalPlan) -> Result<LogicalPlan> {
    let exprs: Vec<Expr> = plan
        .schema()
        .fields()
        .iter()
        .map(|f| match delta_storable(f.data_type()) {
            Some(t) => cast(col(f.name()), t).alias(f.name()),
            None => col(f.name()),
        })
        .collect();
    Ok(LogicalPlanBuilder::from(plan).project(exprs)?.build()?)
}

/// `parts` (partial states, some negated) merged into one row per group, in the partials'
/// schema (`shape`): a group whose rows are all gone is dropped (a global aggregate keeps its
/// one row).
pub(super) fn merge(
    ctx: &SessionContext,
    mut parts: Vec<LogicalPlan>,
    agg: &Aggregate,
    partials: &[Partial],
    shape: &DFSchema,
) -> Result<LogicalPlan> {
    let mut union = LogicalPlanBuilder::from(parts.remove(0));
    for part in parts {
        union = union.union(part)?;
    }
    let keys: Vec<Expr> = (0..agg.group_expr.len()).map(|i| col(format!("k{i}"))).collect();
    let (sum, min, max) = (udaf(ctx, "sum")?, udaf(ctx, "min")?, udaf(ctx, "max")?);
    let mut merges = vec![sum.call(vec![col("n")]).alias("n")];
    for (i, kind) in partials.iter().enumerate() {
        let s = col(format!("s{i}"));
        merges.push(
            match kind {
                Partial::Sum | Partial::Count | Partial::Avg | Partial::DecimalAvg => sum.call(vec![s]),
                Partial::Min => min.call(vec![s]),
                Partial::Max => max.call(vec![s]),
            }
            .alias(format!("s{i}")),
        );
        if matches!(kind, Partial::Avg | Partial::Sum | Partial::DecimalAvg) {
            merges.push(sum.call(vec![col(format!("c{i}"))]).alias(format!("c{i}")));
        }
    }
    let mut merged = union.aggregate(keys, merges)?;
    if !agg.group_expr.is_empty() {
        merged = merged.filter(col("n").gt(lit(0i64)))?;
    }
    storable(as_partials(merged.build()?, shape, agg.group_expr.len())?)
}

/// The merged state in the partials' schema: a sum of DECIMAL partial sums is typed ten digits
/// wider, and a sum of counts as nullable, though each holds what a partial holds. Kept as is,
/// the state table's schema would change on every merge (and the view's, read from it, would
/// lose its NOT NULL counts): a write that changes a schema cannot take the parallel writer.
/// The narrowing cast fails on overflow, as the recompute's sum would.
fn as_partials(merged: LogicalPlan, shape: &DFSchema, keys: usize) -> Result<LogicalPlan> {
    let exprs = merged
        .schema()
        .fields()
        .iter()
        .zip(shape.fields())
        .enumerate()
        .map(|(i, (m, p))| {
            let mut e = col(m.name());
            if i >= keys && m.data_type() != p.data_type() {
                e = cast(e, p.data_type().clone());
            }
            // A sum of counts over at least one row (the filter on `n` keeps no other): never NULL.
            if i >= keys && !p.is_nullable() && m.is_nullable() {
                e = coalesce(vec![e, cast(lit(0i64), p.data_type().clone())]);
            }
            e.alias(m.name())
        })
        .collect::<Vec<_>>();
    Ok(LogicalPlanBuilder::from(merged).project(exprs)?.build()?)
}
