//! The backend contract: what a backend can run ([`Capabilities`]), refusing the rest up front
//! ([`ExecBackend::check`]), and the run it starts ([`RunHandle`] streaming [`RunEvent`]s).
//!
//! A backend rejects everything it cannot run *before* running anything, listing every gap with
//! the dataset and file:line that needs it — never a partial run that silently drops a rule.

use std::fmt;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::{CapabilityGap, Result, ThundError};
use crate::ir::{DatasetKind, FlowKind, OutputMode, Pipeline, Read};
use crate::plan::Selection;

/// What a backend can run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Capabilities {
    /// Backend name (`native`, `spark-connect-sdp`).
    pub name: String,
    /// Materialized views and batch reads.
    pub batch: bool,
    /// Streaming tables and `STREAM` reads.
    pub streaming: bool,
    /// `WATERMARK … DELAY OF INTERVAL …`.
    pub event_time: bool,
    /// AUTO CDC flows.
    pub cdc: bool,
    /// `CONSTRAINT … EXPECT`.
    pub expectations: bool,
    /// Output modes of streaming datasets.
    pub output_modes: Vec<OutputMode>,
    /// `CREATE SINK`.
    pub sinks: bool,
    /// Persistent `CREATE VIEW`.
    pub persistent_views: bool,
    /// File sources (`read_files`, `` fmt.`path` ``).
    pub file_sources: bool,
    /// `INSERT INTO ONCE` flows (a backfill run on the first update and on full refresh only).
    pub once_flows: bool,
}

impl Capabilities {
    /// Every feature `p` needs that these capabilities lack.
    pub fn gaps(&self, p: &Pipeline) -> Vec<CapabilityGap> {
        let mut gaps = Vec::new();
        let mut gap =
            |feature: &str, element: &dyn fmt::Display, location: &crate::ir::SourceLocation, detail: String| {
                gaps.push(CapabilityGap {
                    feature: feature.into(),
                    element: element.to_string(),
                    location: location.clone(),
                    detail,
                });
            };
        for d in &p.datasets {
            let needs_kind = match d.kind {
                DatasetKind::MaterializedView | DatasetKind::TemporaryView => (!self.batch).then_some("batch"),
                DatasetKind::StreamingTable => (!self.streaming).then_some("streaming"),
                DatasetKind::PersistentView => (!self.persistent_views).then_some("persistent views"),
                DatasetKind::Sink => (!self.sinks).then_some("sinks"),
            };
            if let Some(f) = needs_kind {
                gap(f, &d.name, &d.location, d.kind.to_string());
            }
            if !self.expectations {
                for e in &d.expectations {
                    gap(
                        "expectations",
                        &d.name,
                        &e.location,
                        format!("CONSTRAINT {} EXPECT ({})", e.name, e.predicate),
                    );
                }
            }
            if let Some(mode) = d.output_mode {
                if !self.output_modes.contains(&mode) {
                    gap("output modes", &d.name, &d.location, format!("output mode {mode}"));
                }
            }
        }
        for f in &p.flows {
            match f.kind {
                FlowKind::AutoCdc(_) if !self.cdc => gap("CDC", &f.name, &f.location, "AUTO CDC flow".into()),
                FlowKind::Once { .. } if !self.once_flows => {
                    gap("once flows", &f.name, &f.location, "INSERT INTO ONCE flow".into())
                }
                _ => {}
            }
            let q = f.query();
            if let Some(et) = &q.event_time {
                if !self.event_time {
                    gap(
                        "event time",
                        &f.name,
                        &et.location,
                        format!("WATERMARK {} DELAY OF INTERVAL {}", et.column, et.delay),
                    );
                }
            }
            for r in &q.reads {
                match r {
                    Read::Dataset { streaming: true, location, name } if !self.streaming => {
                        gap("streaming", &f.name, location, format!("STREAM({name})"));
                    }
                    Read::Files(fs) if !self.file_sources => {
                        gap("file sources", &f.name, &fs.location, format!("{} files at {}", fs.format, fs.path));
                    }
                    Read::Files(fs) if fs.streaming && !self.streaming => {
                        gap("streaming", &f.name, &fs.location, format!("STREAM read_files('{}')", fs.path));
                    }
                    _ => {}
                }
            }
        }
        gaps
    }
}

/// Name of the Spark Connect backend.
pub const SPARK_BACKEND_NAME: &str = "spark-connect-sdp";

/// What the Spark Connect backend can run on a server of `version` (e.g. `4.1.4`), from the
/// per-version facts table. `None` for servers without the pipelines service (before 4.1).
pub fn spark_capabilities(version: &str) -> Option<Capabilities> {
    let facts = knut_pipelines::versions::facts_for(version)?;
    Some(Capabilities {
        name: format!("{SPARK_BACKEND_NAME} (Spark {version})"),
        batch: true,
        streaming: true,
        // Watermarks work through SQL on 4.1, but windowed output is not yet checked against
        // our semantics: refused until it is.
        event_time: false,
        cdc: facts.auto_cdc,
        expectations: facts.expectations,
        output_modes: vec![OutputMode::Append],
        sinks: facts.sink_output,
        persistent_views: facts.sql_graph_elements,
        file_sources: true,
        once_flows: facts.once_flows,
    })
}

/// Refuses, all at once, what Spark with `caps` cannot run: capability gaps plus the lowering's
/// own limits ([`Pipeline::sdp_gaps`]).
pub fn spark_refusals(caps: Capabilities, p: &Pipeline) -> Result<()> {
    let mut gaps = caps.gaps(p);
    gaps.extend(p.sdp_gaps());
    if gaps.is_empty() {
        Ok(())
    } else {
        Err(ThundError::Unsupported { backend: caps.name, gaps })
    }
}

/// Refuses, without a server, what no targeted Spark line can run (checked against the newest
/// line's facts: whatever it cannot do, no server can).
pub fn spark_check_any_version(p: &Pipeline) -> Result<()> {
    let newest = knut_pipelines::versions::SERVER_FACTS.last().map(|f| format!("{}.0", f.line));
    match newest.as_deref().and_then(spark_capabilities) {
        Some(caps) => spark_refusals(Capabilities { name: SPARK_BACKEND_NAME.into(), ..caps }, p),
        None => Err(ThundError::Internal("no Spark server facts".into())),
    }
}

/// How a run was asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Refresh selection.
    pub selection: Selection,
    /// Validate and plan only; write nothing.
    pub dry: bool,
    /// Flows run at once (0: one per core).
    pub max_concurrent_flows: usize,
}

/// Lifecycle phases of a flow or a run, as SDP names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum RunPhase {
    /// Waiting for its inputs.
    Queued,
    /// Being planned.
    Planning,
    /// Starting.
    Starting,
    /// Writing rows.
    Running,
    /// Done.
    Completed,
    /// Failed itself.
    Failed,
    /// Not run because something upstream failed.
    Skipped,
    /// Not selected for this run.
    Excluded,
    /// Stopped by a cancel.
    Stopped,
    /// Nothing to do (a streaming flow with no new input).
    Idle,
}

impl RunPhase {
    /// All phases, for parsing.
    pub const ALL: [RunPhase; 10] = [
        RunPhase::Queued,
        RunPhase::Planning,
        RunPhase::Starting,
        RunPhase::Running,
        RunPhase::Completed,
        RunPhase::Failed,
        RunPhase::Skipped,
        RunPhase::Excluded,
        RunPhase::Stopped,
        RunPhase::Idle,
    ];

    /// The upper-case name SDP prints.
    pub fn as_str(self) -> &'static str {
        match self {
            RunPhase::Queued => "QUEUED",
            RunPhase::Planning => "PLANNING",
            RunPhase::Starting => "STARTING",
            RunPhase::Running => "RUNNING",
            RunPhase::Completed => "COMPLETED",
            RunPhase::Failed => "FAILED",
            RunPhase::Skipped => "SKIPPED",
            RunPhase::Excluded => "EXCLUDED",
            RunPhase::Stopped => "STOPPED",
            RunPhase::Idle => "IDLE",
        }
    }

    /// The phase an SDP event message states ("Flow x is RUNNING.", "Flow x has COMPLETED.").
    pub fn parse_message(message: &str) -> Option<RunPhase> {
        // The state is the last upper-case word of the sentence; a flow name may itself contain
        // a phase word, so read from the end.
        message
            .split(|c: char| !c.is_ascii_alphabetic())
            .rev()
            .find_map(|w| RunPhase::ALL.into_iter().find(|p| p.as_str() == w))
    }

    /// Whether the phase ends a flow.
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            RunPhase::Completed
                | RunPhase::Failed
                | RunPhase::Skipped
                | RunPhase::Excluded
                | RunPhase::Stopped
                | RunPhase::Idle
        )
    }
}

impl fmt::Display for RunPhase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Numbers attached to an event.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventDetails {
    /// Rows written by the flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rows_written: Option<u64>,
    /// Wall time of the flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub duration_ms: Option<u64>,
    /// The error of a failed flow.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Where the flow is defined (`file:line:col`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Expectation metrics of the rows the flow processed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data_quality: Option<DataQuality>,
}

/// Expectation metrics of one flow, shaped like DLT's event log
/// (`details.flow_progress.data_quality`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DataQuality {
    /// One entry per expectation.
    pub expectations: Vec<ExpectationMetrics>,
    /// Rows removed by `ON VIOLATION DROP ROW` rules.
    pub dropped_records: u64,
}

/// Counts of one expectation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExpectationMetrics {
    /// The constraint's name.
    pub name: String,
    /// The dataset it is declared on.
    pub dataset: String,
    /// What a violation does.
    pub action: crate::ir::ViolationAction,
    /// Rows that satisfied the predicate.
    pub passed_records: u64,
    /// Rows that did not (false or NULL).
    pub failed_records: u64,
}

/// One event of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// When it happened.
    pub timestamp: SystemTime,
    /// The flow or dataset it is about (`run` for the run itself).
    pub element: String,
    /// The message as shown to users (SDP's raw text on Spark).
    pub message: String,
    /// The phase it reports, when it reports one.
    pub phase: Option<RunPhase>,
    /// Numbers and errors.
    #[serde(default)]
    pub details: EventDetails,
}

impl RunEvent {
    /// An event stamped now.
    pub fn now(element: impl Into<String>, phase: Option<RunPhase>, message: impl Into<String>) -> Self {
        RunEvent {
            timestamp: SystemTime::now(),
            element: element.into(),
            message: message.into(),
            phase,
            details: EventDetails::default(),
        }
    }
}

/// The end of a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct RunSummary {
    /// Per-flow final phase, rows written and duration.
    pub flows: Vec<FlowOutcome>,
}

/// How one flow ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowOutcome {
    /// Flow name.
    pub flow: String,
    /// Target dataset.
    pub target: String,
    /// Final phase.
    pub phase: RunPhase,
    /// Rows written.
    pub rows_written: u64,
    /// Wall time.
    pub duration: Duration,
    /// Error of a failed flow.
    pub error: Option<String>,
    /// Expectation metrics, for flows into datasets with expectations.
    pub data_quality: Option<DataQuality>,
}

impl RunSummary {
    /// Whether any flow failed (the run exits 1).
    pub fn failed(&self) -> bool {
        self.flows.iter().any(|f| f.phase == RunPhase::Failed)
    }
}

/// A run in progress.
pub trait RunHandle: Send {
    /// Blocks until the next events arrive; `None` once the run has ended and all its events were
    /// returned.
    fn poll_events(&mut self) -> Option<Vec<RunEvent>>;
    /// Asks the run to stop; flows not yet finished end STOPPED and tables keep their last commit.
    fn cancel(&self);
    /// Waits for the end of the run (draining events) and returns its summary.
    fn finish(self) -> Result<RunSummary>;
}

/// The event channel and thread of a run that executes on a thread of its own: backends' run
/// handles drain and join through it.
#[derive(Debug)]
pub struct RunThread {
    rx: std::sync::mpsc::Receiver<RunEvent>,
    thread: Option<std::thread::JoinHandle<RunSummary>>,
}

impl RunThread {
    /// Events arrive on `rx`; `thread` returns the summary.
    pub fn new(rx: std::sync::mpsc::Receiver<RunEvent>, thread: std::thread::JoinHandle<RunSummary>) -> Self {
        RunThread { rx, thread: Some(thread) }
    }

    /// [`RunHandle::poll_events`]: blocks for the next event, then takes every event queued.
    pub fn poll_events(&mut self) -> Option<Vec<RunEvent>> {
        let first = self.rx.recv().ok()?;
        let mut out = vec![first];
        out.extend(self.rx.try_iter());
        Some(out)
    }

    /// [`RunHandle::finish`]: drains the events and joins the thread.
    pub fn finish(mut self) -> Result<RunSummary> {
        while self.rx.recv().is_ok() {}
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(summary)) => Ok(summary),
            _ => Err(ThundError::Internal("the run thread panicked".into())),
        }
    }
}

/// A way to run pipelines.
pub trait ExecBackend {
    /// The run handle this backend returns.
    type Run: RunHandle;

    /// What this backend can run.
    fn capabilities(&self) -> Capabilities;

    /// Refuses, all at once, every feature of `p` that this backend lacks.
    fn check(&self, p: &Pipeline) -> Result<()> {
        let caps = self.capabilities();
        let gaps = caps.gaps(p);
        if gaps.is_empty() {
            Ok(())
        } else {
            Err(ThundError::Unsupported { backend: caps.name, gaps })
        }
    }

    /// Starts a run of `p` with `options`.
    fn run_with(&self, p: &Pipeline, options: &RunOptions) -> Result<Self::Run>;

    /// Starts a full update of every dataset.
    fn run(&self, p: &Pipeline) -> Result<Self::Run> {
        self.run_with(p, &RunOptions::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_phases_from_sdp_messages() {
        assert_eq!(RunPhase::parse_message("Flow spark_catalog.default.x is QUEUED."), Some(RunPhase::Queued));
        assert_eq!(RunPhase::parse_message("Flow spark_catalog.default.x has COMPLETED."), Some(RunPhase::Completed));
        assert_eq!(RunPhase::parse_message("Run is COMPLETED."), Some(RunPhase::Completed));
        assert_eq!(RunPhase::parse_message("Flow FAILED_jobs is RUNNING."), Some(RunPhase::Running));
        assert_eq!(RunPhase::parse_message("Starting run."), None);
    }
}

/// Formats a time as RFC 3339 in UTC with milliseconds (`2026-11-30T01:20:03.123Z`).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    // Civil-from-days (Howard Hinnant's algorithm), valid for the whole proleptic Gregorian range.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod time_tests {
    use super::*;

    #[test]
    fn formats_rfc3339() {
        assert_eq!(rfc3339(SystemTime::UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_795_995_603_123);
        assert_eq!(rfc3339(t), "2026-11-29T23:40:03.123Z");
    }
}
