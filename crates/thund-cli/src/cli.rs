//! The command line, as clap parses it. Nothing here runs anything: `commands` does.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// Declarative data pipelines in Spark SQL, run embedded or on Spark.
#[derive(Debug, Parser)]
#[command(name = "thund", version, about)]
pub(crate) struct Cli {
    /// Format of the diagnostics log on stderr (`THUND_LOG` sets its level).
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum Backend {
    /// Embedded: DataFusion + Delta Lake, in this process.
    Native,
    /// A Spark Connect server running Spark Declarative Pipelines.
    Spark,
}

#[derive(Debug, clap::Args)]
pub(crate) struct ProjectArg {
    /// Project folder (or spec file); the spec is searched from here upwards.
    #[arg(short = 'p', long = "project", default_value = ".")]
    pub project: PathBuf,
}

#[derive(Debug, clap::Args)]
pub(crate) struct BackendArgs {
    /// Where to run (or check) the pipeline.
    #[arg(long, value_enum, default_value_t = Backend::Native)]
    pub backend: Backend,
    /// Spark Connect URL (`sc://host:port`).
    #[arg(long, env = "SPARK_REMOTE")]
    pub remote: Option<RemoteUrl>,
    /// Spark: give a run up when the server sends nothing for this long (`90s`, `30m`, `2h`;
    /// `0`: never). A dead connection is noticed within a minute whatever this says.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub stall_timeout: std::time::Duration,
}

/// `90`, `90s`, `30m`, `2h`.
fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (number, unit) = t.split_at(t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len()));
    let n: u64 = number.parse().map_err(|_| format!("`{s}` is not a duration such as 90s, 30m or 2h"))?;
    let seconds = match unit.trim() {
        "" | "s" => n,
        "m" => n.saturating_mul(60),
        "h" => n.saturating_mul(3600),
        _ => return Err(format!("`{s}`: the unit is s, m or h")),
    };
    Ok(std::time::Duration::from_secs(seconds))
}

/// A Spark Connect URL as given; its `Debug` hides the token.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct RemoteUrl(pub String);

impl std::str::FromStr for RemoteUrl {
    type Err = std::convert::Infallible;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(RemoteUrl(s.to_string()))
    }
}

impl std::fmt::Debug for RemoteUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}", knut_pipelines::redact_url(&self.0))
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct SelectionArgs {
    /// Refresh only these datasets (comma-separated; `+name` adds upstream, `name+` downstream).
    #[arg(long, value_delimiter = ',')]
    pub refresh: Vec<String>,
    /// Clear these datasets and reprocess all their input.
    #[arg(long, value_delimiter = ',')]
    pub full_refresh: Vec<String>,
    /// Full refresh of every dataset.
    #[arg(long)]
    pub full_refresh_all: bool,
}

/// What `run` and `dry-run` share.
#[derive(Debug, clap::Args)]
pub(crate) struct RunArgs {
    #[command(flatten)]
    pub project: ProjectArg,
    #[command(flatten)]
    pub target: BackendArgs,
    #[command(flatten)]
    pub selection: SelectionArgs,
    /// How the run's events are shown: a live view on a terminal or plain lines (`text`), or one
    /// JSON object per event (`jsonl`).
    #[arg(long, value_enum, default_value_t = RunFormat::Text)]
    pub format: RunFormat,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Create a sample project that runs out of the box, or a spec for a Databricks pipeline.
    Init {
        /// Where to create it (with --from-dlt: ignored; the spec goes beside the project's
        /// files).
        #[arg(default_value = "thund-demo")]
        dir: PathBuf,
        /// Write the `spark-pipeline.yml` equivalent to this DLT pipeline settings file (the
        /// settings' JSON, or a bundle's `resources/*.yml`), in the project's folder.
        #[arg(long, value_name = "SETTINGS")]
        from_dlt: Option<PathBuf>,
    },
    /// Parse and validate the pipeline.
    Validate {
        #[command(flatten)]
        project: ProjectArg,
    },
    /// Validate, plan every query and check the backend can run it; writes nothing.
    DryRun {
        #[command(flatten)]
        run: RunArgs,
    },
    /// Say how each materialized view's next refresh would go, and what keeps it from refreshing
    /// incrementally; runs nothing and writes nothing.
    Explain {
        #[command(flatten)]
        project: ProjectArg,
        /// Materialized views to explain (default: every one).
        views: Vec<String>,
    },
    /// Show the dependency graph.
    Graph {
        #[command(flatten)]
        project: ProjectArg,
        /// Output format (`sdp`: the dataflow graph sent to Spark, as JSON).
        #[arg(long, value_enum, default_value_t = GraphFormat::Text)]
        format: GraphFormat,
    },
    /// Run the pipeline.
    Run {
        #[command(flatten)]
        run: RunArgs,
        /// Flows run at once (default: number of cores).
        #[arg(long, default_value_t = 0)]
        max_concurrent_flows: usize,
        /// Memory limit of the native engine (e.g. `512M`, `4G`, `50%` of this machine's);
        /// aggregates and sorts spill to disk beyond it, and what cannot fails with an error
        /// (a hash join's smaller side must fit). Else `THUND_MEMORY_LIMIT`, else the spec's
        /// `thund.memoryLimit`, else 80% of this machine's memory.
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
        /// The file a typed result (`--format parquet` or `arrow`) is written to.
        #[arg(long, short = 'o', value_name = "FILE")]
        output: Option<PathBuf>,
        /// Print the result's columns and their types instead of its rows.
        #[arg(long)]
        schema: bool,
    },
    /// Print the event log: the last run's events, or those the filters select.
    Events {
        #[command(flatten)]
        project: ProjectArg,
        /// Run id (default: the last run).
        #[arg(long, conflicts_with_all = ["last", "all"])]
        run: Option<String>,
        /// The last run (the default).
        #[arg(long, conflicts_with = "all")]
        last: bool,
        /// Every run.
        #[arg(long)]
        all: bool,
        /// Only events of this dataset (its name, or qualified name).
        #[arg(long)]
        dataset: Option<String>,
        /// Only events of these levels (INFO, WARN, ERROR, METRICS; comma-separated).
        #[arg(long, value_delimiter = ',')]
        level: Vec<String>,
        /// Only events of these types (create_update, flow_definition, flow_progress,
        /// update_progress; comma-separated).
        #[arg(long = "type", value_delimiter = ',')]
        event_type: Vec<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = EventsFormat::Table)]
        format: EventsFormat,
    },
    /// Run the pipeline's unit tests (tests/**/*.yml) on the embedded engine, in scratch
    /// storage: exit 0 when all pass, 1 when one fails, 2 for a broken test file.
    Test {
        #[command(flatten)]
        project: ProjectArg,
        #[command(flatten)]
        backend: BackendArgs,
        /// Only the tests whose name contains this text.
        #[arg(long, value_name = "TEXT")]
        filter: Option<String>,
        /// Also write the results as JUnit XML to this file, for CI.
        #[arg(long, value_name = "FILE")]
        junit: Option<PathBuf>,
    },
    /// Serve a web view of the pipeline: its graph, its runs and each dataset's state, live.
    Ui {
        #[command(flatten)]
        project: ProjectArg,
        /// Port to listen on (0: any free port).
        #[arg(long, default_value_t = 8421)]
        port: u16,
        /// Address to listen on. Anything but the loopback makes the view reachable from other
        /// machines, without authentication.
        #[arg(long, default_value = "127.0.0.1")]
        bind: std::net::IpAddr,
    },
    /// Check what works here: front-end, native engine, Spark reachability.
    Doctor {
        /// Spark Connect URL to check as well.
        #[arg(long, env = "SPARK_REMOTE")]
        remote: Option<RemoteUrl>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = DoctorFormat::Table)]
        format: DoctorFormat,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum RunFormat {
    Text,
    Jsonl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum GraphFormat {
    Text,
    Dot,
    Mermaid,
    Json,
    Sdp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum QueryFormat {
    Table,
    Csv,
    Json,
    /// Parquet, typed, to the file `--output` names.
    Parquet,
    /// An Arrow IPC file, typed, to the file `--output` names.
    Arrow,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EventsFormat {
    /// Aligned columns.
    #[value(alias = "text")]
    Table,
    /// One JSON array.
    Json,
    /// One JSON object per line.
    Jsonl,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum DoctorFormat {
    Table,
    Json,
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(super::parse_duration("90").unwrap().as_secs(), 90);
        assert_eq!(super::parse_duration("30m").unwrap().as_secs(), 1800);
        assert_eq!(super::parse_duration("2h").unwrap().as_secs(), 7200);
        assert!(super::parse_duration("-5s").is_err() && super::parse_duration("5d").is_err());
    }

    #[test]
    fn remote_urls_hide_their_token() {
        let cli = super::Cli::parse_from(["thund", "query", "--remote", "sc://h:1/;Token=s3cret", "SELECT 1"]);
        let shown = format!("{cli:?}");
        assert!(shown.contains("sc://h:1") && !shown.contains("s3cret"), "{shown}");
    }
}
