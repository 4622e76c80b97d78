//! The live Spark Connect client: connection strings, the define-and-run dance, Arrow results and
//! server errors mapped to [`ClientError`].

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;
use std::time::{Duration, SystemTime};

use arrow::record_batch::RecordBatch;
use prost::Message;
use tonic::metadata::MetadataValue;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};
use tonic::{Code, Status, Streaming};

use crate::convert;
use crate::graph::DataflowGraph;
use crate::proto::google::rpc;
use crate::proto::spark::connect as pb;
use pb::execute_plan_response::ResponseType as Response;
use pb::spark_connect_service_client::SparkConnectServiceClient;

/// Port a Spark Connect server listens on unless the URL says otherwise.
pub const DEFAULT_PORT: u16 = 15002;

/// `Result` with [`ClientError`] as the default error.
pub(crate) type Result<T, E = ClientError> = std::result::Result<T, E>;

/// What went wrong talking to a Spark Connect server. Never contains the token.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ClientError {
    /// The connection string is malformed (a usage error).
    #[error("invalid Spark Connect URL `{url}`: {reason}")]
    Url {
        /// The URL as given, token removed.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The server could not be reached or the connection broke.
    #[error("cannot reach the Spark Connect server at {url}: {message}")]
    Transport {
        /// Where we tried to connect (no token).
        url: String,
        /// What the transport said.
        message: String,
    },
    /// A request did not finish in time.
    #[error("the Spark Connect server at {url} did not answer within {seconds} s ({what})")]
    Timeout {
        /// Where (no token).
        url: String,
        /// The limit.
        seconds: u64,
        /// The request that timed out.
        what: String,
    },
    /// The server refused or failed a request.
    #[error("{0}")]
    Server(ServerError),
    /// The server answered something this client does not understand (a bug or a version gap).
    #[error("unexpected answer from the Spark Connect server: {0}")]
    Protocol(String),
}

/// A server-side failure, with Spark's error class and SQLSTATE when it sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerError {
    /// gRPC status code (`INTERNAL`, `INVALID_ARGUMENT`, …).
    pub code: String,
    /// Spark's error class (`TABLE_OR_VIEW_NOT_FOUND`), when known.
    pub error_class: Option<String>,
    /// SQLSTATE (`42P01`), when known.
    pub sql_state: Option<String>,
    /// The message as the server wrote it.
    pub message: String,
}

impl fmt::Display for ServerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Spark's messages usually start with `[ERROR_CLASS]` and end with `SQLSTATE: …`; add
        // what is missing rather than repeating it.
        if let Some(class) = &self.error_class {
            if !self.message.starts_with(&format!("[{class}]")) {
                write!(f, "[{class}] ")?;
            }
        }
        f.write_str(self.message.trim_end())?;
        if let Some(state) = &self.sql_state {
            if !self.message.contains(state.as_str()) {
                write!(f, " SQLSTATE: {state}")?;
            }
        }
        Ok(())
    }
}

/// A parsed `sc://host[:port][/;key=value;…]` connection string.
#[derive(Clone, PartialEq, Eq)]
pub struct ConnectUrl {
    /// Host name or address.
    pub host: String,
    /// Port (default 15002).
    pub port: u16,
    /// Bearer token (`token=`); implies TLS. Never printed.
    pub token: Option<String>,
    /// `use_ssl=true`, or implied by a token.
    pub use_ssl: bool,
    /// `user_id=`.
    pub user_id: Option<String>,
    /// `session_id=` (a UUID); a fresh one otherwise.
    pub session_id: Option<String>,
    /// Other parameters, sent as request metadata as Spark's clients do.
    pub params: BTreeMap<String, String>,
}

impl fmt::Debug for ConnectUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConnectUrl")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("use_ssl", &self.use_ssl)
            .field("user_id", &self.user_id)
            .field("session_id", &self.session_id)
            .finish()
    }
}

impl fmt::Display for ConnectUrl {
    /// The URL without its token: safe for logs and errors.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sc://{}:{}", self.host, self.port)?;
        if self.use_ssl {
            f.write_str("/;use_ssl=true")?;
        }
        Ok(())
    }
}

impl FromStr for ConnectUrl {
    type Err = ClientError;

    fn from_str(url: &str) -> Result<Self> {
        let bad = |reason: &str| ClientError::Url { url: crate::redact_url(url), reason: reason.to_string() };
        let rest = url.strip_prefix("sc://").ok_or_else(|| bad("it must start with sc://"))?;
        let (authority, params) = match rest.split_once('/') {
            Some((a, p)) => (a, p),
            None => (rest, ""),
        };
        if authority.is_empty() {
            return Err(bad("the host is missing"));
        }
        let (host, port) = match authority.rsplit_once(':') {
            Some((h, p)) if !h.ends_with(']') || authority.starts_with('[') => {
                (h, p.parse::<u16>().map_err(|_| bad(&format!("port `{p}` is not a number from 1 to 65535")))?)
            }
            _ => (authority, DEFAULT_PORT),
        };
        if host.is_empty() || port == 0 {
            return Err(bad("the host or port is missing"));
        }
        let mut u = ConnectUrl {
            host: host.to_string(),
            port,
            token: None,
            use_ssl: false,
            user_id: None,
            session_id: None,
            params: BTreeMap::new(),
        };
        let params = params.strip_prefix(';').unwrap_or(params);
        for kv in params.split(';').filter(|s| !s.is_empty()) {
            let (k, v) = kv.split_once('=').ok_or_else(|| bad("parameters are written key=value"))?;
            // Keys in any case: `;Token=…` is a token too, and must not travel as plain metadata.
            match k.to_ascii_lowercase().as_str() {
                "token" => u.token = Some(v.to_string()),
                "use_ssl" => u.use_ssl = v.eq_ignore_ascii_case("true"),
                "user_id" => u.user_id = Some(v.to_string()),
                "session_id" => {
                    uuid::Uuid::parse_str(v).map_err(|_| bad("session_id must be a UUID"))?;
                    u.session_id = Some(v.to_string())
                }
                _ => {
                    u.params.insert(k.to_string(), v.to_string());
                }
            }
        }
        // A bearer token over plain text would leak it: a token always means TLS.
        u.use_ssl |= u.token.is_some();
        Ok(u)
    }
}

/// Timeouts of a client.
#[derive(Debug, Clone, Copy)]
pub struct ClientOptions {
    /// Time to establish the connection.
    pub connect_timeout: Duration,
    /// Time for a connected server's first answer (its version). A server busy with other
    /// sessions can take seconds to open a new one, so this is longer than the connect.
    pub handshake_timeout: Duration,
    /// Time for one request that is not a run (define, query, version).
    pub request_timeout: Duration,
    /// HTTP/2 keepalive: a ping this often, the connection given up when one is not answered
    /// within the same time. A server that stops answering mid-run (a frozen process, a dropped
    /// network path) fails the run instead of hanging it.
    pub keepalive: Duration,
    /// The longest a run may go without a word from the server (an event, or the end of the
    /// run) before it is given up as stalled; `None`: no limit. A live server quietly computing
    /// a long flow sends nothing meanwhile, so this is generous by default.
    pub stall_timeout: Option<Duration>,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
            handshake_timeout: Duration::from_secs(30),
            request_timeout: Duration::from_secs(300),
            keepalive: Duration::from_secs(20),
            stall_timeout: Some(Duration::from_secs(3600)),
        }
    }
}

/// One event of a pipeline run, as the server sent it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineEvent {
    /// Server time of the event.
    pub timestamp: SystemTime,
    /// Its text ("Flow spark_catalog.default.x has COMPLETED.").
    pub message: String,
}

/// Receives a run's events as they stream in.
pub trait PipelineEventSink {
    /// One event.
    fn on_event(&mut self, event: PipelineEvent);
}

impl<F: FnMut(PipelineEvent)> PipelineEventSink for F {
    fn on_event(&mut self, event: PipelineEvent) {
        self(event)
    }
}

/// What `StartRun` asks for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PipelineRun {
    /// The graph from [`PipelinesClient::define_graph`].
    pub graph_id: String,
    /// Datasets to clear and recompute.
    pub full_refresh: Vec<String>,
    /// Clear and recompute everything.
    pub full_refresh_all: bool,
    /// Datasets to update (empty: all).
    pub refresh: Vec<String>,
    /// Validate the graph on the server without running it.
    pub dry: bool,
    /// Where checkpoints and pipeline state live.
    pub storage: Option<String>,
    /// Operation tag, so that [`PipelinesClient::interrupt_tag`] can cancel the run.
    pub tag: Option<String>,
}

/// A Spark Connect session. Cheap to clone; clones share the connection and the session.
#[derive(Clone)]
pub struct PipelinesClient {
    grpc: SparkConnectServiceClient<Channel>,
    url: ConnectUrl,
    session_id: String,
    user_id: String,
    options: ClientOptions,
    version: String,
}

impl fmt::Debug for PipelinesClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PipelinesClient").field("url", &self.url).field("session_id", &self.session_id).finish()
    }
}

const CLIENT_TYPE: &str = concat!("thund/", env!("CARGO_PKG_VERSION"));

impl PipelinesClient {
    /// Connects to `url` (`sc://host[:port][/;token=…;use_ssl=true;user_id=…;session_id=…]`).
    pub async fn connect(url: &str) -> Result<Self> {
        Self::connect_with(url, ClientOptions::default()).await
    }

    /// Connects with explicit timeouts.
    pub async fn connect_with(url: &str, options: ClientOptions) -> Result<Self> {
        let parsed: ConnectUrl = url.parse()?;
        let scheme = if parsed.use_ssl { "https" } else { "http" };
        let host = if parsed.host.contains(':') && !parsed.host.starts_with('[') {
            format!("[{}]", parsed.host)
        } else {
            parsed.host.clone()
        };
        let transport = |message: String| ClientError::Transport { url: parsed.to_string(), message };
        let mut endpoint = Endpoint::from_shared(format!("{scheme}://{host}:{}", parsed.port))
            .map_err(|e| transport(e.to_string()))?
            .connect_timeout(options.connect_timeout)
            .http2_keep_alive_interval(options.keepalive)
            .keep_alive_timeout(options.keepalive)
            .keep_alive_while_idle(true)
            .tcp_nodelay(true)
            .user_agent(CLIENT_TYPE)
            .map_err(|e| transport(e.to_string()))?;
        if parsed.use_ssl {
            let tls = ClientTlsConfig::new().with_native_roots().with_webpki_roots().domain_name(parsed.host.clone());
            endpoint = endpoint.tls_config(tls).map_err(|e| transport(e.to_string()))?;
        }
        let channel = tokio::time::timeout(options.connect_timeout + Duration::from_secs(1), endpoint.connect())
            .await
            .map_err(|_| ClientError::Timeout {
                url: parsed.to_string(),
                seconds: options.connect_timeout.as_secs(),
                what: "connect".into(),
            })?
            .map_err(|e| transport(error_chain(&e)))?;
        let grpc = SparkConnectServiceClient::new(channel)
            .max_decoding_message_size(256 << 20)
            .max_encoding_message_size(256 << 20);
        let session_id = parsed.session_id.clone().unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let user_id = parsed
            .user_id
            .clone()
            .or_else(|| std::env::var("USER").ok())
            .filter(|u| !u.is_empty())
            .unwrap_or_else(|| "thund".into());
        let mut client = PipelinesClient { grpc, url: parsed, session_id, user_id, options, version: String::new() };
        // A TCP connect can succeed without a server behind it (proxies, port forwards): only an
        // answer proves one. The version is needed for capabilities anyway.
        let handshake = ClientOptions { request_timeout: options.handshake_timeout, ..options };
        let saved = std::mem::replace(&mut client.options, handshake);
        client.version = client.spark_version().await.map_err(|e| match e {
            ClientError::Server(s) => ClientError::Transport {
                url: client.url(),
                message: format!("the server did not answer as Spark Connect: {s}"),
            },
            other => other,
        })?;
        client.options = saved;
        Ok(client)
    }

    /// The Spark version the server reported when this client connected.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// The server's URL, without its token.
    pub fn url(&self) -> String {
        self.url.to_string()
    }

    /// This client's session id.
    pub fn session_id(&self) -> &str {
        &self.session_id
    }

    fn user_context(&self) -> Option<pb::UserContext> {
        Some(pb::UserContext { user_id: self.user_id.clone(), user_name: self.user_id.clone(), extensions: Vec::new() })
    }

    /// Wraps a message with the token and the timeout.
    fn request<T>(&self, message: T, timeout: Option<Duration>) -> Result<tonic::Request<T>> {
        let mut req = tonic::Request::new(message);
        if let Some(t) = timeout {
            req.set_timeout(t);
        }
        if let Some(token) = &self.url.token {
            let value = MetadataValue::try_from(format!("Bearer {token}"))
                .map_err(|_| ClientError::Url { url: self.url(), reason: "the token has invalid characters".into() })?;
            req.metadata_mut().insert("authorization", value);
        }
        for (k, v) in &self.url.params {
            if let (Ok(key), Ok(value)) = (
                tonic::metadata::MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes()),
                MetadataValue::try_from(v.as_str()),
            ) {
                req.metadata_mut().insert(key, value);
            }
        }
        Ok(req)
    }

    fn status_error(&self, status: Status, what: &str) -> ClientError {
        map_status(status, &self.url(), self.options.request_timeout, what)
    }

    /// Runs a plan and returns its response stream.
    async fn execute(
        &mut self,
        plan: pb::Plan,
        tags: Vec<String>,
        timeout: Option<Duration>,
        what: &str,
    ) -> Result<Streaming<pb::ExecutePlanResponse>> {
        let req = pb::ExecutePlanRequest {
            session_id: self.session_id.clone(),
            user_context: self.user_context(),
            plan: Some(plan),
            client_type: Some(CLIENT_TYPE.into()),
            operation_id: Some(uuid::Uuid::new_v4().to_string()),
            tags,
        };
        let req = self.request(req, timeout)?;
        match self.grpc.execute_plan(req).await {
            Ok(resp) => Ok(resp.into_inner()),
            Err(s) => Err(self.status_error(s, what)),
        }
    }

    /// Runs one pipeline command and returns its result, if it has one.
    async fn pipeline_command(
        &mut self,
        command: pb::pipeline_command::CommandType,
        what: &str,
    ) -> Result<Option<pb::PipelineCommandResult>> {
        let plan = pb::Plan {
            op_type: Some(pb::plan::OpType::Command(pb::Command {
                command_type: Some(pb::command::CommandType::PipelineCommand(pb::PipelineCommand {
                    command_type: Some(command),
                })),
            })),
        };
        let timeout = Some(self.options.request_timeout);
        let stream = self.execute(plan, vec![], timeout, what).await?;
        let mut result = None;
        self.drain(stream, what, |response| {
            if let Response::PipelineCommandResult(c) = response {
                result = Some(c);
            }
            Ok(())
        })
        .await?;
        Ok(result)
    }

    /// Reads a response stream to its end, handing each response to `each`; a failed stream is
    /// the server's error for `what`.
    async fn drain(
        &self,
        stream: Streaming<pb::ExecutePlanResponse>,
        what: &str,
        each: impl FnMut(Response) -> Result<()>,
    ) -> Result<()> {
        self.drain_within(stream, what, None, each).await
    }

    /// [`Self::drain`], failing with a timeout when the stream is silent for `stall` (`None`:
    /// wait as long as it takes).
    async fn drain_within(
        &self,
        mut stream: Streaming<pb::ExecutePlanResponse>,
        what: &str,
        stall: Option<Duration>,
        mut each: impl FnMut(Response) -> Result<()>,
    ) -> Result<()> {
        loop {
            let next = match stall {
                Some(limit) => {
                    tokio::time::timeout(limit, stream.message()).await.map_err(|_| ClientError::Timeout {
                        url: self.url(),
                        seconds: limit.as_secs(),
                        what: format!("{what}: no event for that long; the server looks stalled"),
                    })?
                }
                None => stream.message().await,
            };
            match next {
                Ok(Some(r)) => {
                    if let Some(response) = r.response_type {
                        each(response)?;
                    }
                }
                Ok(None) => return Ok(()),
                Err(s) => return Err(self.status_error(s, what)),
            }
        }
    }

    /// Asks the server for its Spark version (`4.1.4`).
    pub async fn spark_version(&mut self) -> Result<String> {
        let req = pb::AnalyzePlanRequest {
            session_id: self.session_id.clone(),
            user_context: self.user_context(),
            client_type: Some(CLIENT_TYPE.into()),
            analyze: Some(pb::analyze_plan_request::Analyze::SparkVersion(pb::analyze_plan_request::SparkVersion {})),
        };
        let req = self.request(req, Some(self.options.request_timeout))?;
        let resp = self.grpc.analyze_plan(req).await.map_err(|s| self.status_error(s, "spark version"))?;
        match resp.into_inner().result {
            Some(pb::analyze_plan_response::Result::SparkVersion(v)) => Ok(v.version),
            other => Err(ClientError::Protocol(format!("spark version request answered with {other:?}"))),
        }
    }

    /// Defines `graph` on the server: `CreateDataflowGraph`, one `DefineOutput` per output, one
    /// `DefineFlow` per flow and one `DefineSqlGraphElements` per SQL file. Returns the graph id.
    pub async fn define_graph(&mut self, graph: &DataflowGraph) -> Result<String> {
        use pb::pipeline_command::CommandType as C;
        let created =
            self.pipeline_command(C::CreateDataflowGraph(convert::create_graph(graph)), "create graph").await?;
        let id = match created.and_then(|r| r.result_type) {
            Some(pb::pipeline_command_result::ResultType::CreateDataflowGraphResult(r)) => {
                r.dataflow_graph_id.unwrap_or_default()
            }
            other => return Err(ClientError::Protocol(format!("CreateDataflowGraph answered with {other:?}"))),
        };
        if id.is_empty() {
            return Err(ClientError::Protocol("CreateDataflowGraph returned no graph id".into()));
        }
        for o in &graph.outputs {
            let what = format!("define output {}", o.name);
            self.pipeline_command(C::DefineOutput(convert::define_output(&id, o)), &what).await?;
        }
        for f in &graph.flows {
            let what = format!("define flow {}", f.name);
            self.pipeline_command(C::DefineFlow(convert::define_flow(&id, f)), &what).await?;
        }
        for e in &graph.sql_elements {
            let cmd = pb::pipeline_command::DefineSqlGraphElements {
                dataflow_graph_id: Some(id.clone()),
                sql_file_path: Some(e.sql_file_path.clone()),
                sql_text: Some(e.sql_text.clone()),
            };
            let what = format!("define SQL of {}", e.sql_file_path);
            self.pipeline_command(C::DefineSqlGraphElements(cmd), &what).await?;
        }
        Ok(id)
    }

    /// Starts a run and feeds its events to `sink` until the run ends. A run whose flows fail
    /// still ends normally here (the failures are events); an error means the run itself could
    /// not go on (transport, interrupt, graph rejected).
    pub async fn start_run(&mut self, run: &PipelineRun, sink: &mut impl PipelineEventSink) -> Result<()> {
        let cmd = pb::pipeline_command::StartRun {
            dataflow_graph_id: Some(run.graph_id.clone()),
            full_refresh_selection: run.full_refresh.clone(),
            full_refresh_all: run.full_refresh_all.then_some(true),
            refresh_selection: run.refresh.clone(),
            dry: run.dry.then_some(true),
            storage: run.storage.clone(),
        };
        let plan = pb::Plan {
            op_type: Some(pb::plan::OpType::Command(pb::Command {
                command_type: Some(pb::command::CommandType::PipelineCommand(pb::PipelineCommand {
                    command_type: Some(pb::pipeline_command::CommandType::StartRun(cmd)),
                })),
            })),
        };
        let tags = run.tag.iter().cloned().collect();
        let stream = self.execute(plan, tags, None, "run").await?;
        self.drain_within(stream, "run", self.options.stall_timeout, |response| {
            let Response::PipelineEventResult(pb::PipelineEventResult { event: Some(event) }) = response else {
                return Ok(());
            };
            let timestamp =
                event.timestamp.and_then(|t| event_time(t.seconds, t.nanos)).unwrap_or_else(SystemTime::now);
            sink.on_event(PipelineEvent { timestamp, message: event.message.unwrap_or_default() });
            Ok(())
        })
        .await
    }

    /// Drops a graph defined by this session.
    pub async fn drop_graph(&mut self, graph_id: &str) -> Result<()> {
        let cmd = pb::pipeline_command::DropDataflowGraph { dataflow_graph_id: Some(graph_id.to_string()) };
        self.pipeline_command(pb::pipeline_command::CommandType::DropDataflowGraph(cmd), "drop graph").await?;
        Ok(())
    }

    /// Interrupts the operations of this session tagged `tag` (a run started with that tag).
    pub async fn interrupt_tag(&mut self, tag: &str) -> Result<Vec<String>> {
        let req = pb::InterruptRequest {
            session_id: self.session_id.clone(),
            user_context: self.user_context(),
            client_type: Some(CLIENT_TYPE.into()),
            interrupt_type: pb::interrupt_request::InterruptType::Tag as i32,
            interrupt: Some(pb::interrupt_request::Interrupt::OperationTag(tag.to_string())),
        };
        let req = self.request(req, Some(self.options.request_timeout))?;
        let resp = self.grpc.interrupt(req).await.map_err(|s| self.status_error(s, "interrupt"))?;
        Ok(resp.into_inner().interrupted_ids)
    }

    /// Runs a SQL query and returns its rows as Arrow record batches.
    pub async fn sql(&mut self, query: &str) -> Result<Vec<RecordBatch>> {
        let plan = pb::Plan {
            op_type: Some(pb::plan::OpType::Root(pb::Relation {
                common: None,
                rel_type: Some(pb::relation::RelType::Sql(pb::Sql { query: query.to_string() })),
            })),
        };
        let timeout = Some(self.options.request_timeout);
        let stream = self.execute(plan, vec![], timeout, "query").await?;
        let mut batches = Vec::new();
        let ipc = |e: arrow::error::ArrowError| ClientError::Protocol(format!("Arrow IPC result: {e}"));
        self.drain(stream, "query", |response| {
            if let Response::ArrowBatch(b) = response {
                let reader =
                    arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(b.data), None).map_err(ipc)?;
                for batch in reader {
                    batches.push(batch.map_err(ipc)?);
                }
            }
            Ok(())
        })
        .await?;
        Ok(batches)
    }

    /// Ends the session on the server (its temporary state is released).
    pub async fn close(mut self) -> Result<()> {
        let req = pb::ReleaseSessionRequest {
            session_id: self.session_id.clone(),
            user_context: self.user_context(),
            client_type: Some(CLIENT_TYPE.into()),
        };
        let req = self.request(req, Some(self.options.request_timeout))?;
        self.grpc.release_session(req).await.map_err(|s| self.status_error(s, "release session"))?;
        Ok(())
    }
}

/// The messages of an error and its sources: tonic's top-level transport error says only
/// "transport error".
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut parts = vec![e.to_string()];
    let mut source = e.source();
    while let Some(s) = source {
        let m = s.to_string();
        if !parts.contains(&m) {
            parts.push(m);
        }
        source = s.source();
    }
    parts.join(": ")
}

/// Maps a gRPC status to our error: transport trouble, a timeout, or Spark's own error with its
/// class and SQLSTATE (from the `google.rpc.ErrorInfo` in the status details).
fn map_status(status: Status, url: &str, timeout: Duration, what: &str) -> ClientError {
    match status.code() {
        Code::Unavailable => {
            let mut message = status.message().to_string();
            if let Some(src) = std::error::Error::source(&status) {
                message = format!("{message}: {}", error_chain(src));
            }
            ClientError::Transport { url: url.to_string(), message }
        }
        Code::DeadlineExceeded => {
            ClientError::Timeout { url: url.to_string(), seconds: timeout.as_secs(), what: what.to_string() }
        }
        code => {
            let mut err = ServerError {
                code: format!("{code:?}"),
                error_class: None,
                sql_state: None,
                message: status.message().to_string(),
            };
            if let Ok(details) = rpc::Status::decode(status.details()) {
                for any in details.details {
                    if !any.type_url.ends_with("google.rpc.ErrorInfo") {
                        continue;
                    }
                    if let Ok(info) = rpc::ErrorInfo::decode(any.value.as_slice()) {
                        err.error_class = info.metadata.get("errorClass").cloned();
                        err.sql_state = info.metadata.get("sqlState").cloned();
                    }
                }
            }
            ClientError::Server(err)
        }
    }
}

/// A server timestamp as a time; `None` (the caller uses now) when it is out of range: before
/// 1970, after 9999, or nanoseconds outside 0..1e9.
fn event_time(seconds: i64, nanos: i32) -> Option<SystemTime> {
    const YEAR_10000: u64 = 253_402_300_800;
    let secs = u64::try_from(seconds).ok().filter(|s| *s < YEAR_10000)?;
    let nanos = u32::try_from(nanos).ok().filter(|n| *n < 1_000_000_000)?;
    SystemTime::UNIX_EPOCH.checked_add(Duration::new(secs, nanos))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_server_timestamps_are_refused_not_panicked_on() {
        assert!(event_time(1_795_995_603, 5).is_some());
        assert_eq!(event_time(-1, 0), None);
        assert_eq!(event_time(1, -1), None);
        assert_eq!(event_time(1, 2_000_000_000), None);
        assert_eq!(event_time(i64::MAX, 999_999_999), None);
    }

    #[test]
    fn parses_connection_strings() {
        let u: ConnectUrl = "sc://localhost".parse().unwrap();
        assert_eq!((u.host.as_str(), u.port, u.use_ssl), ("localhost", DEFAULT_PORT, false));
        let u: ConnectUrl = "sc://h:1234/;use_ssl=true;user_id=ann".parse().unwrap();
        assert_eq!((u.port, u.use_ssl, u.user_id.as_deref()), (1234, true, Some("ann")));
        let u: ConnectUrl = "sc://h:1/;token=s3cret".parse().unwrap();
        assert!(u.use_ssl, "a token implies TLS");
        assert!(!format!("{u} {u:?}").contains("s3cret"));
        // Keys in any case: a token spelled `Token` still means TLS, never plain metadata.
        let u: ConnectUrl = "sc://h:1/;Token=s3cret;USE_SSL=false".parse().unwrap();
        assert_eq!((u.token.as_deref(), u.use_ssl), (Some("s3cret"), true));
        assert!(!format!("{u} {u:?}").contains("s3cret"));
        let sid = "c8a5ee4a-6f2e-4ad9-9c0e-3f1b5f0b8d11";
        let u: ConnectUrl = format!("sc://h/;session_id={sid}").parse().unwrap();
        assert_eq!(u.session_id.as_deref(), Some(sid));
    }

    #[test]
    fn rejects_bad_connection_strings_without_showing_the_token() {
        for bad in ["http://h:1", "sc://", "sc://h:notaport", "sc://h:1/;session_id=x", "sc://h:1/;TOKEN=s3cret;junk"] {
            let err = bad.parse::<ConnectUrl>().unwrap_err().to_string();
            assert!(err.starts_with("invalid Spark Connect URL"), "{bad}: {err}");
            assert!(!err.contains("s3cret"), "{err}");
        }
    }

    #[test]
    fn server_errors_show_class_and_sqlstate_once() {
        let e = ServerError {
            code: "Internal".into(),
            error_class: Some("TABLE_OR_VIEW_NOT_FOUND".into()),
            sql_state: Some("42P01".into()),
            message: "[TABLE_OR_VIEW_NOT_FOUND] The table `x` cannot be found. SQLSTATE: 42P01".into(),
        };
        assert_eq!(e.to_string(), e.message);
        let e = ServerError { message: "boom".into(), ..e };
        assert_eq!(e.to_string(), "[TABLE_OR_VIEW_NOT_FOUND] boom SQLSTATE: 42P01");
    }
}
