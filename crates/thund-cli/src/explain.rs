//! `thund explain`: how each materialized view's next refresh would go, and why — the native
//! backend's refresh planning, taken by a dry run (read-only) and written for a person.

use std::path::Path;

use anyhow::bail;
use knut_thund::backend::{ExecBackend, RunOptions, RunPhase};
use knut_thund::ir::{Dataset, DatasetKind};
use knut_thund::prepare::prepare_for;
use thund_native::NativeBackend;

use crate::commands::{in_project, load};
use crate::failure::Failure;

/// `thund explain`: a native dry run (read-only: it plans every query and reads the views'
/// records, writes nothing), then, per materialized view, the technique its next refresh would
/// take and what the others would need. A view whose refresh a run would refuse (`REFRESH
/// POLICY INCREMENTAL STRICT` on a view that cannot be incremental) makes it exit 1.
pub(crate) fn explain(start: &Path, views: &[String]) -> anyhow::Result<()> {
    let p = load(start)?;
    let mvs: Vec<&Dataset> = p.datasets.iter().filter(|d| d.kind == DatasetKind::MaterializedView).collect();
    let wanted = |d: &Dataset, v: &str| {
        let v = v.to_lowercase();
        d.name.to_string() == v || d.name.name == v || format!("{}.{}", d.name.database, d.name.name) == v
    };
    let unknown: Vec<&String> = views.iter().filter(|v| !mvs.iter().any(|d| wanted(d, v))).collect();
    if !unknown.is_empty() {
        let names: Vec<&str> = mvs.iter().map(|d| d.name.name.as_str()).collect();
        bail!(Failure::usage(format!(
            "no materialized view named {} (this pipeline's: {})",
            unknown.iter().map(|v| format!("`{v}`")).collect::<Vec<_>>().join(", "),
            if names.is_empty() { "none".to_string() } else { names.join(", ") }
        )));
    }
    let chosen: Vec<&Dataset> =
        mvs.into_iter().filter(|d| views.is_empty() || views.iter().any(|v| wanted(d, v))).collect();
    let backend = NativeBackend::new();
    let options = RunOptions { dry: true, ..RunOptions::default() };
    let prepared = prepare_for(&backend, &p, &options).map_err(|e| in_project(start, e))?;
    let mut handle = backend.start(prepared).map_err(|e| in_project(start, e))?;
    let mut events = Vec::new();
    while let Some(evs) = handle.poll_events() {
        events.extend(evs);
    }
    let summary = handle.finish().map_err(|e| in_project(start, e))?;
    let mut refused = 0;
    for d in chosen {
        let name = d.name.to_string();
        let planning = events
            .iter()
            .filter(|e| p.flows_into(&d.name).any(|f| f.name.to_string() == e.element))
            .find_map(|e| e.details.planning_information.as_ref());
        let policy = d.details.refresh_policy.unwrap_or_default().as_sql();
        println!("{name} ({}), REFRESH POLICY {policy}", d.location);
        let outcome = summary.flows.iter().find(|f| f.target == name);
        if let Some(error) = outcome.and_then(|o| o.error.as_ref()) {
            refused += 1;
            println!("  a refresh would fail: {error}");
        }
        let Some(planning) = planning else {
            if outcome.is_some_and(|o| o.phase == RunPhase::Skipped) {
                println!("  not planned: a dataset it reads cannot be");
            }
            continue;
        };
        if let Some(t) = planning.chosen() {
            println!("  next refresh: {}", technique_label(&t.maintenance_type));
        }
        for t in &planning.technique_information {
            let how = match (t.is_chosen, t.is_applicable) {
                (true, _) => "chosen".to_string(),
                (false, true) => "applies".to_string(),
                (false, false) => {
                    let why: Vec<String> =
                        t.incrementalization_issues.iter().map(|i| format!("{}: {}", i.issue_type, i.detail)).collect();
                    format!("no ({})", why.join("; "))
                }
            };
            println!("  {:<20}{how}", technique_label(&t.maintenance_type));
        }
    }
    if refused > 0 {
        bail!(Failure::failed(format!("{refused} materialized view(s) would fail to refresh")));
    }
    Ok(())
}

/// `MAINTENANCE_TYPE_GROUP_AGGREGATE` as `group aggregate`.
fn technique_label(maintenance_type: &str) -> String {
    maintenance_type
        .trim_start_matches("MAINTENANCE_TYPE_")
        .to_lowercase()
        .replace('_', " ")
        .replace("append only", "append-only")
        .replace("no op", "no-op")
}
