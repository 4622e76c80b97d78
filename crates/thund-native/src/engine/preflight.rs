//! What a native run would refuse before reading any data, found without running it, for
//! `thund validate`: a function neither Spark nor the engine has (a Databricks-only one such as
//! `ai_classify`), and a file source whose path does not exist, matches no file or cannot be
//! read. Each is a problem at its file and line, all of them at once.

use knut_thund::error::Diagnostic;
use knut_thund::ir::{Pipeline, Read, SourceLocation};

use crate::delta::storage::resolve_project_path;
use crate::engine::files::{matching, path_glob};

/// Every problem a native run of `p` would meet before reading data, and notes on what only
/// the Spark backend runs.
pub fn preflight(p: &Pipeline) -> (Vec<Diagnostic>, Vec<Diagnostic>) {
    let (mut problems, mut notes) = (Vec::new(), Vec::new());
    let ctx = super::pipeline_context(p, &super::EngineOptions::default());
    for f in &p.flows {
        let q = f.query();
        // A project loaded without its parses (`validate`'s, to stay small) parses one query
        // at a time here.
        let reparsed = match q.ast.get() {
            Some(_) => None,
            None => {
                let mut copy = q.clone();
                knut_thund::frontend::reparse(&mut copy).ok().map(|()| copy)
            }
        };
        let ast = reparsed.as_ref().map_or(q.ast.get(), |c| c.ast.get());
        if let (Ok(ctx), Some(ast)) = (&ctx, ast) {
            for (name, known, (line, column)) in thund_sql::unknown_functions(ctx, ast) {
                let at = shift(&q.location, line, column);
                match known {
                    thund_sql::FunctionKnown::SparkOnly => notes.push(Diagnostic::at(
                        &at,
                        format!("Spark's `{name}` is not run by the embedded engine: a native run refuses this flow, `--backend spark` runs it"),
                    )),
                    _ => problems.push(
                        Diagnostic::at(&at, format!("unknown function `{name}`: neither Spark nor this engine has it"))
                            .with_hint("a Databricks-only function has no equivalent here; compute the value another way"),
                    ),
                }
            }
        }
        for r in &q.reads {
            let Read::Files(fs) = r else { continue };
            if fs.path.contains("://") && !fs.path.starts_with("file://") {
                continue; // an object store: reached at run time
            }
            let path = resolve_project_path(&fs.path, &p.root);
            let problem = match path_glob(&path) {
                Some((base, pattern)) => matching(&base, &pattern)
                    .unwrap_or_default()
                    .is_empty()
                    .then(|| format!("`{}` matches no file", fs.path)),
                None if !path.exists() => Some(format!("`{}` does not exist", fs.path)),
                None if path.is_dir() => {
                    std::fs::read_dir(&path).err().map(|e| format!("`{}` cannot be read: {e}", fs.path))
                }
                None => std::fs::File::open(&path).err().map(|e| format!("`{}` cannot be read: {e}", fs.path)),
            };
            if let Some(message) = problem {
                problems.push(Diagnostic::at(&fs.location, format!("{} source {message}", fs.format)));
            }
        }
    }
    (problems, notes)
}

/// Where a position of a query's text (1-based line and column) is in its file.
fn shift(base: &SourceLocation, line: u64, column: u64) -> SourceLocation {
    let (line, column) = (line.max(1) as u32, column.max(1) as u32);
    if line == 1 {
        SourceLocation::new(&base.file, base.line, base.column + column - 1)
    } else {
        SourceLocation::new(&base.file, base.line + line - 1, column)
    }
}
