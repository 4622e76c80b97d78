//! The pipeline one test runs: the project's, cut down to the tested dataset and what it reads,
//! its inputs replaced by the test's rows.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{Input, InputTarget, Row, TestCase, Value};
use crate::error::Diagnostic;
use crate::frontend::query::{analyze, NameContext};
use crate::ir::{Dataset, DatasetKind, Flow, FlowKind, Pipeline, QualifiedName, Read};

/// Every read of a flow, its change feed's included.
pub(super) fn flow_reads(f: &Flow) -> Vec<&Read> {
    f.query().reads.iter().collect()
}

/// The folder (under `inputs`) where the rows of `target` are written, one JSON-lines file per
/// batch.
pub fn input_folder(inputs: &Path, target: &InputTarget) -> std::path::PathBuf {
    let name = match target {
        InputTarget::Dataset(n) => format!("dataset_{n}"),
        InputTarget::Files(p) => format!("files_{p}"),
    };
    let safe: String = name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' }).collect();
    inputs.join(safe)
}

/// Whether a streaming table's input keeps the rows of earlier batches (it is a stream), or
/// each batch replaces them.
pub fn input_is_stream(p: &Pipeline, target: &InputTarget) -> bool {
    match target {
        InputTarget::Dataset(n) => p.dataset(n).is_some_and(|d| d.kind == DatasetKind::StreamingTable),
        // A file folder a stream reads only grows.
        InputTarget::Files(path) => p
            .flows
            .iter()
            .flat_map(flow_reads)
            .any(|r| matches!(r, Read::Files(fs) if &fs.path == path && fs.streaming)),
    }
}

/// The select list of a dataset input: every column its rows name, cast where its `schema`
/// says (`*` when nothing is typed).
fn input_columns(case: &TestCase, name: &QualifiedName) -> Result<String, Diagnostic> {
    let target = InputTarget::Dataset(name.clone());
    let inputs: Vec<&Input> = case.batches.iter().flat_map(|b| &b.inputs).filter(|i| i.target == target).collect();
    let Some(ddl) = inputs.iter().find_map(|i| i.schema.clone()) else { return Ok("*".into()) };
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    for part in split_top_level_commas(&ddl) {
        let mut words = part.trim().splitn(2, char::is_whitespace);
        let (Some(col), Some(ty)) = (words.next(), words.next()) else {
            return Err(Diagnostic::at(&case.location, format!("input `{name}`: `{part}` is not `column TYPE`")));
        };
        types.insert(col.trim_matches('`').to_ascii_lowercase(), ty.trim().to_string());
    }
    let mut columns: BTreeSet<String> =
        inputs.iter().flat_map(|i| i.rows.iter().flat_map(|r| r.keys().cloned())).collect();
    columns.extend(types.keys().cloned());
    let list: Vec<String> = columns
        .iter()
        .map(|c| match types.get(&c.to_ascii_lowercase()) {
            Some(t) => format!("CAST(`{c}` AS {t}) AS `{c}`"),
            None => format!("`{c}`"),
        })
        .collect();
    Ok(list.join(", "))
}

fn split_top_level_commas(s: &str) -> Vec<String> {
    let (mut out, mut cur, mut depth) = (Vec::new(), String::new(), 0i32);
    for c in s.chars() {
        match c {
            '(' | '<' => depth += 1,
            ')' | '>' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut cur));
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

/// A SQL literal of a test value, as both engines read it: a fractional number as a DOUBLE (a
/// bare `1.5` is a DECIMAL in Spark), text with quotes or backslashes through its UTF-8 bytes
/// (the two dialects escape differently).
fn literal(v: &Value, float_column: bool) -> String {
    match v {
        Value::Null => "NULL".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) if float_column => format!("CAST({i} AS DOUBLE)"),
        Value::Int(i) => i.to_string(),
        Value::Float(x) => format!("CAST({x:?} AS DOUBLE)"),
        Value::Text(t) if t.contains(['\'', '\\']) => {
            let hex: String = t.bytes().map(|b| format!("{b:02X}")).collect();
            format!("CAST(X'{hex}' AS STRING)")
        }
        Value::Text(t) => format!("'{t}'"),
        Value::List(items) => {
            let float = items.iter().any(|v| matches!(v, Value::Float(_)));
            let items: Vec<String> = items.iter().map(|v| literal(v, float)).collect();
            format!("array({})", items.join(", "))
        }
        Value::Struct(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}, {}", literal(&Value::Text(k.clone()), false), literal(v, false)))
                .collect();
            format!("named_struct({})", fields.join(", "))
        }
    }
}

/// A non-stream dataset input at batch `upto`: the rows of the last batch up to it that gives
/// them, inline as `VALUES` (data sent with the plan, so any server runs it), columns typed by
/// `schema`, a column of only NULLs as a string.
fn values_sql(case: &TestCase, name: &QualifiedName, upto: usize) -> Result<String, Diagnostic> {
    let target = InputTarget::Dataset(name.clone());
    let all: Vec<&Input> = case.batches.iter().flat_map(|b| &b.inputs).filter(|i| i.target == target).collect();
    let last = upto.min(case.batches.len().saturating_sub(1));
    let rows: &[Row] = case.batches[..=last]
        .iter()
        .rev()
        .find_map(|b| b.inputs.iter().find(|i| i.target == target))
        .map_or(&[], |i| &i.rows);
    let columns: BTreeSet<String> = all.iter().flat_map(|i| i.rows.iter().flat_map(|r| r.keys().cloned())).collect();
    if columns.is_empty() {
        return Err(Diagnostic::at(&case.location, format!("input `{name}` names no column")));
    }
    let select = input_columns(case, name)?;
    let quoted: Vec<String> = columns.iter().map(|c| format!("`{}`", c.replace('`', "``"))).collect();
    let float: Vec<bool> =
        columns.iter().map(|c| rows.iter().any(|r| matches!(r.get(c), Some(Value::Float(_))))).collect();
    let all_null: Vec<bool> =
        columns.iter().map(|c| rows.iter().all(|r| matches!(r.get(c), None | Some(Value::Null)))).collect();
    // Untyped, a column of NULLs only would have no type a table can store.
    let select = if select != "*" {
        select
    } else {
        quoted
            .iter()
            .zip(&all_null)
            .map(|(q, null)| if *null { format!("CAST({q} AS STRING) AS {q}") } else { q.clone() })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let values: Vec<String> = if rows.is_empty() {
        vec![format!("({})", vec!["NULL"; columns.len()].join(", "))]
    } else {
        rows.iter()
            .map(|r| {
                let cells: Vec<String> =
                    columns.iter().zip(&float).map(|(c, f)| literal(r.get(c).unwrap_or(&Value::Null), *f)).collect();
                format!("({})", cells.join(", "))
            })
            .collect()
    };
    let filter = if rows.is_empty() { " WHERE false" } else { "" };
    Ok(format!("SELECT {select} FROM VALUES {} AS __thund_input({}){filter}", values.join(", "), quoted.join(", ")))
}

/// `p` with its datasets in `database` instead of its default one, and that as the default:
/// each test on a shared server gets a database of its own.
pub fn in_database(p: &Pipeline, database: &str) -> Pipeline {
    let moved = |n: &QualifiedName| {
        if n.catalog == p.catalog && n.database == p.database {
            QualifiedName::new(&n.catalog, database, &n.name)
        } else {
            n.clone()
        }
    };
    let mut out = p.clone();
    out.database = database.to_string();
    for d in &mut out.datasets {
        d.name = moved(&d.name);
    }
    for f in &mut out.flows {
        f.name = moved(&f.name);
        f.target = moved(&f.target);
        let reads = &mut f.query_mut().reads;
        for r in reads.iter_mut() {
            if let Read::Dataset { name, .. } = r {
                *name = moved(name);
            }
        }
    }
    out
}

/// The pipeline test `case` runs at batch `batch`: its dataset and what it reads up to the inputs (see the
/// module docs), stored under `storage`, its inputs read from folders under `inputs`.
pub fn test_pipeline(
    p: &Pipeline,
    case: &TestCase,
    batch: usize,
    inputs: &Path,
    storage: &Path,
) -> Result<Pipeline, Diagnostic> {
    let replaced: BTreeSet<&InputTarget> =
        case.batches.iter().flat_map(|b| b.inputs.iter().map(|i| &i.target)).collect();
    let is_input = |n: &QualifiedName| replaced.contains(&InputTarget::Dataset(n.clone()));
    // What the tested dataset reads, transitively, stopping at inputs.
    let mut needed: BTreeSet<QualifiedName> = BTreeSet::new();
    let mut todo = vec![case.dataset.clone()];
    while let Some(n) = todo.pop() {
        if !needed.insert(n.clone()) || is_input(&n) {
            continue;
        }
        for f in p.flows_into(&n) {
            for r in flow_reads(f) {
                if let Read::Dataset { name, .. } = r {
                    if p.dataset(name).is_some() {
                        todo.push(name.clone());
                    }
                }
            }
        }
    }
    let names = NameContext { catalog: p.catalog.clone(), database: p.database.clone(), databricks: false };
    let mut out = Pipeline {
        storage: Some(storage.to_string_lossy().into_owned()),
        datasets: Vec::new(),
        flows: Vec::new(),
        notes: Vec::new(),
        ..p.clone()
    };
    for d in p.datasets.iter().filter(|d| needed.contains(&d.name)) {
        if is_input(&d.name) {
            let stream = d.kind == DatasetKind::StreamingTable;
            let folder = input_folder(inputs, &InputTarget::Dataset(d.name.clone()));
            let sql = if stream {
                let source =
                    format!("read_files('{}', format => 'json')", folder.to_string_lossy().replace('\'', "\\'"));
                format!("SELECT {} FROM STREAM {source}", input_columns(case, &d.name)?)
            } else {
                values_sql(case, &d.name, batch)?
            };
            let query = analyze(&sql, &case.location, &names).map_err(|mut ds| ds.remove(0))?;
            out.datasets.push(Dataset {
                kind: if stream { DatasetKind::StreamingTable } else { DatasetKind::MaterializedView },
                expectations: Vec::new(),
                details: Default::default(),
                sink: None,
                output_mode: None,
                ..d.clone()
            });
            out.flows.push(Flow {
                name: d.name.clone(),
                target: d.name.clone(),
                kind: FlowKind::Append { query, by_name: false },
                implicit: true,
                sql_conf: BTreeMap::new(),
                location: d.location.clone(),
            });
            continue;
        }
        let mut d = d.clone();
        // A view is read back as a table.
        if d.name == case.dataset && d.kind.is_view() {
            d.kind = DatasetKind::MaterializedView;
        }
        if let Some(sink) = &mut d.sink {
            // A test writes only under its scratch storage: the project's real sink keeps its rows.
            if !sink.options.contains_key("path") {
                return Err(Diagnostic::at(
                    &case.location,
                    format!(
                        "sink `{}` writes to {} without a path; a test writes only to files it can put in its \
                         scratch folder",
                        d.name, sink.format
                    ),
                ));
            }
            let folder: String = d
                .name
                .to_string()
                .chars()
                .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' })
                .collect();
            let path = storage.join("sinks").join(folder);
            sink.options.insert("path".into(), path.to_string_lossy().into_owned());
        }
        let name = d.name.clone();
        out.datasets.push(d);
        for f in p.flows_into(&name) {
            let mut f = f.clone();
            let reads = &mut f.query_mut().reads;
            for r in reads.iter_mut() {
                if let Read::Files(fs) = r {
                    if replaced.contains(&InputTarget::Files(fs.path.clone())) {
                        fs.path =
                            input_folder(inputs, &InputTarget::Files(fs.path.clone())).to_string_lossy().into_owned();
                        fs.format = "json".into();
                        fs.options.clear();
                        fs.syntax = crate::ir::FileSyntax::ReadFiles;
                    }
                }
            }
            out.flows.push(f);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::unit_test::parse;

    fn pipeline() -> Pipeline {
        crate::frontend::load_sql(
            "CREATE MATERIALIZED VIEW raw AS SELECT * FROM read_files('data/in.csv', format => 'csv', header => true);\n\
             CREATE TEMPORARY VIEW clean AS SELECT id, amount FROM raw WHERE amount IS NOT NULL;\n\
             CREATE MATERIALIZED VIEW totals (CONSTRAINT positive EXPECT (total > 0)) AS SELECT sum(amount) AS total FROM clean;\n\
             CREATE MATERIALIZED VIEW other AS SELECT 1 AS x;\n",
        )
    }

    #[test]
    fn a_test_file_names_every_problem_at_its_line() {
        let p = pipeline();
        let text = "tests:\n  - name: a\n    dataset: nope\n    expect: {rows: []}\n  - name: b\n    dataset: totals\n    inputs:\n      \
                    missing: [{x: 1}]\n    expect:\n      expectations: {unknown: {passed: 1}}\n  - name: c\n    dataset: totals\n";
        let err = parse(text, "tests/t.yml", &p).unwrap_err();
        let text: Vec<String> = err.iter().map(ToString::to_string).collect();
        assert_eq!(text.len(), 4, "{text:#?}");
        assert!(text[0].starts_with("tests/t.yml:3:1") && text[0].contains("no dataset `nope`"), "{text:#?}");
        assert!(text[1].starts_with("tests/t.yml:8:1") && text[1].contains("input `missing`"), "{text:#?}");
        assert!(text[2].starts_with("tests/t.yml:10:1") && text[2].contains("no expectation `unknown`"), "{text:#?}");
        assert!(text[3].starts_with("tests/t.yml:11:1") && text[3].contains("expects nothing"), "{text:#?}");
        let err = parse("tests:\n  - name: a\n    datset: x\n", "t.yml", &p).unwrap_err();
        assert!(err[0].to_string().starts_with("t.yml:3:"), "{}", err[0]);
    }

    #[test]
    fn the_test_pipeline_holds_what_the_dataset_reads_up_to_its_inputs() {
        let p = pipeline();
        let text =
            "tests:\n  - name: t\n    dataset: clean\n    inputs:\n      data/in.csv: [{id: 1, amount: 2.5}]\n    \
                    expect: {rows: [{id: 1}]}\n";
        let cases = parse(text, "t.yml", &p).unwrap();
        let t = test_pipeline(&p, &cases[0], 0, Path::new("/tmp/in"), Path::new("/tmp/st")).unwrap();
        let kinds: Vec<(String, DatasetKind)> = t.datasets.iter().map(|d| (d.name.name.clone(), d.kind)).collect();
        assert_eq!(
            kinds,
            [("raw".into(), DatasetKind::MaterializedView), ("clean".into(), DatasetKind::MaterializedView)]
        );
        let Read::Files(fs) = &t.flows[0].query().reads[0] else { panic!() };
        assert_eq!((fs.path.as_str(), fs.format.as_str()), ("/tmp/in/files_data_in.csv", "json"));
        assert_eq!(t.storage.as_deref(), Some("/tmp/st"));

        let text = "tests:\n  - name: t\n    dataset: totals\n    inputs:\n      raw: [{id: 1, amount: 2.5}]\n    \
                    expect: {expectations: {positive: {passed: 1}}}\n";
        let cases = parse(text, "t.yml", &p).unwrap();
        let t = test_pipeline(&p, &cases[0], 0, Path::new("/tmp/in"), Path::new("/tmp/st")).unwrap();
        let names: Vec<&str> = t.datasets.iter().map(|d| d.name.name.as_str()).collect();
        assert_eq!(names, ["raw", "clean", "totals"]);
        assert_eq!(
            t.flows[0].query().sql,
            "SELECT `amount`, `id` FROM VALUES (CAST(2.5 AS DOUBLE), 1) AS __thund_input(`amount`, `id`)"
        );
        let moved = in_database(&t, "t1");
        assert!(moved.datasets.iter().all(|d| d.name.database == "t1"));
        assert!(moved.flows.iter().all(|f| f.target.database == "t1"));
    }
}
