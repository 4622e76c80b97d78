//! `thund graph`: the pipeline's dependency graph as text, Graphviz dot, Mermaid or JSON.

use std::fmt::Write;

use serde_json::json;

use crate::ir::{DatasetKind, Pipeline, Read};

/// Output formats of `thund graph`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GraphFormat {
    /// Indented arrows, one flow a line.
    Text,
    /// Graphviz.
    Dot,
    /// Mermaid flowchart.
    Mermaid,
    /// Nodes and edges as JSON.
    Json,
}

fn edges(p: &Pipeline) -> Vec<(String, String, String, bool)> {
    // (source, target, flow, streaming); file sources are nodes named by their path.
    let mut out = Vec::new();
    for f in &p.flows {
        for r in &f.query().reads {
            let (src, streaming) = match r {
                Read::Dataset { name, streaming, .. } => (name.name.clone(), *streaming),
                Read::Files(fs) => (format!("{}:{}", fs.format, fs.path), fs.streaming),
            };
            out.push((src, f.target.name.clone(), f.name.name.clone(), streaming));
        }
    }
    out
}

fn shape(kind: DatasetKind) -> (&'static str, &'static str) {
    // (dot shape, mermaid brackets)
    match kind {
        DatasetKind::MaterializedView => ("box", "[]"),
        DatasetKind::StreamingTable => ("box3d", "[()]"),
        DatasetKind::TemporaryView | DatasetKind::PersistentView => ("ellipse", "()"),
        DatasetKind::Sink => ("cds", ">]"),
    }
}

fn mermaid_id(s: &str) -> String {
    s.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect()
}

/// Renders the graph.
pub fn render(p: &Pipeline, format: GraphFormat) -> String {
    let mut s = String::new();
    match format {
        GraphFormat::Text => {
            let _ = writeln!(s, "pipeline {}", p.name);
            for d in &p.datasets {
                let _ = writeln!(s, "  {} ({})", d.name, d.kind);
            }
            for (src, dst, flow, streaming) in edges(p) {
                let arrow = if streaming { "~~>" } else { "-->" };
                let via = if flow == dst { String::new() } else { format!("  [flow {flow}]") };
                let _ = writeln!(s, "  {src} {arrow} {dst}{via}");
            }
        }
        GraphFormat::Dot => {
            let _ = writeln!(s, "digraph \"{}\" {{\n  rankdir=LR;", p.name.replace('"', "'"));
            for d in &p.datasets {
                let _ = writeln!(s, "  \"{}\" [shape={}];", d.name.name, shape(d.kind).0);
            }
            for (src, dst, _, streaming) in edges(p) {
                let style = if streaming { " [style=dashed]" } else { "" };
                let _ = writeln!(s, "  \"{src}\" -> \"{dst}\"{style};");
            }
            s.push_str("}\n");
        }
        GraphFormat::Mermaid => {
            s.push_str("flowchart LR\n");
            for d in &p.datasets {
                let (open, close) = shape(d.kind).1.split_at(shape(d.kind).1.len() / 2);
                let _ = writeln!(s, "  {}{open}\"{}\"{close}", mermaid_id(&d.name.name), d.name.name);
            }
            for (src, dst, _, streaming) in edges(p) {
                let arrow = if streaming { "-.->" } else { "-->" };
                let _ = writeln!(s, "  {} {arrow} {}", mermaid_id(&src), mermaid_id(&dst));
            }
        }
        GraphFormat::Json => {
            let nodes: Vec<_> = p
                .datasets
                .iter()
                .map(|d| json!({"name": d.name.to_string(), "kind": d.kind, "location": d.location.to_string()}))
                .collect();
            let edges: Vec<_> = edges(p)
                .into_iter()
                .map(
                    |(src, dst, flow, streaming)| json!({"from": src, "to": dst, "flow": flow, "streaming": streaming}),
                )
                .collect();
            s = serde_json::to_string_pretty(&json!({"pipeline": p.name, "nodes": nodes, "edges": edges}))
                .unwrap_or_default();
            s.push('\n');
        }
    }
    s
}
