//! Why a command did not succeed, as a kind that decides the exit code. Every error a command
//! returns carries its kind in its type; [`kind`] reads it, and `main` maps it to the code.

use std::fmt;
use std::path::PathBuf;

use knut_thund::error::ThundError;

/// The ways a command can fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// The user's input or configuration is wrong (exit code 2).
    Usage,
    /// A run, a query or a check failed (exit code 1).
    Failed,
    /// The user interrupted a run (Ctrl-C), which stopped (exit code 130, as shells report
    /// SIGINT).
    Interrupted,
}

impl Kind {
    /// The process exit code.
    pub(crate) fn exit_code(self) -> u8 {
        match self {
            Kind::Usage => 2,
            Kind::Failed => 1,
            Kind::Interrupted => 130,
        }
    }
}

/// A core error together with the project root, so diagnostics can quote the source.
#[derive(Debug)]
pub(crate) struct ProjectError {
    pub root: PathBuf,
    pub error: ThundError,
}

impl fmt::Display for ProjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        crate::render::project_error(f, &self.root, &self.error)
    }
}

impl std::error::Error for ProjectError {}

/// A failure the CLI itself finds: a bad flag, or a run that ended and failed (what failed was
/// shown as it happened).
#[derive(Debug)]
pub(crate) struct Failure {
    pub kind: Kind,
    pub message: String,
}

impl Failure {
    /// The user's input or configuration is wrong.
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Failure { kind: Kind::Usage, message: message.into() }
    }

    /// A run or check ended and failed.
    pub(crate) fn failed(message: impl Into<String>) -> Self {
        Failure { kind: Kind::Failed, message: message.into() }
    }

    /// The user interrupted the run, which stopped.
    pub(crate) fn interrupted(message: impl Into<String>) -> Self {
        Failure { kind: Kind::Interrupted, message: message.into() }
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// The kind of a command's error. Core errors say themselves whether they are the user's
/// (`ThundError::is_usage`); anything else (I/O, storage, engine) is a failure.
pub(crate) fn kind(e: &anyhow::Error) -> Kind {
    let core = |error: &ThundError| if error.is_usage() { Kind::Usage } else { Kind::Failed };
    if let Some(pe) = e.downcast_ref::<ProjectError>() {
        core(&pe.error)
    } else if let Some(te) = e.downcast_ref::<ThundError>() {
        core(te)
    } else {
        e.downcast_ref::<Failure>().map_or(Kind::Failed, |f| f.kind)
    }
}
