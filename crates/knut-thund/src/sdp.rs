//! `Pipeline::to_sdp`: lowering the IR to an SDP dataflow graph.
//!
//! Datasets become outputs (streaming table → `TABLE`), each flow's query travels as SQL text with
//! configuration already substituted, and persistent views — which have no output type — travel
//! as SQL graph elements. Streaming file sources cannot be SQL on Spark (`STREAM json.\`p\`` is a
//! batch relation there), so each becomes a temporary view fed by a streaming `Read` relation,
//! and the query reads that view instead.

use std::collections::BTreeMap;

use knut_pipelines::{
    AutoCdcDetails, DataflowGraph, Flow as GFlow, FlowDetails, Output, OutputType, Relation, ScdType as GScd,
    SinkDetails, SourceCodeLocation, SqlGraphElements, TableDetails as GTable,
};

use crate::ir::{ColumnSelection, DatasetKind, FileSource, FlowKind, Pipeline, Read, ScdType, SourceLocation};

fn location(l: &SourceLocation) -> Option<SourceCodeLocation> {
    Some(SourceCodeLocation { file_name: l.file.clone(), line_number: l.line })
}

/// The temporary view a streaming file source is lowered to.
pub fn file_view_name(flow_index: usize, read_index: usize) -> String {
    format!("__thund_files_{flow_index}_{read_index}")
}

fn read_relation(fs: &FileSource) -> Relation {
    let mut options: BTreeMap<String, String> = fs.options.clone();
    let schema = options.remove("schema");
    // read_files looks into sub-folders; Spark's file source only does with this option.
    options.entry("recursiveFileLookup".into()).or_insert_with(|| "true".into());
    Relation::Read {
        format: fs.format.clone(),
        schema,
        options,
        paths: vec![fs.path.clone()],
        is_streaming: fs.streaming,
    }
}

impl Pipeline {
    /// Lowers the pipeline to the dataflow graph SDP runs.
    pub fn to_sdp(&self) -> DataflowGraph {
        let mut g = DataflowGraph::new(&self.catalog, &self.database);
        g.sql_conf = self.configuration.clone();
        for d in &self.datasets {
            let output_type = match d.kind {
                DatasetKind::MaterializedView => OutputType::MaterializedView,
                DatasetKind::StreamingTable => OutputType::Table,
                DatasetKind::TemporaryView => OutputType::TemporaryView,
                DatasetKind::Sink => OutputType::Sink,
                DatasetKind::PersistentView => continue, // sent as SQL below
            };
            let mut o = Output::new(d.name.to_string(), output_type);
            o.comment = d.comment.clone();
            o.location = location(&d.location);
            if d.kind.is_table() {
                o.table_details = Some(GTable {
                    table_properties: d.details.properties.clone(),
                    partition_cols: d.details.partitioned_by.clone(),
                    format: d.details.format.clone(),
                    schema: d.details.schema_ddl(),
                    clustering_columns: d.details.cluster_by.clone(),
                });
            }
            if let Some(s) = &d.sink {
                o.sink_details = Some(SinkDetails { format: s.format.clone(), options: s.options.clone() });
            }
            g.outputs.push(o);
        }
        let kinds: BTreeMap<_, _> = self.datasets.iter().map(|d| (&d.name, d.kind)).collect();
        for (fi, f) in self.flows.iter().enumerate() {
            let target_kind = kinds.get(&f.target).copied();
            if target_kind == Some(DatasetKind::PersistentView) {
                g.sql_elements.push(SqlGraphElements {
                    sql_text: format!("CREATE VIEW {} AS {}", f.target, f.query().sql),
                    sql_file_path: f.location.file.clone(),
                });
                continue;
            }
            let mut sql = f.query().sql.clone();
            for (ri, r) in f.query().reads.iter().enumerate() {
                let Read::Files(fs) = r else { continue };
                if !fs.streaming {
                    continue;
                }
                let view = file_view_name(fi, ri);
                let qualified = format!("{}.{}.{view}", self.catalog, self.database);
                let mut o = Output::new(&qualified, OutputType::TemporaryView);
                o.location = location(&fs.location);
                g.outputs.push(o);
                g.flows.push(GFlow {
                    location: location(&fs.location),
                    ..GFlow::new(&qualified, &qualified, FlowDetails::Relation(read_relation(fs)))
                });
                sql = replace_stream_read_files(&sql, &view);
            }
            let relation = Relation::Sql { query: sql };
            let details = match &f.kind {
                FlowKind::Append { .. } | FlowKind::Once { .. } => FlowDetails::Relation(relation),
                FlowKind::AutoCdc(c) => {
                    // The protocol names the change feed's dataset rather than carrying a
                    // relation: the query becomes a temporary view the AutoCDC flow reads.
                    let source = format!("{}.{}.__thund_cdc_{fi}", self.catalog, self.database);
                    let mut o = Output::new(&source, OutputType::TemporaryView);
                    o.location = location(&f.location);
                    g.outputs.push(o);
                    g.flows.push(GFlow {
                        location: location(&f.location),
                        ..GFlow::new(&source, &source, FlowDetails::Relation(relation))
                    });
                    let (column_list, except_column_list) = match &c.columns {
                        ColumnSelection::All => (vec![], vec![]),
                        ColumnSelection::Include(v) => (v.clone(), vec![]),
                        ColumnSelection::Except(v) => (vec![], v.clone()),
                    };
                    FlowDetails::AutoCdc(AutoCdcDetails {
                        source,
                        keys: c.keys.clone(),
                        sequence_by: c.sequence_by.clone().unwrap_or_default(),
                        apply_as_deletes: c.apply_as_delete.clone(),
                        apply_as_truncates: c.apply_as_truncate.clone(),
                        column_list,
                        except_column_list,
                        stored_as: match c.scd_type {
                            ScdType::Type1 => GScd::Type1,
                            ScdType::Type2 => GScd::Type2,
                        },
                        track_history_columns: match &c.track_history {
                            Some(ColumnSelection::Include(v)) => v.clone(),
                            _ => vec![],
                        },
                    })
                }
            };
            let mut gf = GFlow::new(f.name.to_string(), f.target.to_string(), details);
            gf.once = matches!(f.kind, FlowKind::Once { .. });
            gf.location = location(&f.location);
            gf.sql_conf = f.sql_conf.clone();
            g.flows.push(gf);
        }
        g
    }
}

/// Replaces the first `STREAM read_files(…)` / `STREAM(read_files(…))` in `sql` by
/// `STREAM(view)`. Works on tokens so strings and comments are never touched.
fn replace_stream_read_files(sql: &str, view: &str) -> String {
    let base = SourceLocation::new("", 1, 1);
    let Ok(toks) = crate::frontend::text::tokenize(sql, Some(&base), "") else {
        return sql.to_string();
    };
    for (i, t) in toks.iter().enumerate() {
        if !t.is_word("STREAM") {
            continue;
        }
        let (rf, wrapped) = match toks.get(i + 1) {
            Some(n) if n.is_word("read_files") => (i + 1, false),
            Some(n)
                if n.token == sqlparser::tokenizer::Token::LParen
                    && toks.get(i + 2).is_some_and(|x| x.is_word("read_files")) =>
            {
                (i + 2, true)
            }
            _ => continue,
        };
        let Some(close) = crate::frontend::query::matching_paren(&toks, rf + 1) else { continue };
        let end = if wrapped { close + 1 } else { close };
        let Some(last) = toks.get(end) else { continue };
        return format!("{}STREAM({view}){}", &sql[..t.start], &sql[last.end..]);
    }
    sql.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_streaming_file_reads_with_their_view() {
        assert_eq!(
            replace_stream_read_files("SELECT * FROM STREAM read_files('/x', format => 'json') WHERE a", "v"),
            "SELECT * FROM STREAM(v) WHERE a"
        );
        assert_eq!(
            replace_stream_read_files("SELECT * FROM STREAM(read_files('/x', format => 'json'))", "v"),
            "SELECT * FROM STREAM(v)"
        );
    }
}
