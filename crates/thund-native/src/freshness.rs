//! Skipping materialized views whose inputs did not change.
//!
//! A materialized view is a function of its definition and its inputs. Before recomputing one,
//! the run fingerprints both: the query text and table details, and for every input reached
//! through views, a table's Delta id and version or each file's size and modification time (every
//! file below a source folder, as its listing reads them). If the
//! fingerprint equals the one stored after the view's last commit, and the view's table is still
//! at that commit, the flow is IDLE. Queries calling non-deterministic functions (`rand()`,
//! `current_timestamp`, …) are always recomputed, and so is everything under `--full-refresh`.
//! The fingerprint is written after the commit: a crash in between only costs a recompute.

use std::path::Path;

use knut_thund::ir::{Dataset, FileSource, Pipeline, QualifiedName, Query, Read};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::Result;
use crate::sources::list_files;
use crate::storage::{resolve_project_path, Storage};

/// Function names whose result changes from run to run.
const NON_DETERMINISTIC: [&str; 9] =
    ["rand(", "random(", "randn(", "uuid(", "now(", "current_timestamp", "current_date", "unix_timestamp(", "shuffle("];

#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Stored {
    fingerprint: String,
    table_version: i64,
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
        // An unreadable folder fingerprints as empty: its read fails in the flow itself.
        entries.extend(list_files(&p).unwrap_or_default().iter().map(|rel| file_state(&p.join(rel))));
    }
    json!({"format": f.format, "options": f.options, "files": entries})
}

/// Everything the query's result depends on, or `None` if it cannot be known (a
/// non-deterministic function somewhere in the query or the views it reads). Tables read are
/// left as `null` in `out`, their places listed in `tables`, to be filled from storage.
fn inputs(
    p: &Pipeline,
    q: &Query,
    depth: usize,
    out: &mut Vec<Value>,
    tables: &mut Vec<(usize, QualifiedName)>,
) -> Option<()> {
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
                    tables.push((out.len(), name.clone()));
                    out.push(Value::Null);
                } else {
                    for f in p.flows_into(name) {
                        inputs(p, f.query(), depth + 1, out, tables)?;
                    }
                }
            }
        }
    }
    Some(())
}

/// The fingerprint of a materialized view's next result, or `None` if it must be recomputed.
pub async fn fingerprint(p: &Pipeline, storage: &Storage, d: &Dataset, q: &Query) -> Result<Option<String>> {
    let mut parts = Vec::new();
    let mut tables = Vec::new();
    if inputs(p, q, 0, &mut parts, &mut tables).is_none() {
        return Ok(None);
    }
    for (i, name) in tables {
        let key = storage.table_key(&name);
        let version = storage.delta_version(&key).await?;
        let id = crate::sources::table_id(storage, &key).await;
        parts[i] = json!({"table": name.to_string(), "version": version, "id": id});
    }
    let definition = json!({
        "engine": env!("CARGO_PKG_VERSION"),
        "details": d.details,
        "expectations": d.expectations,
        "comment": d.comment,
        "inputs": parts,
    });
    Ok(Some(definition.to_string()))
}

/// Whether the view's table already holds the result of `fingerprint`.
pub async fn is_fresh(storage: &Storage, d: &Dataset, fingerprint: &str) -> bool {
    let Ok(Some(stored)) = storage.read_json::<Stored>(&storage.fingerprint_key(&d.name)).await else { return false };
    let Ok(version) = storage.delta_version(&storage.table_key(&d.name)).await else { return false };
    stored.fingerprint == fingerprint && stored.table_version == version
}

/// Records that the view's table, at its current version, holds the result of `fingerprint`.
pub async fn record(storage: &Storage, d: &Dataset, fingerprint: String) -> Result<()> {
    let stored = Stored { fingerprint, table_version: storage.delta_version(&storage.table_key(&d.name)).await? };
    storage.write_json(&storage.fingerprint_key(&d.name), &stored).await
}
