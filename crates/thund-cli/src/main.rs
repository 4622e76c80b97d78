//! `thund`: run Spark Declarative Pipelines embedded (DataFusion + Delta) or on Spark.
//!
//! `main` is thin: parse flags, run the command, map the outcome to an exit code in one place
//! (0 ok, 1 a run failed, 2 usage or configuration error). `commands` does the work;
//! `render` prints diagnostics, tables and graphs; `progress` is the live per-flow view a run
//! shows on a terminal (plain lines or JSON elsewhere); `sample` is what `thund init` writes.

mod commands;
mod progress;
mod render;
mod sample;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};

// Query execution allocates and frees large Arrow buffers at a high rate; the system allocator
// returned them to the OS and faulted them back in (a fifth of a TPC-H run's CPU time in page
// faults), mimalloc keeps them. Built without transparent huge pages (`no_thp`): with them,
// every region mimalloc touched was faulted in and zeroed 2 MiB at a time, and TPC-H SF1 peaked
// at 1.1–1.3 GiB instead of 0.7–1.0 GiB, at the same speed.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Declarative data pipelines in Spark SQL, run embedded or on Spark.
#[derive(Debug, Parser)]
#[command(name = "thund", version, about)]
struct Cli {
    /// Log format of diagnostics on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    /// Embedded: DataFusion + Delta Lake, in this process.
    Native,
    /// A Spark Connect server running Spark Declarative Pipelines.
    Spark,
}

#[derive(Debug, clap::Args)]
struct ProjectArg {
    /// Project folder (or spec file); the spec is searched from here upwards.
    #[arg(short = 'p', long = "project", default_value = ".")]
    project: PathBuf,
}

#[derive(Debug, clap::Args)]
struct BackendArgs {
    /// Where to run (or check) the pipeline.
    #[arg(long, value_enum, default_value_t = Backend::Native)]
    backend: Backend,
    /// Spark Connect URL (`sc://host:port`).
    #[arg(long, env = "SPARK_REMOTE")]
    remote: Option<String>,
}

#[derive(Debug, clap::Args)]
struct SelectionArgs {
    /// Refresh only these datasets (comma-separated; `+name` adds upstream, `name+` downstream).
    #[arg(long, value_delimiter = ',')]
    refresh: Vec<String>,
    /// Clear these datasets and reprocess all their input.
    #[arg(long, value_delimiter = ',')]
    full_refresh: Vec<String>,
    /// Full refresh of every dataset.
    #[arg(long)]
    full_refresh_all: bool,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Create a sample project that runs out of the box.
    Init {
        /// Where to create it.
        #[arg(default_value = "thund-demo")]
        dir: PathBuf,
    },
    /// Parse and validate the pipeline.
    Validate {
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Validate, plan every query and check the backend can run it; writes nothing.
    DryRun {
        #[command(flatten)]
        project: ProjectArg,
        #[command(flatten)]
        target: BackendArgs,
        #[command(flatten)]
        selection: SelectionArgs,
    },
    /// Show the dependency graph.
    Graph {
        #[command(flatten)]
        project: ProjectArg,
        /// Output format (`sdp`: the dataflow graph sent to Spark, as JSON).
        #[arg(long, value_enum, default_value_t = GraphFormatArg::Text)]
        format: GraphFormatArg,
    },
    /// Run the pipeline.
    Run {
        #[command(flatten)]
        project: ProjectArg,
        #[command(flatten)]
        target: BackendArgs,
        #[command(flatten)]
        selection: SelectionArgs,
        /// Flows run at once (default: number of cores).
        #[arg(long, default_value_t = 0)]
        max_concurrent_flows: usize,
        /// Memory limit of the engine (e.g. `512M`, `2G`); aggregates and sorts spill to disk
        /// beyond it (a hash join's smaller side must still fit).
        #[arg(long)]
        memory_limit: Option<String>,
    },
    /// Run SQL over the pipeline's tables and views.
    Query {
        #[command(flatten)]
        project: ProjectArg,
        #[command(flatten)]
        target: BackendArgs,
        /// The query (Spark SQL).
        sql: String,
        /// Output format.
        #[arg(long, value_enum, default_value_t = QueryFormat::Table)]
        format: QueryFormat,
    },
    /// Print a run's event log.
    Events {
        #[command(flatten)]
        project: ProjectArg,
        /// Run id (default: the last run).
        #[arg(long)]
        run: Option<String>,
        /// The last run (the default).
        #[arg(long, conflicts_with = "run")]
        last: bool,
        /// Output format.
        #[arg(long, value_enum, default_value_t = EventsFormat::Text)]
        format: EventsFormat,
    },
    /// Check what works here: front-end, native engine, Spark reachability.
    Doctor {
        /// Spark Connect URL to check as well.
        #[arg(long, env = "SPARK_REMOTE")]
        remote: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DoctorFormat::Table)]
        format: DoctorFormat,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum GraphFormatArg {
    Text,
    Dot,
    Mermaid,
    Json,
    Sdp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum QueryFormat {
    Table,
    Csv,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EventsFormat {
    Text,
    Jsonl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DoctorFormat {
    Table,
    Json,
}

fn init_tracing(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("THUND_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Json => builder.json().try_init(),
        LogFormat::Text => builder.try_init(),
    };
}

fn main() -> ExitCode {
    // Like other command-line tools, end quietly when the reader of stdout goes away
    // (`thund query … | head`); Rust ignores SIGPIPE by default, so printing would panic. A run
    // cut short this way is crash-safe like any other interrupted run.
    #[cfg(unix)]
    // SAFETY: called first in `main`, before any other thread exists; restores the default
    // disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    match commands::dispatch(cli) {
        Ok(code) => code,
        Err(e) => ExitCode::from(render::report_error(&e)),
    }
}
