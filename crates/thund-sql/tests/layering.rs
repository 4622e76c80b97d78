//! Spark SQL's semantics are a library of one concern: this crate depends on DataFusion,
//! `datafusion-spark`, sqlparser and the pipeline core, never on delta-rs, object storage or
//! a backend's streaming. Checked twice: in the dependency graph `Cargo.lock` records, and in
//! the sources (a path written out in full would not show in the graph's names alone).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Packages this crate must not depend on, directly or through another. (`object_store` comes
/// with DataFusion's file sources; that its sources never name it is checked below.)
const FORBIDDEN_PACKAGES: [&str; 3] = ["deltalake", "deltalake-core", "thund-native"];

/// Paths its sources must not name.
const FORBIDDEN_PATHS: [&str; 5] = ["deltalake::", "object_store::", "thund_native::", "streaming::", "storage::"];

/// Every package `Cargo.lock` names, with the packages it depends on (by name).
fn lock_graph() -> BTreeMap<String, Vec<String>> {
    let lock = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.lock");
    let text = std::fs::read_to_string(&lock).unwrap_or_else(|e| panic!("{}: {e}", lock.display()));
    let mut graph: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for package in text.split("[[package]]").skip(1) {
        let mut name = None;
        let mut deps = Vec::new();
        let mut in_deps = false;
        for line in package.lines() {
            let line = line.trim();
            if let Some(n) = line.strip_prefix("name = ") {
                name = Some(n.trim_matches('"').to_string());
            } else if line.starts_with("dependencies = [") {
                in_deps = true;
            } else if in_deps && line.starts_with(']') {
                in_deps = false;
            } else if in_deps {
                // `"name"` or `"name version"`.
                let dep = line.trim_matches(|c| c == '"' || c == ',');
                deps.push(dep.split(' ').next().unwrap_or(dep).to_string());
            }
        }
        graph.entry(name.expect("a package has a name")).or_default().extend(deps);
    }
    graph
}

/// The packages `root` depends on, directly or not.
fn reachable(graph: &BTreeMap<String, Vec<String>>, root: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![root.to_string()];
    while let Some(p) = todo.pop() {
        for d in graph.get(&p).into_iter().flatten() {
            if seen.insert(d.clone()) {
                todo.push(d.clone());
            }
        }
    }
    seen
}

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            sources(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn depends_on_no_storage_and_no_backend() {
    let graph = lock_graph();
    let deps = reachable(&graph, "thund-sql");
    assert!(deps.contains("datafusion"), "the lock file's graph was not read: {deps:?}");
    let found: Vec<&str> = FORBIDDEN_PACKAGES.iter().copied().filter(|p| deps.contains(*p)).collect();
    assert!(found.is_empty(), "thund-sql depends on {found:?}");
}

#[test]
fn its_sources_name_no_storage_and_no_backend() {
    let mut files = Vec::new();
    sources(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut files);
    assert!(files.len() > 40, "found only {} source files", files.len());
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        for (i, line) in text.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(p) = FORBIDDEN_PATHS.iter().find(|p| line.contains(**p)) {
                found.push(format!("{}:{}: `{p}`: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(found.is_empty(), "thund-sql reaches outside its concern:\n{}", found.join("\n"));
}

#[test]
fn the_checks_see_a_dependency() {
    // The checks above pass when nothing is found: the backend's own graph shows they can fail.
    let graph = lock_graph();
    let native = reachable(&graph, "thund-native");
    assert!(native.contains("deltalake") && native.contains("thund-sql"), "{native:?}");
}
