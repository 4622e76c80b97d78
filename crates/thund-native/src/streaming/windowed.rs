//! Flows that aggregate a stream: each batch adds its rows to the open groups (windows over event
//! time, or plain groups), and writes what the output mode says — the windows the watermark
//! closed (append), the groups the batch changed (update) or every group (complete). How windows,
//! the watermark and the state work is `event_time`'s; this is the kind's part of a batch.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::catalog::TableProvider;
use datafusion::common::{Column, DFSchema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{binary_expr, Expr, JoinType, LogicalPlan, Operator};
use datafusion::prelude::{DataFrame, SessionContext};
use knut_thund::event_time::key_columns;
use knut_thund::ir::{Dataset, OutputMode, Query};

use super::append::{shaped, stream_table_name};
use super::checkpoint::{Checkpoint, KindState};
use super::event_time::{load_state, save_state, Windowed as Windows};
use super::kind::{Batch, BatchKind};
use super::sources::increments;
use crate::delta::storage::Storage;
use crate::delta::table::write_overwrite;
use crate::engine::{plan_query_with_streams, StreamTables};
use crate::error::{NativeError, Result};
use crate::flow::FlowEffect;

/// An aggregation over a stream, written in its output mode.
pub(super) struct Windowed<'q> {
    windows: Windows,
    query: &'q Query,
    by_name: bool,
    /// What the batch planned: the state's schema, the rows kept as state, late rows dropped.
    step: Option<(SchemaRef, Vec<RecordBatch>, u64)>,
}

impl<'q> Windowed<'q> {
    pub(super) fn new(windows: Windows, query: &'q Query, by_name: bool) -> Self {
        Windowed { windows, query, by_name, step: None }
    }
}

/// The watermark and open windows a checkpoint holds.
fn windows_of(state: &KindState) -> (Option<i64>, Option<String>) {
    match state {
        KindState::Windowed { watermark, open_windows } => (*watermark, open_windows.clone()),
        KindState::Append | KindState::Once { .. } | KindState::AutoCdc { .. } => (None, None),
    }
}

impl BatchKind for Windowed<'_> {
    type Staged = LogicalPlan;

    fn initial_state(&self) -> KindState {
        KindState::Windowed { watermark: None, open_windows: None }
    }

    async fn plan(&mut self, batch: &Batch<'_, '_>, next: &mut Checkpoint) -> Result<Option<LogicalPlan>> {
        let (ctx, storage, p, f) = (batch.job.ctx, batch.job.storage, batch.job.pipeline, batch.job.flow);
        let w = &self.windows;
        let inputs =
            increments(ctx, p, storage, &self.query.reads, batch.state, batch.redo).await.map_err(|e| match e {
                e @ NativeError::Plan { .. } => e,
                e => NativeError::Plan { location: f.location.to_string(), message: e.to_string() },
            })?;
        if !inputs.iter().any(|i| i.has_data) {
            return Ok(None);
        }
        let (watermark, open_windows) = windows_of(&batch.state.state);
        let mut streams = StreamTables::new();
        // In update mode, the same query over this batch's rows alone: the groups it changed.
        let mut fresh_streams = None;
        for i in inputs {
            batch.take_checks(&i);
            let name = stream_table_name("__thund_stream");
            let provider = match w.read == i.read {
                true => {
                    // The user's query sees only the rows of the windows this batch closes.
                    let source = i.provider.schema();
                    let new = ctx.read_table(i.provider)?.collect().await?;
                    let open = load_state(storage, open_windows.as_deref()).await?;
                    let step = w.step(&source, &new, open, watermark.unwrap_or(0))?;
                    next.state = KindState::Windowed { watermark: Some(step.watermark), open_windows: None };
                    let closing: Arc<dyn TableProvider> =
                        Arc::new(MemTable::try_new(Arc::clone(&step.schema), vec![step.closing])?);
                    if w.mode == OutputMode::Update {
                        let fresh = format!("{name}_fresh");
                        ctx.register_table(
                            fresh.as_str(),
                            Arc::new(MemTable::try_new(Arc::clone(&step.schema), vec![step.fresh])?),
                        )?;
                        fresh_streams = Some((i.read, fresh));
                    }
                    self.step = Some((step.state_schema, step.open, step.dropped));
                    closing
                }
                false => i.provider,
            };
            ctx.register_table(name.as_str(), provider)?;
            streams.insert(i.read, name);
            next.sources.extend(i.offsets);
        }
        let query = w.rewrite(self.query)?;
        let mut planned = plan_query_with_streams(ctx, &query, &p.root, &streams).await;
        if let (Ok(all), Some((read, fresh))) = (&planned, &fresh_streams) {
            let mut only_fresh = streams.clone();
            only_fresh.insert(*read, fresh.clone());
            planned = match plan_query_with_streams(ctx, &query, &p.root, &only_fresh).await {
                Ok(changed) => changed_groups(ctx, all.clone(), changed, &key_columns(&query)),
                Err(e) => Err(e),
            };
        }
        for n in streams.values().chain(fresh_streams.as_ref().map(|(_, n)| n)) {
            let _ = ctx.deregister_table(n.as_str());
        }
        Ok(Some(shaped(batch, planned?, self.by_name).await?))
    }

    async fn stage(&mut self, batch: &Batch<'_, '_>, rows: LogicalPlan, next: &mut Checkpoint) -> Result<LogicalPlan> {
        // The rows of the groups still open are written under the batch's own name before the
        // intent that names them.
        let (storage, d, f) = (batch.job.storage, batch.job.dataset, batch.job.flow);
        if let Some((schema, open, _)) = &self.step {
            let key = storage.window_state_key(&d.name, &f.name, next.batch);
            save_state(storage, &key, schema, open).await?;
            if let KindState::Windowed { open_windows, .. } = &mut next.state {
                *open_windows = Some(key);
            }
        }
        Ok(rows)
    }

    async fn write(&mut self, batch: &Batch<'_, '_>, rows: LogicalPlan, next: &Checkpoint) -> Result<u64> {
        let (ctx, storage, d) = (batch.job.ctx, batch.job.storage, batch.job.dataset);
        let keys = || key_columns(self.query);
        match self.windows.mode {
            // File sinks take every mode's rows as they come.
            _ if batch.target.is_file_sink() => batch.target.append(batch.job, rows, batch.transaction(next)).await,
            // Both rewrite the table in one commit, and are idempotent: a batch recomputed after
            // a crash between the commit and the checkpoint writes the same table again.
            OutputMode::Complete => write_overwrite(ctx, storage, d, rows).await,
            OutputMode::Update => upsert(ctx, storage, d, rows, batch.target.existing.is_some(), &keys()).await,
            OutputMode::Append => batch.target.append(batch.job, rows, batch.transaction(next)).await,
        }
    }

    async fn committed(&mut self, batch: &Batch<'_, '_>, next: &Checkpoint, rows: u64) -> Result<FlowEffect> {
        // The state the last batch left, and any a crashed batch left, are no longer named.
        let (storage, d, f) = (batch.job.storage, batch.job.dataset, batch.job.flow);
        let (_, kept) = windows_of(&next.state);
        for key in storage.list(&storage.checkpoint_dir(&d.name, &f.name)).await? {
            if key.ends_with(".arrow") && Some(&key) != kept.as_ref() {
                storage.delete(&key).await?;
            }
        }
        let dropped_by_watermark = self.step.as_ref().map_or(0, |(.., dropped)| *dropped);
        Ok(FlowEffect::Windowed { rows, dropped_by_watermark })
    }
}

/// The rows of `all` (the query over every row in state) for the groups `changed` (the query over
/// this batch's rows alone) has: what an update-mode batch writes.
fn changed_groups(ctx: &SessionContext, all: LogicalPlan, changed: LogicalPlan, keys: &[usize]) -> Result<LogicalPlan> {
    let all = DataFrame::new(ctx.state(), all).alias("__thund_all")?;
    let changed = DataFrame::new(ctx.state(), changed).alias("__thund_changed")?;
    let on = key_pairs(all.schema(), changed.schema(), keys);
    Ok(all.join_on(changed, JoinType::LeftSemi, on)?.into_unoptimized_plan())
}

/// `left.k IS NOT DISTINCT FROM right.k` for the key columns at `keys`: groups match on NULL too.
fn key_pairs(left: &DFSchema, right: &DFSchema, keys: &[usize]) -> Vec<Expr> {
    keys.iter()
        .filter(|i| **i < left.fields().len() && **i < right.fields().len())
        .map(|i| {
            let (lq, lf) = left.qualified_field(*i);
            let (rq, rf) = right.qualified_field(*i);
            binary_expr(
                Expr::Column(Column::new(lq.cloned(), lf.name())),
                Operator::IsNotDistinctFrom,
                Expr::Column(Column::new(rq.cloned(), rf.name())),
            )
        })
        .collect()
}

/// Update mode: the groups in `changed` replace the table's rows with the same keys, in one
/// overwrite commit; rows written are the changed groups.
async fn upsert(
    ctx: &SessionContext,
    storage: &Storage,
    d: &Dataset,
    changed: LogicalPlan,
    exists: bool,
    keys: &[usize],
) -> Result<u64> {
    let batches = DataFrame::new(ctx.state(), changed).collect().await?;
    let rows = batches.iter().map(|b| b.num_rows() as u64).sum();
    let Some(schema) = batches.first().map(|b| b.schema()) else { return Ok(0) };
    let changed = ctx.read_batches(batches)?.alias("__thund_changed")?;
    let table = if exists {
        let old = ctx.table(crate::engine::table_ref(&d.name)).await?.alias("__thund_old")?;
        let on = key_pairs(old.schema(), changed.schema(), keys);
        let kept = old.join_on(changed.clone(), JoinType::LeftAnti, on)?;
        let columns: Vec<Expr> =
            schema.fields().iter().map(|f| datafusion::prelude::col(format!("\"{}\"", f.name()))).collect();
        kept.union(changed.select(columns)?)?
    } else {
        changed
    };
    write_overwrite(ctx, storage, d, table.into_unoptimized_plan()).await?;
    Ok(rows)
}
