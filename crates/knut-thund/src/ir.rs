//! The pipeline IR: what a pipeline *is*, independent of how it is written or run.
//!
//! Every kind is a closed enum, so adding a dataset or flow kind makes each backend's `match`
//! fail to compile until it decides what to do with it. The IR holds no engine types: a query is
//! its SQL text (configuration already substituted), the normalized text the front-end parsed,
//! that parse (sqlparser's AST, which the native backend hands to DataFusion's planner), and the
//! reads found in it, each with its byte span in the normalized text (which the Spark lowering
//! splices). Nothing downstream parses a query again.
//!
//! Where SDP's protocol differs: a streaming table is `OutputType::Table` there, a persistent
//! view has no output type (it travels as SQL), and expectations, output modes and event time
//! have no protocol field at all (see `backend` for who can run what).

use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A place in a definition file (1-based line and column).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SourceLocation {
    /// Path relative to the project root.
    pub file: String,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub column: u32,
}

impl SourceLocation {
    /// A location in `file`.
    pub fn new(file: impl Into<String>, line: u32, column: u32) -> Self {
        SourceLocation { file: file.into(), line, column }
    }
}

impl fmt::Display for SourceLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}

/// A fully qualified dataset or flow name. Unquoted identifiers are stored lower-case, as Spark
/// matches them case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct QualifiedName {
    /// Catalog.
    pub catalog: String,
    /// Database (schema).
    pub database: String,
    /// Object name.
    pub name: String,
}

impl QualifiedName {
    /// `catalog.database.name`.
    pub fn new(catalog: &str, database: &str, name: &str) -> Self {
        QualifiedName { catalog: catalog.into(), database: database.into(), name: name.into() }
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.catalog, self.database, self.name)
    }
}

/// A whole pipeline: datasets, the flows that fill them, and where it lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pipeline {
    /// The spec's `name`.
    pub name: String,
    /// Where tables, checkpoints and the event log live (`storage`); `None` if the spec has none.
    pub storage: Option<String>,
    /// The folder holding the spec; file paths in locations are relative to it.
    pub root: PathBuf,
    /// Default catalog for unqualified names.
    pub catalog: String,
    /// Default database for unqualified names.
    pub database: String,
    /// The spec's `configuration` (also sent to Spark as SQL conf).
    pub configuration: BTreeMap<String, String>,
    /// Every dataset, in definition order.
    pub datasets: Vec<Dataset>,
    /// Every flow, in definition order.
    pub flows: Vec<Flow>,
    /// What the project holds that has no meaning here and was left out (a DLT setting such as
    /// `clusters`, a notebook's Python cell), each at its line: `thund validate` lists them.
    #[serde(skip)]
    pub notes: Vec<crate::error::Diagnostic>,
}

impl Pipeline {
    /// The dataset called `name`.
    pub fn dataset(&self, name: &QualifiedName) -> Option<&Dataset> {
        self.datasets.iter().find(|d| &d.name == name)
    }

    /// The flows writing to `target`.
    pub fn flows_into<'a>(&'a self, target: &'a QualifiedName) -> impl Iterator<Item = &'a Flow> + 'a {
        self.flows.iter().filter(move |f| &f.target == target)
    }
}

/// What kind of dataset it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DatasetKind {
    /// Recomputed from its query on each run and published atomically.
    MaterializedView,
    /// Appended to incrementally: each run processes only new input.
    StreamingTable,
    /// A named query visible only inside the pipeline; inlined into its readers.
    TemporaryView,
    /// A named query published to the catalog (stored as a view definition).
    PersistentView,
    /// An external destination flows append to.
    Sink,
}

impl DatasetKind {
    /// Whether the kind is stored as a table (has data of its own).
    pub fn is_table(self) -> bool {
        matches!(self, DatasetKind::MaterializedView | DatasetKind::StreamingTable)
    }

    /// Whether it is a view (a query with no data of its own).
    pub fn is_view(self) -> bool {
        matches!(self, DatasetKind::TemporaryView | DatasetKind::PersistentView)
    }
}

impl fmt::Display for DatasetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DatasetKind::MaterializedView => "materialized view",
            DatasetKind::StreamingTable => "streaming table",
            DatasetKind::TemporaryView => "temporary view",
            DatasetKind::PersistentView => "view",
            DatasetKind::Sink => "sink",
        })
    }
}

/// A dataset: a table, view or sink.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Dataset {
    /// Fully qualified name.
    pub name: QualifiedName,
    /// Kind.
    pub kind: DatasetKind,
    /// `COMMENT '…'`.
    pub comment: Option<String>,
    /// Storage details (schema, format, partitioning, properties).
    pub details: TableDetails,
    /// Format and options, for sinks.
    pub sink: Option<SinkSpec>,
    /// Data quality rules, checked on every row the dataset receives.
    pub expectations: Vec<Expectation>,
    /// Output mode of a streaming dataset; `None` means the default (append).
    pub output_mode: Option<OutputMode>,
    /// Where it is defined.
    pub location: SourceLocation,
}

/// Declared storage details of a table.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableDetails {
    /// Declared columns, in order; empty when the schema comes from the query.
    pub columns: Vec<ColumnDef>,
    /// `USING` format.
    pub format: Option<String>,
    /// `PARTITIONED BY` columns.
    pub partitioned_by: Vec<String>,
    /// `CLUSTER BY` columns.
    pub cluster_by: Vec<String>,
    /// `TBLPROPERTIES`.
    pub properties: BTreeMap<String, String>,
}

impl TableDetails {
    /// The declared schema as a Spark DDL string (`a INT NOT NULL COMMENT 'x', b STRING`).
    pub fn schema_ddl(&self) -> Option<String> {
        if self.columns.is_empty() {
            return None;
        }
        let cols: Vec<String> = self.columns.iter().map(ColumnDef::to_ddl).collect();
        Some(cols.join(", "))
    }
}

/// One declared column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    /// Column name.
    pub name: String,
    /// Spark SQL type as written, upper-cased (`DECIMAL(10,2)`, `STRING`).
    pub data_type: String,
    /// `false` with `NOT NULL`.
    pub nullable: bool,
    /// `COMMENT '…'`.
    pub comment: Option<String>,
}

impl ColumnDef {
    /// This column as Spark DDL.
    pub fn to_ddl(&self) -> String {
        let mut s = format!("{} {}", quote_ident(&self.name), self.data_type);
        if !self.nullable {
            s.push_str(" NOT NULL");
        }
        if let Some(c) = &self.comment {
            s.push_str(&format!(" COMMENT '{}'", c.replace('\'', "\\'")));
        }
        s
    }
}

/// Backtick-quotes an identifier when Spark would need it.
pub fn quote_ident(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if plain {
        name.to_string()
    } else {
        format!("`{}`", name.replace('`', "``"))
    }
}

/// Where a sink writes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SinkSpec {
    /// `USING` format (`parquet`, `csv`, `json`, `delta`).
    pub format: String,
    /// `OPTIONS (…)`, with `path` among them for file sinks.
    pub options: BTreeMap<String, String>,
}

/// A data quality rule on a dataset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Expectation {
    /// The constraint's name.
    pub name: String,
    /// The boolean SQL predicate; a row violates it when it is false or NULL.
    pub predicate: String,
    /// What happens to violating rows.
    pub action: ViolationAction,
    /// Where it is declared.
    pub location: SourceLocation,
}

/// `ON VIOLATION …` of an expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViolationAction {
    /// Keep the row, count the violation (the default).
    Warn,
    /// Do not write the row, count it.
    Drop,
    /// Fail the flow; the target keeps its previous version.
    Fail,
}

/// Output mode of a streaming dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputMode {
    /// Only new rows are written.
    Append,
    /// Changed aggregate rows are rewritten.
    Update,
    /// The whole result is rewritten.
    Complete,
}

impl fmt::Display for OutputMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputMode::Append => "append",
            OutputMode::Update => "update",
            OutputMode::Complete => "complete",
        })
    }
}

/// A flow: a query whose rows go into a target dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Fully qualified name; a dataset's implicit flow carries the dataset's name.
    pub name: QualifiedName,
    /// The dataset it writes.
    pub target: QualifiedName,
    /// What it does.
    pub kind: FlowKind,
    /// Whether the flow is the implicit one of `CREATE … AS <query>`.
    pub implicit: bool,
    /// SQL conf from `SET k = v` statements above it in its file.
    pub sql_conf: BTreeMap<String, String>,
    /// Where it is defined.
    pub location: SourceLocation,
}

impl Flow {
    /// The query the flow reads from (an AutoCDC flow's change feed included).
    pub fn query(&self) -> &Query {
        match &self.kind {
            FlowKind::Append { query, .. } | FlowKind::Once { query, .. } => query,
            FlowKind::AutoCdc(cdc) => &cdc.source,
        }
    }
}

/// What a flow does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// Runs on every update: a materialized view's recompute, or new rows appended to a streaming
    /// table or sink.
    Append {
        /// The rows.
        query: Query,
        /// `INSERT INTO t BY NAME`: columns matched by name rather than position.
        by_name: bool,
    },
    /// `INSERT INTO ONCE`: a backfill that runs once, and again only on full refresh.
    Once {
        /// The rows.
        query: Query,
        /// Columns matched by name.
        by_name: bool,
    },
    /// `AUTO CDC INTO`: a change feed applied by key.
    AutoCdc(AutoCdc),
}

impl FlowKind {
    /// A short lower-case name for messages.
    pub fn label(&self) -> &'static str {
        match self {
            FlowKind::Append { .. } => "append",
            FlowKind::Once { .. } => "once",
            FlowKind::AutoCdc(_) => "auto_cdc",
        }
    }

    /// What a backend must support to run this kind of flow, beyond its query (`None`: every
    /// backend that runs its target runs it). `backend::Capabilities` refuses the rest.
    pub fn needs(&self) -> Option<FlowFeature> {
        match self {
            FlowKind::Append { .. } => None,
            FlowKind::Once { .. } => Some(FlowFeature::Once),
            FlowKind::AutoCdc(_) => Some(FlowFeature::Cdc),
        }
    }
}

/// A capability that some flow kinds need (see [`FlowKind::needs`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowFeature {
    /// `INSERT INTO ONCE`.
    Once,
    /// `AUTO CDC`.
    Cdc,
}

/// A byte range `start..end` in a query's normalized text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Span {
    /// First byte.
    pub start: usize,
    /// One past the last byte.
    pub end: usize,
}

/// A query as the user wrote it, with what the front-end found in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Query {
    /// Spark SQL text as written, `${…}` already substituted.
    pub sql: String,
    /// The same query in the form sqlparser parses (see `frontend::query::normalize`): `STREAM x`
    /// parenthesized, a `WATERMARK` clause blanked out. Every [`Span`] indexes into it.
    pub normalized: String,
    /// Where the query text starts.
    pub location: SourceLocation,
    /// Datasets and files it reads (CTE names and aliases excluded), in order of appearance.
    pub reads: Vec<Read>,
    /// `WATERMARK col DELAY OF INTERVAL …` on a streaming source.
    pub event_time: Option<EventTime>,
    /// The parse of `normalized`, made once by the front-end.
    #[serde(skip)]
    pub ast: ParsedQuery,
}

impl Query {
    /// Whether any read is a stream.
    pub fn is_streaming(&self) -> bool {
        self.reads.iter().any(Read::is_streaming)
    }

    /// The index in [`Query::reads`] of the read whose span starts at byte `start`.
    pub fn read_at(&self, start: usize) -> Option<usize> {
        self.reads.iter().position(|r| r.span().start == start)
    }
}

/// The front-end's parse of a query. It travels with the query but is not part of its identity
/// (it is a function of the normalized text) and is not serialized: a query read back from JSON
/// has none until [`ParsedQuery::set`] gives it one.
#[derive(Clone, Default)]
pub struct ParsedQuery(Option<Arc<sqlparser::ast::Query>>);

impl ParsedQuery {
    /// Wraps a parse.
    pub fn new(ast: sqlparser::ast::Query) -> Self {
        ParsedQuery(Some(Arc::new(ast)))
    }

    /// The parse, if the query came from the front-end.
    pub fn get(&self) -> Option<&sqlparser::ast::Query> {
        self.0.as_deref()
    }

    /// Gives a deserialized query its parse.
    pub fn set(&mut self, ast: sqlparser::ast::Query) {
        self.0 = Some(Arc::new(ast));
    }
}

impl PartialEq for ParsedQuery {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl fmt::Debug for ParsedQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "<parsed>" } else { "<not parsed>" })
    }
}

/// Something a query reads.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Read {
    /// Another dataset, in batch or, with `STREAM`, as a stream of its new rows.
    Dataset {
        /// The name resolved against the `USE` context of the statement.
        name: QualifiedName,
        /// Read with `STREAM(…)`.
        streaming: bool,
        /// Where the reference is.
        location: SourceLocation,
        /// The reference in the normalized query text (`STREAM(…)` included).
        span: Span,
    },
    /// Files (`read_files(…)` or Spark's `` fmt.`path` ``).
    Files(FileSource),
}

impl Read {
    /// Whether the read is a stream.
    pub fn is_streaming(&self) -> bool {
        match self {
            Read::Dataset { streaming, .. } => *streaming,
            Read::Files(f) => f.streaming,
        }
    }

    /// Where the read is in the normalized query text.
    pub fn span(&self) -> Span {
        match self {
            Read::Dataset { span, .. } => *span,
            Read::Files(f) => f.span,
        }
    }
}

/// A file source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileSource {
    /// `json`, `csv`, `parquet`, `delta`, …
    pub format: String,
    /// A file or folder (relative paths are relative to the project root).
    pub path: String,
    /// Reader options (`header`, `schema`, …), keys lower-cased.
    pub options: BTreeMap<String, String>,
    /// Read with `STREAM`: only files not yet processed.
    pub streaming: bool,
    /// Which syntax named it (`read_files` or `` fmt.`path` ``).
    pub syntax: FileSyntax,
    /// Where it is referenced.
    pub location: SourceLocation,
    /// The reference in the normalized query text (a leading `STREAM` included).
    pub span: Span,
}

/// How a file source was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FileSyntax {
    /// `read_files('path', format => …)`.
    ReadFiles,
    /// `` parquet.`path` ``.
    FormatPath,
    /// DLT's `cloud_files('path', 'format'[, map(…)])` (Auto Loader), always a stream; its
    /// `cloudFiles.*` options are translated by the front-end (see `frontend::query`).
    CloudFiles,
}

/// Event time of a streaming source: rows later than the watermark are dropped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EventTime {
    /// The event-time column.
    pub column: String,
    /// The delay as written after `INTERVAL` (`5 MINUTES`).
    pub delay: String,
    /// Where it is declared.
    pub location: SourceLocation,
    /// The clause's place in the normalized query text, where it is blanked out.
    pub span: Span,
}

impl EventTime {
    /// The clause as Spark reads it.
    pub fn clause(&self) -> String {
        format!("WATERMARK {} DELAY OF INTERVAL {}", quote_ident(&self.column), self.delay)
    }
}

/// `AUTO CDC INTO …`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoCdc {
    /// The change feed (`FROM …`).
    pub source: Query,
    /// `KEYS (…)`.
    pub keys: Vec<String>,
    /// `SEQUENCE BY` expression; `None` is a validation error.
    pub sequence_by: Option<String>,
    /// `APPLY AS DELETE WHEN` condition.
    pub apply_as_delete: Option<String>,
    /// `APPLY AS TRUNCATE WHEN` condition.
    pub apply_as_truncate: Option<String>,
    /// Which columns land in the target.
    pub columns: ColumnSelection,
    /// SCD type 1 (latest only) or 2 (history).
    pub scd_type: ScdType,
    /// `TRACK HISTORY ON` columns.
    pub track_history: Option<ColumnSelection>,
    /// `IGNORE NULL UPDATES`: a NULL in an update keeps the column's current value.
    #[serde(default)]
    pub ignore_null_updates: bool,
}

/// A column list of AutoCDC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnSelection {
    /// `*`.
    All,
    /// `COLUMNS a, b`.
    Include(Vec<String>),
    /// `COLUMNS * EXCEPT (a, b)`.
    Except(Vec<String>),
}

/// How AutoCDC keeps history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScdType {
    /// Latest row per key.
    Type1,
    /// Every version, with validity columns.
    Type2,
}
