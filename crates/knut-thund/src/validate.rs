//! `Pipeline::validate`: every graph-level problem at once, each with file:line and a hint.

use std::collections::{BTreeMap, BTreeSet};

use crate::error::{Diagnostic, Result, ThundError};
use crate::event_time::shape;
use crate::ir::{
    ColumnSelection, Dataset, DatasetKind, Flow, FlowKind, OutputMode, Pipeline, QualifiedName, Read, ScdType,
};

/// The closest candidate within a small edit distance, for "did you mean".
pub fn did_you_mean<'a, I, S>(wanted: &str, candidates: I) -> Option<String>
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
                let (done, _) = path.pop().expect("the path is not empty");
                marks.insert(done, Mark::Done);
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
    /// Checks the pipeline's graph invariants and returns every problem found.
    pub fn validate(&self) -> Result<()> {
        let mut problems: Vec<(Option<QualifiedName>, Diagnostic)> = Vec::new();
        let mut by_name = BTreeMap::new();
        // A duplicated name is reported once; its flows are not then reported again as
        // duplicate flows or as too many flows.
        let mut duplicated = BTreeSet::new();
        for d in &self.datasets {
            if let Some(first) = by_name.insert(&d.name, d) {
                duplicated.insert(d.name.clone());
                problems.push((
                    Some(d.name.clone()),
                    Diagnostic::at(&d.location, format!("`{}` is defined more than once", d.name))
                        .with_hint(format!("first defined at {}", first.location)),
                ));
            }
            let mut seen = BTreeSet::new();
            for e in &d.expectations {
                if !seen.insert(&e.name) {
                    problems.push((
                        Some(d.name.clone()),
                        Diagnostic::at(
                            &e.location,
                            format!("expectation `{}` is declared twice on `{}`", e.name, d.name),
                        ),
                    ));
                }
            }
            if d.output_mode.is_some() && d.kind != DatasetKind::StreamingTable {
                problems.push((
                    Some(d.name.clone()),
                    Diagnostic::at(
                        &d.location,
                        format!("an output mode applies to streaming tables, not to {} `{}`", d.kind, d.name),
                    ),
                ));
            }
        }
        let all_names: Vec<String> = self.datasets.iter().map(|d| d.name.to_string()).collect();
        let mut flow_names = BTreeMap::new();
        let mut flows_per_target: BTreeMap<&QualifiedName, usize> = BTreeMap::new();
        for f in &self.flows {
            if let Some(first) = flow_names.insert(&f.name, f) {
                if f.implicit && duplicated.contains(&f.target) {
                    continue;
                }
                problems.push((
                    Some(f.target.clone()),
                    Diagnostic::at(&f.location, format!("flow `{}` is defined more than once", f.name))
                        .with_hint(format!("first defined at {}", first.location)),
                ));
            }
            let Some(target) = by_name.get(&f.target) else {
                let mut d = Diagnostic::at(
                    &f.location,
                    format!("flow `{}` writes to `{}`, which is not defined", f.name, f.target),
                );
                if let Some(m) = did_you_mean(&f.target.to_string(), &all_names) {
                    d = d.with_hint(format!("did you mean `{m}`?"));
                }
                problems.push((Some(f.target.clone()), d));
                continue;
            };
            let explicit_into_non_table =
                !f.implicit && !matches!(target.kind, DatasetKind::StreamingTable | DatasetKind::Sink);
            if !explicit_into_non_table {
                *flows_per_target.entry(&f.target).or_default() += 1;
            }
            if explicit_into_non_table {
                problems.push((
                    Some(f.target.clone()),
                    Diagnostic::at(
                        &f.location,
                        format!(
                            "flow `{}` writes to {} `{}`; flows can only write to streaming tables and sinks",
                            f.name, target.kind, f.target
                        ),
                    )
                    .with_hint("make the target a STREAMING TABLE"),
                ));
            }
            match &f.kind {
                FlowKind::AutoCdc(cdc) => {
                    if target.kind != DatasetKind::StreamingTable {
                        problems.push((
                            Some(f.target.clone()),
                            Diagnostic::at(
                                &f.location,
                                format!("AUTO CDC flow `{}` must write to a streaming table", f.name),
                            ),
                        ));
                    }
                    if cdc.sequence_by.is_none() {
                        problems.push((
                            Some(f.target.clone()),
                            Diagnostic::at(&f.location, format!("AUTO CDC flow `{}` has no `SEQUENCE BY`", f.name))
                                .with_hint("add `SEQUENCE BY <ordering column>` so changes apply in order"),
                        ));
                    }
                    if cdc.scd_type == ScdType::Type1 && cdc.track_history.is_some() {
                        problems.push((
                            Some(f.target.clone()),
                            Diagnostic::at(
                                &f.location,
                                format!("AUTO CDC flow `{}`: `TRACK HISTORY` needs `STORED AS SCD TYPE 2`", f.name),
                            ),
                        ));
                    }
                    if cdc.scd_type == ScdType::Type2 && cdc.apply_as_truncate.is_some() {
                        problems.push((
                            Some(f.target.clone()),
                            Diagnostic::at(
                                &f.location,
                                format!("AUTO CDC flow `{}`: `APPLY AS TRUNCATE WHEN` is only for SCD TYPE 1", f.name),
                            )
                            .with_hint("a history table keeps every version; delete keys with `APPLY AS DELETE WHEN`"),
                        ));
                    }
                    if matches!(cdc.columns, ColumnSelection::Include(ref c) if c.is_empty()) {
                        problems
                            .push((Some(f.target.clone()), Diagnostic::at(&f.location, "AUTO CDC `COLUMNS` is empty")));
                    }
                }
                FlowKind::Once { .. } if target.kind != DatasetKind::StreamingTable => {
                    problems.push((
                        Some(f.target.clone()),
                        Diagnostic::at(
                            &f.location,
                            format!("`INSERT INTO ONCE` flow `{}` must write to a streaming table", f.name),
                        ),
                    ));
                }
                _ => {}
            }
            for r in &f.query().reads {
                let Read::Dataset { name, streaming, location, .. } = r else { continue };
                match by_name.get(name) {
                    None => {
                        let mut d = Diagnostic::at(location, format!("`{name}` is not defined in this pipeline"));
                        if let Some(m) = did_you_mean(&name.to_string(), &all_names) {
                            d = d.with_hint(format!("did you mean `{m}`?"));
                        }
                        problems.push((Some(f.target.clone()), d));
                    }
                    Some(src) => {
                        if *streaming && src.kind == DatasetKind::MaterializedView {
                            problems.push((Some(f.target.clone()), Diagnostic::at(location, format!("`STREAM({name})` reads a materialized view, which is recomputed and cannot be streamed")).with_hint(format!("read it in batch (`FROM {}`) or make it a streaming table", src.name.name))));
                        }
                        if src.kind == DatasetKind::Sink {
                            problems.push((
                                Some(f.target.clone()),
                                Diagnostic::at(location, format!("`{name}` is a sink; sinks cannot be read")),
                            ));
                        }
                        if src.kind == DatasetKind::TemporaryView && target.kind == DatasetKind::PersistentView {
                            problems.push((Some(f.target.clone()), Diagnostic::at(location, format!("view `{}` reads temporary view `{name}`; a persistent view can only read persistent datasets", f.target)).with_hint("make it a temporary view too, or the source a persistent one")));
                        }
                    }
                }
            }
            for problem in event_time_problems(f, target) {
                problems.push((Some(f.target.clone()), problem));
            }
        }
        for d in self.datasets.iter().filter(|d| !duplicated.contains(&d.name)) {
            let n = flows_per_target.get(&d.name).copied().unwrap_or(0);
            let problem = match d.kind {
                DatasetKind::MaterializedView | DatasetKind::TemporaryView | DatasetKind::PersistentView if n > 1 => {
                    Some(format!("{} `{}` has {n} flows; it must have exactly one (its query)", d.kind, d.name))
                }
                DatasetKind::StreamingTable | DatasetKind::Sink if n == 0 => {
                    Some(format!("{} `{}` has no flow writing to it", d.kind, d.name))
                }
                _ => None,
            };
            if let Some(m) = problem {
                let hint = if n == 0 {
                    "add `CREATE FLOW … AS INSERT INTO …`"
                } else {
                    "use a streaming table for several flows"
                };
                problems.push((Some(d.name.clone()), Diagnostic::at(&d.location, m).with_hint(hint)));
            }
        }
        let deps = dependencies(self);
        let mut cycle_members = Vec::new();
        if let Some(cycle) = find_cycle(&deps) {
            cycle_members = cycle.iter().map(|n| (*n).clone()).collect();
            let path: Vec<String> = cycle.iter().map(|n| n.name.clone()).collect();
            let at = by_name.get(cycle[0]).map(|d| d.location.clone());
            let msg = format!("the pipeline has a cycle: {}", path.join(" -> "));
            let d = match at {
                Some(l) => Diagnostic::at(&l, msg),
                None => Diagnostic::global(msg),
            };
            problems.push((
                Some(cycle[0].clone()),
                d.with_hint("a dataset cannot depend on itself, directly or through others"),
            ));
        }
        if problems.is_empty() {
            return Ok(());
        }
        // Say which datasets are only affected through an upstream problem, so the user fixes
        // the cause rather than chasing every symptom.
        let mut failed: BTreeSet<QualifiedName> = problems.iter().filter_map(|(n, _)| n.clone()).collect();
        failed.extend(cycle_members);
        let downstream = downstream_of(&deps, &failed);
        let mut diags: Vec<Diagnostic> = problems.into_iter().map(|(_, d)| d).collect();
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

/// Datasets that read, directly or not, from one of `roots`, excluding the roots.
pub fn downstream_of(
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

/// What Spark refuses about a flow's event time before it runs: malformed delays and windows, a
/// streaming aggregation in append mode whose groups never close (no watermark, or no window on
/// the watermarked column), and distinct aggregates over a stream.
fn event_time_problems(f: &Flow, target: &Dataset) -> Vec<Diagnostic> {
    let q = f.query();
    let mut problems = Vec::new();
    if let Some(Err(d)) = q.event_time.as_ref().map(|et| et.delay_micros()) {
        problems.push(d);
    }
    let shape = match shape(q) {
        Ok(s) => s,
        Err(mut errors) => {
            problems.append(&mut errors);
            return problems;
        }
    };
    let into_stream = matches!(target.kind, DatasetKind::StreamingTable | DatasetKind::Sink);
    let (Some(aggregation), true) = (&shape.aggregation, into_stream && q.is_streaming()) else {
        return problems;
    };
    if let Some(at) = &shape.distinct_aggregate {
        // Spark's own words.
        problems.push(
            Diagnostic::at(at, "distinct aggregations are not supported on streaming DataFrames/Datasets")
                .with_hint("use approx_count_distinct(), or count distinct values in a materialized view downstream"),
        );
    }
    let mode = target.output_mode.unwrap_or(OutputMode::Append);
    let closes = match (&q.event_time, &shape.window) {
        (Some(et), Some(w)) => et.column.eq_ignore_ascii_case(&w.column),
        _ => false,
    };
    if mode == OutputMode::Append && !closes {
        let hint = match (&q.event_time, &shape.window) {
            (Some(et), Some(w)) => format!(
                "the window is on `{}` but the watermark on `{}`; window the watermarked column",
                w.column, et.column
            ),
            (Some(et), None) => format!(
                "group by a window of the watermarked column, e.g. `GROUP BY window({}, '10 minutes')`",
                et.column
            ),
            (None, _) => "add `WATERMARK <event time column> DELAY OF INTERVAL <delay>` after the STREAM source \
                          and group by `window(<column>, '<length>')`, or write the aggregate to a materialized view"
                .to_string(),
        };
        // Spark 4.1's words for the same query (STREAMING_OUTPUT_MODE.UNSUPPORTED_OPERATION).
        problems.push(
            Diagnostic::at(
                aggregation,
                format!(
                    "invalid streaming output mode: append; it is not supported for streaming aggregations without watermark (flow `{}`)",
                    f.name
                ),
            )
            .with_hint(hint),
        );
    }
    problems
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
