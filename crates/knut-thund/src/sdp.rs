//! `Pipeline::to_sdp`: lowering the IR to an SDP dataflow graph.
//!
//! Datasets become outputs (streaming table → `TABLE`), each flow's query travels as SQL text with
//! configuration already substituted, and persistent views — which have no output type — travel
//! as SQL graph elements. File sources become temporary views fed by `Read` relations and the
//! query reads the view instead: streaming ones cannot be SQL on Spark (`STREAM json.\`p\`` is a
//! batch relation there), open-source Spark has no `read_files`, and a relative path must be
//! resolved against the project folder, not the server's working directory.

use std::collections::BTreeMap;

use knut_pipelines::{
    AutoCdcDetails, DataflowGraph, Flow as GFlow, FlowDetails, Output, OutputType, Relation, ScdType as GScd,
    SinkDetails, SourceCodeLocation, SqlGraphElements, TableDetails as GTable,
};

use crate::error::CapabilityGap;
use crate::ir::{ColumnSelection, DatasetKind, FileSource, FlowKind, Pipeline, Read, ScdType, SourceLocation};

fn location(l: &SourceLocation) -> Option<SourceCodeLocation> {
    Some(SourceCodeLocation { file_name: l.file.clone(), line_number: l.line })
}

/// The temporary view a streaming file source is lowered to.
pub fn file_view_name(flow_index: usize, read_index: usize) -> String {
    format!("__thund_files_{flow_index}_{read_index}")
}

fn read_relation(fs: &FileSource, root: &std::path::Path) -> Relation {
    let mut options: BTreeMap<String, String> = fs.options.clone();
    options.remove("format");
    let schema = options.remove("schema");
    if fs.syntax == crate::ir::FileSyntax::ReadFiles {
        // read_files looks into sub-folders; Spark's file source only does with this option.
        options.entry("recursiveFileLookup".into()).or_insert_with(|| "true".into());
        // read_files infers CSV column types; Spark's CSV reader reads strings unless asked.
        if fs.format.eq_ignore_ascii_case("csv") && schema.is_none() {
            options.entry("inferSchema".into()).or_insert_with(|| "true".into());
        }
    }
    let path = if fs.path.contains("://") || std::path::Path::new(&fs.path).is_absolute() {
        fs.path.clone()
    } else {
        root.join(&fs.path).to_string_lossy().into_owned()
    };
    Relation::Read {
        format: fs.format.to_ascii_lowercase(),
        schema,
        options,
        paths: vec![path],
        is_streaming: fs.streaming,
    }
}

/// The name an output is defined under: temporary views have one-part names on Spark
/// (`MULTIPART_TEMPORARY_VIEW_NAME_NOT_SUPPORTED`), everything else is fully qualified.
fn output_name(kind: DatasetKind, name: &crate::ir::QualifiedName) -> String {
    if kind == DatasetKind::TemporaryView {
        name.name.clone()
    } else {
        name.to_string()
    }
}

/// Table formats whose tables Spark can append to from several flows and MERGE into.
const TRANSACTIONAL_FORMATS: &[&str] = &["delta", "iceberg"];

impl Pipeline {
    /// What the lowering cannot express faithfully on Spark, whatever the server version:
    /// several flows into one parquet streaming table, AUTO CDC into a table without MERGE.
    pub fn sdp_gaps(&self) -> Vec<CapabilityGap> {
        let p = self;
        let mut gaps = Vec::new();
        for d in p.datasets.iter().filter(|d| d.kind == DatasetKind::StreamingTable) {
            let transactional = d
                .details
                .format
                .as_deref()
                .is_some_and(|f| TRANSACTIONAL_FORMATS.contains(&f.to_ascii_lowercase().as_str()));
            if transactional {
                continue;
            }
            let flows: Vec<_> = p.flows_into(&d.name).collect();
            if flows.len() > 1 {
                // Measured on Spark 4.1.4: both flows write files, but the parquet table's
                // `_spark_metadata` log keeps one flow's commits, so readers lose the other's rows.
                for f in &flows {
                    gaps.push(CapabilityGap {
                        feature: "several flows into one parquet streaming table".into(),
                        element: d.name.to_string(),
                        location: f.location.clone(),
                        detail: format!(
                            "flow {} is one of {} into it; Spark keeps only one flow's commits in a parquet table \
                             (write one flow with UNION ALL, or declare the table USING delta)",
                            f.name,
                            flows.len()
                        ),
                    });
                }
            }
            for f in flows.iter().filter(|f| matches!(f.kind, FlowKind::AutoCdc(_))) {
                gaps.push(CapabilityGap {
                    feature: "AUTO CDC into a table format with MERGE".into(),
                    element: d.name.to_string(),
                    location: f.location.clone(),
                    detail: format!(
                        "{} is {}, which has no MERGE on Spark; declare it USING delta or iceberg",
                        d.name,
                        d.details.format.as_deref().unwrap_or("parquet (the default)")
                    ),
                });
            }
        }
        // `rescuedDataColumn` is a Databricks reader option; open-source Spark's JSON reader
        // ignores it silently, so the same project would drop or fail records instead.
        for f in &p.flows {
            for r in &f.query().reads {
                if let Read::Files(fs) = r {
                    if fs.options.contains_key("rescueddatacolumn") {
                        gaps.push(CapabilityGap {
                            feature: "rescuedDataColumn".into(),
                            element: f.name.to_string(),
                            location: f.location.clone(),
                            detail: format!(
                                "open-source Spark's readers have no rescued-data column (reading `{}`)",
                                fs.path
                            ),
                        });
                    }
                }
            }
        }
        gaps
    }

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
            let mut o = Output::new(output_name(d.kind, &d.name), output_type);
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
            let mut used = vec![false; f.query().reads.len()];
            let mut next_view = 0;
            while let Some(occ) = next_file_source(&sql) {
                // Match the occurrence to its read by path and streaming-ness, in text order.
                let found = f.query().reads.iter().enumerate().find_map(|(ri, r)| match r {
                    Read::Files(fs) if !used[ri] && fs.path == occ.path && fs.streaming == occ.streaming => {
                        Some((ri, fs))
                    }
                    _ => None,
                });
                let Some((ri, fs)) = found else { break };
                used[ri] = true;
                let view = file_view_name(fi, next_view);
                next_view += 1;
                // Temporary views have one-part names on Spark.
                let qualified = view.clone();
                let mut o = Output::new(&qualified, OutputType::TemporaryView);
                o.location = location(&fs.location);
                g.outputs.push(o);
                g.flows.push(GFlow {
                    location: location(&fs.location),
                    ..GFlow::new(&qualified, &qualified, FlowDetails::Relation(read_relation(fs, &self.root)))
                });
                if fs.streaming && !fs.options.contains_key("schema") {
                    // A streaming file source needs a schema on Spark unless inference is on;
                    // read_files infers one.
                    g.sql_conf.insert("spark.sql.streaming.schemaInference".into(), "true".into());
                }
                let replacement = if fs.streaming { format!("STREAM({view})") } else { view };
                sql = format!("{}{replacement}{}", &sql[..occ.start], &sql[occ.end..]);
            }
            let relation = Relation::Sql { query: sql };
            let details = match &f.kind {
                FlowKind::Append { .. } | FlowKind::Once { .. } => FlowDetails::Relation(relation),
                FlowKind::AutoCdc(c) => {
                    // The protocol names the change feed's dataset rather than carrying a
                    // relation: the query becomes a temporary view the AutoCDC flow reads.
                    let source = format!("__thund_cdc_{fi}");
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
            let target_kind = target_kind.unwrap_or(DatasetKind::MaterializedView);
            // Spark wants one-part names for temporary views and for explicit flows
            // (`MULTIPART_FLOW_NAME_NOT_SUPPORTED`); an implicit flow carries its dataset's name.
            let (name, target) = match (target_kind, f.implicit) {
                (DatasetKind::TemporaryView, _) => (f.target.name.clone(), f.target.name.clone()),
                (_, false) => (f.name.name.clone(), f.target.to_string()),
                (_, true) => (f.name.to_string(), f.target.to_string()),
            };
            let mut gf = GFlow::new(name, target, details);
            gf.once = matches!(f.kind, FlowKind::Once { .. });
            gf.location = location(&f.location);
            gf.sql_conf = f.sql_conf.clone();
            g.flows.push(gf);
        }
        g
    }
}

/// A file source found in SQL text: its byte range (including a leading `STREAM`), path and
/// whether it streams.
#[derive(Debug, PartialEq, Eq)]
struct FileOccurrence {
    start: usize,
    end: usize,
    path: String,
    streaming: bool,
}

/// Finds the first file source in `sql`: `read_files(…)` or `` fmt.`path` ``, optionally
/// streamed with `STREAM x` or `STREAM(x)`. Works on tokens so strings and comments are never
/// touched.
fn next_file_source(sql: &str) -> Option<FileOccurrence> {
    use sqlparser::tokenizer::Token;
    let base = SourceLocation::new("", 1, 1);
    let toks = crate::frontend::text::tokenize(sql, Some(&base), "").ok()?;
    for (i, t) in toks.iter().enumerate() {
        // `read_files(` …
        let (first, last, path) =
            if t.is_word("read_files") && toks.get(i + 1).is_some_and(|n| n.token == Token::LParen) {
                let close = crate::frontend::query::matching_paren(&toks, i + 1)?;
                let path = toks[i + 2..close].iter().find_map(|x| match &x.token {
                    Token::SingleQuotedString(s) | Token::DoubleQuotedString(s) => Some(s.clone()),
                    _ => None,
                })?;
                (i, close, path)
            } else if let (Token::Word(w), Some(dot), Some(p)) = (&t.token, toks.get(i + 1), toks.get(i + 2)) {
                // … or ``fmt.`path` ``
                let is_format = crate::frontend::query::FILE_FORMATS.iter().any(|f| w.value.eq_ignore_ascii_case(f));
                match &p.token {
                    Token::Word(pw) if is_format && dot.token == Token::Period && pw.quote_style == Some('`') => {
                        (i, i + 2, pw.value.clone())
                    }
                    _ => continue,
                }
            } else {
                continue;
            };
        // A leading `STREAM` or `STREAM(` makes it a streaming read.
        let (mut start_tok, mut end_tok, mut streaming) = (first, last, false);
        if first >= 1 && toks[first - 1].is_word("STREAM") {
            (start_tok, streaming) = (first - 1, true);
        } else if first >= 2
            && toks[first - 1].token == Token::LParen
            && toks[first - 2].is_word("STREAM")
            && toks.get(last + 1).is_some_and(|x| x.token == Token::RParen)
        {
            (start_tok, end_tok, streaming) = (first - 2, last + 1, true);
        }
        return Some(FileOccurrence { start: toks[start_tok].start, end: toks[end_tok].end, path, streaming });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_file_sources_in_every_spelling() {
        let q = "SELECT * FROM STREAM read_files('/x', format => 'json') WHERE a";
        let o = next_file_source(q).unwrap();
        assert_eq!(
            (&q[o.start..o.end], o.path.as_str(), o.streaming),
            ("STREAM read_files('/x', format => 'json')", "/x", true)
        );
        let q = "SELECT * FROM STREAM(read_files('/x', format => 'json'))";
        let o = next_file_source(q).unwrap();
        assert_eq!(&q[o.start..o.end], "STREAM(read_files('/x', format => 'json'))");
        let q = "SELECT * FROM parquet.`data/p` AS t -- read_files('no')";
        let o = next_file_source(q).unwrap();
        assert_eq!((&q[o.start..o.end], o.path.as_str(), o.streaming), ("parquet.`data/p`", "data/p", false));
        assert_eq!(next_file_source("SELECT 'read_files(1)' FROM t"), None);
    }
}
