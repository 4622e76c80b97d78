//! The planner: topological stages, refresh selection, and which datasets a run touches.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::error::{Result, ThundError};
use crate::ir::{DatasetKind, Pipeline, QualifiedName};
use crate::validate::{dependencies, did_you_mean, readers};

/// What a run should refresh, as the user said it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    /// `--refresh a,b`: refresh these (incrementally) and nothing else.
    pub refresh: Vec<String>,
    /// `--full-refresh a,b`: clear these and reprocess all input.
    pub full_refresh: Vec<String>,
    /// `--full-refresh-all`.
    pub full_refresh_all: bool,
}

/// A checked plan: what runs, in which order, and how.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// Datasets grouped by depth: everything in a stage depends only on earlier stages.
    pub stages: Vec<Vec<QualifiedName>>,
    /// Datasets that run; the others are EXCLUDED.
    pub selected: BTreeSet<QualifiedName>,
    /// Datasets whose data and checkpoints are cleared first.
    pub full_refresh: BTreeSet<QualifiedName>,
}

impl Plan {
    /// Whether `name` runs in this plan.
    pub fn is_selected(&self, name: &QualifiedName) -> bool {
        self.selected.contains(name)
    }
}

/// Orders the (validated) pipeline and applies the selection.
pub fn plan(p: &Pipeline, sel: &Selection) -> Result<Plan> {
    let deps = dependencies(p);
    let depth = depths(&deps);
    let mut stages: Vec<Vec<QualifiedName>> = Vec::new();
    for d in &p.datasets {
        let level = depth.get(&d.name).copied().unwrap_or(0);
        if stages.len() <= level {
            stages.resize(level + 1, Vec::new());
        }
        stages[level].push(d.name.clone());
    }

    if sel.full_refresh_all && (!sel.refresh.is_empty() || !sel.full_refresh.is_empty()) {
        return Err(ThundError::Selection(
            "--full-refresh-all cannot be combined with --refresh or --full-refresh".into(),
        ));
    }
    let refresh = resolve(p, &deps, &sel.refresh)?;
    let full = resolve(p, &deps, &sel.full_refresh)?;
    if let Some(both) = refresh.intersection(&full).next() {
        return Err(ThundError::Selection(format!(
            "`{both}` is selected for both --refresh and --full-refresh; choose one"
        )));
    }
    // A sink's rows live in a place the pipeline does not own: a full refresh could neither
    // clear them nor honestly claim to have replaced them, so naming one is refused.
    let sinks: Vec<String> = p
        .datasets
        .iter()
        .filter(|d| d.kind == DatasetKind::Sink && full.contains(&d.name))
        .map(|d| format!("`{}`", d.name))
        .collect();
    if !sinks.is_empty() {
        return Err(ThundError::Selection(format!(
            "--full-refresh cannot name a sink ({}): its rows are written outside the pipeline's storage, so \
             they cannot be cleared and rewritten; fully refresh the datasets it reads instead",
            sinks.join(", ")
        )));
    }
    let all: BTreeSet<QualifiedName> = p.datasets.iter().map(|d| d.name.clone()).collect();
    let (selected, full_refresh) = if sel.full_refresh_all {
        (all.clone(), all)
    } else if refresh.is_empty() && full.is_empty() {
        (all, BTreeSet::new())
    } else {
        (refresh.union(&full).cloned().collect(), full)
    };
    Ok(Plan { stages, selected, full_refresh })
}

/// Longest-path depth of each dataset (Kahn's algorithm, so a 10,000-long chain needs no deep
/// recursion). Datasets on a cycle keep depth 0; validation reports the cycle.
fn depths<'a>(deps: &BTreeMap<&'a QualifiedName, BTreeSet<&'a QualifiedName>>) -> BTreeMap<&'a QualifiedName, usize> {
    let readers = readers(deps);
    let pending_of = |n: &QualifiedName| deps[n].iter().filter(|d| deps.contains_key(*d)).count();
    let mut pending: BTreeMap<&QualifiedName, usize> = deps.keys().map(|n| (*n, pending_of(n))).collect();
    let mut depth: BTreeMap<&QualifiedName, usize> = deps.keys().map(|n| (*n, 0)).collect();
    let mut ready: Vec<&QualifiedName> = pending.iter().filter(|(_, c)| **c == 0).map(|(n, _)| *n).collect();
    while let Some(n) = ready.pop() {
        let dn = depth[n];
        for r in readers.get(n).into_iter().flatten() {
            let e = depth.entry(*r).or_insert(0);
            *e = (*e).max(dn + 1);
            if let Some(c) = pending.get_mut(*r) {
                *c -= 1;
                if *c == 0 {
                    ready.push(*r);
                }
            }
        }
    }
    depth
}

/// Resolves selectors: `name`, `catalog.db.name`, `+name` (with upstream), `name+` (with
/// downstream). Every unknown name is reported, with a suggestion.
fn resolve(
    p: &Pipeline,
    deps: &BTreeMap<&QualifiedName, BTreeSet<&QualifiedName>>,
    selectors: &[String],
) -> Result<BTreeSet<QualifiedName>> {
    let mut out = BTreeSet::new();
    let mut unknown = Vec::new();
    for raw in selectors.iter().flat_map(|s| s.split(',')).map(str::trim).filter(|s| !s.is_empty()) {
        let up = raw.starts_with('+');
        let down = raw.ends_with('+') && raw.len() > 1;
        let name = raw.trim_start_matches('+').trim_end_matches('+');
        let lname = name.to_ascii_lowercase();
        let hits: Vec<&QualifiedName> = p
            .datasets
            .iter()
            .map(|d| &d.name)
            .filter(|n| {
                n.to_string() == name || n.to_string().eq_ignore_ascii_case(name) || n.name == name || n.name == lname
            })
            .collect();
        let root = match hits.as_slice() {
            [one] => (*one).clone(),
            [] => {
                let names: Vec<String> = p.datasets.iter().map(|d| d.name.name.clone()).collect();
                unknown.push(match did_you_mean(name, &names) {
                    Some(m) => format!("`{name}` (did you mean `{m}`?)"),
                    None => format!("`{name}`"),
                });
                continue;
            }
            many => {
                let names: Vec<String> = many.iter().map(|n| n.to_string()).collect();
                return Err(ThundError::Selection(format!("`{name}` is ambiguous: {}", names.join(", "))));
            }
        };
        if up {
            let mut stack = vec![root.clone()];
            while let Some(n) = stack.pop() {
                for d in deps.get(&n).into_iter().flatten() {
                    if out.insert((*d).clone()) {
                        stack.push((*d).clone());
                    }
                }
            }
        }
        if down {
            let roots = BTreeSet::from([root.clone()]);
            out.extend(crate::validate::downstream_of(deps, &roots));
        }
        out.insert(root);
    }
    if !unknown.is_empty() {
        return Err(ThundError::Selection(format!("not in the pipeline: {}", unknown.join(", "))));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline() -> Pipeline {
        crate::frontend::load_sql(
            "CREATE MATERIALIZED VIEW raw AS SELECT 1 AS x;\n\
             CREATE MATERIALIZED VIEW clean AS SELECT x FROM raw;\n\
             CREATE MATERIALIZED VIEW report AS SELECT x FROM clean;\n\
             CREATE MATERIALIZED VIEW other AS SELECT 2 AS y;",
        )
    }

    fn names(set: &BTreeSet<QualifiedName>) -> Vec<&str> {
        set.iter().map(|n| n.name.as_str()).collect()
    }

    fn sel(refresh: &[&str], full: &[&str], all: bool) -> Selection {
        Selection {
            refresh: refresh.iter().map(|s| s.to_string()).collect(),
            full_refresh: full.iter().map(|s| s.to_string()).collect(),
            full_refresh_all: all,
        }
    }

    #[test]
    fn stages_follow_dependencies() {
        let plan = plan(&pipeline(), &Selection::default()).unwrap();
        let stages: Vec<Vec<&str>> = plan.stages.iter().map(|s| s.iter().map(|n| n.name.as_str()).collect()).collect();
        assert_eq!(stages, vec![vec!["raw", "other"], vec!["clean"], vec!["report"]]);
        assert_eq!(plan.selected.len(), 4);
        assert!(plan.full_refresh.is_empty());
    }

    #[test]
    fn graph_selectors_add_upstream_and_downstream() {
        let p = pipeline();
        assert_eq!(names(&plan(&p, &sel(&["+clean"], &[], false)).unwrap().selected), ["clean", "raw"]);
        assert_eq!(names(&plan(&p, &sel(&["clean+"], &[], false)).unwrap().selected), ["clean", "report"]);
        let full = plan(&p, &sel(&["other"], &["spark_catalog.default.raw"], false)).unwrap();
        assert_eq!(names(&full.selected), ["other", "raw"]);
        assert_eq!(names(&full.full_refresh), ["raw"]);
        let all = plan(&p, &sel(&[], &[], true)).unwrap();
        assert_eq!(all.full_refresh.len(), 4);
    }

    #[test]
    fn rejects_unknown_and_conflicting_selections() {
        let p = pipeline();
        let e = plan(&p, &sel(&["claen"], &[], false)).unwrap_err().to_string();
        assert!(e.contains("`claen` (did you mean `clean`?)"), "{e}");
        let e = plan(&p, &sel(&["raw"], &["raw"], false)).unwrap_err().to_string();
        assert!(e.contains("both --refresh and --full-refresh"), "{e}");
        let e = plan(&p, &sel(&["raw"], &[], true)).unwrap_err().to_string();
        assert!(e.contains("cannot be combined"), "{e}");
    }

    #[test]
    fn a_full_refresh_of_a_sink_is_refused() {
        let p = crate::frontend::load_sql(
            "CREATE SINK out USING parquet OPTIONS (path 'out');\n\
             CREATE STREAMING TABLE src AS SELECT * FROM STREAM read_files('in', format => 'json');\n\
             CREATE FLOW f AS INSERT INTO out BY NAME SELECT * FROM STREAM(src);",
        );
        for selector in ["out", "src+"] {
            let e = plan(&p, &sel(&[], &[selector], false)).unwrap_err().to_string();
            assert!(e.contains("--full-refresh cannot name a sink (`spark_catalog.default.out`)"), "{selector}: {e}");
        }
        assert_eq!(names(&plan(&p, &sel(&[], &["src"], false)).unwrap().full_refresh), ["src"]);
    }
}
