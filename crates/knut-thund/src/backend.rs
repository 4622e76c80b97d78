//! The backend contract: what a backend can run ([`Capabilities`]), the run it starts from a
//! [`PreparedRun`](crate::prepare::PreparedRun) ([`ExecBackend`]), and the handle that streams the
//! run's [`RunEvent`]s ([`RunHandle`]).
//!
//! A backend rejects everything it cannot run *before* running anything, listing every gap with
//! the dataset and file:line that needs it — never a partial run that silently drops a rule. The
//! rejecting is done here, once, from the backend's [`Capabilities`]: backends describe what they
//! can do and receive runs that are already validated, planned and checked.

use std::collections::BTreeSet;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use crate::error::{CapabilityGap, Result, ThundError};
use crate::ir::{Feature, OutputMode, Pipeline};
use crate::plan::Selection;
use crate::prepare::{prepare_for, PreparedRun};

/// What a backend can run: a set of features, as delta-rs's protocol checker holds a table's.
/// What a pipeline needs minus what the backend has are its gaps, all refused at once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Capabilities {
    /// Backend name (`native`, `spark-connect-sdp`).
    pub name: String,
    /// What the backend runs: batch and streaming datasets, event time, AUTO CDC and its
    /// clauses, expectations, each output mode, sinks, … (every [`Feature`] but
    /// [`Feature::TransactionalTable`], which `transactional_tables` answers).
    pub features: BTreeSet<Feature>,
    /// Which streaming tables can take appends from several flows and AUTO CDC's merges.
    pub transactional_tables: TableFormats,
}

/// Which tables a backend stores transactionally (several writers' commits kept, MERGE).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum TableFormats {
    /// Every table, whatever its `USING` says (the native backend stores Delta tables).
    Every,
    /// Only tables declared `USING` one of these formats (lower-case).
    Only(Vec<String>),
}

impl TableFormats {
    fn covers(&self, format: Option<&str>) -> bool {
        match self {
            TableFormats::Every => true,
            TableFormats::Only(formats) => format.is_some_and(|f| formats.iter().any(|t| t.eq_ignore_ascii_case(f))),
        }
    }
}

impl Capabilities {
    /// A backend called `name` that can run nothing; backends list what they add to it.
    pub fn none(name: impl Into<String>) -> Self {
        Capabilities {
            name: name.into(),
            features: BTreeSet::new(),
            transactional_tables: TableFormats::Only(Vec::new()),
        }
    }

    /// These capabilities and `features` too.
    pub fn with(mut self, features: impl IntoIterator<Item = Feature>) -> Self {
        self.features.extend(features);
        self
    }

    /// These capabilities without `feature`.
    pub fn without(mut self, feature: &Feature) -> Self {
        self.features.remove(feature);
        self
    }

    /// Whether the backend lists `feature`.
    pub fn has(&self, feature: &Feature) -> bool {
        self.features.contains(feature)
    }

    /// The output modes the backend runs streaming datasets in.
    pub fn output_modes(&self) -> impl Iterator<Item = OutputMode> + '_ {
        self.features.iter().filter_map(|f| match f {
            Feature::OutputMode(m) => Some(*m),
            _ => None,
        })
    }

    /// Refuses, all at once, every feature of `p` these capabilities lack.
    pub fn check(&self, p: &Pipeline) -> Result<()> {
        let gaps = self.gaps(p);
        if gaps.is_empty() {
            Ok(())
        } else {
            Err(ThundError::Unsupported { backend: self.name.clone(), gaps })
        }
    }

    /// Every feature `p` needs that these capabilities lack: what it needs minus what the
    /// backend has.
    pub fn gaps(&self, p: &Pipeline) -> Vec<CapabilityGap> {
        let formats = match &self.transactional_tables {
            TableFormats::Only(f) if !f.is_empty() => f.join(" or "),
            TableFormats::Only(_) | TableFormats::Every => "a transactional format".into(),
        };
        p.needs()
            .into_iter()
            .filter(|n| !self.supports(&n.feature))
            .map(|n| CapabilityGap {
                feature: n.feature.name().into(),
                element: n.element,
                location: n.location,
                detail: n.detail.replace("{backend}", &self.name).replace("{formats}", &formats),
            })
            .collect()
    }

    /// Whether a backend with these capabilities runs what needs `feature`.
    pub fn supports(&self, feature: &Feature) -> bool {
        match feature {
            Feature::TransactionalTable { format, .. } => self.transactional_tables.covers(format.as_deref()),
            // Without AUTO CDC the flow itself is the gap; its clauses are not named again.
            Feature::CdcHistory | Feature::CdcIgnoreNullUpdates | Feature::CdcTruncates if !self.has(&Feature::Cdc) => {
                true
            }
            other => self.has(other),
        }
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
    /// Input rows (one per window they fell in) dropped because their window had already closed
    /// when they arrived: Spark's `numRowsDroppedByWatermark`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_rows_dropped_by_watermark: Option<u64>,
    /// A warning about the flow (its table's stored schema no longer matches its definition).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warning: Option<String>,
    /// How a materialized view's refresh was planned: the techniques considered, the one chosen
    /// and what kept the others from applying.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub planning_information: Option<PlanningInformation>,
}

/// How one refresh of a materialized view was planned, shaped like DLT's `planning_information`
/// event (`details.planning_information`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanningInformation {
    /// The view's `REFRESH POLICY` (`AUTO` unless it declares one).
    pub refresh_policy: String,
    /// Each technique considered, in the order they were tried.
    pub technique_information: Vec<TechniqueInformation>,
}

impl PlanningInformation {
    /// The technique chosen.
    pub fn chosen(&self) -> Option<&TechniqueInformation> {
        self.technique_information.iter().find(|t| t.is_chosen)
    }
}

/// One technique considered for a refresh.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TechniqueInformation {
    /// `MAINTENANCE_TYPE_NO_OP`, `MAINTENANCE_TYPE_GROUP_AGGREGATE`,
    /// `MAINTENANCE_TYPE_COMPLETE_RECOMPUTE`, ….
    pub maintenance_type: String,
    /// Whether it gives the view's rows this time.
    pub is_applicable: bool,
    /// Whether it was the one used.
    pub is_chosen: bool,
    /// What kept it from applying (or, for the chosen one, what it had to work around).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub incrementalization_issues: Vec<IncrementalizationIssue>,
}

/// Why a technique did not apply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IncrementalizationIssue {
    /// `OPERATOR_NOT_INCREMENTALIZABLE`, `EXPRESSION_NOT_DETERMINISTIC`, `INPUT_NOT_IN_DELTA`, ….
    pub issue_type: String,
    /// Whether it rules the technique out.
    pub prevent_incrementalization: bool,
    /// What in the view's query or inputs it is about.
    pub detail: String,
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
    /// Why the run itself failed, outside any one flow: it could not start (a table that cannot
    /// be opened, a storage error), or the server ended it as failed or without its final state.
    pub error: Option<String>,
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
    /// Late input rows dropped by the watermark (see [`EventDetails`]).
    pub rows_dropped_by_watermark: u64,
    /// How a materialized view was refreshed (`no-op`, `group aggregate`, `complete recompute`).
    pub technique: Option<String>,
}

impl RunSummary {
    /// Whether the run or any flow failed (the run exits 1).
    pub fn failed(&self) -> bool {
        self.error.is_some() || self.flows.iter().any(|f| f.phase == RunPhase::Failed)
    }

    /// A run that failed before any flow ran.
    pub fn failed_with(error: impl Into<String>) -> Self {
        RunSummary { flows: Vec::new(), error: Some(error.into()) }
    }
}

/// A run in progress.
pub trait RunHandle: Send {
    /// Blocks until the next events arrive; `None` once the run has ended and all its events were
    /// returned.
    fn poll_events(&mut self) -> Option<Vec<RunEvent>>;
    /// Asks the run to stop; flows not yet finished end STOPPED and tables keep their last commit.
    fn cancel(&self);
    /// [`RunHandle::cancel`] as a function another thread can call while this one waits for
    /// events (a Ctrl-C handler).
    fn canceller(&self) -> Arc<dyn Fn() + Send + Sync>;
    /// Waits for the end of the run (draining events) and returns its summary.
    fn finish(self: Box<Self>) -> Result<RunSummary>;
}

/// Where a run's events are recorded besides the caller's channel (`<storage>/event_log`, written
/// by `thund-native` for runs of every backend).
pub trait EventLog: Send + Sync {
    /// Records one event (at once, or buffered until [`EventLog::flush`]).
    fn append(&self, event: &RunEvent);
    /// Makes every event appended so far durable. Failing to is logged, never fatal to the run.
    fn flush(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// How a backend emits a run's events: to the caller's [`RunHandle`] and to the run's event log.
#[derive(Clone)]
pub struct EventSender {
    tx: Sender<RunEvent>,
    log: Option<Arc<dyn EventLog>>,
}

impl EventSender {
    /// A sender whose events go to the returned receiver only (no event log): for driving a
    /// backend's pieces outside a run thread.
    pub fn channel() -> (EventSender, Receiver<RunEvent>) {
        let (tx, rx) = channel();
        (EventSender { tx, log: None }, rx)
    }

    /// Sends one event.
    pub fn emit(&self, event: RunEvent) {
        if let Some(log) = &self.log {
            log.append(&event);
        }
        let _ = self.tx.send(event);
    }

    /// Flushes the event log, if the run has one.
    pub async fn flush(&self) {
        if let Some(log) = &self.log {
            log.flush().await;
        }
    }
}

/// A run executing on a thread of its own: the [`RunHandle`] both backends return.
pub struct RunThread {
    rx: Receiver<RunEvent>,
    thread: Option<std::thread::JoinHandle<RunSummary>>,
    cancel: Arc<dyn Fn() + Send + Sync>,
}

impl RunThread {
    /// Starts `body` on a thread named `name`. It emits the run's events through the
    /// [`EventSender`] it is given (which also writes `log`) and returns the summary; `cancel`
    /// asks it to stop.
    pub fn spawn<F>(
        name: &str,
        log: Option<Arc<dyn EventLog>>,
        cancel: Box<dyn Fn() + Send + Sync>,
        body: F,
    ) -> Result<Box<dyn RunHandle>>
    where
        F: FnOnce(EventSender) -> RunSummary + Send + 'static,
    {
        let (tx, rx) = channel();
        let events = EventSender { tx, log };
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || body(events))
            .map_err(|e| ThundError::Backend(format!("cannot start the run thread: {e}")))?;
        Ok(Box::new(RunThread { rx, thread: Some(thread), cancel: Arc::from(cancel) }))
    }
}

impl RunHandle for RunThread {
    /// Blocks for the next event, then takes every event queued.
    fn poll_events(&mut self) -> Option<Vec<RunEvent>> {
        let first = self.rx.recv().ok()?;
        let mut out = vec![first];
        out.extend(self.rx.try_iter());
        Some(out)
    }

    fn cancel(&self) {
        (self.cancel)();
    }

    fn canceller(&self) -> Arc<dyn Fn() + Send + Sync> {
        Arc::clone(&self.cancel)
    }

    /// Drains the events and joins the thread.
    fn finish(mut self: Box<Self>) -> Result<RunSummary> {
        while self.rx.recv().is_ok() {}
        match self.thread.take().map(std::thread::JoinHandle::join) {
            Some(Ok(summary)) => Ok(summary),
            _ => Err(ThundError::Internal("the run thread panicked".into())),
        }
    }
}

/// A way to run pipelines. Object-safe: a caller holds a `Box<dyn ExecBackend>`.
///
/// A backend describes what it can run ([`ExecBackend::capabilities`]) and runs what it is given
/// ([`ExecBackend::start`]); validation, planning and refusing what it lacks happen before, once,
/// in [`crate::prepare`].
pub trait ExecBackend {
    /// What this backend can run, as far as it knows now (a server's version may narrow it once
    /// [`ExecBackend::connect`] has asked).
    fn capabilities(&self) -> Capabilities;

    /// Makes sure the backend can start runs, learning what it needs to know for
    /// [`ExecBackend::capabilities`] (a server's version). Nothing to do by default.
    fn connect(&self) -> Result<()> {
        Ok(())
    }

    /// Starts a prepared run.
    fn start(&self, run: PreparedRun) -> Result<Box<dyn RunHandle>>;

    /// Refuses, all at once, every feature of `p` that this backend lacks.
    fn check(&self, p: &Pipeline) -> Result<()> {
        self.capabilities().check(p)
    }

    /// Prepares `p` for this backend ([`prepare_for`]) and starts it.
    fn run_with(&self, p: &Pipeline, options: &RunOptions) -> Result<Box<dyn RunHandle>> {
        let run = prepare_for(self, p, options)?;
        self.start(run)
    }

    /// Starts a full update of every dataset.
    fn run(&self, p: &Pipeline) -> Result<Box<dyn RunHandle>> {
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
    format!(
        "{}T{:02}:{:02}:{:02}.{:03}Z",
        knut_pipelines::civil_date(days),
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
