//! Python libraries, until they run: what a Python file defines, read from its text.
//!
//! Datasets defined in Python are not run by this front end, so a Python file that defines any
//! is an error naming each one (its datasets would otherwise be silently missing). A file that
//! defines none — a notebook that generates test data, a helper module — is not part of the
//! graph and does not block the pipeline: it gets a note.
//!
//! Definitions are found the way a reader finds them: decorators and calls of the pipelines
//! module under the names the file imports it as (`import dlt`, `from pyspark import pipelines
//! as dp`, …). Text inside strings or comments is not told apart; a false find is an error
//! naming the line, never a silent skip.

use crate::error::Diagnostic;
use crate::ir::SourceLocation;

/// Decorators that define a dataset (or, `append_flow`, a flow) named after the function or by
/// their `name` argument.
const DECORATORS: [&str; 7] =
    ["table", "view", "materialized_view", "temporary_view", "create_table", "create_view", "append_flow"];

/// Calls that define a dataset or flow named by their first argument (or `name` / `target`).
const CALLS: [&str; 7] = [
    "create_streaming_table",
    "create_target_table",
    "create_streaming_live_table",
    "create_sink",
    "apply_changes",
    "apply_changes_from_snapshot",
    "create_auto_cdc_flow",
];

/// One definition found in a Python file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PythonDefinition {
    /// The dataset's (or flow's target's) name, as written.
    pub name: String,
    /// What defines it, e.g. `@dlt.table` or `dp.create_streaming_table`.
    pub by: String,
    /// Its 1-based line.
    pub line: u32,
}

/// Every dataset and flow definition in Python source `text`.
pub fn definitions(text: &str) -> Vec<PythonDefinition> {
    let lines: Vec<&str> = text.lines().map(|l| l.strip_prefix("# MAGIC ").unwrap_or(l)).collect();
    let modules = module_names(&lines);
    let mut out = Vec::new();
    let mut pending: Vec<(String, Option<String>, u32)> = Vec::new(); // decorators above a `def`
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i].trim_start();
        let (statement, last) = joined(&lines, i);
        if let Some(rest) = line.strip_prefix('@') {
            if let Some((by, member)) = member_of(rest, &modules) {
                if DECORATORS.contains(&member) {
                    let named = argument(&statement, &["name", "target"]).filter(|_| member != "append_flow");
                    let target = argument(&statement, &["target"]).filter(|_| member == "append_flow");
                    pending.push((by, named.or(target), i as u32 + 1));
                }
            }
        } else if let Some(def) = line.strip_prefix("def ").or_else(|| line.strip_prefix("async def ")) {
            let function: String = def.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
            for (by, named, at) in pending.drain(..) {
                out.push(PythonDefinition { name: named.unwrap_or_else(|| function.clone()), by, line: at });
            }
        } else {
            pending.clear();
            for (at, _) in line.match_indices('.') {
                let Some((by, member)) = call_at(line, at, &modules) else { continue };
                if CALLS.contains(&member) {
                    let args = &statement[statement.find(&by).map_or(0, |p| p + by.len())..];
                    let name = argument(args, &["name", "target"]).or_else(|| first_string(args)).unwrap_or_default();
                    out.push(PythonDefinition { name, by, line: i as u32 + 1 });
                }
            }
        }
        i = last + 1;
    }
    out
}

/// What to do with a Python library `file`: a note when it defines nothing, else an error
/// naming each definition.
pub fn check(file: &str, text: &str) -> Result<Diagnostic, Vec<Diagnostic>> {
    let found = definitions(text);
    if found.is_empty() {
        return Ok(Diagnostic::at(
            &SourceLocation::new(file, 1, 1),
            "a Python library that defines no datasets is not run (only dataset definitions are read from libraries)",
        ));
    }
    Err(found
        .iter()
        .map(|d| {
            Diagnostic::at(
                &SourceLocation::new(file, d.line, 1),
                format!(
                    "`{}` is defined in Python (`{}`), which is not run here: it is missing from this pipeline",
                    d.name, d.by
                ),
            )
            .with_hint("define it in SQL, or remove the file from `libraries`")
        })
        .collect())
}

/// The names the file imports the pipelines module as (`""` when its members are imported bare).
fn module_names(lines: &[&str]) -> Vec<String> {
    let mut names = Vec::new();
    for l in lines.iter().map(|l| l.trim()) {
        let words: Vec<&str> = l.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty()).collect();
        match words.as_slice() {
            ["import", "dlt"] => names.push("dlt".to_string()),
            ["import", "dlt" | "pyspark.pipelines", "as", alias] => names.push(alias.to_string()),
            ["from", "pyspark", "import", "pipelines"] => names.push("pipelines".to_string()),
            ["from", "pyspark", "import", "pipelines", "as", alias] => names.push(alias.to_string()),
            ["from", "dlt" | "pyspark.pipelines", "import", ..] => names.push(String::new()),
            _ => {}
        }
    }
    names
}

/// `rest` (after `@`) as `module.member` of one of `modules`: (`module.member`, `member`).
fn member_of<'a>(rest: &'a str, modules: &[String]) -> Option<(String, &'a str)> {
    let path: &str = rest.split(|c: char| c == '(' || c.is_whitespace()).next()?;
    let (module, member) = path.rsplit_once('.').unwrap_or(("", path));
    modules.iter().any(|m| m == module).then(|| (format!("@{path}"), member))
}

/// The call of `module.member(` whose `.` is at byte `dot` of `line`.
fn call_at<'a>(line: &'a str, dot: usize, modules: &[String]) -> Option<(String, &'a str)> {
    let module_start = line[..dot].rfind(|c: char| !(c.is_alphanumeric() || c == '_')).map_or(0, |p| p + 1);
    let module = &line[module_start..dot];
    let member: &str = line[dot + 1..].split(|c: char| !(c.is_alphanumeric() || c == '_')).next()?;
    let called = line[dot + 1 + member.len()..].trim_start().starts_with('(');
    (called && modules.iter().any(|m| !m.is_empty() && m == module)).then(|| (format!("{module}.{member}"), member))
}

/// The statement starting at line `i`, joined with the lines its brackets run over, and the
/// index of its last line.
fn joined(lines: &[&str], i: usize) -> (String, usize) {
    let mut text = String::new();
    let mut depth = 0i32;
    for (j, l) in lines.iter().enumerate().skip(i) {
        text.push_str(l);
        text.push('\n');
        depth += l.matches(['(', '[', '{']).count() as i32 - l.matches([')', ']', '}']).count() as i32;
        if depth <= 0 {
            return (text, j);
        }
    }
    (text, lines.len().saturating_sub(1))
}

/// The string value of keyword argument `key` (the first of `keys` present) in `args`.
fn argument(args: &str, keys: &[&str]) -> Option<String> {
    keys.iter().find_map(|key| {
        args.match_indices(key).find_map(|(at, _)| {
            let before = args[..at].chars().next_back();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                return None;
            }
            let rest = args[at + key.len()..].trim_start().strip_prefix('=')?;
            first_string(rest).filter(|_| rest.trim_start().starts_with(['"', '\'']))
        })
    })
}

/// The first string literal in `text`.
fn first_string(text: &str) -> Option<String> {
    let start = text.find(['"', '\''])?;
    let quote = text[start..].chars().next()?;
    let body = &text[start + 1..];
    body.find(quote).map(|end| body[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_dlt_and_sdp_definitions_by_name_and_line() {
        let dlt = "# Databricks notebook source\nimport dlt\nfrom pyspark.sql.functions import *\n\n\
                   @dlt.table(\n  comment=\"raw\",\n  name='customers_raw')\n@dlt.expect('id', 'id IS NOT NULL')\n\
                   def customers():\n    return spark.read.table('x')\n\n@dlt.view\ndef v(): ...\n\n\
                   dlt.create_streaming_table(\"silver\")\n\
                   dlt.apply_changes(target = \"silver\", source = \"v\", keys = [\"id\"])\n";
        let found: Vec<(String, u32)> = definitions(dlt).into_iter().map(|d| (d.name, d.line)).collect();
        assert_eq!(
            found,
            [("customers_raw".into(), 5), ("v".into(), 12), ("silver".into(), 15), ("silver".into(), 16)]
        );
        let sdp = "from pyspark import pipelines as dp\n\n@dp.materialized_view\ndef example_python_materialized_view():\n    \
                   return spark.range(10)\n\n@dp.append_flow(target=\"t\")\ndef more(): ...\n";
        let found: Vec<(String, String)> = definitions(sdp).into_iter().map(|d| (d.name, d.by)).collect();
        assert_eq!(
            found,
            [
                ("example_python_materialized_view".into(), "@dp.materialized_view".into()),
                ("t".into(), "@dp.append_flow".into())
            ]
        );
    }

    #[test]
    fn a_data_generator_defines_nothing() {
        let generator = "# Databricks notebook source\n# MAGIC %pip install faker\n\n# COMMAND ----------\n\n\
                         import dlt_helpers\nfrom faker import Faker\n@app.table\ndef f(): ...\n\
                         df.write.format('json').mode('append').save('/tmp/x')\ntable = 1\n";
        assert_eq!(definitions(generator), []);
        assert!(check("gen.py", generator).is_ok());
        let err = check("p.py", "import dlt\n@dlt.table\ndef a(): ...\n").unwrap_err();
        assert_eq!(err[0].to_string(), "p.py:2:1: `a` is defined in Python (`@dlt.table`), which is not run here: it is missing from this pipeline (hint: define it in SQL, or remove the file from `libraries`)");
    }
}
