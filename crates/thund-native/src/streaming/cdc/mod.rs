//! AUTO CDC: a change feed applied by key to a streaming table, as SCD type 1 (the latest row of
//! each key) or type 2 (every version, with `__START_AT` / `__END_AT`).
//!
//! Changes apply in `SEQUENCE BY` order, never in arrival order, so a batch cannot simply be
//! merged into the table: a late change may belong before rows already written, behind a delete,
//! or inside a version it splits. Each flow therefore keeps the changes it applied (its
//! *history*, a Delta table beside its checkpoint: the target's columns plus the evaluated
//! sequence, the operation and the batch number). A batch
//!
//! ```text
//!  1. evaluates the sequence and the DELETE / TRUNCATE conditions of its new changes
//!     (a NULL sequence is an error naming the flow and the row count)
//!  2. replays, per key it touches, where the key stands plus the new changes in sequence
//!     order (`replay`): the key's rows in the target
//!  3. appends the new changes to the history (its own application transaction: idempotent)
//!  4. removes the rows of the touched keys from the target — rewriting the files that hold
//!     them (`rewrite`) or, where the table has deletion vectors, marking them deleted (in one
//!     new file: `deletion`; a file left mostly dead is dropped and its live rows kept) — and
//!     adds the replayed rows, in one Delta commit that carries the flow's application
//!     transaction
//! ```
//! Where a key stands is its whole history only for a *late* key, one with a new change at or
//! before a change already applied (or a truncation). Any other key continues from its row in the
//! target (SCD 2: its open version; SCD 1 without `IGNORE NULL UPDATES` needs not even that, the
//! latest change wins), which is the state its history's replay ended in (`incremental`). The
//! checkpoint keeps the highest sequence applied: when every new change is above it, as when a
//! feed arrives in order, the history is not read at all. Rows are found by key (`keyscan`):
//! the key columns of every file, then the other columns of the rows found alone.
//!
//! A target has deletion vectors only when its `TBLPROPERTIES` ask for them
//! (`delta.enableDeletionVectors = true`, as Databricks tables often do): many readers cannot
//! read a table that has them (Python's `deltalake` refuses it in `to_pyarrow_table`, and
//! everything built on it, polars and pandas users, with it), so a target is readable by every
//! Delta reader unless its owner says otherwise. Without them, the files holding a touched key
//! are rewritten (their other rows plus the replayed ones), which costs as much as rewriting the
//! table when the keys are spread over every file; a target without them, a first batch and a
//! batch with a truncation replay the touched keys' whole history (a truncation touches every
//! key). After each batch the target and the history are vacuumed with their retention.
//!
//! All of it runs inside the streaming protocol (`streaming::run`): a crash anywhere is
//! resolved by the target's transaction version, and a recomputed batch reads the history of
//! earlier batches only, with the highest sequence of the checkpoint it started from. The result
//! equals a replay of the whole change feed sorted by sequence, whatever order it arrived in
//! (`tests/cdc.rs` checks random feeds against an independent replay).
//!
//! The rooms: `shape` (what the clauses mean for the feed's schema), `changes` (the feed's new
//! rows evaluated), `replay` (applying a key's changes), `history` (the changes applied),
//! `by_key` (planning from the touched keys' rows), `rewrite` (a target without deletion
//! vectors), `fold` (small files), `tombstones` (SCD 1's deleted keys), `sequence` (the highest
//! sequence applied); the Delta machinery they stand on is `delta::deletion` (deletion vectors)
//! and `delta::keyscan` (reading rows by key).

mod by_key;
mod changes;
mod fold;
mod history;
mod replay;
mod rewrite;
mod sequence;
mod shape;
mod tombstones;

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::DataFrame;
use deltalake::DeltaTable;
use knut_thund::ir::{AutoCdc as Spec, ScdType};

use super::checkpoint::{Checkpoint, KindState};
use super::kind::{Batch, BatchKind};
use crate::delta::deletion;
use crate::error::{NativeError, Result};
use crate::flow::Steps;
use shape::{Shape, SEQ};
use tombstones::{now_ms, Retention};

/// An AUTO CDC flow's part of a batch (the module doc has the steps).
pub(super) struct AutoCdc<'s> {
    spec: &'s Spec,
    /// What the clauses mean for the feed, once the batch planned it.
    shape: Option<Shape>,
    steps: Steps,
}

impl<'s> AutoCdc<'s> {
    pub(super) fn new(spec: &'s Spec) -> Self {
        AutoCdc { spec, shape: None, steps: Steps::start("AUTO CDC batch") }
    }
}

/// A batch's changes, evaluated and stamped, and whether it collects expired tombstones.
pub(super) struct Staged {
    new: RecordBatch,
    now: i64,
    retention: Option<Retention>,
    collect: bool,
    sequence: Option<ArrayRef>,
}

/// The sequence and tombstone collection a checkpoint holds.
fn cdc_state(state: &KindState) -> (Option<&str>, Option<i64>) {
    match state {
        KindState::AutoCdc { sequence_applied, tombstones_collected_at } => {
            (sequence_applied.as_deref(), *tombstones_collected_at)
        }
        KindState::Append | KindState::Once { .. } | KindState::Windowed { .. } => (None, None),
    }
}

impl BatchKind for AutoCdc<'_> {
    type Staged = Staged;

    fn initial_state(&self) -> KindState {
        KindState::AutoCdc { sequence_applied: None, tombstones_collected_at: None }
    }

    async fn plan(&mut self, batch: &Batch<'_, '_>, next: &mut Checkpoint) -> Result<Option<LogicalPlan>> {
        let Some((shape, plan)) = changes::evaluated(batch, self.spec, next).await? else { return Ok(None) };
        self.shape = Some(shape);
        Ok(Some(plan))
    }

    async fn stage(&mut self, batch: &Batch<'_, '_>, rows: LogicalPlan, next: &mut Checkpoint) -> Result<Staged> {
        let (ctx, d, f) = (batch.job.ctx, batch.job.dataset, batch.job.flow);
        self.steps.flow = Some(f.name.clone());
        let shape =
            self.shape.as_ref().ok_or_else(|| NativeError::Execution("internal error: no AUTO CDC shape".into()))?;
        let df = DataFrame::new(ctx.state(), rows);
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let now = now_ms();
        let new = changes::stamp(f, df.collect().await?, schema, next.batch, now)?;
        self.steps.done("evaluate the changes");
        // SCD 1 keeps a deleted key's tombstone so that an older change arriving later cannot
        // bring it back; expired ones are collected after the batch, at most once per period.
        let retention = match shape.scd {
            ScdType::Type1 => Some(Retention::of(d)?),
            ScdType::Type2 => None,
        };
        let (applied, collected_at) = cdc_state(&batch.state.state);
        let collect = match (&retention, collected_at) {
            (Some(r), Some(last)) => now - last >= r.frequency_ms,
            _ => false,
        };
        // The first batch starts the period; a collection starts the next one.
        let collected_at = match retention.is_some() && (collect || collected_at.is_none()) {
            true => Some(now),
            false => collected_at,
        };
        let seq_column = Arc::clone(new.column(new.schema().index_of(SEQ)?));
        let sequence = applied.and_then(|w| sequence::decode(w, seq_column.data_type()));
        let sequence_applied = match new.num_rows() > 0 {
            true => Some(sequence::encode(&sequence::raised(sequence.as_ref(), &seq_column)?)?),
            false => applied.map(str::to_string),
        };
        next.state = KindState::AutoCdc { sequence_applied, tombstones_collected_at: collected_at };
        Ok(Staged { new, now, retention, collect, sequence })
    }

    async fn write(&mut self, batch: &Batch<'_, '_>, staged: Staged, next: &Checkpoint) -> Result<u64> {
        let shape =
            self.shape.as_ref().ok_or_else(|| NativeError::Execution("internal error: no AUTO CDC shape".into()))?;
        apply(batch, shape, staged, next, &mut self.steps).await
    }

    async fn committed(&mut self, _: &Batch<'_, '_>, _: &Checkpoint, rows: u64) -> Result<crate::flow::FlowEffect> {
        self.steps.done("commit the checkpoint");
        Ok(crate::flow::FlowEffect::Rows(rows))
    }
}

/// Applies a batch's changes: the history's append beside the replay's planning, then the
/// target's one commit, then (SCD 1, once a period) the collection of expired tombstones.
async fn apply(
    batch: &Batch<'_, '_>,
    shape: &Shape,
    staged: Staged,
    next: &Checkpoint,
    steps: &mut Steps,
) -> Result<u64> {
    let (ctx, storage, d, f) = (batch.job.ctx, batch.job.storage, batch.job.dataset, batch.job.flow);
    let Staged { new, now, retention, collect, sequence } = staged;
    let optimize = fold::auto_optimized(d)?;
    let every_key = changes::truncates(&new)?;
    let key_names: Vec<String> = shape.keys.iter().map(|k| shape.columns[*k].clone()).collect();
    let existing = batch.target.existing.clone();
    let app = batch.target.app.as_str();

    let history_key = storage.cdc_history_key(&d.name, &f.name);
    let history_url = storage.url_of(&format!("{history_key}/"));
    let history = match storage.is_table(&history_key).await? {
        true => Some(DeltaTable::try_from_url(history_url.clone()).await?),
        false => None,
    };
    let target_schema = shape.target_schema(&new.schema())?;
    // A target with deletion vectors takes the touched keys' rows by key (`by_key`); one
    // without them, a first batch and a truncation replay the keys' whole history.
    let marking = match &existing {
        Some(t) if !every_key => deletion::enabled(t)?,
        _ => false,
    };
    // Found once: the replay reads their history, and a target without vectors their files.
    let touched = match marking || every_key {
        true => None,
        false => Some(changes::touched_keys(shape, &new)?),
    };
    // The history's append runs beside the planning, which reads only earlier batches' changes
    // (from the snapshot loaded above) and so never sees it; the target commits after both. The
    // intent was written first: a crash once the append began is known as one.
    let append = {
        let (url, table, changes) = (history_url.clone(), history.clone(), new.clone());
        let (txn, app, number) = (history::history_txn(app, next.batch), history::history_app(app), next.batch);
        let after_crash = batch.after_crash;
        tokio::spawn(async move {
            // A batch recomputed after a crash may find its own changes already appended
            // (finding out replays the history's log, so only then).
            let appended = match after_crash {
                true => crate::streaming::checkpoint::committed_batch(table.as_ref(), &app).await?,
                false => None,
            };
            match appended.is_none_or(|b| b < number) {
                true => crate::delta::table::append_batches(&url, table, changes, txn).await,
                // Found there: the history exists.
                false => table.ok_or_else(|| NativeError::Execution("internal error: no AUTO CDC history".into())),
            }
        })
    };
    let planning = async {
        let planned = match (&existing, marking) {
            (Some(target), true) => {
                let planned = by_key::incremental(
                    shape,
                    &new,
                    history.as_ref(),
                    target,
                    &key_names,
                    &target_schema,
                    sequence.as_ref(),
                    steps,
                )
                .await?;
                (planned.rows, Some(planned.marked))
            }
            _ => {
                let mut events = history::earlier_history(
                    ctx,
                    history.as_ref(),
                    touched.as_ref(),
                    &key_names,
                    next.batch,
                    &new.schema(),
                )
                .await?;
                events.push(new.clone());
                let events = concat_batches(&new.schema(), &events)?;
                steps.done("read the touched keys' history");
                (replay::replay_apart(shape, events, &target_schema).await?, None)
            }
        };
        steps.done("replay");
        Ok::<_, NativeError>(planned)
    };
    let planned = planning.await;
    // Awaited whatever the planning did, so no append outlives its batch.
    let appended = append.await.map_err(|e| NativeError::Execution(format!("the AUTO CDC history append failed: {e}")));
    let (rows, marked) = planned?;
    let history = appended??;
    // The append ran beside the planning: this is only what was left of it.
    steps.done("finish the history's append");
    crate::failpoint::hit("cdc-after-history", &f.name)?;
    let written = rows.num_rows() as u64;
    let txn = batch.transaction(next);
    match (existing, marked) {
        (None, _) => {
            let plan = ctx.read_batch(rows)?.into_unoptimized_plan();
            let url = storage.table_url(&d.name);
            crate::delta::table::write_append(ctx, &url, d, plan, None, txn, true).await?;
        }
        (Some(target), Some(marked)) => {
            let (marked, fold) = match optimize {
                true => fold::to_fold(&target, marked).await?,
                false => (marked, HashSet::new()),
            };
            let (kept, dropped, vectors) = deletion::vectors_for(&target, marked, &fold, &target_schema).await?;
            steps.done("write the deletion vectors");
            crate::failpoint::hit("cdc-after-vectors", &f.name)?;
            let table = ctx.read_batches(kept.into_iter().chain([rows]))?;
            let commit = crate::delta::write::Commit::Replace { dropped, marked: vectors, txn: Some(txn) };
            crate::delta::table::commit_rows(ctx, d, &target, table.into_unoptimized_plan(), commit).await?;
        }
        (Some(target), None) => {
            // Without deletion vectors, the files holding a touched key are rewritten with their
            // other rows, streamed through the engine; after a truncation, all of them.
            let files = rewrite::touched_files(ctx, &target, touched.as_ref(), &key_names).await?;
            let replayed = ctx.read_batch(rows)?;
            let kept =
                rewrite::untouched_rows(ctx, &target, &files, touched.as_ref(), &key_names, &target_schema).await?;
            let table = match kept {
                Some(kept) => kept.union(replayed)?,
                None => replayed,
            };
            let commit = crate::delta::write::Commit::Replace { dropped: files, marked: Vec::new(), txn: Some(txn) };
            crate::delta::table::commit_rows(ctx, d, &target, table.into_unoptimized_plan(), commit).await?;
        }
    }
    steps.done("commit the target");
    crate::failpoint::hit("cdc-after-commit", &f.name)?;
    if let (true, Some(r)) = (collect, &retention) {
        // Between the target's commit and the checkpoint: a crash here leaves the batch done and
        // the collection either done or left for the next period, which is all retention means.
        let forgotten = tombstones::collect_tombstones(ctx, &history, &key_names, now - r.threshold_ms).await?;
        steps.done(&format!("collect expired tombstones ({forgotten} keys)"));
    }
    // The files batches replace (rewritten, folded, dropped) stay readable for each table's
    // retention (`delta.deletedFileRetentionDuration`, 7 days unless set), then go, as an
    // overwritten materialized view's do. The batch is committed: a failure is only logged.
    crate::delta::table::vacuum_at(&storage.table_url(&d.name)).await;
    crate::delta::table::vacuum_at(&history_url).await;
    steps.done("vacuum the target and the history");
    Ok(written)
}
