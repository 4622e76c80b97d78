//! `Pipeline::validate`: every graph-level problem at once, each with file:line and a hint.
//!
//! Validation is a list of small rules (`rules::RULES`), one concern each, run over the same
//! [`Graph`]; a kind's own rules live with the kind (`FlowKind::problems`). Then the graph's
//! cycles, and a note naming what only fails through an upstream problem.

mod rules;

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Diagnostic, Result, ThundError};
use crate::ir::{Dataset, Flow, Pipeline, QualifiedName, Read};

/// The closest candidate within a small edit distance, for "did you mean".
pub(crate) fn did_you_mean<'a, I, S>(wanted: &str, candidates: I) -> Option<String>
where
    I: IntoIterator<Item = &'a S>,
    S: AsRef<str> + 'a + ?Sized,
{
    let limit = (wanted.chars().count() / 3).max(2);
    candidates
        .into_iter()
        .map(|c| (levenshtein(wanted, c.as_ref()), c.as_ref().to_string()))
        .filter(|(d, _)| *d <= limit)
        .min()
        .map(|(_, c)| c)
}

fn levenshtein(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur.push(sub.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// Dataset-level dependencies: for each dataset, the datasets its flows read.
pub fn dependencies(p: &Pipeline) -> BTreeMap<&QualifiedName, BTreeSet<&QualifiedName>> {
    let mut deps: BTreeMap<&QualifiedName, BTreeSet<&QualifiedName>> =
        p.datasets.iter().map(|d| (&d.name, BTreeSet::new())).collect();
    for f in &p.flows {
        for r in &f.query().reads {
            if let Read::Dataset { name, .. } = r {
                deps.entry(&f.target).or_default().insert(name);
            }
        }
    }
    deps
}

/// The reverse of `deps`: for each name read, the datasets that read it.
pub fn readers<'a>(
    deps: &BTreeMap<&'a QualifiedName, BTreeSet<&'a QualifiedName>>,
) -> BTreeMap<&'a QualifiedName, Vec<&'a QualifiedName>> {
    let mut readers: BTreeMap<&QualifiedName, Vec<&QualifiedName>> = BTreeMap::new();
    for (n, ds) in deps {
        for d in ds {
            readers.entry(*d).or_default().push(n);
        }
    }
    readers
}

/// A cycle in `deps` as a path `a -> b -> a`, if any. Depth-first with an explicit stack, so a
/// 100,000-dataset chain needs no deep recursion.
fn find_cycle<'a>(deps: &BTreeMap<&'a QualifiedName, BTreeSet<&'a QualifiedName>>) -> Option<Vec<&'a QualifiedName>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    let mut marks: BTreeMap<&QualifiedName, Mark> = BTreeMap::new();
    for start in deps.keys() {
        if marks.contains_key(start) {
            continue;
        }
        // The path being explored, each node with the inputs still to visit.
        let mut path: Vec<(&QualifiedName, Vec<&QualifiedName>)> = Vec::new();
        let inputs = |n: &QualifiedName| -> Vec<&'a QualifiedName> {
            // Reversed, so popping visits inputs in name order.
            deps.get(n).into_iter().flatten().filter(|d| deps.contains_key(*d)).rev().copied().collect()
        };
        marks.insert(start, Mark::Open);
        path.push((start, inputs(start)));
        while let Some((_, todo)) = path.last_mut() {
            let Some(next) = todo.pop() else {
                if let Some((done, _)) = path.pop() {
                    marks.insert(done, Mark::Done);
                }
                continue;
            };
            match marks.get(next) {
                Some(Mark::Done) => {}
                Some(Mark::Open) => {
                    let from = path.iter().position(|(n, _)| *n == next).unwrap_or(0);
                    let mut cycle: Vec<&QualifiedName> = path[from..].iter().map(|(n, _)| *n).collect();
                    cycle.push(next);
                    return Some(cycle);
                }
                None => {
                    marks.insert(next, Mark::Open);
                    path.push((next, inputs(next)));
                }
            }
        }
    }
    None
}

impl Pipeline {
    /// Checks the pipeline's graph invariants and returns every problem found, in file order.
    pub fn validate(&self) -> Result<()> {
        let graph = Graph::new(self);
        let mut problems = Problems::default();
        for rule in rules::RULES {
            rule(&graph, &mut problems);
        }
        let deps = dependencies(self);
        let mut cycle_members = Vec::new();
        if let Some(cycle) = find_cycle(&deps) {
            cycle_members = cycle.iter().map(|n| (*n).clone()).collect();
            let path: Vec<String> = cycle.iter().map(|n| n.name.clone()).collect();
            let msg = format!("the pipeline has a cycle: {}", path.join(" -> "));
            let d = match graph.by_name.get(cycle[0]) {
                Some(d) => Diagnostic::at(&d.location, msg),
                None => Diagnostic::global(msg),
            };
            problems.add(Some(cycle[0]), d.with_hint("a dataset cannot depend on itself, directly or through others"));
        }
        if problems.0.is_empty() {
            return Ok(());
        }
        // Say which datasets are only affected through an upstream problem, so the user fixes
        // the cause rather than chasing every symptom.
        let mut failed: BTreeSet<QualifiedName> = problems.0.iter().filter_map(|(n, _)| n.clone()).collect();
        failed.extend(cycle_members);
        let downstream = downstream_of(&deps, &failed);
        let mut diags: Vec<Diagnostic> = problems.0.into_iter().map(|(_, d)| d).collect();
        // In the order of the files, as a reader goes through them (a stable sort: problems at
        // one place keep the order their rules found them in).
        diags.sort_by(|a, b| match (&a.location, &b.location) {
            (Some(x), Some(y)) => (&x.file, x.line, x.column).cmp(&(&y.file, y.line, y.column)),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        });
        if !downstream.is_empty() {
            let names: Vec<String> = downstream.iter().map(|n| n.name.clone()).collect();
            diags.push(Diagnostic::global(format!(
                "downstream of the problems above (fine themselves, but they would be skipped): {}",
                names.join(", ")
            )));
        }
        Err(ThundError::Validation(diags))
    }
}

/// What the rules look at: the pipeline and its datasets by name.
pub(crate) struct Graph<'p> {
    pub p: &'p Pipeline,
    /// Each dataset by name (the first definition of a duplicated name).
    pub by_name: BTreeMap<&'p QualifiedName, &'p Dataset>,
    /// Names defined more than once: reported once, and their flows not again as duplicate
    /// flows or as too many flows.
    pub duplicated: BTreeSet<QualifiedName>,
    /// Every dataset's name, for "did you mean".
    pub names: Vec<String>,
}

impl<'p> Graph<'p> {
    fn new(p: &'p Pipeline) -> Self {
        let mut by_name = BTreeMap::new();
        let mut duplicated = BTreeSet::new();
        for d in &p.datasets {
            if by_name.contains_key(&d.name) {
                duplicated.insert(d.name.clone());
            } else {
                by_name.insert(&d.name, d);
            }
        }
        let names = p.datasets.iter().map(|d| d.name.to_string()).collect();
        Graph { p, by_name, duplicated, names }
    }

    /// The flows whose target is defined, with it.
    pub(crate) fn flows_with_targets(&self) -> impl Iterator<Item = (&'p Flow, &'p Dataset)> + '_ {
        self.p.flows.iter().filter_map(|f| self.by_name.get(&f.target).map(|t| (f, *t)))
    }
}

/// Problems found so far, each with the dataset it makes fail.
#[derive(Default)]
pub(crate) struct Problems(Vec<(Option<QualifiedName>, Diagnostic)>);

impl Problems {
    /// A problem of `dataset` (`None`: of the project).
    pub(crate) fn add(&mut self, dataset: Option<&QualifiedName>, d: Diagnostic) {
        self.0.push((dataset.cloned(), d));
    }
}

/// Datasets that read, directly or not, from one of `roots`, excluding the roots.
pub(crate) fn downstream_of(
    deps: &BTreeMap<&QualifiedName, BTreeSet<&QualifiedName>>,
    roots: &BTreeSet<QualifiedName>,
) -> BTreeSet<QualifiedName> {
    let readers = readers(deps);
    let mut out = BTreeSet::new();
    let mut stack: Vec<&QualifiedName> = roots.iter().collect();
    while let Some(n) = stack.pop() {
        for r in readers.get(n).into_iter().flatten() {
            if !roots.contains(*r) && out.insert((*r).clone()) {
                stack.push(r);
            }
        }
    }
    out
}

#[cfg(test)]
mod scale_tests {
    use crate::ir::{FlowKind, QualifiedName, Read};

    /// A chain of `n` materialized views, each reading the one before, made from a parsed pair.
    fn chain(n: usize, close_the_loop: bool) -> crate::ir::Pipeline {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("spark-pipeline.yml"),
            "name: c\nlibraries:\n  - glob:\n      include: '*.sql'\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("a.sql"),
            "CREATE MATERIALIZED VIEW d0 AS SELECT 1 AS x;\nCREATE MATERIALIZED VIEW d1 AS SELECT x FROM d0;\n",
        )
        .unwrap();
        let mut p = crate::frontend::load(dir.path()).unwrap();
        let (dataset, flow) = (p.datasets[1].clone(), p.flows[1].clone());
        let name = |i: usize| QualifiedName::new("spark_catalog", "default", &format!("d{i}"));
        for i in 2..n {
            let mut d = dataset.clone();
            d.name = name(i);
            let mut f = flow.clone();
            f.name = name(i);
            f.target = name(i);
            if let FlowKind::Append { query, .. } = &mut f.kind {
                if let Some(Read::Dataset { name: read, .. }) = query.reads.first_mut() {
                    *read = name(i - 1);
                }
            }
            p.datasets.push(d);
            p.flows.push(f);
        }
        if close_the_loop {
            if let FlowKind::Append { query, .. } = &mut p.flows[0].kind {
                query.reads.push(query_read(&flow, name(n - 1)));
            }
        }
        p
    }

    fn query_read(template: &crate::ir::Flow, to: QualifiedName) -> Read {
        let mut r = template.query().reads[0].clone();
        if let Read::Dataset { name, .. } = &mut r {
            *name = to;
        }
        r
    }

    #[test]
    fn a_100000_dataset_chain_validates_plans_and_reports_its_cycle_without_deep_recursion() {
        let p = chain(100_000, false);
        p.validate().unwrap();
        let planned = crate::plan::plan(&p, &crate::plan::Selection::default()).unwrap();
        assert_eq!(planned.stages.len(), 100_000);
        let looped = chain(100_000, true);
        let e = looped.validate().unwrap_err().to_string();
        assert!(e.contains("the pipeline has a cycle: d0 -> d99999 -> d99998"), "{}", &e[..e.len().min(300)]);
    }
}
