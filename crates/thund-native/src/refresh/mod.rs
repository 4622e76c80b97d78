//! Materialized-view refresh, one technique per refresh (`planning`): a view whose inputs did
//! not change is IDLE (`freshness`); one that aggregates tables (through joins and unions)
//! merges in what its input gained and takes back what it lost (`incremental`); one whose query
//! is made of projections, filters, `UNION ALL` and joins appends the query's rows over what its
//! inputs gained (`append`), or, when the query lost rows (its inputs lost some, or an outer
//! join found a match), takes those out too (`rows`); one whose window functions are partitioned recomputes the partitions its
//! input changed (`window`); any other is recomputed and replaces its table in one Delta commit
//! (`table::write_overwrite`). What each input gained and lost is read in `input`, what a query
//! of them gained and lost is planned row by row in `propagate`. What was considered and chosen
//! is written to the event log (`planning_information`) and shown in the run summary. A dry run
//! plans the query and registers an empty table of its schema for the views downstream.

pub(crate) mod append;
pub(crate) mod freshness;
pub(crate) mod incremental;
mod input;
mod mean;
mod merge;
pub(crate) mod planning;
mod propagate;
mod regroup;
mod rows;
mod values;
pub(crate) mod window;

use std::sync::Arc;

use datafusion::datasource::MemTable;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use knut_thund::backend::DataQuality;
use knut_thund::ir::{Dataset, Flow, RefreshPolicy};

use crate::delta::storage::Storage;

use crate::engine::{plan_query, table_ref};
use crate::error::{NativeError, Result};
use crate::expect::Checker;
use crate::flow::{FlowEffect, FlowJob};

use crate::delta::table::{conform, write_overwrite};
use incremental::Eligibility;
use planning::{Issue, IssueType, Planning, Technique};

/// An incremental technique ready to refresh one view; each lives in a room of its own
/// (`incremental`, `append`, `window`), chosen by `incremental::eligibility`.
#[async_trait::async_trait]
pub(crate) trait Maintenance: Send + Sync {
    /// Which technique it is.
    fn technique(&self) -> Technique;
    /// The view's planned query (what a dry run plans instead of refreshing).
    fn into_plan(self: Box<Self>) -> LogicalPlan;
    /// Refreshes the view (a full `rebuild` recomputes it); `dq` receives the counts of its
    /// expectations over the rows it wrote, even when they fail it.
    #[allow(clippy::too_many_arguments)]
    async fn refresh(
        self: Box<Self>,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        rebuild: bool,
        dq: &mut Option<DataQuality>,
    ) -> Result<Refreshed>;
}

/// The checker of `d`'s expectations over `plan`'s rows, if it has any.
pub(crate) fn checker_for(ctx: &SessionContext, d: &Dataset, plan: &LogicalPlan) -> Result<Option<Checker>> {
    match d.expectations.is_empty() {
        true => Ok(None),
        false => Ok(Some(Checker::new(ctx, d, plan)?)),
    }
}

/// `plan`'s rows checked by `checker` (if any), for writing.
pub(crate) async fn checked(ctx: &SessionContext, checker: &Option<Checker>, plan: LogicalPlan) -> Result<LogicalPlan> {
    match checker {
        Some(c) => c.checked_plan(ctx, plan).await,
        None => Ok(plan),
    }
}

/// How a maintained view's refresh went.
pub(crate) struct Refreshed {
    /// The rows written.
    pub rows: u64,
    /// The technique that refreshed it; `None`: it was recomputed.
    pub by: Option<Technique>,
    /// The techniques it tried that did not apply, each with why.
    pub not: Vec<(Technique, Issue)>,
}

impl Refreshed {
    /// Refreshed by `technique`, or, when `why` says it could not be, recomputed.
    pub(crate) fn by(rows: u64, technique: Technique, why: Option<Issue>) -> Refreshed {
        match why {
            None => Refreshed { rows, by: Some(technique), not: Vec::new() },
            Some(why) => Refreshed { rows, by: None, not: vec![(technique, why)] },
        }
    }
}

/// Refreshes the materialized view `job.dataset`; `dq` receives its expectation counts. The
/// refresh's planning is reported whether it succeeds or not.
pub(crate) async fn refresh(job: &FlowJob<'_>, dq: &mut Option<DataQuality>) -> Result<FlowEffect> {
    let mut planning = Planning::new(job.dataset.details.refresh_policy.unwrap_or_default());
    let effect = refresh_planned(job, dq, &mut planning).await;
    job.planned(&planning);
    effect
}

async fn refresh_planned(
    job: &FlowJob<'_>,
    dq: &mut Option<DataQuality>,
    planning: &mut Planning,
) -> Result<FlowEffect> {
    let (ctx, storage, p, d, f) = (job.ctx, job.storage, job.pipeline, job.dataset, job.flow);
    let policy = d.details.refresh_policy.unwrap_or_default();
    // `None`: its query is non-deterministic. (Read only: a dry run takes it too, to say what a
    // run would do.)
    let mut steps = crate::flow::Steps::of("refresh", &d.name);
    let fingerprint = freshness::fingerprint(ctx, p, storage, d, f.query()).await?;
    steps.done("fingerprint the inputs");
    // What makes this refresh a recompute whatever the view is.
    let forced = match (policy, job.full_refresh) {
        (RefreshPolicy::Full, _) => Some(Issue::new(IssueType::RefreshPolicyFull, "REFRESH POLICY FULL")),
        (_, true) => Some(Issue::new(IssueType::FullRefreshRequested, "a full refresh recomputes the view")),
        _ => None,
    };
    let fresh = match &fingerprint {
        Some(fp) => forced.is_none() && freshness::is_fresh(storage, d, fp).await,
        None => false,
    };
    if fresh {
        planning.consider(Technique::NoOp, true, Vec::new());
        if !job.dry {
            planning.choose(Technique::NoOp);
            return Ok(FlowEffect::Nothing);
        }
    }
    // An incremental technique where one applies; a dry run only says which it would take (and,
    // for a view it would leave as it is, what its next change would take).
    let mut planned = None;
    if planning.chosen().is_none() {
        let eligibility = match (&fingerprint, policy) {
            (None, _) => {
                let why = "the query has a non-deterministic expression";
                Eligibility::NotPlanned(vec![Issue::new(IssueType::ExpressionNotDeterministic, why)])
            }
            (Some(_), RefreshPolicy::Full) => Eligibility::NotPlanned(forced.clone().into_iter().collect()),
            (Some(_), _) => incremental::eligibility(ctx, storage, p, d, f).await?,
        };
        steps.done("plan the techniques");
        match eligibility {
            Eligibility::Maintained(view) if job.dry => {
                planning.consider(view.technique(), true, Vec::new());
                planned = Some(view.into_plan());
            }
            Eligibility::Maintained(view) => {
                job.starting();
                job.running();
                let refreshed = view.refresh(ctx, storage, d, f, job.full_refresh, dq).await?;
                steps.done("maintain the view");
                for (technique, why) in refreshed.not {
                    planning.consider(technique, false, vec![why]);
                }
                planning.choose(refreshed.by.unwrap_or(Technique::CompleteRecompute));
                let rows = refreshed.rows;
                crate::failpoint::hit("refresh-after-commit", &d.name)?;
                if let Some(fp) = fingerprint {
                    freshness::record(storage, d, fp).await?;
                }
                steps.done("record the inputs' fingerprint");
                return Ok(FlowEffect::Rows(rows));
            }
            Eligibility::Planned(plan, issues) => {
                for (technique, issue) in issues {
                    planning.consider(technique, false, vec![issue]);
                }
                planned = Some(plan);
            }
            Eligibility::NotPlanned(issues) => {
                planning.consider(Technique::GroupAggregate, false, issues.clone());
                planning.consider(Technique::AppendOnly, false, issues.clone());
                planning.consider(Technique::RowBased, false, issues.clone());
                planning.consider(Technique::WindowFunction, false, issues);
            }
        }
        let blocking = planning.static_issues();
        if policy == RefreshPolicy::IncrementalStrict && !blocking.is_empty() {
            let why: Vec<String> = blocking.iter().map(|i| format!("{}: {}", i.kind.as_str(), i.detail)).collect();
            return Err(NativeError::Plan {
                location: d.location.to_string(),
                message: format!(
                    "`{}` has REFRESH POLICY INCREMENTAL STRICT but cannot refresh incrementally ({}); the refresh fails rather than recompute",
                    d.name,
                    why.join("; ")
                ),
            });
        }
        let pick = match fresh {
            true => Technique::NoOp,
            false => planning.first_applicable().unwrap_or(Technique::CompleteRecompute),
        };
        planning.choose(pick);
    }
    let plan = match planned {
        Some(plan) => plan,
        None => plan_query(ctx, f.query(), &p.root).await?,
    };
    let plan = conform(ctx, d, f, plan)?;
    let checker = checker_for(ctx, d, &plan)?;
    job.starting();
    if job.dry {
        // Downstream datasets plan against an empty table of the right schema.
        let schema = Arc::clone(plan.schema().inner());
        let empty = MemTable::try_new(schema, vec![vec![]])?;
        let _ = ctx.deregister_table(table_ref(&d.name));
        ctx.register_table(table_ref(&d.name), Arc::new(empty))?;
        return Ok(FlowEffect::Rows(0));
    }
    job.running();
    let plan = match &checker {
        Some(c) => c.checked_plan(ctx, plan).await?,
        None => plan,
    };
    let written = write_overwrite(ctx, storage, d, plan).await;
    *dq = checker.map(|c| c.metrics());
    let rows = written?;
    crate::failpoint::hit("refresh-after-commit", &d.name)?;
    if let Some(fp) = fingerprint {
        freshness::record(storage, d, fp).await?;
    }
    Ok(FlowEffect::Rows(rows))
}
