//! The SDP front-end: a project folder in, an [`ir::Pipeline`](crate::ir::Pipeline) out.
//!
//! ```text
//! spark-pipeline.yml ─spec::parse→ Spec ─libraries globs→ *.sql (sorted)
//!   each file: ${key} substitution → tokens → statements → Dataset/Flow (+ reads per query)
//! ```
//! Problems are collected across all files and returned together, each with file:line.
//! Python files are imported by the user's pyspark against a loopback endpoint (`python_run`,
//! feature `spark`) and their definitions parsed as the SQL statements they amount to; a
//! Databricks notebook that defines nothing (a data generator) is noted and left out (`python`).
//! Without the feature, a Python file that defines datasets is an error naming each, never
//! skipped: they would silently be missing.

pub mod bindings;
pub mod dlt;
pub mod python;
#[cfg(feature = "spark")]
mod python_run;
pub(crate) mod query;
pub(crate) mod statement;
pub(crate) mod text;

pub use query::NameContext;

use std::path::{Path, PathBuf};

use crate::error::{Diagnostic, Result, ThundError};
use crate::ir::{Pipeline, Query, SourceLocation};
use crate::spec;

/// Default catalog when the spec names none (Spark's session catalog).
pub const DEFAULT_CATALOG: &str = "spark_catalog";
/// Default database when the spec names none.
pub const DEFAULT_DATABASE: &str = "default";

/// A query written outside a definition file (`thund query`'s), analysed as the front-end
/// analyses a pipeline's: normalized, parsed once, its reads found. Every problem is returned.
pub fn analyze_query(
    sql: &str,
    at: &SourceLocation,
    names: &NameContext,
) -> std::result::Result<Query, Vec<Diagnostic>> {
    query::analyze(sql, at, names)
}

/// A step of making the final query of a Python DataFrame whose translation depends on its
/// inputs' columns ([`crate::ir::DataFrameRelation::schema_dependent`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataFrameStep {
    /// The final query.
    Done(String),
    /// The columns of this query are needed first.
    NeedsColumns(String),
}

/// The next step of translating `df` given the columns of the queries it asked for so far (by
/// their SQL text). An error says why the DataFrame cannot be translated.
pub fn dataframe_step(
    df: &crate::ir::DataFrameRelation,
    known: &std::collections::BTreeMap<String, Vec<(String, String)>>,
) -> std::result::Result<DataFrameStep, String> {
    #[cfg(feature = "spark")]
    {
        use knut_pipelines::dataframe::{relation_sql_with_columns, Resolution};
        match relation_sql_with_columns(&df.bytes, known) {
            Ok(Resolution::Done(sql)) => Ok(DataFrameStep::Done(sql)),
            Ok(Resolution::NeedsColumns(sql)) => Ok(DataFrameStep::NeedsColumns(sql)),
            Err(e) => Err(e.0),
        }
    }
    #[cfg(not(feature = "spark"))]
    {
        let _ = (df, known);
        Err("Python DataFrames are translated by builds with the `spark` feature".into())
    }
}

/// An expression written by a backend rather than a user (a template for a Spark function that
/// the engine spells otherwise), parsed as the front-end parses expressions in definitions.
pub fn parse_expression(sql: &str) -> std::result::Result<crate::ir::Expression, Diagnostic> {
    statement::expression(sql, &SourceLocation::new("<template>", 1, 1))
}

/// Gives a query read back from a stored definition (a persistent view's record) its parse,
/// which is not stored.
pub fn reparse(q: &mut Query) -> std::result::Result<(), Diagnostic> {
    query::parse_stored(q)
}

/// Where the statements of a definition file end: the line and column of each `;` that ends one,
/// as the front-end's own tokenizer finds them after the same `${key}` substitution, so quotes
/// and comments are read as the parser reads them. `None` if the file does not tokenize.
pub fn statement_ends(
    text: &str,
    conf: &std::collections::BTreeMap<String, String>,
    file: &str,
) -> Option<Vec<(u32, u32)>> {
    use sqlparser::tokenizer::Token;
    let substituted = text::substitute(text, conf, file).unwrap_or_else(|_| text.to_string());
    let toks = text::tokenize(&substituted, None, file).ok()?;
    Some(toks.iter().filter(|t| t.token == Token::SemiColon).map(|t| (t.line, t.column)).collect())
}

/// The front-end's query normalization and parse, for its round-trip tests (parse → print →
/// parse gives the same tree); backends never parse SQL text.
#[doc(hidden)]
pub mod roundtrip {
    pub use super::query::{normalize, parse};
}

/// What a loaded project's queries keep of their parses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parses {
    /// Every query keeps its parse, for a backend that plans it (the native engine).
    Keep,
    /// Each parse is dropped as soon as the front-end has read from it what validation and the
    /// capability checks need, so a large project is checked in a fraction of the memory: for a
    /// command that plans nothing (`validate`, `graph`).
    Drop,
}

/// Loads the project whose spec is found from `start` upwards, and parses all its SQL.
pub fn load(start: &Path) -> Result<Pipeline> {
    load_with(start, Parses::Keep)
}

/// [`load`], keeping the parses or not.
pub fn load_with(start: &Path, parses: Parses) -> Result<Pipeline> {
    let spec_path = spec::discover(start)?;
    let root = spec_path.parent().map(Path::to_path_buf).unwrap_or_else(|| PathBuf::from("."));
    let spec_name = spec_path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let text = read_text(&spec_path, &spec_name)?.map_err(|d| ThundError::Spec(vec![d]))?;
    let is_dlt = dlt::is_settings(&spec_path, &text);
    let (spec, root, mut notes) = if is_dlt {
        let s = dlt::settings(&spec_path, &text, &spec_name)?;
        (s.spec, s.root, s.notes)
    } else {
        (spec::parse(&text, &spec_name)?, root, Vec::new())
    };

    let files = library_files(&root, &spec, &spec_name)?;
    let mut pipeline = Pipeline {
        name: spec.name.clone(),
        storage: spec.storage.clone(),
        root: root.clone(),
        catalog: spec.catalog.clone().unwrap_or_else(|| DEFAULT_CATALOG.into()),
        database: spec.database.clone().unwrap_or_else(|| DEFAULT_DATABASE.into()),
        configuration: spec.configuration.clone(),
        datasets: Vec::new(),
        flows: Vec::new(),
        notes: Vec::new(),
    };
    let mut problems = Vec::new();
    let mut python_files = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&root).unwrap_or(&file).to_string_lossy().replace('\\', "/");
        match file.extension().and_then(|e| e.to_str()) {
            Some("sql") => {}
            // An SDP project's Python files are all imported, as `spark-pipelines` imports
            // them. A Databricks notebook that defines nothing (a data generator) is noted and
            // not run.
            Some("py") if cfg!(feature = "spark") && !is_dlt => {
                python_files.push(rel);
                continue;
            }
            Some("py") => {
                match read_text(&file, &rel)?.map(|text| python::check(&rel, &text)) {
                    Ok(Ok(note)) => notes.push(note),
                    Ok(Err(_)) if cfg!(feature = "spark") => python_files.push(rel),
                    Ok(Err(missing)) => problems.extend(missing),
                    Err(d) => problems.push(d),
                }
                continue;
            }
            Some("ipynb") => {
                problems.push(
                    Diagnostic::at(
                        &SourceLocation::new(&rel, 1, 1),
                        "Jupyter notebooks are not read; the datasets it defines are missing from this pipeline",
                    )
                    .with_hint("export the notebook as a source file (File > Export > Source file), which gives SQL"),
                );
                continue;
            }
            _ => continue, // data files and notes living next to the SQL
        }
        let source = match read_text(&file, &rel)? {
            Ok(s) => s,
            Err(d) => {
                problems.push(d);
                continue;
            }
        };
        // A Databricks SQL notebook export is SQL once its cells end their statements.
        let source = dlt::notebook_sql(&source, &rel, &mut notes).unwrap_or(source);
        let source = match text::substitute(&source, &spec.configuration, &rel) {
            Ok(s) => s,
            Err(ds) => {
                problems.extend(ds);
                continue;
            }
        };
        let mut names = query::NameContext {
            catalog: pipeline.catalog.clone(),
            database: pipeline.database.clone(),
            databricks: is_dlt,
        };
        let defs = statement::parse_file(&rel, &source, &mut names, parses);
        problems.extend(defs.problems);
        pipeline.datasets.extend(defs.datasets);
        pipeline.flows.extend(defs.flows);
    }
    #[cfg(feature = "spark")]
    if !python_files.is_empty() {
        let loaded = PythonFiles { files: &python_files, conf: &spec.configuration, databricks: is_dlt };
        python_definitions(&mut pipeline, loaded, parses, &mut problems, &mut notes);
    }
    #[cfg(not(feature = "spark"))]
    let _ = python_files;
    bindings::apply(&mut pipeline, &root, &mut notes, &mut problems);
    if !problems.is_empty() {
        return Err(ThundError::Parse(problems));
    }
    pipeline.notes = notes;
    Ok(pipeline)
}

/// Loads the Python definition files `files` (the user's pyspark registers them) into `pipeline`:
/// each definition is parsed as the SQL statement it amounts to, at its Python file and line, and
/// its flow keeps the DataFrame's relation.
#[cfg(feature = "spark")]
fn python_definitions(
    pipeline: &mut Pipeline,
    python: PythonFiles<'_>,
    parses: Parses,
    problems: &mut Vec<Diagnostic>,
    notes: &mut Vec<Diagnostic>,
) {
    let PythonFiles { files, conf, databricks } = python;
    let statements =
        match python_run::load(&pipeline.root, files, conf, &pipeline.catalog, &pipeline.database, databricks) {
            Ok(loaded) => {
                notes.extend(loaded.notes);
                loaded.statements
            }
            Err(ds) => {
                problems.extend(ds);
                return;
            }
        };
    for s in statements {
        // Blank lines above put the statement at its Python line, so every message about it
        // names the Python file and line.
        let text = format!("{}{}", "\n".repeat(s.line.saturating_sub(1) as usize), s.sql);
        let mut names =
            query::NameContext { catalog: pipeline.catalog.clone(), database: pipeline.database.clone(), databricks };
        let mut defs = statement::parse_file(&s.file, &text, &mut names, parses);
        if let Some(df) = s.dataframe {
            for f in &mut defs.flows {
                f.query_mut().dataframe = Some(crate::ir::DataFrameRelation {
                    bytes: df.bytes.clone(),
                    untranslated: df.untranslated.clone(),
                    schema_dependent: df.schema_dependent,
                    catalog: pipeline.catalog.clone(),
                    database: pipeline.database.clone(),
                });
            }
        }
        problems.extend(defs.problems);
        pipeline.datasets.extend(defs.datasets);
        pipeline.flows.extend(defs.flows);
    }
}

/// A project's Python definition files, and how they are read.
#[cfg(feature = "spark")]
struct PythonFiles<'a> {
    files: &'a [String],
    conf: &'a std::collections::BTreeMap<String, String>,
    /// A Databricks project: `table` over a batch query is a materialized view.
    databricks: bool,
}

/// The text of a project file; bytes that are not UTF-8 are the user's error, at their line and
/// column (`shown` names the file as messages do).
fn read_text(path: &Path, shown: &str) -> Result<std::result::Result<String, Diagnostic>> {
    let bytes = std::fs::read(path).map_err(|source| ThundError::Io { path: path.to_path_buf(), source })?;
    Ok(String::from_utf8(bytes).map_err(|e| {
        let valid = &e.as_bytes()[..e.utf8_error().valid_up_to()];
        let line = valid.iter().filter(|b| **b == b'\n').count() as u32 + 1;
        let line_start = valid.iter().rposition(|b| *b == b'\n').map_or(0, |i| i + 1);
        let column = String::from_utf8_lossy(&valid[line_start..]).chars().count() as u32 + 1;
        Diagnostic::at(&SourceLocation::new(shown, line, column), "the file is not UTF-8 text")
            .with_hint("save it as UTF-8")
    }))
}

/// The files the spec's `libraries` globs match, sorted and without duplicates. A glob that
/// matches nothing is an error: it is almost always a typo.
fn library_files(root: &Path, spec: &spec::Spec, spec_name: &str) -> Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    let mut problems = Vec::new();
    for lib in &spec.libraries {
        let include = lib.glob.include.trim_start_matches("./");
        // `dir/**` in SDP means every file below `dir`.
        let pattern = if include.ends_with("**") { format!("{include}/*") } else { include.to_string() };
        let full = root.join(&pattern);
        let matched: Vec<PathBuf> = match glob::glob(&full.to_string_lossy()) {
            Ok(paths) => paths.filter_map(|p| p.ok()).filter(|p| p.is_file()).collect(),
            Err(e) => {
                problems.push(Diagnostic::global(format!("{spec_name}: invalid glob `{include}`: {e}")));
                continue;
            }
        };
        if matched.is_empty() {
            problems.push(Diagnostic::global(format!("{spec_name}: `libraries` glob `{include}` matches no file")));
        }
        // A link out of the project would read (and quote in errors) a file that is not the
        // pipeline's.
        let inside = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        for file in &matched {
            let escapes = std::fs::canonicalize(file).map_or(true, |real| !real.starts_with(&inside));
            if escapes {
                let rel = file.strip_prefix(root).unwrap_or(file).display().to_string();
                problems.push(Diagnostic::at(
                    &SourceLocation::new(&rel, 1, 1),
                    "this library file is a link to a file outside the project; copy the file into the project instead",
                ));
            }
        }
        files.extend(matched);
    }
    if !problems.is_empty() {
        return Err(ThundError::Spec(problems));
    }
    files.sort();
    files.dedup();
    Ok(files)
}

/// A pipeline of one SQL file `a.sql` with the defaults, for tests.
#[cfg(test)]
pub(crate) fn load_sql(sql: &str) -> Pipeline {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("pipeline.yml"), "name: p\nlibraries:\n  - glob:\n      include: '*.sql'\n")
        .unwrap();
    std::fs::write(dir.path().join("a.sql"), sql).unwrap();
    load(dir.path()).unwrap()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        for (name, text) in files {
            let p = dir.path().join(name);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, text).unwrap();
        }
        dir
    }

    #[test]
    fn loads_sql_across_sub_folders_with_configuration() {
        let dir = project(&[
            ("spark-pipeline.yml", "name: p\ncatalog: c\ndatabase: d\nconfiguration:\n  src: raw\nlibraries:\n  - glob:\n      include: transformations/**\n"),
            ("transformations/a.sql", "CREATE MATERIALIZED VIEW a AS SELECT * FROM ${src}"),
            ("transformations/sub/b.sql", "CREATE MATERIALIZED VIEW b AS SELECT * FROM a"),
        ]);
        let p = load(dir.path()).unwrap();
        assert_eq!(p.datasets.len(), 2);
        assert_eq!(p.datasets[1].location.file, "transformations/sub/b.sql");
        assert!(p.flows[0].query().sql.contains("FROM raw"));
    }

    #[test]
    fn reports_python_files_and_undefined_keys_together() {
        let dir = project(&[
            ("pipeline.yml", "name: p\nlibraries:\n  - glob:\n      include: t/**\n"),
            ("t/a.py", "@dp.table\ndef a(): ...\nfrom pyspark import pipelines as dp\n"),
            ("t/b.sql", "CREATE MATERIALIZED VIEW b AS\nSELECT ${nope}"),
        ]);
        let err = load(dir.path()).unwrap_err();
        let text = err.to_string();
        if cfg!(feature = "spark") {
            // The file runs (with THUND_PYTHON's pyspark), and fails where Python says.
            assert!(text.contains("t/a.py:1:1: NameError: name 'dp' is not defined"), "{text}");
        } else {
            assert!(text.contains("t/a.py:1:1: `a` is defined in Python (`@dp.table`)"), "{text}");
        }
        assert!(text.contains("t/b.sql:2:8"), "{text}");
    }

    #[test]
    fn a_glob_matching_nothing_is_an_error() {
        let dir = project(&[("pipeline.yml", "name: p\nlibraries:\n  - glob:\n      include: nothing/**\n")]);
        assert!(load(dir.path()).unwrap_err().to_string().contains("matches no file"));
    }
}
