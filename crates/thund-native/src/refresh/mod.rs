//! Materialized-view refresh: a view whose inputs did not change is IDLE (`freshness`); one that
//! aggregates an append-only table merges only the new rows (`incremental`); any other is
//! recomputed and replaces its table in one Delta commit (`table::write_overwrite`). A dry run
//! plans the query and registers an empty table of its schema for the views downstream.

pub(crate) mod freshness;
pub(crate) mod incremental;

use std::sync::Arc;

use datafusion::datasource::MemTable;
use knut_thund::backend::DataQuality;

use crate::engine::{plan_query, table_ref};
use crate::error::Result;
use crate::expect::Checker;
use crate::flow::{FlowEffect, FlowJob};

use crate::delta::table::{conform, write_overwrite};
use incremental::Eligibility;

/// Refreshes the materialized view `job.dataset`; `dq` receives its expectation counts.
pub(crate) async fn refresh(job: &FlowJob<'_>, dq: &mut Option<DataQuality>) -> Result<FlowEffect> {
    let (ctx, storage, p, d, f) = (job.ctx, job.storage, job.pipeline, job.dataset, job.flow);
    // `None`: its query is non-deterministic, or this is a dry run.
    let fingerprint = match job.dry {
        false => freshness::fingerprint(ctx, p, storage, d, f.query()).await?,
        true => None,
    };
    if let Some(fp) = &fingerprint {
        if !job.full_refresh && freshness::is_fresh(storage, d, fp).await {
            return Ok(FlowEffect::Nothing);
        }
    }
    // A view aggregating an append-only table merges only the new rows; a full refresh rebuilds
    // its state from all rows.
    let mut planned = None;
    if let Some(fp) = &fingerprint {
        match incremental::eligibility(ctx, storage, p, d, f).await? {
            Eligibility::Incremental(view) => {
                job.starting();
                job.running();
                let rows = view.refresh(ctx, storage, d, f, job.full_refresh).await?;
                crate::failpoint::hit("refresh-after-commit", &d.name)?;
                freshness::record(storage, d, fp.clone()).await?;
                return Ok(FlowEffect::Rows(rows));
            }
            Eligibility::Planned(plan) => planned = Some(plan),
            Eligibility::NotPlanned => {}
        }
    }
    let plan = match planned {
        Some(plan) => plan,
        None => plan_query(ctx, f.query(), &p.root).await?,
    };
    let plan = conform(ctx, d, f, plan)?;
    let checker = match d.expectations.is_empty() {
        true => None,
        false => Some(Checker::new(ctx, d, &plan)?),
    };
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
