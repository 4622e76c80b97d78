//! Which groups of an aggregate view a refresh takes rows back out of, and which it recomputes
//! from the input: counts and exact sums and averages take back what their input lost; a
//! minimum or maximum cannot, so the groups that lost rows (or, when only exactly ordered
//! minimums and maximums stand in the way, only those that lost one of their extremes) are
//! recomputed, each found here as its key values.

use arrow::datatypes::DataType;
use datafusion::common::{Column, JoinType, NullEquality};
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    binary_expr, cast, col, lit, Aggregate, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator,
};
use datafusion::prelude::SessionContext;

use super::incremental::{unalias, Partial};
use super::planning::{Issue, IssueType};
use crate::error::Result;

/// The distinct group keys of `input` (rows of the aggregate's input).
pub(super) async fn groups_of(
    ctx: &SessionContext,
    agg: &Aggregate,
    input: LogicalPlan,
) -> Result<Vec<Vec<datafusion::scalar::ScalarValue>>> {
    let keys: Vec<Expr> =
        agg.group_expr.iter().enumerate().map(|(i, g)| unalias(g).clone().alias(format!("k{i}"))).collect();
    let plan = LogicalPlanBuilder::from(input).project(keys)?.distinct()?.build()?;
    rows_of(ctx, plan).await
}

/// The rows of `plan` (a few group keys), as values.
async fn rows_of(ctx: &SessionContext, plan: LogicalPlan) -> Result<Vec<Vec<datafusion::scalar::ScalarValue>>> {
    let mut out = Vec::new();
    for b in datafusion::prelude::DataFrame::new(ctx.state(), plan).collect().await? {
        for row in 0..b.num_rows() {
            out.push(
                b.columns()
                    .iter()
                    .map(|c| datafusion::scalar::ScalarValue::try_from_array(c, row))
                    .collect::<std::result::Result<Vec<_>, _>>()?,
            );
        }
    }
    Ok(out)
}

/// `partial` with its minimums and maximums NULL, which their merge passes over: the negated
/// state of lost rows that took no extreme with them.
pub(super) fn without_extremes(partial: LogicalPlan, partials: &[Partial]) -> Result<LogicalPlan> {
    let exprs: Vec<Expr> = partial
        .schema()
        .fields()
        .iter()
        .map(|f| {
            let extreme = f
                .name()
                .strip_prefix('s')
                .and_then(|i| i.parse::<usize>().ok())
                .is_some_and(|i| matches!(partials.get(i), Some(Partial::Min | Partial::Max)));
            match extreme {
                true => cast(lit(datafusion::scalar::ScalarValue::Null), f.data_type().clone()).alias(f.name()),
                false => col(f.name()),
            }
        })
        .collect();
    Ok(LogicalPlanBuilder::from(partial).project(exprs)?.build()?)
}

/// The groups of `lost` (the partial state of rows the input lost, `IncrementalView::partial`)
/// that lost one of their extremes: whose lost minimum is at or below the `state`'s minimum, or
/// lost maximum at or above its maximum (or that the state lacks). Only they must be recomputed.
pub(super) async fn groups_losing_extremes(
    ctx: &SessionContext,
    agg: &Aggregate,
    partials: &[Partial],
    lost: LogicalPlan,
    state: LogicalPlan,
) -> Result<Vec<Vec<datafusion::scalar::ScalarValue>>> {
    let keys = agg.group_expr.len();
    let renamed: Vec<Expr> =
        state.schema().fields().iter().map(|f| col(f.name()).alias(format!("o_{}", f.name()))).collect();
    let old = LogicalPlanBuilder::from(state).project(renamed)?.build()?;
    let on = |prefix: &str| (0..keys).map(|i| Column::from_name(format!("{prefix}k{i}"))).collect::<Vec<_>>();
    let joined = LogicalPlanBuilder::from(lost).join_detailed(
        old,
        JoinType::Left,
        (on(""), on("o_")),
        None,
        NullEquality::NullEqualsNull,
    )?;
    let mut reaches = lit(false);
    for (i, kind) in partials.iter().enumerate() {
        let (l, o) = (col(format!("s{i}")), col(format!("o_s{i}")));
        let at_extreme = match kind {
            Partial::Max => l.clone().gt_eq(o.clone()),
            Partial::Min => l.clone().lt_eq(o.clone()),
            _ => continue,
        };
        reaches = reaches.or(l.is_not_null().and(o.is_null().or(at_extreme)));
    }
    let key_columns: Vec<Expr> = (0..keys).map(|i| col(format!("k{i}"))).collect();
    let plan = joined.filter(reaches)?.project(key_columns)?.distinct()?.build()?;
    rows_of(ctx, plan).await
}

/// Rows whose `i`-th key (`key(i)`) holds the `i`-th value of one of `groups` (NULL matching
/// NULL): never NULL itself, so its negation is exact.
pub(super) fn in_groups(groups: &[Vec<datafusion::scalar::ScalarValue>], key: impl Fn(usize) -> Expr) -> Expr {
    groups
        .iter()
        .map(|tuple| {
            tuple
                .iter()
                .enumerate()
                .map(|(i, v)| binary_expr(key(i), Operator::IsNotDistinctFrom, lit(v.clone())))
                .reduce(Expr::and)
                .unwrap_or(lit(true))
        })
        .reduce(Expr::or)
        .unwrap_or(lit(false))
}

/// Whether the aggregates can take rows back out and still equal a full recompute: counts, and
/// sums and averages of integers and decimals, can; a minimum or maximum cannot (what replaces
/// it is not in the state), nor can a floating-point sum (its rounding depends on the order).
pub(super) fn retractable(agg: &Aggregate, partials: &[Partial]) -> std::result::Result<(), Issue> {
    for (e, kind) in agg.aggr_expr.iter().zip(partials) {
        if !retracts(agg, e, *kind) {
            return Err(Issue::new(
                IssueType::AggregateNotRetractable,
                format!("`{}` cannot take back the rows its input lost", unalias(e)),
            ));
        }
    }
    Ok(())
}

/// Whether the aggregate `e` (kept as `kind`) can take rows back out.
fn retracts(agg: &Aggregate, e: &Expr, kind: Partial) -> bool {
    let exact = |t: &DataType| t.is_integer() || matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
    match kind {
        Partial::Count => true,
        Partial::Sum | Partial::Avg | Partial::DecimalAvg => argument_type(agg, e).is_some_and(|t| exact(&t)),
        Partial::Min | Partial::Max => false,
    }
}

/// The type of the argument of the aggregate `e`.
fn argument_type(agg: &Aggregate, e: &Expr) -> Option<DataType> {
    match unalias(e) {
        Expr::AggregateFunction(AggregateFunction { params, .. }) => params.args[0].get_type(agg.input.schema()).ok(),
        _ => None,
    }
}

/// Whether every aggregate that cannot take rows back out is a minimum or maximum of values
/// that compare as the aggregate orders them (integers, decimals, dates, times, strings,
/// booleans; not floating point, whose NaN and zeros Spark orders its own way). Then a group
/// that lost rows keeps its extremes unless it lost one of them: only such groups are
/// recomputed (`groups_losing_extremes`), the others take back what they lost like any other.
pub(super) fn extremes_only(agg: &Aggregate, partials: &[Partial]) -> bool {
    let ordered = |t: &DataType| {
        t.is_integer()
            || matches!(
                t,
                DataType::Decimal128(..)
                    | DataType::Decimal256(..)
                    | DataType::Date32
                    | DataType::Date64
                    | DataType::Timestamp(..)
                    | DataType::Time32(_)
                    | DataType::Time64(_)
                    | DataType::Utf8
                    | DataType::LargeUtf8
                    | DataType::Utf8View
                    | DataType::Boolean
            )
    };
    agg.aggr_expr.iter().zip(partials).all(|(e, kind)| match kind {
        Partial::Min | Partial::Max => argument_type(agg, e).is_some_and(|t| ordered(&t)),
        _ => retracts(agg, e, *kind),
    })
}
