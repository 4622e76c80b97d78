//! Errors of the native backend. User-facing SQL problems carry the flow's file:line.

use std::path::{Path, PathBuf};

use knut_thund::error::ThundError;

/// `Result` with [`NativeError`].
pub(crate) type Result<T, E = NativeError> = std::result::Result<T, E>;

/// What can go wrong in the native backend.
#[derive(Debug, thiserror::Error)]
pub enum NativeError {
    /// The query cannot be planned (unknown column, unsupported function, type error).
    #[error("{location}: {message}")]
    Plan {
        /// `file:line:col` of the query.
        location: String,
        /// What DataFusion or Þund said.
        message: String,
    },
    /// Executing a query or writing its result failed.
    #[error("{0}")]
    Execution(String),
    /// The storage root is unusable.
    #[error("storage: {0}")]
    Storage(String),
    /// Another run holds the lock.
    #[error("another thund run is writing to this pipeline's storage (lock {0})")]
    Locked(String),
    /// A file could not be read or written.
    #[error("{}: {source}", .path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What the OS said.
        source: std::io::Error,
    },
    /// A Delta table operation failed.
    #[error("delta: {0}")]
    Delta(#[from] deltalake::DeltaTableError),
    /// DataFusion failed.
    #[error("{0}")]
    DataFusion(#[from] datafusion::error::DataFusionError),

    /// Arrow failed to read or build data (e.g. decoding JSON records).
    #[error("{0}")]
    Arrow(#[from] arrow::error::ArrowError),
    /// The pipeline itself is wrong (from the core).
    #[error(transparent)]
    Core(#[from] ThundError),
}

impl NativeError {
    /// An I/O error on `path`.
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        NativeError::Io { path: path.to_path_buf(), source }
    }
}

impl From<NativeError> for ThundError {
    fn from(e: NativeError) -> Self {
        match e {
            NativeError::Core(c) => c,
            other => ThundError::Backend(other.to_string()),
        }
    }
}
