//! Rendering for people: errors with source snippets, query results, exit codes.

use std::fmt;
use std::path::{Path, PathBuf};

use arrow::record_batch::RecordBatch;
use knut_thund::error::{Diagnostic, ThundError};

/// A core error together with the project root, so diagnostics can quote the source.
#[derive(Debug)]
pub struct ProjectError {
    pub root: PathBuf,
    pub error: ThundError,
}

impl fmt::Display for ProjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let diags = self.error.diagnostics();
        if diags.is_empty() {
            return write!(f, "{}", self.error);
        }
        let head = self.error.to_string();
        writeln!(f, "{}", head.lines().next().unwrap_or_default().trim_end_matches(':'))?;
        for d in diags {
            write!(f, "{}", snippet(&self.root, d))?;
        }
        Ok(())
    }
}

impl std::error::Error for ProjectError {}

/// Usage/config errors exit 2, everything else 1.
#[derive(Debug)]
pub struct Usage(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}

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

/// Prints the error and returns its exit code.
pub fn report_error(e: &anyhow::Error) -> u8 {
    let usage = if let Some(pe) = e.downcast_ref::<ProjectError>() {
        eprint!("{pe}");
        if !pe.to_string().ends_with('\n') {
            eprintln!();
        }
        pe.error.is_usage()
    } else if let Some(te) = e.downcast_ref::<ThundError>() {
        eprintln!("error: {te}");
        te.is_usage()
    } else if let Some(u) = e.downcast_ref::<Usage>() {
        eprintln!("error: {u}");
        true
    } else {
        eprintln!("error: {e:#}");
        false
    };
    if usage {
        2
    } else {
        1
    }
}

/// Query results as an aligned table, CSV (with a header row) or JSON (an array of objects).
pub fn batches(
    schema: &arrow::datatypes::Schema,
    batches: &[RecordBatch],
    format: crate::QueryFormat,
) -> anyhow::Result<String> {
    Ok(match format {
        crate::QueryFormat::Table => format!("{}\n", arrow::util::pretty::pretty_format_batches(batches)?),
        crate::QueryFormat::Csv => {
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
        crate::QueryFormat::Json => {
            let mut buf = Vec::new();
            {
                let mut w = arrow::json::ArrayWriter::new(&mut buf);
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
