//! Errors of the core, one variant per layer, each saying whose fault it is.
//!
//! User mistakes (a bad spec, a SQL syntax error, an invalid graph) carry [`Diagnostic`]s with a
//! file:line so the CLI can show the source; they map to exit code 2. A failed run is a
//! [`ThundError::Run`] (exit 1). [`ThundError::Internal`] is a bug in Þund and says so.

use std::fmt;
use std::path::PathBuf;

use serde::Serialize;

use crate::ir::SourceLocation;

/// `Result` with [`ThundError`] as the default error.
pub type Result<T, E = ThundError> = std::result::Result<T, E>;

/// One problem in the user's project, located where it can be fixed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Diagnostic {
    /// Where the problem is; `None` for project-wide problems.
    pub location: Option<SourceLocation>,
    /// What is wrong, as one sentence.
    pub message: String,
    /// How to fix it, when we can tell.
    pub hint: Option<String>,
}

impl Diagnostic {
    /// A problem at `location`.
    pub fn at(location: &SourceLocation, message: impl Into<String>) -> Self {
        Diagnostic { location: Some(location.clone()), message: message.into(), hint: None }
    }

    /// A problem without a source location.
    pub fn global(message: impl Into<String>) -> Self {
        Diagnostic { location: None, message: message.into(), hint: None }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(loc) = &self.location {
            write!(f, "{loc}: ")?;
        }
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

/// A feature the pipeline needs that a backend lacks, with where the pipeline needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CapabilityGap {
    /// The missing feature, e.g. `expectations`.
    pub feature: String,
    /// The dataset (or flow) that needs it.
    pub element: String,
    /// Where it is defined.
    pub location: SourceLocation,
    /// What exactly is needed, e.g. the expectation's name and predicate.
    pub detail: String,
}

impl fmt::Display for CapabilityGap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {} needs {}", self.location, self.element, self.feature)?;
        if !self.detail.is_empty() {
            write!(f, " ({})", self.detail)?;
        }
        Ok(())
    }
}

fn lines<T: fmt::Display>(items: &[T]) -> String {
    items.iter().map(|d| format!("\n  {d}")).collect()
}

/// Everything that can go wrong in the core.
#[derive(Debug, thiserror::Error)]
pub enum ThundError {
    /// The pipeline spec is missing, ambiguous or malformed.
    #[error("pipeline spec: {}", lines(.0))]
    Spec(Vec<Diagnostic>),
    /// A definition file could not be parsed.
    #[error("{} problem(s) in the pipeline's definitions:{}", .0.len(), lines(.0))]
    Parse(Vec<Diagnostic>),
    /// A test file (`thund test`) is broken.
    #[error("{} problem(s) in the pipeline's tests:{}", .0.len(), lines(.0))]
    Tests(Vec<Diagnostic>),
    /// The pipeline parsed but is not a valid graph.
    #[error("{} problem(s) in the pipeline graph:{}", .0.len(), lines(.0))]
    Validation(Vec<Diagnostic>),
    /// The chosen backend cannot run some of what the pipeline needs.
    #[error("backend `{backend}` cannot run this pipeline:{}", lines(.gaps))]
    Unsupported {
        /// The backend's name.
        backend: String,
        /// Every missing feature.
        gaps: Vec<CapabilityGap>,
    },
    /// A refresh selection names something that is not in the pipeline, or conflicts.
    #[error("selection: {0}")]
    Selection(String),
    /// A command-line or connection setting is wrong (a bad `--remote` URL, say).
    #[error("{0}")]
    Usage(String),
    /// A query (`thund query`) was rejected: bad SQL or an unknown table.
    #[error("query failed: {0}")]
    Query(String),
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A backend failed outside of any one flow (engine start, transport, storage).
    #[error("{0}")]
    Backend(String),
    /// The run ran and some flows failed.
    #[error("run failed: {0}")]
    Run(String),
    /// A bug in Þund.
    #[error("internal error (a bug in thund, please report it): {0}")]
    Internal(String),
    /// Several of the above, found together (preparing a run reports all its problems at once).
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Several(Vec<ThundError>),
}

impl ThundError {
    /// Whether the error is the user's input (exit code 2) rather than a failed run (exit code 1).
    pub fn is_usage(&self) -> bool {
        if let ThundError::Several(all) = self {
            return all.iter().all(ThundError::is_usage);
        }
        matches!(
            self,
            ThundError::Spec(_)
                | ThundError::Parse(_)
                | ThundError::Tests(_)
                | ThundError::Validation(_)
                | ThundError::Unsupported { .. }
                | ThundError::Selection(_)
                | ThundError::Usage(_)
                | ThundError::Query(_)
        )
    }

    /// The errors this one is made of: itself, or each of [`ThundError::Several`].
    pub fn parts(&self) -> Vec<&ThundError> {
        match self {
            ThundError::Several(all) => all.iter().flat_map(ThundError::parts).collect(),
            other => vec![other],
        }
    }

    /// The located problems, for rendering with source snippets.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ThundError::Spec(d) | ThundError::Parse(d) | ThundError::Tests(d) | ThundError::Validation(d) => d,
            _ => &[],
        }
    }
}
