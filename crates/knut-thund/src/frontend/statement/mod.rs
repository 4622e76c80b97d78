//! Pipeline statements: `CREATE MATERIALIZED VIEW`, `CREATE STREAMING TABLE`, `CREATE FLOW`, …
//!
//! A file is tokenized once (sqlparser's Spark tokenizer, so quoting and comments follow Spark)
//! and split at top-level `;`. The pipeline DDL around each query is read by a small
//! recursive-descent [`Cursor`]; the query itself is handed to [`super::query::analyze`]. Every
//! statement is parsed even after an error, so a file reports all of its problems at once.

use std::collections::BTreeMap;

use sqlparser::tokenizer::Token;

mod clauses;
mod cursor;

use super::query::{analyze, NameContext};
use super::text::tokenize;
use super::Parses;
use crate::error::Diagnostic;
use crate::ir::{
    Dataset, DatasetKind, Expression, Flow, FlowKind, OutputMode, QualifiedName, Query, SinkSpec, SourceLocation,
    TableDetails,
};
use clauses::{auto_cdc, auto_cdc_flow, columns_and_constraints, table_clauses};
use cursor::{Cursor, PResult};

/// The table property that sets a streaming dataset's output mode.
pub(crate) const OUTPUT_MODE_PROPERTY: &str = "pipelines.outputMode";

/// What one file defines.
#[derive(Debug, Default)]
pub(crate) struct FileDefinitions {
    /// Datasets, in order.
    pub datasets: Vec<Dataset>,
    /// Flows, in order.
    pub flows: Vec<Flow>,
    /// Every problem found.
    pub problems: Vec<Diagnostic>,
}

/// Parses one SQL definition file (already `${…}`-substituted). `names` is the `USE` context,
/// carried from file to file as `spark-pipelines` does within a file; it starts at the spec's
/// defaults for each file. With [`Parses::Drop`] each statement's parse is dropped once read.
pub(crate) fn parse_file(file: &str, text: &str, names: &mut NameContext, parses: Parses) -> FileDefinitions {
    let mut out = FileDefinitions::default();
    let toks = match tokenize(text, None, file) {
        Ok(t) => t,
        Err(d) => {
            out.problems.push(d);
            return out;
        }
    };
    let mut conf = BTreeMap::new();
    for stmt in toks.split(|t| t.token == Token::SemiColon).filter(|s| !s.is_empty()) {
        let mut c = Cursor { toks: stmt, pos: 0, text, file };
        let before = out.flows.len();
        if let Err(d) = statement(&mut c, names, &mut conf, &mut out) {
            out.problems.push(d);
        }
        if parses == Parses::Drop {
            out.flows[before..].iter_mut().for_each(|f| f.query_mut().forget_parse());
        }
    }
    out
}

/// A query analyzed by the front-end (errors joined into the first one's location).
fn query_from(sql: String, location: SourceLocation, names: &NameContext) -> PResult<Query> {
    match analyze(&sql, &location, names) {
        Ok(q) => Ok(q),
        Err(mut ds) => {
            let mut first = ds.remove(0);
            for d in ds {
                first.message.push_str(&format!("; {d}"));
            }
            Err(first)
        }
    }
}

/// `text` parsed as one SQL expression (expectations, CDC clauses), the only parse it gets.
pub(crate) fn expression(text: &str, at: &SourceLocation) -> PResult<Expression> {
    let text = text.trim();
    let bad = |m: String| Diagnostic::at(at, format!("`{text}` is not a valid SQL expression: {m}"));
    let mut p = crate::frontend::text::spark_parser(text).map_err(|e| bad(e.to_string()))?;
    let ast = p.parse_expr().map_err(|e| bad(super::text::split_parser_error(&e.to_string()).0))?;
    if p.peek_token().token != Token::EOF {
        return Err(bad(format!("unexpected `{}`", p.peek_token().token)));
    }
    Ok(Expression::parsed(text, ast))
}

fn statement(
    c: &mut Cursor<'_>,
    names: &mut NameContext,
    conf: &mut BTreeMap<String, String>,
    out: &mut FileDefinitions,
) -> PResult<()> {
    let start = c.loc();
    if c.eat_word("SET") {
        // `SET k = v`: conf for the flows defined after it in this file.
        let k = c.property_atom()?;
        if c.at_end() {
            // `SET k;` shows a value in a notebook and sets nothing; DLT pipelines keep such lines.
            return Ok(());
        }
        c.expect(&Token::Eq)?;
        let v = c.slice(c.pos, c.toks.len()).trim().trim_matches('\'').to_string();
        conf.insert(k, v);
        return Ok(());
    }
    if c.eat_word("USE") {
        if c.eat_word("CATALOG") {
            names.catalog = c.ident()?;
        } else {
            let _ = c.eat_word("SCHEMA") || c.eat_word("DATABASE") || c.eat_word("NAMESPACE");
            let parts = c.name_parts()?;
            match parts.as_slice() {
                [d] => names.database = d.clone(),
                [cat, d] => {
                    names.catalog = cat.clone();
                    names.database = d.clone();
                }
                _ => return Err(Diagnostic::at(&start, "USE takes `catalog.database` at most")),
            }
        }
        return end_of_statement(c);
    }
    if c.eat_words(&["APPLY", "CHANGES", "INTO"]) {
        // DLT's older spelling of `CREATE FLOW t AS AUTO CDC INTO t …`, named after its target.
        return auto_cdc_flow(c, names, None, start, conf, out);
    }
    c.expect_word("CREATE")?;
    let or_refresh = c.eat_words(&["OR", "REFRESH"]);
    let or_replace = !or_refresh && c.eat_words(&["OR", "REPLACE"]);
    // DLT spells a materialized view `LIVE TABLE`, a streaming table `STREAMING LIVE TABLE` (once
    // `INCREMENTAL LIVE TABLE`). Its `TEMPORARY` tables are tables left out of the catalog; a
    // pipeline here publishes every table, so they are tables all the same.
    let temporary_table = c.eat_words(&["TEMPORARY", "LIVE", "TABLE"]);
    if temporary_table || c.eat_words(&["MATERIALIZED", "VIEW"]) || c.eat_words(&["LIVE", "TABLE"]) {
        return dataset(c, names, DatasetKind::MaterializedView, start, conf, out);
    }
    if c.eat_words(&["STREAMING", "TABLE"])
        || c.eat_words(&["STREAMING", "LIVE", "TABLE"])
        || c.eat_words(&["TEMPORARY", "STREAMING", "LIVE", "TABLE"])
        || c.eat_words(&["TEMPORARY", "STREAMING", "TABLE"])
        || c.eat_words(&["INCREMENTAL", "LIVE", "TABLE"])
    {
        return dataset(c, names, DatasetKind::StreamingTable, start, conf, out);
    }
    if or_refresh {
        return Err(c.error(format!(
            "`CREATE OR REFRESH` is followed by MATERIALIZED VIEW or STREAMING TABLE, found {}",
            c.found()
        )));
    }
    // Views take no `SET` conf: they are inlined into their readers, whose conf applies.
    // DLT: `[TEMPORARY] [STREAMING] LIVE VIEW` are views private to the pipeline (a streaming one
    // reads `STREAM(…)` and is read with `STREAM(…)`, as any view over a stream).
    let dlt_view = c.eat_words(&["TEMPORARY", "LIVE", "VIEW"])
        || c.eat_words(&["TEMPORARY", "STREAMING", "LIVE", "VIEW"])
        || c.eat_words(&["STREAMING", "LIVE", "VIEW"])
        || c.eat_words(&["LIVE", "VIEW"]);
    if dlt_view || c.eat_words(&["TEMPORARY", "VIEW"]) || c.eat_words(&["TEMP", "VIEW"]) {
        return dataset(c, names, DatasetKind::TemporaryView, start, &BTreeMap::new(), out);
    }
    if c.eat_word("VIEW") {
        return dataset(c, names, DatasetKind::PersistentView, start, &BTreeMap::new(), out);
    }
    if or_replace {
        return Err(c.error(format!("`CREATE OR REPLACE` is followed by VIEW, found {}", c.found())));
    }
    if c.eat_word("SINK") {
        return sink(c, names, start, out);
    }
    if c.eat_word("FLOW") {
        return flow(c, names, start, conf, out);
    }
    Err(Diagnostic::at(&start, format!("unsupported statement starting with `CREATE {}`", c.found().trim_matches('`')))
        .with_hint("pipeline files hold CREATE MATERIALIZED VIEW | STREAMING TABLE | [TEMPORARY] VIEW | SINK | FLOW, SET and USE; DLT's [TEMPORARY] [STREAMING] LIVE TABLE | VIEW, INCREMENTAL LIVE TABLE and APPLY CHANGES INTO too"))
}

fn end_of_statement(c: &Cursor<'_>) -> PResult<()> {
    if c.at_end() {
        Ok(())
    } else {
        Err(c.error(format!("unexpected {} (is a `;` missing?)", c.found())))
    }
}

fn new_dataset(name: QualifiedName, kind: DatasetKind, location: SourceLocation) -> Dataset {
    Dataset {
        name,
        kind,
        comment: None,
        details: TableDetails::default(),
        sink: None,
        expectations: Vec::new(),
        output_mode: None,
        location,
    }
}

/// `CREATE … MATERIALIZED VIEW | STREAMING TABLE | [TEMPORARY] VIEW name [(columns)] [clauses]
/// [AS query | FLOW AUTO CDC …]` and its implicit flow.
fn dataset(
    c: &mut Cursor<'_>,
    names: &NameContext,
    kind: DatasetKind,
    start: SourceLocation,
    conf: &BTreeMap<String, String>,
    out: &mut FileDefinitions,
) -> PResult<()> {
    c.eat_words(&["IF", "NOT", "EXISTS"]);
    let name = c.qualified(names)?;
    let mut ds = new_dataset(name.clone(), kind, start.clone());
    if c.peek().is_some_and(|t| t.token == Token::LParen) {
        columns_and_constraints(c, &mut ds)?;
    }
    table_clauses(c, &mut ds)?;
    if let Some(mode) = ds.details.properties.get(OUTPUT_MODE_PROPERTY) {
        ds.output_mode = Some(match mode.to_ascii_lowercase().as_str() {
            "append" => OutputMode::Append,
            "update" => OutputMode::Update,
            "complete" => OutputMode::Complete,
            other => {
                return Err(Diagnostic::at(
                    &start,
                    format!("`{OUTPUT_MODE_PROPERTY}` is `{other}`; expected append, update or complete"),
                ))
            }
        });
    }
    let flow_kind = if c.eat_word("AS") {
        let query = c.rest_as_query(names)?;
        Some(FlowKind::Append { query, by_name: false })
    } else if kind == DatasetKind::StreamingTable && c.eat_words(&["FLOW", "AUTO", "CDC"]) {
        Some(FlowKind::AutoCdc(auto_cdc(c, names)?))
    } else if c.at_end() && kind == DatasetKind::StreamingTable {
        None // filled by `CREATE FLOW … INSERT INTO`
    } else if kind.is_view() {
        return Err(c.error(format!("expected `AS`, found {}", c.found())));
    } else if c.at_end() {
        return Err(c.error("a materialized view needs `AS <query>`"));
    } else {
        return Err(c.error(format!("expected `AS <query>`, found {}", c.found())));
    };
    if let Some(kind) = flow_kind {
        out.flows.push(Flow {
            name: name.clone(),
            target: name,
            kind,
            implicit: true,
            sql_conf: conf.clone(),
            location: start,
        });
    }
    out.datasets.push(ds);
    Ok(())
}

fn sink(c: &mut Cursor<'_>, names: &NameContext, start: SourceLocation, out: &mut FileDefinitions) -> PResult<()> {
    c.eat_words(&["IF", "NOT", "EXISTS"]);
    let name = c.qualified(names)?;
    let mut ds = new_dataset(name, DatasetKind::Sink, start);
    let mut format = None;
    let mut options = BTreeMap::new();
    loop {
        if c.eat_word("USING") {
            format = Some(c.ident()?);
        } else if c.eat_word("OPTIONS") {
            options = c.properties()?.into_iter().map(|(k, v)| (k.to_ascii_lowercase(), v)).collect();
        } else if c.eat_word("COMMENT") {
            ds.comment = Some(c.string()?);
        } else {
            break;
        }
    }
    end_of_statement(c)?;
    let Some(format) = format else {
        return Err(Diagnostic::at(&ds.location, "a sink needs `USING <format>`")
            .with_hint("e.g. CREATE SINK s USING parquet OPTIONS (path '/out/s')"));
    };
    ds.sink = Some(SinkSpec { format, options });
    out.datasets.push(ds);
    Ok(())
}

fn flow(
    c: &mut Cursor<'_>,
    names: &NameContext,
    start: SourceLocation,
    conf: &BTreeMap<String, String>,
    out: &mut FileDefinitions,
) -> PResult<()> {
    let name = c.qualified(names)?;
    if c.eat_word("COMMENT") {
        c.string()?;
    }
    c.expect_word("AS")?;
    if c.eat_words(&["AUTO", "CDC", "INTO"]) {
        return auto_cdc_flow(c, names, Some(name), start, conf, out);
    }
    c.expect_word("INSERT")?;
    c.expect_word("INTO")?;
    let once = c.eat_word("ONCE");
    let target = c.qualified(names)?;
    let by_name = c.eat_words(&["BY", "NAME"]);
    let query = c.rest_as_query(names)?;
    let kind = if once { FlowKind::Once { query, by_name } } else { FlowKind::Append { query, by_name } };
    out.flows.push(Flow { name, target, kind, implicit: false, sql_conf: conf.clone(), location: start });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::Read;
    use crate::ir::{ColumnSelection, ScdType, ViolationAction};

    fn parse(text: &str) -> FileDefinitions {
        let mut names = NameContext { catalog: "spark_catalog".into(), database: "default".into(), databricks: false };
        parse_file("t.sql", text, &mut names, Parses::Keep)
    }

    #[test]
    fn reads_the_dlt_dialect_into_the_same_ir() {
        let d = parse(
            "CREATE OR REFRESH LIVE TABLE a COMMENT 'x' AS SELECT * FROM LIVE.src;\n\
             CREATE OR REFRESH STREAMING LIVE TABLE b AS SELECT * FROM STREAM(live.a);\n\
             CREATE STREAMING LIVE TABLE b2 AS SELECT * FROM STREAM LIVE.a;\n\
             CREATE TEMPORARY LIVE VIEW c AS SELECT * FROM LIVE.a JOIN Live.b USING (id);\n\
             CREATE TEMPORARY STREAMING LIVE VIEW c2 AS SELECT * FROM STREAM(LIVE.b);\n\
             CREATE OR REFRESH STREAMING TABLE t;\n\
             SET pipelines.trigger.interval;\n\
             CREATE STREAMING LIVE VIEW c3 AS SELECT * FROM STREAM(LIVE.b);\n\
             CREATE OR REFRESH TEMPORARY STREAMING LIVE TABLE b3 AS SELECT * FROM STREAM(LIVE.c3);\n\
             CREATE INCREMENTAL LIVE TABLE b4 AS SELECT * FROM STREAM(LIVE.c3);\n\
             CREATE TEMPORARY LIVE TABLE a2 AS SELECT * FROM LIVE.a;\n\
             APPLY CHANGES INTO LIVE.t FROM STREAM(LIVE.b) KEYS (id) APPLY AS DELETE WHEN op = 'D'\n\
               SEQUENCE BY seq COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2 TRACK HISTORY ON * EXCEPT (note);",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let kinds: Vec<_> = d.datasets.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DatasetKind::MaterializedView,
                DatasetKind::StreamingTable,
                DatasetKind::StreamingTable,
                DatasetKind::TemporaryView,
                DatasetKind::TemporaryView,
                DatasetKind::StreamingTable,
                DatasetKind::TemporaryView,
                DatasetKind::StreamingTable,
                DatasetKind::StreamingTable,
                DatasetKind::MaterializedView,
            ]
        );
        let reads = |i: usize| -> Vec<String> {
            d.flows[i]
                .query()
                .reads
                .iter()
                .map(|r| match r {
                    Read::Dataset { name, streaming, .. } => format!("{}{name}", if *streaming { "~" } else { "" }),
                    Read::Files(f) => f.path.clone(),
                })
                .collect()
        };
        assert_eq!(reads(0), ["spark_catalog.default.src"]);
        assert_eq!(reads(1), ["~spark_catalog.default.a"]);
        assert_eq!(reads(2), ["~spark_catalog.default.a"]);
        assert_eq!(reads(3), ["spark_catalog.default.a", "spark_catalog.default.b"]);
        // Both engines get the pipeline's own names: `LIVE.` is blanked out, positions kept.
        let q = d.flows[3].query();
        assert!(!q.normalized.to_ascii_lowercase().contains("live"), "{}", q.normalized);
        assert_eq!(q.normalized.len(), q.sql.len());
        let spans: Vec<&str> = q.reads.iter().map(|r| &q.normalized[r.span().start..r.span().end]).collect();
        assert_eq!(spans, ["a", "b"]);
        for (i, r) in q.reads.iter().enumerate() {
            assert_eq!(q.read_at(r.span().start), Some(i));
        }
        let cdc = d.flows.last().unwrap();
        assert_eq!((cdc.name.name.as_str(), cdc.target.name.as_str()), ("t", "t"));
        let FlowKind::AutoCdc(c) = &cdc.kind else { panic!("{:?}", cdc.kind) };
        assert_eq!((c.keys.as_slice(), c.scd_type), (&["id".to_string()][..], ScdType::Type2));
        assert_eq!(c.track_history, Some(ColumnSelection::Except(vec!["note".into()])));
        assert_eq!(c.source.reads.len(), 1);
    }

    #[test]
    fn parses_every_dataset_kind() {
        let d = parse(
            "CREATE OR REFRESH MATERIALIZED VIEW a COMMENT 'x' AS SELECT 1 AS x;\n\
             CREATE STREAMING TABLE b AS SELECT * FROM STREAM(a);\n\
             CREATE TEMPORARY VIEW c AS SELECT * FROM a;\n\
             CREATE VIEW d AS SELECT * FROM a;\n\
             CREATE SINK e USING parquet OPTIONS (path '/tmp/e');\n\
             CREATE FLOW f AS INSERT INTO e BY NAME SELECT * FROM STREAM b;",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let kinds: Vec<_> = d.datasets.iter().map(|d| d.kind).collect();
        assert_eq!(
            kinds,
            [
                DatasetKind::MaterializedView,
                DatasetKind::StreamingTable,
                DatasetKind::TemporaryView,
                DatasetKind::PersistentView,
                DatasetKind::Sink
            ]
        );
        assert_eq!(d.flows.len(), 5);
        assert_eq!(d.datasets[0].comment.as_deref(), Some("x"));
        assert_eq!(d.datasets[4].sink.as_ref().unwrap().options["path"], "/tmp/e");
        let f = d.flows.last().unwrap();
        assert_eq!(f.name.to_string(), "spark_catalog.default.f");
        assert!(matches!(&f.kind, FlowKind::Append { by_name: true, .. }));
        assert!(matches!(&f.query().reads[0], Read::Dataset { streaming: true, .. }));
        assert_eq!(d.flows[1].location.line, 2);
    }

    #[test]
    fn parses_table_details_and_expectations() {
        let d = parse(
            "CREATE MATERIALIZED VIEW t (\n  id BIGINT NOT NULL COMMENT 'key',\n  amount DECIMAL(10, 2),\n  \
             CONSTRAINT pos EXPECT (amount > 0) ON VIOLATION DROP ROW,\n  CONSTRAINT id_set EXPECT (id IS NOT NULL) ON VIOLATION FAIL UPDATE,\n  \
             CONSTRAINT warned EXPECT (amount < 100)\n) USING delta PARTITIONED BY (id) CLUSTER BY (amount) \
             TBLPROPERTIES ('a.b' = 'c', 'pipelines.reset.allowed' = false) AS SELECT 1 AS id, 2.0 AS amount",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let t = &d.datasets[0];
        assert_eq!(t.details.schema_ddl().unwrap(), "id BIGINT NOT NULL COMMENT 'key', amount DECIMAL(10, 2)");
        assert_eq!(t.details.format.as_deref(), Some("delta"));
        assert_eq!(t.details.partitioned_by, ["id"]);
        assert_eq!(t.details.cluster_by, ["amount"]);
        assert_eq!(t.details.properties["pipelines.reset.allowed"], "false");
        let acts: Vec<_> = t.expectations.iter().map(|e| e.action).collect();
        assert_eq!(acts, [ViolationAction::Drop, ViolationAction::Fail, ViolationAction::Warn]);
        assert_eq!(t.expectations[0].predicate.sql, "amount > 0");
        assert_eq!(t.expectations[1].location.line, 5);
    }

    #[test]
    fn nested_types_close_with_one_token_and_keep_the_next_column() {
        let d = parse(
            "CREATE MATERIALIZED VIEW t (a ARRAY<ARRAY<INT>>, b INT, m MAP<STRING, ARRAY<MAP<STRING, INT>>>, c STRING) \
             AS SELECT 1",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let cols: Vec<(&str, &str)> =
            d.datasets[0].details.columns.iter().map(|c| (c.name.as_str(), c.data_type.as_str())).collect();
        assert_eq!(
            cols,
            [("a", "ARRAY<ARRAY<INT>>"), ("b", "INT"), ("m", "MAP<STRING, ARRAY<MAP<STRING, INT>>>"), ("c", "STRING")]
        );
    }

    #[test]
    fn parses_both_auto_cdc_forms() {
        let d = parse(
            "CREATE STREAMING TABLE t;\n\
             CREATE FLOW f AS AUTO CDC INTO t FROM STREAM(src) KEYS (id) APPLY AS DELETE WHEN op = 'D' \
             SEQUENCE BY ts COLUMNS * EXCEPT (op) STORED AS SCD TYPE 2 TRACK HISTORY ON name, city;\n\
             CREATE STREAMING TABLE u FLOW AUTO CDC FROM src KEYS (a, b) SEQUENCE BY seq COLUMNS a, b, c;",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        let FlowKind::AutoCdc(cdc) = &d.flows[0].kind else { panic!() };
        assert_eq!(cdc.keys, ["id"]);
        assert_eq!(cdc.apply_as_delete.as_ref().map(|e| e.sql.as_str()), Some("op = 'D'"));
        assert_eq!(cdc.sequence_by.as_ref().and_then(|e| e.column()), Some("ts"));
        assert_eq!(cdc.columns, ColumnSelection::Except(vec!["op".into()]));
        assert_eq!(cdc.scd_type, ScdType::Type2);
        assert_eq!(cdc.track_history, Some(ColumnSelection::Include(vec!["name".into(), "city".into()])));
        assert!(matches!(&cdc.source.reads[0], Read::Dataset { streaming: true, .. }));
        let FlowKind::AutoCdc(u) = &d.flows[1].kind else { panic!() };
        assert_eq!(u.columns, ColumnSelection::Include(vec!["a".into(), "b".into(), "c".into()]));
        assert_eq!(d.flows[1].target.name, "u");
    }

    #[test]
    fn a_delta_table_at_a_path_streams_and_other_formats_at_a_path_do_not() {
        let d = parse(
            "CREATE STREAMING TABLE a AS SELECT * FROM STREAM delta.`/lake/t`;\n\
             CREATE STREAMING TABLE b AS SELECT * FROM STREAM(delta.`rel/t`);\n\
             CREATE STREAMING TABLE c AS SELECT * FROM STREAM(parquet.`/in`);",
        );
        let files: Vec<(String, bool)> = d
            .flows
            .iter()
            .flat_map(|f| f.query().reads.iter())
            .map(|r| match r {
                Read::Files(f) => (format!("{}:{}", f.format, f.path), f.streaming),
                Read::Dataset { name, .. } => (name.to_string(), false),
            })
            .collect();
        assert_eq!(files, [("delta:/lake/t".to_string(), true), ("delta:rel/t".to_string(), true)]);
        assert_eq!(d.problems.len(), 1, "{:?}", d.problems);
        assert!(d.problems[0].to_string().starts_with("t.sql:3:"), "{}", d.problems[0]);
        assert!(d.problems[0].message.contains("STREAM(parquet.`/in`) is not a stream"), "{}", d.problems[0]);
    }

    #[test]
    fn use_changes_name_resolution() {
        let d = parse("USE CATALOG cat; USE SCHEMA sch; CREATE MATERIALIZED VIEW x AS SELECT * FROM y");
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert_eq!(d.datasets[0].name.to_string(), "cat.sch.x");
        assert!(matches!(&d.flows[0].query().reads[0], Read::Dataset { name, .. } if name.to_string() == "cat.sch.y"));
    }

    #[test]
    fn reports_all_statement_errors_with_lines() {
        let d = parse(
            "CREATE MATERIALIZED VIEW a AS SELEC 1;\n\nCREATE TABLE b AS SELECT 1;\n\
             CREATE MATERIALIZED VIEW c (CONSTRAINT x EXPECT (a >)) AS SELECT 1",
        );
        let lines: Vec<u32> = d.problems.iter().map(|p| p.location.as_ref().unwrap().line).collect();
        assert_eq!(lines, [1, 3, 4], "{:?}", d.problems);
        assert!(d.problems[1].message.contains("unsupported statement"));
        assert!(d.problems[2].message.contains("not a valid SQL expression"));
    }

    #[test]
    fn once_flows_and_watermarks() {
        let d = parse(
            "CREATE FLOW backfill AS INSERT INTO ONCE t SELECT * FROM old;\n\
             CREATE STREAMING TABLE w AS SELECT window.start, count(*) AS n FROM STREAM(src) \
             WATERMARK ts DELAY OF INTERVAL 5 MINUTES GROUP BY window(ts, '10 minutes')",
        );
        assert!(d.problems.is_empty(), "{:?}", d.problems);
        assert!(matches!(d.flows[0].kind, FlowKind::Once { .. }));
        assert_eq!(d.flows[1].query().event_time.as_ref().unwrap().delay, "5 MINUTES");
    }
}
