//! One function per command; each returns the process exit code.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context};
use knut_thund::backend::{rfc3339, ExecBackend, RunHandle, RunOptions, RunPhase, RunSummary};
use knut_thund::error::ThundError;
use knut_thund::ir::Pipeline;
use knut_thund::plan::Selection;
use knut_thund::render::GraphFormat;
use knut_thund::status::{functional_status, render_table, status_rows};
use thund_native::{EngineOptions, NativeBackend, NativeOptions, Storage};

use crate::render::{ProjectError, Usage};
use crate::{
    Backend, BackendArgs, Cli, Command, DoctorFormat, EventsFormat, GraphFormatArg, QueryFormat, SelectionArgs,
};

pub fn dispatch(cli: Cli) -> anyhow::Result<ExitCode> {
    let json = cli.log_format == crate::LogFormat::Json;
    match cli.command {
        Command::Init { dir } => init(&dir),
        Command::Validate { project } => validate(&project.project),
        Command::DryRun { project, target: BackendArgs { backend, remote }, selection } => {
            dry_run(&project.project, backend, remote, selection, json)
        }
        Command::Graph { project, format } => graph(&project.project, format),
        Command::Run {
            project,
            target: BackendArgs { backend, remote },
            selection,
            max_concurrent_flows,
            memory_limit,
        } => run(&project.project, backend, remote, selection, max_concurrent_flows, memory_limit, json),
        Command::Query { project, target: BackendArgs { backend, remote }, sql, format } => {
            query(&project.project, backend, remote, &sql, format)
        }
        Command::Events { project, run, last: _, format } => events(&project.project, run, format),
        Command::Doctor { remote, format } => doctor(remote, format),
    }
}

/// The folder a project's file paths are relative to, even when loading fails.
fn project_root(start: &Path) -> PathBuf {
    knut_thund::spec::discover(start)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_else(|| start.to_path_buf())
}

fn in_project(start: &Path, error: ThundError) -> anyhow::Error {
    anyhow::Error::new(ProjectError { root: project_root(start), error })
}

fn load(start: &Path) -> anyhow::Result<Pipeline> {
    let p = knut_thund::frontend::load(start).map_err(|e| in_project(start, e))?;
    p.validate().map_err(|e| in_project(start, e))?;
    Ok(p)
}

fn selection(s: SelectionArgs) -> Selection {
    Selection { refresh: s.refresh, full_refresh: s.full_refresh, full_refresh_all: s.full_refresh_all }
}

fn init(dir: &Path) -> anyhow::Result<ExitCode> {
    crate::sample::create(dir)?;
    println!("Created a sample pipeline in {}. Run it with:\n  thund run -p {}", dir.display(), dir.display());
    Ok(ExitCode::SUCCESS)
}

fn validate(start: &Path) -> anyhow::Result<ExitCode> {
    let p = load(start)?;
    let plan = knut_thund::plan::plan(&p, &Selection::default()).map_err(|e| in_project(start, e))?;
    println!(
        "pipeline `{}` is valid: {} datasets, {} flows, {} stages",
        p.name,
        p.datasets.len(),
        p.flows.len(),
        plan.stages.len()
    );
    Ok(ExitCode::SUCCESS)
}

/// The Spark backend for `--remote` / `SPARK_REMOTE`.
#[cfg(feature = "spark")]
fn spark_backend(remote: Option<String>) -> anyhow::Result<knut_thund::spark::SparkBackend> {
    match remote {
        Some(url) => Ok(knut_thund::spark::SparkBackend::new(url)),
        None => bail!(Usage("--backend spark needs a server: pass --remote sc://host:port or set SPARK_REMOTE".into())),
    }
}

#[cfg(not(feature = "spark"))]
fn spark_backend(_remote: Option<String>) -> anyhow::Result<std::convert::Infallible> {
    bail!(Usage("this thund was built without the `spark` feature: rebuild with `--features spark`".into()))
}

fn dry_run(
    start: &Path,
    backend: Backend,
    remote: Option<String>,
    sel: SelectionArgs,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let p = load(start)?;
    if backend == Backend::Spark {
        if remote.is_none() {
            return spark_dry_run(start, &p);
        }
        let spark = spark_backend(remote)?;
        let options = RunOptions { selection: selection(sel), dry: true, max_concurrent_flows: 0 };
        #[cfg(feature = "spark")]
        {
            let run = spark.run_with(&p, &options).map_err(|e| in_project(start, e))?;
            let summary = follow(run, json)?;
            if summary.failed() {
                eprintln!("the server's dry run found problems: fix the flows marked FAILED above");
                return Ok(ExitCode::from(2));
            }
            println!("dry run ok on {}: graph defined and resolved by the server, nothing written", spark.version());
            return Ok(ExitCode::SUCCESS);
        }
        #[cfg(not(feature = "spark"))]
        match (spark, options) {}
    }
    let native = NativeBackend::new();
    native.check(&p).map_err(|e| in_project(start, e))?;
    let options = RunOptions { selection: selection(sel), dry: true, max_concurrent_flows: 0 };
    let run = native.run_with(&p, &options).map_err(|e| in_project(start, e))?;
    let summary = follow(run, json)?;
    if summary.failed() {
        eprintln!("dry run found problems: fix the flows marked FAILED above");
        return Ok(ExitCode::from(2));
    }
    println!("dry run ok: {} flows planned, nothing written", summary.flows.len());
    Ok(ExitCode::SUCCESS)
}

/// The Spark check that needs no server: what no targeted Spark line can run.
fn spark_check(start: &Path, p: &Pipeline) -> anyhow::Result<()> {
    knut_thund::backend::spark_check_any_version(p).map_err(|e| in_project(start, e))
}

/// Without a server, a Spark dry run checks everything that needs none: what no targeted line
/// can run, and the lowered dataflow graph. It says plainly that nothing was sent.
fn spark_dry_run(start: &Path, p: &Pipeline) -> anyhow::Result<ExitCode> {
    spark_check(start, p)?;
    let g = p.to_sdp();
    g.validate().context("the lowered dataflow graph is invalid")?;
    println!(
        "capability check ok (what no Spark line can run); dataflow graph lowered: {} outputs, {} flows",
        g.outputs.len(),
        g.flows.len()
    );
    println!("nothing was sent: pass --remote sc://host:port (or set SPARK_REMOTE) to have the server resolve it");
    Ok(ExitCode::SUCCESS)
}

fn graph(start: &Path, format: GraphFormatArg) -> anyhow::Result<ExitCode> {
    let p = load(start)?;
    let out = match format {
        GraphFormatArg::Text => knut_thund::render::render(&p, GraphFormat::Text),
        GraphFormatArg::Dot => knut_thund::render::render(&p, GraphFormat::Dot),
        GraphFormatArg::Mermaid => knut_thund::render::render(&p, GraphFormat::Mermaid),
        GraphFormatArg::Json => knut_thund::render::render(&p, GraphFormat::Json),
        GraphFormatArg::Sdp => {
            let g = p.to_sdp();
            g.validate().context("the lowered dataflow graph is invalid")?;
            format!("{}\n", serde_json::to_string_pretty(&g)?)
        }
    };
    print!("{out}");
    Ok(ExitCode::SUCCESS)
}

/// Parses `512M`, `2G`, `1048576`.
fn parse_size(s: &str) -> anyhow::Result<usize> {
    let s = s.trim();
    let (num, mult) = match s.char_indices().find(|(_, c)| c.is_ascii_alphabetic()) {
        Some((i, _)) => {
            let unit = s[i..].to_ascii_uppercase();
            let mult: usize = match unit.trim_end_matches("IB").trim_end_matches('B') {
                "" => 1,
                "K" => 1 << 10,
                "M" => 1 << 20,
                "G" => 1 << 30,
                _ => bail!(Usage(format!("--memory-limit `{s}`: unknown unit (use K, M or G)"))),
            };
            (&s[..i], mult)
        }
        None => (s, 1),
    };
    let n: f64 = num.trim().parse().map_err(|_| Usage(format!("--memory-limit `{s}` is not a size")))?;
    Ok((n * mult as f64) as usize)
}

fn run(
    start: &Path,
    backend: Backend,
    remote: Option<String>,
    sel: SelectionArgs,
    max_concurrent_flows: usize,
    memory_limit: Option<String>,
    json: bool,
) -> anyhow::Result<ExitCode> {
    let p = load(start)?;
    if backend == Backend::Spark {
        // Without a server, refuse what no targeted Spark line can run; with one, the backend
        // checks against the server's own version.
        if remote.is_none() {
            spark_check(start, &p)?;
        }
        let spark = spark_backend(remote)?;
        let options = RunOptions { selection: selection(sel), dry: false, max_concurrent_flows };
        #[cfg(feature = "spark")]
        {
            let run = spark.run_with(&p, &options).map_err(|e| in_project(start, e))?;
            let summary = follow(run, json)?;
            if !json {
                print_summary(&summary);
            }
            return Ok(if summary.failed() { ExitCode::from(1) } else { ExitCode::SUCCESS });
        }
        #[cfg(not(feature = "spark"))]
        match (spark, options) {}
    }
    let memory_limit = memory_limit.as_deref().map(parse_size).transpose()?;
    let native =
        NativeBackend::with_options(NativeOptions { engine: EngineOptions { memory_limit, target_partitions: 0 } });
    let options = RunOptions { selection: selection(sel), dry: false, max_concurrent_flows };
    let run = native.run_with(&p, &options).map_err(|e| in_project(start, e))?;
    let summary = follow(run, json)?;
    if !json {
        print_summary(&summary);
    }
    Ok(if summary.failed() { ExitCode::from(1) } else { ExitCode::SUCCESS })
}

/// Prints events as they arrive (plain lines, or one JSON object per line) and returns the
/// run's summary.
fn follow(mut run: impl RunHandle, json: bool) -> anyhow::Result<RunSummary> {
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
            let phase = e.phase.map(|p| p.as_str()).unwrap_or("");
            let mut line = format!("{} {phase:<9} {}", &time[11..23], e.message);
            if let Some(n) = e.details.rows_written {
                line.push_str(&format!(" ({n} rows"));
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

fn print_summary(s: &RunSummary) {
    if s.flows.is_empty() {
        return;
    }
    let w = s.flows.iter().map(|f| f.target.len()).max().unwrap_or(7).max(7);
    println!("\n{:w$}  {:9}  {:>10}  {:>9}", "dataset", "state", "rows", "time");
    for f in &s.flows {
        println!("{:w$}  {:9}  {:>10}  {:>8.2}s", f.target, f.phase.as_str(), f.rows_written, f.duration.as_secs_f64());
    }
    let checked: Vec<_> = s.flows.iter().filter_map(|f| f.data_quality.as_ref()).collect();
    if checked.is_empty() {
        return;
    }
    println!("\n{:w$}  {:24}  {:>8}  {:>10}  action", "dataset", "expectation", "passed", "rows");
    for dq in checked {
        for e in &dq.expectations {
            let total = e.passed_records + e.failed_records;
            let rate = if total == 0 { 100.0 } else { 100.0 * e.passed_records as f64 / total as f64 };
            let action = format!("{:?}", e.action).to_ascii_lowercase();
            println!(
                "{:w$}  {:24}  {:>7.1}%  {:>10}  {action}",
                e.dataset,
                e.name,
                rate,
                format!("{}/{total}", e.passed_records)
            );
        }
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread().enable_all().build()?)
}

fn query(
    start: &Path,
    backend: Backend,
    remote: Option<String>,
    sql: &str,
    format: QueryFormat,
) -> anyhow::Result<ExitCode> {
    if backend == Backend::Spark {
        let spark = spark_backend(remote)?;
        // Inside a project, unqualified names resolve to its catalog and database, as in a run.
        let namespace = knut_thund::frontend::load(start).ok().map(|p| (p.catalog, p.database));
        #[cfg(feature = "spark")]
        {
            let batches = match spark.query_in(namespace.as_ref().map(|(c, d)| (c.as_str(), d.as_str())), sql) {
                Ok(b) => b,
                Err(e @ ThundError::Query(_)) => bail!(Usage(e.to_string())),
                Err(e) => return Err(e.into()),
            };
            let schema = match batches.first() {
                Some(b) => b.schema(),
                None => std::sync::Arc::new(arrow::datatypes::Schema::empty()),
            };
            print!("{}", crate::render::batches(&schema, &batches, format)?);
            return Ok(ExitCode::SUCCESS);
        }
        #[cfg(not(feature = "spark"))]
        match (spark, namespace) {}
    }
    let p = load(start)?;
    let result = runtime()?.block_on(thund_native::query(&p, sql, &EngineOptions::default()));
    let result = match result {
        Ok(r) => r,
        Err(e @ thund_native::NativeError::Plan { .. }) => bail!(Usage(e.to_string())),
        Err(e) => return Err(e.into()),
    };
    print!("{}", crate::render::batches(&result.schema, &result.batches, format)?);
    Ok(ExitCode::SUCCESS)
}

fn events(start: &Path, run: Option<String>, format: EventsFormat) -> anyhow::Result<ExitCode> {
    let p = load(start)?;
    let storage = Storage::of(&p)?;
    let (runs, text) = runtime()?.block_on(async {
        let runs = storage.event_runs().await?;
        let id = match &run {
            Some(id) if runs.contains(id) => id.clone(),
            _ => return Ok::<_, thund_native::NativeError>((runs, None)),
        };
        let text = storage.get(&storage.events_key(&id)).await?;
        Ok((runs, text.map(|t| (id, t))))
    })?;
    let (id, text) = match (run, text) {
        (_, Some((id, t))) => (id, String::from_utf8_lossy(&t).into_owned()),
        (Some(id), None) => {
            bail!(Usage(format!("no run `{id}` in {} (runs: {})", storage.display("events"), runs.join(", "))))
        }
        (None, None) => match runs.last() {
            Some(id) => {
                let key = storage.events_key(id);
                let t = runtime()?
                    .block_on(storage.get(&key))?
                    .with_context(|| format!("reading {}", storage.display(&key)))?;
                (id.clone(), String::from_utf8_lossy(&t).into_owned())
            }
            None => bail!(Usage(format!("pipeline `{}` has no runs yet: run `thund run` first", p.name))),
        },
    };
    let path = storage.display(&storage.events_key(&id));
    match format {
        EventsFormat::Jsonl => print!("{text}"),
        EventsFormat::Text => {
            println!("run {id}");
            for line in text.lines() {
                let v: serde_json::Value = serde_json::from_str(line).with_context(|| format!("{path}: bad line"))?;
                println!(
                    "{} {:5} {:9} {}",
                    v["timestamp"].as_str().unwrap_or(""),
                    v["level"].as_str().unwrap_or(""),
                    v["phase"].as_str().unwrap_or(""),
                    v["message"].as_str().unwrap_or("")
                );
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Live self-checks; every row is the outcome of a check just performed.
fn doctor(remote: Option<String>, format: DoctorFormat) -> anyhow::Result<ExitCode> {
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("doctor");
    let frontend = crate::sample::create(&project).and_then(|_| load(&project));
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
            let lowered = p.to_sdp().validate();
            functional_status(
                "knut-thund/backend_spark",
                "lower_to_sdp",
                lowered.is_ok(),
                match lowered {
                    Ok(()) => format!("{} outputs, {} flows", p.to_sdp().outputs.len(), p.to_sdp().flows.len()),
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
    Ok(if rows.iter().all(|r| r.ok) { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// Spark rows of `thund doctor`: reachable, version, capabilities, lowering, a live run.
#[cfg(feature = "spark")]
fn spark_doctor(url: &str, sample: Option<&Pipeline>, scratch: &Path) -> anyhow::Result<()> {
    use knut_thund::spark::SparkBackend;
    let spark = SparkBackend::new(url);
    let version = spark.detect_version();
    let reachable = functional_status(
        "knut-pipelines/client",
        "connect_and_version",
        version.is_ok(),
        match &version {
            Ok(v) => format!("Spark {v}"),
            Err(e) => e.to_string(),
        },
    );
    if !reachable {
        return Ok(());
    }
    let caps = spark.capabilities();
    let supported = knut_thund::backend::spark_capabilities(spark.version()).is_some();
    functional_status(
        "knut-thund/backend_spark",
        "capabilities",
        supported,
        format!(
            "batch={} streaming={} cdc={} expectations={} event_time={} sinks={} persistent_views={}",
            caps.batch, caps.streaming, caps.cdc, caps.expectations, caps.event_time, caps.sinks, caps.persistent_views
        ),
    );
    if let Some(p) = sample {
        let checked = spark
            .check(p)
            .map(|_| p.to_sdp())
            .and_then(|g| g.validate().map(|_| g).map_err(|e| knut_thund::error::ThundError::Internal(e.to_string())));
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

#[cfg(not(feature = "spark"))]
fn spark_doctor(_url: &str, _sample: Option<&Pipeline>, _scratch: &Path) -> anyhow::Result<()> {
    functional_status("knut-pipelines/client", "connect_and_version", false, "built without the `spark` feature");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_memory_sizes() {
        assert_eq!(parse_size("512M").unwrap(), 512 << 20);
        assert_eq!(parse_size("2G").unwrap(), 2 << 30);
        assert_eq!(parse_size("1.5GiB").unwrap(), 3 << 29);
        assert_eq!(parse_size("4096").unwrap(), 4096);
        assert!(parse_size("12Q").is_err());
    }
}
