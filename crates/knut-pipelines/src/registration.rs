//! The loopback registration endpoint: a Spark Connect server that answers only what a pipeline's
//! Python definition files ask while they load, and keeps what they define.
//!
//! pyspark's own pipeline code (`pyspark.pipelines`) imports the user's files against a Spark
//! Connect session. Pointed at this endpoint, its registry sends `CreateDataflowGraph`, one
//! `DefineOutput` per dataset and one `DefineFlow` per flow, exactly as it would to Spark; a query
//! function's DataFrame arrives as the serialized relation the user's pyspark built, and is kept
//! as those bytes ([`Relation::Connect`]). `spark.conf.get` is answered from the pipeline's
//! configuration and `spark.sql(…)` of a query becomes a SQL relation without running anything.
//! Everything else — analysing a DataFrame (`df.schema`, `df.columns`), running one, a SQL
//! statement that is not a query — is refused with a message that says why.
//!
//! The endpoint lives for one load: [`Loopback::start`] binds an ephemeral port on 127.0.0.1,
//! [`Loopback::finish`] stops it and returns the [`DataflowGraph`] received.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};

use tokio_stream::Stream;
use tonic::{Request, Response, Status};

use crate::dataframe::{self, Untranslatable};
use crate::graph::{
    AutoCdcDetails, DataflowGraph, Flow, FlowDetails, Output, OutputType, Relation, ScdType, SinkDetails,
    SourceCodeLocation, TableDetails,
};
use crate::proto::spark::connect as pb;
use crate::proto::spark::connect::spark_connect_service_server::{SparkConnectService, SparkConnectServiceServer};

/// The Spark version the endpoint reports: the protocol line its messages follow.
pub const REPORTED_SPARK_VERSION: &str = "4.1.0";

/// What the endpoint kept of one load.
#[derive(Debug, Default)]
struct State {
    graph: Option<DataflowGraph>,
    conf: BTreeMap<String, String>,
    /// The server-side id of the one session a load opens; echoed in every response, as pyspark
    /// checks that it never changes.
    server_session: String,
}

/// A running loopback endpoint.
pub struct Loopback {
    url: String,
    state: Arc<Mutex<State>>,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    served: tokio::task::JoinHandle<Result<(), tonic::transport::Error>>,
}

/// The endpoint could not start (no loopback port) or stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum LoopbackError {
    /// Binding 127.0.0.1 failed.
    #[error("cannot listen on the loopback interface: {0}")]
    Bind(#[from] std::io::Error),
    /// The gRPC server failed.
    #[error("the loopback Spark Connect endpoint failed: {0}")]
    Serve(String),
}

impl Loopback {
    /// Starts an endpoint on an ephemeral 127.0.0.1 port, answering `spark.conf.get` from `conf`
    /// (the pipeline's configuration). Must be called inside a tokio runtime.
    pub async fn start(conf: BTreeMap<String, String>) -> Result<Loopback, LoopbackError> {
        let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State { graph: None, conf, server_session: uuid::Uuid::new_v4().to_string() }));
        let service = Endpoint { state: state.clone() };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let incoming = tokio_stream::wrappers::TcpListenerStream::new(listener);
        let served = tokio::spawn(
            tonic::transport::Server::builder()
                .add_service(SparkConnectServiceServer::new(service).max_decoding_message_size(256 << 20))
                .serve_with_incoming_shutdown(incoming, async {
                    let _ = stopped.await;
                }),
        );
        Ok(Loopback { url: format!("sc://127.0.0.1:{port}"), state, stop: Some(stop), served })
    }

    /// The `sc://` URL a pyspark session connects to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops the endpoint and returns the graph received: `None` if no `CreateDataflowGraph` came.
    pub async fn finish(mut self) -> Result<Option<DataflowGraph>, LoopbackError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match (&mut self.served).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(LoopbackError::Serve(e.to_string())),
            Err(e) => return Err(LoopbackError::Serve(e.to_string())),
        }
        let graph = self.state.lock().map(|mut s| s.graph.take()).unwrap_or(None);
        Ok(graph)
    }
}

struct Endpoint {
    state: Arc<Mutex<State>>,
}

type ResponseStream = Pin<Box<dyn Stream<Item = Result<pb::ExecutePlanResponse, Status>> + Send>>;

/// Why a request is refused, in the words a Python traceback shows. The message also travels as
/// a `google.rpc.Status` detail, which is what makes pyspark show it as it is.
fn refused(what: &str) -> Status {
    status(
        tonic::Code::FailedPrecondition,
        format!(
            "{what}: while a pipeline's definitions load, Þund records them and runs nothing (the query \
             functions' DataFrames run with the pipeline)"
        ),
    )
}

/// A failed call's status, with its message repeated as a `google.rpc.Status` detail.
fn status(code: tonic::Code, message: impl Into<String>) -> Status {
    let message = message.into();
    let details =
        crate::proto::google::rpc::Status { code: code as i32, message: message.clone(), details: Vec::new() };
    Status::with_details(code, message, prost::Message::encode_to_vec(&details).into())
}

impl Endpoint {
    fn with_state<T>(&self, f: impl FnOnce(&mut State) -> Result<T, Status>) -> Result<T, Status> {
        let mut state = self.state.lock().map_err(|_| Status::internal("endpoint state poisoned"))?;
        f(&mut state)
    }

    /// Keeps one pipeline command and returns its result (if it has one).
    fn pipeline_command(&self, cmd: pb::PipelineCommand) -> Result<Option<pb::PipelineCommandResult>, Status> {
        use pb::pipeline_command::CommandType;
        use pb::pipeline_command_result::{CreateDataflowGraphResult, ResultType};
        let Some(command) = cmd.command_type else {
            return Err(status(tonic::Code::InvalidArgument, "empty pipeline command"));
        };
        self.with_state(|state| match command {
            CommandType::CreateDataflowGraph(c) => {
                let mut graph = DataflowGraph::new(
                    c.default_catalog.unwrap_or_else(|| "spark_catalog".into()),
                    c.default_database.unwrap_or_else(|| "default".into()),
                );
                graph.sql_conf = c.sql_conf.into_iter().collect();
                state.graph = Some(graph);
                Ok(Some(pb::PipelineCommandResult {
                    result_type: Some(ResultType::CreateDataflowGraphResult(CreateDataflowGraphResult {
                        dataflow_graph_id: Some(GRAPH_ID.into()),
                    })),
                }))
            }
            CommandType::DefineOutput(o) => {
                let graph = state.graph.as_mut().ok_or_else(|| refused("an output defined before its graph"))?;
                graph.outputs.push(output(o)?);
                Ok(None)
            }
            CommandType::DefineFlow(f) => {
                let graph = state.graph.as_mut().ok_or_else(|| refused("a flow defined before its graph"))?;
                graph.flows.push(flow(f)?);
                Ok(None)
            }
            CommandType::DefineSqlGraphElements(_) => Err(refused("SQL files are read by Þund itself")),
            CommandType::StartRun(_) => Err(refused("starting a run")),
            CommandType::DropDataflowGraph(_) => Ok(None),
        })
    }
}

/// The one graph a load builds.
const GRAPH_ID: &str = "thund-loopback";

fn location(l: Option<pb::SourceCodeLocation>) -> Option<SourceCodeLocation> {
    l.and_then(|l| {
        Some(SourceCodeLocation { file_name: l.file_name?, line_number: u32::try_from(l.line_number?).ok()? })
    })
}

fn output(o: pb::pipeline_command::DefineOutput) -> Result<Output, Status> {
    use pb::pipeline_command::define_output::{table_details::Schema, Details};
    let output_type = match o.output_type.and_then(|t| pb::OutputType::try_from(t).ok()) {
        Some(pb::OutputType::MaterializedView) => OutputType::MaterializedView,
        Some(pb::OutputType::Table) => OutputType::Table,
        Some(pb::OutputType::TemporaryView) => OutputType::TemporaryView,
        Some(pb::OutputType::Sink) => OutputType::Sink,
        _ => return Err(status(tonic::Code::InvalidArgument, "an output without a known type")),
    };
    let mut out = Output::new(o.output_name.unwrap_or_default(), output_type);
    out.comment = o.comment;
    out.location = location(o.source_code_location);
    match o.details {
        Some(Details::TableDetails(t)) => {
            let schema =
                match t.schema {
                    Some(Schema::SchemaString(s)) => Some(s),
                    Some(Schema::SchemaDataType(d)) => Some(struct_ddl(&d).map_err(|e| {
                        status(tonic::Code::InvalidArgument, format!("the schema of `{}`: {e}", out.name))
                    })?),
                    None => None,
                };
            out.table_details = Some(TableDetails {
                table_properties: t.table_properties.into_iter().collect(),
                partition_cols: t.partition_cols,
                format: t.format,
                schema,
                clustering_columns: t.clustering_columns,
            });
        }
        Some(Details::SinkDetails(s)) => {
            out.sink_details =
                Some(SinkDetails { format: s.format.unwrap_or_default(), options: s.options.into_iter().collect() })
        }
        None => {}
    }
    Ok(out)
}

fn flow(f: pb::pipeline_command::DefineFlow) -> Result<Flow, Status> {
    use pb::pipeline_command::define_flow::Details;
    let details = match f.details {
        Some(Details::RelationFlowDetails(d)) => {
            FlowDetails::Relation(Relation::Connect { bytes: d.relation.unwrap_or_default() })
        }
        Some(Details::AutoCdcFlowDetails(d)) => FlowDetails::AutoCdc(
            auto_cdc(d).map_err(|e| status(tonic::Code::InvalidArgument, format!("AUTO CDC flow: {e}")))?,
        ),
        None => return Err(status(tonic::Code::InvalidArgument, "a flow without a relation")),
    };
    let name = f.flow_name.unwrap_or_default();
    let target = f.target_dataset_name.unwrap_or_else(|| name.clone());
    let mut out = Flow::new(name, target, details);
    out.sql_conf = f.sql_conf.into_iter().collect();
    out.location = location(f.source_code_location);
    out.once = f.once.unwrap_or(false);
    Ok(out)
}

/// `create_auto_cdc_flow`'s details, its columns and expressions as Spark SQL, as a SQL file's
/// `AUTO CDC INTO` gives them.
fn auto_cdc(d: pb::pipeline_command::define_flow::AutoCdcFlowDetails) -> Result<AutoCdcDetails, Untranslatable> {
    use pb::pipeline_command::define_flow::ScdType as Scd;
    let names = |list: &[pb::Expression]| list.iter().map(dataframe::column_name).collect::<Result<Vec<_>, _>>();
    let sql = |e: &Option<pb::Expression>| e.as_ref().map(dataframe::expression_sql).transpose();
    Ok(AutoCdcDetails {
        keys: names(&d.keys)?,
        sequence_by: sql(&d.sequence_by)?.ok_or_else(|| Untranslatable("a flow without `sequence_by`".into()))?,
        apply_as_deletes: sql(&d.apply_as_deletes)?,
        apply_as_truncates: sql(&d.apply_as_truncates)?,
        column_list: names(&d.column_list)?,
        except_column_list: names(&d.except_column_list)?,
        // Unspecified is the server's default, type 1.
        stored_as: match Scd::try_from(d.stored_as_scd_type) {
            Ok(Scd::ScdType2) => ScdType::Type2,
            _ => ScdType::Type1,
        },
        track_history_columns: names(&d.track_history_column_list)?,
        track_history_except_columns: names(&d.track_history_except_column_list)?,
        source: d.source.unwrap_or_default(),
    })
}

/// A `StructType` as Spark DDL (`a INT, b STRING NOT NULL`).
pub fn struct_ddl(d: &pb::DataType) -> Result<String, String> {
    let Some(pb::data_type::Kind::Struct(s)) = &d.kind else { return Err("a schema must be a StructType".into()) };
    fields_sql(s, " ")
}

/// A struct's fields as `name<sep>TYPE [NOT NULL]`, comma-separated (`sep` is `" "` in a table's
/// DDL, `": "` inside `STRUCT<…>`).
fn fields_sql(s: &pb::data_type::Struct, sep: &str) -> Result<String, String> {
    let fields: Result<Vec<String>, String> = s
        .fields
        .iter()
        .map(|f| {
            let t = data_type_sql(f.data_type.as_ref().ok_or("a field without a type")?)?;
            let not_null = if f.nullable { "" } else { " NOT NULL" };
            Ok(format!("{}{sep}{t}{not_null}", quote_identifier(&f.name)))
        })
        .collect();
    Ok(fields?.join(", "))
}

/// A Spark SQL type name for a protocol `DataType`.
pub fn data_type_sql(d: &pb::DataType) -> Result<String, String> {
    use pb::data_type::Kind;
    Ok(match d.kind.as_ref().ok_or("an empty data type")? {
        Kind::Null(_) => "VOID".into(),
        Kind::Binary(_) => "BINARY".into(),
        Kind::Boolean(_) => "BOOLEAN".into(),
        Kind::Byte(_) => "TINYINT".into(),
        Kind::Short(_) => "SMALLINT".into(),
        Kind::Integer(_) => "INT".into(),
        Kind::Long(_) => "BIGINT".into(),
        Kind::Float(_) => "FLOAT".into(),
        Kind::Double(_) => "DOUBLE".into(),
        Kind::Decimal(x) => format!("DECIMAL({},{})", x.precision.unwrap_or(10), x.scale.unwrap_or(0)),
        Kind::String(s) if s.collation.is_empty() || s.collation == "UTF8_BINARY" => "STRING".into(),
        Kind::String(s) => return Err(format!("collation {} is not supported", s.collation)),
        Kind::Date(_) => "DATE".into(),
        Kind::Timestamp(_) => "TIMESTAMP".into(),
        Kind::TimestampNtz(_) => "TIMESTAMP_NTZ".into(),
        Kind::Array(a) => {
            format!("ARRAY<{}>", data_type_sql(a.element_type.as_deref().ok_or("an array without type")?)?)
        }
        Kind::Map(m) => format!(
            "MAP<{}, {}>",
            data_type_sql(m.key_type.as_deref().ok_or("a map without key type")?)?,
            data_type_sql(m.value_type.as_deref().ok_or("a map without value type")?)?
        ),
        Kind::Struct(s) => format!("STRUCT<{}>", fields_sql(s, ": ")?),
    })
}

/// `name` as a Spark SQL identifier: backquoted, backquotes doubled.
pub fn quote_identifier(name: &str) -> String {
    format!("`{}`", name.replace('`', "``"))
}

/// Whether `sql` is a query (which `spark.sql` may define a DataFrame with) rather than a
/// statement that would change something.
fn is_query(sql: &str) -> bool {
    let first = sql
        .trim_start_matches(|c: char| c.is_whitespace() || c == '(')
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("");
    ["SELECT", "WITH", "VALUES", "FROM", "TABLE"].iter().any(|k| first.eq_ignore_ascii_case(k))
}

#[tonic::async_trait]
impl SparkConnectService for Endpoint {
    type ExecutePlanStream = ResponseStream;

    async fn execute_plan(
        &self,
        request: Request<pb::ExecutePlanRequest>,
    ) -> Result<Response<Self::ExecutePlanStream>, Status> {
        use pb::command::CommandType;
        use pb::execute_plan_response::{ResponseType, ResultComplete};
        let req = request.into_inner();
        let result = match req.plan.and_then(|p| p.op_type) {
            Some(pb::plan::OpType::Command(pb::Command { command_type: Some(CommandType::PipelineCommand(c)) })) => {
                self.pipeline_command(c)?.map(ResponseType::PipelineCommandResult)
            }
            // With no result, pyspark's `spark.sql` makes the DataFrame from the SQL relation it
            // sent: the query is kept as text and runs with its flow.
            Some(pb::plan::OpType::Command(pb::Command { command_type: Some(CommandType::SqlCommand(c)) })) => {
                let sql = match c.input.and_then(|r| r.rel_type) {
                    Some(pb::relation::RelType::Sql(s)) => s.query,
                    _ => c.sql,
                };
                if !is_query(&sql) {
                    return Err(refused(&format!("spark.sql of a statement that is not a query ({})", sql.trim())));
                }
                None
            }
            Some(pb::plan::OpType::Root(_)) => return Err(refused("running a DataFrame")),
            _ => return Err(refused("this command")),
        };
        let server_session = self.with_state(|s| Ok(s.server_session.clone()))?;
        let operation_id = req.operation_id.unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
        let response = |response_type| pb::ExecutePlanResponse {
            session_id: req.session_id.clone(),
            operation_id: operation_id.clone(),
            response_id: uuid::Uuid::new_v4().to_string(),
            server_side_session_id: server_session.clone(),
            response_type: Some(response_type),
        };
        let mut responses: Vec<Result<pb::ExecutePlanResponse, Status>> = Vec::new();
        if let Some(r) = result {
            responses.push(Ok(response(r)));
        }
        responses.push(Ok(response(ResponseType::ResultComplete(ResultComplete {}))));
        Ok(Response::new(Box::pin(tokio_stream::iter(responses))))
    }

    async fn analyze_plan(
        &self,
        request: Request<pb::AnalyzePlanRequest>,
    ) -> Result<Response<pb::AnalyzePlanResponse>, Status> {
        let req = request.into_inner();
        match req.analyze {
            Some(pb::analyze_plan_request::Analyze::SparkVersion(_)) => {
                let server_side_session_id = self.with_state(|s| Ok(s.server_session.clone()))?;
                Ok(Response::new(pb::AnalyzePlanResponse {
                    session_id: req.session_id,
                    server_side_session_id,
                    result: Some(pb::analyze_plan_response::Result::SparkVersion(
                        pb::analyze_plan_response::SparkVersion { version: REPORTED_SPARK_VERSION.into() },
                    )),
                }))
            }
            _ => Err(refused("analysing a DataFrame (its schema, columns or plan)")),
        }
    }

    async fn config(&self, request: Request<pb::ConfigRequest>) -> Result<Response<pb::ConfigResponse>, Status> {
        use pb::config_request::operation::OpType;
        let req = request.into_inner();
        let op = req
            .operation
            .and_then(|o| o.op_type)
            .ok_or_else(|| status(tonic::Code::InvalidArgument, "empty config"))?;
        let (pairs, server_side_session_id) = self.with_state(|state| {
            let pair = |key: String, value: Option<String>| pb::KeyValue { key, value };
            let pairs = match op {
                OpType::Get(g) => g
                    .keys
                    .into_iter()
                    .map(|k| match state.conf.get(&k) {
                        Some(v) => Ok(pair(k, Some(v.clone()))),
                        None => Err(status(
                            tonic::Code::NotFound,
                            format!(
                                "[SQL_CONF_NOT_FOUND] The SQL config \"{k}\" cannot be found: it is not in the \
                             pipeline's `configuration`"
                            ),
                        )),
                    })
                    .collect::<Result<Vec<_>, Status>>()?,
                OpType::GetWithDefault(g) => g
                    .pairs
                    .into_iter()
                    .map(|p| {
                        let v = state.conf.get(&p.key).cloned().or(p.value);
                        pair(p.key, v)
                    })
                    .collect(),
                OpType::GetOption(g) => g
                    .keys
                    .into_iter()
                    .map(|k| {
                        let v = state.conf.get(&k).cloned();
                        pair(k, v)
                    })
                    .collect(),
                OpType::GetAll(g) => {
                    let prefix = g.prefix.unwrap_or_default();
                    state
                        .conf
                        .iter()
                        .filter(|(k, _)| k.starts_with(&prefix))
                        .map(|(k, v)| pair(k.clone(), Some(v.clone())))
                        .collect()
                }
                OpType::Set(s) => {
                    for p in s.pairs {
                        match p.value {
                            Some(v) => state.conf.insert(p.key, v),
                            None => state.conf.remove(&p.key),
                        };
                    }
                    Vec::new()
                }
                OpType::Unset(u) => {
                    for k in u.keys {
                        state.conf.remove(&k);
                    }
                    Vec::new()
                }
                OpType::IsModifiable(m) => m.keys.into_iter().map(|k| pair(k, Some("true".into()))).collect(),
            };
            Ok((pairs, state.server_session.clone()))
        })?;
        Ok(Response::new(pb::ConfigResponse {
            session_id: req.session_id,
            pairs,
            warnings: Vec::new(),
            server_side_session_id,
        }))
    }

    async fn release_execute(
        &self,
        request: Request<pb::ReleaseExecuteRequest>,
    ) -> Result<Response<pb::ReleaseExecuteResponse>, Status> {
        let req = request.into_inner();
        let server_side_session_id = self.with_state(|s| Ok(s.server_session.clone()))?;
        Ok(Response::new(pb::ReleaseExecuteResponse {
            session_id: req.session_id,
            operation_id: Some(req.operation_id),
            server_side_session_id,
        }))
    }

    async fn interrupt(
        &self,
        request: Request<pb::InterruptRequest>,
    ) -> Result<Response<pb::InterruptResponse>, Status> {
        Ok(Response::new(pb::InterruptResponse {
            session_id: request.into_inner().session_id,
            interrupted_ids: vec![],
        }))
    }

    async fn release_session(
        &self,
        request: Request<pb::ReleaseSessionRequest>,
    ) -> Result<Response<pb::ReleaseSessionResponse>, Status> {
        Ok(Response::new(pb::ReleaseSessionResponse { session_id: request.into_inner().session_id }))
    }

    async fn fetch_error_details(
        &self,
        request: Request<pb::FetchErrorDetailsRequest>,
    ) -> Result<Response<pb::FetchErrorDetailsResponse>, Status> {
        let _ = request;
        Ok(Response::new(pb::FetchErrorDetailsResponse { root_error_idx: None, errors: vec![] }))
    }
}
