//! The event log: every event of every run, native or Spark, in one Delta table
//! `<storage>/event_log` (`Storage::event_log_key`) with DLT's columns, so it can be queried with
//! SQL (`thund query "SELECT … FROM event_log"`), filtered by `thund events` and watched by
//! `thund ui`.
//!
//! ```text
//! id STRING, sequence BIGINT (order within the run),
//! origin STRUCT<pipeline_name, update_id (the run id), backend, dataset_name, flow_name,
//!               source_code_location (file:line:col)>,
//! timestamp TIMESTAMP, message STRING, level STRING (INFO | WARN | ERROR | METRICS),
//! maturity_level STRING, error STRING, details STRING (JSON keyed by event_type),
//! event_type STRING (create_update | flow_definition | flow_progress | update_progress)
//! ```
//!
//! A run's log starts with its `create_update` event and one `flow_definition` per flow (from
//! the prepared run), then takes the backend's events as they come: a flow's phase becomes a
//! `flow_progress` (`status`, `metrics.num_output_rows`, `data_quality`), the run's own a
//! `update_progress` (`state`).
//!
//! Events reach the table as the run goes, not only at its end: [`EventLog::append`] only queues
//! (a backend emits from any thread, often holding locks), and a writer thread of the log's own
//! appends what is queued in one commit every [`FLUSH_EVERY`], on each [`EventLog::flush`] (the
//! end of a native run, before its lock is released) and when the log is closed. The thread has its own runtime so the
//! log outlives, and never blocks, the run's. A commit that fails is not retried; its events are
//! lost and the failure is kept in [`StoredEventLog::close`]'s warnings, which the CLI prints
//! after the run's summary — never silent, never fatal to the run.
//!
//! Size stays bounded: when the table has more than [`COMPACT_AFTER_FILES`] files or one older
//! than the retention, closing a log rewrites it as one file keeping only the closing run's events and those younger than the
//! retention (`thund.eventLog.retentionDays` in the spec's `configuration`, default
//! [`DEFAULT_RETENTION_DAYS`]); files it replaces are vacuumed a day later, so a reader that
//! loaded the table before never finds its files gone.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;
use knut_thund::backend::{rfc3339, EventDetails, EventLog, RunEvent, RunPhase};
use knut_thund::ir::{Pipeline, Read};
use knut_thund::prepare::PreparedRun;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::delta::storage::{LockedRun, Storage};
use crate::error::{NativeError, Result};

mod table;
pub(crate) use table::provider;
pub use table::{location, micros, read, read_each, read_run, runs, schema, LogReader, Overview, Polled};
use table::{open_log, read_table, to_batch};

/// How often queued events are committed while a run goes.
pub const FLUSH_EVERY: Duration = Duration::from_millis(500);
/// Files the table may have before closing a log compacts it.
pub const COMPACT_AFTER_FILES: usize = 64;
/// The `configuration` key that bounds how long events are kept.
pub const RETENTION_KEY: &str = "thund.eventLog.retentionDays";
/// Days events are kept when the spec does not say.
pub const DEFAULT_RETENTION_DAYS: u64 = 30;

/// A run's event log: queued rows and the thread that commits them.
pub struct StoredEventLog {
    shared: Arc<Shared>,
    writer: Mutex<Option<Writer>>,
    /// Each flow's name, lower-cased as Spark prints it, to its name, target and definition.
    flows: BTreeMap<String, (String, String, String)>,
    pipeline: String,
    run_id: String,
    backend: String,
    sequence: AtomicI64,
}

/// What the run's threads and the writer thread share.
#[derive(Default)]
struct Shared {
    queued: Mutex<Vec<LoggedEvent>>,
    warnings: Mutex<Vec<String>>,
}

impl Shared {
    fn warn(&self, w: String) {
        tracing::debug!(warning = %w, "event log");
        let mut ws = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !ws.contains(&w) {
            ws.push(w);
        }
    }
}

struct Writer {
    requests: mpsc::Sender<mpsc::Sender<()>>,
    thread: std::thread::JoinHandle<()>,
}

/// One row of the event log, as stored and as `thund events --format json` prints it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoggedEvent {
    /// Unique id.
    pub id: String,
    /// Order within the run.
    pub sequence: i64,
    /// Where the event comes from.
    pub origin: Origin,
    /// When it happened (RFC 3339, UTC).
    pub timestamp: String,
    /// The message as shown to users.
    pub message: String,
    /// INFO, WARN, ERROR or METRICS.
    pub level: String,
    /// Always STABLE: every event type here is.
    pub maturity_level: String,
    /// The error of a failed flow or run.
    pub error: Option<String>,
    /// Keyed by `event_type`.
    pub details: Value,
    /// `create_update`, `flow_definition`, `flow_progress` or `update_progress`.
    pub event_type: String,
}

/// The `origin` column.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Origin {
    /// The spec's `name`.
    pub pipeline_name: String,
    /// The run id.
    pub update_id: String,
    /// `native` or `spark-connect-sdp`.
    pub backend: String,
    /// The dataset a flow writes.
    pub dataset_name: Option<String>,
    /// The flow.
    pub flow_name: Option<String>,
    /// Where the flow is defined (`file:line:col`).
    pub source_code_location: Option<String>,
}

/// The event log of `run`, under its pipeline's storage.
pub fn open(run: &PreparedRun) -> Result<Arc<StoredEventLog>> {
    Ok(Arc::new(open_in(&Storage::of(&run.pipeline)?, run)?))
}

/// The event log of `run` in `storage`: its `create_update` and `flow_definition` events are
/// queued, and its writer thread started.
pub(crate) fn open_in(storage: &Storage, run: &PreparedRun) -> Result<StoredEventLog> {
    let p = &run.pipeline;
    let retention = retention(p)?;
    let flows = p
        .flows
        .iter()
        .map(|f| {
            let key = f.name.to_string().to_lowercase();
            (key, (f.name.to_string(), f.target.to_string(), f.location.to_string()))
        })
        .collect();
    let shared = Arc::new(Shared::default());
    let (requests, rx) = mpsc::channel();
    let thread = {
        let shared = Arc::clone(&shared);
        let storage = storage.clone();
        std::thread::Builder::new()
            .name("thund-event-log".into())
            .spawn({
                let run_id = run.run_id.clone();
                move || write_loop(&storage, &shared, &rx, retention, &run_id)
            })
            .map_err(|e| NativeError::Execution(format!("cannot start the event log's writer: {e}")))?
    };
    let log = StoredEventLog {
        shared,
        writer: Mutex::new(Some(Writer { requests, thread })),
        flows,
        pipeline: p.name.clone(),
        run_id: run.run_id.clone(),
        backend: run.capabilities.name.clone(),
        sequence: AtomicI64::new(0),
    };
    log.definitions(run);
    Ok(log)
}

/// How long the events of `p` are kept (`thund.eventLog.retentionDays`).
pub fn retention(p: &Pipeline) -> Result<Duration> {
    let days = match p.configuration.get(RETENTION_KEY) {
        None => DEFAULT_RETENTION_DAYS,
        Some(v) => v.trim().parse::<u64>().ok().filter(|d| *d <= 36_500).ok_or_else(|| {
            NativeError::Storage(format!(
                "configuration `{RETENTION_KEY}: {v}` must be a whole number of days (0 to 36500)"
            ))
        })?,
    };
    Ok(Duration::from_secs(days * 86_400))
}

impl StoredEventLog {
    /// Commits what is queued, stops the writer thread (compacting the table if it has grown)
    /// and returns every problem the log had, for the run's summary.
    pub fn close(&self) -> Vec<String> {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = writer {
            drop(w.requests);
            if w.thread.join().is_err() {
                self.shared.warn("the event log's writer stopped unexpectedly".into());
            }
        }
        self.shared.warnings.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    fn queue(&self, e: LoggedEvent) {
        self.shared.queued.lock().unwrap_or_else(|e| e.into_inner()).push(e);
    }

    fn event(&self, timestamp: SystemTime, event_type: &str, level: &str, message: String) -> LoggedEvent {
        LoggedEvent {
            id: uuid::Uuid::new_v4().to_string(),
            sequence: self.sequence.fetch_add(1, Ordering::SeqCst),
            origin: Origin {
                pipeline_name: self.pipeline.clone(),
                update_id: self.run_id.clone(),
                backend: self.backend.clone(),
                ..Origin::default()
            },
            timestamp: rfc3339(timestamp),
            message,
            level: level.into(),
            maturity_level: "STABLE".into(),
            error: None,
            details: Value::Null,
            event_type: event_type.into(),
        }
    }

    /// The run's `create_update` event and each flow's `flow_definition`.
    fn definitions(&self, run: &PreparedRun) {
        let now = SystemTime::now();
        let p = &run.pipeline;
        let sel = &run.options.selection;
        let mut e = self.event(
            now,
            "create_update",
            "INFO",
            format!("Update {} of pipeline `{}` started on {}.", run.run_id, p.name, self.backend),
        );
        e.details = json!({"create_update": {
            "cause": "USER_ACTION",
            "full_refresh": sel.full_refresh_all,
            "refresh_selection": sel.refresh,
            "full_refresh_selection": sel.full_refresh,
        }});
        self.queue(e);
        for f in &p.flows {
            let Some(d) = p.dataset(&f.target) else { continue };
            let inputs: Vec<String> = f
                .query()
                .reads
                .iter()
                .map(|r| match r {
                    Read::Dataset { name, .. } => name.to_string(),
                    Read::Files(files) => files.path.clone(),
                })
                .collect();
            let mut e = self.event(now, "flow_definition", "INFO", format!("Flow '{}' is defined.", f.name));
            e.origin.flow_name = Some(f.name.to_string());
            e.origin.dataset_name = Some(f.target.to_string());
            e.origin.source_code_location = Some(f.location.to_string());
            e.details = json!({"flow_definition": {
                "output_dataset": f.target.to_string(),
                "output_dataset_type": d.kind.to_string(),
                "input_datasets": inputs,
                "flow_type": f.kind.label(),
                "selected": run.plan.is_selected(&f.target),
            }});
            self.queue(e);
        }
    }

    fn row(&self, e: &RunEvent) -> LoggedEvent {
        let phase = e.phase.map(RunPhase::as_str);
        // The run's own events have no flow; an element that is no flow of the pipeline (a view
        // Spark reports) keeps its name without a dataset.
        let flow = match self.flows.get(&e.element.to_lowercase()) {
            _ if e.element == "run" => None,
            Some((flow, target, location)) => Some((flow.clone(), Some(target.clone()), Some(location.clone()))),
            None => Some((e.element.clone(), None, None)),
        };
        let failed = e.phase == Some(RunPhase::Failed);
        let level = match e.phase {
            Some(RunPhase::Failed) => "ERROR",
            Some(RunPhase::Skipped | RunPhase::Stopped) => "WARN",
            _ if e.details.warning.is_some() => "WARN",
            _ if flow.is_some() && e.details.rows_written.is_some() => "METRICS",
            _ => "INFO",
        };
        let planning = e.details.planning_information.as_ref().filter(|_| flow.is_some());
        let event_type = match (&flow, planning) {
            (Some(_), Some(_)) => "planning_information",
            (Some(_), None) => "flow_progress",
            (None, _) => "update_progress",
        };
        let mut row = self.event(e.timestamp, event_type, level, e.message.clone());
        row.error = e.details.error.clone().filter(|_| failed || e.details.error.is_some());
        row.details = match flow {
            Some((name, target, location)) => {
                row.origin.flow_name = Some(name);
                row.origin.dataset_name = target;
                row.origin.source_code_location = e.details.location.clone().or(location);
                match planning {
                    Some(info) => json!({ "planning_information": info }),
                    None => json!({"flow_progress": flow_progress(phase, &e.details)}),
                }
            }
            None => json!({"update_progress": {"state": phase}}),
        };
        row
    }
}

/// `details.flow_progress`, shaped like DLT's.
fn flow_progress(status: Option<&str>, d: &EventDetails) -> Value {
    let mut progress = serde_json::Map::new();
    progress.insert("status".into(), json!(status));
    if d.rows_written.is_some() || d.num_rows_dropped_by_watermark.is_some() {
        let mut metrics = serde_json::Map::new();
        if let Some(n) = d.rows_written {
            metrics.insert("num_output_rows".into(), json!(n));
        }
        if let Some(n) = d.num_rows_dropped_by_watermark {
            metrics.insert("num_rows_dropped_by_watermark".into(), json!(n));
        }
        progress.insert("metrics".into(), Value::Object(metrics));
    }
    if let Some(ms) = d.duration_ms {
        progress.insert("duration_ms".into(), json!(ms));
    }
    if let Some(dq) = &d.data_quality {
        let expectations: Vec<Value> = dq
            .expectations
            .iter()
            .map(|x| {
                json!({"name": x.name, "dataset": x.dataset, "passed_records": x.passed_records,
                       "failed_records": x.failed_records})
            })
            .collect();
        progress.insert(
            "data_quality".into(),
            json!({"dropped_records": dq.dropped_records, "expectations": expectations}),
        );
    }
    Value::Object(progress)
}

impl EventLog for StoredEventLog {
    fn append(&self, event: &RunEvent) {
        let row = self.row(event);
        self.queue(row);
    }

    fn flush(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        let requests = self.writer.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map(|w| w.requests.clone());
        Box::pin(async move {
            let Some(requests) = requests else { return };
            let (done, wait) = mpsc::channel();
            if requests.send(done).is_ok() {
                // The writer answers once it has committed; waiting on a blocking thread keeps
                // the run's runtime free meanwhile.
                let _ = tokio::task::spawn_blocking(move || wait.recv()).await;
            }
        })
    }
}

impl Drop for StoredEventLog {
    fn drop(&mut self) {
        let warnings = self.close();
        for w in warnings {
            tracing::warn!("{w}");
        }
    }
}

/// The writer thread: commits what is queued every [`FLUSH_EVERY`] and on request, then once
/// more and a compaction when the log is closed.
fn write_loop(
    storage: &Storage,
    shared: &Shared,
    requests: &mpsc::Receiver<mpsc::Sender<()>>,
    retention: Duration,
    run_id: &str,
) {
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => return shared.warn(format!("the event log was not written: no runtime: {e}")),
    };
    let mut table: Option<DeltaTable> = None;
    let key = storage.event_log_key();
    let commit = |table: &mut Option<DeltaTable>| {
        let rows = std::mem::take(&mut *shared.queued.lock().unwrap_or_else(|e| e.into_inner()));
        if rows.is_empty() {
            return;
        }
        let n = rows.len();
        match runtime.block_on(append(storage, &key, table.take(), &rows)) {
            Ok(t) => *table = Some(t),
            Err(e) => {
                shared.warn(format!("{n} events could not be written to the event log {}: {e}", storage.display(&key)))
            }
        }
    };
    loop {
        match requests.recv_timeout(FLUSH_EVERY) {
            Ok(done) => {
                commit(&mut table);
                let _ = done.send(());
            }
            Err(RecvTimeoutError::Timeout) => commit(&mut table),
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    commit(&mut table);
    if let Some(t) = table {
        if let Err(e) = runtime.block_on(compact(t, retention, run_id)) {
            shared.warn(format!("the event log {} could not be compacted: {e}", storage.display(&key)));
        }
    }
}

/// Appends `rows` in one commit, creating the table with the first.
async fn append(storage: &Storage, key: &str, table: Option<DeltaTable>, rows: &[LoggedEvent]) -> Result<DeltaTable> {
    crate::failpoint::hit("event-log-append", "event_log")?;
    let batch = to_batch(rows)?;
    if let Some(dir) = storage.local_root().map(|r| r.join(key)) {
        std::fs::create_dir_all(&dir).map_err(|e| NativeError::io(&dir, e))?;
    }
    let (table, created) = match table {
        Some(t) => (t, false),
        None => match open_log(storage).await? {
            Some(t) => (t, false),
            None => (deltalake::DeltaTableBuilder::from_url(storage.event_log_url())?.build()?, true),
        },
    };
    let mut write = table.write(vec![batch]).with_save_mode(SaveMode::Append);
    if created {
        write = write.with_table_name("event_log").with_configuration([
            // Compaction replaces the files; readers that loaded the table before keep a day.
            ("delta.deletedFileRetentionDuration", Some("interval 1 day")),
            ("delta.logRetentionDuration", Some("interval 7 days")),
            ("delta.checkpointInterval", Some("50")),
        ]);
    }
    Ok(write.with_writer_properties(crate::delta::write::writer_properties()).await?)
}

/// Ends, in the log under `storage`, the run `gone` that held the run lock and never released it
/// (killed, or its machine stopped): its `update_progress` becomes FAILED, marked `interrupted`,
/// so it does not stay RUNNING forever. Found by the run `by` when it took the lock.
pub(crate) fn end_interrupted(storage: &Storage, pipeline: &str, gone: &LockedRun, by: &str) -> Result<()> {
    let why = "interrupted: the run's process ended before the run did (killed, or its machine stopped)";
    let row = LoggedEvent {
        id: uuid::Uuid::new_v4().to_string(),
        // After whatever the run logged before it stopped.
        sequence: i64::MAX,
        origin: Origin {
            pipeline_name: pipeline.to_string(),
            update_id: gone.id.clone(),
            backend: gone.backend.clone(),
            ..Origin::default()
        },
        timestamp: rfc3339(SystemTime::now()),
        message: format!("Run {} was interrupted; run {by} found it so when it started.", gone.id),
        level: "ERROR".into(),
        maturity_level: "STABLE".into(),
        error: Some(why.into()),
        details: json!({"update_progress": {"state": "FAILED", "interrupted": true}}),
        event_type: "update_progress".into(),
    };
    crate::delta::storage::block_on_own_thread("end the interrupted run in the event log", async {
        // A log that was never written holds nothing of that run to end.
        let Some(table) = open_log(storage).await? else { return Ok(()) };
        append(storage, &storage.event_log_key(), Some(table), &[row]).await.map(|_| ())
    })
}

/// Rewrites the table as one file of the events younger than `retention` (and those of the
/// current run `run_id`, whatever the retention) once it has more than [`COMPACT_AFTER_FILES`]
/// files or a file written before the retention, then vacuums what is past the table's file
/// retention. So no event outlives twice the retention.
async fn compact(table: DeltaTable, retention: Duration, run_id: &str) -> Result<()> {
    let cutoff = SystemTime::now().checked_sub(retention).unwrap_or(UNIX_EPOCH);
    let cutoff_micros = cutoff.duration_since(UNIX_EPOCH).unwrap_or_default().as_micros() as i64;
    let log = table.snapshot()?.log_data();
    // A file written before the cutoff holds only expired events.
    let expired = log.iter().any(|f| f.modification_time() * 1000 < cutoff_micros);
    if log.num_files() <= COMPACT_AFTER_FILES && !expired {
        return Ok(());
    }
    let kept: Vec<LoggedEvent> = read_table(&table)
        .await?
        .into_iter()
        .filter(|e| e.origin.update_id == run_id || micros(&e.timestamp) >= cutoff_micros)
        .collect();
    let batches =
        if kept.is_empty() { vec![arrow::array::RecordBatch::new_empty(schema())] } else { vec![to_batch(&kept)?] };
    // A run appending meanwhile makes this commit conflict and fail: its events are kept, the
    // compaction waits for the next run.
    let table = table
        .write(batches)
        .with_save_mode(SaveMode::Overwrite)
        .with_writer_properties(crate::delta::write::writer_properties())
        .await?;
    table.vacuum().with_mode(deltalake::operations::vacuum::VacuumMode::Full).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_through_microseconds() {
        for t in ["1970-01-01T00:00:00.000Z", "2026-11-29T23:40:03.123Z", "2000-02-29T12:00:59.999Z"] {
            let micros = micros(t);
            assert_eq!(rfc3339(UNIX_EPOCH + Duration::from_micros(micros as u64)), t);
        }
        assert_eq!(micros("2026-11-29T23:40:03.123Z"), 1_795_995_603_123_000);
        assert_eq!(super::table::rfc3339_micros(1_795_995_603_123_456), "2026-11-29T23:40:03.123456Z");
        assert_eq!(micros("garbage"), 0);
    }
}
