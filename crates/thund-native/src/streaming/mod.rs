//! Streaming flows: one batch per run of each flow into a streaming table or sink, made of the
//! input that arrived since the last batch (`sources`), committed exactly once across crashes,
//! and the full refresh that resets a table and its flows' checkpoints.
//!
//! The exactly-once sequence is written once, here ([`run`]); each kind of flow is a room of its
//! own behind one trait (`kind::BatchKind`) for what differs:
//!
//! ```text
//!  recover   target (target: table │ Delta sink │ file sink) says whether a crashed intent landed;
//!            the checkpoint (checkpoint: sources' offsets + the kind's KindState) is loaded; an
//!            intent that did not land is redone: the batch reads up to the offsets it recorded
//!            (and [`batch`] then runs one more batch for what arrived since)
//!  plan      kind.plan: the rows of the new input          ── none: IDLE
//!  expect    the dataset's expectations on those rows (expect::Checker), for every kind
//!  input     pending.json: the batch's input (its sources' offsets)  failpoint stream-after-input
//!  stage     kind.stage: what must exist before the intent (open windows, evaluated changes)
//!  intent    pending.json, with the kind's state            failpoint stream-after-intent
//!  write     kind.write: one commit carrying (flow, batch)  failpoint stream-after-commit
//!  commit    state.json; kind.committed cleans up
//! ```
//! Kinds: `append` (rows of the new input, and `INSERT INTO ONCE`), `windowed` (aggregations over
//! a stream: `event_time` has the windows and watermark), `cdc` (AUTO CDC). `sink` holds the file
//! sinks' own commit markers.

pub(crate) mod append;
mod cdc;
pub(crate) mod checkpoint;
mod event_time;
pub(crate) mod kind;
pub(crate) mod rescue;
mod sink;
pub(crate) mod sources;
mod target;
mod windowed;

use std::sync::Arc;

use datafusion::datasource::MemTable;
use knut_thund::backend::DataQuality;
use knut_thund::ir::{Dataset, FlowKind, OutputMode};

use crate::delta::storage::Storage;
use crate::engine::table_ref;
use crate::error::{NativeError, Result};
use crate::expect::Checker;
use crate::flow::{FlowEffect, FlowJob};
use checkpoint::CheckpointStore;
use kind::{Batch, BatchKind};
use target::Target;

/// `--full-refresh` of a streaming table (`asked`): its data and its flows' checkpoints go, so all
/// input is processed again. A reset marker makes this crash-safe: a run that finds the marker
/// finishes the reset before anything else, so a half-done reset never leaves a table whose
/// checkpoints claim rows it no longer has (or the reverse).
pub(crate) async fn reset_if_asked(storage: &Storage, d: &Dataset, asked: bool) -> Result<()> {
    let marker = storage.reset_marker(&d.name);
    if asked {
        let allowed = d.details.properties.get("pipelines.reset.allowed").map(|v| !v.eq_ignore_ascii_case("false"));
        if allowed == Some(false) {
            return Err(NativeError::Plan {
                location: d.location.to_string(),
                message: format!(
                    "`{}` has TBLPROPERTIES ('pipelines.reset.allowed' = 'false'): it cannot be fully refreshed",
                    d.name
                ),
            });
        }
        storage.put(&marker, Vec::new()).await?;
        crate::failpoint::hit("reset-after-marker", &d.name)?;
    }
    if storage.exists(&marker).await? {
        // The table's log goes first: a reset cut short leaves no table rather than one whose log
        // names files already deleted.
        let table = storage.table_key(&d.name);
        storage.forget_table(&d.name);
        storage.delete_prefix(&format!("{table}/_delta_log")).await?;
        crate::failpoint::hit("reset-after-log", &d.name)?;
        storage.delete_prefix(&table).await?;
        crate::failpoint::hit("reset-after-data", &d.name)?;
        storage.delete_prefix(&storage.table_checkpoints(&d.name)).await?;
        storage.delete(&marker).await?;
    }
    Ok(())
}

/// A flow's batch into a streaming table or sink; `dq` receives its expectation counts. A batch
/// a crash left redoes exactly its recorded input, so what arrived since is read by one more
/// batch in the same run: a run brings the table up to date whatever it found.
pub(crate) async fn batch(job: &FlowJob<'_>, dq: &mut Option<DataQuality>) -> Result<FlowEffect> {
    let (first, redone) = one_batch(job, dq).await?;
    if !redone || job.dry {
        return Ok(first);
    }
    let mut more = None;
    let (second, _) = one_batch(job, &mut more).await?;
    match (dq.as_mut(), more) {
        (Some(dq), Some(more)) => add_quality(dq, more),
        (None, more) => *dq = more,
        (Some(_), None) => {}
    }
    Ok(first.then(second))
}

/// The counts of two batches of one flow, summed.
fn add_quality(into: &mut DataQuality, more: DataQuality) {
    into.dropped_records += more.dropped_records;
    for m in more.expectations {
        match into.expectations.iter_mut().find(|e| e.name == m.name && e.dataset == m.dataset) {
            Some(e) => {
                e.passed_records += m.passed_records;
                e.failed_records += m.failed_records;
            }
            None => into.expectations.push(m),
        }
    }
}

/// One batch; whether it was a crashed batch redone (or abandoned, having nothing to redo).
async fn one_batch(job: &FlowJob<'_>, dq: &mut Option<DataQuality>) -> Result<(FlowEffect, bool)> {
    let (d, f) = (job.dataset, job.flow);
    match &f.kind {
        FlowKind::Append { query, by_name } => {
            append::reads_a_stream(job, query)?;
            match event_time::Windowed::of(query, d.output_mode.unwrap_or(OutputMode::Append))? {
                Some(w) => run(job, dq, windowed::Windowed::new(w, query, *by_name)).await,
                None => run(job, dq, append::Append::new(query, *by_name)).await,
            }
        }
        FlowKind::Once { query, by_name } => run(job, dq, append::Append::once(query, *by_name)).await,
        FlowKind::AutoCdc(spec) => run(job, dq, cdc::AutoCdc::new(spec)).await,
    }
}

/// The exactly-once sequence of one batch of `kind` (the module doc has its steps); whether it
/// redid a crashed batch.
async fn run<K: BatchKind>(job: &FlowJob<'_>, dq: &mut Option<DataQuality>, mut kind: K) -> Result<(FlowEffect, bool)> {
    let (ctx, storage, d, f) = (job.ctx, job.storage, job.dataset, job.flow);
    let target = Target::of(job).await?;
    let store = CheckpointStore::new(storage, storage.checkpoint_dir(&d.name, &f.name), kind.initial_state());
    // Only a crash leaves an intent, and only then does the target have to say whether its
    // commit landed.
    let pending = store.pending_batch().await?;
    let committed = target.committed_batch(job, pending).await?;
    let recovered = match job.dry {
        true => store.peek(committed).await?,
        false => store.recover(committed).await?,
    };
    let state = recovered.state;
    let mut next = state.next();
    let batch = Batch {
        job,
        target: &target,
        state: &state,
        after_crash: pending.is_some(),
        redo: recovered.redo.as_ref(),
        checked_views: Default::default(),
    };
    let redo = batch.redo.is_some();
    let Some(rows) = kind.plan(&batch, &mut next).await? else {
        if redo && !job.dry {
            store.abandon_pending().await?;
        }
        return Ok((FlowEffect::Nothing, redo));
    };
    job.starting();
    if job.dry {
        // A table that has never been written is not in the catalog: what reads it downstream
        // plans against an empty table of the batch's schema.
        if d.kind != knut_thund::ir::DatasetKind::Sink && !ctx.table_exist(table_ref(&d.name))? {
            let empty = MemTable::try_new(Arc::clone(rows.schema().inner()), vec![vec![]])?;
            ctx.register_table(table_ref(&d.name), Arc::new(empty))?;
        }
        return Ok((FlowEffect::Rows(0), redo));
    }
    let checker = match d.expectations.is_empty() {
        true => None,
        false => Some(Checker::new(ctx, d, &rows)?),
    };
    job.running();
    let written = async {
        let rows = match &checker {
            Some(c) => c.checked_plan(ctx, rows).await?,
            None => rows,
        };
        // The input is recorded before anything of the batch is written, so a batch that fails
        // after a partial write is redone over the same input.
        store.write_pending(&next).await?;
        crate::failpoint::hit("stream-after-input", &f.name)?;
        let staged = kind.stage(&batch, rows, &mut next).await?;
        store.write_pending(&next).await?;
        crate::failpoint::hit("stream-after-intent", &f.name)?;
        kind.write(&batch, staged, &next).await
    }
    .await;
    // Counted whether or not the batch committed: a FAIL UPDATE violation is why it did not.
    *dq = checker.map(|c| c.metrics());
    for view in batch.checked_views.lock().map(|v| v.clone()).unwrap_or_default() {
        match dq.as_mut() {
            Some(dq) => add_quality(dq, view.metrics()),
            None => *dq = Some(view.metrics()),
        }
    }
    let rows = written?;
    crate::failpoint::hit("stream-after-commit", &f.name)?;
    store.commit(&next).await?;
    Ok((kind.committed(&batch, &next, rows).await?, redo))
}
