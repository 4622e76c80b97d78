//! The backend a command runs on, picked once from the flags: every command that runs, checks or
//! queries takes the same path whatever the backend. Besides the core's `ExecBackend`, the CLI
//! needs one more thing of a backend, [`Backend::query`]; its Arrow results stay out of the core.

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use knut_thund::backend::ExecBackend;
use knut_thund::ir::Pipeline;
use thund_native::{EngineOptions, NativeBackend, NativeError, NativeOptions};

use crate::cli::{self, BackendArgs};
use crate::failure::Failure;

/// A query's result: its schema (known even when there are no rows) and its rows.
pub(crate) struct QueryResult {
    pub schema: SchemaRef,
    pub batches: Vec<RecordBatch>,
}

/// A backend as the CLI uses it.
pub(crate) trait Backend: ExecBackend {
    /// Whether [`Backend::query`] needs the project (its tables live in the project's storage).
    fn needs_project(&self) -> bool;

    /// Runs `sql` over the pipeline's tables (`p`: the project, when there is one).
    fn query(&self, p: Option<&Pipeline>, sql: &str) -> anyhow::Result<QueryResult>;

    /// Whether a run takes the pipeline's run lock itself; for one that does not, the CLI takes
    /// it (`thund_native::lock_run`), so one run of a pipeline goes at a time on any backend.
    fn locks_its_runs(&self) -> bool {
        false
    }
}

impl Backend for NativeBackend {
    fn needs_project(&self) -> bool {
        true
    }

    fn locks_its_runs(&self) -> bool {
        true
    }

    fn query(&self, p: Option<&Pipeline>, sql: &str) -> anyhow::Result<QueryResult> {
        let p = p.ok_or_else(|| Failure::usage("the native backend queries a project's tables: pass -p <project>"))?;
        let rt = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
        match rt.block_on(thund_native::query(p, sql, &EngineOptions::default())) {
            Ok(r) => Ok(QueryResult { schema: r.schema, batches: r.batches }),
            Err(e @ NativeError::Plan { .. }) => Err(Failure::usage(e.to_string()).into()),
            Err(e) => Err(e.into()),
        }
    }
}

#[cfg(feature = "spark")]
impl Backend for knut_thund::spark::SparkBackend {
    fn needs_project(&self) -> bool {
        false
    }

    fn query(&self, p: Option<&Pipeline>, sql: &str) -> anyhow::Result<QueryResult> {
        // Inside a project, unqualified names resolve to its catalog and database, as in a run.
        let namespace = p.map(|p| (p.catalog.as_str(), p.database.as_str()));
        // The project's SQL settings (ANSI mode, say) hold for its queries as for its runs.
        let settings: Vec<(&str, &str)> = p
            .map(|p| {
                p.configuration
                    .iter()
                    .filter(|(k, _)| k.to_ascii_lowercase().starts_with("spark.sql."))
                    .map(|(k, v)| (k.as_str(), v.as_str()))
                    .collect()
            })
            .unwrap_or_default();
        let batches = self.query_in(namespace, &settings, sql)?;
        let schema =
            batches.first().map_or_else(|| SchemaRef::new(arrow::datatypes::Schema::empty()), RecordBatch::schema);
        Ok(QueryResult { schema, batches })
    }
}

/// The backend `args` asks for; `engine` configures the native one.
pub(crate) fn pick(args: &BackendArgs, engine: EngineOptions) -> anyhow::Result<Box<dyn Backend>> {
    match args.backend {
        cli::Backend::Native => Ok(Box::new(NativeBackend::with_options(NativeOptions { engine }))),
        cli::Backend::Spark => spark(args.remote.clone().map(|r| r.0), args.stall_timeout),
    }
}

/// The Spark backend for `--remote` / `SPARK_REMOTE`; without one, it can only check and lower.
#[cfg(feature = "spark")]
fn spark(remote: Option<String>, stall: std::time::Duration) -> anyhow::Result<Box<dyn Backend>> {
    use knut_thund::spark::SparkBackend;
    let options = knut_pipelines::ClientOptions {
        stall_timeout: (!stall.is_zero()).then_some(stall),
        ..knut_pipelines::ClientOptions::default()
    };
    Ok(Box::new(remote.map_or_else(SparkBackend::offline, SparkBackend::new).with_client_options(options)))
}

#[cfg(not(feature = "spark"))]
fn spark(_remote: Option<String>, _stall: std::time::Duration) -> anyhow::Result<Box<dyn Backend>> {
    Err(Failure::usage("this thund was built without the `spark` feature: rebuild with `--features spark`").into())
}
