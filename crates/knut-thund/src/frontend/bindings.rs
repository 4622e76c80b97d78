//! Tables outside the pipeline, bound to local data for local runs: `thund.yml` beside the spec.
//!
//! A pipeline written for a workspace reads tables it does not define (`samples.nyctaxi.trips`,
//! what Databricks' bundle templates read; a catalog table another team publishes). On this
//! machine those have no data, so the project says where their data is:
//!
//! ```yaml
//! tables:
//!   samples.nyctaxi.trips:
//!     path: data/trips          # a file or folder, relative to the project; wildcards allowed
//!     format: parquet           # parquet, csv, json, delta, …; else from the path's extension
//!     options: {header: "true"} # reader options, as read_files takes them
//! ```
//!
//! A name of one or two parts is qualified with the pipeline's catalog and database. Every read
//! of a bound name that the pipeline does not define becomes the file source `read_files` would
//! be, at the read's place, so validation, both backends and the event log see an ordinary file
//! source. `validate` lists each binding used; one that names a dataset of the pipeline, or that
//! nothing reads, is an error or a note at its line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::error::Diagnostic;
use crate::ir::{FileSource, FileSyntax, Pipeline, QualifiedName, Read, SourceLocation};

/// The project's local settings, beside its spec.
pub const LOCAL_FILE: &str = "thund.yml";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Local {
    #[serde(default)]
    tables: BTreeMap<String, Binding>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Binding {
    path: String,
    format: Option<String>,
    #[serde(default)]
    options: BTreeMap<String, String>,
}

/// A binding, checked: what a read of its name becomes.
struct Bound {
    line: u32,
    format: String,
    path: String,
    options: BTreeMap<String, String>,
}

/// The 1-based line where `key` is written as a key in `text`.
fn line_of(text: &str, key: &str) -> u32 {
    text.lines()
        .position(|l| {
            let t = l.trim_start().trim_start_matches(['"', '\'']);
            t.starts_with(key) && t[key.len()..].trim_start_matches(['"', '\'']).trim_start().starts_with(':')
        })
        .map_or(1, |i| i as u32 + 1)
}

/// The format a binding's data is in: given, or from the path.
fn format_of(b: &Binding, root: &Path) -> Option<String> {
    if let Some(f) = &b.format {
        return Some(f.to_ascii_lowercase());
    }
    let full = root.join(&b.path);
    if full.join("_delta_log").is_dir() {
        return Some("delta".into());
    }
    let ext = Path::new(b.path.trim_end_matches('/')).extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "parquet" => Some("parquet".into()),
        "csv" => Some("csv".into()),
        "json" | "jsonl" | "ndjson" => Some("json".into()),
        _ => None,
    }
}

/// Binds the reads of `pipeline` that `thund.yml` (in `root`, if there is one) binds; notes
/// for `validate`, problems at their lines.
pub(crate) fn apply(pipeline: &mut Pipeline, root: &Path, notes: &mut Vec<Diagnostic>, problems: &mut Vec<Diagnostic>) {
    let path = root.join(LOCAL_FILE);
    let Ok(text) = std::fs::read_to_string(&path) else { return };
    let at = |line: u32| SourceLocation::new(LOCAL_FILE, line, 1);
    let local: Local = match serde_yaml::from_str(&text) {
        Ok(l) => l,
        Err(e) => {
            let line = e.location().map_or(1, |l| l.line() as u32);
            problems.push(Diagnostic::at(&at(line), format!("{e}")));
            return;
        }
    };
    let defined: BTreeSet<QualifiedName> = pipeline.datasets.iter().map(|d| d.name.clone()).collect();
    let mut bound: BTreeMap<QualifiedName, Bound> = BTreeMap::new();
    for (name, b) in &local.tables {
        let line = line_of(&text, name);
        let parts: Vec<&str> = name.split('.').collect();
        let qualified = match parts.as_slice() {
            [n] => QualifiedName::new(&pipeline.catalog, &pipeline.database, n),
            [d, n] => QualifiedName::new(&pipeline.catalog, d, n),
            [c, d, n] => QualifiedName::new(c, d, n),
            _ => {
                problems
                    .push(Diagnostic::at(&at(line), format!("`{name}` is not a table name (catalog.schema.table)")));
                continue;
            }
        };
        if defined.contains(&qualified) {
            problems.push(Diagnostic::at(
                &at(line),
                format!("`{qualified}` is a dataset of this pipeline; only tables it reads from elsewhere are bound"),
            ));
            continue;
        }
        let Some(format) = format_of(b, root) else {
            problems.push(
                Diagnostic::at(&at(line), format!("the format of `{}` is not known from its path", b.path))
                    .with_hint("say it: `format: parquet` (or csv, json, delta, …)"),
            );
            continue;
        };
        if !super::query::FILE_FORMATS.contains(&format.as_str()) {
            problems.push(Diagnostic::at(&at(line), format!("`{name}`: unknown format `{format}`")));
            continue;
        }
        let mut options: BTreeMap<String, String> =
            b.options.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone())).collect();
        // As read_files reads it: a CSV file's first line is its header unless told otherwise.
        if format == "csv" && !options.contains_key("schema") {
            options.entry("header".into()).or_insert_with(|| "true".into());
        }
        bound.insert(qualified, Bound { line, format, path: b.path.clone(), options });
    }
    let mut used = BTreeSet::new();
    for f in &mut pipeline.flows {
        for r in &mut f.query_mut().reads {
            let Read::Dataset { name, streaming, location, span } = r else { continue };
            let Some(b) = bound.get(name) else { continue };
            used.insert(name.clone());
            *r = Read::Files(FileSource {
                format: b.format.clone(),
                path: b.path.clone(),
                options: b.options.clone(),
                streaming: *streaming,
                syntax: FileSyntax::ReadFiles,
                rescue_by_default: false,
                location: location.clone(),
                span: *span,
            });
        }
    }
    for (name, b) in &bound {
        let what = if used.contains(name) {
            format!("`{name}` is read from `{}` ({}), as bound here", b.path, b.format)
        } else {
            format!("`{name}` is bound to `{}` but nothing in the pipeline reads it", b.path)
        };
        notes.push(Diagnostic::at(&at(b.line), what));
    }
}
