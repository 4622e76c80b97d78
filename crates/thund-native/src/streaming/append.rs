//! Flows that append what their query returns: over the input that arrived since the last batch
//! (`INSERT INTO t SELECT … FROM STREAM(s)`, a streaming table's own query), or over everything
//! it reads, once (`INSERT INTO ONCE`, a backfill run again only by a full refresh).

use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::logical_expr::LogicalPlan;
use knut_thund::ir::Query;

use super::checkpoint::{Checkpoint, KindState};
use super::kind::{Batch, BatchKind};
use super::sources::increments;
use crate::delta::table::{align_to_target, conform, evolve_to_target};
use crate::engine::{plan_query, plan_query_with_streams, StreamTables};
use crate::error::{NativeError, Result};
use crate::flow::FlowJob;

static STREAM_SEQ: AtomicUsize = AtomicUsize::new(0);

/// A name for a batch's input of one stream, unique in the session.
pub(crate) fn stream_table_name(prefix: &str) -> String {
    format!("{prefix}_{}", STREAM_SEQ.fetch_add(1, Ordering::Relaxed))
}

/// A flow appending every batch must read a stream: a batch query would append the same rows on
/// every run.
pub(super) fn reads_a_stream(job: &FlowJob<'_>, query: &Query) -> Result<()> {
    let (d, f) = (job.dataset, job.flow);
    match query.is_streaming() {
        true => Ok(()),
        false => Err(NativeError::Plan {
            location: f.location.to_string(),
            message: format!(
                "flow `{}` into {} `{}` reads no STREAM source; read `STREAM(t)` or `STREAM read_files(…)`, or make it a backfill with `INSERT INTO ONCE`",
                f.name, d.kind, d.name
            ),
        }),
    }
}

/// The rows shaped as the target takes them: the dataset's declared columns, and for an explicit
/// flow into an existing table its columns, by position or (`BY NAME`) by name. File sinks take
/// rows as they come.
pub(super) async fn shaped(batch: &Batch<'_, '_>, plan: LogicalPlan, by_name: bool) -> Result<LogicalPlan> {
    let (ctx, d, f) = (batch.job.ctx, batch.job.dataset, batch.job.flow);
    let plan = conform(ctx, d, f, plan)?;
    match &batch.target.existing {
        Some(t) if !f.implicit => align_to_target(ctx, f, plan, t, by_name).await,
        Some(t) if !batch.target.is_file_sink() => {
            let (plan, change) = evolve_to_target(ctx, plan, t).await?;
            if let Some(warning) = change.warning(d) {
                batch.job.warn(&warning);
            }
            Ok(plan)
        }
        _ => Ok(plan),
    }
}

/// The query over the new input of each `STREAM` read, which `next` advances past.
pub(super) async fn over_new_input(
    batch: &Batch<'_, '_>,
    query: &Query,
    next: &mut Checkpoint,
) -> Result<Option<LogicalPlan>> {
    let (ctx, storage, p, f) = (batch.job.ctx, batch.job.storage, batch.job.pipeline, batch.job.flow);
    let inputs = increments(ctx, p, storage, &query.reads, batch.state, batch.redo).await.map_err(|e| match e {
        e @ NativeError::Plan { .. } => e, // a streaming view's query, at its own line
        e => NativeError::Plan { location: f.location.to_string(), message: e.to_string() },
    })?;
    if !inputs.iter().any(|i| i.has_data) {
        return Ok(None);
    }
    let mut streams = StreamTables::new();
    for i in inputs {
        batch.take_checks(&i);
        let name = stream_table_name("__thund_stream");
        ctx.register_table(name.as_str(), i.provider)?;
        streams.insert(i.read, name);
        next.sources.extend(i.offsets);
    }
    let planned = plan_query_with_streams(ctx, query, &p.root, &streams).await;
    for n in streams.values() {
        let _ = ctx.deregister_table(n.as_str());
    }
    planned.map(Some)
}

/// A flow appending its query's rows: over the new input of its streams each batch, or, once
/// (`INSERT INTO ONCE`), over everything it reads in its first batch only.
pub(super) struct Append<'q> {
    query: &'q Query,
    by_name: bool,
    once: bool,
}

impl<'q> Append<'q> {
    /// Appends the query's rows over each batch's new input.
    pub(super) fn new(query: &'q Query, by_name: bool) -> Self {
        Append { query, by_name, once: false }
    }

    /// Appends the query's rows once.
    pub(super) fn once(query: &'q Query, by_name: bool) -> Self {
        Append { query, by_name, once: true }
    }
}

impl BatchKind for Append<'_> {
    type Staged = LogicalPlan;

    fn initial_state(&self) -> KindState {
        match self.once {
            true => KindState::Once { done: false },
            false => KindState::Append,
        }
    }

    async fn plan(&mut self, batch: &Batch<'_, '_>, next: &mut Checkpoint) -> Result<Option<LogicalPlan>> {
        let plan = match self.once {
            true if batch.state.state == (KindState::Once { done: true }) => return Ok(None),
            true => {
                next.state = KindState::Once { done: true };
                plan_query(batch.job.ctx, self.query, &batch.job.pipeline.root).await?
            }
            false => match over_new_input(batch, self.query, next).await? {
                Some(plan) => plan,
                None => return Ok(None),
            },
        };
        Ok(Some(shaped(batch, plan, self.by_name).await?))
    }

    async fn stage(&mut self, _: &Batch<'_, '_>, rows: LogicalPlan, _: &mut Checkpoint) -> Result<LogicalPlan> {
        Ok(rows)
    }

    async fn write(&mut self, batch: &Batch<'_, '_>, rows: LogicalPlan, next: &Checkpoint) -> Result<u64> {
        batch.target.append(batch.job, rows, batch.transaction(next)).await
    }
}
