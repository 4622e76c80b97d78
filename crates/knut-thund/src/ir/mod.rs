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

use serde::{Deserialize, Serialize};

mod flow;
mod needs;
pub(crate) mod query;
pub use flow::{AutoCdc, ColumnSelection, Flow, FlowKind, ScdType};
pub use needs::{Feature, Need, TableUse};
pub use query::{
    name_parts, DataFrameRelation, EventTime, Expression, FileSource, FileSyntax, ParsedQuery, Query, Read, ReadFinder,
    Span,
};

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
    /// `catalog.database.name`, each part lower-cased: a pipeline's names match whatever their
    /// case, quoted or not, as a Databricks catalog matches them (`@dp.table(name="RIDES_RAW")`
    /// is read as `rides_raw`).
    pub fn new(catalog: &str, database: &str, name: &str) -> Self {
        QualifiedName { catalog: catalog.to_lowercase(), database: database.to_lowercase(), name: name.to_lowercase() }
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
        match self {
            DatasetKind::MaterializedView | DatasetKind::StreamingTable => true,
            DatasetKind::TemporaryView | DatasetKind::PersistentView | DatasetKind::Sink => false,
        }
    }

    /// Whether it is a view (a query with no data of its own).
    pub fn is_view(self) -> bool {
        match self {
            DatasetKind::TemporaryView | DatasetKind::PersistentView => true,
            DatasetKind::MaterializedView | DatasetKind::StreamingTable | DatasetKind::Sink => false,
        }
    }

    /// Whether explicit flows may write to it, and its rows arrive batch by batch: a streaming
    /// table or a sink.
    pub fn takes_flows(self) -> bool {
        match self {
            DatasetKind::StreamingTable | DatasetKind::Sink => true,
            DatasetKind::MaterializedView | DatasetKind::TemporaryView | DatasetKind::PersistentView => false,
        }
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
    /// A materialized view's `REFRESH POLICY`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_policy: Option<RefreshPolicy>,
}

/// How a materialized view may refresh (`REFRESH POLICY …`, Databricks' clause and meaning).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefreshPolicy {
    /// Incrementally where that is cheaper, else a complete recompute (the default).
    #[default]
    Auto,
    /// Incrementally whenever the view can be, whatever the cost.
    Incremental,
    /// Incrementally, or the refresh fails rather than recompute.
    IncrementalStrict,
    /// Always a complete recompute.
    Full,
}

impl RefreshPolicy {
    /// As written in SQL.
    pub fn as_sql(self) -> &'static str {
        match self {
            RefreshPolicy::Auto => "AUTO",
            RefreshPolicy::Incremental => "INCREMENTAL",
            RefreshPolicy::IncrementalStrict => "INCREMENTAL STRICT",
            RefreshPolicy::Full => "FULL",
        }
    }
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
    pub predicate: Expression,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
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
