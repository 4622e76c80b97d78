//! Skipping materialized views whose inputs did not change.
//!
//! A materialized view is a function of its definition and its inputs. Before recomputing one,
//! the run fingerprints both: the query text and table details, and for every input reached
//! through views, a table's Delta id and version or each file's size and modification time (every
//! file below a source folder, as its listing reads them). If the
//! fingerprint equals the one stored after the view's last commit, and the view's table is still
//! at that commit, the flow is IDLE. Queries calling functions the engine's registry does not call
//! immutable (`rand()`, `current_timestamp`, `localtimestamp`, …) are always recomputed, and so is
//! everything under `--full-refresh`.
//! The fingerprint is written after the commit: a crash in between only costs a recompute.

use std::path::Path;

use datafusion::execution::SessionState;
use datafusion::logical_expr::Volatility;
use datafusion::prelude::SessionContext;

use knut_thund::ir::{Dataset, FileSource, Pipeline, QualifiedName, Query, Read};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::delta::storage::{local_commits, resolve_project_path, Storage};
use crate::engine::files::list_files;
use crate::error::Result;

/// Spark's functions whose result can change from run to run, for those the engine's registry
/// does not hold under Spark's name (the registry answers for the rest).
const SPARK_NON_DETERMINISTIC: [&str; 16] = [
    "rand",
    "randn",
    "random",
    "uuid",
    "shuffle",
    "monotonically_increasing_id",
    "spark_partition_id",
    "input_file_name",
    "input_file_block_start",
    "input_file_block_length",
    "current_timestamp",
    "current_date",
    "curdate",
    "now",
    "localtimestamp",
    "unix_timestamp",
];

/// Whether `q` calls a function whose result can change from run to run: one the session's
/// registry does not call immutable (`now`, `random`, …), or one Spark calls non-deterministic
/// (`localtimestamp`, `monotonically_increasing_id`, …), however it is spelled or spaced.
fn calls_volatile(state: &SessionState, q: &Query) -> bool {
    use sqlparser::ast::{visit_expressions, Expr};
    use std::ops::ControlFlow;
    let Some(ast) = q.ast.get() else { return true };
    let volatile = |name: &str| {
        let volatility = if let Some(f) = state.scalar_functions().get(name) {
            Some(f.signature().volatility)
        } else if let Some(f) = state.aggregate_functions().get(name) {
            Some(f.signature().volatility)
        } else {
            state.window_functions().get(name).map(|f| f.signature().volatility)
        };
        SPARK_NON_DETERMINISTIC.contains(&name) || volatility.is_some_and(|v| v != Volatility::Immutable)
    };
    let found = visit_expressions(ast, |e| match e {
        Expr::Function(f) => {
            let name = f.name.0.last().map(|p| p.to_string().to_ascii_lowercase()).unwrap_or_default();
            if volatile(name.trim_matches('`')) {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        }
        // Spark's `localtimestamp`, `current_date`, … need no parentheses.
        Expr::Identifier(i) if SPARK_NON_DETERMINISTIC.contains(&i.value.to_ascii_lowercase().as_str()) => {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}

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

/// A Delta table's state is its log: a commit that only removes files (a delete, an overwrite
/// by nothing) leaves every data file on disk, so the files alone would call the table unchanged.
fn delta_state(table: &Path) -> Value {
    let latest = local_commits(table).max_by_key(|(version, _)| *version);
    // The commit file's own size and time tell a table recreated at the same version apart.
    match latest {
        Some((version, commit)) => json!({"delta_version": version, "commit": file_state(&commit)}),
        None => json!({"delta_version": null}),
    }
}

fn files_state(f: &FileSource, root: &Path) -> Value {
    let p = resolve_project_path(&f.path, root);
    if f.format.eq_ignore_ascii_case("delta") {
        return json!({"format": f.format, "options": f.options, "table": delta_state(&p)});
    }
    // A path with wildcards: every file it reads, below its folder.
    if let Some((base, pattern)) = crate::engine::files::path_glob(&p) {
        let read = crate::engine::files::matching(&base, &pattern).unwrap_or_default();
        let entries: Vec<Value> = read.iter().map(|rel| json!([rel, file_state(&base.join(rel))])).collect();
        return json!({"format": f.format, "options": f.options, "files": entries});
    }
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
    state: &SessionState,
    p: &Pipeline,
    q: &Query,
    depth: usize,
    out: &mut Vec<Value>,
    tables: &mut Vec<(usize, QualifiedName)>,
) -> Option<()> {
    if depth > 64 || calls_volatile(state, q) {
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
                        inputs(state, p, f.query(), depth + 1, out, tables)?;
                    }
                }
            }
        }
    }
    Some(())
}

/// The fingerprint of a materialized view's next result, or `None` if it must be recomputed.
pub(crate) async fn fingerprint(
    ctx: &SessionContext,
    p: &Pipeline,
    storage: &Storage,
    d: &Dataset,
    q: &Query,
) -> Result<Option<String>> {
    let mut parts = Vec::new();
    let mut tables = Vec::new();
    if inputs(&ctx.state(), p, q, 0, &mut parts, &mut tables).is_none() {
        return Ok(None);
    }
    for (i, name) in tables {
        let key = storage.table_key(&name);
        let version = storage.delta_version(&key).await?;
        let id = crate::streaming::sources::table_id(storage, &key).await;
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
pub(crate) async fn is_fresh(storage: &Storage, d: &Dataset, fingerprint: &str) -> bool {
    let Ok(Some(stored)) = storage.read_json::<Stored>(&storage.fingerprint_key(&d.name)).await else { return false };
    let Ok(version) = storage.delta_version(&storage.table_key(&d.name)).await else { return false };
    stored.fingerprint == fingerprint && stored.table_version == version
}

/// Records that the view's table, at its current version, holds the result of `fingerprint`.
pub(crate) async fn record(storage: &Storage, d: &Dataset, fingerprint: String) -> Result<()> {
    let stored = Stored { fingerprint, table_version: storage.delta_version(&storage.table_key(&d.name)).await? };
    storage.write_json(&storage.fingerprint_key(&d.name), &stored).await
}
