//! The storage layout under a pipeline's `storage` root.
//!
//! ```text
//! <storage>/
//!   tables/<catalog>/<database>/<name>/     one Delta table per materialized view / streaming table
//!   views/<catalog>/<database>/<name>.json  persistent view definitions (for `thund query`)
//!   checkpoints/<catalog>/<database>/<table>/<flow>/state.json   streaming progress (see `stream`)
//!   fingerprints/<catalog>/<database>/<name>.json   what each materialized view was computed from
//!   state/<catalog>/<database>/<name>/      aggregate state of an incrementally refreshed view
//!   state/<catalog>/<database>/<name>.json  which source version that state covers (`incremental`)
//!   events/<run id>.jsonl                   the event log, one JSON object per line
//!   run.lock                                held while a run writes (a second run fails fast)
//! ```
//! A table's files replaced by an overwrite are deleted once past its retention (`table::vacuum`).
//! Each name component is escaped: anything but ASCII letters, digits, `_` and `-` is written as
//! `~XX` (hex), so a quoted name like `../x` or `a/b` can never leave its folder. `~` rather than
//! `%` because table locations travel as URLs, where `%2E%2E` would be decoded back to `..`.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use knut_thund::ir::{Pipeline, QualifiedName};

use crate::error::{NativeError, Result};

/// Folder name of the default storage root, beside the spec.
pub const DEFAULT_STORAGE_DIR: &str = ".thund";

/// Resolved storage root of one pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Storage {
    root: PathBuf,
}

/// Encodes one name component so it is a single safe path segment.
pub fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' || b == b'-' {
            out.push(b as char);
        } else {
            out.push_str(&format!("~{b:02X}"));
        }
    }
    if out.is_empty() {
        out.push_str("~00");
    }
    out
}

impl Storage {
    /// The storage of `p`: its spec's `storage` (a path, or a `file://` URL; relative paths are
    /// relative to the project root) or `<project>/.thund`.
    pub fn of(p: &Pipeline) -> Result<Self> {
        let root = match p.storage.as_deref() {
            None => p.root.join(DEFAULT_STORAGE_DIR),
            Some(s) => {
                if let Some(path) = s.strip_prefix("file://") {
                    PathBuf::from(path)
                } else if s.contains("://") {
                    return Err(NativeError::Storage(format!(
                        "storage `{s}`: only local paths and file:// URLs are supported by the native backend"
                    )));
                } else if Path::new(s).is_absolute() {
                    PathBuf::from(s)
                } else {
                    p.root.join(s)
                }
            }
        };
        Ok(Storage { root })
    }

    /// A storage rooted at `root`.
    pub fn at(root: impl Into<PathBuf>) -> Self {
        Storage { root: root.into() }
    }

    /// The root folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn name_path(&self, kind: &str, name: &QualifiedName) -> PathBuf {
        self.root
            .join(kind)
            .join(encode_component(&name.catalog))
            .join(encode_component(&name.database))
            .join(encode_component(&name.name))
    }

    /// Folder of the Delta table of `name`.
    pub fn table_path(&self, name: &QualifiedName) -> PathBuf {
        self.name_path("tables", name)
    }

    /// File holding the definition of persistent view `name`.
    pub fn view_path(&self, name: &QualifiedName) -> PathBuf {
        let mut p = self.name_path("views", name);
        p.set_extension("json");
        p
    }

    /// Folder of the event logs.
    pub fn events_dir(&self) -> PathBuf {
        self.root.join("events")
    }

    /// Takes the run lock, failing fast if another run holds it.
    pub fn lock(&self) -> Result<RunLock> {
        std::fs::create_dir_all(&self.root).map_err(|e| NativeError::io(&self.root, e))?;
        let path = self.root.join("run.lock");
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| NativeError::io(&path, e))?;
        match file.try_lock() {
            Ok(()) => {
                let mut f = &file;
                let _ = f.write_all(format!("{}\n", std::process::id()).as_bytes());
                Ok(RunLock { _file: file })
            }
            Err(_) => Err(NativeError::Locked(path)),
        }
    }
}

/// A path a user wrote (a source, a sink), as a plain path or a `file://` URL; relative paths are
/// relative to the project root.
pub fn resolve_project_path(path: &str, root: &Path) -> PathBuf {
    let p = Path::new(path.strip_prefix("file://").unwrap_or(path));
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        root.join(p)
    }
}

/// Reads a JSON file Þund wrote; `None` when it does not exist.
pub fn read_json<T: for<'de> serde::Deserialize<'de>>(path: &Path) -> Result<Option<T>> {
    match std::fs::read_to_string(path) {
        Ok(text) => serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| NativeError::Storage(format!("{}: unreadable: {e}", path.display()))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(NativeError::io(path, e)),
    }
}

/// Writes JSON atomically (a temporary file renamed into place): a reader, or a restart after a
/// crash, sees the old or the new file, never half of one.
pub fn write_json<T: serde::Serialize>(path: &Path, value: &T) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| NativeError::io(dir, e))?;
    }
    let tmp = path.with_extension("json.tmp");
    let text = serde_json::to_string_pretty(value).map_err(|e| NativeError::Storage(e.to_string()))?;
    std::fs::write(&tmp, text).map_err(|e| NativeError::io(&tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| NativeError::io(path, e))
}

/// Held for the duration of a run; the OS releases it when the process ends, even on a crash.
#[derive(Debug)]
pub struct RunLock {
    _file: File,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_names_stay_inside_the_storage_root() {
        let s = Storage::at("/st");
        for evil in ["..", "../x", "a/b", "/etc/passwd", ".", "", "a\\b", "x\u{0}y"] {
            let p = s.table_path(&QualifiedName::new("c", "d", evil));
            assert!(p.starts_with("/st/tables/c/d/"), "{evil:?} -> {}", p.display());
            assert_eq!(p.components().count(), "/st/tables/c/d/x".split('/').count(), "{evil:?} -> {}", p.display());
            assert!(!p.components().any(|c| matches!(c, std::path::Component::ParentDir)));
        }
        assert_eq!(encode_component("My Table"), "My~20Table");
        assert_eq!(encode_component("plain_name-1"), "plain_name-1");
    }

    #[test]
    fn a_second_lock_fails_fast() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::at(dir.path());
        let first = s.lock().unwrap();
        assert!(matches!(s.lock(), Err(NativeError::Locked(_))));
        drop(first);
        assert!(s.lock().is_ok());
    }
}
