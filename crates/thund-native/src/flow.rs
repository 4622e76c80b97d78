//! One flow's work, as the run order (`run`) hands it to the concern that does it (`refresh`,
//! `streaming`, `views`): what the work needs from its run ([`FlowJob`]), what it did
//! ([`FlowEffect`]), and the run's events as SDP words them ([`RunEvents`]); how long each step
//! of the work took is logged at debug level (`THUND_LOG=thund_native=debug`, [`Steps`]): where a
//! batch or a refresh spends its time, without a profiler.

use datafusion::prelude::SessionContext;
use knut_thund::backend::{EventDetails, EventSender, RunEvent, RunPhase};
use knut_thund::ir::{Dataset, Flow, Pipeline, QualifiedName};

use crate::delta::storage::Storage;

/// What a flow's work needs from its run.
pub(crate) struct FlowJob<'a> {
    /// The run's session: every dataset written so far is registered in it.
    pub ctx: &'a SessionContext,
    /// Where tables and state live.
    pub storage: &'a Storage,
    /// The whole pipeline (for reads through views, the project folder).
    pub pipeline: &'a Pipeline,
    /// The target.
    pub dataset: &'a Dataset,
    /// The flow.
    pub flow: &'a Flow,
    /// Whether this is a dry run: nothing is written.
    pub dry: bool,
    /// Whether the target is fully refreshed.
    pub full_refresh: bool,
    /// Where the flow's phases are reported.
    pub events: &'a RunEvents,
    /// How a materialized view was refreshed, for the run summary (set by `planned`).
    pub technique: std::sync::OnceLock<String>,
}

impl FlowJob<'_> {
    /// Reports a warning about the flow (e.g. its table's schema changed), in the run's output
    /// and its event log.
    pub(crate) fn warn(&self, warning: &str) {
        let mut ev = RunEvent::now(self.flow.name.to_string(), None, format!("Flow {}: {warning}.", self.flow.name));
        ev.details.warning = Some(warning.to_string());
        ev.details.location = Some(self.flow.location.to_string());
        self.events.emit(ev);
    }

    /// Reports how a materialized view's refresh was planned: a `planning_information` event, and
    /// the technique for the run summary.
    pub(crate) fn planned(&self, planning: &crate::refresh::planning::Planning) {
        let summary = planning.summary();
        let mut ev =
            RunEvent::now(self.flow.name.to_string(), None, format!("Flow {} refresh: {summary}.", self.flow.name));
        ev.details.planning_information = Some(planning.information());
        ev.details.location = Some(self.flow.location.to_string());
        self.events.emit(ev);
        if let Some(t) = planning.chosen() {
            let _ = self.technique.set(t.label().to_string());
        }
    }

    /// Reports that the flow is being planned.
    pub(crate) fn planning(&self) {
        self.events.flow(self.flow, RunPhase::Planning, EventDetails::default());
    }

    /// Reports that the flow starts (its query is planned).
    pub(crate) fn starting(&self) {
        self.events.flow(self.flow, RunPhase::Starting, EventDetails::default());
    }

    /// Reports that the flow writes rows.
    pub(crate) fn running(&self) {
        self.events.flow(self.flow, RunPhase::Running, EventDetails::default());
    }
}

/// What a flow did.
pub(crate) enum FlowEffect {
    /// A view was defined.
    View,
    /// Rows were committed.
    Rows(u64),
    /// Rows were committed by a flow aggregating over event time, which dropped late rows.
    Windowed {
        /// Rows committed.
        rows: u64,
        /// Late input rows dropped.
        dropped_by_watermark: u64,
    },
    /// Nothing to do (IDLE): no new input, or an unchanged materialized view.
    Nothing,
}

impl FlowEffect {
    /// This streaming batch's effect followed by `next`'s in the same run (a redone batch, then a
    /// new one): their rows and late rows summed.
    pub(crate) fn then(self, next: FlowEffect) -> FlowEffect {
        use FlowEffect::*;
        match (self, next) {
            (Nothing, e) | (e, Nothing) => e,
            (Rows(a), Rows(b)) => Rows(a + b),
            (a, b) => {
                let parts = |e: FlowEffect| match e {
                    Rows(n) => (n, 0),
                    Windowed { rows, dropped_by_watermark } => (rows, dropped_by_watermark),
                    View | Nothing => (0, 0),
                };
                let ((r1, d1), (r2, d2)) = (parts(a), parts(b));
                Windowed { rows: r1 + r2, dropped_by_watermark: d1 + d2 }
            }
        }
    }
}

/// The run's events, worded as SDP words them.
pub(crate) struct RunEvents(EventSender);

impl RunEvents {
    pub(crate) fn new(events: EventSender) -> Self {
        RunEvents(events)
    }

    /// A flow's phase (`details.location` defaults to the flow's).
    pub(crate) fn flow(&self, f: &Flow, phase: RunPhase, details: EventDetails) {
        let verb = if phase.is_terminal() { "has" } else { "is" };
        let mut ev = RunEvent::now(f.name.to_string(), Some(phase), format!("Flow {} {verb} {phase}.", f.name));
        ev.details = details;
        ev.details.location.get_or_insert_with(|| f.location.to_string());
        self.0.emit(ev);
    }

    /// The run's own phase.
    pub(crate) fn run(&self, phase: RunPhase, message: String) {
        self.0.emit(RunEvent::now("run", Some(phase), message));
    }

    /// Any other event.
    pub(crate) fn emit(&self, event: RunEvent) {
        self.0.emit(event);
    }

    /// Flushes the event log.
    pub(crate) async fn flush(&self) {
        self.0.flush().await;
    }
}

/// The steps of one piece of work (`what`: "AUTO CDC batch", "refresh"), each logged with the
/// time since the previous one.
pub(crate) struct Steps {
    what: &'static str,
    pub flow: Option<QualifiedName>,
    last: std::time::Instant,
}

impl Steps {
    pub(crate) fn start(what: &'static str) -> Self {
        Steps { what, flow: None, last: std::time::Instant::now() }
    }

    pub(crate) fn of(what: &'static str, flow: &QualifiedName) -> Self {
        Steps { flow: Some(flow.clone()), ..Steps::start(what) }
    }

    pub(crate) fn done(&mut self, step: &str) {
        let now = std::time::Instant::now();
        let flow = self.flow.as_ref().map(ToString::to_string).unwrap_or_default();
        tracing::debug!(flow, step, ms = (now - self.last).as_secs_f64() * 1000.0, "{}", self.what);
        self.last = now;
    }
}
