//! Queries: the SDP-specific syntax made parseable, and what a query reads.
//!
//! Spark SQL in pipelines has three things sqlparser does not take as they are: `STREAM name`
//! without parentheses, `STREAM read_files(…)`, and `WATERMARK col DELAY OF INTERVAL …` after a
//! relation. [`normalize`] rewrites the first two to `STREAM(…)` and blanks the watermark out
//! (recording it as [`EventTime`], with the span it leaves); the result parses with sqlparser's
//! Spark dialect. [`analyze`] parses it once and finds every read with its byte span in that
//! normalized text: the IR query carries text, spans and parse, so the native backend plans the
//! parse and the Spark lowering splices the text, and neither parses again.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, ObjectName, ObjectNamePart, Query as AstQuery,
    TableFactor, Value, Visit, Visitor,
};
use sqlparser::parser::Parser;
use sqlparser::tokenizer::Token;

use super::text::{shift, split_parser_error, tokenize, LineIndex, Tok, DIALECT};
use crate::error::Diagnostic;
use crate::ir::{EventTime, FileSource, FileSyntax, ParsedQuery, QualifiedName, Query, Read, SourceLocation, Span};

/// File formats Spark accepts in `` fmt.`path` `` and `read_files(format => …)`.
pub const FILE_FORMATS: [&str; 7] = ["parquet", "json", "csv", "delta", "orc", "text", "avro"];

/// The catalog and database that unqualified names resolve to at a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameContext {
    /// Current catalog.
    pub catalog: String,
    /// Current database.
    pub database: String,
}

impl NameContext {
    /// Resolves a 1-, 2- or 3-part name.
    pub fn resolve(&self, parts: &[String]) -> Option<QualifiedName> {
        match parts {
            [n] => Some(QualifiedName::new(&self.catalog, &self.database, n)),
            [d, n] => Some(QualifiedName::new(&self.catalog, d, n)),
            [c, d, n] => Some(QualifiedName::new(c, d, n)),
            _ => None,
        }
    }
}

/// An identifier as Spark matches it: unquoted ones case-insensitively (stored lower-case).
pub fn ident_name(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_ascii_lowercase()
    }
}

/// A query in the form sqlparser parses, with the event time blanked out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Normalized {
    /// Parseable Spark SQL.
    pub sql: String,
    /// `WATERMARK … DELAY OF INTERVAL …`, if the query had one (its span is in `sql`).
    pub event_time: Option<EventTime>,
}

/// Rewrites SDP-only syntax (see the module docs). `base` is where `sql` starts in its file.
/// The watermark clause becomes spaces (its newlines kept), so the tokens after it keep their
/// lines and columns.
pub fn normalize(sql: &str, base: &SourceLocation) -> Result<Normalized, Diagnostic> {
    let toks = tokenize(sql, Some(base), &base.file)?;
    // Edits as (byte offset, bytes to remove, text to insert), applied in order.
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    let mut event_time = None;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let after_from =
            i > 0 && (toks[i - 1].is_word("FROM") || toks[i - 1].is_word("JOIN") || toks[i - 1].token == Token::Comma);
        if t.is_word("STREAM") && after_from && matches!(toks.get(i + 1).map(|t| &t.token), Some(Token::Word(_))) {
            let start = i + 1;
            let end = if toks.get(start + 1).map(|t| &t.token) == Some(&Token::LParen) {
                matching_paren(&toks, start + 1).ok_or_else(|| unbalanced(&toks[start + 1], base))?
            } else {
                let mut e = start;
                while toks.get(e + 1).map(|t| &t.token) == Some(&Token::Period)
                    && matches!(toks.get(e + 2).map(|t| &t.token), Some(Token::Word(_)))
                {
                    e += 2;
                }
                e
            };
            edits.push((t.end, toks[start].start - t.end, "(".into()));
            edits.push((toks[end].end, 0, ")".into()));
            i = end + 1;
            continue;
        }
        if t.is_word("WATERMARK") {
            let (column, delay, last) = parse_watermark(&toks, i, sql, base)?;
            if event_time.is_some() {
                return Err(Diagnostic::at(&loc(t, base), "a query may declare only one WATERMARK"));
            }
            // The span is filled in below, once the edits before it are known.
            event_time = Some((
                edits.len(),
                EventTime { column, delay, location: loc(t, base), span: Span { start: 0, end: 0 } },
            ));
            let blank: String = sql[t.start..toks[last].end].chars().map(|c| if c == '\n' { c } else { ' ' }).collect();
            edits.push((t.start, toks[last].end - t.start, blank));
            i = last + 1;
            continue;
        }
        i += 1;
    }
    let mut out = String::with_capacity(sql.len() + 8);
    let mut pos = 0;
    for (k, (at, remove, insert)) in edits.into_iter().enumerate() {
        out.push_str(&sql[pos..at]);
        if let Some((_, et)) = event_time.as_mut().filter(|(edit, _)| *edit == k) {
            et.span = Span { start: out.len(), end: out.len() + insert.len() };
        }
        out.push_str(&insert);
        pos = at + remove;
    }
    out.push_str(&sql[pos..]);
    Ok(Normalized { sql: out, event_time: event_time.map(|(_, et)| et) })
}

fn loc(t: &Tok, base: &SourceLocation) -> SourceLocation {
    SourceLocation::new(&base.file, t.line, t.column)
}

fn unbalanced(t: &Tok, base: &SourceLocation) -> Diagnostic {
    Diagnostic::at(&loc(t, base), "unbalanced parentheses")
}

/// Index of the `)` matching the `(` at `open`.
pub fn matching_paren(toks: &[Tok], open: usize) -> Option<usize> {
    let mut depth = 0i32;
    for (k, t) in toks.iter().enumerate().skip(open) {
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

/// `WATERMARK col DELAY OF INTERVAL <'5 minutes' | 5 MINUTES [n UNIT]…>`; returns the column,
/// the delay text and the index of its last token.
fn parse_watermark(
    toks: &[Tok],
    at: usize,
    sql: &str,
    base: &SourceLocation,
) -> Result<(String, String, usize), Diagnostic> {
    let expected = || {
        Diagnostic::at(&loc(&toks[at], base), "expected `WATERMARK <column> DELAY OF INTERVAL <delay>`")
            .with_hint("e.g. `WATERMARK event_ts DELAY OF INTERVAL 5 MINUTES`")
    };
    let column = match toks.get(at + 1).map(|t| &t.token) {
        Some(Token::Word(w)) => w.value.clone(),
        _ => return Err(expected()),
    };
    let ok = toks.get(at + 2).is_some_and(|t| t.is_word("DELAY"))
        && toks.get(at + 3).is_some_and(|t| t.is_word("OF"))
        && toks.get(at + 4).is_some_and(|t| t.is_word("INTERVAL"));
    if !ok {
        return Err(expected());
    }
    let first = at + 5;
    let mut last = first;
    match toks.get(first).map(|t| &t.token) {
        Some(Token::SingleQuotedString(_)) => {
            if toks.get(first + 1).is_some_and(|t| is_interval_unit(&t.token)) {
                last = first + 1;
            }
        }
        Some(Token::Number(..)) => {
            let mut k = first;
            while matches!(toks.get(k).map(|t| &t.token), Some(Token::Number(..)))
                && toks.get(k + 1).is_some_and(|t| is_interval_unit(&t.token))
            {
                last = k + 1;
                k += 2;
            }
            if last == first {
                if let Some(unit) = toks.get(first + 1).filter(|t| matches!(t.token, Token::Word(_))) {
                    return Err(Diagnostic::at(
                        &loc(unit, base),
                        format!("unknown interval unit `{}` in the watermark delay", unit.token),
                    )
                    .with_hint("use weeks, days, hours, minutes, seconds, milliseconds or microseconds"));
                }
                return Err(expected());
            }
        }
        _ => return Err(expected()),
    }
    Ok((column, sql[toks[first].start..toks[last].end].to_string(), last))
}

fn is_interval_unit(t: &Token) -> bool {
    const UNITS: [&str; 16] = [
        "YEAR",
        "YEARS",
        "MONTH",
        "MONTHS",
        "WEEK",
        "WEEKS",
        "DAY",
        "DAYS",
        "HOUR",
        "HOURS",
        "MINUTE",
        "MINUTES",
        "SECOND",
        "SECONDS",
        "MILLISECOND",
        "MILLISECONDS",
    ];
    matches!(t, Token::Word(w) if UNITS.iter().any(|u| w.value.eq_ignore_ascii_case(u)))
}

/// Parses normalized query text; errors point into the file.
pub fn parse(sql: &str, base: &SourceLocation) -> Result<Box<AstQuery>, Diagnostic> {
    let to_diag = |e: sqlparser::parser::ParserError| {
        let (message, pos) = split_parser_error(&e.to_string());
        let at = match pos {
            Some((l, c)) => {
                let (l, c) = super::text::found_token_start(sql, &message, l, c);
                shift(Some(base), &base.file, l, c)
            }
            // sqlparser gives no position for EOF: point just past the query's last character.
            None => {
                let trimmed = sql.trim_end();
                let line = trimmed.matches('\n').count() as u64 + 1;
                let column = trimmed.rsplit('\n').next().map_or(0, |l| l.chars().count()) as u64 + 1;
                shift(Some(base), &base.file, line, column)
            }
        };
        Diagnostic::at(&at, message)
    };
    let mut parser = Parser::new(&DIALECT).try_with_sql(sql).map_err(to_diag)?;
    let query = parser.parse_query().map_err(to_diag)?;
    // A statement is one query: anything after it is a mistake, not something to ignore.
    if parser.peek_token().token != Token::EOF {
        let t = parser.peek_token();
        let at = shift(Some(base), &base.file, t.span.start.line, t.span.start.column);
        return Err(Diagnostic::at(&at, format!("unexpected `{}` after the end of the query", t.token))
            .with_hint("is a `;` missing between two statements?"));
    }
    Ok(query)
}

/// Normalizes, parses and walks a query once: the IR query with its reads, their spans and the
/// parse.
pub fn analyze(sql: &str, base: &SourceLocation, names: &NameContext) -> Result<Query, Vec<Diagnostic>> {
    let mut normalized = normalize(sql, base).map_err(|d| vec![d])?;
    let mut ast = parse(&normalized.sql, base).map_err(|d| vec![d])?;
    let (reads, live) = reads_of(&ast, &normalized.sql, base, names)?;
    if !live.is_empty() {
        // DLT's `LIVE.` prefixes become blanks of the same length, so every span and position
        // holds, and both engines read the pipeline's own names.
        let mut bytes = std::mem::take(&mut normalized.sql).into_bytes();
        for (start, end) in live {
            for b in &mut bytes[start..end] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        normalized.sql = String::from_utf8(bytes).expect("ASCII blanks over ASCII bytes");
        ast = parse(&normalized.sql, base).map_err(|d| vec![d])?;
    }
    Ok(Query {
        sql: sql.to_string(),
        normalized: normalized.sql,
        location: base.clone(),
        reads,
        event_time: normalized.event_time,
        ast: ParsedQuery::new(*ast),
    })
}

/// Gives a query read back from JSON (its parse does not travel there) the parse of its
/// normalized text.
pub fn parse_stored(q: &mut Query) -> Result<(), Diagnostic> {
    if q.ast.get().is_none() {
        let ast = parse(&q.normalized, &q.location)?;
        q.ast.set(*ast);
    }
    Ok(())
}

/// A `start..end` range of bytes in a query's normalized text.
type ByteRange = (usize, usize);

/// The reads of a parsed query (`text` is what was parsed), CTE names excluded, and the byte
/// ranges of DLT `LIVE.` prefixes on their names.
fn reads_of(
    ast: &AstQuery,
    text: &str,
    base: &SourceLocation,
    names: &NameContext,
) -> Result<(Vec<Read>, Vec<ByteRange>), Vec<Diagnostic>> {
    let mut ctes = CteNames(BTreeSet::new());
    let _ = ast.visit(&mut ctes);
    let toks = tokenize(text, Some(base), &base.file).map_err(|d| vec![d])?;
    let mut v = ReadCollector {
        base,
        names,
        ctes: ctes.0,
        lines: LineIndex::new(text),
        toks,
        reads: Vec::new(),
        live: Vec::new(),
        errors: Vec::new(),
    };
    let _ = ast.visit(&mut v);
    if v.errors.is_empty() {
        Ok((v.reads, v.live))
    } else {
        Err(v.errors)
    }
}

/// The byte offset in `text` where an identifier of its parse starts: how a table factor of the
/// AST is matched to its read ([`Query::read_at`]).
pub fn ident_offset(lines: &LineIndex<'_>, ident: &Ident) -> usize {
    lines.offset(ident.span.start.line, ident.span.start.column)
}

struct CteNames(BTreeSet<String>);

impl Visitor for CteNames {
    type Break = ();
    fn pre_visit_query(&mut self, q: &AstQuery) -> ControlFlow<()> {
        if let Some(with) = &q.with {
            for cte in &with.cte_tables {
                self.0.insert(ident_name(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }
}

struct ReadCollector<'a> {
    base: &'a SourceLocation,
    names: &'a NameContext,
    ctes: BTreeSet<String>,
    lines: LineIndex<'a>,
    toks: Vec<Tok>,
    reads: Vec<Read>,
    /// Byte ranges of `LIVE.` prefixes (DLT) to blank out.
    live: Vec<(usize, usize)>,
    errors: Vec<Diagnostic>,
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

impl ReadCollector<'_> {
    fn at(&self, ident: &Ident) -> SourceLocation {
        shift(Some(self.base), &self.base.file, ident.span.start.line, ident.span.start.column)
    }

    /// The span of the table factor whose name starts with `first`: a dotted name, or a name
    /// with an argument list (`STREAM(…)`, `read_files(…)`) up to its closing parenthesis.
    fn span_from(&self, first: &Ident) -> Span {
        let start = ident_offset(&self.lines, first);
        let Some(i) = self.toks.iter().position(|t| t.start == start) else {
            return Span { start, end: start };
        };
        let mut last = i;
        if self.toks.get(i + 1).is_some_and(|t| t.token == Token::LParen) {
            last = matching_paren(&self.toks, i + 1).unwrap_or(i);
        } else {
            while self.toks.get(last + 1).is_some_and(|t| t.token == Token::Period)
                && matches!(self.toks.get(last + 2).map(|t| &t.token), Some(Token::Word(_)))
            {
                last += 2;
            }
        }
        Span { start, end: self.toks[last].end }
    }

    fn dataset(&mut self, parts: &[&Ident], streaming: bool, mut span: Span) {
        let mut parts = parts;
        if parts.len() == 2 && parts[0].quote_style.is_none() && parts[0].value.eq_ignore_ascii_case("live") {
            // DLT's `LIVE.x`: the pipeline's `x`. A plain read's span starts at `x` once `LIVE.`
            // is blanked out (a `STREAM(…)` read's span starts before it).
            let (live, name) = (ident_offset(&self.lines, parts[0]), ident_offset(&self.lines, parts[1]));
            self.live.push((live, name));
            if span.start == live {
                span.start = name;
            }
            parts = &parts[1..];
        }
        let names: Vec<String> = parts.iter().map(|i| ident_name(i)).collect();
        let location = self.at(parts[0]);
        if names.len() == 1 && !streaming && self.ctes.contains(&names[0]) {
            return;
        }
        match self.names.resolve(&names) {
            Some(name) => self.reads.push(Read::Dataset { name, streaming, location, span }),
            None => self
                .errors
                .push(Diagnostic::at(&location, format!("`{}` has more than three name parts", names.join(".")))),
        }
    }

    fn read_files(&mut self, fname: &Ident, args: &[FunctionArg], streaming: bool, span: Span) {
        let location = self.at(fname);
        let mut path = None;
        let mut options = BTreeMap::new();
        for arg in args {
            match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) if path.is_none() => match literal(e) {
                    Some(p) => path = Some(p),
                    None => {
                        self.errors.push(Diagnostic::at(&location, "read_files: the path must be a string literal"))
                    }
                },
                FunctionArg::Named { name, arg: FunctionArgExpr::Expr(e), .. } => match literal(e) {
                    Some(v) => {
                        options.insert(name.value.to_ascii_lowercase(), v);
                    }
                    None => self.errors.push(Diagnostic::at(
                        &location,
                        format!("read_files: option `{}` must be a literal", name.value),
                    )),
                },
                _ => self
                    .errors
                    .push(Diagnostic::at(&location, "read_files takes a path and named options (`format => 'json'`)")),
            }
        }
        let Some(path) = path else {
            self.errors.push(Diagnostic::at(&location, "read_files needs a path as its first argument"));
            return;
        };
        let format = options.remove("format").unwrap_or_default().to_ascii_lowercase();
        if !FILE_FORMATS.contains(&format.as_str()) {
            let msg = if format.is_empty() {
                "read_files needs `format => 'json'|'csv'|'parquet'|…`".to_string()
            } else {
                format!("read_files: unknown format `{format}`")
            };
            self.errors.push(Diagnostic::at(&location, msg).with_hint(format!("formats: {}", FILE_FORMATS.join(", "))));
            return;
        }
        self.reads.push(Read::Files(FileSource {
            format,
            path,
            options,
            streaming,
            syntax: FileSyntax::ReadFiles,
            location,
            span,
        }));
    }
}

/// `cloud_files` formats that have a reader here.
pub const CLOUD_FILES_FORMATS: [&str; 3] = ["json", "csv", "parquet"];

impl ReadCollector<'_> {
    /// DLT's `cloud_files('path', 'format'[, map('k', 'v', …)])`: a streaming file source whose
    /// `cloudFiles.*` options become this engine's (`inferColumnTypes`, `schemaHints`,
    /// `schemaEvolutionMode` none). Any other `cloudFiles.*` option is an error at its line,
    /// never dropped; plain reader options (`header`, `sep`, …) pass through as `read_files`'s.
    /// Like Auto Loader, JSON and CSV columns are strings unless `cloudFiles.inferColumnTypes`
    /// is true, and a JSON stream gets a `_rescued_data` column.
    fn cloud_files(&mut self, fname: &Ident, args: &[FunctionArg], span: Span) {
        let location = self.at(fname);
        let mut problems = Vec::new();
        let mut positional = Vec::new();
        let mut pairs: Vec<(String, String)> = Vec::new();
        for arg in args {
            match arg {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Function(f)))
                    if f.name.to_string().eq_ignore_ascii_case("map") =>
                {
                    let values: Vec<Option<String>> = match &f.args {
                        FunctionArguments::List(l) => l
                            .args
                            .iter()
                            .map(|a| match a {
                                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => literal(e),
                                _ => None,
                            })
                            .collect(),
                        _ => Vec::new(),
                    };
                    if !values.len().is_multiple_of(2) || values.iter().any(Option::is_none) {
                        problems
                            .push("cloud_files: the options are `map('key', 'value', …)` of string literals".into());
                    }
                    for kv in values.chunks(2) {
                        if let [Some(k), Some(v)] = kv {
                            pairs.push((k.clone(), v.clone()));
                        }
                    }
                }
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => match literal(e) {
                    Some(v) => positional.push(v),
                    None => problems.push("cloud_files: the path and the format must be string literals".into()),
                },
                _ => problems.push("cloud_files takes a path, a format and an optional map(…) of options".into()),
            }
        }
        let (path, format) = match positional.as_slice() {
            [path, format] => (path.clone(), format.to_ascii_lowercase()),
            _ => {
                problems.push("cloud_files needs a path and a format: cloud_files('/in', 'json'[, map(…)])".into());
                (String::new(), String::new())
            }
        };
        if !format.is_empty() && !CLOUD_FILES_FORMATS.contains(&format.as_str()) {
            problems.push(format!(
                "cloud_files: format `{format}` is not supported here ({})",
                CLOUD_FILES_FORMATS.join(", ")
            ));
        }
        let mut options = BTreeMap::new();
        let mut infer = false;
        for (k, v) in pairs {
            let key = k.to_ascii_lowercase();
            match key.strip_prefix("cloudfiles.") {
                Some("infercolumntypes") => match v.to_ascii_lowercase().as_str() {
                    "true" => infer = true,
                    "false" => infer = false,
                    _ => problems.push(format!("cloud_files: `{k}` is `{v}`; expected true or false")),
                },
                Some("schemahints") => {
                    options.insert("schemahints".to_string(), v);
                }
                Some("format") if v.eq_ignore_ascii_case(&format) => {}
                Some("format") => problems.push(format!("cloud_files: `{k}` is `{v}` but the format given is `{format}`")),
                Some("schemaevolutionmode") => match v.to_ascii_lowercase().as_str() {
                    "none" => {
                        options.insert("schemaevolutionmode".to_string(), "none".into());
                    }
                    "failonnewcolumns" => {}
                    _ => problems.push(format!(
                        "cloud_files: `{k}` `{v}` is not supported: a stream's schema is fixed on its first batch and                          new columns fail the batch (`failOnNewColumns`), unless `none` ignores them; a full refresh                          takes them"
                    )),
                },
                Some(_) => problems.push(format!(
                    "cloud_files: option `{k}` has no meaning here (the stream's schema and progress live in its                      checkpoint); remove it. Supported: cloudFiles.format, cloudFiles.inferColumnTypes,                      cloudFiles.schemaHints, cloudFiles.schemaEvolutionMode"
                )),
                None => {
                    options.insert(key, v);
                }
            }
        }
        if format == "json" {
            options.entry("rescueddatacolumn".to_string()).or_insert_with(|| "_rescued_data".into());
        }
        if !infer && (format == "json" || format == "csv") {
            options.insert("infercolumntypes".into(), "false".into());
        }
        if !problems.is_empty() {
            self.errors.extend(problems.into_iter().map(|m| Diagnostic::at(&location, m)));
            return;
        }
        self.reads.push(Read::Files(FileSource {
            format,
            path,
            options,
            streaming: true,
            syntax: FileSyntax::CloudFiles,
            location,
            span,
        }));
    }
}

fn literal(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            Value::Number(n, _) => Some(n.to_string()),
            Value::Boolean(b) => Some(b.to_string()),
            _ => None,
        },
        _ => None,
    }
}

impl Visitor for ReadCollector<'_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, tf: &TableFactor) -> ControlFlow<()> {
        let TableFactor::Table { name, args, .. } = tf else {
            return ControlFlow::Continue(());
        };
        let Some(parts) = name_parts(name) else {
            return ControlFlow::Continue(());
        };
        let single = parts.len() == 1 && parts[0].quote_style.is_none();
        let span = self.span_from(parts[0]);
        match args {
            Some(a) if single && parts[0].value.eq_ignore_ascii_case("stream") => match a.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(e))] => match e {
                    Expr::Identifier(i) => self.dataset(&[i], true, span),
                    Expr::CompoundIdentifier(ids) => self.dataset(&ids.iter().collect::<Vec<_>>(), true, span),
                    Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("cloud_files") => {
                        let args = match &f.args {
                            FunctionArguments::List(l) => l.args.clone(),
                            _ => Vec::new(),
                        };
                        if let Some(fname) = name_parts(&f.name).and_then(|p| p.first().copied().cloned()) {
                            self.cloud_files(&fname, &args, span);
                        }
                    }
                    Expr::Function(f) if f.name.to_string().eq_ignore_ascii_case("read_files") => {
                        let args = match &f.args {
                            FunctionArguments::List(l) => l.args.clone(),
                            _ => Vec::new(),
                        };
                        let fname = name_parts(&f.name).and_then(|p| p.first().copied().cloned());
                        if let Some(fname) = fname {
                            self.read_files(&fname, &args, true, span);
                        }
                    }
                    _ => self
                        .errors
                        .push(Diagnostic::at(&self.at(parts[0]), "STREAM(…) takes a dataset name or read_files(…)")),
                },
                _ => self.errors.push(Diagnostic::at(
                    &self.at(parts[0]),
                    "STREAM(…) takes exactly one dataset name or read_files(…)",
                )),
            },
            Some(a) if single && parts[0].value.eq_ignore_ascii_case("read_files") => {
                self.read_files(parts[0], &a.args, false, span);
            }
            Some(a) if single && parts[0].value.eq_ignore_ascii_case("cloud_files") => {
                self.cloud_files(parts[0], &a.args, span);
            }
            Some(_) => {} // another table function (range, explode, …): reads no dataset
            None => {
                let is_format_path = parts.len() == 2
                    && parts[1].quote_style == Some('`')
                    && FILE_FORMATS.contains(&parts[0].value.to_ascii_lowercase().as_str());
                if is_format_path {
                    self.reads.push(Read::Files(FileSource {
                        format: parts[0].value.to_ascii_lowercase(),
                        path: parts[1].value.clone(),
                        options: BTreeMap::new(),
                        streaming: false,
                        syntax: FileSyntax::FormatPath,
                        location: self.at(parts[0]),
                        span,
                    }));
                } else {
                    self.dataset(&parts, false, span);
                }
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> SourceLocation {
        SourceLocation::new("f.sql", 10, 5)
    }

    fn ctx() -> NameContext {
        NameContext { catalog: "c".into(), database: "d".into() }
    }

    fn names(reads: &[Read]) -> Vec<String> {
        reads
            .iter()
            .map(|r| match r {
                Read::Dataset { name, streaming, .. } => format!("{}{name}", if *streaming { "~" } else { "" }),
                Read::Files(f) => format!("{}{}:{}", if f.streaming { "~" } else { "" }, f.format, f.path),
            })
            .collect()
    }

    #[test]
    fn rewrites_stream_without_parentheses() {
        let n = normalize("SELECT * FROM STREAM src JOIN STREAM a.b x ON 1=1", &base()).unwrap();
        assert_eq!(n.sql, "SELECT * FROM STREAM(src) JOIN STREAM(a.b) x ON 1=1");
        let n = normalize("SELECT * FROM STREAM read_files('/p', format => 'json')", &base()).unwrap();
        assert_eq!(n.sql, "SELECT * FROM STREAM(read_files('/p', format => 'json'))");
    }

    #[test]
    fn blanks_out_the_watermark_keeping_positions() {
        let clause = "WATERMARK ts DELAY OF INTERVAL 5 MINUTES";
        let n = normalize(&format!("SELECT count(*) FROM STREAM src {clause} GROUP BY 1"), &base()).unwrap();
        let blank = " ".repeat(clause.len());
        assert_eq!(n.sql, format!("SELECT count(*) FROM STREAM(src) {blank} GROUP BY 1"));
        let et = n.event_time.unwrap();
        assert_eq!((et.column.as_str(), et.delay.as_str()), ("ts", "5 MINUTES"));
        assert_eq!(&n.sql[et.span.start..et.span.end], blank);
        assert_eq!(et.clause(), "WATERMARK ts DELAY OF INTERVAL 5 MINUTES");
    }

    #[test]
    fn read_spans_cover_every_spelling() {
        let a = analyze(
            "SELECT * FROM STREAM read_files('/x', format => 'json') JOIN STREAM a.b AS s ON 1 = 1 \
             JOIN parquet.`data/p` AS t ON 1 = 1 JOIN read_files('/y', format => 'csv') ON 1 = 1 \
             JOIN c.d.e ON 1 = 1 -- read_files('no')",
            &base(),
            &ctx(),
        )
        .unwrap();
        let spans: Vec<&str> = a.reads.iter().map(|r| &a.normalized[r.span().start..r.span().end]).collect();
        assert_eq!(
            spans,
            [
                "STREAM(read_files('/x', format => 'json'))",
                "STREAM(a.b)",
                "parquet.`data/p`",
                "read_files('/y', format => 'csv')",
                "c.d.e"
            ]
        );
        for (i, r) in a.reads.iter().enumerate() {
            assert_eq!(a.read_at(r.span().start), Some(i));
        }
        assert!(a.ast.get().is_some(), "the parse travels with the query");
    }

    #[test]
    fn finds_reads_but_not_ctes_or_aliases() {
        let a = analyze(
            "WITH x AS (SELECT * FROM raw) SELECT * FROM x JOIN other.t o ON x.id = o.id \
             WHERE x.id IN (SELECT id FROM STREAM(s)) UNION ALL SELECT * FROM parquet.`/data/p` \
             UNION ALL SELECT * FROM read_files('/in', format => 'CSV', header => true)",
            &base(),
            &ctx(),
        )
        .unwrap();
        assert_eq!(names(&a.reads), ["c.d.raw", "c.other.t", "~c.d.s", "parquet:/data/p", "csv:/in"]);
        let Read::Files(f) = &a.reads[4] else { panic!() };
        assert_eq!(f.options["header"], "true");
    }

    #[test]
    fn cloud_files_is_a_stream_whose_options_are_translated_or_refused_at_its_line() {
        let a = analyze(
            "SELECT * FROM cloud_files('/in', 'json', map('cloudFiles.inferColumnTypes', 'true', 'multiLine', 'true'))",
            &base(),
            &ctx(),
        )
        .unwrap();
        let Read::Files(f) = &a.reads[0] else { panic!() };
        assert!(f.streaming && f.syntax == FileSyntax::CloudFiles);
        assert_eq!((f.format.as_str(), f.path.as_str()), ("json", "/in"));
        let opts: Vec<(&str, &str)> = f.options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(opts, [("multiline", "true"), ("rescueddatacolumn", "_rescued_data")]);
        assert_eq!(&a.normalized[f.span.start..f.span.end], &a.normalized[14..]);

        let a = analyze(
            "SELECT * FROM STREAM(cloud_files(\"/in\", \"csv\", map(\"header\", \"true\", \"cloudFiles.schemaHints\", \"id INT\")))",
            &base(),
            &ctx(),
        )
        .unwrap();
        let Read::Files(f) = &a.reads[0] else { panic!() };
        let opts: Vec<(&str, &str)> = f.options.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(opts, [("header", "true"), ("infercolumntypes", "false"), ("schemahints", "id INT")]);

        let err = analyze(
            "SELECT * FROM\n  cloud_files('/in', 'json', map('cloudFiles.schemaLocation', '/s', 'cloudFiles.useNotifications', 'true', \
             'cloudFiles.schemaEvolutionMode', 'addNewColumns'))\nUNION ALL SELECT * FROM cloud_files('/x', 'avro')",
            &base(),
            &ctx(),
        )
        .unwrap_err();
        let text: Vec<String> = err.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 4, "{text:#?}");
        assert!(
            text[0].starts_with("f.sql:11:3") && text[0].contains("`cloudFiles.schemaLocation` has no meaning"),
            "{text:#?}"
        );
        assert!(text[1].contains("cloudFiles.useNotifications"), "{text:#?}");
        assert!(text[2].contains("addNewColumns"), "{text:#?}");
        assert!(text[3].starts_with("f.sql:12:") && text[3].contains("format `avro`"), "{text:#?}");
    }

    #[test]
    fn syntax_errors_point_into_the_file() {
        let err = analyze("SELECT a\nFROM t WHERE", &base(), &ctx()).unwrap_err();
        let loc = err[0].location.clone().unwrap();
        assert_eq!(loc.line, 11, "{}", err[0]);
    }

    #[test]
    fn rejects_trailing_text_after_the_query() {
        let err = analyze("SELECT 1 AS a CREATE", &base(), &ctx()).unwrap_err();
        assert!(err[0].message.contains("unexpected"), "{}", err[0]);
    }
}
