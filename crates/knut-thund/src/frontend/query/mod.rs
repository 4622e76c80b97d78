//! Queries: the SDP-specific syntax made parseable, and what a query reads.
//!
//! Spark SQL in pipelines has three things sqlparser does not take as they are: `STREAM name`
//! without parentheses, `STREAM read_files(…)`, and `WATERMARK col DELAY OF INTERVAL …` after a
//! relation. [`normalize`] rewrites the first two to `STREAM(…)` and blanks the watermark out
//! (recording it as [`EventTime`], with the span it leaves); the result parses with sqlparser's
//! Spark dialect. [`analyze`] parses it once and finds every read with its byte span in that
//! normalized text: the IR query carries text, spans and parse, so the native backend plans the
//! parse and the Spark lowering splices the text, and neither parses again.

mod reads;

use sqlparser::ast::{Ident, Query as AstQuery};
use sqlparser::tokenizer::Token;

use super::text::{shift, split_parser_error, tokenize, Tok};
use crate::error::Diagnostic;
use crate::ir::{EventTime, ParsedQuery, QualifiedName, Query, SourceLocation, Span};
use reads::reads_of;

/// File formats Spark accepts in `` fmt.`path` `` and `read_files(format => …)`.
pub(crate) const FILE_FORMATS: [&str; 7] = ["parquet", "json", "csv", "delta", "orc", "text", "avro"];

/// The catalog and database that unqualified names resolve to at a statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameContext {
    /// Current catalog.
    pub catalog: String,
    /// Current database.
    pub database: String,
    /// A Databricks project (settings JSON or bundle): `read_files` adds Auto Loader's
    /// `_rescued_data` column where it infers the schema, as Databricks' does.
    pub databricks: bool,
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
pub(crate) fn ident_name(ident: &Ident) -> String {
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
pub(crate) fn matching_paren(toks: &[Tok], open: usize) -> Option<usize> {
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
    let mut parser = crate::frontend::text::spark_parser(sql).map_err(to_diag)?;
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
pub(crate) fn analyze(sql: &str, base: &SourceLocation, names: &NameContext) -> Result<Query, Vec<Diagnostic>> {
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
        // ASCII blanks over whole ASCII words (`LIVE.`) keep the text UTF-8.
        normalized.sql = String::from_utf8_lossy(&bytes).into_owned();
        ast = parse(&normalized.sql, base).map_err(|d| vec![d])?;
    }
    let mut q = Query {
        sql: sql.to_string(),
        normalized: normalized.sql,
        location: base.clone(),
        reads,
        event_time: normalized.event_time,
        ast: ParsedQuery::new(*ast),
        facts: Default::default(),
        dataframe: None,
    };
    q.facts = crate::event_time::facts(&q);
    Ok(q)
}

/// Gives a query read back from JSON (its parse does not travel there) the parse of its
/// normalized text.
pub(crate) fn parse_stored(q: &mut Query) -> Result<(), Diagnostic> {
    if q.ast.get().is_none() {
        let ast = parse(&q.normalized, &q.location)?;
        q.ast.set(*ast);
        q.facts = crate::event_time::facts(q);
    }
    Ok(())
}

/// A `start..end` range of bytes in a query's normalized text.
pub(super) type ByteRange = (usize, usize);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::{FileSyntax, Read};

    fn base() -> SourceLocation {
        SourceLocation::new("f.sql", 10, 5)
    }

    fn ctx() -> NameContext {
        NameContext { catalog: "c".into(), database: "d".into(), databricks: false }
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
