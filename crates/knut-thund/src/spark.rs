//! The spark-connect-sdp backend: a thin adaptor that lowers the IR to an SDP dataflow graph,
//! defines it on a Spark Connect server, starts the run and folds the streamed event messages
//! into [`RunEvent`]s.
//!
//! ```text
//!  check (caps of the detected server version + lowering limits) → validate → plan (selection)
//!    → to_sdp() → DataflowGraph::validate() → define_graph → start_run ─events─▶ Folder → RunEvent
//! ```
//!
//! Spark's run events are plain sentences ("Flow spark_catalog.default.x is RUNNING."); the
//! folder parses the flow and the phase from the first line and keeps the raw text. A failed
//! flow's Spark error follows on later lines and is joined with the flow's file:line.

use std::collections::BTreeMap;
use std::sync::mpsc::{channel, Sender};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, SystemTime};

use arrow::record_batch::RecordBatch;
use knut_pipelines::{ClientError, ClientOptions, PipelineEvent, PipelineEventSink, PipelineRun, PipelinesClient};

use crate::backend::{
    spark_capabilities, spark_check_any_version, spark_refusals, Capabilities, ExecBackend, FlowOutcome, RunEvent,
    RunHandle, RunOptions, RunPhase, RunSummary, RunThread,
};
use crate::error::{Result, ThundError};
use crate::ir::{DatasetKind, Pipeline, QualifiedName, SourceLocation};

/// Version assumed before a server was asked: the oldest targeted line, so nothing is promised
/// that an old server cannot do.
const ASSUMED_VERSION: &str = "4.1.0";

/// Runs pipelines on a Spark Connect server with Spark Declarative Pipelines.
#[derive(Debug)]
pub struct SparkBackend {
    url: String,
    forced_version: Option<String>,
    detected: OnceLock<String>,
    options: ClientOptions,
}

impl SparkBackend {
    /// A backend for the server at `url` (`sc://host:port`). Nothing is contacted until a run,
    /// a query or [`SparkBackend::detect_version`].
    pub fn new(url: impl Into<String>) -> Self {
        SparkBackend {
            url: url.into(),
            forced_version: None,
            detected: OnceLock::new(),
            options: ClientOptions::default(),
        }
    }

    /// Treats the server as Spark 4.2 whatever it reports.
    pub fn spark_4_2(self) -> Self {
        self.with_version("4.2.0")
    }

    /// Treats the server as `version` whatever it reports.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.forced_version = Some(version.into());
        self
    }

    /// Connect and request timeouts.
    pub fn with_client_options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// The version capabilities are computed for: forced, detected, or the oldest target line.
    pub fn version(&self) -> &str {
        self.forced_version.as_deref().or(self.detected.get().map(String::as_str)).unwrap_or(ASSUMED_VERSION)
    }

    fn runtime() -> Result<tokio::runtime::Runtime> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ThundError::Backend(format!("cannot start the Spark client runtime: {e}")))
    }

    async fn connect(&self) -> Result<PipelinesClient> {
        let client = PipelinesClient::connect_with(&self.url, self.options).await.map_err(client_error)?;
        let _ = self.detected.set(client.version().to_string());
        Ok(client)
    }

    /// Connects, and returns the server's Spark version (capabilities follow it from then on).
    pub fn detect_version(&self) -> Result<String> {
        let rt = Self::runtime()?;
        let client = rt.block_on(self.connect())?;
        let version = client.version().to_string();
        let _ = rt.block_on(client.close());
        Ok(version)
    }

    /// Runs a SQL query on the server and returns its rows.
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        self.query_in(None, sql)
    }

    /// Runs a SQL query with unqualified names resolved in `namespace` (catalog, database).
    /// A query the server rejects is [`ThundError::Query`].
    pub fn query_in(&self, namespace: Option<(&str, &str)>, sql: &str) -> Result<Vec<RecordBatch>> {
        let rt = Self::runtime()?;
        rt.block_on(async {
            let mut client = self.connect().await?;
            let query_error = |e: ClientError| match e {
                ClientError::Server(s) => ThundError::Query(s.to_string()),
                other => client_error(other),
            };
            let mut rows = Ok(Vec::new());
            if let Some((catalog, database)) = namespace {
                // The database may not exist before the first run; then names stay unresolved
                // and the query's own error says so.
                let _ = client.sql(&format!("USE {}.{}", quote(catalog), quote(database))).await;
            }
            if rows.is_ok() {
                rows = client.sql(sql).await.map_err(query_error);
            }
            let _ = client.close().await;
            rows
        })
    }

    /// Where the server keeps checkpoints: the spec's `storage` as a URI, relative paths resolved
    /// against the project folder. `None`: the spec has none.
    fn storage_uri(p: &Pipeline) -> Option<String> {
        let s = p.storage.as_deref()?;
        if s.contains("://") {
            return Some(s.to_string());
        }
        let path = std::path::Path::new(s);
        let abs = if path.is_absolute() { path.to_path_buf() } else { p.root.join(path) };
        Some(format!("file://{}", abs.display()))
    }
}

/// A Spark identifier part, back-quoted unless plain.
fn quote(part: &str) -> String {
    let plain = part.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && part.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        part.to_string()
    } else {
        format!("`{}`", part.replace('`', "``"))
    }
}

fn client_error(e: ClientError) -> ThundError {
    match e {
        ClientError::Url { .. } => ThundError::Usage(e.to_string()),
        other => ThundError::Backend(other.to_string()),
    }
}

impl ExecBackend for SparkBackend {
    type Run = SparkRun;

    fn capabilities(&self) -> Capabilities {
        spark_capabilities(self.version()).unwrap_or_else(|| Capabilities {
            // A server older than 4.1 has no pipelines service: nothing runs there.
            name: format!("{} (Spark {}: no pipelines service)", crate::backend::SPARK_BACKEND_NAME, self.version()),
            batch: false,
            streaming: false,
            event_time: false,
            cdc: false,
            expectations: false,
            output_modes: vec![],
            sinks: false,
            persistent_views: false,
            file_sources: false,
            once_flows: false,
        })
    }

    fn check(&self, p: &Pipeline) -> Result<()> {
        spark_refusals(self.capabilities(), p)
    }

    fn run_with(&self, p: &Pipeline, options: &RunOptions) -> Result<SparkRun> {
        // Everything that needs no server first, so a bad pipeline never waits on a connect.
        // Capabilities depend on the server's version, so without a forced version the check
        // waits for the connect.
        // Until then, refuse what no targeted line can run (expectations, event time, …).
        match &self.forced_version {
            Some(_) => self.check(p)?,
            None => spark_check_any_version(p)?,
        }
        p.validate()?;
        let plan = crate::plan::plan(p, &options.selection)?;
        let graph = p.to_sdp();
        graph.validate().map_err(|e| ThundError::Internal(format!("lowering produced an invalid graph: {e}")))?;

        let rt = Self::runtime()?;
        let mut client = rt.block_on(self.connect())?;
        // Capabilities now follow the server's real version.
        self.check(p)?;

        let storage = Self::storage_uri(p);
        let selective = !options.selection.refresh.is_empty();
        let run = PipelineRun {
            graph_id: String::new(),
            full_refresh: plan.full_refresh.iter().map(ToString::to_string).collect(),
            full_refresh_all: options.selection.full_refresh_all,
            refresh: if selective { plan.selected.iter().map(ToString::to_string).collect() } else { vec![] },
            dry: options.dry || storage.is_none(),
            // The server wants a storage root even for a dry run, which writes nothing there.
            storage: storage.clone().or_else(|| Some(format!("file:///tmp/thund-dry-run-{}", client.session_id()))),
            tag: Some(format!("thund-run-{}", client.session_id())),
        };
        let (tx, rx) = channel();
        let mut folder = Folder::new(p, &plan.selected, tx);
        if storage.is_none() {
            folder.emit(RunEvent::now(
                "run",
                None,
                "the spec has no `storage`: this is a validate-only dry run on the server; nothing is written",
            ));
        }
        // The pipeline's database is created on a real run, as the native backend does; SDP
        // itself only creates tables.
        let create_db =
            (!run.dry).then(|| format!("CREATE DATABASE IF NOT EXISTS {}.{}", quote(&p.catalog), quote(&p.database)));
        let cancel = Arc::new(tokio::sync::Notify::new());
        let cancel_rx = cancel.clone();
        let thread = std::thread::Builder::new()
            .name("thund-spark-run".into())
            .spawn(move || {
                rt.block_on(async move {
                    folder.emit(RunEvent::now("run", None, format!("defining the dataflow graph on {}", client.url())));
                    // Session settings the server needs while it analyses definitions (not only
                    // during the run): streaming file sources without a declared schema.
                    for (k, v) in graph.sql_conf.iter().filter(|(k, _)| k.starts_with("spark.sql.streaming.")) {
                        if let Err(e) = client.sql(&format!("SET {k}={v}")).await {
                            return folder.finish(Err(e.to_string()), false);
                        }
                    }
                    if let Some(ddl) = create_db {
                        if let Err(e) = client.sql(&ddl).await {
                            return folder.finish(Err(e.to_string()), false);
                        }
                    }
                    let graph_id = match client.define_graph(&graph).await {
                        Ok(id) => id,
                        Err(e) => return folder.finish(Err(e.to_string()), false),
                    };
                    let run = PipelineRun { graph_id: graph_id.clone(), ..run };
                    let mut interrupter = client.clone();
                    let mut stopped = false;
                    let outcome = {
                        let running = client.start_run(&run, &mut folder);
                        tokio::pin!(running);
                        loop {
                            tokio::select! {
                                r = &mut running => break r,
                                _ = cancel_rx.notified(), if !stopped => {
                                    stopped = true;
                                    let _ = interrupter.interrupt_tag(run.tag.as_deref().unwrap_or_default()).await;
                                }
                            }
                        }
                    };
                    let _ = client.drop_graph(&graph_id).await;
                    let _ = client.close().await;
                    folder.finish(outcome.map_err(|e| e.to_string()), stopped)
                })
            })
            .map_err(|e| ThundError::Backend(format!("cannot start the run thread: {e}")))?;
        Ok(SparkRun { run: RunThread::new(rx, thread), cancel })
    }
}

/// A run on a Spark Connect server.
pub struct SparkRun {
    run: RunThread,
    cancel: Arc<tokio::sync::Notify>,
}

impl RunHandle for SparkRun {
    fn poll_events(&mut self) -> Option<Vec<RunEvent>> {
        self.run.poll_events()
    }

    fn cancel(&self) {
        self.cancel.notify_one();
    }

    fn finish(self) -> Result<RunSummary> {
        self.run.finish()
    }
}

/// One flow as the folder tracks it.
struct Tracked {
    flow: String,
    target: String,
    location: SourceLocation,
    selected: bool,
    phase: Option<RunPhase>,
    started: Option<SystemTime>,
    ended: Option<SystemTime>,
    error: Option<String>,
}

/// Folds Spark's event sentences into run events and the run's summary.
struct Folder {
    tx: Sender<RunEvent>,
    /// Keyed by the flow name as Spark prints it (lower-case, fully qualified).
    flows: BTreeMap<String, Tracked>,
}

/// What one event sentence says.
#[derive(Debug, PartialEq, Eq)]
struct Parsed {
    element: Option<String>,
    phase: Option<RunPhase>,
    error: Option<String>,
}

/// Parses an SDP event message. The first line carries the subject and the state; a failure's
/// error follows as `Error: …` lines. The state is only read from the first line, as error text
/// may contain any word.
fn parse_event(message: &str) -> Parsed {
    let (first, rest) = message.split_once('\n').unwrap_or((message, ""));
    let error = rest.trim();
    let error = (!error.is_empty()).then(|| error.strip_prefix("Error: ").unwrap_or(error).to_string());
    let quoted = || first.split('\'').nth(1).map(str::to_string);
    if first.starts_with("Failed to resolve flow due to upstream failure") {
        return Parsed { element: quoted(), phase: Some(RunPhase::Skipped), error };
    }
    if first.starts_with("Failed to resolve flow") {
        return Parsed { element: quoted(), phase: Some(RunPhase::Failed), error };
    }
    if let Some(rest) = first.strip_prefix("Flow ") {
        let name = match rest.strip_prefix('\'') {
            Some(r) => r.split('\'').next().map(str::to_string),
            None => rest.split_whitespace().next().map(str::to_string),
        };
        return Parsed { element: name, phase: RunPhase::parse_message(first), error };
    }
    if first.starts_with("Run ") {
        return Parsed { element: None, phase: RunPhase::parse_message(first), error };
    }
    Parsed { element: None, phase: None, error }
}

impl Folder {
    fn new(p: &Pipeline, selected: &std::collections::BTreeSet<QualifiedName>, tx: Sender<RunEvent>) -> Self {
        let kinds: BTreeMap<_, _> = p.datasets.iter().map(|d| (&d.name, d.kind)).collect();
        let flows = p
            .flows
            .iter()
            // Views have no run of their own on Spark (they are resolved into their readers).
            .filter(|f| !matches!(kinds.get(&f.target), Some(DatasetKind::TemporaryView | DatasetKind::PersistentView)))
            .map(|f| {
                let t = Tracked {
                    flow: f.name.to_string(),
                    target: f.target.to_string(),
                    location: f.location.clone(),
                    selected: selected.contains(&f.target),
                    phase: None,
                    started: None,
                    ended: None,
                    error: None,
                };
                (f.name.to_string().to_lowercase(), t)
            })
            .collect();
        Folder { tx, flows }
    }

    fn emit(&self, e: RunEvent) {
        let _ = self.tx.send(e);
    }

    /// Ends the run: flows the server never finished get an honest final phase, and the run's
    /// own outcome becomes the last event.
    fn finish(mut self, outcome: std::result::Result<(), String>, stopped: bool) -> RunSummary {
        let any_failed = self.flows.values().any(|t| t.phase == Some(RunPhase::Failed));
        let now = SystemTime::now();
        let mut late = Vec::new();
        for (key, t) in &mut self.flows {
            if t.phase.is_some_and(RunPhase::is_terminal) {
                continue;
            }
            let (phase, why) = match (&outcome, stopped) {
                (_, true) => (RunPhase::Stopped, "stopped by a cancel".to_string()),
                (Ok(()), _) if !t.selected => (RunPhase::Excluded, "not selected for this run".to_string()),
                (Ok(()), _) => (RunPhase::Idle, "the server reported no work for it".to_string()),
                (Err(_), _) if any_failed => (RunPhase::Skipped, "not run: other flows failed".to_string()),
                (Err(e), _) => (RunPhase::Failed, format!("the run ended before this flow finished: {e}")),
            };
            t.phase = Some(phase);
            t.ended = Some(now);
            if phase == RunPhase::Failed {
                t.error = Some(why.clone());
            }
            late.push((key.clone(), phase, why));
        }
        for (key, phase, why) in late {
            let t = &self.flows[&key];
            let mut e = RunEvent::now(&t.flow, Some(phase), format!("Flow {} is {phase}: {why}.", t.flow));
            e.details.error = t.error.clone();
            self.emit(e);
        }
        let summary = RunSummary {
            flows: self
                .flows
                .values()
                .map(|t| FlowOutcome {
                    flow: t.flow.clone(),
                    target: t.target.clone(),
                    phase: t.phase.unwrap_or(RunPhase::Completed),
                    // Spark's run events carry no row counts.
                    rows_written: 0,
                    duration: match (t.started, t.ended) {
                        (Some(s), Some(e)) => e.duration_since(s).unwrap_or_default(),
                        _ => Duration::ZERO,
                    },
                    error: t.error.clone(),
                    data_quality: None,
                })
                .collect(),
        };
        let end = match (&outcome, stopped) {
            (_, true) => RunEvent::now("run", Some(RunPhase::Stopped), "Run is STOPPED."),
            (Ok(()), _) if !summary.failed() => RunEvent::now("run", Some(RunPhase::Completed), "Run is COMPLETED."),
            (r, _) => {
                let mut e = RunEvent::now("run", Some(RunPhase::Failed), "Run has FAILED.");
                e.details.error = r.clone().err();
                e
            }
        };
        self.emit(end);
        summary
    }
}

impl PipelineEventSink for Folder {
    fn on_event(&mut self, event: PipelineEvent) {
        let parsed = parse_event(&event.message);
        let mut out = RunEvent {
            timestamp: event.timestamp,
            element: "run".into(),
            message: event.message.clone(),
            phase: parsed.phase,
            details: Default::default(),
        };
        if parsed.element.is_none() && parsed.phase.is_some() {
            // The server's own "Run is …" line: the run's outcome is emitted once, by `finish`.
            return;
        }
        if let Some(name) = parsed.element {
            let mut key = name.to_lowercase();
            if !self.flows.contains_key(&key) {
                // Explicit flows are defined under one-part names; Spark may print either form.
                if let Some(k) = self.flows.keys().find(|k| k.rsplit('.').next() == Some(key.as_str())) {
                    key = k.clone();
                }
            }
            let Some(t) = self.flows.get_mut(&key) else {
                // Internal flows (file-source views) and views: not the user's concern.
                if key.starts_with("__thund_") || key.contains(".__thund_") {
                    return;
                }
                out.element = name;
                self.emit(out);
                return;
            };
            out.element = t.flow.clone();
            if let Some(phase) = parsed.phase {
                if matches!(phase, RunPhase::Planning | RunPhase::Starting | RunPhase::Running) && t.started.is_none() {
                    t.started = Some(event.timestamp);
                }
                // A retried flow fails, then plans again: the last phase wins.
                t.phase = Some(phase);
                if phase.is_terminal() {
                    t.ended = Some(event.timestamp);
                    if let (Some(s), Some(e)) = (t.started, t.ended) {
                        out.details.duration_ms = e.duration_since(s).ok().map(|d| d.as_millis() as u64);
                    }
                }
                if phase == RunPhase::Failed {
                    t.error = parsed.error.clone().or_else(|| Some(event.message.clone()));
                    out.details.location = Some(t.location.to_string());
                    out.details.error = t.error.clone().map(|e| format!("{}: {e}", t.location));
                } else if phase != RunPhase::Skipped {
                    t.error = None;
                }
            }
        }
        self.emit(out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_event_sentences_of_spark_4_1() {
        let p = parse_event("Flow spark_catalog.default.ok1 is PLANNING.");
        assert_eq!(p.element.as_deref(), Some("spark_catalog.default.ok1"));
        assert_eq!(p.phase, Some(RunPhase::Planning));
        let p = parse_event(
            "Flow 'spark_catalog.default.bad2' has FAILED.\nError: [USER_RAISED_EXCEPTION] boom SQLSTATE: P0001",
        );
        assert_eq!(p.element.as_deref(), Some("spark_catalog.default.bad2"));
        assert_eq!(p.phase, Some(RunPhase::Failed));
        assert_eq!(p.error.as_deref(), Some("[USER_RAISED_EXCEPTION] boom SQLSTATE: P0001"));
        let p = parse_event("Flow 'spark_catalog.default.down2' SKIPPED due to upstream failure(s).");
        assert_eq!((p.element.as_deref(), p.phase), (Some("spark_catalog.default.down2"), Some(RunPhase::Skipped)));
        let p = parse_event("Failed to resolve flow: 'spark_catalog.default.bad'.\nError: [UNRESOLVED_COLUMN] x");
        assert_eq!((p.element.as_deref(), p.phase), (Some("spark_catalog.default.bad"), Some(RunPhase::Failed)));
        let p = parse_event("Failed to resolve flow due to upstream failure: 'spark_catalog.default.down'.");
        assert_eq!((p.element.as_deref(), p.phase), (Some("spark_catalog.default.down"), Some(RunPhase::Skipped)));
        let p = parse_event("Run is COMPLETED.");
        assert_eq!((p.element, p.phase), (None, Some(RunPhase::Completed)));
        // An error text with a phase word does not change the state.
        let p = parse_event("Flow x is RUNNING.\nError: the job FAILED");
        assert_eq!(p.phase, Some(RunPhase::Running));
    }
}
