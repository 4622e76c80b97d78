//! A query is parsed once, by the front-end: the backends and the CLI plan what it parsed and
//! never parse SQL text themselves, nor reach into the front-end's internals (its tokenizer,
//! statement and query parsers). This reads their sources and names every line that does.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::path::{Path, PathBuf};

/// What the front-end offers everyone else, by name under `knut_thund::frontend::`.
const FRONT_END_API: [&str; 12] = [
    "load",
    "parse_expression",
    "load_with",
    "Parses",
    "load_sql",
    "analyze_query",
    "dataframe_step",
    "DataFrameStep",
    "reparse",
    "statement_ends",
    "NameContext",
    "dlt",
];

/// Ways to parse SQL text outside the front-end.
const PARSING: [&str; 7] = [
    "sqlparser::parser",
    "sqlparser::tokenizer",
    "Parser::new(",
    ".create_logical_expr(",
    ".sql_to_statement(",
    ".sql_to_expr(",
    "ctx.sql(",
];

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

/// Every line outside `#[cfg(test)]` code of the sources under `dirs` that `bad` flags.
fn offending(dirs: &[&str], bad: impl Fn(&str) -> Option<String>) -> Vec<String> {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for d in dirs {
        sources(&crates.join(d), &mut files);
    }
    assert!(files.len() > 20, "found only {} source files under {dirs:?}", files.len());
    let mut found = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).unwrap();
        // Unit tests may parse what they like: they sit at the end of a file.
        let code = text.split("#[cfg(test)]").next().unwrap_or_default();
        for (i, line) in code.lines().enumerate() {
            if line.trim_start().starts_with("//") {
                continue;
            }
            if let Some(why) = bad(line) {
                found.push(format!("{}:{}: {why}: {}", f.display(), i + 1, line.trim()));
            }
        }
    }
    found
}

/// Why `line` reaches into the front-end's internals, if it does.
fn front_end_internals(line: &str) -> Option<String> {
    let at = line.find("knut_thund::frontend::").or_else(|| line.find("crate::frontend::"))?;
    let used = line[at..].replacen("crate::", "knut_thund::", 1);
    let rest = used.strip_prefix("knut_thund::frontend::")?;
    // One name, or a list of them in braces: each must be one the front-end offers.
    let names: Vec<&str> = match rest.strip_prefix('{') {
        Some(list) => list.split('}').next().unwrap_or_default().split(',').map(str::trim).collect(),
        None => vec![rest],
    };
    let offered = |name: &str| {
        let head = name.split(|c: char| !(c.is_alphanumeric() || c == '_')).next().unwrap_or_default();
        FRONT_END_API.contains(&head) || head.starts_with("DEFAULT_")
    };
    let allowed = names.iter().filter(|n| !n.is_empty()).all(|n| offered(n));
    (!allowed).then(|| "reaches into the front-end".to_string())
}

/// How `line` parses SQL text, if it does.
fn parses_sql(line: &str) -> Option<String> {
    PARSING.iter().find(|p| line.contains(**p)).map(|p| format!("parses SQL text (`{p}`)"))
}

const OUTSIDE_THE_FRONT_END: [&str; 4] = ["thund-native/src", "thund-sql/src", "thund-cli/src", "knut-thund/src/spark"];

#[test]
fn backends_and_the_cli_use_only_the_front_ends_public_entry_points() {
    let found = offending(&OUTSIDE_THE_FRONT_END, front_end_internals);
    assert!(found.is_empty(), "front-end internals used outside it:\n{}", found.join("\n"));
}

#[test]
fn nothing_outside_the_front_end_parses_sql_text() {
    let found = offending(&OUTSIDE_THE_FRONT_END, parses_sql);
    assert!(found.is_empty(), "SQL text parsed outside the front-end:\n{}", found.join("\n"));
}

#[test]
fn the_checks_flag_what_they_look_for() {
    // The checks above pass when nothing matches: these lines show they can fail.
    assert!(front_end_internals("use knut_thund::frontend::query::{analyze, NameContext};").is_some());
    assert!(front_end_internals("    let toks = crate::frontend::text::tokenize(sql, None, f)?;").is_some());
    assert!(front_end_internals("use knut_thund::frontend::{analyze_query, NameContext};").is_none());
    assert!(front_end_internals("use knut_thund::frontend::{load, text::tokenize};").is_some());
    assert!(front_end_internals("    let p = knut_thund::frontend::load(dir)?;").is_none());
    assert!(parses_sql("    let p = Parser::new(&DIALECT).try_with_sql(&sql);").is_some());
    assert!(parses_sql("    let e = state.create_logical_expr(&e.predicate, schema)?;").is_some());
    assert!(parses_sql("    let plan = plan_query(ctx, q, root).await?;").is_none());
}

/// What a pipeline backend is, each a module or a room (a folder): the backend's face, run
/// order, one flow's work, the engine's table wiring, views, expectations, `thund query`,
/// refresh, streaming, storage and Delta, the event log, errors and failpoints. Spark SQL's
/// semantics are `thund-sql`'s.
const BACKEND_ENTRIES: [&str; 14] = [
    "backend.rs",
    "delta",
    "engine",
    "error.rs",
    "event_log",
    "expect.rs",
    "failpoint.rs",
    "flow.rs",
    "lib.rs",
    "query.rs",
    "refresh",
    "run.rs",
    "streaming",
    "views.rs",
];

#[test]
fn the_backend_is_its_rooms_at_a_glance() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut entries: Vec<String> =
        std::fs::read_dir(&src).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    entries.sort();
    assert_eq!(entries, BACKEND_ENTRIES, "thund-native/src holds other entries than a backend's");
}
