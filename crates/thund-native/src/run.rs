//! Run order: stages in order, the datasets of a stage concurrently, each dataset's flows handed
//! to the concern that runs them (`refresh`: materialized views, `streaming`: streaming tables
//! and sinks, `views`: views), and every flow's end reported once, as an event and in the
//! summary. A failed, skipped or stopped dataset's downstream is SKIPPED; independent datasets go
//! on.
//!
//! A run lives on its own thread with its own Tokio runtime (`backend` starts it), so the core's
//! synchronous `RunHandle` drains a plain channel.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use datafusion::prelude::SessionContext;
use futures::StreamExt;
use knut_thund::backend::{DataQuality, EventDetails, EventSender, FlowOutcome, RunEvent, RunPhase, RunSummary};
use knut_thund::ir::{Dataset, DatasetKind, Flow, Pipeline, QualifiedName};
use knut_thund::plan::Plan;
use knut_thund::prepare::PreparedRun;
use knut_thund::validate::dependencies;

use crate::delta::storage::{RunLock, Storage};
use crate::delta::table::open_stored_table;
use crate::engine::{ensure_schema, pipeline_context, plan_query, table_ref, EngineOptions};
use crate::error::{NativeError, Result};
use crate::flow::{FlowEffect, FlowJob, RunEvents};
use crate::views::Views;

/// One run of the native backend.
pub(crate) struct Job {
    pipeline: Pipeline,
    plan: Plan,
    storage: Storage,
    engine: EngineOptions,
    max_concurrent: usize,
    dry: bool,
    cancel: Arc<AtomicBool>,
    views: Views,
    lock: Mutex<Option<RunLock>>,
}

impl Job {
    /// A job for `run`, writing to `storage`, holding `lock` until it ends.
    pub(crate) fn new(
        run: PreparedRun,
        storage: Storage,
        engine: EngineOptions,
        cancel: Arc<AtomicBool>,
        lock: Option<RunLock>,
    ) -> Self {
        let max_concurrent = match run.options.max_concurrent_flows {
            0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
            n => n,
        };
        Job {
            dry: run.options.dry,
            pipeline: run.pipeline,
            plan: run.plan,
            storage,
            engine,
            max_concurrent,
            cancel,
            views: Views::default(),
            lock: Mutex::new(lock),
        }
    }

    /// Runs the job on a runtime of its own; its events go to `events`.
    pub(crate) fn run_blocking(self, events: EventSender) -> RunSummary {
        let events = RunEvents::new(events);
        // Flows are tasks, not threads: a runtime never needs more workers than cores, however
        // many flows may run at once (`--max-concurrent-flows 1000000` means "no limit").
        let cores = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
        let workers = self.max_concurrent.min(cores).max(2);
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build();
        match runtime {
            Ok(rt) => rt.block_on(self.run(&events)),
            Err(e) => {
                let why = format!("cannot start the engine runtime: {e}");
                events.run(RunPhase::Failed, why.clone());
                RunSummary::failed_with(why)
            }
        }
    }

    async fn run(&self, events: &RunEvents) -> RunSummary {
        let summary = self.run_stages(events).await;
        events.flush().await;
        let lock = self.lock.lock().ok().and_then(|mut l| l.take());
        if let Some(lock) = lock {
            if let Err(e) = self.storage.release(lock).await {
                tracing::warn!(error = %e, "the run lock could not be released");
            }
        }
        summary
    }

    async fn run_stages(&self, events: &RunEvents) -> RunSummary {
        let p = &self.pipeline;
        let mode = if self.dry { "dry run (nothing is written)" } else { "update" };
        events.run(RunPhase::Starting, format!("Starting {mode} of pipeline `{}` on the native backend.", p.name));
        let ctx = match self.session().await {
            Ok(c) => c,
            Err(e) => {
                events.run(RunPhase::Failed, format!("Run has FAILED: {e}"));
                return RunSummary::failed_with(e.to_string());
            }
        };
        for f in &p.flows {
            let phase = if self.plan.is_selected(&f.target) { RunPhase::Queued } else { RunPhase::Excluded };
            events.flow(f, phase, EventDetails::default());
        }
        let deps = dependencies(p);
        let mut broken: BTreeSet<QualifiedName> = BTreeSet::new();
        let mut summary = RunSummary::default();
        for stage in &self.plan.stages {
            // Another run took the lock over (this run's lease lapsed): write nothing more.
            let lost = self.lock.lock().ok().is_some_and(|l| l.as_ref().is_some_and(RunLock::lost));
            if lost {
                let why = "the run lock was taken over by another run; this run stopped before its next stage";
                events.run(RunPhase::Failed, format!("Run has FAILED: {why}."));
                summary.error = Some(why.into());
                return summary;
            }
            let work = stage.iter().filter_map(|name| p.dataset(name)).map(|d| {
                let upstream_broken = deps.get(&d.name).is_some_and(|ds| ds.iter().any(|u| broken.contains(*u)));
                let ctx = &ctx;
                async move { (d, self.dataset(ctx, events, d, upstream_broken).await) }
            });
            let results: Vec<(&Dataset, Vec<FlowOutcome>)> =
                futures::stream::iter(work).buffer_unordered(self.max_concurrent).collect().await;
            for (d, flows) in results {
                if flows.iter().any(|o| matches!(o.phase, RunPhase::Failed | RunPhase::Skipped | RunPhase::Stopped)) {
                    broken.insert(d.name.clone());
                }
                summary.flows.extend(flows);
            }
        }
        for (f, checker) in self.views.take_checked() {
            let metrics = checker.metrics();
            let mut ev = RunEvent::now(
                f.name.to_string(),
                None,
                format!("Expectations of view {} checked where it was read.", f.target),
            );
            ev.details.data_quality = Some(metrics.clone());
            ev.details.location = Some(f.location.to_string());
            events.emit(ev);
            if let Some(o) = summary.flows.iter_mut().find(|o| o.flow == f.name.to_string()) {
                o.data_quality = Some(metrics);
            }
        }
        // A run whose lease another run took over meanwhile cannot vouch for what it wrote:
        // whatever its last stage did, it fails, so a caller never takes it for a good run.
        if !self.lock_still_held().await {
            let why = "the run lock was taken over by another run while this run wrote its last stage";
            events.run(RunPhase::Failed, format!("Run has FAILED: {why}."));
            summary.error = Some(why.into());
            return summary;
        }
        let failed = summary.flows.iter().filter(|f| f.phase == RunPhase::Failed).count();
        if failed > 0 {
            events.run(RunPhase::Failed, format!("Run has FAILED: {failed} flow(s) failed."));
        } else if self.cancel.load(Ordering::SeqCst) {
            events.run(RunPhase::Stopped, "Run is STOPPED.".into());
        } else {
            events.run(RunPhase::Completed, "Run is COMPLETED.".into());
        }
        summary
    }

    /// Whether this run still holds its lock (a dry run holds none and needs none).
    async fn lock_still_held(&self) -> bool {
        // The guard is not held across the read: the lock's state is read out first.
        let lock = self.lock.lock().ok().and_then(|mut l| l.take());
        let Some(lock) = lock else { return true };
        let held = self.storage.still_holds(&lock).await;
        if let Ok(mut slot) = self.lock.lock() {
            *slot = Some(lock);
        }
        held
    }

    /// A session with every catalog/database and every stored table registered, so datasets
    /// excluded from this run are still readable by those that run.
    async fn session(&self) -> Result<SessionContext> {
        let p = &self.pipeline;
        let ctx = pipeline_context(p, &self.engine)?;
        for d in &p.datasets {
            ensure_schema(&ctx, &d.name.catalog, &d.name.database)?;
            if d.kind.is_table() {
                // A table that cannot be opened stops the run before anything is written, naming
                // the dataset and where its table is (delta-rs names the file).
                let opened = open_stored_table(&ctx, &self.storage, &d.name).await.map_err(|e| {
                    let at = self.storage.display(&self.storage.table_key(&d.name));
                    // The Delta kernel's errors carry a backtrace after their first line.
                    let e = e.to_string();
                    let why = e.lines().next().unwrap_or_default();
                    NativeError::Storage(format!("the Delta table of `{}` ({at}) cannot be opened: {why}", d.name))
                })?;
                if let Some(provider) = opened {
                    ctx.register_table(table_ref(&d.name), provider)?;
                }
            }
        }
        Ok(ctx)
    }

    /// Runs (or skips) every flow of one dataset; the outcomes of the selected ones.
    async fn dataset(
        &self,
        ctx: &SessionContext,
        events: &RunEvents,
        d: &Dataset,
        upstream_broken: bool,
    ) -> Vec<FlowOutcome> {
        let p = &self.pipeline;
        let selected = self.plan.is_selected(&d.name);
        let full_refresh = self.plan.full_refresh.contains(&d.name);
        let reset = if selected && !upstream_broken && !self.dry && d.kind == DatasetKind::StreamingTable {
            crate::streaming::reset_if_asked(&self.storage, d, full_refresh).await.err()
        } else {
            None
        };
        let mut out = Vec::new();
        for f in p.flows_into(&d.name) {
            let started = Instant::now();
            let job = FlowJob {
                ctx,
                storage: &self.storage,
                pipeline: p,
                dataset: d,
                flow: f,
                dry: self.dry,
                full_refresh,
                events,
                technique: Default::default(),
            };
            if !selected {
                // Views are defined even when not selected (silently: they are EXCLUDED), since a
                // selected dataset downstream may read them.
                if d.kind.is_view() && !upstream_broken {
                    if let Err(e) = self.define_view(&job).await {
                        tracing::warn!(view = %d.name, error = %e, "excluded view could not be defined");
                    }
                }
                continue;
            }
            let end = if let Some(e) = &reset {
                Ending::failed(e.to_string(), None)
            } else if upstream_broken {
                Ending {
                    error: Some("an upstream dataset failed or was skipped".into()),
                    ..Ending::of(RunPhase::Skipped)
                }
            } else if self.cancel.load(Ordering::SeqCst) {
                Ending::of(RunPhase::Stopped)
            } else {
                let mut dq = None;
                match self.flow(&job, &mut dq).await {
                    Ok(FlowEffect::Nothing) => Ending { rows: Some(0), ..Ending::of(RunPhase::Idle) },
                    Ok(FlowEffect::View) => Ending { data_quality: dq, ..Ending::of(RunPhase::Completed) },
                    Ok(FlowEffect::Rows(n)) => {
                        Ending { rows: Some(n), data_quality: dq, ..Ending::of(RunPhase::Completed) }
                    }
                    Ok(FlowEffect::Windowed { rows, dropped_by_watermark }) => Ending {
                        rows: Some(rows),
                        data_quality: dq,
                        dropped_by_watermark: Some(dropped_by_watermark),
                        ..Ending::of(RunPhase::Completed)
                    },
                    Err(e) => Ending::failed(flow_failure(&e, f), dq),
                }
            };
            let end = Ending { technique: job.technique.get().cloned(), ..end };
            out.push(end.report(events, f, started));
        }
        out
    }

    /// One flow: what it did.
    async fn flow(&self, job: &FlowJob<'_>, dq: &mut Option<DataQuality>) -> Result<FlowEffect> {
        job.planning();
        match job.dataset.kind {
            DatasetKind::StreamingTable | DatasetKind::Sink => crate::streaming::batch(job, dq).await,
            DatasetKind::MaterializedView => crate::refresh::refresh(job, dq).await,
            DatasetKind::TemporaryView | DatasetKind::PersistentView => {
                self.define_view(job).await?;
                Ok(FlowEffect::View)
            }
        }
    }

    async fn define_view(&self, job: &FlowJob<'_>) -> Result<()> {
        if job.flow.query().is_streaming() {
            // A streaming view has rows only per batch of a flow that streams it, which plans
            // it over its own new input (`streaming::sources::increments`).
            return Ok(());
        }
        let plan = plan_query(job.ctx, job.flow.query(), &self.pipeline.root).await?;
        self.views.register(job.ctx, &self.storage, job.dataset, job.flow, plan, self.dry).await
    }
}

/// A flow's failure as its author reads it. A planning or pipeline error already says where; a
/// failure while the flow ran (a cast of a malformed value, a write its table refuses) gets the
/// flow's target and file:line, without the layers it surfaced through (`delta: Failed to convert
/// into Arrow schema: Arrow error: …`).
fn flow_failure(e: &NativeError, f: &Flow) -> String {
    if !matches!(
        e,
        NativeError::Execution(_) | NativeError::Delta(_) | NativeError::DataFusion(_) | NativeError::Arrow(_)
    ) {
        return e.to_string();
    }
    const LAYERS: [&str; 6] = [
        "delta: ",
        "Failed to convert into Arrow schema: ",
        "Arrow error: ",
        "External error: ",
        "Execution error: ",
        "Generic DeltaTable error: ",
    ];
    let mut text = e.to_string();
    while let Some(rest) = LAYERS.iter().find_map(|l| text.strip_prefix(l)) {
        text = rest.to_string();
    }
    format!("{} ({}): {}", f.target, f.location, thund_sql::in_sparks_words(&text))
}

/// How a flow ended: reported once, as its last event and as its line of the summary.
struct Ending {
    phase: RunPhase,
    rows: Option<u64>,
    error: Option<String>,
    data_quality: Option<DataQuality>,
    dropped_by_watermark: Option<u64>,
    technique: Option<String>,
}

impl Ending {
    fn of(phase: RunPhase) -> Self {
        Ending { phase, rows: None, error: None, data_quality: None, dropped_by_watermark: None, technique: None }
    }

    fn failed(error: String, data_quality: Option<DataQuality>) -> Self {
        Ending { error: Some(error), data_quality, ..Ending::of(RunPhase::Failed) }
    }

    fn report(self, events: &RunEvents, f: &Flow, started: Instant) -> FlowOutcome {
        let duration = started.elapsed();
        let details = EventDetails {
            rows_written: self.rows,
            duration_ms: Some(duration.as_millis() as u64),
            error: self.error.clone(),
            data_quality: self.data_quality.clone(),
            location: None,
            num_rows_dropped_by_watermark: self.dropped_by_watermark,
            warning: None,
            planning_information: None,
        };
        events.flow(f, self.phase, details);
        FlowOutcome {
            flow: f.name.to_string(),
            target: f.target.to_string(),
            phase: self.phase,
            rows_written: self.rows.unwrap_or(0),
            duration,
            // A skipped flow's reason is its upstream's error, not its own.
            error: self.error.filter(|_| self.phase == RunPhase::Failed),
            data_quality: self.data_quality,
            rows_dropped_by_watermark: self.dropped_by_watermark.unwrap_or(0),
            technique: self.technique,
        }
    }
}
