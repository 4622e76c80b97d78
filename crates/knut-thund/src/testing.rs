//! Pipeline unit tests (`thund test`): the test files, and the pipeline one test runs.
//!
//! A test file is YAML kept in the project (`tests/**/*.yml`):
//!
//! ```yaml
//! tests:
//!   - name: revenue sums each region's orders
//!     dataset: revenue_by_region          # what is tested
//!     inputs:                             # what it reads, replaced by rows
//!       orders_enriched:                  # a dataset …
//!         - {order_id: 1, region: North, amount: 10.5}
//!       data/orders.csv:                  # … or a file source, by its path as written
//!         csv: tests/fixtures/orders.csv  # rows inline, or from a CSV or JSON-lines file
//!     expect:
//!       rows:                             # order-free; the columns named are compared
//!         - {region: North, revenue: 10.5}
//!       expectations:                     # counts the dataset's expectations report
//!         positive_amount: {passed: 1, failed: 0}
//!   - name: a stream, batch by batch
//!     dataset: orders_silver
//!     batches:                            # each batch: inputs, then what holds after it
//!       - inputs: {orders_raw: [{order_id: 1, amount: 5}]}
//!         expect: {rows: [{order_id: 1}]}
//! ```
//!
//! [`test_pipeline`] turns the project's pipeline into the one a test runs: only the tested
//! dataset and what it reads, up to the inputs; each input dataset becomes a table fed by the
//! rows written for it (a streaming table stays a stream, so batches are batches; any other
//! input is replaced whole by each batch's rows), a file source input reads those rows instead
//! of its path, and a tested view becomes a materialized view so its rows can be read back. The
//! pipeline itself is engine-free IR: any backend runs it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Deserialize;

use crate::error::Diagnostic;
use crate::frontend::query::{analyze, NameContext};
use crate::ir::{Dataset, DatasetKind, Flow, FlowKind, Pipeline, QualifiedName, Read, SourceLocation};

/// A value in a test's rows.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL (`null` or `~` in YAML, an empty field in a CSV file).
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// An integer.
    Int(i64),
    /// A number with a fraction or exponent.
    Float(f64),
    /// Text (dates and timestamps are written as text, `2026-03-01`).
    Text(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Text(s) => write!(f, "{s:?}"),
        }
    }
}

/// One row: column name → value.
pub type Row = BTreeMap<String, Value>;

/// What a test replaces.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum InputTarget {
    /// A dataset of the pipeline.
    Dataset(QualifiedName),
    /// A file source, by its path as the query writes it.
    Files(String),
}

/// One input of one batch.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// What it replaces.
    pub target: InputTarget,
    /// Its rows.
    pub rows: Vec<Row>,
    /// Types of some of its columns (`schema: "day DATE, amount DECIMAL(10,2)"`), cast to as
    /// the rows are read; the other columns keep the type their values have.
    pub schema: Option<String>,
}

/// Expected pass / fail / drop counts of one expectation (`None`: not checked).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Counts {
    /// Rows that satisfied it.
    pub passed: Option<u64>,
    /// Rows that did not.
    pub failed: Option<u64>,
    /// Rows it dropped (its failures, for `ON VIOLATION DROP ROW`).
    pub dropped: Option<u64>,
}

/// What must hold after a batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expect {
    /// The tested dataset's rows, order-free (`None`: not checked).
    pub rows: Option<Vec<Row>>,
    /// Expectation counts of the tested dataset, by expectation name.
    pub expectations: BTreeMap<String, Counts>,
}

/// One batch of a test.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Its inputs.
    pub inputs: Vec<Input>,
    /// What holds after it.
    pub expect: Expect,
}

/// One test.
#[derive(Debug, Clone, PartialEq)]
pub struct TestCase {
    /// Its name, as given.
    pub name: String,
    /// Where it is written.
    pub location: SourceLocation,
    /// The dataset tested.
    pub dataset: QualifiedName,
    /// Its batches (one for a test without `batches`).
    pub batches: Vec<Batch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    tests: Vec<RawCase>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCase {
    name: String,
    dataset: String,
    #[serde(default)]
    inputs: BTreeMap<String, RawInput>,
    #[serde(default)]
    expect: Option<RawExpect>,
    #[serde(default)]
    batches: Vec<RawBatch>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawBatch {
    #[serde(default)]
    inputs: BTreeMap<String, RawInput>,
    #[serde(default)]
    expect: Option<RawExpect>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawInput {
    Rows(Vec<BTreeMap<String, serde_yaml::Value>>),
    File(RawFileRef),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFileRef {
    #[serde(default)]
    rows: Option<Vec<BTreeMap<String, serde_yaml::Value>>>,
    #[serde(default)]
    csv: Option<String>,
    #[serde(default)]
    json: Option<String>,
    #[serde(default)]
    schema: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawExpect {
    #[serde(default)]
    rows: Option<Vec<BTreeMap<String, serde_yaml::Value>>>,
    #[serde(default)]
    expectations: BTreeMap<String, Counts>,
}

/// The 1-based line of the first line at or after `from` that contains `needle`, or `from`.
fn line_of(text: &str, needle: &str, from: u32) -> u32 {
    text.lines()
        .enumerate()
        .skip(from.saturating_sub(1) as usize)
        .find(|(_, l)| l.contains(needle))
        .map_or(from, |(i, _)| i as u32 + 1)
}

fn yaml_value(v: &serde_yaml::Value) -> Option<Value> {
    Some(match v {
        serde_yaml::Value::Null => Value::Null,
        serde_yaml::Value::Bool(b) => Value::Bool(*b),
        serde_yaml::Value::Number(n) => match n.as_i64() {
            Some(i) => Value::Int(i),
            None => Value::Float(n.as_f64()?),
        },
        serde_yaml::Value::String(s) => Value::Text(s.clone()),
        _ => return None,
    })
}

/// A CSV field as a typed value: empty is NULL, then integer, number, boolean, else text.
fn csv_value(s: &str) -> Value {
    if s.is_empty() {
        Value::Null
    } else if let Ok(i) = s.parse::<i64>() {
        Value::Int(i)
    } else if let Ok(x) = s.parse::<f64>() {
        Value::Float(x)
    } else if s == "true" || s == "false" {
        Value::Bool(s == "true")
    } else {
        Value::Text(s.to_string())
    }
}

/// Splits one CSV line (quotes with `""` escapes).
fn csv_fields(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                field.push('"');
                chars.next();
            }
            (true, '"') => quoted = false,
            (false, '"') if field.is_empty() => quoted = true,
            (false, ',') => out.push(std::mem::take(&mut field)),
            _ => field.push(c),
        }
    }
    out.push(field);
    out
}

/// Parses a test file of the project `p` (`shown` names it in messages). Every problem of the
/// file is returned at once, each at its line.
pub fn parse(text: &str, shown: &str, p: &Pipeline) -> Result<Vec<TestCase>, Vec<Diagnostic>> {
    let raw: RawFile = serde_yaml::from_str(text).map_err(|e| {
        let (line, column) = e.location().map(|l| (l.line() as u32, l.column() as u32)).unwrap_or((1, 1));
        let message = e.to_string();
        let message = message.split(" at line ").next().unwrap_or(&message).to_string();
        vec![Diagnostic::at(&SourceLocation::new(shown, line, column), message).with_hint(
            "a test file holds `tests:`, a list of {name, dataset, inputs, expect} or {name, dataset, batches}",
        )]
    })?;
    let names = NameContext { catalog: p.catalog.clone(), database: p.database.clone() };
    let file_paths: BTreeSet<String> = p
        .flows
        .iter()
        .flat_map(|f| flow_reads(f).into_iter())
        .filter_map(|r| match r {
            Read::Files(fs) => Some(fs.path.clone()),
            Read::Dataset { .. } => None,
        })
        .collect();
    let mut problems = Vec::new();
    let mut cases = Vec::new();
    let mut seen = BTreeSet::new();
    let mut cursor: u32 = 1;
    for rc in raw.tests {
        let line = text
            .lines()
            .enumerate()
            .skip(cursor.saturating_sub(1) as usize)
            .find(|(_, l)| l.contains("name:") && l.contains(rc.name.as_str()))
            .map_or(cursor, |(i, _)| i as u32 + 1);
        cursor = line;
        let at = SourceLocation::new(shown, line, 1);
        let mut fail = |needle: &str, m: String| {
            problems.push(Diagnostic::at(&SourceLocation::new(shown, line_of(text, needle, line), 1), m));
        };
        if !seen.insert(rc.name.clone()) {
            fail(&rc.name, format!("two tests are named `{}`", rc.name));
        }
        let parts: Vec<String> = rc.dataset.split('.').map(|s| s.to_ascii_lowercase()).collect();
        let dataset = names.resolve(&parts).filter(|n| p.dataset(n).is_some());
        let Some(dataset) = dataset else {
            fail(&rc.dataset, format!("test `{}`: the pipeline has no dataset `{}`", rc.name, rc.dataset));
            continue;
        };
        let mut raw_batches = rc.batches;
        if !rc.inputs.is_empty() || rc.expect.is_some() {
            if !raw_batches.is_empty() {
                fail("batches", format!("test `{}` has both `batches` and top-level `inputs`/`expect`", rc.name));
                continue;
            }
            raw_batches.push(RawBatch { inputs: rc.inputs, expect: rc.expect });
        }
        if raw_batches.iter().all(|b| b.expect.is_none()) {
            fail(
                &rc.name,
                format!("test `{}` expects nothing: add `expect: {{rows: …}}` or expectation counts", rc.name),
            );
            continue;
        }
        let mut batches = Vec::new();
        for rb in raw_batches {
            let mut batch = Batch::default();
            for (key, input) in rb.inputs {
                let parts: Vec<String> = key.split('.').map(|s| s.to_ascii_lowercase()).collect();
                let target = match names.resolve(&parts).filter(|n| p.dataset(n).is_some()) {
                    Some(n) if n == dataset => {
                        fail(&key, format!("test `{}`: `{key}` is the dataset tested, not an input", rc.name));
                        continue;
                    }
                    Some(n) => InputTarget::Dataset(n),
                    None if file_paths.contains(&key) => InputTarget::Files(key.clone()),
                    None => {
                        fail(
                            &key,
                            format!(
                                "test `{}`: input `{key}` is neither a dataset of the pipeline nor a file source path it reads",
                                rc.name
                            ),
                        );
                        continue;
                    }
                };
                let schema = match &input {
                    RawInput::File(f) => f.schema.clone(),
                    RawInput::Rows(_) => None,
                };
                if schema.is_some() && matches!(target, InputTarget::Files(_)) {
                    fail(
                        &key,
                        format!("test `{}`: input `{key}`: `schema` types a dataset input; a file source's query casts its columns", rc.name),
                    );
                    continue;
                }
                match input_rows(input, &p.root) {
                    Ok(rows) => batch.inputs.push(Input { target, rows, schema }),
                    Err(m) => fail(&key, format!("test `{}`: input `{key}`: {m}", rc.name)),
                }
            }
            if let Some(e) = rb.expect {
                batch.expect.expectations = e.expectations;
                if let Some(rows) = e.rows {
                    match rows.into_iter().map(|r| row(&r)).collect::<Result<Vec<Row>, String>>() {
                        Ok(rows) => batch.expect.rows = Some(rows),
                        Err(m) => fail("rows", format!("test `{}`: expected rows: {m}", rc.name)),
                    }
                }
                let declared: BTreeSet<&str> = p
                    .dataset(&dataset)
                    .map(|d| d.expectations.iter().map(|x| x.name.as_str()).collect())
                    .unwrap_or_default();
                for name in batch.expect.expectations.keys() {
                    if !declared.contains(name.as_str()) {
                        fail(name, format!("test `{}`: `{}` has no expectation `{name}`", rc.name, dataset));
                    }
                }
            }
            batches.push(batch);
        }
        cases.push(TestCase { name: rc.name, location: at, dataset, batches });
    }
    if problems.is_empty() {
        Ok(cases)
    } else {
        Err(problems)
    }
}

fn row(r: &BTreeMap<String, serde_yaml::Value>) -> Result<Row, String> {
    r.iter()
        .map(|(k, v)| {
            yaml_value(v).map(|v| (k.clone(), v)).ok_or_else(|| format!("`{k}` is not a number, text, boolean or null"))
        })
        .collect()
}

fn input_rows(input: RawInput, root: &Path) -> Result<Vec<Row>, String> {
    match input {
        RawInput::Rows(rows) | RawInput::File(RawFileRef { rows: Some(rows), csv: None, json: None, .. }) => {
            rows.iter().map(row).collect()
        }
        RawInput::File(RawFileRef { csv: Some(path), json: None, rows: None, .. }) => {
            let text = std::fs::read_to_string(root.join(&path)).map_err(|e| format!("{path}: {e}"))?;
            let mut lines = text.lines().filter(|l| !l.trim().is_empty());
            let header = csv_fields(lines.next().ok_or_else(|| format!("{path} is empty"))?);
            lines
                .enumerate()
                .map(|(i, l)| {
                    let fields = csv_fields(l);
                    if fields.len() != header.len() {
                        return Err(format!(
                            "{path}:{}: {} fields, the header has {}",
                            i + 2,
                            fields.len(),
                            header.len()
                        ));
                    }
                    Ok(header.iter().cloned().zip(fields.iter().map(|f| csv_value(f))).collect())
                })
                .collect()
        }
        RawInput::File(RawFileRef { json: Some(path), csv: None, rows: None, .. }) => {
            let text = std::fs::read_to_string(root.join(&path)).map_err(|e| format!("{path}: {e}"))?;
            text.lines()
                .enumerate()
                .filter(|(_, l)| !l.trim().is_empty())
                .map(|(i, l)| {
                    let v: BTreeMap<String, serde_yaml::Value> =
                        serde_yaml::from_str(l).map_err(|e| format!("{path}:{}: {e}", i + 1))?;
                    row(&v)
                })
                .collect()
        }
        RawInput::File(_) => {
            Err("give its rows: a list, or exactly one of `rows:`, `csv: file` and `json: file`".into())
        }
    }
}

/// Every read of a flow, its change feed's included.
fn flow_reads(f: &Flow) -> Vec<&Read> {
    match &f.kind {
        FlowKind::AutoCdc(c) => c.source.reads.iter().collect(),
        _ => f.query().reads.iter().collect(),
    }
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
        let reads = match &mut f.kind {
            FlowKind::AutoCdc(c) => &mut c.source.reads,
            FlowKind::Append { query, .. } | FlowKind::Once { query, .. } => &mut query.reads,
        };
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
    let names = NameContext { catalog: p.catalog.clone(), database: p.database.clone() };
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
        out.datasets.push(d);
        for f in p.flows_into(&out.datasets.last().expect("pushed").name) {
            let mut f = f.clone();
            let reads = match &mut f.kind {
                FlowKind::AutoCdc(c) => &mut c.source.reads,
                FlowKind::Append { query, .. } | FlowKind::Once { query, .. } => &mut query.reads,
            };
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
