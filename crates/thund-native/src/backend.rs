//! The native backend's face: [`NativeBackend`] says what it can run and starts prepared runs —
//! it opens the storage, takes the run lock, attaches the event log and hands the run to `run`
//! on a thread of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use knut_thund::backend::{Capabilities, EventLog, ExecBackend, RunHandle, RunThread, TableFormats};
use knut_thund::ir::OutputMode;
use knut_thund::prepare::PreparedRun;

use crate::engine::EngineOptions;
use crate::run::Job;
use crate::storage::Storage;

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
        Capabilities {
            batch: true,
            streaming: true,
            expectations: true,
            sinks: true,
            persistent_views: true,
            file_sources: true,
            once_flows: true,
            // Aggregation over event time windows and the three output modes (`event_time`).
            event_time: true,
            output_modes: vec![OutputMode::Append, OutputMode::Update, OutputMode::Complete],
            // AUTO CDC, SCD types 1 and 2 (`cdc`).
            cdc: true,
            cdc_ignore_null_updates: true,
            cdc_truncates: true,
            // Every table is a Delta table, whatever `USING` says.
            transactional_tables: TableFormats::Every,
            rescued_data: true,
            schema_hints: true,
            ..Capabilities::none(BACKEND_NAME)
        }
    }

    /// Starts `run`. Unless the caller attached an event log, a real run logs to its storage's
    /// (the log the CLI attaches to runs of every backend); a dry run writes nothing anywhere.
    fn start(&self, run: PreparedRun) -> knut_thund::error::Result<Box<dyn RunHandle>> {
        let storage = Storage::of(&run.pipeline)?;
        let lock = if run.is_dry() { None } else { Some(storage.lock()?) };
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
