//! The event log: every event of a run, one JSON object per line, at
//! `<storage>/events/<run id>.jsonl` (`Storage::events_key`) — for runs of either backend: the
//! native backend writes it for its own runs, and the CLI attaches it to Spark runs, so
//! `thund events` shows both.
//!
//! ```text
//! {"timestamp", "run_id", "level": INFO|WARN|ERROR, "event_type": flow_progress|update_progress,
//!  "dataset", "flow", "phase", "message", "details": {rows_written, duration_ms, error, …}}
//! ```
//!
//! On a local root each line is written and flushed as it happens, so even a killed run leaves its
//! log. An object (S3) is written whole, so there the log is rewritten on each
//! [`EventLog::flush`]: after each stage of a native run and at the end of every run.

use std::collections::BTreeMap;
use std::fs::File;
use std::future::Future;
use std::io::{BufWriter, Write};
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use knut_thund::backend::{rfc3339, EventLog, RunEvent, RunPhase};
use knut_thund::ir::Pipeline;
use knut_thund::prepare::PreparedRun;
use serde_json::json;

use crate::error::{NativeError, Result};
use crate::storage::Storage;

/// A run's event log under its pipeline's storage.
pub struct StoredEventLog {
    storage: Storage,
    key: String,
    run_id: String,
    /// Each flow's name, lower-cased as Spark prints it, to its name and target.
    flows: BTreeMap<String, (String, String)>,
    lines: Mutex<Lines>,
}

/// Where the lines go.
enum Lines {
    /// A local file, appended to as events happen.
    File(BufWriter<File>),
    /// An object, written whole by each flush.
    Object(Vec<u8>),
}

/// The event log of `run`, under its pipeline's storage.
pub fn open(run: &PreparedRun) -> Result<Arc<dyn EventLog>> {
    Ok(Arc::new(open_in(&Storage::of(&run.pipeline)?, run)?))
}

/// The event log of `run` in `storage`.
pub(crate) fn open_in(storage: &Storage, run: &PreparedRun) -> Result<StoredEventLog> {
    let key = storage.events_key(&run.run_id);
    let lines = match storage.local_root() {
        Some(root) => {
            let path = root.join(&key);
            let dir = path.parent().unwrap_or(root);
            std::fs::create_dir_all(dir).map_err(|e| NativeError::io(dir, e))?;
            Lines::File(BufWriter::new(File::create(&path).map_err(|e| NativeError::io(&path, e))?))
        }
        None => Lines::Object(Vec::new()),
    };
    let flows = run
        .pipeline
        .flows
        .iter()
        .map(|f| (f.name.to_string().to_lowercase(), (f.name.to_string(), f.target.to_string())))
        .collect();
    Ok(StoredEventLog { storage: storage.clone(), key, run_id: run.run_id.clone(), flows, lines: Mutex::new(lines) })
}

impl StoredEventLog {
    fn line(&self, e: &RunEvent) -> serde_json::Value {
        let level = match e.phase {
            Some(RunPhase::Failed) => "ERROR",
            Some(RunPhase::Skipped | RunPhase::Stopped) => "WARN",
            _ => "INFO",
        };
        // The run's own events have no flow; an element that is no flow of the pipeline (a view
        // Spark reports) keeps its name without a dataset.
        let (flow, dataset) = match self.flows.get(&e.element.to_lowercase()) {
            _ if e.element == "run" => (None, None),
            Some((flow, target)) => (Some(flow.clone()), Some(target.clone())),
            None => (Some(e.element.clone()), None),
        };
        json!({
            "timestamp": rfc3339(e.timestamp),
            "run_id": self.run_id,
            "level": level,
            "event_type": if flow.is_some() { "flow_progress" } else { "update_progress" },
            "dataset": dataset,
            "flow": flow,
            "phase": e.phase.map(|p| p.as_str()),
            "message": e.message,
            "details": e.details,
        })
    }
}

impl EventLog for StoredEventLog {
    fn append(&self, event: &RunEvent) {
        let line = self.line(event);
        let Ok(mut lines) = self.lines.lock() else { return };
        let written = match &mut *lines {
            Lines::File(w) => writeln!(w, "{line}").and_then(|()| w.flush()),
            Lines::Object(buf) => writeln!(buf, "{line}"),
        };
        if let Err(e) = written {
            tracing::warn!(log = %self.storage.display(&self.key), error = %e, "an event could not be logged");
        }
    }

    fn flush(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>> {
        Box::pin(async move {
            let whole = match self.lines.lock() {
                Ok(lines) => match &*lines {
                    Lines::Object(buf) => Some(buf.clone()),
                    Lines::File(_) => None,
                },
                Err(_) => None,
            };
            if let Some(bytes) = whole {
                if let Err(e) = self.storage.put(&self.key, bytes).await {
                    tracing::warn!(error = %e, "the event log could not be written");
                }
            }
        })
    }
}

/// Ids of the runs of `p` with an event log, oldest first.
pub async fn runs(p: &Pipeline) -> Result<Vec<String>> {
    let storage = Storage::of(p)?;
    let mut runs: Vec<String> = storage
        .list("events")
        .await?
        .into_iter()
        .filter_map(|k| k.strip_prefix("events/")?.strip_suffix(".jsonl").map(str::to_string))
        .collect();
    runs.sort();
    Ok(runs)
}

/// The event log of run `id` of `p`, as written; `None` if there is none.
pub async fn read(p: &Pipeline, id: &str) -> Result<Option<String>> {
    let storage = Storage::of(p)?;
    let bytes = storage.get(&storage.events_key(id)).await?;
    Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned()))
}

/// Where the event logs of `p` are, for messages (`run` given: that run's log).
pub fn location(p: &Pipeline, run: Option<&str>) -> Result<String> {
    let storage = Storage::of(p)?;
    Ok(match run {
        Some(id) => storage.display(&storage.events_key(id)),
        None => storage.display("events"),
    })
}
