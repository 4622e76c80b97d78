//! Graph model → protocol messages: field-by-field copies, the only place that knows both.

use crate::graph::{
    AutoCdcDetails, DataflowGraph, Flow, FlowDetails, Output, OutputType, Relation, ScdType, SourceCodeLocation,
};
use crate::proto::spark::connect as pb;
use pb::pipeline_command::{
    define_flow::{self, AutoCdcFlowDetails, WriteRelationFlowDetails},
    define_output::{self, SinkDetails, TableDetails},
    CreateDataflowGraph, DefineFlow, DefineOutput,
};

impl From<&SourceCodeLocation> for pb::SourceCodeLocation {
    fn from(l: &SourceCodeLocation) -> Self {
        pb::SourceCodeLocation { file_name: Some(l.file_name.clone()), line_number: Some(l.line_number as i32) }
    }
}

impl From<OutputType> for pb::OutputType {
    fn from(t: OutputType) -> Self {
        match t {
            OutputType::MaterializedView => pb::OutputType::MaterializedView,
            OutputType::Table => pb::OutputType::Table,
            OutputType::TemporaryView => pb::OutputType::TemporaryView,
            OutputType::Sink => pb::OutputType::Sink,
        }
    }
}

/// A flow's relation as `WriteRelationFlowDetails` carries it: serialized. One built by the user's
/// pyspark is passed on exactly as it came.
fn relation_bytes(r: &Relation) -> Vec<u8> {
    let rel_type = match r {
        Relation::Connect { bytes } => return bytes.clone(),
        Relation::Sql { query } => pb::relation::RelType::Sql(pb::Sql { query: query.clone() }),
        Relation::Read { format, schema, options, paths, is_streaming } => pb::relation::RelType::Read(pb::Read {
            is_streaming: *is_streaming,
            read_type: Some(pb::read::ReadType::DataSource(pb::read::DataSource {
                format: Some(format.clone()),
                schema: schema.clone(),
                options: options.clone().into_iter().collect(),
                paths: paths.clone(),
            })),
        }),
    };
    prost::Message::encode_to_vec(&pb::Relation { common: None, rel_type: Some(rel_type) })
}

/// The graph's `CreateDataflowGraph` command.
pub(crate) fn create_graph(g: &DataflowGraph) -> CreateDataflowGraph {
    CreateDataflowGraph {
        default_catalog: Some(g.default_catalog.clone()),
        default_database: Some(g.default_database.clone()),
        sql_conf: g.sql_conf.clone().into_iter().collect(),
    }
}

/// One output's `DefineOutput` command.
pub(crate) fn define_output(graph_id: &str, o: &Output) -> DefineOutput {
    let details = if let Some(s) = &o.sink_details {
        Some(define_output::Details::SinkDetails(SinkDetails {
            options: s.options.clone().into_iter().collect(),
            format: Some(s.format.clone()),
        }))
    } else {
        o.table_details.as_ref().map(|t| {
            define_output::Details::TableDetails(TableDetails {
                table_properties: t.table_properties.clone().into_iter().collect(),
                partition_cols: t.partition_cols.clone(),
                format: t.format.clone(),
                schema: t.schema.clone().map(define_output::table_details::Schema::SchemaString),
                clustering_columns: t.clustering_columns.clone(),
            })
        })
    };
    DefineOutput {
        dataflow_graph_id: Some(graph_id.to_string()),
        output_name: Some(o.name.clone()),
        output_type: Some(pb::OutputType::from(o.output_type) as i32),
        comment: o.comment.clone(),
        source_code_location: o.location.as_ref().map(Into::into),
        details,
    }
}

fn column(name: &str) -> pb::Expression {
    pb::Expression {
        common: None,
        expr_type: Some(pb::expression::ExprType::UnresolvedAttribute(pb::expression::UnresolvedAttribute {
            unparsed_identifier: name.to_string(),
            ..Default::default()
        })),
    }
}

fn expression(sql: &str) -> pb::Expression {
    pb::Expression {
        common: None,
        expr_type: Some(pb::expression::ExprType::ExpressionString(pb::expression::ExpressionString {
            expression: sql.to_string(),
        })),
    }
}

fn auto_cdc(c: &AutoCdcDetails) -> AutoCdcFlowDetails {
    AutoCdcFlowDetails {
        source: Some(c.source.clone()),
        keys: c.keys.iter().map(|k| column(k)).collect(),
        sequence_by: Some(expression(&c.sequence_by)),
        apply_as_deletes: c.apply_as_deletes.as_deref().map(expression),
        apply_as_truncates: c.apply_as_truncates.as_deref().map(expression),
        column_list: c.column_list.iter().map(|k| column(k)).collect(),
        except_column_list: c.except_column_list.iter().map(|k| column(k)).collect(),
        stored_as_scd_type: match c.stored_as {
            ScdType::Type1 => define_flow::ScdType::ScdType1,
            ScdType::Type2 => define_flow::ScdType::ScdType2,
        } as i32,
        track_history_column_list: c.track_history_columns.iter().map(|k| column(k)).collect(),
        track_history_except_column_list: c.track_history_except_columns.iter().map(|k| column(k)).collect(),
    }
}

/// One flow's `DefineFlow` command.
pub(crate) fn define_flow(graph_id: &str, f: &Flow) -> DefineFlow {
    let details = match &f.details {
        FlowDetails::Relation(r) => {
            define_flow::Details::RelationFlowDetails(WriteRelationFlowDetails { relation: Some(relation_bytes(r)) })
        }
        FlowDetails::AutoCdc(c) => define_flow::Details::AutoCdcFlowDetails(auto_cdc(c)),
    };
    DefineFlow {
        dataflow_graph_id: Some(graph_id.to_string()),
        flow_name: Some(f.name.clone()),
        target_dataset_name: Some(f.target.clone()),
        sql_conf: f.sql_conf.clone().into_iter().collect(),
        client_id: None,
        source_code_location: f.location.as_ref().map(Into::into),
        details: Some(details),
        once: f.once.then_some(true),
    }
}
