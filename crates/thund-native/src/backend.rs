//! The native backend's face: [`NativeBackend`] says what it can run and starts prepared runs —
//! it opens the storage, takes the run lock, attaches the event log and hands the run to `run`
//! on a thread of its own. [`lock_run`] takes the same lock for a run of another backend, whose
//! events share the pipeline's event log. Whoever takes the lock ends, in the log, the run that
//! held it last and never released it (`RunLock::interrupted`), so no killed run stays RUNNING.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use knut_thund::backend::{Capabilities, EventLog, ExecBackend, RunHandle, RunThread, TableFormats};
use knut_thund::ir::{Feature, OutputMode};
use knut_thund::prepare::PreparedRun;

use crate::delta::storage::{LockedRun, RunLock, Storage};
use crate::engine::EngineOptions;
use crate::run::Job;

/// The native backend's name in capabilities and events.
pub const BACKEND_NAME: &str = "native";

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

impl ExecBackend for NativeBackend {
    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::none(BACKEND_NAME).with([
            Feature::Batch,
            Feature::Streaming,
            Feature::Expectations,
            Feature::Sinks,
            Feature::PersistentViews,
            Feature::FileSources,
            Feature::OnceFlows,
            // Aggregation over event time windows and the three output modes (`event_time`).
            Feature::EventTime,
            Feature::OutputMode(OutputMode::Append),
            Feature::OutputMode(OutputMode::Update),
            Feature::OutputMode(OutputMode::Complete),
            // AUTO CDC, SCD types 1 and 2 (`cdc`).
            Feature::Cdc,
            Feature::CdcHistory,
            Feature::CdcIgnoreNullUpdates,
            Feature::CdcTruncates,
            Feature::RescuedData,
            Feature::SchemaHints,
        ]);
        // Every table is a Delta table, whatever `USING` says.
        caps.transactional_tables = TableFormats::Every;
        caps
    }

    /// Starts `run`. Unless the caller attached an event log, a real run logs to its storage's
    /// (the log the CLI attaches to runs of every backend); a dry run writes nothing anywhere.
    fn start(&self, run: PreparedRun) -> knut_thund::error::Result<Box<dyn RunHandle>> {
        let storage = Storage::of(&run.pipeline)?;
        let lock = if run.is_dry() { None } else { Some(take_lock(&storage, &run)?) };
        let log: Option<Arc<dyn EventLog>> = match &run.event_log {
            Some(log) => Some(Arc::clone(log)),
            None if run.is_dry() => None,
            None => Some(Arc::new(crate::event_log::open_in(&storage, &run)?)),
        };
        let cancel = Arc::new(AtomicBool::new(false));
        let job = Job::new(run, storage, self.options.engine.clone(), Arc::clone(&cancel), lock);
        let on_cancel = Box::new(move || cancel.store(true, Ordering::SeqCst));
        RunThread::spawn("thund-run", log, on_cancel, move |events| job.run_blocking(events))
    }
}

/// Takes `run`'s lock in `storage` and ends the run it finds interrupted in the event log.
fn take_lock(storage: &Storage, run: &PreparedRun) -> crate::error::Result<RunLock> {
    let lock = storage.lock(&LockedRun { id: run.run_id.clone(), backend: run.capabilities.name.clone() })?;
    if let Some(gone) = lock.interrupted() {
        if let Err(e) = crate::event_log::end_interrupted(storage, &run.pipeline.name, gone, &run.run_id) {
            tracing::warn!(run = %gone.id, error = %e, "the interrupted run could not be ended in the event log");
        }
    }
    Ok(lock)
}

/// The run lock held for a run of a backend that takes none itself (Spark): one run of a
/// pipeline at a time, whatever its backend. Dropped without [`HeldRunLock::release`] (a crash),
/// the next run finds the run interrupted.
#[derive(Debug)]
pub struct HeldRunLock {
    storage: Storage,
    lock: RunLock,
}

/// Takes the run lock of `run`'s storage, failing fast if another run holds it.
pub fn lock_run(run: &PreparedRun) -> crate::error::Result<HeldRunLock> {
    let storage = Storage::of(&run.pipeline)?;
    let lock = take_lock(&storage, run)?;
    Ok(HeldRunLock { storage, lock })
}

impl HeldRunLock {
    /// Releases the lock: the run ended (whether it succeeded or not).
    pub fn release(self) -> crate::error::Result<()> {
        let HeldRunLock { storage, lock } = self;
        crate::delta::storage::block_on_own_thread("release the run lock", storage.release(lock))
    }
}
