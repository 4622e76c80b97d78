//! Value counts: how many rows of each group hold each value of a minimum's or maximum's
//! argument, kept beside an aggregate view's state so that its minimums and maximums can take
//! rows back out like sums and counts do.
//!
//! A group that loses the row holding its maximum cannot find the next one in its state: the
//! state keeps one value per group. Without value counts such a group is recomputed from the
//! whole input (`regroup`); when every group loses its extreme (a maximum delay of 30 days in
//! each of seven ship modes, the usual case for few distinct values), that is a full scan per
//! refresh. With them a refresh merges what its input gained and lost into the counts (a value
//! whose count reaches zero is gone) and reads each group's extremes off the counts.
//!
//! The counts are a Delta table beside the state (`Storage::values_table_key`): the group's keys
//! `k0..`, one column `x<i>` per minimum or maximum `i` of the view (NULL in the rows of the
//! other extremes), and the count `m`. They are kept only where they stay small: built with the
//! state, in the same pass over the input (the partial state grouped by the values too, from
//! which both are read), when that has at most 16 rows per group (at least 4096, at most 2^20 in
//! all); a view whose values are nearly all distinct keeps none and recomputes the groups that
//! lost an extreme, as before. Counts that grow past that bound (new values every refresh:
//! times, ids) are dropped the same way. A view found to have too many values is not counted
//! again when its state is built again (a full refresh): counting them costs a second
//! aggregate of every row, by group and value, which is as large as the input when the values
//! are distinct (`max(event_time)` per device). Only exactly ordered values are counted (`regroup::extremes_only`): two
//! equal floating-point values may still be ordered apart (-0.0 and 0.0, NaNs).

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::datasource::{provider_as_source, MemTable};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{cast, col, lit, Aggregate, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{coalesce, DataFrame, SessionContext};

use super::incremental::{udaf, unalias, Partial};
use super::merge::storable;
use crate::delta::delta_storable;
use crate::error::{NativeError, Result};

/// Value rows kept per group at most, on average.
const PER_GROUP: usize = 16;
/// Value rows kept in all: at least this many may always be kept, never more than `MOST`.
const LEAST: usize = 4096;
const MOST: usize = 1 << 20;

/// The minimums and maximums of the view (their index among its aggregates) with their
/// arguments, as stored.
fn extremes(agg: &Aggregate, partials: &[Partial]) -> Result<Vec<(usize, Expr, DataType)>> {
    let mut out = Vec::new();
    for (i, (e, kind)) in agg.aggr_expr.iter().zip(partials).enumerate() {
        if !matches!(kind, Partial::Min | Partial::Max) {
            continue;
        }
        let Expr::AggregateFunction(AggregateFunction { params, .. }) = unalias(e) else {
            return Err(NativeError::Execution(format!("internal error: `{e}` is not an aggregate")));
        };
        let arg = params.args[0].clone();
        let t = arg.get_type(agg.input.schema())?;
        let t = delta_storable(&t).unwrap_or(t);
        out.push((i, arg, t));
    }
    Ok(out)
}

/// Whether the view has a minimum or maximum to count values of.
pub(super) fn any(partials: &[Partial]) -> bool {
    partials.iter().any(|p| matches!(p, Partial::Min | Partial::Max))
}

/// `parts` (value counts, some negated, and the counts kept so far) merged: one row per group
/// and value, those whose count reached zero gone.
pub(super) fn merged(ctx: &SessionContext, mut parts: Vec<LogicalPlan>) -> Result<LogicalPlan> {
    let first = parts.remove(0);
    let names: Vec<String> = first.schema().fields().iter().map(|f| f.name().clone()).collect();
    let mut union = LogicalPlanBuilder::from(first);
    for part in parts {
        union = union.union(part)?;
    }
    let values = names.len() - 1;
    let group: Vec<Expr> = names[..values].iter().map(col).collect();
    let sum = udaf(ctx, "sum")?;
    let merged = union.aggregate(group, vec![sum.call(vec![col("m")]).alias("m")])?.filter(col("m").gt(lit(0i64)))?;
    // A sum of counts of at least one row (the filter keeps no other): never NULL, as the
    // counts it merges, so the table keeps its schema.
    let mut columns: Vec<Expr> = names[..values].iter().map(col).collect();
    columns.push(coalesce(vec![col("m"), lit(0i64)]).alias("m"));
    Ok(merged.project(columns)?.build()?)
}

/// Each group's minimums and maximums read off the `counts`, as rows of the state (`shape`, the
/// partials' schema) that merge into it and change nothing else: no rows (`n` 0), sums of
/// nothing (NULL, counted 0 times), counts of 0.
pub(super) fn extremes_from(
    ctx: &SessionContext,
    agg: &Aggregate,
    partials: &[Partial],
    counts: LogicalPlan,
    shape: &DFSchema,
) -> Result<LogicalPlan> {
    let keys = agg.group_expr.len();
    let (min, max) = (udaf(ctx, "min")?, udaf(ctx, "max")?);
    let group: Vec<Expr> = (0..keys).map(|k| col(format!("k{k}"))).collect();
    let mut found = Vec::new();
    for (i, kind) in partials.iter().enumerate() {
        match kind {
            Partial::Min => found.push(min.call(vec![col(format!("x{i}"))]).alias(format!("s{i}"))),
            Partial::Max => found.push(max.call(vec![col(format!("x{i}"))]).alias(format!("s{i}"))),
            _ => {}
        }
    }
    let columns = shape
        .fields()
        .iter()
        .enumerate()
        .map(|(f, field)| {
            let name = field.name();
            let t = field.data_type().clone();
            let none = |zero: bool| match zero {
                true => cast(lit(0i64), t.clone()),
                false => cast(lit(datafusion::scalar::ScalarValue::Null), t.clone()),
            };
            let extreme =
                name.strip_prefix('s').and_then(|i| i.parse::<usize>().ok()).and_then(|i| partials.get(i)).copied();
            let e = match (f < keys, name.as_str(), extreme) {
                (true, _, _) => col(name),
                (false, "n", _) => none(true),
                (false, _, Some(Partial::Min | Partial::Max)) => cast(col(name), t.clone()),
                (false, _, Some(Partial::Count)) => none(true),
                (false, _, Some(_)) => none(false),
                // `c<i>`: how many values a sum or mean has summed.
                (false, _, None) => none(true),
            };
            e.alias(name)
        })
        .collect::<Vec<_>>();
    Ok(LogicalPlanBuilder::from(counts).aggregate(group, found)?.project(columns)?.build()?)
}

/// The minimums' and maximums' arguments as extra group keys `x<i>`, as stored: a partial state
/// grouped by them too (`IncrementalView::partial_by`) holds both the state and the counts.
pub(super) fn arguments(agg: &Aggregate, partials: &[Partial]) -> Result<Vec<Expr>> {
    Ok(extremes(agg, partials)?.into_iter().map(|(i, arg, t)| cast(arg, t).alias(format!("x{i}"))).collect())
}

/// The partial state grouped by value too (`plan`), held in memory with its number of rows, if
/// it has at most `MOST` rows; `None` otherwise (too many to keep, so none are held).
pub(super) async fn fine(ctx: &SessionContext, plan: LogicalPlan) -> Result<Option<(LogicalPlan, usize)>> {
    let schema = Arc::new(plan.schema().as_arrow().clone());
    let limited = LogicalPlanBuilder::from(plan).limit(0, Some(MOST + 1))?.build()?;
    let batches = DataFrame::new(ctx.state(), limited).collect().await?;
    let rows = batches.iter().map(|b| b.num_rows()).sum::<usize>();
    if rows > MOST {
        return Ok(None);
    }
    let schema = batches.first().map_or(schema, |b| b.schema());
    let table = MemTable::try_new(schema, vec![batches])?;
    Ok(Some((LogicalPlanBuilder::scan("by_value", provider_as_source(Arc::new(table)), None)?.build()?, rows)))
}

/// Whether `rows` value rows are few enough to keep for `groups` groups.
pub(super) fn few(rows: usize, groups: usize) -> bool {
    rows <= PER_GROUP.saturating_mul(groups).clamp(LEAST, MOST)
}

/// The value counts of a partial state grouped by value too (`fine`, see `arguments`): per
/// minimum or maximum, the rows of each group and non-NULL value (negative where `fine` is the
/// negated state of rows the input lost).
pub(super) fn counts_from(
    ctx: &SessionContext,
    agg: &Aggregate,
    partials: &[Partial],
    fine: LogicalPlan,
) -> Result<LogicalPlan> {
    let sum = udaf(ctx, "sum")?;
    let extremes = extremes(agg, partials)?;
    let keys = agg.group_expr.len();
    let mut union: Option<LogicalPlanBuilder> = None;
    for (i, _, _) in &extremes {
        let mut group: Vec<Expr> = (0..keys).map(|k| col(format!("k{k}"))).collect();
        group.push(col(format!("x{i}")));
        let counted = LogicalPlanBuilder::from(fine.clone())
            .filter(col(format!("x{i}")).is_not_null())?
            .aggregate(group, vec![sum.call(vec![col("n")]).alias("m")])?;
        // Every extreme's value column, NULL but its own.
        let mut columns: Vec<Expr> = (0..keys).map(|k| col(format!("k{k}"))).collect();
        for (other, _, t) in &extremes {
            let x = match other == i {
                true => col(format!("x{i}")),
                false => cast(lit(datafusion::scalar::ScalarValue::Null), t.clone()),
            };
            columns.push(x.alias(format!("x{other}")));
        }
        // (A sum of the rows of at least one group: never NULL, as a count.)
        columns.push(coalesce(vec![col("m"), lit(0i64)]).alias("m"));
        let counted = counted.project(columns)?.build()?;
        union = Some(match union {
            None => LogicalPlanBuilder::from(counted),
            Some(u) => u.union(counted)?,
        });
    }
    let union = union.ok_or_else(|| NativeError::Execution("internal error: no minimum or maximum".into()))?;
    storable(union.build()?)
}
