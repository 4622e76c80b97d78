//! The graph rules, one concern each. A rule reads the [`Graph`] and adds what it finds to
//! [`Problems`], each problem charged to the dataset it makes fail; `Pipeline::validate` runs them
//! all and reports every problem at once.

use std::collections::{BTreeMap, BTreeSet};

use super::{did_you_mean, Graph, Problems};
use crate::error::Diagnostic;
use crate::event_time::shape;
use crate::ir::{Dataset, DatasetKind, Flow, OutputMode, QualifiedName, Read};

/// A rule: what it finds in a graph.
pub(crate) type Rule = fn(&Graph<'_>, &mut Problems);

/// Every rule, in the order their problems are found (they are reported in file order).
pub(crate) const RULES: [Rule; 10] = [
    datasets_are_defined_once,
    expectations_are_named_once_per_dataset,
    output_modes_are_for_streaming_tables,
    flows_are_defined_once,
    flows_write_to_defined_tables_and_sinks,
    each_flow_kind_follows_its_own_rules,
    reads_name_readable_datasets,
    views_are_read_as_they_are_defined,
    event_time_is_what_spark_accepts,
    each_dataset_has_the_flows_its_kind_takes,
];

fn datasets_are_defined_once(g: &Graph<'_>, out: &mut Problems) {
    for d in &g.p.datasets {
        // The graph knows each name by its first definition.
        let first = g.by_name[&d.name];
        if !std::ptr::eq(first, d) {
            let m = format!("`{}` is defined more than once", d.name);
            out.add(
                Some(&d.name),
                Diagnostic::at(&d.location, m).with_hint(format!("first defined at {}", first.location)),
            );
        }
    }
}

fn expectations_are_named_once_per_dataset(g: &Graph<'_>, out: &mut Problems) {
    for d in &g.p.datasets {
        let mut seen = BTreeSet::new();
        for e in &d.expectations {
            if !seen.insert(&e.name) {
                let m = format!("expectation `{}` is declared twice on `{}`", e.name, d.name);
                out.add(Some(&d.name), Diagnostic::at(&e.location, m));
            }
        }
    }
}

fn output_modes_are_for_streaming_tables(g: &Graph<'_>, out: &mut Problems) {
    for d in g.p.datasets.iter().filter(|d| d.output_mode.is_some() && d.kind != DatasetKind::StreamingTable) {
        let m = format!("an output mode applies to streaming tables, not to {} `{}`", d.kind, d.name);
        out.add(Some(&d.name), Diagnostic::at(&d.location, m));
    }
}

fn flows_are_defined_once(g: &Graph<'_>, out: &mut Problems) {
    let mut first: BTreeMap<_, &Flow> = BTreeMap::new();
    for f in &g.p.flows {
        match first.get(&f.name) {
            // A duplicated dataset's implicit flows are that dataset's problem, said once.
            Some(_) if f.implicit && g.duplicated.contains(&f.target) => {}
            Some(prev) => out.add(
                Some(&f.target),
                Diagnostic::at(&f.location, format!("flow `{}` is defined more than once", f.name))
                    .with_hint(format!("first defined at {}", prev.location)),
            ),
            None => {
                first.insert(&f.name, f);
            }
        }
    }
}

/// Whether `f` writes to `target` as an explicit flow into something other than a streaming
/// table or sink (which only their own query fills).
fn explicit_into_non_table(f: &Flow, target: &Dataset) -> bool {
    !f.implicit && !target.kind.takes_flows()
}

fn flows_write_to_defined_tables_and_sinks(g: &Graph<'_>, out: &mut Problems) {
    for f in &g.p.flows {
        match g.by_name.get(&f.target) {
            None => {
                let mut d = Diagnostic::at(
                    &f.location,
                    format!("flow `{}` writes to `{}`, which is not defined", f.name, f.target),
                );
                if let Some(m) = did_you_mean(&f.target.to_string(), &g.names) {
                    d = d.with_hint(format!("did you mean `{m}`?"));
                }
                out.add(Some(&f.target), d);
            }
            Some(target) if explicit_into_non_table(f, target) => out.add(
                Some(&f.target),
                Diagnostic::at(
                    &f.location,
                    format!(
                        "flow `{}` writes to {} `{}`; flows can only write to streaming tables and sinks",
                        f.name, target.kind, f.target
                    ),
                )
                .with_hint("make the target a STREAMING TABLE"),
            ),
            Some(_) => {}
        }
    }
}

fn each_flow_kind_follows_its_own_rules(g: &Graph<'_>, out: &mut Problems) {
    for (f, target) in g.flows_with_targets() {
        for d in f.kind.problems(f, target) {
            out.add(Some(&f.target), d);
        }
    }
}

fn reads_name_readable_datasets(g: &Graph<'_>, out: &mut Problems) {
    for (f, target) in g.flows_with_targets() {
        for r in &f.query().reads {
            let Read::Dataset { name, streaming, location, .. } = r else { continue };
            let Some(src) = g.by_name.get(name) else {
                let mut d = Diagnostic::at(location, format!("`{name}` is not defined in this pipeline"));
                if let Some(m) = did_you_mean(&name.to_string(), &g.names) {
                    d = d.with_hint(format!("did you mean `{m}`?"));
                } else {
                    d = d.with_hint(format!(
                        "a table from outside the pipeline is read from local data bound in {}: `tables: {{{name}: {{path: …}}}}`",
                        crate::frontend::bindings::LOCAL_FILE
                    ));
                }
                out.add(Some(&f.target), d);
                continue;
            };
            if *streaming && src.kind == DatasetKind::MaterializedView {
                let d = Diagnostic::at(
                    location,
                    format!("`STREAM({name})` reads a materialized view, which is recomputed and cannot be streamed"),
                )
                .with_hint(format!("read it in batch (`FROM {}`) or make it a streaming table", src.name.name));
                out.add(Some(&f.target), d);
            }
            if src.kind == DatasetKind::Sink {
                out.add(Some(&f.target), Diagnostic::at(location, format!("`{name}` is a sink; sinks cannot be read")));
            }
            if src.kind == DatasetKind::TemporaryView && target.kind == DatasetKind::PersistentView {
                let d = Diagnostic::at(
                    location,
                    format!(
                        "view `{}` reads temporary view `{name}`; a persistent view can only read persistent datasets",
                        f.target
                    ),
                )
                .with_hint("make it a temporary view too, or the source a persistent one");
                out.add(Some(&f.target), d);
            }
        }
    }
}

/// A view whose query reads a stream is a streaming view: it is read with `STREAM(v)`, by a
/// streaming flow, and a view over batch reads is read in batch. Spark refuses either mix
/// (INCOMPATIBLE_STREAMING_VIEW_READ, INCOMPATIBLE_BATCH_VIEW_READ); a persistent view, stored
/// in the catalog, cannot read a stream at all (STREAMING_RELATION_FOR_PERSISTED_VIEW).
fn views_are_read_as_they_are_defined(g: &Graph<'_>, out: &mut Problems) {
    // One pass over the flows, not one per read of a view.
    let streaming_views: BTreeSet<&QualifiedName> = g
        .flows_with_targets()
        .filter(|(f, target)| target.kind.is_view() && f.query().is_streaming())
        .map(|(f, _)| &f.target)
        .collect();
    for (f, target) in g.flows_with_targets() {
        if target.kind == DatasetKind::PersistentView && f.query().is_streaming() {
            let d = Diagnostic::at(
                &f.location,
                format!(
                    "persistent view `{}` reads a stream; a view in the catalog can only read in batch",
                    target.name
                ),
            )
            .with_hint(
                "make it a TEMPORARY VIEW (read with STREAM(…) by streaming tables), or read its sources in batch",
            );
            out.add(Some(&f.target), d);
        }
        for r in &f.query().reads {
            let Read::Dataset { name, streaming, location, .. } = r else { continue };
            let Some(src) = g.by_name.get(name).filter(|s| s.kind.is_view()) else { continue };
            let short = &src.name.name;
            let problem = match (*streaming, streaming_views.contains(&src.name)) {
                (true, false) => Diagnostic::at(
                    location,
                    format!("`STREAM({short})` reads view `{name}`, which reads no stream (a batch view)"),
                )
                .with_hint(format!(
                    "read it in batch (`FROM {short}`), or make the view read its source with STREAM(…)"
                )),
                (false, true) => Diagnostic::at(
                    location,
                    format!("`{short}` is a streaming view (its query reads a stream); read it with `STREAM({short})`"),
                )
                .with_hint("only flows into streaming tables and sinks read streams; a materialized view reads the table the stream feeds"),
                _ => continue,
            };
            out.add(Some(&f.target), problem);
        }
    }
}

fn event_time_is_what_spark_accepts(g: &Graph<'_>, out: &mut Problems) {
    for (f, target) in g.flows_with_targets() {
        for d in event_time_problems(f, target) {
            out.add(Some(&f.target), d);
        }
    }
}

fn each_dataset_has_the_flows_its_kind_takes(g: &Graph<'_>, out: &mut Problems) {
    let mut flows: BTreeMap<_, usize> = BTreeMap::new();
    for (f, target) in g.flows_with_targets() {
        if !explicit_into_non_table(f, target) {
            *flows.entry(&f.target).or_default() += 1;
        }
    }
    for d in g.p.datasets.iter().filter(|d| !g.duplicated.contains(&d.name)) {
        let n = flows.get(&d.name).copied().unwrap_or(0);
        let problem = match d.kind {
            DatasetKind::MaterializedView | DatasetKind::TemporaryView | DatasetKind::PersistentView if n > 1 => {
                Some(format!("{} `{}` has {n} flows; it must have exactly one (its query)", d.kind, d.name))
            }
            DatasetKind::StreamingTable | DatasetKind::Sink if n == 0 => {
                Some(format!("{} `{}` has no flow writing to it", d.kind, d.name))
            }
            DatasetKind::MaterializedView
            | DatasetKind::TemporaryView
            | DatasetKind::PersistentView
            | DatasetKind::StreamingTable
            | DatasetKind::Sink => None,
        };
        if let Some(m) = problem {
            let hint = match n {
                0 => "add `CREATE FLOW … AS INSERT INTO …`",
                _ => "use a streaming table for several flows",
            };
            out.add(Some(&d.name), Diagnostic::at(&d.location, m).with_hint(hint));
        }
    }
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
    let into_stream = target.kind.takes_flows();
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
