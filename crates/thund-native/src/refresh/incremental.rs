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
//! and averages of integers and decimals, take rows back out exactly; so do minimums and
//! maximums of exactly ordered values where few distinct values are kept counted beside the
//! state (`values`). Otherwise, with a minimum, a maximum or a floating-point sum, the groups the
//! lost rows fall in are recomputed from all of the input (filtered to those groups) and replace
//! their state rows, while the other groups merge what they gained (`regroup`). A change that costs as much to read as a table whole, a recreated table, a full
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
use datafusion::datasource::provider_as_source;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::expr::AggregateFunction;
use datafusion::logical_expr::{
    case, cast, col, lit, Aggregate, AggregateUDF, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, ScalarUDF,
    TableScanBuilder,
};
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, DatasetKind, Flow, Pipeline, QualifiedName, Read};
use serde::{Deserialize, Serialize};

use super::input::{Inputs, Offsets};
use super::mean::DecimalMean;
use super::merge::{merge, storable};
use super::planning::{Issue, IssueType, Technique};
use super::propagate::{self, Rows};
use super::regroup::{extremes_only, groups_losing_extremes, groups_of, in_groups, retractable, without_extremes};
use super::values;
use super::Refreshed;
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
    /// The version of the value counts of the view's minimums and maximums (`values`) that
    /// belongs to that state, if the view keeps them.
    #[serde(default)]
    values_version: Option<i64>,
    /// The view's minimums and maximums have had too many values to count (`values`): a state
    /// built again from all rows does not try again (the pass that counts them costs a second
    /// aggregate of every row when they are many).
    #[serde(default)]
    values_too_many: bool,
}

/// How one aggregate is kept as state and merged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Partial {
    Sum,
    Count,
    Min,
    Max,
    /// A sum and a count of the non-null values.
    Avg,
    /// The average of DECIMALs: an exact sum and a count, divided as the engine's `avg` divides
    /// them (`mean::DecimalMean`).
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

pub(super) fn unalias(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => unalias(&a.expr),
        other => other,
    }
}

pub(super) fn has_subquery(e: &Expr) -> bool {
    e.exists(|e| Ok(matches!(e, Expr::ScalarSubquery(_) | Expr::InSubquery(_) | Expr::Exists(_)))).unwrap_or(true)
}

pub(super) fn udaf(ctx: &SessionContext, name: &str) -> Result<Arc<AggregateUDF>> {
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
        counted: bool,
    ) -> Result<std::result::Result<Input, Issue>> {
        let before = |changed: &_| propagate::befores(&agg.input, changed);
        let inputs = match Inputs::since(ctx, storage, &self.sources, &r.sources, false, before).await? {
            Ok(c) => c,
            Err(why) => return Ok(Err(why)),
        };
        let changed = propagate::delta(&agg.input, &inputs)?;
        // With its values counted, a minimum or maximum takes rows back out too.
        let regroup = !changed.deleted.is_empty() && retractable(agg, partials).is_err() && !counted;
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
        self.partial_by(ctx, agg, partials, input, lost, only, Vec::new())
    }

    /// `partial`, its groups split further by the `extra` keys (after `k0..`).
    #[allow(clippy::too_many_arguments)]
    fn partial_by(
        &self,
        ctx: &SessionContext,
        agg: &Aggregate,
        partials: &[Partial],
        input: LogicalPlan,
        lost: bool,
        only: Option<Expr>,
        extra: Vec<Expr>,
    ) -> Result<LogicalPlan> {
        let input = match only {
            Some(only) => LogicalPlanBuilder::from(input).filter(only)?.build()?,
            None => input,
        };
        let (sum, count) = (udaf(ctx, "sum")?, udaf(ctx, "count")?);
        let mut keys: Vec<Expr> =
            agg.group_expr.iter().enumerate().map(|(i, g)| unalias(g).clone().alias(format!("k{i}"))).collect();
        let extras = extra.len();
        keys.extend(extra);
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
                // (Every key, the extra ones too, keeps its value.)
                let keys = agg.group_expr.len() + extras;
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
        // Whether the view's minimums and maximums may keep value counts (`values`).
        let countable = values::any(&partials) && extremes_only(agg, &partials);
        let values_key = storage.values_table_key(&d.name);
        let values_version = match countable {
            true => Some(storage.delta_version(&values_key).await?),
            false => None,
        };
        // Tried before for this definition and found too many: not counted again.
        let too_many = record.as_ref().is_some_and(|r| r.definition == this.definition && r.values_too_many);
        // The record holds only if the state, its value counts and the view are still the
        // versions it names.
        let usable = record.filter(|r| {
            !rebuild
                && r.format_version == STATE_FORMAT_VERSION
                && r.definition == this.definition
                && r.state_version == state_version
                && r.view_version == view_version
                && r.values_version.is_none_or(|v| Some(v) == values_version)
        });
        let counted = usable.as_ref().is_some_and(|r| r.values_version.is_some());
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
            Some(r) => match this.input_since(ctx, storage, r, agg, &partials, counted).await? {
                Ok(input) => (input, None),
                Err(why) => (all_rows().await?, Some(why)),
            },
            None => (all_rows().await?, Some(super::input::no_record(rebuild))),
        };
        let previous = rebuilt.is_none();
        steps.done("read the inputs' change");
        // The value counts merged first: the state's extremes are read off them.
        let counted = counted && previous;
        let shape = Arc::clone(this.partial(ctx, agg, &partials, input.now.clone(), false, None)?.schema());
        let mut kept_values = None;
        let mut counted_rows = None;
        let mut extremes = None;
        if counted {
            // What was gained and lost, counted as a full build counts (negated when lost).
            let changed = input.inserted.iter().map(|p| (p, false)).chain(input.deleted.iter().map(|p| (p, true)));
            let mut parts = Vec::new();
            for (rows, lost) in changed {
                let by = values::arguments(agg, &partials)?;
                let fine = this.partial_by(ctx, agg, &partials, rows.clone(), lost, None, by)?;
                parts.push(values::counts_from(ctx, agg, &partials, fine)?);
            }
            let old = open_at(ctx, &storage.url_of(&format!("{values_key}/"))).await?;
            parts.push(LogicalPlanBuilder::scan("counts", provider_as_source(old), None)?.build()?);
            let merged = values::merged(ctx, parts)?;
            let name = format!("{}_values", d.name.name);
            let (counts, rows) = write_overwrite_at(ctx, storage, &values_key, &name, merged).await?;
            kept_values = Some(counts.version().map_or(-1, |v| v as i64));
            counted_rows = Some(rows);
            steps.done("merge and write the value counts");
            crate::failpoint::hit("incremental-after-values", &d.name)?;
            counts.update_datafusion_session(&ctx.state())?;
            let provider = crate::delta::filtered::filtered(counts.table_provider().await?);
            let counts = LogicalPlanBuilder::scan("counts", provider_as_source(provider), None)?.build()?;
            extremes = Some(values::extremes_from(ctx, agg, &partials, counts, &shape)?);
        }

        // Built from all rows: the state with its values counted in the same pass, by groups
        // split further by each minimum's and maximum's value, if there are few such groups.
        let mut fine = None;
        let mut values_too_many = too_many;
        if !previous && countable && !too_many {
            let by = values::arguments(agg, &partials)?;
            let plan = this.partial_by(ctx, agg, &partials, input.now.clone(), false, None, by)?;
            fine = values::fine(ctx, plan).await?;
            values_too_many = fine.is_none();
            steps.done(&format!("aggregate by value ({})", if fine.is_some() { "few" } else { "too many" }));
        }

        // 1. The partial aggregate of the rows gained, and, negated, of those lost, with state
        //    columns k0.., n (the group's rows), s0.. and c0.. (non-NULL values of a sum or avg).
        let mut parts = match input.regroup {
            false if let Some((by_value, _)) = &fine => {
                vec![merge(ctx, vec![by_value.clone()], agg, &partials, &shape)?]
            }
            false => {
                let mut parts = Vec::new();
                for gained in input.inserted {
                    parts.push(this.partial(ctx, agg, &partials, gained, false, None)?);
                }
                for lost in input.deleted {
                    let lost = this.partial(ctx, agg, &partials, lost, true, None)?;
                    // (Their extremes are read off the value counts, below.)
                    parts.push(match counted {
                        true => without_extremes(lost, &partials)?,
                        false => lost,
                    });
                }
                parts.extend(extremes.take());
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
                let state = match extremes {
                    true => Some(open_at(ctx, &state_url).await?),
                    false => None,
                };
                for lost in input.deleted {
                    let groups = match &state {
                        Some(state) => {
                            let state = provider_as_source(Arc::clone(state));
                            let state = LogicalPlanBuilder::scan("state", state, None)?.build()?;
                            let partial = this.partial(ctx, agg, &partials, lost.clone(), false, None)?;
                            groups_losing_extremes(ctx, agg, &partials, partial, state).await?
                        }
                        None => groups_of(ctx, agg, lost.clone()).await?,
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
                    parts.push(this.partial(ctx, agg, &partials, input.now.clone(), false, Some(in_input))?);
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
                let old = old.build()?;
                parts.push(match counted {
                    true => without_extremes(old, &partials)?,
                    false => old,
                });
            }
            merge(ctx, parts, agg, &partials, &shape)?
        } else {
            parts.remove(0)
        };
        let offsets = input.offsets;
        let (state, groups) =
            write_overwrite_at(ctx, storage, &state_key, &format!("{}_state", d.name.name), merged).await?;
        let groups = groups as usize;
        let state_version = state.version().map_or(-1, |v| v as i64);
        steps.done("merge and write the state");
        crate::failpoint::hit("incremental-after-state", &d.name)?;
        // Counts grown to more than their groups justify (ever new values: times, ids) would be
        // rewritten whole each refresh: they are dropped, and the groups that lose an extreme
        // are recomputed from the input instead, until the state is built again.
        if counted_rows.is_some_and(|rows| !values::few(rows as usize, groups)) {
            kept_values = None;
            values_too_many = true;
            steps.done("drop the value counts: too many for the groups");
        }
        // A state built from all rows: its value counts too, if they are few for its groups.
        if let Some((by_value, rows)) = fine {
            values_too_many = !values::few(rows, groups);
            if !values_too_many {
                let counts = values::counts_from(ctx, agg, &partials, by_value)?;
                let name = format!("{}_values", d.name.name);
                let (table, _) = write_overwrite_at(ctx, storage, &values_key, &name, counts).await?;
                kept_values = Some(table.version().map_or(-1, |v| v as i64));
                steps.done("write the value counts");
                crate::failpoint::hit("incremental-after-values", &d.name)?;
            }
        }

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
            values_version: kept_values,
            values_too_many,
        };
        storage.write_json(&storage.state_record_key(&d.name), &record).await?;
        Ok(Refreshed::by(rows, Technique::GroupAggregate, rebuilt))
    }
}
