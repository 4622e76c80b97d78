//! Running a pipeline: stages in order, independent datasets concurrently, every table published
//! as one Delta commit, events streamed and logged.
//!
//! A run lives on its own thread with its own Tokio runtime, so [`NativeRun`] is a plain
//! blocking handle (the core's `RunHandle` is synchronous and engine-free). Events go through a
//! channel to the caller and, line by line, to `<storage>/events/<run id>.jsonl`.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use datafusion::catalog::TableProvider;
use datafusion::datasource::provider_as_source;
use datafusion::datasource::{MemTable, ViewTable};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use deltalake::kernel::Transaction;
use deltalake::DeltaTable;
use futures::StreamExt;
use knut_thund::backend::{
    rfc3339, Capabilities, DataQuality, EventDetails, ExecBackend, FlowOutcome, RunEvent, RunHandle, RunOptions,
    RunPhase, RunSummary, RunThread,
};
use knut_thund::error::ThundError;
use knut_thund::ir::{Dataset, DatasetKind, Flow, FlowKind, Pipeline, QualifiedName};
use knut_thund::plan::{plan, Plan};
use knut_thund::validate::dependencies;
use serde_json::json;

use crate::engine::{ensure_schema, new_context, plan_query, plan_query_with_streams, table_ref, EngineOptions};
use crate::error::{NativeError, Result};
use crate::expect::Checker;
use crate::freshness;
use crate::incremental;
use crate::sink::FileSink;
use crate::storage::{RunLock, Storage};
use crate::stream::{
    app_id, checkpoint_dir, committed_batch, increments, table_checkpoints, Checkpoint, CheckpointStore,
    CHECKPOINT_FORMAT_VERSION,
};
pub use crate::table::open_stored_table;
use crate::table::{align_to_target, conform, dir_url, write_append, write_overwrite};

/// Settings of the native backend.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NativeOptions {
    /// DataFusion settings (memory limit, parallelism).
    pub engine: EngineOptions,
}

/// The embedded backend: DataFusion for queries, delta-rs for tables.
#[derive(Debug, Clone, Default)]
pub struct NativeBackend {
    options: NativeOptions,
}

impl NativeBackend {
    /// A backend with default settings.
    pub fn new() -> Self {
        Self::default()
    }

    /// A backend with `options`.
    pub fn with_options(options: NativeOptions) -> Self {
        NativeBackend { options }
    }
}

/// The native backend's name in capabilities and events.
pub const BACKEND_NAME: &str = "native";

impl ExecBackend for NativeBackend {
    type Run = NativeRun;

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            name: BACKEND_NAME.into(),
            batch: true,
            streaming: true,
            event_time: false,
            cdc: false,
            expectations: true,
            output_modes: Vec::new(),
            sinks: true,
            persistent_views: true,
            file_sources: true,
            once_flows: true,
        }
    }

    fn run_with(&self, p: &Pipeline, options: &RunOptions) -> knut_thund::error::Result<NativeRun> {
        self.check(p)?;
        p.validate()?;
        let plan = plan(p, &options.selection)?;
        let storage = Storage::of(p)?;
        let lock = if options.dry { None } else { Some(storage.lock()?) };
        let run_id = new_run_id();
        let log = match (options.dry, storage.local_root()) {
            (true, _) => None,
            // A local log is appended to as events happen, so even a killed run leaves one.
            (false, Some(root)) => {
                let path = root.join(storage.events_key(&run_id));
                let dir = path.parent().unwrap_or(root);
                std::fs::create_dir_all(dir).map_err(|e| NativeError::io(dir, e))?;
                Some(EventLog::File(BufWriter::new(File::create(&path).map_err(|e| NativeError::io(&path, e))?)))
            }
            // An object is written whole: after each stage and at the end.
            (false, None) => Some(EventLog::Object { key: storage.events_key(&run_id), lines: Vec::new() }),
        };
        let (tx, rx) = mpsc::channel();
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job {
            pipeline: p.clone(),
            plan,
            storage,
            engine: self.options.engine.clone(),
            max_concurrent: match options.max_concurrent_flows {
                0 => std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2),
                n => n,
            },
            dry: options.dry,
            events: Events { tx, log: Mutex::new(log), run_id: run_id.clone() },
            cancel: Arc::clone(&cancel),
            checked_views: Mutex::new(Vec::new()),
            lock: Mutex::new(lock),
        };
        let thread = std::thread::Builder::new()
            .name("thund-run".into())
            .spawn(move || job.run_blocking())
            .map_err(|e| ThundError::Backend(format!("cannot start the run thread: {e}")))?;
        Ok(NativeRun { run_id, run: RunThread::new(rx, thread), cancel })
    }
}

/// A run of the native backend.
pub struct NativeRun {
    run_id: String,
    run: RunThread,
    cancel: Arc<AtomicBool>,
}

impl NativeRun {
    /// The run's id (the name of its event log).
    pub fn run_id(&self) -> &str {
        &self.run_id
    }
}

impl RunHandle for NativeRun {
    fn poll_events(&mut self) -> Option<Vec<RunEvent>> {
        self.run.poll_events()
    }

    fn cancel(&self) {
        self.cancel.store(true, Ordering::SeqCst);
    }

    fn finish(self) -> knut_thund::error::Result<RunSummary> {
        self.run.finish()
    }
}

/// A sortable, unique-enough run id: UTC time plus the process id.
fn new_run_id() -> String {
    let t = rfc3339(SystemTime::now());
    let compact: String = t.chars().filter(|c| c.is_ascii_digit()).take(17).collect();
    format!("{}T{}-{}", &compact[..8], &compact[8..], std::process::id())
}

/// A run's event log, one JSON object per line.
enum EventLog {
    /// A local file, appended to as events happen.
    File(BufWriter<File>),
    /// An object, written whole by `Job::save_events`.
    Object { key: String, lines: Vec<u8> },
}

/// Where events go: the caller's channel and the run's event log.
struct Events {
    tx: Sender<RunEvent>,
    log: Mutex<Option<EventLog>>,
    run_id: String,
}

impl Events {
    fn emit(&self, flow: Option<&Flow>, dataset: Option<&QualifiedName>, ev: RunEvent) {
        if let Ok(mut guard) = self.log.lock() {
            if let Some(log) = guard.as_mut() {
                let level = match ev.phase {
                    Some(RunPhase::Failed) => "ERROR",
                    Some(RunPhase::Skipped | RunPhase::Stopped) => "WARN",
                    _ => "INFO",
                };
                let line = json!({
                    "timestamp": rfc3339(ev.timestamp),
                    "run_id": self.run_id,
                    "level": level,
                    "event_type": if flow.is_some() { "flow_progress" } else { "update_progress" },
                    "dataset": dataset.map(|d| d.to_string()),
                    "flow": flow.map(|f| f.name.to_string()),
                    "phase": ev.phase.map(|p| p.as_str()),
                    "message": ev.message,
                    "details": ev.details,
                });
                match log {
                    EventLog::File(w) => {
                        let _ = writeln!(w, "{line}");
                        let _ = w.flush();
                    }
                    EventLog::Object { lines, .. } => {
                        let _ = writeln!(lines, "{line}");
                    }
                }
            }
        }
        let _ = self.tx.send(ev);
    }

    fn flow(&self, f: &Flow, phase: RunPhase, details: EventDetails) {
        let verb = if phase.is_terminal() { "has" } else { "is" };
        let mut ev = RunEvent::now(f.name.to_string(), Some(phase), format!("Flow {} {verb} {phase}.", f.name));
        ev.details = details;
        ev.details.location.get_or_insert_with(|| f.location.to_string());
        self.emit(Some(f), Some(&f.target), ev);
    }

    fn run(&self, phase: RunPhase, message: String) {
        self.emit(None, None, RunEvent::now("run", Some(phase), message));
    }
}

struct Job {
    pipeline: Pipeline,
    plan: Plan,
    storage: Storage,
    engine: EngineOptions,
    max_concurrent: usize,
    dry: bool,
    events: Events,
    cancel: Arc<AtomicBool>,
    /// Views with expectations, whose counts are reported when the run ends.
    checked_views: Mutex<Vec<(Flow, Arc<Checker>)>>,
    lock: Mutex<Option<RunLock>>,
}

/// A flow that ran (or was skipped), with how long it took.
type FlowDone = (Flow, Outcome, Duration);

/// How one dataset ended.
struct Outcome {
    phase: RunPhase,
    rows: u64,
    error: Option<String>,
    data_quality: Option<DataQuality>,
}

impl Job {
    fn run_blocking(self) -> RunSummary {
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(self.max_concurrent.max(2)).enable_all().build();
        match runtime {
            Ok(rt) => rt.block_on(self.run()),
            Err(e) => {
                self.events.run(RunPhase::Failed, format!("cannot start the engine runtime: {e}"));
                RunSummary::default()
            }
        }
    }

    async fn run(&self) -> RunSummary {
        let summary = self.run_stages().await;
        self.save_events().await;
        let lock = self.lock.lock().ok().and_then(|mut l| l.take());
        if let Some(lock) = lock {
            if let Err(e) = self.storage.release(lock).await {
                tracing::warn!(error = %e, "the run lock could not be released");
            }
        }
        summary
    }

    /// Writes an object event log whole (a local one is written as events happen).
    async fn save_events(&self) {
        let pending = match self.events.log.lock() {
            Ok(guard) => match guard.as_ref() {
                Some(EventLog::Object { key, lines }) => Some((key.clone(), lines.clone())),
                _ => None,
            },
            Err(_) => None,
        };
        if let Some((key, lines)) = pending {
            if let Err(e) = self.storage.put(&key, lines).await {
                tracing::warn!(error = %e, "the event log could not be written");
            }
        }
    }

    async fn run_stages(&self) -> RunSummary {
        let p = &self.pipeline;
        let mode = if self.dry { "dry run (nothing is written)" } else { "update" };
        self.events.run(RunPhase::Starting, format!("Starting {mode} of pipeline `{}` on the native backend.", p.name));
        let ctx = match self.prepare().await {
            Ok(c) => c,
            Err(e) => {
                self.events.run(RunPhase::Failed, format!("Run has FAILED: {e}"));
                return RunSummary::default();
            }
        };
        for f in &p.flows {
            let phase = if self.plan.is_selected(&f.target) { RunPhase::Queued } else { RunPhase::Excluded };
            self.events.flow(f, phase, EventDetails::default());
        }
        let deps = dependencies(p);
        let mut broken: BTreeSet<QualifiedName> = BTreeSet::new();
        let mut summary = RunSummary::default();
        for stage in &self.plan.stages {
            let work = stage.iter().filter_map(|name| p.dataset(name)).map(|d| {
                let upstream_broken = deps.get(&d.name).is_some_and(|ds| ds.iter().any(|u| broken.contains(*u)));
                let ctx = &ctx;
                async move { (d, self.dataset(ctx, d, upstream_broken).await) }
            });
            let results: Vec<(&Dataset, Vec<FlowDone>)> =
                futures::stream::iter(work).buffer_unordered(self.max_concurrent).collect().await;
            self.save_events().await;
            for (d, flows) in results {
                for (f, o, took) in flows {
                    if matches!(o.phase, RunPhase::Failed | RunPhase::Skipped | RunPhase::Stopped) {
                        broken.insert(d.name.clone());
                    }
                    summary.flows.push(FlowOutcome {
                        flow: f.name.to_string(),
                        target: f.target.to_string(),
                        phase: o.phase,
                        rows_written: o.rows,
                        duration: took,
                        error: o.error,
                        data_quality: o.data_quality,
                    });
                }
            }
        }
        let views: Vec<(Flow, Arc<Checker>)> =
            self.checked_views.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default();
        for (f, checker) in views {
            let metrics = checker.metrics();
            let mut ev = RunEvent::now(
                f.name.to_string(),
                None,
                format!("Expectations of view {} checked where it was read.", f.target),
            );
            ev.details.data_quality = Some(metrics.clone());
            ev.details.location = Some(f.location.to_string());
            self.events.emit(Some(&f), Some(&f.target), ev);
            if let Some(o) = summary.flows.iter_mut().find(|o| o.flow == f.name.to_string()) {
                o.data_quality = Some(metrics);
            }
        }
        let failed = summary.flows.iter().filter(|f| f.phase == RunPhase::Failed).count();
        if failed > 0 {
            self.events.run(RunPhase::Failed, format!("Run has FAILED: {failed} flow(s) failed."));
        } else if self.cancel.load(Ordering::SeqCst) {
            self.events.run(RunPhase::Stopped, "Run is STOPPED.".into());
        } else {
            self.events.run(RunPhase::Completed, "Run is COMPLETED.".into());
        }
        summary
    }

    /// A session with every catalog/database and every stored table registered, so datasets
    /// excluded from this run are still readable by those that run.
    async fn prepare(&self) -> Result<SessionContext> {
        let p = &self.pipeline;
        let ctx = new_context(&p.catalog, &p.database, &self.engine)?;
        for d in &p.datasets {
            ensure_schema(&ctx, &d.name.catalog, &d.name.database)?;
            if d.kind.is_table() {
                if let Some(provider) = open_stored_table(&ctx, &self.storage, &d.name).await? {
                    ctx.register_table(table_ref(&d.name), provider)?;
                }
            }
        }
        Ok(ctx)
    }

    /// Runs (or skips) every flow of one dataset.
    async fn dataset(&self, ctx: &SessionContext, d: &Dataset, upstream_broken: bool) -> Vec<FlowDone> {
        let p = &self.pipeline;
        let selected = self.plan.is_selected(&d.name);
        let mut out = Vec::new();
        let reset = if selected && !upstream_broken && !self.dry && d.kind == DatasetKind::StreamingTable {
            self.reset_if_asked(d).await.err()
        } else {
            None
        };
        for f in p.flows_into(&d.name) {
            let started = Instant::now();
            if let Some(e) = &reset {
                let msg = e.to_string();
                self.events.flow(f, RunPhase::Failed, EventDetails { error: Some(msg.clone()), ..Default::default() });
                out.push((
                    f.clone(),
                    Outcome { phase: RunPhase::Failed, rows: 0, error: Some(msg), data_quality: None },
                    started.elapsed(),
                ));
                continue;
            }
            if !selected {
                // Views are defined even when not selected (silently: they are EXCLUDED), since a
                // selected dataset downstream may read them.
                if d.kind.is_view() && !upstream_broken {
                    if let Err(e) = self.define_view(ctx, d, f).await {
                        tracing::warn!(view = %d.name, error = %e, "excluded view could not be defined");
                    }
                }
                continue;
            }
            let outcome = if upstream_broken {
                self.events.flow(
                    f,
                    RunPhase::Skipped,
                    EventDetails {
                        error: Some("an upstream dataset failed or was skipped".into()),
                        ..Default::default()
                    },
                );
                Outcome { phase: RunPhase::Skipped, rows: 0, error: None, data_quality: None }
            } else if self.cancel.load(Ordering::SeqCst) {
                self.events.flow(f, RunPhase::Stopped, EventDetails::default());
                Outcome { phase: RunPhase::Stopped, rows: 0, error: None, data_quality: None }
            } else {
                let mut dq = None;
                let result = self.flow(ctx, d, f, &mut dq).await;
                match result {
                    Ok(Written::Nothing) => {
                        let took = started.elapsed();
                        self.events.flow(
                            f,
                            RunPhase::Idle,
                            EventDetails {
                                rows_written: Some(0),
                                duration_ms: Some(took.as_millis() as u64),
                                ..Default::default()
                            },
                        );
                        Outcome { phase: RunPhase::Idle, rows: 0, error: None, data_quality: None }
                    }
                    Ok(written) => {
                        let rows = match written {
                            Written::Rows(n) => Some(n),
                            _ => None,
                        };
                        let took = started.elapsed();
                        self.events.flow(
                            f,
                            RunPhase::Completed,
                            EventDetails {
                                rows_written: rows,
                                duration_ms: Some(took.as_millis() as u64),
                                data_quality: dq.clone(),
                                ..Default::default()
                            },
                        );
                        Outcome { phase: RunPhase::Completed, rows: rows.unwrap_or(0), error: None, data_quality: dq }
                    }
                    Err(e) => {
                        let msg = e.to_string();
                        self.events.flow(
                            f,
                            RunPhase::Failed,
                            EventDetails {
                                error: Some(msg.clone()),
                                duration_ms: Some(started.elapsed().as_millis() as u64),
                                data_quality: dq.clone(),
                                ..Default::default()
                            },
                        );
                        Outcome { phase: RunPhase::Failed, rows: 0, error: Some(msg), data_quality: dq }
                    }
                }
            };
            if selected {
                out.push((f.clone(), outcome, started.elapsed()));
            }
        }
        out
    }

    async fn define_view(&self, ctx: &SessionContext, d: &Dataset, f: &Flow) -> Result<()> {
        let plan = plan_query(ctx, f.query(), &self.pipeline.root).await?;
        self.register_view(ctx, d, f, plan).await
    }

    /// Registers a view (inlined into its readers) and stores a persistent view's definition.
    /// A view with expectations is checked where it is read; its counts are reported at the end
    /// of the run.
    async fn register_view(&self, ctx: &SessionContext, d: &Dataset, f: &Flow, plan: LogicalPlan) -> Result<()> {
        let _ = ctx.deregister_table(table_ref(&d.name));
        if d.expectations.is_empty() {
            let view = ViewTable::new(plan, Some(f.query().sql.clone()));
            ctx.register_table(table_ref(&d.name), Arc::new(view))?;
        } else {
            let checker = Checker::new(ctx, d, &plan)?;
            let checked = CheckedView { plan, checker: Arc::new(checker), ctx: ctx.clone() };
            if let Ok(mut v) = self.checked_views.lock() {
                v.push((f.clone(), Arc::clone(&checked.checker)));
            }
            ctx.register_table(table_ref(&d.name), Arc::new(checked))?;
        }
        if d.kind == DatasetKind::PersistentView && !self.dry {
            store_view_definition(&self.storage, d, f).await?;
        }
        Ok(())
    }

    /// One flow: what it wrote.
    async fn flow(&self, ctx: &SessionContext, d: &Dataset, f: &Flow, dq: &mut Option<DataQuality>) -> Result<Written> {
        let p = &self.pipeline;
        self.events.flow(f, RunPhase::Planning, EventDetails::default());
        if matches!(d.kind, DatasetKind::StreamingTable | DatasetKind::Sink) {
            return self.streaming_flow(ctx, d, f, dq).await;
        }
        // An unchanged materialized view is not recomputed (see `freshness`); `None`: its query
        // is non-deterministic, or this is not a view or a dry run.
        let full_refresh = self.plan.full_refresh.contains(&d.name);
        let fingerprint = match d.kind {
            DatasetKind::MaterializedView if !self.dry => {
                freshness::fingerprint(p, &self.storage, d, f.query()).await?
            }
            _ => None,
        };
        if let Some(fp) = &fingerprint {
            if !full_refresh && freshness::is_fresh(&self.storage, d, fp).await {
                return Ok(Written::Nothing);
            }
        }
        // A view aggregating an append-only table merges only the new rows (see `incremental`);
        // a full refresh rebuilds its state from all rows.
        let mut planned = None;
        if let Some(fp) = &fingerprint {
            match incremental::analyse(ctx, &self.storage, p, d, f).await? {
                incremental::Analysis::Incremental(view) => {
                    self.events.flow(f, RunPhase::Starting, EventDetails::default());
                    self.events.flow(f, RunPhase::Running, EventDetails::default());
                    let rows = view.refresh(ctx, &self.storage, d, f, full_refresh).await?;
                    freshness::record(&self.storage, d, fp.clone()).await?;
                    return Ok(Written::Rows(rows));
                }
                incremental::Analysis::Planned(plan) => planned = Some(plan),
                incremental::Analysis::NotPlanned => {}
            }
        }
        let plan = match planned {
            Some(plan) => plan,
            None => plan_query(ctx, f.query(), &p.root).await?,
        };
        match d.kind {
            DatasetKind::TemporaryView | DatasetKind::PersistentView => {
                self.register_view(ctx, d, f, plan).await?;
                Ok(Written::View)
            }
            DatasetKind::MaterializedView => {
                let plan = conform(ctx, d, f, plan)?;
                let checker = match d.expectations.is_empty() {
                    true => None,
                    false => Some(Checker::new(ctx, d, &plan)?),
                };
                self.events.flow(f, RunPhase::Starting, EventDetails::default());
                if self.dry {
                    // Downstream datasets plan against an empty table of the right schema.
                    let schema = Arc::clone(plan.schema().inner());
                    let empty = MemTable::try_new(schema, vec![vec![]])?;
                    let _ = ctx.deregister_table(table_ref(&d.name));
                    ctx.register_table(table_ref(&d.name), Arc::new(empty))?;
                    return Ok(Written::Rows(0));
                }
                self.events.flow(f, RunPhase::Running, EventDetails::default());
                let plan = match &checker {
                    Some(c) => checked_plan(ctx, c, plan).await?,
                    None => plan,
                };
                let written = write_overwrite(ctx, &self.storage, d, plan).await;
                *dq = checker.map(|c| c.metrics());
                let rows = written?;
                if let Some(fp) = fingerprint {
                    freshness::record(&self.storage, d, fp).await?;
                }
                Ok(Written::Rows(rows))
            }
            DatasetKind::StreamingTable | DatasetKind::Sink => {
                Err(NativeError::Execution(format!("{} `{}` cannot run on the native backend yet", d.kind, d.name)))
            }
        }
    }

    /// `--full-refresh` of a streaming table: its data and its flows' checkpoints go, so all input
    /// is processed again. A reset marker makes this crash-safe: a run that finds the marker
    /// finishes the reset before anything else, so a half-done reset never leaves a table whose
    /// checkpoints claim rows it no longer has (or the reverse).
    async fn reset_if_asked(&self, d: &Dataset) -> Result<()> {
        let checkpoints = table_checkpoints(&d.name);
        let marker = format!("{checkpoints}.reset");
        let asked = self.plan.full_refresh.contains(&d.name);
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
            self.storage.put(&marker, Vec::new()).await?;
        }
        if self.storage.exists(&marker).await? {
            // The table's log goes first: a reset cut short leaves no table rather than one
            // whose log names files already deleted.
            let table = self.storage.table_key(&d.name);
            self.storage.delete_prefix(&format!("{table}/_delta_log")).await?;
            self.storage.delete_prefix(&table).await?;
            self.storage.delete_prefix(&checkpoints).await?;
            self.storage.delete(&marker).await?;
        }
        Ok(())
    }

    /// One batch of a flow into a streaming table (see [`crate::stream`] for the protocol).
    async fn streaming_flow(
        &self,
        ctx: &SessionContext,
        d: &Dataset,
        f: &Flow,
        dq: &mut Option<DataQuality>,
    ) -> Result<Written> {
        let p = &self.pipeline;
        let store = CheckpointStore::new(&self.storage, checkpoint_dir(&d.name, &f.name));
        // Where the rows go: the table's own Delta folder, or the sink's path.
        let sink = match d.kind {
            DatasetKind::Sink => Some(FileSink::of(d, &p.root)?),
            _ => None,
        };
        let url = match &sink {
            Some(s) => dir_url(&s.path)?,
            None => self.storage.table_url(&d.name),
        };
        let delta = sink.as_ref().is_none_or(|s| s.format == "delta");
        let is_table = match &sink {
            Some(s) => s.path.join("_delta_log").is_dir(),
            None => self.storage.is_table(&self.storage.table_key(&d.name)).await?,
        };
        let existing = if delta && is_table { Some(DeltaTable::try_from_url(url.clone()).await?) } else { None };
        let app = app_id(&f.name);
        let committed = match &sink {
            Some(s) if !delta => {
                let pending = store.pending_batch().await?;
                let done = s.committed_batch(&f.name, pending);
                if let (Some(b), None) = (pending, done) {
                    // The intent's files may be half renamed: remove them before recomputing.
                    s.discard(&f.name, b)?;
                }
                done
            }
            _ => committed_batch(existing.as_ref(), &app).await?,
        };
        let state = store.recover(committed).await?;
        let mut next =
            Checkpoint { format_version: CHECKPOINT_FORMAT_VERSION, batch: state.batch + 1, ..state.clone() };
        let plan = match &f.kind {
            FlowKind::Once { query, .. } => {
                if state.once_done {
                    return Ok(Written::Nothing);
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
                let inputs = increments(ctx, &self.storage, &p.root, &query.reads, &state)
                    .await
                    .map_err(|e| NativeError::Plan { location: f.location.to_string(), message: e.to_string() })?;
                if !inputs.iter().any(|(_, i)| i.has_data) {
                    return Ok(Written::Nothing);
                }
                let mut names = Vec::with_capacity(inputs.len());
                for (key, input) in inputs {
                    let name = format!("__thund_stream_{}", STREAM_SEQ.fetch_add(1, Ordering::Relaxed));
                    ctx.register_table(name.as_str(), input.provider)?;
                    names.push(name);
                    if let Some(o) = input.offset {
                        next.sources.insert(key, o);
                    }
                }
                let planned = plan_query_with_streams(ctx, query, &p.root, names.clone()).await;
                for n in &names {
                    let _ = ctx.deregister_table(n.as_str());
                }
                planned?
            }
            FlowKind::AutoCdc(_) => {
                return Err(NativeError::Execution(format!(
                    "AUTO CDC flow `{}` cannot run on the native backend yet",
                    f.name
                )))
            }
        };
        let by_name = matches!(f.kind, FlowKind::Append { by_name: true, .. } | FlowKind::Once { by_name: true, .. });
        // Appends to an existing table line up with its columns; file sinks take rows as they come.
        let plan = conform(ctx, d, f, plan)?;
        let plan = match &existing {
            Some(t) if !f.implicit => align_to_target(ctx, f, plan, t, by_name).await?,
            _ => plan,
        };
        self.events.flow(f, RunPhase::Starting, EventDetails::default());
        if self.dry {
            return Ok(Written::Rows(0));
        }
        let checker = match d.expectations.is_empty() {
            true => None,
            false => Some(Checker::new(ctx, d, &plan)?),
        };
        self.events.flow(f, RunPhase::Running, EventDetails::default());
        let plan = match &checker {
            Some(c) => checked_plan(ctx, c, plan).await?,
            None => plan,
        };
        store.write_pending(&next).await?;
        let written = match &sink {
            Some(s) if !delta => s.write(ctx, plan, &f.name, next.batch).await,
            _ => {
                let register = d.kind == DatasetKind::StreamingTable;
                write_append(ctx, &url, d, plan, existing, Transaction::new(&app, next.batch), register).await
            }
        };
        *dq = checker.map(|c| c.metrics());
        let rows = written?;
        store.commit(&next).await?;
        Ok(Written::Rows(rows))
    }
}

/// The plan's rows, checked against the dataset's expectations, as a plan to write from.
async fn checked_plan(ctx: &SessionContext, checker: &Checker, plan: LogicalPlan) -> Result<LogicalPlan> {
    let table = checker.wrap(ctx, plan).await?;
    Ok(LogicalPlanBuilder::scan("checked", provider_as_source(table), None)?.build()?)
}

/// A view whose rows are checked against its expectations each time a reader scans it.
struct CheckedView {
    plan: LogicalPlan,
    checker: Arc<Checker>,
    ctx: SessionContext,
}

impl std::fmt::Debug for CheckedView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckedView")
    }
}

#[async_trait::async_trait]
impl TableProvider for CheckedView {
    fn schema(&self) -> arrow::datatypes::SchemaRef {
        Arc::clone(self.plan.schema().inner())
    }

    fn table_type(&self) -> datafusion::logical_expr::TableType {
        datafusion::logical_expr::TableType::View
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        let table = self
            .checker
            .wrap(&self.ctx, self.plan.clone())
            .await
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        table.scan(state, projection, filters, limit).await
    }
}

/// What a flow wrote.
enum Written {
    /// A view was defined.
    View,
    /// Rows were committed.
    Rows(u64),
    /// No new input: nothing to do (IDLE).
    Nothing,
}

static STREAM_SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// Persists a persistent view's definition for `thund query`.
async fn store_view_definition(storage: &Storage, d: &Dataset, f: &Flow) -> Result<()> {
    let definition = json!({ "name": d.name, "query": f.query(), "comment": d.comment });
    storage.write_json(&storage.view_key(&d.name), &definition).await
}
