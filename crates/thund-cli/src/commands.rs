//! One function per command. `run`, `dry-run` and `query` take one path whatever the backend:
//! pick it (`backends`), prepare the run in the core (`knut_thund::prepare`), start it, follow
//! its events. A command returns `Ok` or an error that carries its kind (`failure`).

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use anyhow::{bail, Context};
use knut_thund::backend::{rfc3339, EventLog, ExecBackend, RunEvent, RunHandle, RunOptions, RunPhase, RunSummary};
use knut_thund::error::ThundError;
use knut_thund::frontend::Parses;
use knut_thund::ir::{Feature, Pipeline};
use knut_thund::plan::Selection;
use knut_thund::prepare::prepare_for;
use knut_thund::render::GraphFormat as Rendering;
use knut_thund::status::{functional_status, render_table, status_rows};
use thund_native::event_log::LoggedEvent;
use thund_native::{EngineOptions, NativeBackend};

use crate::backends;
use crate::cli::{
    BackendArgs, Command, DoctorFormat, EventsFormat, GraphFormat, QueryFormat, RunArgs, RunFormat, SelectionArgs,
};
use crate::failure::{Failure, ProjectError};

pub(crate) fn dispatch(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Init { dir, from_dlt: None } => init(&dir),
        Command::Init { from_dlt: Some(settings), .. } => init_from_dlt(&settings),
        Command::Validate { project } => validate(&project.project),
        Command::DryRun { run: args } => run(args, true, 0, None),
        Command::Graph { project, format } => graph(&project.project, format),
        Command::Explain { project, views } => crate::explain::explain(&project.project, &views),
        Command::Run { run: args, max_concurrent_flows, memory_limit } => {
            run(args, false, max_concurrent_flows, memory_limit.as_deref())
        }
        Command::Query { project, target, sql, format, output, schema } => {
            query(&project.project, &target, &sql, QueryOutput { format, file: output, schema })
        }
        Command::Events { project, run, last: _, all, dataset, level, event_type, format } => {
            let filter = EventFilter { run, all, dataset, levels: level, types: event_type };
            events(&project.project, &filter, format)
        }
        Command::Test { project, backend, filter, junit } => {
            let p = load_valid(&project.project, Parses::Keep)?;
            let memory_limit = crate::memory::memory_limit(None, &p, &project.project)?;
            let backend = backends::pick(&backend, EngineOptions { memory_limit, target_partitions: 0 })?;
            crate::testing::run(&p, backend.as_ref(), filter.as_deref(), junit.as_deref())
        }
        Command::Ui { project, port, bind } => {
            let p = load_valid(&project.project, Parses::Keep)?;
            crate::ui::serve(&project.project, &p, bind, port)
        }
        Command::Doctor { remote, format } => doctor(remote.map(|r| r.0), format),
    }
}

/// The folder a project's file paths are relative to, even when loading fails.
fn project_root(start: &Path) -> PathBuf {
    knut_thund::spec::discover(start)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| start.to_path_buf())
}

pub(crate) fn in_project(start: &Path, error: ThundError) -> anyhow::Error {
    anyhow::Error::new(ProjectError { root: project_root(start), error })
}

/// Loads (parses) the project; validation is part of preparing a run, or of `validate`.
pub(crate) fn load(start: &Path) -> anyhow::Result<Pipeline> {
    knut_thund::frontend::load(start).map_err(|e| in_project(start, e))
}

/// Loads and validates the project; a command that plans no query keeps no parse.
fn load_valid(start: &Path, parses: Parses) -> anyhow::Result<Pipeline> {
    let p = knut_thund::frontend::load_with(start, parses).map_err(|e| in_project(start, e))?;
    p.validate().map_err(|e| in_project(start, e))?;
    Ok(p)
}

fn selection(s: SelectionArgs) -> Selection {
    Selection { refresh: s.refresh, full_refresh: s.full_refresh, full_refresh_all: s.full_refresh_all }
}

fn init(dir: &Path) -> anyhow::Result<()> {
    crate::sample::create(dir)?;
    println!("Created a sample pipeline in {}. Run it with:\n  thund run -p {}", dir.display(), dir.display());
    Ok(())
}

/// `init --from-dlt`: the SDP spec of a DLT pipeline's settings, written beside its files; what
/// has no meaning here is listed (and kept as comments in the spec).
fn init_from_dlt(settings: &Path) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(settings)
        .map_err(|e| Failure::usage(format!("cannot read {}: {e}", settings.display())))?;
    let shown = settings.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let s = knut_thund::frontend::dlt::settings(settings, &text, &shown).map_err(|e| in_project(settings, e))?;
    let target = s.root.join(knut_thund::spec::SPEC_FILE_NAMES[0]);
    if target.exists() {
        bail!(Failure::usage(format!("{} exists; remove it to write a new one", target.display())));
    }
    let mut out = format!(
        "# From the DLT settings {}.
",
        settings.display()
    );
    for n in &s.notes {
        out.push_str(&format!(
            "# Left out: {n}
"
        ));
    }
    out.push_str(&serde_yaml::to_string(&SpecOut::from(&s.spec))?);
    std::fs::write(&target, out).with_context(|| format!("writing {}", target.display()))?;
    println!("Wrote {}.", target.display());
    for n in &s.notes {
        println!("  left out: {n}");
    }
    println!(
        "Check it with:
  thund validate -p {}",
        s.root.display()
    );
    Ok(())
}

/// A spec as written to `spark-pipeline.yml`.
#[derive(serde::Serialize)]
struct SpecOut {
    name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    storage: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    catalog: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    database: Option<String>,
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    configuration: std::collections::BTreeMap<String, String>,
    libraries: Vec<std::collections::BTreeMap<&'static str, std::collections::BTreeMap<&'static str, String>>>,
}

impl From<&knut_thund::spec::Spec> for SpecOut {
    fn from(s: &knut_thund::spec::Spec) -> Self {
        SpecOut {
            name: s.name.clone(),
            storage: s.storage.clone(),
            catalog: s.catalog.clone(),
            database: s.database.clone(),
            configuration: s.configuration.clone(),
            libraries: s
                .libraries
                .iter()
                .map(|l| [("glob", [("include", l.glob.include.clone())].into())].into())
                .collect(),
        }
    }
}

fn validate(start: &Path) -> anyhow::Result<()> {
    let p = load_valid(start, Parses::Drop)?;
    let plan = knut_thund::plan::plan(&p, &Selection::default()).map_err(|e| in_project(start, e))?;
    // What a run would refuse before reading data, with the definitions' problems' exit code.
    let (problems, native_notes) = thund_native::preflight(&p);
    if !problems.is_empty() {
        return Err(in_project(start, knut_thund::error::ThundError::Validation(problems)));
    }
    let mut p = p;
    p.notes.extend(native_notes);
    println!(
        "pipeline `{}` is valid: {} datasets, {} flows, {} stages",
        p.name,
        p.datasets.len(),
        p.flows.len(),
        plan.stages.len()
    );
    if !p.notes.is_empty() {
        println!("notes ({}):", p.notes.len());
        for n in &p.notes {
            println!("  {n}");
        }
    }
    Ok(())
}

fn graph(start: &Path, format: GraphFormat) -> anyhow::Result<()> {
    let p = load_valid(start, Parses::Drop)?;
    let out = match format {
        GraphFormat::Text => knut_thund::render::render(&p, Rendering::Text),
        GraphFormat::Dot => knut_thund::render::render(&p, Rendering::Dot),
        GraphFormat::Mermaid => knut_thund::render::render(&p, Rendering::Mermaid),
        GraphFormat::Json => knut_thund::render::render(&p, Rendering::Json),
        GraphFormat::Sdp => format!("{}\n", serde_json::to_string_pretty(&p.to_sdp()?)?),
    };
    print!("{out}");
    Ok(())
}

/// `run` and `dry-run`, on any backend: prepare (every problem at once, before anything is
/// contacted or written), start, follow the events, judge the summary.
fn run(args: RunArgs, dry: bool, max_concurrent_flows: usize, memory_flag: Option<&str>) -> anyhow::Result<()> {
    let start = args.project.project.as_path();
    let p = load(start)?;
    let memory_limit = crate::memory::memory_limit(memory_flag, &p, start)?;
    let engine = EngineOptions { memory_limit, target_partitions: 0 };
    let backend = backends::pick(&args.target, engine)?;
    let options = RunOptions { selection: selection(args.selection), dry, max_concurrent_flows };
    let mut prepared = prepare_for(backend.as_ref(), &p, &options).map_err(|e| in_project(start, e))?;
    let mut log = None;
    // One run of a pipeline at a time, whatever its backend: the native backend takes the lock
    // itself; for another, it is taken here, before anything is logged.
    let mut held = None;
    if !dry && !backend.locks_its_runs() {
        let lock = thund_native::lock_run(&prepared).map_err(|e| in_project(start, e.into()))?;
        held = Some(lock);
    }
    if !dry {
        if let Err(e) = thund_native::event_log::retention(&p) {
            let spec = knut_thund::spec::discover(start)
                .map_or_else(|_| "spark-pipeline.yml".into(), |s| s.display().to_string());
            bail!(Failure::usage(format!("{spec}: {e}")));
        }
        // Every backend's runs are logged under the pipeline's storage, for `thund events`.
        match thund_native::event_log::open(&prepared) {
            Ok(l) => {
                prepared = prepared.with_event_log(Arc::clone(&l) as Arc<dyn EventLog>);
                log = Some(l);
            }
            Err(e) => eprintln!("warning: the events of this run are not logged: {e}"),
        }
    }
    let name = prepared.capabilities.name.clone();
    let handle = match backend.start(prepared) {
        Ok(handle) => handle,
        Err(e) => {
            // The log holds this run's start already: it gets its end too, so a run refused (by
            // another run's lock, an unreachable server) never shows as running.
            if let Some(l) = log {
                let mut end = RunEvent::now("run", Some(RunPhase::Failed), format!("the run did not start: {e}"));
                end.details.error = Some(e.to_string());
                l.append(&end);
                for w in l.close() {
                    eprintln!("warning: {w}");
                }
            }
            if let Some(Err(e)) = held.map(thund_native::HeldRunLock::release) {
                eprintln!("warning: the run lock could not be released: {e}");
            }
            return Err(in_project(start, e));
        }
    };
    let json = args.format == RunFormat::Jsonl;
    let interrupted = on_interrupt(handle.canceller());
    let summary = follow(handle, json)?;
    if !json && !dry {
        print_summary(&summary, &p);
    }
    // The last events are committed before the process ends, and the lock released after them;
    // what could not be is said.
    for w in log.map(|l| l.close()).unwrap_or_default() {
        eprintln!("warning: {w}");
    }
    if let Some(Err(e)) = held.map(thund_native::HeldRunLock::release) {
        eprintln!("warning: the run lock could not be released: {e}");
    }
    if interrupted.load(Ordering::SeqCst) {
        bail!(Failure::interrupted("interrupted: the run stopped; tables keep their last commits"));
    }
    if let Some(e) = &summary.error {
        bail!(Failure::failed(format!("the run failed: {e}")));
    }
    let failed = summary.flows.iter().filter(|f| f.phase == RunPhase::Failed).count();
    match (dry, failed) {
        (true, 0) => {
            println!("dry run ok on {name}: {} flows planned, nothing written", summary.flows.len());
            Ok(())
        }
        (true, _) => bail!(Failure::usage("the dry run found problems: fix the flows marked FAILED above")),
        (false, 0) => Ok(()),
        (false, n) => bail!(Failure::failed(format!("the run failed: {n} of {} flows failed", summary.flows.len()))),
    }
}

/// On the first Ctrl-C, asks the run to stop (`cancel`: a native run stops after the commits
/// under way; a Spark run is interrupted on the server) and sets the returned flag; the run then
/// ends as usual and the command exits 130. A second Ctrl-C quits at once.
fn on_interrupt(cancel: Arc<dyn Fn() + Send + Sync>) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let set = Arc::clone(&flag);
    let watcher = std::thread::Builder::new().name("thund-ctrl-c".into()).spawn(move || {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else { return };
        rt.block_on(async {
            if tokio::signal::ctrl_c().await.is_err() {
                return;
            }
            set.store(true, Ordering::SeqCst);
            eprintln!("\ninterrupted: stopping the run (Ctrl-C again quits at once)");
            cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(130);
            }
        });
    });
    if let Err(e) = watcher {
        eprintln!("warning: Ctrl-C will end the process without stopping the run cleanly: {e}");
    }
    flag
}

/// Prints events as they arrive (plain lines, or one JSON object per line) and returns the
/// run's summary.
fn follow(mut run: Box<dyn RunHandle>, json: bool) -> anyhow::Result<RunSummary> {
    let terminal = std::io::stdout().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
    // On a terminal, a live line per flow; elsewhere plain lines (or JSON), stdout locked per
    // batch of events.
    let mut live = (terminal && !json).then(crate::progress::Live::new);
    while let Some(events) = run.poll_events() {
        if let Some(view) = live.as_mut() {
            // Never under our stdout lock: the view's ticker thread draws too.
            events.iter().for_each(|e| view.event(e));
            continue;
        }
        let mut out = std::io::stdout().lock();
        for e in events {
            if json {
                let line = serde_json::json!({
                    "timestamp": rfc3339(e.timestamp),
                    "element": e.element,
                    "phase": e.phase.map(|p| p.as_str()),
                    "message": e.message,
                    "details": e.details,
                });
                writeln!(out, "{line}")?;
                continue;
            }
            let time = rfc3339(e.timestamp);
            let phase = match (e.phase, &e.details.warning) {
                (Some(p), _) => p.as_str(),
                (None, Some(_)) => "WARNING",
                (None, None) => "",
            };
            let mut line = format!("{} {phase:<9} {}", &time[11..23], e.message);
            if let Some(n) = e.details.rows_written {
                line.push_str(&format!(" ({n} rows"));
                if let Some(late) = e.details.num_rows_dropped_by_watermark.filter(|n| *n > 0) {
                    line.push_str(&format!(", {late} late rows dropped by the watermark"));
                }
                if let Some(ms) = e.details.duration_ms {
                    line.push_str(&format!(", {ms} ms"));
                }
                line.push(')');
            }
            writeln!(out, "{line}")?;
            if let Some(err) = &e.details.error {
                if e.phase == Some(RunPhase::Failed) {
                    writeln!(out, "             {err}")?;
                }
            }
        }
        out.flush()?;
    }
    if let Some(view) = live {
        view.finish();
    }
    Ok(run.finish()?)
}

/// The widest a name column of the run summary grows.
const MAX_NAME_COLUMN: usize = 64;

fn print_summary(s: &RunSummary, p: &knut_thund::ir::Pipeline) {
    if s.flows.is_empty() {
        return;
    }
    // A view writes no rows: it says what it is instead of `0`.
    let views: std::collections::BTreeSet<String> =
        p.datasets.iter().filter(|d| d.kind.is_view()).map(|d| d.name.to_string()).collect();
    // Capped: Rust's formatter refuses widths past u16::MAX, and a longer name
    // only has to overflow its column, not stop the summary.
    let w = s.flows.iter().map(|f| f.target.len()).max().unwrap_or(7).clamp(7, MAX_NAME_COLUMN);
    // A materialized view's refresh technique, where the backend chose one.
    let refreshed = s.flows.iter().any(|f| f.technique.is_some());
    let header = format!("{:w$}  {:9}  {:>10}  {:>9}", "dataset", "state", "rows", "time");
    println!("\n{}", if refreshed { format!("{header}  refresh") } else { header });
    for f in &s.flows {
        let rows = if views.contains(&f.target) { "view".to_string() } else { f.rows_written.to_string() };
        let line = format!("{:w$}  {:9}  {:>10}  {:>8.2}s", f.target, f.phase.as_str(), rows, f.duration.as_secs_f64());
        match &f.technique {
            Some(t) => println!("{line}  {t}"),
            None => println!("{line}"),
        }
    }
    for f in s.flows.iter().filter(|f| f.rows_dropped_by_watermark > 0) {
        println!("{:w$}  {} late input rows dropped by the watermark", f.target, f.rows_dropped_by_watermark);
    }
    let checked: Vec<_> = s.flows.iter().filter_map(|f| f.data_quality.as_ref()).collect();
    if checked.is_empty() {
        return;
    }
    println!("\n{:w$}  {:24}  {:>8}  {:>10}  action", "dataset", "expectation", "passed", "rows");
    for dq in checked {
        for e in &dq.expectations {
            let total = e.passed_records + e.failed_records;
            let action = format!("{:?}", e.action).to_ascii_lowercase();
            println!(
                "{:w$}  {:24}  {:>8}  {:>10}  {action}",
                e.dataset,
                e.name,
                crate::render::pass_rate(e.passed_records, e.failed_records),
                format!("{}/{total}", e.passed_records)
            );
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

/// `query`, on any backend.
/// Where and how `thund query` writes its result.
struct QueryOutput {
    format: QueryFormat,
    file: Option<PathBuf>,
    schema: bool,
}

fn query(start: &Path, target: &BackendArgs, sql: &str, out: QueryOutput) -> anyhow::Result<()> {
    let typed = matches!(out.format, QueryFormat::Parquet | QueryFormat::Arrow);
    match (&out.file, typed) {
        (None, true) => {
            let name = format!("{:?}", out.format).to_lowercase();
            bail!(Failure::usage(format!("--format {name} writes a file: name it with --output FILE")))
        }
        (Some(_), false) => {
            bail!(Failure::usage("--output writes a typed result: use it with --format parquet or arrow"))
        }
        _ => {}
    }
    let backend = backends::pick(target, EngineOptions::default())?;
    let p = match load_valid(start, Parses::Keep) {
        Ok(p) => Some(p),
        Err(e) if backend.needs_project() => return Err(e),
        Err(_) => None,
    };
    let result = backend.query(p.as_ref(), sql)?;
    if out.schema {
        print!("{}", crate::render::schema_lines(&result.schema));
    } else if let Some(file) = &out.file {
        crate::render::typed(&result.schema, &result.batches, out.format, file)?;
    } else {
        print!("{}", crate::render::batches(&result.schema, &result.batches, out.format)?);
    }
    Ok(())
}

/// Which events `thund events` prints.
struct EventFilter {
    run: Option<String>,
    all: bool,
    dataset: Option<String>,
    levels: Vec<String>,
    types: Vec<String>,
}

impl EventFilter {
    fn keeps(&self, e: &LoggedEvent, run: Option<&str>) -> bool {
        let named = |want: &str, got: Option<&str>| {
            got.is_some_and(|g| {
                g.eq_ignore_ascii_case(want) || g.rsplit('.').next().is_some_and(|n| n.eq_ignore_ascii_case(want))
            })
        };
        run.is_none_or(|r| e.origin.update_id == r)
            && self.dataset.as_deref().is_none_or(|d| named(d, e.origin.dataset_name.as_deref()))
            && (self.levels.is_empty() || self.levels.iter().any(|l| l.eq_ignore_ascii_case(&e.level)))
            && (self.types.is_empty() || self.types.iter().any(|t| t.eq_ignore_ascii_case(&e.event_type)))
    }
}

fn events(start: &Path, filter: &EventFilter, format: EventsFormat) -> anyhow::Result<()> {
    use thund_native::event_log;
    let p = load_valid(start, Parses::Drop)?;
    let location = event_log::location(&p)?;
    for level in &filter.levels {
        if !["INFO", "WARN", "ERROR", "METRICS"].iter().any(|l| l.eq_ignore_ascii_case(level)) {
            bail!(Failure::usage(format!("--level `{level}`: levels are INFO, WARN, ERROR and METRICS")));
        }
    }
    let rt = runtime()?;
    let reading = |e: thund_native::NativeError| anyhow::Error::new(e).context(format!("reading {location}"));
    let mut out = std::io::stdout().lock();
    let mut printer = EventPrinter { format, run: None, printed: 0 };
    if filter.all {
        // Every event, printed as it is read: a long log is never held decoded whole.
        let runs = rt.block_on(event_log::runs(&p)).map_err(reading)?;
        printer.start(&mut out, &format!("{} runs", runs.len()))?;
        let mut print = |e: LoggedEvent| -> anyhow::Result<()> {
            if filter.keeps(&e, None) {
                printer.print(&mut out, &e)?;
            }
            Ok(())
        };
        let mut failed = None;
        rt.block_on(event_log::read_each(&p, |e| {
            // Printing stops at the first failure (a closed pipe); the read stops with it.
            let result = print(e);
            let ok = result.is_ok();
            if let Err(e) = result {
                failed = Some(e);
            }
            ok
        }))
        .map_err(reading)?;
        if let Some(e) = failed {
            return Err(e);
        }
        return printer.end(&mut out);
    }
    // One run's events are read alone.
    let Some((id, logged)) = rt.block_on(event_log::read_run(&p, filter.run.as_deref())).map_err(reading)? else {
        let Some(id) = &filter.run else {
            bail!(Failure::usage(format!("pipeline `{}` has no runs yet: run `thund run` first", p.name)))
        };
        let runs = rt.block_on(event_log::runs(&p)).map_err(reading)?;
        let known = if runs.is_empty() { "none".to_string() } else { runs.join(", ") };
        bail!(Failure::usage(format!("no run `{id}` in the event log {location} (runs: {known})")))
    };
    printer.run = Some(id.clone());
    printer.start(&mut out, &format!("run {id}"))?;
    for e in logged.iter().filter(|e| filter.keeps(e, Some(&id))) {
        printer.print(&mut out, e)?;
    }
    printer.end(&mut out)
}

/// Prints events one by one in a format of `thund events`.
struct EventPrinter {
    format: EventsFormat,
    /// The one run shown (its id is then not repeated on each line).
    run: Option<String>,
    printed: usize,
}

impl EventPrinter {
    fn start(&mut self, out: &mut impl Write, heading: &str) -> anyhow::Result<()> {
        match self.format {
            EventsFormat::Table => writeln!(out, "{heading}")?,
            EventsFormat::Json => write!(out, "[")?,
            EventsFormat::Jsonl => {}
        }
        Ok(())
    }

    fn print(&mut self, out: &mut impl Write, e: &LoggedEvent) -> anyhow::Result<()> {
        self.printed += 1;
        match self.format {
            EventsFormat::Jsonl => writeln!(out, "{}", serde_json::to_string(e)?)?,
            // As a pretty-printed array, written element by element.
            EventsFormat::Json => {
                let item = serde_json::to_string_pretty(e)?.replace('\n', "\n  ");
                write!(out, "{}\n  {item}", if self.printed > 1 { "," } else { "" })?;
            }
            EventsFormat::Table => {
                let state = e.details.get(&e.event_type).and_then(|d| d.get("status").or(d.get("state")));
                let mut line = format!(
                    "{} {:7} {:15} {:9} {}",
                    e.timestamp.get(..23).unwrap_or(&e.timestamp),
                    e.level,
                    e.event_type,
                    state.and_then(|s| s.as_str()).unwrap_or(""),
                    e.message
                );
                if let Some(n) = e.details.pointer("/flow_progress/metrics/num_output_rows") {
                    line.push_str(&format!(" ({n} rows)"));
                }
                if self.run.is_none() {
                    line.push_str(&format!("  [run {}]", e.origin.update_id));
                }
                writeln!(out, "{line}")?;
                if let Some(err) = &e.error {
                    writeln!(out, "             {err}")?;
                }
            }
        }
        Ok(())
    }

    fn end(&mut self, out: &mut impl Write) -> anyhow::Result<()> {
        if self.format == EventsFormat::Json {
            writeln!(out, "{}]", if self.printed > 0 { "\n" } else { "" })?;
        }
        Ok(())
    }
}

fn doctor(remote: Option<String>, format: DoctorFormat) -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("doctor");
    let frontend = crate::sample::create(&project).and_then(|_| load_valid(&project, Parses::Keep));
    let ok = functional_status(
        "knut-thund/frontend",
        "parse_validate_plan",
        frontend.is_ok(),
        match &frontend {
            Ok(p) => format!("{} datasets, {} flows", p.datasets.len(), p.flows.len()),
            Err(e) => e.to_string(),
        },
    );
    if ok {
        if let Ok(p) = &frontend {
            let lowered = p.to_sdp();
            functional_status(
                "knut-thund/backend_spark",
                "lower_to_sdp",
                lowered.is_ok(),
                match lowered {
                    Ok(g) => format!("{} outputs, {} flows", g.outputs.len(), g.flows.len()),
                    Err(e) => e.to_string(),
                },
            );
            let outcome = NativeBackend::new().run(p).and_then(|r| r.finish());
            let detail = match &outcome {
                Ok(s) if !s.failed() => format!(
                    "{} flows, {} rows written",
                    s.flows.len(),
                    s.flows.iter().map(|f| f.rows_written).sum::<u64>()
                ),
                Ok(s) => s.flows.iter().filter_map(|f| f.error.clone()).collect::<Vec<_>>().join("; "),
                Err(e) => e.to_string(),
            };
            if functional_status(
                "thund-native/run",
                "sample_pipeline",
                matches!(&outcome, Ok(s) if !s.failed()),
                detail,
            ) {
                let q = runtime()?.block_on(thund_native::query(
                    p,
                    "SELECT count(*) AS n FROM revenue_by_region",
                    &EngineOptions::default(),
                ));
                functional_status(
                    "thund-native/query",
                    "read_delta_back",
                    q.is_ok(),
                    match q {
                        Ok(r) => format!("{} row(s)", r.batches.iter().map(|b| b.num_rows()).sum::<usize>()),
                        Err(e) => e.to_string(),
                    },
                );
            }
        }
    }
    if let Some(url) = remote {
        spark_doctor(&url, frontend.as_ref().ok(), dir.path())?;
    }
    let rows = status_rows();
    match format {
        DoctorFormat::Table => print!("{}", render_table(&rows)),
        DoctorFormat::Json => println!("{}", serde_json::to_string_pretty(&rows)?),
    }
    let red = rows.iter().filter(|r| !r.ok).count();
    if red > 0 {
        bail!(Failure::failed(format!("{red} of {} checks failed", rows.len())));
    }
    Ok(())
}

/// Spark rows of `thund doctor`: reachable, version, capabilities, lowering, a live run — through
/// the same backend value `run` uses.
fn spark_doctor(url: &str, sample: Option<&Pipeline>, scratch: &Path) -> anyhow::Result<()> {
    let args = BackendArgs {
        backend: crate::cli::Backend::Spark,
        remote: Some(crate::cli::RemoteUrl(url.to_string())),
        stall_timeout: knut_pipelines::ClientOptions::default().stall_timeout.unwrap_or_default(),
    };
    let spark = backends::pick(&args, EngineOptions::default()).and_then(|b| {
        b.connect()?;
        Ok(b)
    });
    let spark = match spark {
        Ok(b) => {
            functional_status("knut-pipelines/client", "connect_and_version", true, b.capabilities().name);
            b
        }
        Err(e) => {
            functional_status("knut-pipelines/client", "connect_and_version", false, e.to_string());
            return Ok(());
        }
    };
    let caps = spark.capabilities();
    // A server without the pipelines service (before Spark 4.1) can run nothing.
    functional_status(
        "knut-thund/backend_spark",
        "capabilities",
        caps.has(&Feature::Batch),
        caps.features
            .iter()
            .map(Feature::name)
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(", "),
    );
    if let Some(p) = sample {
        let checked = spark.check(p).and_then(|_| p.to_sdp());
        functional_status(
            "knut-thund/backend_spark",
            "lower_sample_pipeline",
            checked.is_ok(),
            match checked {
                Ok(g) => format!("{} outputs, {} flows", g.outputs.len(), g.flows.len()),
                Err(e) => e.to_string().replace('\n', " "),
            },
        );
    }
    // A server-side dry run of a two-dataset pipeline: defines the graph and has Spark resolve it,
    // writing nothing (works against remote servers too, which cannot see local files).
    let project = scratch.join("spark-doctor");
    std::fs::create_dir_all(&project)?;
    std::fs::write(
        project.join("spark-pipeline.yml"),
        "name: doctor\nlibraries:\n  - glob:\n      include: '*.sql'\n",
    )?;
    std::fs::write(
        project.join("a.sql"),
        "CREATE MATERIALIZED VIEW thund_doctor_a AS SELECT 1 AS x;\n\
         CREATE MATERIALIZED VIEW thund_doctor_b AS SELECT x + 1 AS y FROM thund_doctor_a;\n",
    )?;
    let outcome = load(&project).and_then(|p| {
        let options = RunOptions { dry: true, ..Default::default() };
        Ok(spark.run_with(&p, &options)?.finish()?)
    });
    functional_status(
        "knut-thund/backend_spark",
        "live_dry_run",
        matches!(&outcome, Ok(s) if !s.failed()),
        match outcome {
            Ok(s) => s.flows.iter().map(|f| format!("{} {}", f.flow, f.phase)).collect::<Vec<_>>().join(", "),
            Err(e) => e.to_string(),
        },
    );
    Ok(())
}
