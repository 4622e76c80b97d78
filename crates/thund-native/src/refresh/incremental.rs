//! Incremental refresh of materialized views that aggregate tables of the pipeline.
//!
//! A view like `SELECT k, count(*), sum(x) FROM st GROUP BY k` over a table `st` would otherwise
//! re-read all of `st` each time a few rows change. Here its aggregate is kept as *state*: per
//! group, partial results that merge (sums, counts, minima, maxima; an average as a sum and a
//! count), the group's row count `n`, and each sum's count of non-NULL values. A refresh
//! aggregates only the rows the aggregate's input gained since the last one and merges them into
//! the state; the rows it lost (deleted, or the old side of an update) are aggregated too and
//! merged negated, and a group whose row count reaches zero is dropped. The view is then
//! recomputed from the state, which is as small as the number of groups. What the query does
//! above the aggregate (`HAVING`, expressions over aggregates, `ORDER BY … LIMIT`) is
//! re-evaluated on the merged state, so the result is the same as a full recompute.
//!
//! Under the aggregate may stand projections, filters, `UNION ALL` and inner, left and right joins of several
//! tables: what that input gained and lost is planned by `propagate` (for a join, each side's
//! change joined with the other side) over what each table gained and lost: its new files when
//! it was only appended to (a streaming table); otherwise its net change between the version the
//! state covers and the newest, read from its Delta log (`delta::changes`). Only counts, and sums
//! and averages of integers and decimals, take rows back out exactly; with a minimum, a maximum
//! or a floating-point sum, the groups the lost rows fall in are recomputed from all of the input
//! (filtered to those groups) and replace their state rows, while the other groups merge what
//! they gained. A change that costs as much to read as a table whole, a recreated table, a full
//! refresh: each rebuilds the state from all rows, and says why.
//!
//! A view qualifies when its query reads tables of the pipeline into one `GROUP BY` (or a global
//! aggregate) whose aggregates are `sum`, `count`, `min`, `max` or a floating-point `avg`, none
//! `DISTINCT` or `FILTER`ed; anything else is recomputed (`planning` says why). Its
//! expectations are checked over the view's rows, recomputed from the state each refresh.
//!
//! The state is a Delta table at `<storage>/state/<catalog>/<database>/<view>/`, and
//! `<view>.json` beside it records which version of each input it covers and which versions of
//! the state and the view belong together. It is written last: a crash between the commits
//! leaves versions that disagree with the record, and the next run recomputes from scratch.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, JoinType, NullEquality};
use datafusion::datasource::provider_as_source;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    binary_expr, case, cast, col, lit, Aggregate, AggregateUDF, ColumnarValue, Expr, ExprSchemable, LogicalPlan,
    LogicalPlanBuilder, Operator, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, TableScanBuilder,
    Volatility,
};
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, DatasetKind, Flow, Pipeline, QualifiedName, Read};
use serde::{Deserialize, Serialize};

use super::input::{Inputs, Offsets};
use super::planning::{Issue, IssueType, Technique};
use super::propagate::{self, Rows};
use super::Refreshed;
use crate::delta::delta_storable;
use crate::delta::storage::Storage;
use crate::delta::table::{conform, open_at, write_overwrite, write_overwrite_at};
use crate::engine::plan_query;
use crate::error::{NativeError, Result};

/// Version of the `<view>.json` record's format.
const STATE_FORMAT_VERSION: u32 = 3;

/// What the state of a view covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Record {
    format_version: u32,
    /// The view's definition and table details; a change means a recompute.
    definition: String,
    /// How far into each input the state has aggregated.
    sources: Offsets,
    /// The state table's version holding that aggregate.
    state_version: i64,
    /// The view's version computed from it.
    view_version: i64,
}

/// How one aggregate is kept as state and merged.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Partial {
    Sum,
    Count,
    Min,
    Max,
    /// A sum and a count of the non-null values.
    Avg,
    /// The average of DECIMALs: an exact sum and a count, divided as the engine's `avg` divides
    /// them ([`DecimalMean`]).
    DecimalAvg,
}

/// A view that qualifies, planned and ready to refresh.
pub(crate) struct IncrementalView {
    sources: Vec<QualifiedName>,
    plan: LogicalPlan,
    definition: String,
}

/// Whether a view refreshes incrementally, as [`eligibility`] found.
pub(crate) enum Eligibility {
    /// The view refreshes by this technique (a group aggregate, `append`, `window`).
    Maintained(Box<dyn super::Maintenance>),
    /// It does not, for these reasons (each technique's), and its query was planned on the way:
    /// use this plan, not a second one.
    Planned(LogicalPlan, Vec<(Technique, Issue)>),
    /// It does not, for these reasons (every technique's), and nothing was planned.
    NotPlanned(Vec<Issue>),
}

/// Decides whether `f` (the flow of materialized view `d`) can refresh incrementally, planning
/// its query only when the cheap checks pass.
pub(crate) async fn eligibility(
    ctx: &SessionContext,
    storage: &Storage,
    p: &Pipeline,
    d: &Dataset,
    f: &Flow,
) -> Result<Eligibility> {
    let q = f.query();
    let not = |kind: IssueType, detail: String| Ok(Eligibility::NotPlanned(vec![Issue::new(kind, detail)]));
    let mut sources: Vec<QualifiedName> = Vec::new();
    for read in &q.reads {
        let source = match read {
            Read::Dataset { name, .. } => name,
            Read::Files(fs) => {
                return not(IssueType::InputNotInDelta, format!("it reads {} files at `{}`", fs.format, fs.path))
            }
        };
        // Each input must be a table of the pipeline (a Delta table whose commits say what it
        // gained and lost) that has been written.
        match p.dataset(source).map(|s| s.kind) {
            Some(DatasetKind::StreamingTable | DatasetKind::MaterializedView) => {}
            Some(kind) => {
                return not(
                    IssueType::InputNotInDelta,
                    format!("`{source}` is a {kind}, not a table whose commits say what changed"),
                )
            }
            None => return not(IssueType::InputNotInDelta, format!("`{source}` is not a table of this pipeline")),
        }
        if !storage.is_table(&storage.table_key(source)).await? {
            return not(IssueType::ChangeSetMissing, format!("`{source}` has not been written yet"));
        }
        // (The plan's scans name tables without their schema.)
        if sources.iter().any(|s| s.name == source.name && s != source) {
            return not(IssueType::OperatorNotIncrementalizable, format!("two inputs named `{}`", source.name));
        }
        if !sources.contains(source) {
            sources.push(source.clone());
        }
    }
    if sources.is_empty() {
        return not(IssueType::OperatorNotIncrementalizable, "it reads no table".into());
    }
    let plan = plan_query(ctx, q, &p.root).await?;
    let definition = serde_json::json!({
        "engine": env!("CARGO_PKG_VERSION"),
        "sql": q.sql,
        "details": d.details,
        "sources": sources.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        // A changed rule changes which rows the view holds.
        "expectations": d.expectations.iter().map(|e| (&e.name, &e.predicate.sql, e.action)).collect::<Vec<_>>(),
    })
    .to_string();
    let aggregate = match aggregate_of(&plan) {
        Ok(_) => return Ok(Eligibility::Maintained(Box::new(IncrementalView { sources, plan, definition }))),
        Err(issue) => issue,
    };
    let append = match super::propagate::check(&plan) {
        Ok(()) => {
            return Ok(Eligibility::Maintained(Box::new(super::append::AppendView { sources, plan, definition })))
        }
        Err(issue) => issue,
    };
    let window = match sources.as_slice() {
        [source] => super::window::partitions_of(&plan, source),
        _ => Err(Issue::new(
            IssueType::OperatorNotIncrementalizable,
            "several inputs (a window is recomputed by partition over one input)",
        )),
    };
    Ok(match window {
        Ok(keys) => {
            let source = sources.remove(0);
            Eligibility::Maintained(Box::new(super::window::WindowView { source, plan, keys, definition }))
        }
        Err(window) => Eligibility::Planned(
            plan,
            vec![
                (Technique::GroupAggregate, aggregate),
                (Technique::AppendOnly, append.clone()),
                (Technique::RowBased, append),
                (Technique::WindowFunction, window),
            ],
        ),
    })
}

/// The plan's one aggregate, if everything under it is projections, filters, `UNION ALL` and
/// inner, left and right joins of scans (`propagate::check`), everything above it has a single input, and every
/// aggregate merges; else what stands in the way.
fn aggregate_of(plan: &LogicalPlan) -> std::result::Result<(&Aggregate, Vec<Partial>), Issue> {
    let operator = |node: &LogicalPlan| {
        let name = match node {
            LogicalPlan::Join(_) => "a join".to_string(),
            LogicalPlan::Union(_) => "a union".to_string(),
            LogicalPlan::Window(_) => "a window function".to_string(),
            other => format!("`{}`", other.display().to_string().split(':').next().unwrap_or("an operator")),
        };
        Issue::new(IssueType::OperatorNotIncrementalizable, format!("{name} (not maintained incrementally yet)"))
    };
    let subquery = || Issue::new(IssueType::OperatorNotIncrementalizable, "a subquery");
    let mut node = plan;
    let agg = loop {
        match node {
            LogicalPlan::Aggregate(a) => break a,
            LogicalPlan::Projection(_)
            | LogicalPlan::Filter(_)
            | LogicalPlan::Sort(_)
            | LogicalPlan::Limit(_)
            | LogicalPlan::SubqueryAlias(_)
            | LogicalPlan::Distinct(_)
            | LogicalPlan::Window(_) => {
                let inputs = node.inputs();
                if inputs.len() != 1 {
                    return Err(operator(node));
                }
                if node.expressions().iter().any(has_subquery) {
                    return Err(subquery());
                }
                node = inputs[0];
            }
            LogicalPlan::TableScan(_) => {
                return Err(Issue::new(IssueType::OperatorNotIncrementalizable, "no GROUP BY aggregate"))
            }
            other => return Err(operator(other)),
        }
    };
    if agg.group_expr.iter().any(|e| matches!(e, Expr::GroupingSet(_))) {
        return Err(Issue::new(IssueType::AggregateNotIncrementalizable, "GROUPING SETS, ROLLUP or CUBE"));
    }
    if agg.group_expr.iter().any(has_subquery) {
        return Err(subquery());
    }
    let partials = agg
        .aggr_expr
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let not_merged = || Issue::new(IssueType::AggregateNotIncrementalizable, format!("`{}`", unalias(e)));
            let Expr::AggregateFunction(AggregateFunction { func, params }) = unalias(e) else {
                return Err(not_merged());
            };
            if params.distinct || params.filter.is_some() || !params.order_by.is_empty() || params.args.len() != 1 {
                return Err(not_merged());
            }
            let wide = params.args[0].get_type(agg.input.schema()).is_ok_and(|t| matches!(t, DataType::Decimal256(..)));
            Ok(match func.name() {
                // (A sum of wide DECIMALs is taken in 256 bits and checked as it is answered; a
                // sum of partial sums would not check it.)
                "sum" if wide => return Err(not_merged()),
                "sum" => Partial::Sum,
                "count" => Partial::Count,
                "min" => Partial::Min,
                "max" => Partial::Max,
                "avg" => match agg.schema.field(agg.group_expr.len() + i).data_type() {
                    DataType::Float64 => Partial::Avg,
                    DataType::Decimal128(..)
                        if matches!(params.args[0].get_type(agg.input.schema()), Ok(DataType::Decimal128(..))) =>
                    {
                        Partial::DecimalAvg
                    }
                    _ => return Err(not_merged()),
                },
                _ => return Err(not_merged()),
            })
        })
        .collect::<std::result::Result<Vec<_>, Issue>>()?;
    // Under the aggregate: what changes row by row.
    match super::propagate::check(&agg.input) {
        Ok(()) => Ok((agg, partials)),
        Err(issue) if issue.detail == "a subquery" => Err(issue),
        Err(issue) => Err(Issue::new(IssueType::AggregateNotTopNode, format!("{} under the aggregate", issue.detail))),
    }
}

fn unalias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unalias(&a.expr),
        other => other,
    }
}

pub(super) fn has_subquery(e: &Expr) -> bool {
    e.exists(|e| Ok(matches!(e, Expr::ScalarSubquery(_) | Expr::InSubquery(_) | Expr::Exists(_)))).unwrap_or(true)
}

fn udaf(ctx: &SessionContext, name: &str) -> Result<Arc<AggregateUDF>> {
    ctx.udaf(name).map_err(|e| NativeError::Execution(format!("aggregate `{name}`: {e}")))
}

/// What a refresh aggregates: the rows the aggregate's input gained and lost (plans over the
/// rows its tables gained and lost, `propagate`), all its rows now, and the tables' offsets.
struct Input {
    inserted: Vec<LogicalPlan>,
    deleted: Vec<LogicalPlan>,
    now: LogicalPlan,
    offsets: Offsets,
    /// The lost rows cannot be taken back out of an aggregate (a minimum, a floating-point
    /// sum): the groups they fall in are recomputed from the input instead.
    regroup: bool,
}

impl IncrementalView {
    /// What the aggregate's input gained and lost since the state `r` recorded
    /// (`Inputs::since`, `propagate::delta`), and whether the groups of what it lost must be
    /// recomputed; `Err` says why the state must be rebuilt from all rows instead.
    async fn input_since(
        &self,
        ctx: &SessionContext,
        storage: &Storage,
        r: &Record,
        agg: &Aggregate,
        partials: &[Partial],
    ) -> Result<std::result::Result<Input, Issue>> {
        let before = propagate::joins(&agg.input);
        let inputs = match Inputs::since(ctx, storage, &self.sources, &r.sources, false, before).await? {
            Ok(c) => c,
            Err(why) => return Ok(Err(why)),
        };
        let changed = propagate::delta(&agg.input, &inputs)?;
        let regroup = !changed.deleted.is_empty() && retractable(agg, partials).is_err();
        if regroup && agg.group_expr.is_empty() {
            // One group, and it lost rows: recomputing it is recomputing the view.
            let why = retractable(agg, partials).err().map_or_else(String::new, |i| i.detail);
            return Ok(Err(Issue::new(IssueType::AggregateNotRetractable, why)));
        }
        Ok(Ok(Input {
            inserted: changed.inserted,
            deleted: changed.deleted,
            now: propagate::over(&agg.input, &inputs, Rows::Now)?,
            offsets: inputs.offsets(&self.sources),
            regroup,
        }))
    }

    /// The aggregate's partial state over `input` (rows of the aggregate's input): keys `k0..`,
    /// the group's row count `n`, `s0..` per aggregate and `c0..` (non-NULL values) per sum and
    /// average; all negated when `lost` (rows the input lost, taken back out).
    fn partial(
        &self,
        ctx: &SessionContext,
        agg: &Aggregate,
        partials: &[Partial],
        input: LogicalPlan,
        lost: bool,
        only: Option<Expr>,
    ) -> Result<LogicalPlan> {
        let input = match only {
            Some(only) => LogicalPlanBuilder::from(input).filter(only)?.build()?,
            None => input,
        };
        let (sum, count) = (udaf(ctx, "sum")?, udaf(ctx, "count")?);
        let keys: Vec<Expr> =
            agg.group_expr.iter().enumerate().map(|(i, g)| unalias(g).clone().alias(format!("k{i}"))).collect();
        let mut states = vec![count.call(vec![lit(1i64)]).alias("n")];
        for (i, (e, kind)) in agg.aggr_expr.iter().zip(partials).enumerate() {
            let Expr::AggregateFunction(AggregateFunction { func, params }) = unalias(e) else {
                return Err(NativeError::Execution(format!("internal error: `{e}` is not an aggregate")));
            };
            let arg = params.args[0].clone();
            match kind {
                Partial::Avg => {
                    states.push(sum.call(vec![cast(arg.clone(), DataType::Float64)]).alias(format!("s{i}")));
                    states.push(count.call(vec![arg]).alias(format!("c{i}")));
                }
                Partial::Sum => {
                    states.push(func.call(vec![arg.clone()]).alias(format!("s{i}")));
                    states.push(count.call(vec![arg]).alias(format!("c{i}")));
                }
                Partial::DecimalAvg => {
                    states.push(sum.call(vec![arg.clone()]).alias(format!("s{i}")));
                    states.push(count.call(vec![arg]).alias(format!("c{i}")));
                }
                _ => states.push(func.call(vec![arg]).alias(format!("s{i}"))),
            }
        }
        let partial = LogicalPlanBuilder::from(input).aggregate(keys, states)?.build()?;
        let partial = match lost {
            false => partial,
            true => {
                let keys = agg.group_expr.len();
                let negated: Vec<Expr> = partial
                    .schema()
                    .fields()
                    .iter()
                    .enumerate()
                    .map(|(i, f)| match i < keys {
                        true => col(f.name()),
                        false => Expr::Negative(Box::new(col(f.name()))).alias(f.name()),
                    })
                    .collect();
                LogicalPlanBuilder::from(partial).project(negated)?.build()?
            }
        };
        storable(partial)
    }
}

/// The distinct group keys of `input` (rows of the aggregate's input).
async fn groups_of(
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
fn without_extremes(partial: LogicalPlan, partials: &[Partial]) -> Result<LogicalPlan> {
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
async fn groups_losing_extremes(
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
fn in_groups(groups: &[Vec<datafusion::scalar::ScalarValue>], key: impl Fn(usize) -> Expr) -> Expr {
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
fn retractable(agg: &Aggregate, partials: &[Partial]) -> std::result::Result<(), Issue> {
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
fn extremes_only(agg: &Aggregate, partials: &[Partial]) -> bool {
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
    !agg.group_expr.is_empty()
        && agg.aggr_expr.iter().zip(partials).all(|(e, kind)| match kind {
            Partial::Min | Partial::Max => argument_type(agg, e).is_some_and(|t| ordered(&t)),
            _ => retracts(agg, e, *kind),
        })
}

/// The plan with its scan of `source` reading `provider` instead (same name, same projection).
pub(super) fn replace_scan(
    plan: LogicalPlan,
    source: &QualifiedName,
    provider: Arc<dyn datafusion::catalog::TableProvider>,
) -> Result<LogicalPlan> {
    Ok(plan
        .transform_up(|node| match node {
            LogicalPlan::TableScan(scan) if scan.table_name.table() == source.name => {
                let replaced =
                    TableScanBuilder::new(scan.table_name.clone(), provider_as_source(Arc::clone(&provider)))
                        .with_projection(scan.projection.clone())
                        .with_filters(scan.filters.clone())
                        .with_fetch(scan.fetch)
                        .build()?;
                Ok(Transformed::yes(LogicalPlan::TableScan(replaced)))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data)
}

/// State columns in types a Delta table stores (strings as `Utf8`, not views).
fn storable(plan: LogicalPlan) -> Result<LogicalPlan> {
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

#[async_trait::async_trait]
impl super::Maintenance for IncrementalView {
    fn technique(&self) -> super::planning::Technique {
        super::planning::Technique::GroupAggregate
    }

    fn into_plan(self: Box<Self>) -> LogicalPlan {
        self.plan
    }

    /// Refreshes the view: merges what its input gained and lost into the state (or builds the
    /// state from all rows when there is none that fits, or `rebuild` asks for it), then
    /// recomputes the view from the state.
    async fn refresh(
        self: Box<Self>,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        rebuild: bool,
        dq: &mut Option<knut_thund::backend::DataQuality>,
    ) -> Result<Refreshed> {
        let this = *self;
        let (agg, partials) = aggregate_of(&this.plan).map_err(|i| {
            NativeError::Execution(format!("`{}` no longer refreshes incrementally: {}", d.name, i.detail))
        })?;
        let record: Option<Record> = storage.read_json(&storage.state_record_key(&d.name)).await?;
        let state_key = storage.state_table_key(&d.name);
        let state_url = storage.url_of(&format!("{state_key}/"));
        let state_version = storage.delta_version(&state_key).await?;
        let view_version = storage.delta_version(&storage.table_key(&d.name)).await?;
        // The record holds only if the state and the view are still the versions it names.
        let usable = record.filter(|r| {
            !rebuild
                && r.format_version == STATE_FORMAT_VERSION
                && r.definition == this.definition
                && r.state_version == state_version
                && r.view_version == view_version
        });
        // The state's groups recomputed from the input this refresh, if any.
        let mut drop_groups: Option<Expr> = None;
        let all_rows = || async {
            let all = Inputs::now(ctx, storage, &this.sources).await?;
            let rows = propagate::over(&agg.input, &all, Rows::Now)?;
            let offsets = all.offsets(&this.sources);
            Ok::<_, NativeError>(Input {
                now: rows.clone(),
                inserted: vec![rows],
                deleted: Vec::new(),
                offsets,
                regroup: false,
            })
        };
        let mut steps = crate::flow::Steps::of("refresh", &d.name);
        let (input, rebuilt) = match &usable {
            Some(r) => match this.input_since(ctx, storage, r, agg, &partials).await? {
                Ok(input) => (input, None),
                Err(why) => (all_rows().await?, Some(why)),
            },
            None => (all_rows().await?, Some(super::input::no_record(rebuild))),
        };
        let previous = rebuilt.is_none();
        steps.done("read the inputs' change");

        // 1. The partial aggregate of the rows gained, and, negated, of those lost, with state
        //    columns k0.., n (the group's rows), s0.. and c0.. (non-NULL values of a sum or avg).
        let mut parts = match input.regroup {
            false => {
                let mut parts = Vec::new();
                for gained in input.inserted {
                    parts.push(this.partial(ctx, agg, &partials, gained, false, None)?);
                }
                for lost in input.deleted {
                    parts.push(this.partial(ctx, agg, &partials, lost, true, None)?);
                }
                parts
            }
            // The groups the lost rows fall in, recomputed from all of the input; every other
            // group merges what it gained. (The state's rows of those groups are dropped below.)
            // With only minimums and maximums in the way, just the groups that lost an extreme;
            // the others take back what they lost (their extremes set aside: they stay).
            true => {
                let extremes = extremes_only(agg, &partials);
                let mut touched = Vec::new();
                let mut retracted = Vec::new();
                for lost in input.deleted {
                    let groups = match extremes {
                        true => {
                            let state = open_at(ctx, &state_url).await?;
                            let state = LogicalPlanBuilder::scan("state", provider_as_source(state), None)?.build()?;
                            let partial = this.partial(ctx, agg, &partials, lost.clone(), false, None)?;
                            groups_losing_extremes(ctx, agg, &partials, partial, state).await?
                        }
                        false => groups_of(ctx, agg, lost.clone()).await?,
                    };
                    for group in groups {
                        if !touched.contains(&group) {
                            touched.push(group);
                        }
                    }
                    if extremes {
                        retracted.push(lost);
                    }
                }
                steps.done(&format!("find the {} groups to recompute", touched.len()));
                let in_input = in_groups(&touched, |i| unalias(&agg.group_expr[i]).clone());
                let in_state = in_groups(&touched, |i| col(format!("k{i}")));
                let mut parts = Vec::new();
                for gained in input.inserted {
                    let gained = this.partial(ctx, agg, &partials, gained, false, None)?;
                    parts.push(LogicalPlanBuilder::from(gained).filter(!in_state.clone())?.build()?);
                }
                for lost in retracted {
                    let lost = this.partial(ctx, agg, &partials, lost, true, None)?;
                    let lost = without_extremes(lost, &partials)?;
                    parts.push(LogicalPlanBuilder::from(lost).filter(!in_state.clone())?.build()?);
                }
                if !touched.is_empty() {
                    parts.push(this.partial(ctx, agg, &partials, input.now, false, Some(in_input))?);
                }
                drop_groups = Some(in_state);
                parts
            }
        };
        let merge_needed = parts.len() > 1;

        // 2. Merged with the previous state, unless there is none: a group whose rows are all
        //    gone is dropped (a global aggregate keeps its one row).
        let merged = if previous || merge_needed {
            if previous {
                let old = open_at(ctx, &state_url).await?;
                let old = LogicalPlanBuilder::scan("state", provider_as_source(old), None)?;
                let old = match drop_groups.take() {
                    Some(recomputed) => old.filter(!recomputed)?,
                    None => old,
                };
                parts.push(old.build()?);
            }
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
            storable(merged.build()?)?
        } else {
            parts.remove(0)
        };
        let offsets = input.offsets;
        let state = write_overwrite_at(ctx, storage, &state_key, &format!("{}_state", d.name.name), merged).await?;
        let state_version = state.version().map_or(-1, |v| v as i64);
        steps.done("merge and write the state");
        crate::failpoint::hit("incremental-after-state", &d.name)?;

        // 3. The view: the query with its aggregate read from the state.
        state.update_datafusion_session(&ctx.state())?;
        let scan = LogicalPlanBuilder::scan(
            "state",
            provider_as_source(crate::delta::filtered::filtered(state.table_provider().await?)),
            None,
        )?
        .build()?;
        let mut finals = Vec::new();
        for (i, (qualifier, field)) in agg.schema.iter().enumerate() {
            let value = if i < agg.group_expr.len() {
                col(format!("k{i}"))
            } else {
                let j = i - agg.group_expr.len();
                let s = col(format!("s{j}"));
                match partials[j] {
                    Partial::Avg => {
                        let c = col(format!("c{j}"));
                        case(c.clone())
                            .when(lit(0i64), lit(datafusion::scalar::ScalarValue::Float64(None)))
                            .otherwise(s / cast(c, DataType::Float64))?
                    }
                    Partial::DecimalAvg => {
                        let mean = ScalarUDF::new_from_impl(DecimalMean::new(field.data_type().clone())?);
                        mean.call(vec![s, col(format!("c{j}"))])
                    }
                    // A sum of no non-NULL values is NULL, however the rows came and went.
                    Partial::Sum => {
                        let null = cast(lit(datafusion::scalar::ScalarValue::Null), field.data_type().clone());
                        case(col(format!("c{j}"))).when(lit(0i64), null).otherwise(s)?
                    }
                    _ => s,
                }
            };
            finals.push(cast(value, field.data_type().clone()).alias_qualified(qualifier.cloned(), field.name()));
        }
        let from_state = LogicalPlanBuilder::from(scan).project(finals)?.build()?;
        let view = this
            .plan
            .transform_down(|node| match node {
                LogicalPlan::Aggregate(_) => Ok(Transformed::new(from_state.clone(), true, TreeNodeRecursion::Jump)),
                other => Ok(Transformed::no(other)),
            })?
            .data
            .transform_up(|node| Ok(Transformed::yes(node.recompute_schema()?)))?
            .data;
        // The view's expectations are checked over all its rows, as a recompute would.
        let view = conform(ctx, d, f, view)?;
        let checker = super::checker_for(ctx, d, &view)?;
        let written = write_overwrite(ctx, storage, d, super::checked(ctx, &checker, view).await?).await;
        *dq = checker.map(|c| c.metrics());
        let rows = written?;
        steps.done("write the view");
        crate::failpoint::hit("incremental-after-view", &d.name)?;
        let view_version = storage.delta_version(&storage.table_key(&d.name)).await?;
        let record = Record {
            format_version: STATE_FORMAT_VERSION,
            definition: this.definition,
            sources: offsets,
            state_version,
            view_version,
        };
        storage.write_json(&storage.state_record_key(&d.name), &record).await?;
        Ok(Refreshed::by(rows, Technique::GroupAggregate, rebuilt))
    }
}

/// `avg` of DECIMALs from its state: the exact sum of the values (at their scale) and their
/// count, divided as DataFusion's `avg` divides them (`DecimalAverager`): the sum scaled up to
/// the result's scale, divided by the count truncating toward zero, an average beyond the
/// result's precision an overflow error; no values, NULL. The view's own cast to Spark's type
/// then rounds it as a recompute's does.
#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalMean {
    signature: Signature,
    /// The average's type, `avg`'s own (`Decimal128(p, s)`).
    target: DataType,
}

impl DecimalMean {
    fn new(target: DataType) -> Result<Self> {
        match target {
            DataType::Decimal128(..) => Ok(DecimalMean { signature: Signature::any(2, Volatility::Immutable), target }),
            other => Err(NativeError::Execution(format!("internal error: a DECIMAL average of type {other}"))),
        }
    }
}

impl ScalarUDFImpl for DecimalMean {
    fn name(&self) -> &str {
        "decimal_mean"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(self.target.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> datafusion::common::Result<ColumnarValue> {
        use arrow::array::{Array, AsArray, Decimal128Array};
        use datafusion::common::exec_err;
        let DataType::Decimal128(precision, scale) = self.target else {
            return exec_err!("decimal_mean of {}", self.target);
        };
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let sums = &arrays[0];
        let DataType::Decimal128(_, sum_scale) = sums.data_type().clone() else {
            return exec_err!("decimal_mean of a sum of type {}", sums.data_type());
        };
        let counts = arrow::compute::cast(&arrays[1], &DataType::Int64)?;
        let (sums, counts) = (
            sums.as_primitive::<arrow::datatypes::Decimal128Type>(),
            counts.as_primitive::<arrow::datatypes::Int64Type>(),
        );
        if scale < sum_scale {
            return exec_err!("Arithmetic Overflow in AvgAccumulator");
        }
        let up = 10i128.pow((scale - sum_scale) as u32);
        let bound = 10i128.checked_pow(precision as u32).unwrap_or(i128::MAX);
        let mut out = Vec::with_capacity(sums.len());
        for i in 0..sums.len() {
            if sums.is_null(i) || counts.is_null(i) || counts.value(i) == 0 {
                out.push(None);
                continue;
            }
            let Some(scaled) = sums.value(i).checked_mul(up) else {
                return exec_err!("Arithmetic Overflow in AvgAccumulator");
            };
            let mean = scaled / counts.value(i) as i128;
            if mean.abs() >= bound {
                return exec_err!("Arithmetic Overflow in AvgAccumulator");
            }
            out.push(Some(mean));
        }
        let means = Decimal128Array::from(out).with_precision_and_scale(precision, scale)?;
        Ok(ColumnarValue::Array(Arc::new(means)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray, Decimal128Array, Int64Array, RecordBatch};
    use arrow::datatypes::{Decimal128Type, Field, Int64Type, Schema};
    use datafusion::datasource::MemTable;

    /// The mean of a sum and a count equals DataFusion's own `avg` of the values, digit for
    /// digit: many small groups of positive and negative values, whose averages end in every
    /// digit at the result's last place.
    #[tokio::test]
    async fn the_decimal_mean_of_a_sum_and_a_count_is_the_engines_avg() {
        let (mut x, mut groups, mut values) = (7u64, Vec::new(), Vec::new());
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for g in 0..3000i64 {
            for _ in 0..1 + next(7) {
                groups.push(g);
                let v = next(2_000_000) as i128 - 1_000_000;
                values.push(if next(9) == 0 { None } else { Some(v) });
            }
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, false),
            Field::new("d", DataType::Decimal128(10, 2), true),
        ]));
        let d = Decimal128Array::from(values).with_precision_and_scale(10, 2).unwrap();
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from(groups)), Arc::new(d)]).unwrap();
        let ctx = SessionContext::new();
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())).unwrap();
        let sql = "SELECT avg(d) AS a, sum(d) AS s, count(d) AS c FROM t GROUP BY g";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let mut checked = 0;
        for b in batches {
            let target = b.schema().field(0).data_type().clone();
            let mean = DecimalMean::new(target.clone()).unwrap();
            let args = ScalarFunctionArgs {
                args: vec![
                    ColumnarValue::Array(Arc::clone(b.column(1))),
                    ColumnarValue::Array(Arc::clone(b.column(2))),
                ],
                arg_fields: vec![Arc::new(b.schema().field(1).clone()), Arc::new(b.schema().field(2).clone())],
                number_rows: b.num_rows(),
                return_field: Arc::new(Field::new("m", target, true)),
                config_options: Arc::new(Default::default()),
            };
            let ColumnarValue::Array(got) = mean.invoke_with_args(args).unwrap() else { panic!("an array") };
            let (got, want) = (got.as_primitive::<Decimal128Type>(), b.column(0).as_primitive::<Decimal128Type>());
            assert_eq!(got.data_type(), want.data_type());
            for i in 0..b.num_rows() {
                assert_eq!(got.is_null(i), want.is_null(i), "row {i}");
                if !want.is_null(i) {
                    assert_eq!(
                        got.value(i),
                        want.value(i),
                        "sum {:?}, count {}",
                        b.column(1),
                        b.column(2).as_primitive::<Int64Type>().value(i)
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 2500, "{checked}");
    }
}
