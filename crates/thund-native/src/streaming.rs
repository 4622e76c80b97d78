//! Streaming flows: one batch per run of each flow into a streaming table or sink, made of the
//! input that arrived since the last batch (`sources`), committed exactly once across crashes
//! (`checkpoint` has the protocol), and the full refresh that resets a table and its flows'
//! checkpoints.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::common::{Column, DFSchema};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{binary_expr, Expr, JoinType, LogicalPlan, Operator};
use datafusion::prelude::{DataFrame, SessionContext};

use deltalake::kernel::Transaction;
use deltalake::DeltaTable;
use knut_thund::backend::DataQuality;
use knut_thund::event_time::key_columns;
use knut_thund::ir::{Dataset, DatasetKind, FlowKind, OutputMode};

use crate::checkpoint::{app_id, committed_batch, Checkpoint, CheckpointStore, CHECKPOINT_FORMAT_VERSION};
use crate::engine::{plan_query, plan_query_with_streams, StreamTables};
use crate::error::{NativeError, Result};
use crate::event_time::{load_state, save_state, Windowed};
use crate::expect::Checker;
use crate::flow::{FlowEffect, FlowJob};
use crate::sink::FileSink;
use crate::sources::increments;
use crate::storage::Storage;
use crate::table::{align_to_target, conform, dir_url, write_append, write_overwrite};

static STREAM_SEQ: AtomicUsize = AtomicUsize::new(0);

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

/// One batch of a flow into a streaming table or sink; `dq` receives its expectation counts.
pub(crate) async fn batch(job: &FlowJob<'_>, dq: &mut Option<DataQuality>) -> Result<FlowEffect> {
    let (ctx, storage, p, d, f) = (job.ctx, job.storage, job.pipeline, job.dataset, job.flow);
    let store = CheckpointStore::new(storage, storage.checkpoint_dir(&d.name, &f.name));
    // Where the rows go: the table's own Delta folder, or the sink's path.
    let sink = match d.kind {
        DatasetKind::Sink => Some(FileSink::of(d, &p.root)?),
        _ => None,
    };
    let url = match &sink {
        Some(s) => dir_url(&s.path)?,
        None => storage.table_url(&d.name),
    };
    let delta = sink.as_ref().is_none_or(|s| s.format == "delta");
    let existing = match &sink {
        Some(s) if delta && s.path.join("_delta_log").is_dir() => Some(DeltaTable::try_from_url(url.clone()).await?),
        Some(_) => None,
        None => storage.latest_table(&d.name).await?,
    };
    let app = app_id(&f.name);
    // Only a crash leaves an intent, and only then does the target have to say whether its commit
    // landed (finding a transaction version replays the table's whole log).
    let pending = store.pending_batch().await?;
    let committed = match (&sink, pending) {
        (_, None) => None,
        (Some(s), Some(b)) if !delta => {
            let done = s.committed_batch(&f.name, Some(b));
            if done.is_none() && !job.dry {
                // The intent's files may be half renamed: remove them before recomputing. Never
                // in a dry run, which takes no lock: they may be a live run's staged files.
                s.discard(&f.name, b)?;
            }
            done
        }
        _ => committed_batch(existing.as_ref(), &app).await?,
    };
    let state = if job.dry { store.peek(committed).await? } else { store.recover(committed).await? };
    let mut next = Checkpoint { format_version: CHECKPOINT_FORMAT_VERSION, batch: state.batch + 1, ..state.clone() };
    // A flow that aggregates: its output mode, the rows it keeps as state and the late rows dropped.
    let mut windows = None;
    let plan = match &f.kind {
        FlowKind::Once { query, .. } => {
            if state.once_done {
                return Ok(FlowEffect::Nothing);
            }
            next.once_done = true;
            plan_query(ctx, query, &p.root).await?
        }
        FlowKind::Append { query, .. } => {
            if !query.is_streaming() {
                return Err(NativeError::Plan {
                    location: f.location.to_string(),
                    message: format!(
                        "flow `{}` into {} `{}` reads no STREAM source; read `STREAM(t)` or `STREAM read_files(…)`, or make it a backfill with `INSERT INTO ONCE`",
                        f.name, d.kind, d.name
                    ),
                });
            }
            let windowed = Windowed::of(query, d.output_mode.unwrap_or(OutputMode::Append))?;
            let inputs = increments(ctx, storage, &p.root, &query.reads, &state)
                .await
                .map_err(|e| NativeError::Plan { location: f.location.to_string(), message: e.to_string() })?;
            if !inputs.iter().any(|i| i.input.has_data) {
                return Ok(FlowEffect::Nothing);
            }
            let mut streams = StreamTables::new();
            // In update mode, the same query over this batch's rows alone: the groups it changed.
            let mut fresh_streams = None;
            for i in inputs {
                let name = format!("__thund_stream_{}", STREAM_SEQ.fetch_add(1, Ordering::Relaxed));
                let provider = match &windowed {
                    Some(w) if w.read == i.read => {
                        // The user's query sees only the rows of the windows this batch closes.
                        let source = i.input.provider.schema();
                        let new = ctx.read_table(i.input.provider)?.collect().await?;
                        let open = load_state(storage, state.window_state.as_deref()).await?;
                        let step = w.step(&source, &new, open, state.watermark.unwrap_or(0))?;
                        next.watermark = Some(step.watermark);
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
                        windows = Some((w.mode, step.state_schema, step.open, step.dropped));
                        closing
                    }
                    _ => i.input.provider,
                };
                ctx.register_table(name.as_str(), provider)?;
                streams.insert(i.read, name);
                if let Some(o) = i.input.offset {
                    next.sources.insert(i.key, o);
                }
            }
            let query = match &windowed {
                Some(w) => w.rewrite(query)?,
                None => query.clone(),
            };
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
            planned?
        }
        FlowKind::AutoCdc(cdc) => {
            return crate::cdc::batch(job, cdc, &store, &state, next, existing, &app, pending.is_some()).await;
        }
    };
    let by_name = matches!(f.kind, FlowKind::Append { by_name: true, .. } | FlowKind::Once { by_name: true, .. });
    // Appends to an existing table line up with its columns; file sinks take rows as they come.
    let plan = conform(ctx, d, f, plan)?;
    let plan = match &existing {
        Some(t) if !f.implicit => align_to_target(ctx, f, plan, t, by_name).await?,
        _ => plan,
    };
    job.starting();
    if job.dry {
        return Ok(FlowEffect::Rows(0));
    }
    let checker = match d.expectations.is_empty() {
        true => None,
        false => Some(Checker::new(ctx, d, &plan)?),
    };
    job.running();
    let plan = match &checker {
        Some(c) => c.checked_plan(ctx, plan).await?,
        None => plan,
    };
    if let Some((_, schema, open, _)) = &windows {
        let key = storage.window_state_key(&d.name, &f.name, next.batch);
        save_state(storage, &key, schema, open).await?;
        next.window_state = Some(key);
    }
    store.write_pending(&next).await?;
    crate::failpoint::hit("stream-after-intent", &f.name)?;
    let mode = windows.as_ref().map_or(OutputMode::Append, |(mode, ..)| *mode);
    let written = match &sink {
        Some(s) if !delta => s.write(ctx, plan, &f.name, next.batch).await,
        // Both rewrite the table in one commit, and are idempotent: a batch recomputed after a
        // crash between the commit and the checkpoint writes the same table again.
        _ if mode == OutputMode::Complete => write_overwrite(ctx, storage, d, plan).await,
        _ if mode == OutputMode::Update => {
            upsert(ctx, storage, d, plan, existing.is_some(), &key_columns(f.query())).await
        }
        _ => {
            let register = d.kind == DatasetKind::StreamingTable;
            write_append(ctx, &url, d, plan, existing, Transaction::new(&app, next.batch), register).await
        }
    };
    *dq = checker.map(|c| c.metrics());
    let rows = written?;
    crate::failpoint::hit("stream-after-commit", &f.name)?;
    store.commit(&next).await?;
    Ok(match windows {
        Some((.., dropped_by_watermark)) => {
            // The state the last batch left, and any a crashed batch left, are no longer named.
            for key in storage.list(&storage.checkpoint_dir(&d.name, &f.name)).await? {
                if key.ends_with(".arrow") && Some(&key) != next.window_state.as_ref() {
                    storage.delete(&key).await?;
                }
            }
            FlowEffect::Windowed { rows, dropped_by_watermark }
        }
        None => FlowEffect::Rows(rows),
    })
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
