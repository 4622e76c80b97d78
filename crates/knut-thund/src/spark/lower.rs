//! `Pipeline::to_sdp`: lowering the IR to an SDP dataflow graph.
//!
//! Datasets become outputs (streaming table → `TABLE`), each flow's query travels as SQL text with
//! configuration already substituted, and persistent views — which have no output type — travel
//! as SQL graph elements. File sources become temporary views fed by `Read` relations and the
//! query reads the view instead: streaming ones cannot be SQL on Spark (`STREAM json.\`p\`` is a
//! batch relation there), open-source Spark has no `read_files`, and a relative path must be
//! resolved against the project folder, not the server's working directory.
//!
//! The flow's SQL is the query's normalized text with each file source replaced at its span and
//! the `WATERMARK` clause, blanked out for sqlparser, put back at its own: the front-end's spans
//! say exactly where, so nothing is searched for in the text and a source that cannot be replaced
//! is an error.

use std::collections::BTreeMap;

use knut_pipelines::{
    AutoCdcDetails, DataflowGraph, Flow as GFlow, FlowDetails, Output, OutputType, Relation, ScdType as GScd,
    SinkDetails, SourceCodeLocation, SqlGraphElements, TableDetails as GTable,
};

use crate::error::{Result, ThundError};
use crate::ir::{
    ColumnSelection, DatasetKind, FileSource, Pipeline, Query, Read, ScdType, SourceLocation, Span, ViolationAction,
};

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
    if fs.syntax == crate::ir::FileSyntax::CloudFiles {
        // Auto Loader lists sub-folders; its strings for JSON are Spark's `primitivesAsString`
        // (Spark's CSV reader reads strings unless asked to infer).
        options.entry("recursiveFileLookup".into()).or_insert_with(|| "true".into());
        let strings = options.remove("infercolumntypes").is_some_and(|v| v.eq_ignore_ascii_case("false"));
        match (fs.format.as_str(), strings) {
            ("json", true) => {
                options.insert("primitivesAsString".into(), "true".into());
            }
            ("csv", false) => {
                options.insert("inferSchema".into(), "true".into());
            }
            _ => {}
        }
        options.remove("schemaevolutionmode");
    }
    if fs.rescue_by_default && options.remove("rescueddatacolumn").is_some() {
        // Open-source readers have no rescued-data column: the column is added empty (see
        // `to_sdp`), and a record that would need rescuing fails the read instead.
        options.insert("mode".into(), "FAILFAST".into());
    }
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

impl Pipeline {
    /// Lowers the pipeline to the dataflow graph SDP runs, checked by
    /// [`DataflowGraph::validate`]. An error here is a bug: the pipeline was valid.
    pub fn to_sdp(&self) -> Result<DataflowGraph> {
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
            let mut splices = Vec::new();
            for (ri, r) in f.query().reads.iter().enumerate() {
                let Read::Files(fs) = r else { continue };
                let view = file_view_name(fi, ri);
                // Temporary views have one-part names on Spark.
                let mut o = Output::new(&view, OutputType::TemporaryView);
                o.location = location(&fs.location);
                g.outputs.push(o);
                g.flows.push(GFlow {
                    location: location(&fs.location),
                    ..GFlow::new(&view, &view, FlowDetails::Relation(read_relation(fs, &self.root)))
                });
                if fs.streaming && !fs.options.contains_key("schema") {
                    // A streaming file source needs a schema on Spark unless inference is on;
                    // read_files infers one.
                    g.sql_conf.insert("spark.sql.streaming.schemaInference".into(), "true".into());
                }
                let view = match fs.options.get("rescueddatacolumn").filter(|_| fs.rescue_by_default) {
                    Some(column) => {
                        let rescued = format!("{view}_rescued");
                        let column = column.replace('`', "``");
                        let read = if fs.streaming { format!("STREAM({view})") } else { view.clone() };
                        let query = format!("SELECT *, CAST(NULL AS STRING) AS `{column}` FROM {read}");
                        define_view(&mut g, &rescued, &fs.location, Relation::Sql { query });
                        rescued
                    }
                    None => view,
                };
                splices.push((fs.span, if fs.streaming { format!("STREAM({view})") } else { view }));
            }
            if let Some(et) = &f.query().event_time {
                splices.push((et.span, et.clause()));
            }
            let mut sql = splice(f.query(), splices)?;
            // Every kind's rows meet the target's expectations: an AUTO CDC flow's changes, as
            // DLT checks them, before they are applied.
            if let Some(d) = self.dataset(&f.target) {
                sql = enforce_expectations(sql, d);
            }
            let reads_files = f.query().reads.iter().any(|r| matches!(r, Read::Files(_)));
            let relation = match &f.query().dataframe {
                // A DataFrame that reads files goes as its translation, whose files are read as
                // a SQL file's are: paths against the project, Auto Loader's `cloudFiles` (a
                // format no Spark server has) as the format it names, the expectations enforced.
                Some(df) if reads_files && df.untranslated.is_none() && !df.schema_dependent => {
                    Relation::Sql { query: sql }
                }
                // Any other goes to the server as the user's pyspark built it, read through a
                // temporary view when the target's expectations are enforced over it.
                Some(df) => {
                    let bytes = Relation::Connect { bytes: df.bytes.clone() };
                    match self.dataset(&f.target).filter(|d| !d.expectations.is_empty()) {
                        None => bytes,
                        Some(d) => {
                            let view = format!("__thund_df_{fi}");
                            define_view(&mut g, &view, &f.location, bytes);
                            let streaming = f.query().reads.iter().any(Read::is_streaming);
                            let read = if streaming { format!("STREAM({view})") } else { view };
                            Relation::Sql { query: enforce_expectations(format!("SELECT * FROM {read}"), d) }
                        }
                    }
                }
                None => Relation::Sql { query: sql },
            };
            let details = match f.kind.auto_cdc() {
                None => FlowDetails::Relation(relation),
                Some(c) => {
                    // The protocol names the change feed's dataset rather than carrying a
                    // relation: the query becomes a temporary view the AutoCDC flow reads.
                    let source = format!("__thund_cdc_{fi}");
                    define_view(&mut g, &source, &f.location, relation);
                    let (column_list, except_column_list) = match &c.columns {
                        ColumnSelection::All => (vec![], vec![]),
                        ColumnSelection::Include(v) => (v.clone(), vec![]),
                        ColumnSelection::Except(v) => (vec![], v.clone()),
                    };
                    FlowDetails::AutoCdc(AutoCdcDetails {
                        source,
                        keys: c.keys.clone(),
                        sequence_by: c.sequence_by.as_ref().map(|e| e.sql.clone()).unwrap_or_default(),
                        apply_as_deletes: c.apply_as_delete.as_ref().map(|e| e.sql.clone()),
                        apply_as_truncates: c.apply_as_truncate.as_ref().map(|e| e.sql.clone()),
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
                        track_history_except_columns: match &c.track_history {
                            Some(ColumnSelection::Except(v)) => v.clone(),
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
            gf.once = f.kind.runs_once();
            gf.location = location(&f.location);
            gf.sql_conf = f.sql_conf.clone();
            g.flows.push(gf);
        }
        g.validate().map_err(|e| ThundError::Internal(format!("lowering produced an invalid graph: {e}")))?;
        Ok(g)
    }
}

/// A temporary view `name` over `relation`, defined at `at`: how the lowering hands Spark what
/// the protocol names rather than carries (a change feed, a DataFrame checked by expectations,
/// a file source's rescued-data column).
fn define_view(g: &mut DataflowGraph, name: &str, at: &SourceLocation, relation: Relation) {
    let mut o = Output::new(name, OutputType::TemporaryView);
    o.location = location(at);
    g.outputs.push(o);
    g.flows.push(GFlow { location: location(at), ..GFlow::new(name, name, FlowDetails::Relation(relation)) });
}

/// The flow's query with its dataset's expectations enforced, as open-source SDP has none of
/// its own: `FAIL UPDATE` raises an error naming the expectation (the flow fails), `DROP ROW`
/// filters, and a row whose predicate is NULL violates it, as on the native backend. A plain
/// expectation keeps every row; Spark reports no pass and fail counts for any of them.
fn enforce_expectations(sql: String, d: &crate::ir::Dataset) -> String {
    let quote = |s: String| s.replace('\\', "\\\\").replace('\'', "\\'");
    let mut fail = Vec::new();
    let mut drop = Vec::new();
    for e in &d.expectations {
        let pass = format!("coalesce(({}), false)", e.predicate);
        match e.action {
            ViolationAction::Warn => {}
            ViolationAction::Drop => drop.push(pass),
            ViolationAction::Fail => {
                let message = quote(format!(
                    "expectation `{}` on `{}` failed (ON VIOLATION FAIL UPDATE): {}",
                    e.name, d.name, e.predicate
                ));
                fail.push(format!("CASE WHEN {pass} THEN true ELSE raise_error('{message}') END"));
            }
        }
    }
    // Failures are checked first: a row that violates both fails the flow.
    let conditions: Vec<String> = fail.into_iter().chain(drop).collect();
    if conditions.is_empty() {
        return sql;
    }
    format!("SELECT * FROM (\n{sql}\n) AS __thund_expected WHERE {}", conditions.join(" AND "))
}

/// The query's normalized text with each span replaced by its text. Spans come from the
/// front-end; one that does not fit the text (out of bounds, overlapping, off a character
/// boundary) is an error rather than a query sent half rewritten.
fn splice(q: &Query, mut splices: Vec<(Span, String)>) -> Result<String> {
    let text = &q.normalized;
    splices.sort_by_key(|(span, _)| span.start);
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    for (span, replacement) in splices {
        let fits = pos <= span.start
            && span.start <= span.end
            && text.is_char_boundary(span.start)
            && text.get(span.start..span.end).is_some();
        if !fits {
            return Err(ThundError::Internal(format!(
                "{}: cannot replace bytes {}..{} of the query for Spark (text of {} bytes)",
                q.location,
                span.start,
                span.end,
                text.len()
            )));
        }
        out.push_str(&text[pos..span.start]);
        out.push_str(&replacement);
        pos = span.end;
    }
    out.push_str(&text[pos..]);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::FlowKind;

    fn flow_sql(g: &DataflowGraph, name: &str) -> String {
        let f = g.flows.iter().find(|f| f.name == name).unwrap_or_else(|| panic!("{name}: {g:#?}"));
        match &f.details {
            FlowDetails::Relation(Relation::Sql { query }) => query.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn file_sources_are_replaced_at_their_spans_and_the_watermark_put_back() {
        let p = crate::frontend::load_sql(
            "CREATE STREAMING TABLE s AS SELECT * FROM STREAM read_files('in', format => 'json') \
             WATERMARK ts DELAY OF INTERVAL 5 MINUTES JOIN parquet.`dim` d ON d.k = k \
             WHERE note <> 'read_files(''x'')';\n",
        );
        let g = p.to_sdp().unwrap();
        assert_eq!(
            flow_sql(&g, "spark_catalog.default.s"),
            "SELECT * FROM STREAM(__thund_files_0_0) WATERMARK ts DELAY OF INTERVAL 5 MINUTES JOIN \
             __thund_files_0_1 d ON d.k = k WHERE note <> 'read_files(''x'')'"
        );
    }

    #[test]
    fn a_span_that_does_not_fit_is_an_error() {
        let mut p = crate::frontend::load_sql("CREATE MATERIALIZED VIEW m AS SELECT * FROM parquet.`dim`;\n");
        let FlowKind::Append { query, .. } = &mut p.flows[0].kind else { panic!() };
        let Read::Files(fs) = &mut query.reads[0] else { panic!() };
        fs.span = Span { start: 10, end: 500 };
        let err = p.to_sdp().unwrap_err().to_string();
        assert!(err.contains("cannot replace bytes 10..500"), "{err}");
    }

    #[test]
    fn every_auto_cdc_clause_is_lowered_and_the_clauses_spark_would_drop_are_refused() {
        let p = crate::frontend::load_sql(
            "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE STREAMING TABLE t USING delta FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
               APPLY AS DELETE WHEN op = 'D' SEQUENCE BY seq COLUMNS * EXCEPT (op)\n\
               STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (email, note);\n\
             CREATE STREAMING TABLE u USING delta FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
               IGNORE NULL UPDATES SEQUENCE BY seq;\n\
             CREATE STREAMING TABLE v USING delta FLOW AUTO CDC FROM STREAM(feed) KEYS (id)\n\
               APPLY AS TRUNCATE WHEN op = 'T' SEQUENCE BY seq;\n",
        );
        let g = p.to_sdp().unwrap();
        let f = g.flows.iter().find(|f| f.name == "spark_catalog.default.t").unwrap();
        let FlowDetails::AutoCdc(c) = &f.details else { panic!("{f:?}") };
        assert_eq!(c.track_history_except_columns, ["email", "note"]);
        assert!(c.track_history_columns.is_empty());
        assert_eq!(c.except_column_list, ["op"]);
        assert_eq!(c.apply_as_deletes.as_deref(), Some("op = 'D'"));

        let spark_43 = super::super::capabilities("4.3.0").unwrap();
        let err = spark_43.check(&p).unwrap_err().to_string();
        assert!(err.contains("IGNORE NULL UPDATES") && err.contains("spark_catalog.default.u"), "{err}");
        assert!(err.contains("APPLY AS TRUNCATE WHEN") && err.contains("spark_catalog.default.v"), "{err}");
        assert!(!err.contains("spark_catalog.default.t`"), "{err}");
    }

    #[test]
    fn an_auto_cdc_targets_expectations_are_enforced_on_its_change_feed() {
        let p = crate::frontend::load_sql(
            "CREATE STREAMING TABLE feed AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE STREAMING TABLE t (CONSTRAINT named EXPECT (name IS NOT NULL) ON VIOLATION DROP ROW,\n\
               CONSTRAINT adult EXPECT (age >= 18) ON VIOLATION FAIL UPDATE) USING delta\n\
               FLOW AUTO CDC FROM STREAM(feed) KEYS (id) SEQUENCE BY seq;\n",
        );
        let g = p.to_sdp().unwrap();
        let f = g.flows.iter().find(|f| f.name == "spark_catalog.default.t").unwrap();
        let FlowDetails::AutoCdc(c) = &f.details else { panic!("{f:?}") };
        // The changes the flow reads are its feed's query with the expectations enforced.
        let feed = g.flows.iter().find(|f| f.target == c.source).unwrap();
        let FlowDetails::Relation(Relation::Sql { query }) = &feed.details else { panic!("{feed:?}") };
        assert!(query.contains("coalesce((name IS NOT NULL), false)"), "{query}");
        assert!(query.contains("raise_error") && query.contains("adult"), "{query}");
    }
}
