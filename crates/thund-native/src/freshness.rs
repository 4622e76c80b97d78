//! Skipping materialized views whose inputs did not change.
//!
//! A materialized view is a function of its definition and its inputs. Before recomputing one,
//! the run fingerprints both: the query text and table details, and for every input reached
//! through views, a table's Delta id and version or a file's size and modification time. If the
//! fingerprint equals the one stored after the view's last commit, and the view's table is still
//! at that commit, the flow is IDLE. Queries calling non-deterministic functions (`rand()`,
//! `current_timestamp`, …) are always recomputed, and so is everything under `--full-refresh`.
//! The fingerprint is written after the commit: a crash in between only costs a recompute.

use std::path::{Path, PathBuf};

use knut_thund::ir::{Dataset, FileSource, Pipeline, Query, Read};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::Result;
use crate::storage::{encode_component, resolve_project_path, write_json, Storage};

/// Function names whose result changes from run to run.
const NON_DETERMINISTIC: [&str; 9] =
    ["rand(", "random(", "randn(", "uuid(", "now(", "current_timestamp", "current_date", "unix_timestamp(", "shuffle("];

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Stored {
    fingerprint: String,
    table_version: i64,
}

fn stored_path(storage: &Storage, d: &Dataset) -> PathBuf {
    storage
        .root()
        .join("fingerprints")
        .join(encode_component(&d.name.catalog))
        .join(encode_component(&d.name.database))
        .join(format!("{}.json", encode_component(&d.name.name)))
}

/// The latest committed version of the Delta table at `path` (`-1` when there is none).
pub fn delta_version(path: &Path) -> i64 {
    let Ok(entries) = std::fs::read_dir(path.join("_delta_log")) else { return -1 };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let stem = name.strip_suffix(".json")?;
            (stem.len() == 20 && stem.bytes().all(|b| b.is_ascii_digit())).then(|| stem.parse::<i64>().ok()).flatten()
        })
        .max()
        .unwrap_or(-1)
}

fn file_state(path: &Path) -> Value {
    match std::fs::metadata(path) {
        Ok(m) => {
            let modified =
                m.modified().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map(|d| d.as_nanos());
            json!([path.to_string_lossy(), m.len(), modified.map(|n| n.to_string())])
        }
        Err(_) => json!([path.to_string_lossy(), null]),
    }
}

fn files_state(f: &FileSource, root: &Path) -> Value {
    let p = resolve_project_path(&f.path, root);
    let mut entries = vec![file_state(&p)];
    if p.is_dir() {
        let mut children: Vec<PathBuf> =
            std::fs::read_dir(&p).map(|rd| rd.flatten().map(|e| e.path()).collect()).unwrap_or_default();
        children.sort();
        entries.extend(children.iter().map(|c| file_state(c)));
    }
    json!({"format": f.format, "options": f.options, "files": entries})
}

/// Everything the query's result depends on, or `None` if it cannot be known (a
/// non-deterministic function somewhere in the query or the views it reads).
fn inputs(p: &Pipeline, storage: &Storage, q: &Query, depth: usize, out: &mut Vec<Value>) -> Option<()> {
    let sql = q.sql.to_ascii_lowercase();
    if depth > 64 || NON_DETERMINISTIC.iter().any(|f| sql.contains(f)) {
        return None;
    }
    out.push(json!({"sql": q.sql}));
    for r in &q.reads {
        match r {
            Read::Files(f) => out.push(files_state(f, &p.root)),
            Read::Dataset { name, .. } => {
                let d = p.dataset(name)?;
                if d.kind.is_table() {
                    let path = storage.table_path(name);
                    out.push(json!({"table": name.to_string(), "version": delta_version(&path), "id": crate::stream::table_id(&path)}));
                } else {
                    for f in p.flows_into(name) {
                        inputs(p, storage, f.query(), depth + 1, out)?;
                    }
                }
            }
        }
    }
    Some(())
}

/// The fingerprint of a materialized view's next result, or `None` if it must be recomputed.
pub fn fingerprint(p: &Pipeline, storage: &Storage, d: &Dataset, q: &Query) -> Option<String> {
    let mut parts = Vec::new();
    inputs(p, storage, q, 0, &mut parts)?;
    let definition = json!({
        "engine": env!("CARGO_PKG_VERSION"),
        "details": d.details,
        "expectations": d.expectations,
        "comment": d.comment,
        "inputs": parts,
    });
    Some(definition.to_string())
}

/// Whether the view's table already holds the result of `fingerprint`.
pub fn is_fresh(storage: &Storage, d: &Dataset, fingerprint: &str) -> bool {
    let Ok(text) = std::fs::read_to_string(stored_path(storage, d)) else { return false };
    let Ok(stored) = serde_json::from_str::<Stored>(&text) else { return false };
    stored.fingerprint == fingerprint && stored.table_version == delta_version(&storage.table_path(&d.name))
}

/// Records that the view's table, at its current version, holds the result of `fingerprint`.
pub fn record(storage: &Storage, d: &Dataset, fingerprint: String) -> Result<()> {
    let stored = Stored { fingerprint, table_version: delta_version(&storage.table_path(&d.name)) };
    write_json(&stored_path(storage, d), &stored)
}
