//! The live spark-connect-sdp backend: defines the lowered graph on a Spark Connect server, starts
//! the run and translates the streamed event sentences ([`super::events`]).
//!
//! What the backend can run depends on the server's Spark version. Before it is contacted, it
//! claims what any targeted line could run ([`super::any_version`]), so a pipeline no server can
//! run is refused without one; [`ExecBackend::connect`] learns the version, and the capabilities
//! narrow to that line's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, OnceLock};

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;

use arrow::record_batch::RecordBatch;
use knut_pipelines::{ClientError, ClientOptions, PipelineRun, PipelinesClient};

use super::events::EventTranslator;
use crate::backend::{Capabilities, ExecBackend, RunEvent, RunHandle, RunSummary, RunThread};
use crate::error::{Result, ThundError};
use crate::ir::{quote_ident, Pipeline, QualifiedName};
use crate::prepare::PreparedRun;

/// How long a cancelled run waits for the server to stop it.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(15);

/// A connection made by [`ExecBackend::connect`], kept for the run that follows: the client and
/// the runtime its channel lives on.
type Connection = (tokio::runtime::Runtime, PipelinesClient);

/// Runs pipelines on a Spark Connect server with Spark Declarative Pipelines.
pub struct SparkBackend {
    /// `None`: no server; only a dry run, which lowers the graph without sending it, can run.
    url: Option<String>,
    forced_version: Option<String>,
    detected: OnceLock<String>,
    options: ClientOptions,
    connection: Mutex<Option<Connection>>,
}

impl std::fmt::Debug for SparkBackend {
    /// The URL without its token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SparkBackend")
            .field("url", &self.url.as_deref().map(knut_pipelines::redact_url))
            .field("forced_version", &self.forced_version)
            .field("detected", &self.detected.get())
            .finish_non_exhaustive()
    }
}

impl SparkBackend {
    /// A backend for the server at `url` (`sc://host:port`). Nothing is contacted until
    /// [`ExecBackend::connect`], a run, a query or [`SparkBackend::detect_version`].
    pub fn new(url: impl Into<String>) -> Self {
        SparkBackend {
            url: Some(url.into()),
            forced_version: None,
            detected: OnceLock::new(),
            options: ClientOptions::default(),
            connection: Mutex::new(None),
        }
    }

    /// A backend without a server: it checks and lowers a pipeline (a dry run) and says that
    /// nothing was sent; real runs and queries are usage errors.
    pub fn offline() -> Self {
        SparkBackend { url: None, ..SparkBackend::new("") }
    }

    /// Treats the server as `version` whatever it reports.
    pub fn with_version(mut self, version: impl Into<String>) -> Self {
        self.forced_version = Some(version.into());
        self
    }

    /// Connect and request timeouts.
    pub fn with_client_options(mut self, options: ClientOptions) -> Self {
        self.options = options;
        self
    }

    /// The version capabilities are computed for (forced or detected), once known.
    pub fn version(&self) -> Option<&str> {
        self.forced_version.as_deref().or(self.detected.get().map(String::as_str))
    }

    fn url(&self) -> Result<&str> {
        self.url.as_deref().ok_or_else(|| {
            ThundError::Usage("--backend spark needs a server: pass --remote sc://host:port or set SPARK_REMOTE".into())
        })
    }

    fn runtime() -> Result<tokio::runtime::Runtime> {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ThundError::Backend(format!("cannot start the Spark client runtime: {e}")))
    }

    /// A new connection; the server's version is recorded.
    fn open(&self) -> Result<Connection> {
        let rt = Self::runtime()?;
        let client = rt.block_on(PipelinesClient::connect_with(self.url()?, self.options)).map_err(client_error)?;
        let _ = self.detected.set(client.version().to_string());
        Ok((rt, client))
    }

    /// The connection [`ExecBackend::connect`] made, or a new one.
    fn take_connection(&self) -> Result<Connection> {
        let kept = self.connection.lock().ok().and_then(|mut c| c.take());
        match kept {
            Some(c) => Ok(c),
            None => self.open(),
        }
    }

    /// Connects, and returns the server's Spark version (capabilities follow it from then on).
    pub fn detect_version(&self) -> Result<String> {
        let (rt, client) = self.open()?;
        let version = client.version().to_string();
        let _ = rt.block_on(client.close());
        Ok(version)
    }

    /// Runs a SQL query on the server and returns its rows.
    pub fn query(&self, sql: &str) -> Result<Vec<RecordBatch>> {
        self.query_in(None, &[], sql)
    }

    /// Runs a SQL query with unqualified names resolved in `namespace` (catalog, database), in a
    /// session with the SQL `settings` (a project's `spark.sql.*` configuration, such as ANSI
    /// mode). A query the server rejects, or a setting it refuses, is [`ThundError::Query`].
    pub fn query_in(
        &self,
        namespace: Option<(&str, &str)>,
        settings: &[(&str, &str)],
        sql: &str,
    ) -> Result<Vec<RecordBatch>> {
        let (rt, mut client) = self.take_connection()?;
        rt.block_on(async {
            for (key, value) in settings {
                if let Err(e) = client.sql(&format!("SET {key} = {value}")).await {
                    let _ = client.close().await;
                    return Err(match e {
                        ClientError::Server(s) => ThundError::Query(format!("`SET {key} = {value}`: {s}")),
                        other => client_error(other),
                    });
                }
            }
            if let Some((catalog, database)) = namespace {
                // The database may not exist before the first run; then names stay unresolved
                // and the query's own error says so.
                let _ = client.sql(&format!("USE {}.{}", quote_ident(catalog), quote_ident(database))).await;
            }
            let rows = client.sql(sql).await.map_err(|e| match e {
                ClientError::Server(s) => ThundError::Query(s.to_string()),
                other => client_error(other),
            });
            let _ = client.close().await;
            rows
        })
    }

    /// Where the server keeps checkpoints: the spec's `storage` as a URI, relative paths resolved
    /// against the project folder. `None`: the spec has none.
    fn storage_uri(p: &Pipeline) -> Option<String> {
        let s = p.storage.as_deref()?;
        // `file://store` is relative to the project, as a bare `store` is (and as natively).
        let s = s.strip_prefix("file://").filter(|rest| !rest.starts_with('/')).unwrap_or(s);
        if s.contains("://") {
            return Some(s.to_string());
        }
        let path = std::path::Path::new(s);
        let abs = if path.is_absolute() { path.to_path_buf() } else { p.root.join(path) };
        Some(format!("file://{}", abs.display()))
    }

    /// A dry run without a server: the graph is lowered and checked here; nothing is sent.
    fn lower_only(&self, run: PreparedRun) -> Result<Box<dyn RunHandle>> {
        let g = run.pipeline.to_sdp()?;
        let lowered = format!(
            "capability check ok (what no Spark line can run); dataflow graph lowered: {} outputs, {} flows",
            g.outputs.len(),
            g.flows.len()
        );
        RunThread::spawn("thund-spark-lower", run.event_log, Box::new(|| {}), move |events| {
            events.emit(RunEvent::now("run", None, lowered));
            events.emit(RunEvent::now(
                "run",
                None,
                "nothing was sent: pass --remote sc://host:port (or set SPARK_REMOTE) to have the server resolve it",
            ));
            RunSummary::default()
        })
    }
}

/// Row counts of the tables among `names` that exist on the server, by lower-cased qualified
/// name: Spark's run events carry no row counts, so a flow's output rows come from its table's
/// count before and after the run. Two round trips: `SHOW TABLES` per database, then one
/// `count(*)` of every table found (Parquet answers from its footers). A failure is said in the
/// run's events and leaves the counts out, never the run failed.
async fn count_rows(
    client: &mut PipelinesClient,
    names: &[QualifiedName],
    events: &EventTranslator,
) -> BTreeMap<String, u64> {
    let started = std::time::Instant::now();
    let mut counts = BTreeMap::new();
    let counted =
        async {
            let mut existing = Vec::new();
            let databases: BTreeSet<(&str, &str)> =
                names.iter().map(|n| (n.catalog.as_str(), n.database.as_str())).collect();
            for (catalog, database) in databases {
                let show = format!("SHOW TABLES IN {}.{}", quote_ident(catalog), quote_ident(database));
                let tables: BTreeSet<String> = match client.sql(&show).await {
                    Ok(batches) => string_column(&batches, "tableName").into_iter().map(|t| t.to_lowercase()).collect(),
                    // The database does not exist yet (a first run): none of its tables does.
                    Err(e) if e.to_string().contains("SCHEMA_NOT_FOUND") => BTreeSet::new(),
                    Err(e) => return Err(e),
                };
                existing.extend(names.iter().filter(|n| {
                    n.catalog == catalog && n.database == database && tables.contains(&n.name.to_lowercase())
                }));
            }
            if existing.is_empty() {
                return Ok(());
            }
            let query = existing
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    format!(
                        "SELECT {i} AS i, count(*) AS n FROM {}.{}.{}",
                        quote_ident(&n.catalog),
                        quote_ident(&n.database),
                        quote_ident(&n.name)
                    )
                })
                .collect::<Vec<_>>()
                .join(" UNION ALL ");
            for b in client.sql(&query).await? {
                let ids = arrow::compute::cast(b.column(0), &arrow::datatypes::DataType::Int64);
                let ns = arrow::compute::cast(b.column(1), &arrow::datatypes::DataType::Int64);
                let (Ok(ids), Ok(ns)) = (ids, ns) else { continue };
                let (ids, ns) = (ids.as_primitive::<Int64Type>(), ns.as_primitive::<Int64Type>());
                for r in 0..b.num_rows() {
                    if let Some(n) = existing.get(ids.value(r) as usize) {
                        counts.insert(n.to_string().to_lowercase(), ns.value(r).max(0) as u64);
                    }
                }
            }
            Ok::<(), ClientError>(())
        };
    if let Err(e) = counted.await {
        events.emit(RunEvent::now("run", None, format!("the tables' row counts are unavailable: {e}")));
        counts.clear();
    }
    tracing::debug!(tables = names.len(), ms = started.elapsed().as_millis() as u64, "Spark row counts");
    counts
}

/// The values of text column `name` across `batches`.
fn string_column(batches: &[RecordBatch], name: &str) -> Vec<String> {
    let mut out = Vec::new();
    for b in batches {
        let Some(c) = b.column_by_name(name) else { continue };
        let Ok(c) = arrow::compute::cast(c, &arrow::datatypes::DataType::Utf8) else { continue };
        let c = c.as_string::<i32>();
        out.extend((0..c.len()).filter(|i| !c.is_null(*i)).map(|i| c.value(i).to_string()));
    }
    out
}

fn client_error(e: ClientError) -> ThundError {
    match e {
        ClientError::Url { .. } => ThundError::Usage(e.to_string()),
        other => ThundError::Backend(other.to_string()),
    }
}

impl ExecBackend for SparkBackend {
    fn capabilities(&self) -> Capabilities {
        match self.version() {
            Some(v) => super::capabilities(v).unwrap_or_else(|| {
                // A server older than 4.1 has no pipelines service: nothing runs there.
                Capabilities::none(format!("{} (Spark {v}: no pipelines service)", super::BACKEND_NAME))
            }),
            None => super::any_version(),
        }
    }

    fn connect(&self) -> Result<()> {
        let connected = self.connection.lock().map(|c| c.is_some()).unwrap_or(false);
        if self.url.is_none() || connected {
            return Ok(());
        }
        let connection = self.open()?;
        if let Ok(mut kept) = self.connection.lock() {
            *kept = Some(connection);
        }
        Ok(())
    }

    fn start(&self, run: PreparedRun) -> Result<Box<dyn RunHandle>> {
        if self.url.is_none() && run.is_dry() {
            return self.lower_only(run);
        }
        self.url()?;
        if !run.is_dry() && run.pipeline.storage.is_none() {
            // Without a storage root the server can only validate: a run that writes nothing is
            // no run, so say so instead of succeeding.
            return Err(ThundError::Usage(
                "the spec has no `storage`: a run on Spark needs one for the server's checkpoints (add `storage: <folder or URL>` to the spec, or use `thund dry-run`)"
                    .into(),
            ));
        }
        let graph = run.pipeline.to_sdp()?;
        let (rt, mut client) = self.take_connection()?;
        let p = &run.pipeline;
        let storage = Self::storage_uri(p);
        let selection = &run.options.selection;
        let selective = !selection.refresh.is_empty();
        let request = PipelineRun {
            graph_id: String::new(),
            // The server refuses a selection sent with `full_refresh_all` ("Cannot specify a subset
            // to full refresh when full refresh all is set to true"): the flag alone says it all.
            full_refresh: match selection.full_refresh_all {
                true => Vec::new(),
                false => run.plan.full_refresh.iter().map(ToString::to_string).collect(),
            },
            full_refresh_all: selection.full_refresh_all,
            refresh: if selective { run.plan.selected.iter().map(ToString::to_string).collect() } else { vec![] },
            dry: run.options.dry || storage.is_none(),
            // The server wants a storage root even for a dry run, which writes nothing there.
            storage: storage.clone().or_else(|| Some(format!("file:///tmp/thund-dry-run-{}", client.session_id()))),
            tag: Some(format!("thund-run-{}", client.session_id())),
        };
        // The pipeline's database is created on a real run, as the native backend does; SDP
        // itself only creates tables.
        let create_db = (!request.dry)
            .then(|| format!("CREATE DATABASE IF NOT EXISTS {}.{}", quote_ident(&p.catalog), quote_ident(&p.database)));
        let no_storage = storage.is_none();
        let (pipeline, plan) = (run.pipeline, run.plan);
        let full_refresh = plan.full_refresh.clone();
        let cancel = Arc::new(tokio::sync::Notify::new());
        let cancel_rx = cancel.clone();
        let on_cancel = Box::new(move || cancel.notify_one());
        RunThread::spawn("thund-spark-run", run.event_log, on_cancel, move |events| {
            let mut translator = EventTranslator::new(&pipeline, &plan.selected, events);
            if no_storage {
                translator.emit(RunEvent::now(
                    "run",
                    None,
                    "the spec has no `storage`: this is a validate-only dry run on the server; nothing is written",
                ));
            }
            // Open-source SDP has no incremental refresh: the clause is taken, and said to mean
            // a complete recompute there.
            for d in pipeline.datasets.iter().filter(|d| d.details.refresh_policy.is_some()) {
                let policy = d.details.refresh_policy.map_or("", |p| p.as_sql());
                translator.emit(RunEvent::now(
                    d.name.to_string(),
                    None,
                    format!(
                        "{}: REFRESH POLICY {policy} has no effect on Spark, which recomputes every materialized view fully on each refresh",
                        d.name
                    ),
                ));
            }
            rt.block_on(async move {
                translator.emit(RunEvent::now("run", None, format!("defining the dataflow graph on {}", client.url())));
                // The pipeline's SQL settings hold while the server analyses the definitions, not
                // only during the run: a flow's query is analysed when it is defined, and what it
                // reads from the session then stays (a cast's ANSI mode: with the setting only in
                // the graph's configuration, `CAST('x' AS INT)` still failed under
                // `spark.sql.ansi.enabled: false`, measured on 4.1.4, 4.2.1 and 4.3.0), as do
                // streaming file sources without a declared schema.
                for (k, v) in graph.sql_conf.iter().filter(|(k, _)| k.starts_with("spark.sql.")) {
                    if let Err(e) = client.sql(&format!("SET {k}={v}")).await {
                        return translator.finish(Err(e.to_string()), false).await;
                    }
                }
                if let Some(ddl) = create_db {
                    if let Err(e) = client.sql(&ddl).await {
                        return translator.finish(Err(e.to_string()), false).await;
                    }
                }
                let graph_id = match client.define_graph(&graph).await {
                    Ok(id) => id,
                    Err(e) => return translator.finish(Err(e.to_string()), false).await,
                };
                let request = PipelineRun { graph_id: graph_id.clone(), ..request };
                let counted = translator.counted_tables();
                let before = match request.dry {
                    true => None,
                    false => Some(count_rows(&mut client, &counted, &translator).await),
                };
                let mut interrupter = client.clone();
                let mut stopped = false;
                // Once cancelled, the server gets this long to end the run before we stop waiting.
                let grace = tokio::time::sleep(STOP_GRACE);
                tokio::pin!(grace);
                let outcome = {
                    let running = client.start_run(&request, &mut translator);
                    tokio::pin!(running);
                    loop {
                        tokio::select! {
                            r = &mut running => break r,
                            _ = cancel_rx.notified(), if !stopped => {
                                stopped = true;
                                let _ = interrupter.interrupt_tag(request.tag.as_deref().unwrap_or_default()).await;
                                grace.as_mut().reset(tokio::time::Instant::now() + STOP_GRACE);
                            }
                            _ = &mut grace, if stopped => {
                                break Err(knut_pipelines::ClientError::Protocol(format!(
                                    "the server did not stop the run within {} s of the cancel", STOP_GRACE.as_secs()
                                )));
                            }
                        }
                    }
                };
                if let (Some(before), Ok(()), false) = (&before, &outcome, stopped) {
                    let after = count_rows(&mut client, &counted, &translator).await;
                    translator.record_counts(before, &after, &full_refresh);
                }
                // Cleaning up is a courtesy: a server that stopped answering gets a few seconds.
                let courtesy = std::time::Duration::from_secs(5);
                let _ = tokio::time::timeout(courtesy, client.drop_graph(&graph_id)).await;
                let _ = tokio::time::timeout(courtesy, client.close()).await;
                translator.finish(outcome.map_err(|e| e.to_string()), stopped).await
            })
        })
    }
}

#[cfg(test)]
mod debug_tests {
    #[test]
    fn debug_hides_the_token() {
        let b = super::SparkBackend::new("sc://h:1/;Token=s3cret");
        let shown = format!("{b:?}");
        assert!(shown.contains("sc://h:1") && !shown.contains("s3cret"), "{shown}");
    }
}
