//! The dataflow graph model: what `DefineOutput`/`DefineFlow` carry, minus the wire encoding.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};

/// A whole pipeline as SDP sees it: outputs (datasets) and the flows that fill them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataflowGraph {
    /// Catalog that unqualified names resolve to (`CreateDataflowGraph.default_catalog`).
    pub default_catalog: String,
    /// Database that unqualified names resolve to (`CreateDataflowGraph.default_database`).
    pub default_database: String,
    /// Spark SQL configuration sent with the graph (the spec's `configuration`).
    pub sql_conf: BTreeMap<String, String>,
    /// One entry per `DefineOutput`.
    pub outputs: Vec<Output>,
    /// One entry per `DefineFlow`.
    pub flows: Vec<Flow>,
    /// SQL text sent as-is (`DefineSqlGraphElements`): persistent views, which have no output type.
    pub sql_elements: Vec<SqlGraphElements>,
}

/// Kinds of output the protocol knows (`OutputType`, numbered as on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum OutputType {
    /// Recomputed in full each run.
    MaterializedView = 1,
    /// A streaming table: appended to incrementally by its flows.
    Table = 2,
    /// Exists only while the graph runs; inlined into its readers.
    TemporaryView = 3,
    /// An external destination that flows append to.
    Sink = 4,
}

impl fmt::Display for OutputType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            OutputType::MaterializedView => "MATERIALIZED_VIEW",
            OutputType::Table => "TABLE",
            OutputType::TemporaryView => "TEMPORARY_VIEW",
            OutputType::Sink => "SINK",
        })
    }
}

/// Where a definition came from, so that server errors point at the user's file and line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceCodeLocation {
    /// Path of the definition file, relative to the project root.
    pub file_name: String,
    /// 1-based line of the definition.
    pub line_number: u32,
}

/// One `DefineOutput`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Output {
    /// Fully qualified name (`catalog.database.name`).
    pub name: String,
    /// What kind of output it is.
    pub output_type: OutputType,
    /// The user's `COMMENT`.
    pub comment: Option<String>,
    /// Where it was defined.
    pub location: Option<SourceCodeLocation>,
    /// Storage details for materialized views and tables.
    pub table_details: Option<TableDetails>,
    /// Format and options of a sink.
    pub sink_details: Option<SinkDetails>,
}

impl Output {
    /// An output with no details, comment or location.
    pub fn new(name: impl Into<String>, output_type: OutputType) -> Self {
        Output {
            name: name.into(),
            output_type,
            comment: None,
            location: None,
            table_details: None,
            sink_details: None,
        }
    }
}

/// Storage details of a table (`DefineOutput.table_details`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TableDetails {
    /// `TBLPROPERTIES`.
    pub table_properties: BTreeMap<String, String>,
    /// `PARTITIONED BY` columns.
    pub partition_cols: Vec<String>,
    /// `USING` format; `None` lets the server choose.
    pub format: Option<String>,
    /// Declared schema as a Spark DDL string (`a INT COMMENT 'x', b STRING`).
    pub schema: Option<String>,
    /// `CLUSTER BY` columns.
    pub clustering_columns: Vec<String>,
}

/// Where a sink writes (`DefineOutput.sink_details`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SinkDetails {
    /// Data source format (`parquet`, `delta`, …).
    pub format: String,
    /// Data source options (`path`, …).
    pub options: BTreeMap<String, String>,
}

/// One `DefineFlow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Fully qualified flow name; the implicit flow of a dataset carries the dataset's name.
    pub name: String,
    /// Fully qualified name of the output it writes.
    pub target: String,
    /// Per-flow SQL configuration.
    pub sql_conf: BTreeMap<String, String>,
    /// Where it was defined.
    pub location: Option<SourceCodeLocation>,
    /// Runs once per full refresh (a backfill) rather than on every update.
    pub once: bool,
    /// What the flow computes.
    pub details: FlowDetails,
}

impl Flow {
    /// A continuous flow with no conf or location.
    pub fn new(name: impl Into<String>, target: impl Into<String>, details: FlowDetails) -> Self {
        Flow {
            name: name.into(),
            target: target.into(),
            sql_conf: BTreeMap::new(),
            location: None,
            once: false,
            details,
        }
    }
}

/// The body of a flow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum FlowDetails {
    /// `relation_flow_details`: the flow's rows are a relation.
    Relation(Relation),
    /// `auto_cdc_flow_details` (Spark 4.3+): a change feed applied with MERGE.
    AutoCdc(AutoCdcDetails),
}

/// A relation as the protocol carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Relation {
    /// `Relation.sql`: a SQL query, configuration already substituted.
    Sql {
        /// The query text.
        query: String,
    },
    /// `Relation.read.data_source`: files read by a data source (streaming when asked).
    Read {
        /// Data source format (`json`, `csv`, `parquet`, …).
        format: String,
        /// Schema as a DDL string; streaming file sources need one on Spark.
        schema: Option<String>,
        /// Data source options.
        options: BTreeMap<String, String>,
        /// Files or folders.
        paths: Vec<String>,
        /// Read as a stream (only new files each update).
        is_streaming: bool,
    },
    /// A serialized Spark Connect `Relation` as a Python query function's DataFrame built it,
    /// sent to the server unchanged.
    Connect {
        /// The relation's protobuf bytes.
        bytes: Vec<u8>,
    },
}

/// How AutoCDC keeps history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScdType {
    /// Keep the latest row per key.
    Type1,
    /// Keep every version with validity columns.
    Type2,
}

/// `auto_cdc_flow_details`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoCdcDetails {
    /// The dataset the change feed is read from (streamed); the protocol names a dataset here,
    /// not a relation, so a query is lowered to a temporary view first.
    pub source: String,
    /// Key columns.
    pub keys: Vec<String>,
    /// Ordering expression (SQL).
    pub sequence_by: String,
    /// `APPLY AS DELETE WHEN` condition (SQL).
    pub apply_as_deletes: Option<String>,
    /// `APPLY AS TRUNCATE WHEN` condition (SQL).
    pub apply_as_truncates: Option<String>,
    /// Columns to keep (empty: all).
    pub column_list: Vec<String>,
    /// Columns to drop (`* EXCEPT (…)`).
    pub except_column_list: Vec<String>,
    /// SCD type.
    pub stored_as: ScdType,
    /// `TRACK HISTORY ON` columns (SCD type 2 only).
    pub track_history_columns: Vec<String>,
    /// `TRACK HISTORY ON * EXCEPT (…)` columns.
    #[serde(default)]
    pub track_history_except_columns: Vec<String>,
}

/// SQL text defining graph elements the protocol has no output type for (persistent views).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SqlGraphElements {
    /// The statements.
    pub sql_text: String,
    /// The file they came from, relative to the project root.
    pub sql_file_path: String,
}

/// A graph the server would reject, with every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid dataflow graph: {}", .problems.join("; "))]
pub struct GraphError {
    /// One sentence per problem.
    pub problems: Vec<String>,
}

impl DataflowGraph {
    /// An empty graph resolving unqualified names to `catalog.database`.
    pub fn new(catalog: impl Into<String>, database: impl Into<String>) -> Self {
        DataflowGraph {
            default_catalog: catalog.into(),
            default_database: database.into(),
            sql_conf: BTreeMap::new(),
            outputs: Vec::new(),
            flows: Vec::new(),
            sql_elements: Vec::new(),
        }
    }

    /// Checks the invariants the server relies on, reporting all problems at once: unique output
    /// and flow names, every flow targets a defined output, every output has a flow, and
    /// materialized views and temporary views have exactly one.
    pub fn validate(&self) -> Result<(), GraphError> {
        let mut problems = Vec::new();
        let mut outputs = BTreeMap::new();
        for o in &self.outputs {
            if o.name.trim().is_empty() {
                problems.push("an output has an empty name".to_string());
            }
            if outputs.insert(o.name.as_str(), o).is_some() {
                problems.push(format!("output `{}` is defined more than once", o.name));
            }
            if o.output_type == OutputType::Sink && o.sink_details.is_none() {
                problems.push(format!("sink `{}` has no format", o.name));
            }
        }
        let mut flow_names = BTreeSet::new();
        let mut flows_per_output: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &self.flows {
            if !flow_names.insert(f.name.as_str()) {
                problems.push(format!("flow `{}` is defined more than once", f.name));
            }
            match outputs.get(f.target.as_str()) {
                None => {
                    problems.push(format!("flow `{}` writes to `{}`, which is not a defined output", f.name, f.target))
                }
                Some(o) => {
                    if matches!(f.details, FlowDetails::AutoCdc(_)) && o.output_type != OutputType::Table {
                        problems.push(format!(
                            "AutoCDC flow `{}` must write to a streaming table, not a {}",
                            f.name, o.output_type
                        ));
                    }
                    *flows_per_output.entry(o.name.as_str()).or_default() += 1;
                }
            }
        }
        for o in outputs.values() {
            let n = flows_per_output.get(o.name.as_str()).copied().unwrap_or(0);
            match o.output_type {
                OutputType::MaterializedView | OutputType::TemporaryView if n != 1 => {
                    problems.push(format!("{} `{}` must have exactly one flow, has {n}", o.output_type, o.name))
                }
                OutputType::Table | OutputType::Sink if n == 0 => {
                    problems.push(format!("{} `{}` has no flow writing to it", o.output_type, o.name))
                }
                _ => {}
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(GraphError { problems })
        }
    }
}

impl fmt::Display for DataflowGraph {
    /// One line per output and flow, with arrows for what writes where.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "graph {}.{}", self.default_catalog, self.default_database)?;
        for o in &self.outputs {
            writeln!(f, "  output {} {}", o.output_type, o.name)?;
        }
        for fl in &self.flows {
            let kind = match (&fl.details, fl.once) {
                (FlowDetails::AutoCdc(_), _) => "auto_cdc",
                (_, true) => "once",
                _ => "append",
            };
            writeln!(f, "  flow {} ({kind}) -> {}", fl.name, fl.target)?;
        }
        for e in &self.sql_elements {
            writeln!(f, "  sql {}", e.sql_file_path)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sql(q: &str) -> FlowDetails {
        FlowDetails::Relation(Relation::Sql { query: q.into() })
    }

    #[test]
    fn reports_every_problem_at_once() {
        let mut g = DataflowGraph::new("c", "d");
        g.outputs.push(Output::new("c.d.mv", OutputType::MaterializedView));
        g.outputs.push(Output::new("c.d.mv", OutputType::MaterializedView));
        g.outputs.push(Output::new("c.d.st", OutputType::Table));
        g.flows.push(Flow::new("c.d.f", "c.d.missing", sql("SELECT 1")));
        let err = g.validate().unwrap_err();
        assert_eq!(err.problems.len(), 4, "{err}");
        assert!(err.problems.iter().any(|p| p.contains("more than once")));
        assert!(err.problems.iter().any(|p| p.contains("not a defined output")));
        assert!(err.problems.iter().any(|p| p.contains("TABLE `c.d.st` has no flow")));
    }

    #[test]
    fn accepts_several_flows_into_a_table() {
        let mut g = DataflowGraph::new("c", "d");
        g.outputs.push(Output::new("c.d.t", OutputType::Table));
        g.flows.push(Flow::new("c.d.a", "c.d.t", sql("SELECT 1")));
        g.flows.push(Flow::new("c.d.b", "c.d.t", sql("SELECT 2")));
        assert_eq!(g.validate(), Ok(()));
        assert!(g.to_string().contains("flow c.d.b (append) -> c.d.t"));
    }

    #[test]
    fn rejects_a_second_flow_into_a_materialized_view() {
        let mut g = DataflowGraph::new("c", "d");
        g.outputs.push(Output::new("c.d.mv", OutputType::MaterializedView));
        g.flows.push(Flow::new("c.d.mv", "c.d.mv", sql("SELECT 1")));
        g.flows.push(Flow::new("c.d.x", "c.d.mv", sql("SELECT 2")));
        let err = g.validate().unwrap_err();
        assert!(err.problems[0].contains("exactly one flow, has 2"));
    }
}
