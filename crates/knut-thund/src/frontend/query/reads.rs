//! What a parsed query reads: datasets (by name, resolved against the statement's `USE`
//! context; CTE names excluded) and file sources, each with its byte span in the normalized text,
//! and the `LIVE.` prefixes of DLT names to blank out.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Query as AstQuery, TableFactor, Value, Visit, Visitor,
};
use sqlparser::tokenizer::Token;

use super::super::text::{shift, tokenize, Tok};
use super::{ident_name, matching_paren, ByteRange, NameContext, FILE_FORMATS};
use crate::error::Diagnostic;
use crate::ir::query::{ident_offset, name_parts, LineIndex};
use crate::ir::{FileSource, FileSyntax, Read, SourceLocation, Span};

/// The reads of a parsed query (`text` is what was parsed), CTE names excluded, and the byte
/// ranges of DLT `LIVE.` prefixes on their names.
pub(super) fn reads_of(
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
        assume_csv_header(&format, &mut options);
        // `rescuedDataColumn => ''` asks for none (a DataFrame reader's translation says so).
        let unasked = options.get("rescueddatacolumn").is_none_or(|c| !c.is_empty());
        options.retain(|k, v| k != "rescueddatacolumn" || !v.is_empty());
        let rescue_by_default = self.names.databricks && unasked && add_rescue_column(&format, &mut options);
        self.reads.push(Read::Files(FileSource {
            format,
            path,
            options,
            streaming,
            syntax: FileSyntax::ReadFiles,
            rescue_by_default,
            location,
            span,
        }));
    }
}

/// `cloud_files` formats that have a reader here.
pub(crate) const CLOUD_FILES_FORMATS: [&str; 3] = ["json", "csv", "parquet"];

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
                        "cloud_files: `{k}` `{v}` is not supported: a stream's schema is fixed on its first batch and new columns fail the batch (`failOnNewColumns`), unless `none` ignores them; a full refresh takes them"
                    )),
                },
                Some(_) => problems.push(format!(
                    "cloud_files: option `{k}` has no meaning here (the stream's schema and progress live in its checkpoint); remove it. Supported: cloudFiles.format, cloudFiles.inferColumnTypes, cloudFiles.schemaHints, cloudFiles.schemaEvolutionMode"
                )),
                None => {
                    options.insert(key, v);
                }
            }
        }
        // Auto Loader's rescued-data column, for JSON and Parquet (CSV has none here: the README
        // says so).
        let rescue_by_default = format != "csv" && add_rescue_column(&format, &mut options);
        if !infer && (format == "json" || format == "csv") {
            options.insert("infercolumntypes".into(), "false".into());
        }
        if !problems.is_empty() {
            self.errors.extend(problems.into_iter().map(|m| Diagnostic::at(&location, m)));
            return;
        }
        assume_csv_header(&format, &mut options);
        self.reads.push(Read::Files(FileSource {
            format,
            path,
            options,
            streaming: true,
            syntax: FileSyntax::CloudFiles,
            rescue_by_default,
            location,
            span,
        }));
    }
}

/// `read_files` and `cloud_files` are Databricks' Auto Loader, which assumes CSV files have a
/// header line when it infers their schema (published pipelines rely on it): without a `header`
/// option or a declared `schema`, the header is read as one. (`` csv.`path` `` is Spark's reader,
/// whose default is no header, with columns `_c0`, `_c1`, ….)
fn assume_csv_header(format: &str, options: &mut BTreeMap<String, String>) {
    if format == "csv" && !options.contains_key("schema") {
        options.entry("header".into()).or_insert_with(|| "true".into());
    }
}

/// Auto Loader's rescued-data column, which Databricks' `read_files` and `cloud_files` give the
/// files whose schema they infer (published notebooks `SELECT * EXCEPT (_rescued_data) FROM
/// read_files('….csv')`): whether it was added.
fn add_rescue_column(format: &str, options: &mut BTreeMap<String, String>) -> bool {
    let inferred = !options.contains_key("schema") && !options.contains_key("rescueddatacolumn");
    if inferred && ["json", "csv", "parquet"].contains(&format) {
        options.insert("rescueddatacolumn".into(), "_rescued_data".into());
        return true;
    }
    false
}

/// `` fmt.`path` ``: a name of two parts, a file format and a back-quoted path.
fn is_format_path(parts: &[&Ident]) -> bool {
    parts.len() == 2
        && parts[1].quote_style == Some('`')
        && FILE_FORMATS.contains(&parts[0].value.to_ascii_lowercase().as_str())
}

impl ReadCollector<'_> {
    /// `` fmt.`path` `` (Spark's reader), or `` STREAM(delta.`path`) ``: a stream of what a Delta
    /// table at a path commits.
    fn format_path(&mut self, format: &Ident, path: &Ident, streaming: bool, span: Span) {
        let location = self.at(format);
        let format = format.value.to_ascii_lowercase();
        if streaming && format != "delta" {
            let d = Diagnostic::at(
                &location,
                format!("STREAM({format}.`{}`) is not a stream: only a Delta table at a path is", path.value),
            )
            .with_hint(format!(
                "stream a folder of files with `STREAM read_files('{}', format => '{format}')`",
                path.value
            ));
            self.errors.push(d);
            return;
        }
        let path = path.value.clone();
        let options = BTreeMap::new();
        self.reads.push(Read::Files(FileSource {
            format,
            path,
            options,
            streaming,
            syntax: FileSyntax::FormatPath,
            rescue_by_default: false,
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
                    Expr::CompoundIdentifier(ids) if is_format_path(&ids.iter().collect::<Vec<_>>()) => {
                        self.format_path(&ids[0], &ids[1], true, span)
                    }
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
            None if is_format_path(&parts) => self.format_path(parts[0], parts[1], false, span),
            None => self.dataset(&parts, false, span),
        }
        ControlFlow::Continue(())
    }
}
