//! What the web view shows, as JSON: the pipeline's graph (from its SQL) and its runs and
//! datasets' states (folded from the event log). Pure functions of their inputs, so they are
//! tested without a server or a browser.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;

use knut_thund::error::Diagnostic;
use knut_thund::ir::{Pipeline, Read, SourceLocation};
use knut_thund::plan::{plan, Selection};
use serde_json::{json, Value};
use thund_native::event_log::{LoggedEvent, Overview};

/// The graph: datasets in layers (a dataset's layer is one more than its deepest input's, as
/// DLT draws them left to right), the edges by read, and what the panel shows of each.
pub(super) fn pipeline(p: &Pipeline) -> Value {
    let mut sources = Sources::new(&p.root, &p.configuration);
    let layers: BTreeMap<String, usize> = match plan(p, &Selection::default()) {
        Ok(planned) => planned
            .stages
            .iter()
            .enumerate()
            .flat_map(|(i, stage)| stage.iter().map(move |n| (n.to_string(), i)))
            .collect(),
        Err(_) => BTreeMap::new(),
    };
    let mut edges = BTreeSet::new();
    let mut datasets = Vec::new();
    for d in &p.datasets {
        let name = d.name.to_string();
        let mut inputs = BTreeSet::new();
        let mut read_from = BTreeSet::new();
        let mut statements = Vec::new();
        for f in p.flows_into(&d.name) {
            for r in &f.query().reads {
                match r {
                    Read::Dataset { name: from, .. } if p.dataset(from).is_some() => {
                        inputs.insert(from.to_string());
                        edges.insert((from.to_string(), name.clone()));
                    }
                    Read::Dataset { name: from, .. } => {
                        read_from.insert(from.to_string());
                    }
                    Read::Files(files) => {
                        read_from.insert(files.path.clone());
                    }
                }
            }
            if f.location != d.location {
                statements.push(json!({"location": f.location.to_string(), "sql": sources.statement(&f.location)}));
            }
        }
        statements.insert(0, json!({"location": d.location.to_string(), "sql": sources.statement(&d.location)}));
        datasets.push(json!({
            "name": name,
            "short": d.name.name,
            "kind": d.kind.to_string(),
            "layer": layers.get(&name).copied().unwrap_or(0),
            "location": d.location.to_string(),
            "comment": d.comment,
            "statements": statements,
            "inputs": inputs,
            "sources": read_from,
            "columns": d.details.columns.iter().map(|c| json!({"name": c.name, "type": c.data_type})).collect::<Vec<_>>(),
            "expectations": d.expectations.iter().map(|e| json!({
                "name": e.name, "predicate": e.predicate, "action": format!("{:?}", e.action).to_lowercase(),
            })).collect::<Vec<_>>(),
        }));
    }
    json!({
        "name": p.name,
        "datasets": datasets,
        "edges": edges.into_iter().map(|(from, to)| json!({"from": from, "to": to})).collect::<Vec<_>>(),
    })
}

/// The statements of a project's files as written, each file read and tokenized once.
pub(super) struct Sources<'a> {
    root: &'a Path,
    configuration: &'a BTreeMap<String, String>,
    /// Per file (`None`: unreadable).
    files: HashMap<String, Option<SourceFile>>,
}

/// One file: its lines as written, and the line and column of each `;` that ends a statement.
struct SourceFile {
    lines: Vec<String>,
    ends: Vec<(u32, u32)>,
}

impl<'a> Sources<'a> {
    /// The files of the project at `root`, whose SQL the front end reads with `configuration`.
    pub(super) fn new(root: &'a Path, configuration: &'a BTreeMap<String, String>) -> Self {
        Sources { root, configuration, files: HashMap::new() }
    }

    /// The SQL statement starting at `at`, as written in its file: its lines up to the one holding
    /// the `;` that ends it — found with the front end's own tokenizer (after the same `${key}`
    /// substitution), so quotes and comments are read as the parser reads them. In a Python file,
    /// the definition at `at`: its decorators and function, or its call.
    pub(super) fn statement(&mut self, at: &SourceLocation) -> String {
        let (root, conf) = (self.root, self.configuration);
        let python = at.file.ends_with(".py");
        let file = self.files.entry(at.file.clone()).or_insert_with(|| {
            let raw = std::fs::read_to_string(root.join(&at.file)).ok()?;
            let ends = if python {
                Vec::new()
            } else {
                knut_thund::frontend::statement_ends(&raw, conf, &at.file).unwrap_or_default()
            };
            Some(SourceFile { lines: raw.lines().map(str::to_string).collect(), ends })
        });
        let Some(SourceFile { lines, ends }) = file else { return String::new() };
        let first = at.line.max(1);
        let last = if python {
            python_definition_end(lines, first as usize) as u32
        } else {
            ends.iter().find(|end| **end >= (at.line, at.column)).map_or(lines.len() as u32, |(line, _)| *line)
        };
        let shown = lines.get((first - 1) as usize..(last as usize).min(lines.len()));
        shown.map(|l| l.join("\n").trim_end().to_string()).unwrap_or_default()
    }
}

/// The last line (1-based) of the Python definition starting at line `first`: decorators and
/// the function they decorate (its indented body), or a call whose brackets close.
fn python_definition_end(lines: &[String], first: usize) -> usize {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let brackets = |l: &str| l.matches(['(', '[', '{']).count() as i64 - l.matches([')', ']', '}']).count() as i64;
    // The line at which the brackets opened at line `i` close.
    let closing = |mut i: usize| {
        let mut depth = 0;
        while i < lines.len() {
            depth += brackets(&lines[i]);
            if depth <= 0 {
                break;
            }
            i += 1;
        }
        i.min(lines.len().saturating_sub(1))
    };
    let mut i = first - 1;
    while lines.get(i).is_some_and(|l| l.trim_start().starts_with('@')) {
        i = closing(i) + 1;
    }
    let Some(head) = lines.get(i) else { return lines.len() };
    let trimmed = head.trim_start();
    if !(trimmed.starts_with("def ") || trimmed.starts_with("async def ")) {
        return closing(i) + 1;
    }
    let level = indent(head);
    let mut last = i + 1;
    for (j, line) in lines.iter().enumerate().skip(i + 1) {
        if line.trim().is_empty() {
            continue;
        }
        if indent(line) <= level {
            break;
        }
        last = j + 1;
    }
    last
}

/// How many runs `/api/state` lists (the latest); `run_count` says how many there are.
pub(super) const RUNS_LISTED: usize = 100;

/// The event log folded: every run's summary, and the flows of the runs whose events were all
/// read — the last run each dataset took part in, and every run begun since the log was first
/// read. Built from an [`Overview`] (a long log is never decoded whole) and then fed only the
/// events committed since.
#[derive(Default)]
pub(super) struct Folded {
    events: u64,
    runs: Vec<Run>,
    index: HashMap<String, usize>,
    detailed: BTreeSet<String>,
}

impl Folded {
    /// The log as an overview summarizes it.
    pub(super) fn from_overview(root: &Path, o: Overview) -> Self {
        let mut f = Folded { events: o.events, detailed: o.detailed, ..Folded::default() };
        for (id, backend, started) in o.runs {
            f.index.insert(id.clone(), f.runs.len());
            f.runs.push(Run::started(id, backend, started));
        }
        for e in &o.read {
            if let Some(&i) = f.index.get(e.origin.update_id.as_str()) {
                f.runs[i].add(root, e);
            }
        }
        f
    }

    /// Folds events committed after those already folded (oldest first); a run first seen here
    /// has all its events folded.
    pub(super) fn add(&mut self, root: &Path, events: &[LoggedEvent]) {
        self.events += events.len() as u64;
        for e in events {
            let i = match self.index.get(e.origin.update_id.as_str()) {
                Some(&i) => i,
                None => {
                    self.index.insert(e.origin.update_id.clone(), self.runs.len());
                    self.detailed.insert(e.origin.update_id.clone());
                    self.runs.push(Run::new(e));
                    self.runs.len() - 1
                }
            };
            self.runs[i].add(root, e);
        }
    }

    /// The last runs and each dataset's last state.
    pub(super) fn state(&self) -> Value {
        // Each dataset's state is its state in the last run it took part in; its last refresh is
        // the last time one of its flows completed.
        let mut datasets: BTreeMap<String, Value> = BTreeMap::new();
        for r in &self.runs {
            for f in r.flows.values() {
                let Some(d) = &f.dataset else { continue };
                let Some(state) = &f.state else { continue };
                if state == "EXCLUDED" {
                    continue;
                }
                let entry = datasets.entry(d.clone()).or_insert_with(|| json!({}));
                entry["state"] = json!(state);
                entry["run"] = json!(r.id);
                entry["error"] = json!(f.error);
                entry["error_snippet"] = json!(f.error_snippet);
                if let Some(how) = &f.refresh {
                    entry["refresh_technique"] = json!(how);
                }
                if state == "COMPLETED" {
                    entry["last_refresh"] = json!(f.ended);
                    entry["duration_ms"] = json!(f.duration_ms);
                    entry["rows"] = json!(f.rows);
                    if !f.expectations.is_empty() {
                        entry["expectations"] = json!(f.expectations);
                    }
                }
            }
        }
        let listed = &self.runs[self.runs.len().saturating_sub(RUNS_LISTED)..];
        json!({
            "events": self.events,
            "run_count": self.runs.len(),
            "runs": listed.iter().map(Run::summary).collect::<Vec<_>>(),
            "datasets": datasets,
        })
    }

    /// One run with its flows, if all its events were folded.
    pub(super) fn run(&self, id: &str) -> Option<Value> {
        if !self.detailed.contains(id) {
            return None;
        }
        self.index.get(id).map(|&i| self.runs[i].detailed())
    }
}

/// One run's flows, as `GET /api/runs/{id}` shows them, from its events (oldest first).
pub(super) fn run(root: &Path, events: &[LoggedEvent], id: &str) -> Option<Value> {
    let mut run: Option<Run> = None;
    for e in events.iter().filter(|e| e.origin.update_id == id) {
        run.get_or_insert_with(|| Run::new(e)).add(root, e);
    }
    Some(run?.detailed())
}

struct Run {
    id: String,
    backend: String,
    started: String,
    /// The time of its last event before it ended.
    last_seen: String,
    ended: Option<String>,
    state: String,
    error: Option<String>,
    flows: BTreeMap<String, Flow>,
}

#[derive(serde::Serialize)]
struct Flow {
    flow: String,
    dataset: Option<String>,
    state: Option<String>,
    rows: Option<u64>,
    duration_ms: Option<u64>,
    ended: Option<String>,
    error: Option<String>,
    error_snippet: Option<String>,
    expectations: Vec<Value>,
    /// How a materialized view's refresh went (`group aggregate`, `complete recompute (…)`).
    refresh: Option<String>,
}

impl Run {
    fn new(e: &LoggedEvent) -> Self {
        Run::started(e.origin.update_id.clone(), e.origin.backend.clone(), e.timestamp.clone())
    }

    fn started(id: String, backend: String, started: String) -> Self {
        Run {
            id,
            backend,
            last_seen: started.clone(),
            started,
            ended: None,
            state: "RUNNING".into(),
            error: None,
            flows: BTreeMap::new(),
        }
    }

    fn detailed(&self) -> Value {
        let mut summary = self.summary();
        summary["flows"] = json!(self.flows.values().collect::<Vec<_>>());
        summary
    }

    fn add(&mut self, root: &Path, e: &LoggedEvent) {
        match e.event_type.as_str() {
            // Found interrupted by a later run: it ended when its last event was written, unless
            // it had ended after all (killed between its last event and releasing its lock).
            "update_progress" if e.details.pointer("/update_progress/interrupted") == Some(&json!(true)) => {
                if self.ended.is_none() {
                    self.state = "FAILED".into();
                    self.ended = Some(self.last_seen.clone());
                    self.error = e.error.clone();
                    // Its flows under way stopped with it (their tables keep their last commits).
                    use knut_thund::backend::RunPhase;
                    let under_way = |s: &str| RunPhase::ALL.into_iter().any(|p| p.as_str() == s && !p.is_terminal());
                    for f in self.flows.values_mut() {
                        if f.state.as_deref().is_some_and(under_way) {
                            f.state = Some(RunPhase::Stopped.as_str().into());
                        }
                    }
                }
            }
            "update_progress" => {
                self.last_seen = e.timestamp.clone();
                let state = e.details.pointer("/update_progress/state").and_then(Value::as_str);
                if let Some(s @ ("COMPLETED" | "FAILED" | "STOPPED" | "CANCELED")) = state {
                    self.state = s.into();
                    self.ended = Some(e.timestamp.clone());
                    self.error = e.error.clone();
                }
            }
            "planning_information" => {
                self.last_seen = e.timestamp.clone();
                let Some(f) = e.origin.flow_name.as_ref().and_then(|n| self.flows.get_mut(n)) else { return };
                // The message says it as the run's output does: `… refresh: <technique (why)>.`
                let told = e.message.split_once(" refresh: ").map(|(_, t)| t.trim_end_matches('.').to_string());
                f.refresh = told;
            }
            "flow_definition" | "flow_progress" => {
                self.last_seen = e.timestamp.clone();
                let Some(name) = &e.origin.flow_name else { return };
                let f = self.flows.entry(name.clone()).or_insert_with(|| Flow {
                    flow: name.clone(),
                    dataset: e.origin.dataset_name.clone(),
                    state: None,
                    rows: None,
                    duration_ms: None,
                    ended: None,
                    error: None,
                    error_snippet: None,
                    expectations: Vec::new(),
                    refresh: None,
                });
                if e.event_type == "flow_definition" {
                    if e.details.pointer("/flow_definition/selected") == Some(&json!(false)) {
                        f.state = Some("EXCLUDED".into());
                    }
                    return;
                }
                let progress = &e.details["flow_progress"];
                if let Some(s) = progress["status"].as_str() {
                    f.state = Some(s.into());
                    if s != "FAILED" {
                        f.error = None;
                        f.error_snippet = None;
                    }
                    if matches!(s, "COMPLETED" | "FAILED" | "SKIPPED" | "STOPPED" | "IDLE") {
                        f.ended = Some(e.timestamp.clone());
                    }
                }
                if let Some(n) = progress.pointer("/metrics/num_output_rows").and_then(Value::as_u64) {
                    f.rows = Some(n);
                }
                if let Some(ms) = progress["duration_ms"].as_u64() {
                    f.duration_ms = Some(ms);
                }
                if let Some(x) = progress.pointer("/data_quality/expectations").and_then(Value::as_array) {
                    f.expectations = x
                        .iter()
                        .map(|x| {
                            let passed = x["passed_records"].as_u64().unwrap_or(0);
                            let failed = x["failed_records"].as_u64().unwrap_or(0);
                            let total = passed + failed;
                            let rate = if total == 0 { 1.0 } else { passed as f64 / total as f64 };
                            json!({"name": x["name"], "passed_records": passed, "failed_records": failed,
                                   "pass_rate": rate, "rate": crate::render::pass_rate(passed, failed)})
                        })
                        .collect();
                }
                if let Some(err) = &e.error {
                    f.error = Some(err.clone());
                    f.error_snippet = Some(snippet(root, err, e.origin.source_code_location.as_deref()));
                }
            }
            _ => self.last_seen = e.timestamp.clone(),
        }
    }

    fn summary(&self) -> Value {
        let ms = |t: &str| thund_native::event_log::micros(t) / 1000;
        json!({
            "id": self.id,
            "backend": self.backend,
            "started": self.started,
            "ended": self.ended,
            "state": self.state,
            "error": self.error,
            "duration_ms": self.ended.as_deref().map(|end| (ms(end) - ms(&self.started)).max(0)),
        })
    }
}

/// An error as the CLI prints it: the message, and the line it points at with a caret, when it
/// starts with `file:line:col` (or the flow's own location).
fn snippet(root: &Path, error: &str, flow_location: Option<&str>) -> String {
    let parse = |s: &str| -> Option<SourceLocation> {
        let mut parts = s.rsplitn(3, ':');
        let column = parts.next()?.trim().parse().ok()?;
        let line = parts.next()?.trim().parse().ok()?;
        Some(SourceLocation::new(parts.next()?, line, column))
    };
    // `file:line:col: message`: the location is everything before the third colon.
    let located = error.match_indices(':').nth(2).and_then(|(i, _)| Some((parse(&error[..i])?, error[i + 1..].trim())));
    let (location, message) = match located {
        Some((l, m)) if root.join(&l.file).is_file() => (Some(l), m),
        _ => (flow_location.and_then(parse), error),
    };
    let d = Diagnostic { location, message: message.to_string(), hint: None };
    crate::render::snippet(root, &d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_end_at_their_semicolon_outside_strings_and_comments() {
        let dir = tempfile::tempdir().unwrap();
        let sql = "-- head\nCREATE MATERIALIZED VIEW a AS\nSELECT ';' AS x -- not ; here\n/* nor ; */ FROM t;\nCREATE VIEW b AS SELECT 1;\n";
        std::fs::write(dir.path().join("a.sql"), sql).unwrap();
        let conf = BTreeMap::new();
        let mut sources = Sources::new(dir.path(), &conf);
        let s = sources.statement(&SourceLocation::new("a.sql", 2, 1));
        assert_eq!(s, "CREATE MATERIALIZED VIEW a AS\nSELECT ';' AS x -- not ; here\n/* nor ; */ FROM t;");
        assert_eq!(sources.statement(&SourceLocation::new("a.sql", 5, 1)), "CREATE VIEW b AS SELECT 1;");
        assert_eq!(sources.statement(&SourceLocation::new("missing.sql", 1, 1)), "");
    }

    #[test]
    fn a_python_definition_is_its_decorators_and_function_or_its_call() {
        let dir = tempfile::tempdir().unwrap();
        let py = "from pyspark import pipelines as dp\n\n@dp.materialized_view(\n    comment=\"x\",\n)\ndef a():\n    df = spark.range(3)\n\n    return df\n\n\ndp.create_streaming_table(\n    \"s\")\nx = 1\n";
        std::fs::write(dir.path().join("a.py"), py).unwrap();
        let conf = BTreeMap::new();
        let mut sources = Sources::new(dir.path(), &conf);
        assert_eq!(
            sources.statement(&SourceLocation::new("a.py", 3, 1)),
            "@dp.materialized_view(\n    comment=\"x\",\n)\ndef a():\n    df = spark.range(3)\n\n    return df"
        );
        assert_eq!(sources.statement(&SourceLocation::new("a.py", 12, 1)), "dp.create_streaming_table(\n    \"s\")");
    }

    fn event(run: &str, at: &str, event_type: &str, flow: Option<&str>, details: Value) -> LoggedEvent {
        LoggedEvent {
            id: format!("{run}-{at}"),
            sequence: 0,
            origin: thund_native::event_log::Origin {
                pipeline_name: "p".into(),
                update_id: run.into(),
                backend: "native".into(),
                dataset_name: flow.map(|f| format!("c.d.{f}")),
                flow_name: flow.map(str::to_string),
                source_code_location: None,
            },
            timestamp: format!("2026-12-02T10:00:{at}.000Z"),
            message: String::new(),
            level: "INFO".into(),
            maturity_level: "STABLE".into(),
            error: None,
            details,
            event_type: event_type.into(),
        }
    }

    #[test]
    fn an_interrupted_run_ends_at_its_last_event_and_a_finished_one_stays_finished() {
        let interrupted = || {
            let mut e = event(
                "x",
                "59",
                "update_progress",
                None,
                json!({"update_progress": {"state": "FAILED", "interrupted": true}}),
            );
            e.error = Some("interrupted".into());
            e
        };
        let mut killed = vec![
            event("a", "01", "create_update", None, json!({})),
            event("a", "02", "flow_progress", Some("f"), json!({"flow_progress": {"status": "RUNNING"}})),
        ];
        killed.push(LoggedEvent { origin: killed[0].origin.clone(), ..interrupted() });
        let mut ended = vec![
            event("b", "10", "create_update", None, json!({})),
            event("b", "11", "update_progress", None, json!({"update_progress": {"state": "COMPLETED"}})),
        ];
        ended.push(LoggedEvent { origin: ended[0].origin.clone(), ..interrupted() });
        let root = Path::new("/nowhere");
        let mut f = Folded::default();
        f.add(root, &killed);
        f.add(root, &ended);
        let state = f.state();
        let runs = state["runs"].as_array().unwrap();
        assert_eq!(
            (runs[0]["state"].as_str(), runs[0]["ended"].as_str()),
            (Some("FAILED"), Some("2026-12-02T10:00:02.000Z"))
        );
        assert_eq!(runs[0]["error"], "interrupted");
        assert_eq!(state["datasets"]["c.d.f"]["state"], "STOPPED", "{state}");
        assert_eq!((runs[1]["state"].as_str(), runs[1]["error"].as_str()), (Some("COMPLETED"), None), "{state}");
        assert_eq!(state["events"], 6);
    }

    #[test]
    fn errors_point_at_their_line() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.sql"), "CREATE MATERIALIZED VIEW a AS\nSELECT nope FROM t;\n").unwrap();
        let s = snippet(dir.path(), "a.sql:2:8: column `nope` does not exist", None);
        assert!(s.contains("error: column `nope` does not exist") && s.contains("--> a.sql:2:8"), "{s}");
        assert!(s.contains("2 | SELECT nope FROM t;") && s.contains("|        ^"), "{s}");
        let s = snippet(dir.path(), "boom", Some("a.sql:1:1"));
        assert!(s.contains("error: boom") && s.contains("1 | CREATE MATERIALIZED VIEW a AS"), "{s}");
    }
}
