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
use crate::frontend::NameContext;
use crate::ir::{Pipeline, QualifiedName, Read, SourceLocation};

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
    /// An array (`[1, 2]` in YAML or JSON).
    List(Vec<Value>),
    /// A struct, its fields in the order written (`{street: Main, no: 3}`).
    Struct(Vec<(String, Value)>),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Null => write!(f, "null"),
            Value::Bool(b) => write!(f, "{b}"),
            Value::Int(i) => write!(f, "{i}"),
            Value::Float(x) => write!(f, "{x:?}"),
            Value::Text(s) => write!(f, "{s:?}"),
            Value::List(items) => {
                let items: Vec<String> = items.iter().map(Value::to_string).collect();
                write!(f, "[{}]", items.join(", "))
            }
            Value::Struct(fields) => {
                let fields: Vec<String> = fields.iter().map(|(k, v)| format!("{k}: {v}")).collect();
                write!(f, "{{{}}}", fields.join(", "))
            }
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
        serde_yaml::Value::Sequence(items) => Value::List(items.iter().map(yaml_value).collect::<Option<_>>()?),
        serde_yaml::Value::Mapping(fields) => Value::Struct(
            fields.iter().map(|(k, v)| Some((k.as_str()?.to_string(), yaml_value(v)?))).collect::<Option<_>>()?,
        ),
        serde_yaml::Value::Tagged(_) => return None,
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
    let names = NameContext { catalog: p.catalog.clone(), database: p.database.clone(), databricks: false };
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
            yaml_value(v).map(|v| (k.clone(), v)).ok_or_else(|| {
                format!("`{k}` is not a number, text, boolean, null, list or struct (with text field names)")
            })
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

mod pipeline;
use pipeline::flow_reads;
pub use pipeline::{in_database, input_folder, input_is_stream, test_pipeline};
