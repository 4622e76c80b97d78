//! The pipeline spec (`spark-pipeline.yml`): discovery and parsing.
//!
//! Discovery walks from the given folder upwards, as `spark-pipelines` does, and stops at the
//! first folder holding a spec. Two specs in one folder are an error rather than a guess.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::error::{Diagnostic, Result, ThundError};
use crate::ir::SourceLocation;

/// File names a spec may have, in the order `spark-pipelines` looks for them.
pub const SPEC_FILE_NAMES: [&str; 4] = ["spark-pipeline.yml", "spark-pipeline.yaml", "pipeline.yml", "pipeline.yaml"];

/// The root file of a Databricks asset bundle, found where no SDP spec is.
pub const BUNDLE_FILE_NAMES: [&str; 2] = ["databricks.yml", "databricks.yaml"];

/// A parsed spec.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    /// Pipeline name.
    pub name: String,
    /// Storage root for tables, checkpoints and the event log.
    #[serde(default)]
    pub storage: Option<String>,
    /// Default catalog.
    #[serde(default)]
    pub catalog: Option<String>,
    /// Default database.
    #[serde(default, alias = "schema")]
    pub database: Option<String>,
    /// `${key}` substitutions and SQL conf.
    #[serde(default)]
    pub configuration: BTreeMap<String, String>,
    /// Where the definition files are.
    #[serde(default)]
    pub libraries: Vec<Library>,
}

/// One `libraries` entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Library {
    /// `glob: {include: …}`.
    pub glob: LibraryGlob,
}

/// The glob of a library entry.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LibraryGlob {
    /// A glob relative to the spec's folder (`transformations/**`).
    pub include: String,
}

/// Finds the spec for `start`: `start` itself if it is a spec file, else the first folder from
/// `start` upwards that holds one.
pub fn discover(start: &Path) -> Result<PathBuf> {
    if start.is_file() {
        // Absolute, so the project's folder is one too: a spec named relative to the working
        // directory (`-p settings.json`) has the empty path as its parent otherwise.
        return std::fs::canonicalize(start)
            .map_err(|e| ThundError::Spec(vec![Diagnostic::global(format!("{}: {e}", start.display()))]));
    }
    let abs = std::fs::canonicalize(start)
        .map_err(|e| ThundError::Spec(vec![Diagnostic::global(format!("project folder {}: {e}", start.display()))]))?;
    let mut dir = Some(abs.as_path());
    while let Some(d) = dir {
        let found: Vec<PathBuf> = SPEC_FILE_NAMES.iter().map(|n| d.join(n)).filter(|p| p.is_file()).collect();
        match found.len() {
            // A Databricks bundle's root, whose pipeline is one of its resources.
            0 => match BUNDLE_FILE_NAMES.iter().map(|n| d.join(n)).find(|p| p.is_file()) {
                Some(bundle) => return Ok(bundle),
                None => dir = d.parent(),
            },
            1 => return Ok(found.into_iter().next().unwrap_or_default()),
            _ => {
                let names: Vec<String> =
                    found.iter().filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned())).collect();
                return Err(ThundError::Spec(vec![Diagnostic::global(format!(
                    "{} holds several pipeline specs ({}); keep exactly one",
                    d.display(),
                    names.join(", ")
                ))]));
            }
        }
    }
    Err(ThundError::Spec(vec![Diagnostic::global(format!(
        "no pipeline spec found in {} or any folder above it",
        abs.display()
    ))
    .with_hint(format!("create one of {} (or run `thund init`)", SPEC_FILE_NAMES.join(", ")))]))
}

/// The line (1-based) where top-level `key:` is written.
fn top_level_line(text: &str, key: &str) -> Option<u32> {
    text.lines()
        .position(|l| l.strip_prefix(key).is_some_and(|r| r.trim_start().starts_with(':')))
        .map(|i| i as u32 + 1)
}

/// Parses spec text; `file` names it in errors.
pub fn parse(text: &str, file: &str) -> Result<Spec> {
    let spec: Spec = serde_yaml::from_str(text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line() as u32, l.column() as u32)).unwrap_or((1, 1));
        // serde_yaml says "unknown field `x`, expected one of …" and "missing field `name`".
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        ThundError::Spec(vec![Diagnostic::at(&SourceLocation::new(file, line, column), message)])
    })?;
    let mut problems = Vec::new();
    if spec.name.trim().is_empty() {
        problems.push(Diagnostic::at(&SourceLocation::new(file, 1, 1), "field `name` is empty"));
    }
    if spec.storage.as_deref().is_some_and(|s| s.trim().is_empty()) {
        // An empty root would put tables in the project folder itself.
        let line = top_level_line(text, "storage").unwrap_or(1);
        problems.push(
            Diagnostic::at(&SourceLocation::new(file, line, 1), "field `storage` is empty")
                .with_hint("name a folder (relative to the spec) or a URL, or leave `storage` out for `.thund`"),
        );
    }
    if spec.libraries.iter().any(|l| l.glob.include.trim().is_empty()) {
        problems
            .push(Diagnostic::at(&SourceLocation::new(file, 1, 1), "a `libraries` entry has an empty `glob.include`"));
    }
    if problems.is_empty() {
        Ok(spec)
    } else {
        Err(ThundError::Spec(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_full_spec_with_schema_alias() {
        let s = parse(
            "name: p\nstorage: /tmp/s\ncatalog: c\nschema: d\nconfiguration:\n  k: v\nlibraries:\n  - glob:\n      include: t/**\n",
            "spark-pipeline.yml",
        )
        .unwrap();
        assert_eq!(s.database.as_deref(), Some("d"));
        assert_eq!(s.configuration["k"], "v");
        assert_eq!(s.libraries[0].glob.include, "t/**");
    }

    #[test]
    fn names_an_unknown_field_with_its_line() {
        let err = parse("name: p\nstorage: ''\n", "spark-pipeline.yml").unwrap_err().to_string();
        assert!(err.contains("spark-pipeline.yml:2:1") && err.contains("`storage` is empty"), "{err}");
        let err = parse("name: p\nstorge: x\n", "spark-pipeline.yml").unwrap_err();
        let text = err.to_string();
        assert!(text.contains("unknown field `storge`"), "{text}");
        assert!(text.contains("spark-pipeline.yml:2:"), "{text}");
    }

    #[test]
    fn names_a_missing_required_field() {
        let err = parse("storage: x\n", "p.yml").unwrap_err();
        assert!(err.to_string().contains("missing field `name`"), "{err}");
    }

    #[test]
    fn discovers_upwards_and_rejects_two_specs() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("pipeline.yml"), "name: p\n").unwrap();
        let sub = dir.path().join("a/b");
        std::fs::create_dir_all(&sub).unwrap();
        assert!(discover(&sub).unwrap().ends_with("pipeline.yml"));
        std::fs::write(dir.path().join("spark-pipeline.yml"), "name: p\n").unwrap();
        let err = discover(&sub).unwrap_err();
        assert!(err.to_string().contains("several pipeline specs"), "{err}");
    }
}
