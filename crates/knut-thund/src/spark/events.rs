//! Spark's run events, translated: the server streams plain sentences ("Flow
//! spark_catalog.default.x is RUNNING."); [`EventTranslator`] reads the flow and the phase from
//! the first line, keeps the raw text, joins a failed flow's Spark error (on later lines) with
//! the flow's file:line, and builds the run's summary from what it saw.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime};

use knut_pipelines::{PipelineEvent, PipelineEventSink};

use crate::backend::{EventSender, FlowOutcome, RunEvent, RunPhase, RunSummary};
use crate::ir::{DatasetKind, Pipeline, QualifiedName, SourceLocation};

/// How a flow's output rows are known from its table's row count (Spark's run events carry no
/// numbers): a materialized view's flow wrote the whole table; the one append flow of a
/// streaming table wrote what the table grew by (the whole table after a full refresh). Several
/// flows into one table, AUTO CDC (which updates rows in place) and sinks are not counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Counting {
    Whole,
    Growth,
    No,
}

/// One flow as the translator tracks it.
struct Tracked {
    flow: String,
    target: String,
    target_name: QualifiedName,
    counting: Counting,
    rows: Option<u64>,
    location: SourceLocation,
    selected: bool,
    phase: Option<RunPhase>,
    started: Option<SystemTime>,
    ended: Option<SystemTime>,
    error: Option<String>,
}

/// Translates Spark's event sentences into run events, and keeps each flow's state for the run's
/// summary.
pub(super) struct EventTranslator {
    events: EventSender,
    /// Keyed by the flow name as Spark prints it (lower-case, fully qualified).
    flows: BTreeMap<String, Tracked>,
    /// The run's final state as the server stated it ("Run is COMPLETED."); a stream that ends
    /// without one did not end the run.
    server_final: Option<RunPhase>,
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

impl EventTranslator {
    pub(super) fn new(p: &Pipeline, selected: &BTreeSet<QualifiedName>, events: EventSender) -> Self {
        let kinds: BTreeMap<_, _> = p.datasets.iter().map(|d| (&d.name, d.kind)).collect();
        // A table's rows are counted from its size: a materialized view's whole, a streaming
        // table's growth when one appending flow alone writes it (AUTO CDC rewrites rows).
        let appends = |f: &crate::ir::Flow| f.kind.only_appends();
        let counting = |f: &crate::ir::Flow| match kinds.get(&f.target) {
            Some(DatasetKind::MaterializedView) => Counting::Whole,
            Some(DatasetKind::StreamingTable) if appends(f) && p.flows_into(&f.target).count() == 1 => Counting::Growth,
            Some(
                DatasetKind::StreamingTable
                | DatasetKind::TemporaryView
                | DatasetKind::PersistentView
                | DatasetKind::Sink,
            )
            | None => Counting::No,
        };
        let flows = p
            .flows
            .iter()
            // Views have no run of their own on Spark (they are resolved into their readers).
            .filter(|f| !kinds.get(&f.target).is_some_and(|k| k.is_view()))
            .map(|f| {
                let t = Tracked {
                    flow: f.name.to_string(),
                    target: f.target.to_string(),
                    target_name: f.target.clone(),
                    counting: counting(f),
                    rows: None,
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
        EventTranslator { events, flows, server_final: None }
    }

    pub(super) fn emit(&self, e: RunEvent) {
        self.events.emit(e);
    }

    /// The tables whose row counts tell the selected flows' output rows.
    pub(super) fn counted_tables(&self) -> Vec<QualifiedName> {
        let mut names: Vec<QualifiedName> = self
            .flows
            .values()
            .filter(|t| t.selected && t.counting != Counting::No)
            .map(|t| t.target_name.clone())
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// Gives each completed counted flow its output rows from its table's row counts `before`
    /// and `after` the run (keyed by lower-cased qualified name; a table missing `before` did not
    /// exist), and emits them as a metrics event.
    pub(super) fn record_counts(
        &mut self,
        before: &BTreeMap<String, u64>,
        after: &BTreeMap<String, u64>,
        full_refresh: &BTreeSet<QualifiedName>,
    ) {
        let mut counted = Vec::new();
        for t in self.flows.values_mut() {
            if t.phase != Some(RunPhase::Completed) {
                continue;
            }
            let key = t.target.to_lowercase();
            let Some(&now) = after.get(&key) else { continue };
            let rows = match (t.counting, before.get(&key)) {
                (Counting::No, _) => continue,
                (Counting::Growth, Some(&was)) if !full_refresh.contains(&t.target_name) => now.saturating_sub(was),
                _ => now,
            };
            t.rows = Some(rows);
            counted.push((t.flow.clone(), rows));
        }
        for (flow, rows) in counted {
            let mut e = RunEvent::now(&flow, None, format!("Flow {flow} wrote {rows} rows."));
            e.details.rows_written = Some(rows);
            self.emit(e);
        }
    }

    /// Ends the run: flows the server never finished get an honest final phase, the run's own
    /// outcome becomes the last event, and the event log is flushed.
    pub(super) async fn finish(mut self, outcome: std::result::Result<(), String>, stopped: bool) -> RunSummary {
        // A stream that ended without the server's final state is no success, and a run the
        // server calls failed failed, even when no flow of ours says so (a pipeline of views).
        let outcome = match (outcome, self.server_final) {
            (Ok(()), None) if !stopped => Err("the server's event stream ended without the run's final state".into()),
            (other, _) => other,
        };
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
        let mut summary = RunSummary {
            error: None,
            flows: self
                .flows
                .values()
                .map(|t| FlowOutcome {
                    flow: t.flow.clone(),
                    target: t.target.clone(),
                    phase: t.phase.unwrap_or(RunPhase::Completed),
                    // From the tables' row counts (`record_counts`).
                    rows_written: t.rows.unwrap_or(0),
                    duration: match (t.started, t.ended) {
                        (Some(s), Some(e)) => e.duration_since(s).unwrap_or_default(),
                        _ => Duration::ZERO,
                    },
                    error: t.error.clone(),
                    data_quality: None,
                    // Nor does the server send its streaming progress.
                    rows_dropped_by_watermark: 0,
                    technique: None,
                })
                .collect(),
        };
        summary.error = match (&outcome, stopped) {
            (_, true) => None,
            (Err(e), _) => Some(e.clone()),
            (Ok(()), _) if self.server_final == Some(RunPhase::Failed) && !summary.failed() => {
                Some("the server reports the run FAILED".into())
            }
            (Ok(()), _) => None,
        };
        let end = match (&outcome, stopped) {
            (_, true) => RunEvent::now("run", Some(RunPhase::Stopped), "Run is STOPPED."),
            (Ok(()), _) if !summary.failed() => RunEvent::now("run", Some(RunPhase::Completed), "Run is COMPLETED."),
            _ => {
                let mut e = RunEvent::now("run", Some(RunPhase::Failed), "Run has FAILED.");
                e.details.error = summary.error.clone();
                e
            }
        };
        self.emit(end);
        self.events.flush().await;
        summary
    }
}

impl PipelineEventSink for EventTranslator {
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
            self.server_final = parsed.phase.filter(|p| p.is_terminal());
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

    /// The summary of a run of `sql` whose server sent `lines` and whose stream then ended.
    fn finish_after(sql: &str, lines: &[&str]) -> RunSummary {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("spark-pipeline.yml"),
            "name: p\nlibraries:\n  - glob:\n      include: '*.sql'\n",
        )
        .unwrap();
        std::fs::write(dir.path().join("a.sql"), sql).unwrap();
        let p = crate::frontend::load(dir.path()).unwrap();
        let selected = p.datasets.iter().map(|d| d.name.clone()).collect();
        let (events, _rx) = EventSender::channel();
        let mut t = EventTranslator::new(&p, &selected, events);
        for l in lines {
            t.on_event(PipelineEvent { timestamp: SystemTime::now(), message: (*l).to_string() });
        }
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(t.finish(Ok(()), false))
    }

    #[test]
    fn a_run_is_judged_by_the_servers_final_state_not_by_the_end_of_the_stream() {
        let mv = "CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;";
        let done = finish_after(mv, &["Flow spark_catalog.default.a has COMPLETED.", "Run is COMPLETED."]);
        assert!(!done.failed(), "{done:?}");
        // The stream ended mid-run: no success, and the flow did not finish.
        let cut = finish_after(mv, &["Flow spark_catalog.default.a is RUNNING."]);
        assert!(cut.failed() && cut.error.as_deref().is_some_and(|e| e.contains("without the run's final state")));
        assert_eq!(cut.flows[0].phase, RunPhase::Failed, "{cut:?}");
        // Views have no flows of their own on Spark: the server's word is all there is.
        let views = finish_after("CREATE VIEW v AS SELECT 1 AS x;", &["Run has FAILED."]);
        assert!(views.flows.is_empty() && views.failed(), "{views:?}");
    }

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
