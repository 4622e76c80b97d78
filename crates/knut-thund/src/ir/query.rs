//! A query in the IR: its text, the front-end's parse and what the front-end found in it (reads
//! with their spans, event time), and parsed expressions. A backend plans the parse; it finds
//! which read a table factor of the parse stands for with [`ReadFinder`], never by parsing text.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use sqlparser::ast::{Ident, ObjectName, ObjectNamePart};

use super::{quote_ident, QualifiedName, SourceLocation};
use crate::error::Diagnostic;
use crate::event_time::Shape;

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
    /// The parse of `normalized`, made once by the front-end. A command that plans nothing may
    /// drop it ([`Query::forget_parse`]): the checks made before planning read [`Query::facts`].
    #[serde(skip)]
    pub ast: ParsedQuery,
    /// What the front-end read from the parse for validation and capability checks.
    #[serde(skip)]
    pub(crate) facts: QueryFacts,
    /// For a query a Python function defined: the DataFrame's relation as pyspark built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataframe: Option<DataFrameRelation>,
}

/// A Python query function's DataFrame, as the user's pyspark serialized it (a Spark Connect
/// `Relation`). The query's SQL is its translation; the Spark backend sends these bytes instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataFrameRelation {
    /// The serialized relation.
    pub bytes: Vec<u8>,
    /// Why the relation has no SQL translation (the query's SQL is then a placeholder): what
    /// only a backend that runs relations as they are can run.
    pub untranslated: Option<String>,
    /// The query's SQL stands in `SELECT *` for operations that depend on an input's columns
    /// (`withColumn`, `drop`, …): it reads what the final query reads, and an engine that plans
    /// it makes the final query with `knut_pipelines::dataframe::relation_sql_with_columns`.
    #[serde(default)]
    pub schema_dependent: bool,
    /// The catalog and database unqualified names in the query resolve in.
    pub catalog: String,
    /// See `catalog`.
    pub database: String,
}

impl Query {
    /// Whether any read is a stream.
    pub fn is_streaming(&self) -> bool {
        self.reads.iter().any(Read::is_streaming)
    }

    /// Drops the parse, keeping what the front-end read from it: a 10,000-dataset project's
    /// parses take four times the memory of the rest of its IR, and validating or lowering it for
    /// Spark never plans a query.
    pub fn forget_parse(&mut self) {
        self.ast = ParsedQuery::default();
    }

    /// The index in [`Query::reads`] of the read whose span starts at byte `start`.
    pub(crate) fn read_at(&self, start: usize) -> Option<usize> {
        self.reads.iter().position(|r| r.span().start == start)
    }
}

/// What the front-end read from a query's parse for the checks made before a backend plans it
/// (validation, capabilities, an update-mode batch's keys). Like the parse, it is a function of
/// the normalized text: it is not part of the query's identity and is not serialized.
#[derive(Debug, Clone)]
pub(crate) struct QueryFacts {
    /// The top-level `SELECT`'s aggregation and event-time window, or what is malformed in the
    /// window.
    pub(crate) shape: Result<Shape, Vec<Diagnostic>>,
    /// Where the query joins two streams, if it does.
    pub(crate) stream_join: Option<SourceLocation>,
    /// The positions of the top-level `SELECT` items that aggregate nothing.
    pub(crate) key_columns: Vec<usize>,
}

impl Default for QueryFacts {
    fn default() -> Self {
        QueryFacts { shape: Ok(Shape::default()), stream_join: None, key_columns: Vec::new() }
    }
}

impl PartialEq for QueryFacts {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// A SQL expression as written (an AUTO CDC clause, an expectation's predicate) with the
/// front-end's parse, so a backend plans the parse and never parses the text again. It is
/// serialized as its text; one read back from JSON has no parse.
#[derive(Clone)]
pub struct Expression {
    /// The text, `${…}` already substituted.
    pub sql: String,
    /// The parse (sqlparser, Spark dialect), made once by the front-end.
    pub ast: Option<Arc<sqlparser::ast::Expr>>,
}

impl Expression {
    /// An expression and its parse.
    pub fn parsed(sql: impl Into<String>, ast: sqlparser::ast::Expr) -> Self {
        Expression { sql: sql.into(), ast: Some(Arc::new(ast)) }
    }

    /// The column the expression names, when it is one bare column (`seq`, `` `seq` ``).
    pub fn column(&self) -> Option<&str> {
        match self.ast.as_deref() {
            Some(sqlparser::ast::Expr::Identifier(i)) => Some(i.value.as_str()),
            _ => None,
        }
    }
}

impl PartialEq for Expression {
    fn eq(&self, other: &Self) -> bool {
        self.sql == other.sql
    }
}

impl Eq for Expression {}

impl fmt::Debug for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.sql, f)
    }
}

impl fmt::Display for Expression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.sql)
    }
}

impl Serialize for Expression {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(&self.sql)
    }
}

impl<'de> Deserialize<'de> for Expression {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        Ok(Expression { sql: String::deserialize(d)?, ast: None })
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
    /// The `rescueddatacolumn` option is Auto Loader's default (a schema inferred from JSON or
    /// Parquet files), not asked for: a backend whose readers cannot rescue gives it as a column
    /// that stays NULL and fails a record that would need rescuing.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rescue_by_default: bool,
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

/// Finds which of a query's reads a table factor of its parse stands for: the read whose span
/// starts where the factor's name does in the normalized text.
pub struct ReadFinder<'q> {
    query: &'q Query,
    lines: LineIndex<'q>,
}

impl<'q> ReadFinder<'q> {
    /// The finder of `query`'s reads.
    pub fn new(query: &'q Query) -> Self {
        ReadFinder { query, lines: LineIndex::new(&query.normalized) }
    }

    /// The index in [`Query::reads`] of the read a table factor named `name` stands for; `None`
    /// for a CTE, an alias or a table function.
    pub fn read_of(&self, name: &ObjectName) -> Option<usize> {
        let first = name_parts(name)?.into_iter().next()?;
        self.query.read_at(ident_offset(&self.lines, first))
    }
}

/// The parts of an object name, or `None` if a part is not a plain identifier.
pub fn name_parts(name: &ObjectName) -> Option<Vec<&Ident>> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(i) => Some(i),
            ObjectNamePart::Function(_) => None,
        })
        .collect()
}

/// The byte offset in the indexed text where an identifier of its parse starts.
pub(crate) fn ident_offset(lines: &LineIndex<'_>, ident: &Ident) -> usize {
    lines.offset(ident.span.start.line, ident.span.start.column)
}

/// Maps sqlparser's (line, column) positions to byte offsets of one text.
pub(crate) struct LineIndex<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// Every character is one byte: a column is a byte count (the usual case, and the fast one:
    /// counting characters made this a sixth of `thund validate`'s time on large projects).
    ascii: bool,
}

impl<'a> LineIndex<'a> {
    /// Indexes `text`.
    pub(crate) fn new(text: &'a str) -> Self {
        let mut starts = vec![0];
        starts.extend(text.match_indices('\n').map(|(i, _)| i + 1));
        LineIndex { text, starts, ascii: text.is_ascii() }
    }

    /// Byte offset of a 1-based (line, column in chars) position.
    pub(crate) fn offset(&self, line: u64, column: u64) -> usize {
        let Some(&start) = self.starts.get(line.saturating_sub(1) as usize) else {
            return self.text.len();
        };
        if self.ascii {
            return (start + column.saturating_sub(1) as usize).min(self.text.len());
        }
        let rest = &self.text[start..];
        rest.char_indices().nth(column.saturating_sub(1) as usize).map(|(i, _)| start + i).unwrap_or(self.text.len())
    }
}
