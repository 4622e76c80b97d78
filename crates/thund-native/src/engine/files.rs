//! The files a file source reads: a folder's files, or those a path with wildcards matches.

use std::path::{Path, PathBuf};

use crate::error::{NativeError, Result};

/// Files under `root` (recursively), relative to it and sorted, skipping hidden and `_`-prefixed
/// entries (commit markers, checksums) as Spark and DataFusion's listings do. Streaming file
/// sources take the files not yet processed from it; a materialized view's fingerprint covers
/// every file in it, so a change anywhere below a source folder is seen.
pub(crate) fn list_files(root: &Path) -> Result<Vec<String>> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| NativeError::io(&dir, e))?;
        for e in entries {
            let e = e.map_err(|e| NativeError::io(&dir, e))?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') || name.starts_with('_') {
                continue;
            }
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(rel) = p.strip_prefix(root) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    Ok(out)
}

/// A file source's path with a wildcard (`/landing/rides/*.csv`, `/in/2026-*/part-*.json`) as the
/// folder to list and the pattern for the paths below it, as Spark's readers take one: `*`, `?`
/// and `[…]` within one part of the path; a folder that matches stands for the files below it.
/// `None` for a path without wildcards.
pub(crate) fn path_glob(path: &Path) -> Option<(PathBuf, glob::Pattern)> {
    let text = path.to_string_lossy();
    let parts: Vec<&str> = text.split('/').collect();
    let wild = parts.iter().position(|p| p.contains(['*', '?', '[']))?;
    let base = parts[..wild].join("/");
    let base = if base.is_empty() && text.starts_with('/') { "/".to_string() } else { base };
    let pattern = glob::Pattern::new(&parts[wild..].join("/")).ok()?;
    Some((PathBuf::from(base), pattern))
}

/// Whether `rel` (a file's path below a [`path_glob`]'s folder) is one the pattern reads: it or
/// a folder above it matches.
pub(crate) fn glob_reads(pattern: &glob::Pattern, rel: &str) -> bool {
    let options = glob::MatchOptions { require_literal_separator: true, ..glob::MatchOptions::new() };
    let mut prefix = String::new();
    rel.split('/').any(|part| {
        if !prefix.is_empty() {
            prefix.push('/');
        }
        prefix.push_str(part);
        pattern.matches_with(&prefix, options)
    })
}

/// The files below `base` that `pattern` reads, relative to `base` and sorted; none if `base`
/// is not a folder.
pub(crate) fn matching(base: &Path, pattern: &glob::Pattern) -> Result<Vec<String>> {
    if !base.is_dir() {
        return Ok(Vec::new());
    }
    Ok(list_files(base)?.into_iter().filter(|rel| glob_reads(pattern, rel)).collect())
}
