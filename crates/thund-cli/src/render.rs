//! Rendering for people: errors with source snippets, query results.

use std::fmt;
use std::path::Path;

use arrow::record_batch::RecordBatch;
use knut_thund::error::{Diagnostic, ThundError};

use crate::cli::QueryFormat;
use crate::failure::ProjectError;

/// A core error with its located problems quoted from the project's files: each part of it (all
/// of them, when preparing a run found several kinds of problem) in turn.
pub fn project_error(f: &mut fmt::Formatter<'_>, root: &Path, error: &ThundError) -> fmt::Result {
    for (i, part) in error.parts().into_iter().enumerate() {
        if i > 0 {
            writeln!(f)?;
        }
        let diags = part.diagnostics();
        if diags.is_empty() {
            writeln!(f, "{part}")?;
            continue;
        }
        let head = part.to_string();
        writeln!(f, "{}", head.lines().next().unwrap_or_default().trim_end_matches(':'))?;
        for d in diags {
            write!(f, "{}", snippet(root, d))?;
        }
    }
    Ok(())
}

/// A diagnostic with the line it points at and a caret under the column.
pub fn snippet(root: &Path, d: &Diagnostic) -> String {
    let mut s = format!("error: {}\n", d.message);
    if let Some(loc) = &d.location {
        s.push_str(&format!("  --> {loc}\n"));
        let line = std::fs::read_to_string(root.join(&loc.file))
            .ok()
            .and_then(|t| t.lines().nth(loc.line.saturating_sub(1) as usize).map(str::to_string));
        if let Some(line) = line {
            let num = loc.line.to_string();
            let pad = " ".repeat(num.len());
            s.push_str(&format!(
                "{pad} |\n{num} | {line}\n{pad} | {}^\n",
                " ".repeat(loc.column.saturating_sub(1) as usize)
            ));
        }
    }
    if let Some(h) = &d.hint {
        s.push_str(&format!("  = hint: {h}\n"));
    }
    s
}

/// Prints a command's error on stderr.
pub fn report_error(e: &anyhow::Error) {
    if let Some(pe) = e.downcast_ref::<ProjectError>() {
        let text = pe.to_string();
        eprint!("{text}");
        if !text.ends_with('\n') {
            eprintln!();
        }
    } else if let Some(te) = e.downcast_ref::<ThundError>() {
        eprintln!("error: {te}");
    } else {
        eprintln!("error: {e:#}");
    }
}

/// Query results as an aligned table, CSV (with a header row) or JSON (an array of objects).
pub fn batches(
    schema: &arrow::datatypes::Schema,
    batches: &[RecordBatch],
    format: QueryFormat,
) -> anyhow::Result<String> {
    Ok(match format {
        QueryFormat::Table => format!("{}\n", arrow::util::pretty::pretty_format_batches(batches)?),
        QueryFormat::Csv => {
            let mut buf = Vec::new();
            {
                let mut w = arrow::csv::WriterBuilder::new().with_header(true).build(&mut buf);
                if batches.iter().all(|b| b.num_rows() == 0) {
                    let names: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
                    return Ok(format!("{}\n", names.join(",")));
                }
                for b in batches {
                    w.write(b)?;
                }
            }
            String::from_utf8(buf)?
        }
        QueryFormat::Json => {
            let mut buf = Vec::new();
            {
                // Every column in every row, a NULL as `null`: a reader of a result table looks
                // its columns up by name in each row.
                let mut w = arrow::json::WriterBuilder::new()
                    .with_explicit_nulls(true)
                    .build::<_, arrow::json::writer::JsonArray>(&mut buf);
                for b in batches {
                    w.write(b)?;
                }
                w.finish()?;
            }
            let mut s = String::from_utf8(buf)?;
            if s.is_empty() {
                s.push_str("[]");
            }
            s.push('\n');
            s
        }
    })
}

/// An expectation's pass rate to one decimal, which never rounds a failed row away: 3,045 of
/// 3,046 is `>99.9%`, not `100.0%` (and 1 of 3,046 `<0.1%`, not `0.0%`).
pub fn pass_rate(passed: u64, failed: u64) -> String {
    if failed == 0 {
        return "100.0%".into();
    }
    let rate = 100.0 * passed as f64 / (passed + failed) as f64;
    match rate {
        _ if passed == 0 => "0.0%".into(),
        r if r >= 99.95 => ">99.9%".into(),
        r if r < 0.05 => "<0.1%".into(),
        r => format!("{r:.1}%"),
    }
}
