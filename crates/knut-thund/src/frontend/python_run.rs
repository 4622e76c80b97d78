//! Python definition files, run: pyspark's own pipeline code imports them against a loopback
//! Spark Connect endpoint ([`knut_pipelines::registration`]), so what Þund receives is what Spark
//! would receive.
//!
//! ```text
//!  *.py ──python_load.py (the user's python + pyspark)──▶ loopback endpoint ──▶ DataflowGraph
//!        outputs + flows, each flow's relation as bytes ──dataframe::relation_sql──▶ Spark SQL
//!        ──one CREATE … statement per definition, at its Python line──▶ the SQL front end
//! ```
//!
//! Each definition becomes the statement the same dataset would be in a SQL file, parsed by the
//! same front end at the Python file and line pyspark reported, so validation, refresh selection,
//! the event log and both backends treat it like any other; the flow's query also keeps the
//! relation's bytes, which the Spark backend sends instead of the SQL. A relation the embedded
//! engine cannot translate keeps its bytes and fails at its file:line on the native backend only.
//!
//! The interpreter is `THUND_PYTHON` or `python3` on `PATH`; it needs pyspark (or
//! `pyspark-client`) 4.1 or newer. Nothing is started for a project without Python definitions.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

use knut_pipelines::{DataflowGraph, FlowDetails, OutputType, Relation};

use crate::error::Diagnostic;
use crate::ir::SourceLocation;

/// The driver handed to the interpreter on stdin: Databricks' API over pyspark's, then the load.
const DRIVER: &str = concat!(include_str!("python_databricks.py"), "\n\n", include_str!("python_load.py"));

/// One definition from a Python file, as a SQL statement placed at its Python line.
#[derive(Debug, Clone)]
pub(crate) struct PythonStatement {
    /// The Python file, relative to the project root.
    pub file: String,
    /// Its 1-based line.
    pub line: u32,
    /// The statement (after the `SET`s of its flow's `spark_conf`), without its terminating `;`.
    pub sql: String,
    /// The flow's DataFrame, if the statement has one.
    pub dataframe: Option<DataFrameSource>,
}

/// A flow's DataFrame as the statement's query came from it.
#[derive(Debug, Clone)]
pub(crate) struct DataFrameSource {
    /// The relation as the user's pyspark serialized it, for the Spark backend.
    pub bytes: Vec<u8>,
    /// Why the relation has no SQL translation, if it has none.
    pub untranslated: Option<String>,
    /// The translation stands in `SELECT *` for what depends on an input's columns.
    pub schema_dependent: bool,
    /// The relation reads a stream (as far as it is translated).
    pub streaming: bool,
}

/// What a load gives: the statements, and the notes about what has no meaning here.
#[derive(Debug, Default)]
pub(crate) struct Loaded {
    pub statements: Vec<PythonStatement>,
    pub notes: Vec<Diagnostic>,
}

/// What Databricks' API (`python_databricks.py`) recorded beside pyspark's graph.
#[derive(Debug, Default)]
struct Records {
    /// Each dataset's expectations (by lower-cased name), as SQL `CONSTRAINT` clauses.
    expectations: BTreeMap<String, Vec<String>>,
    /// Datasets defined by `table` (lower-cased).
    tables: std::collections::BTreeSet<String>,
    /// `apply_changes` / `create_auto_cdc_flow` calls pyspark could not send.
    auto_cdc: Vec<serde_json::Value>,
    notes: Vec<Diagnostic>,
}

/// The interpreter that runs Python definition files.
pub(crate) fn interpreter() -> String {
    std::env::var("THUND_PYTHON").ok().filter(|p| !p.is_empty()).unwrap_or_else(|| "python3".into())
}

/// Imports `files` (relative to `root`) with pyspark and returns their definitions as statements,
/// or every problem found. In a Databricks project (`databricks`), a dataset defined by `table`
/// over a batch query is a materialized view, as Databricks defines it; in an SDP project it is
/// a streaming table, as `spark-pipelines` defines it.
pub(crate) fn load(
    root: &Path,
    files: &[String],
    conf: &BTreeMap<String, String>,
    catalog: &str,
    database: &str,
    databricks: bool,
) -> Result<Loaded, Vec<Diagnostic>> {
    // On a thread of its own: the caller may be a task of an async runtime (`thund ui` loads
    // the project in its request handlers), where blocking on another runtime would panic.
    std::thread::scope(|s| {
        s.spawn(|| {
            no_broken_pipe_signals();
            load_here(root, files, conf, catalog, database, databricks)
        })
        .join()
        .unwrap_or_else(|_| Err(vec![Diagnostic::global("the Python definition loader failed")]))
    })
}

/// Blocks SIGPIPE on the calling thread, and so on the threads it starts (which inherit the
/// mask): the loopback server's sockets and the interpreter's stdin. The `thund` binary lets
/// SIGPIPE end the process (so `thund query … | head` stops quietly); here, a write to a
/// socket or pipe whose reader has gone (the Python client closing its channel first) would
/// end it silently in the middle of a command. Blocked, the write fails with an error instead.
fn no_broken_pipe_signals() {
    #[cfg(unix)]
    // SAFETY: changes the signal mask of the calling thread only, with a set built here.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGPIPE);
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
    }
}

fn load_here(
    root: &Path,
    files: &[String],
    conf: &BTreeMap<String, String>,
    catalog: &str,
    database: &str,
    databricks: bool,
) -> Result<Loaded, Vec<Diagnostic>> {
    let python = interpreter();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .map_err(|e| vec![Diagnostic::global(format!("cannot start the Python definition loader: {e}"))])?;
    let report = tempfile_path();
    let (graph, ran) = runtime.block_on(async {
        let endpoint = knut_pipelines::registration::Loopback::start(conf.clone())
            .await
            .map_err(|e| vec![Diagnostic::global(e.to_string())])?;
        let url = endpoint.url().to_string();
        let (python, root, files, report) = (python.clone(), root.to_path_buf(), files.to_vec(), report.clone());
        let (catalog, database) = (catalog.to_string(), database.to_string());
        let ran = tokio::task::spawn_blocking(move || {
            let mut child = Command::new(&python)
                .arg("-")
                .args([url.as_str(), &catalog, &database])
                .arg(&root)
                .arg(&report)
                .args(&files)
                // Loading writes nothing into the project, not even Python's bytecode cache.
                .env("PYTHONDONTWRITEBYTECODE", "1")
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()?;
            let mut stdin = child.stdin.take().ok_or_else(|| std::io::Error::other("python's stdin is not piped"))?;
            stdin.write_all(DRIVER.as_bytes())?;
            drop(stdin);
            child.wait_with_output()
        })
        .await
        .map_err(|e| vec![Diagnostic::global(format!("the Python definition loader failed: {e}"))])?;
        let graph = endpoint.finish().await.map_err(|e| vec![Diagnostic::global(e.to_string())])?;
        Ok::<_, Vec<Diagnostic>>((graph, ran))
    })?;
    let reported = std::fs::read_to_string(&report).unwrap_or_default();
    let _ = std::fs::remove_file(&report);
    let out = match ran {
        Ok(out) => out,
        Err(e) => {
            return Err(vec![Diagnostic::global(format!("cannot run `{python}` for the Python definition files: {e}"))
                .with_hint("install Python 3 with pyspark 4.1 or newer, or point THUND_PYTHON at one")])
        }
    };
    if out.status.code() == Some(3) {
        let missing = String::from_utf8_lossy(&out.stderr).trim().to_string();
        return Err(files
            .iter()
            .map(|file| {
                Diagnostic::at(
                    &SourceLocation::new(file, 1, 1),
                    format!("this Python definition file needs pyspark 4.1 or newer, which `{python}` does not have ({missing})"),
                )
                .with_hint("pip install 'pyspark-client>=4.1' (or pyspark), or point THUND_PYTHON at a Python that has it")
            })
            .collect());
    }
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no output");
        return Err(vec![Diagnostic::global(format!("loading the Python definition files failed: {last}"))]);
    }
    let reported: Vec<serde_json::Value> =
        reported.lines().filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok()).collect();
    let mut problems = Vec::new();
    let records = records(reported.iter().filter(|r| r.get("kind").is_some()), &mut problems);
    problems.extend(reported.iter().filter(|r| r.get("kind").is_none()).map(|p| {
        let file = p["file"].as_str().unwrap_or_default();
        let line = p["line"].as_u64().and_then(|l| u32::try_from(l).ok()).unwrap_or(1);
        let message = p["message"].as_str().unwrap_or_default();
        Diagnostic::at(&SourceLocation::new(file, line, 1), message)
    }));
    let graph = graph.unwrap_or_else(|| DataflowGraph::new(catalog, database));
    let mut statements = statements(&graph, root, &records, databricks, &mut problems);
    for call in &records.auto_cdc {
        match auto_cdc_statement(call) {
            Ok(s) => statements.push(s),
            Err(d) => problems.push(d),
        }
    }
    if problems.is_empty() {
        Ok(Loaded { statements, notes: records.notes })
    } else {
        Err(problems)
    }
}

/// The records of Databricks' API, sorted by kind.
fn records<'a>(reported: impl Iterator<Item = &'a serde_json::Value>, problems: &mut Vec<Diagnostic>) -> Records {
    let mut out = Records::default();
    for r in reported {
        let at = || {
            let line = r["line"].as_u64().and_then(|l| u32::try_from(l).ok()).unwrap_or(1);
            SourceLocation::new(r["file"].as_str().unwrap_or("<python>"), line, 1)
        };
        let dataset = || r["dataset"].as_str().unwrap_or_default().to_lowercase();
        match r["kind"].as_str() {
            Some("expectations") => {
                for e in r["expectations"].as_array().into_iter().flatten() {
                    let (name, condition) =
                        (e["name"].as_str().unwrap_or_default(), e["condition"].as_str().unwrap_or_default());
                    if condition.trim().is_empty() {
                        problems.push(Diagnostic::at(&at(), format!("expectation `{name}` has no condition")));
                        continue;
                    }
                    let action = match e["action"].as_str() {
                        Some("drop") => " ON VIOLATION DROP ROW",
                        Some("fail") => " ON VIOLATION FAIL UPDATE",
                        _ => "",
                    };
                    let clause = format!(
                        "CONSTRAINT {} EXPECT ({condition}){action}",
                        knut_pipelines::registration::quote_identifier(name)
                    );
                    out.expectations.entry(dataset()).or_default().push(clause);
                }
            }
            Some("table") => {
                out.tables.insert(dataset());
            }
            Some("auto_cdc") => out.auto_cdc.push(r.clone()),
            Some("note") => out.notes.push(Diagnostic::at(&at(), r["message"].as_str().unwrap_or_default())),
            _ => {}
        }
    }
    out
}

/// One column or condition of an `apply_changes` record: `{"sql": text}` or `{"proto": hex}`.
fn recorded(v: &serde_json::Value, name: bool) -> Result<Option<String>, String> {
    if v.is_null() {
        return Ok(None);
    }
    if let Some(text) = v["sql"].as_str() {
        return Ok(Some(if name { knut_pipelines::registration::quote_identifier(text) } else { text.to_string() }));
    }
    let hex = v["proto"].as_str().ok_or("a column that is neither text nor a Column")?;
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<_, _>>()
        .map_err(|_| "a Column that is not serialized")?;
    let sql = if name {
        knut_pipelines::dataframe::expression_bytes_column_name(&bytes)
            .map(|n| knut_pipelines::registration::quote_identifier(&n))
    } else {
        knut_pipelines::dataframe::expression_bytes_sql(&bytes)
    };
    sql.map(Some).map_err(|e| e.0)
}

/// An `apply_changes` call as the `APPLY CHANGES INTO` statement a SQL file would hold.
fn auto_cdc_statement(r: &serde_json::Value) -> Result<PythonStatement, Diagnostic> {
    let file = r["file"].as_str().unwrap_or("<python>").to_string();
    let line = r["line"].as_u64().and_then(|l| u32::try_from(l).ok()).unwrap_or(1);
    let fail = |what: &str, e: String| {
        Diagnostic::at(&SourceLocation::new(&file, line, 1), format!("`{what}` of the AUTO CDC flow: {e}"))
    };
    let list = |key: &str| -> Result<Vec<String>, Diagnostic> {
        r[key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| recorded(v, true).map(Option::unwrap_or_default).map_err(|e| fail(key, e)))
            .collect()
    };
    let expr = |key: &str, name: bool| recorded(&r[key], name).map_err(|e| fail(key, e));
    let target = r["target"].as_str().unwrap_or_default();
    let source = r["source"].as_str().unwrap_or_default();
    let source = source.get(..5).filter(|p| p.eq_ignore_ascii_case("live.")).map_or(source, |_| &source[5..]);
    let mut sql = match r["flow"].as_str() {
        Some(flow) => format!("CREATE FLOW {} AS AUTO CDC INTO {}", quoted(flow), quoted(target)),
        None => format!("APPLY CHANGES INTO {}", quoted(target)),
    };
    sql.push_str(&format!(" FROM STREAM({}) KEYS ({})", quoted(source), list("keys")?.join(", ")));
    if r["ignore_null_updates"].as_bool() == Some(true) {
        sql.push_str(" IGNORE NULL UPDATES");
    }
    if let Some(d) = expr("apply_as_deletes", false)? {
        sql.push_str(&format!(" APPLY AS DELETE WHEN {d}"));
    }
    if let Some(t) = expr("apply_as_truncates", false)? {
        sql.push_str(&format!(" APPLY AS TRUNCATE WHEN {t}"));
    }
    let sequence = expr("sequence_by", true)?.ok_or_else(|| fail("sequence_by", "it is required".into()))?;
    sql.push_str(&format!(" SEQUENCE BY {sequence}"));
    let (include, except) = (list("column_list")?, list("except_column_list")?);
    if !include.is_empty() {
        sql.push_str(&format!(" COLUMNS {}", include.join(", ")));
    } else if !except.is_empty() {
        sql.push_str(&format!(" COLUMNS * EXCEPT ({})", except.join(", ")));
    }
    if r["scd_type"].as_u64() == Some(2) {
        sql.push_str(" STORED AS SCD TYPE 2");
        let (on, except) = (list("track_history_column_list")?, list("track_history_except_column_list")?);
        if !on.is_empty() {
            sql.push_str(&format!(" TRACK HISTORY ON {}", on.join(", ")));
        } else if !except.is_empty() {
            sql.push_str(&format!(" TRACK HISTORY ON * EXCEPT ({})", except.join(", ")));
        }
    } else {
        sql.push_str(" STORED AS SCD TYPE 1");
    }
    Ok(PythonStatement { file, line, sql, dataframe: None })
}

/// A unique path for the driver's report.
fn tempfile_path() -> std::path::PathBuf {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    std::env::temp_dir().join(format!("thund-python-{}-{nanos}.jsonl", std::process::id()))
}

/// `name` (possibly `catalog.db.name`) quoted part by part.
fn quoted(name: &str) -> String {
    name.split('.').map(knut_pipelines::registration::quote_identifier).collect::<Vec<_>>().join(".")
}

fn string(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

fn properties(map: &BTreeMap<String, String>) -> String {
    map.iter().map(|(k, v)| format!("{} = {}", string(k), string(v))).collect::<Vec<_>>().join(", ")
}

/// A flow's `spark_conf` as the `SET` statements before it, which give a SQL file's flows theirs.
fn sets(conf: &BTreeMap<String, String>) -> String {
    conf.iter().map(|(k, v)| format!("SET {} = {}; ", string(k), string(v))).collect()
}

/// Where a definition is: its Python file relative to `root`, and line.
fn place(location: Option<&knut_pipelines::SourceCodeLocation>, root: &Path) -> (String, u32) {
    let Some(l) = location else { return ("<python>".into(), 1) };
    let path = Path::new(&l.file_name);
    let rel = path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/");
    (rel, l.line_number.max(1))
}

/// A flow's query: its SQL translation (or a placeholder query and the reason there is none),
/// with the relation it came from.
fn flow_query(details: &FlowDetails) -> (String, Option<DataFrameSource>) {
    match details {
        FlowDetails::Relation(Relation::Connect { bytes }) => match knut_pipelines::dataframe::relation_sql(bytes) {
            Ok(t) => (
                t.sql,
                Some(DataFrameSource {
                    bytes: bytes.clone(),
                    untranslated: None,
                    schema_dependent: t.schema_dependent,
                    streaming: t.streaming,
                }),
            ),
            Err(e) => (
                "SELECT 1".into(),
                Some(DataFrameSource {
                    bytes: bytes.clone(),
                    untranslated: Some(e.0),
                    schema_dependent: false,
                    streaming: true,
                }),
            ),
        },
        _ => ("SELECT 1".into(), None),
    }
}

/// `FROM STREAM(source) KEYS (…) …`: what follows `AUTO CDC INTO target` in SQL.
fn auto_cdc_clauses(c: &knut_pipelines::AutoCdcDetails) -> String {
    // Each column name quoted whole: it may hold a dot.
    let list = |names: &[String]| {
        names.iter().map(|n| knut_pipelines::registration::quote_identifier(n)).collect::<Vec<_>>().join(", ")
    };
    let mut sql = format!("FROM STREAM({}) KEYS ({})", quoted(&c.source), list(&c.keys));
    if let Some(d) = &c.apply_as_deletes {
        sql.push_str(&format!(" APPLY AS DELETE WHEN {d}"));
    }
    if let Some(t) = &c.apply_as_truncates {
        sql.push_str(&format!(" APPLY AS TRUNCATE WHEN {t}"));
    }
    sql.push_str(&format!(" SEQUENCE BY {}", c.sequence_by));
    if !c.column_list.is_empty() {
        sql.push_str(&format!(" COLUMNS {}", list(&c.column_list)));
    } else if !c.except_column_list.is_empty() {
        sql.push_str(&format!(" COLUMNS * EXCEPT ({})", list(&c.except_column_list)));
    }
    match c.stored_as {
        knut_pipelines::ScdType::Type1 => sql.push_str(" STORED AS SCD TYPE 1"),
        knut_pipelines::ScdType::Type2 => {
            sql.push_str(" STORED AS SCD TYPE 2");
            if !c.track_history_columns.is_empty() {
                sql.push_str(&format!(" TRACK HISTORY ON {}", list(&c.track_history_columns)));
            } else if !c.track_history_except_columns.is_empty() {
                sql.push_str(&format!(" TRACK HISTORY ON * EXCEPT ({})", list(&c.track_history_except_columns)));
            }
        }
    }
    sql
}

/// The graph's outputs and flows as statements, with what `records` adds to them.
fn statements(
    graph: &DataflowGraph,
    root: &Path,
    records: &Records,
    databricks: bool,
    problems: &mut Vec<Diagnostic>,
) -> Vec<PythonStatement> {
    let mut out = Vec::new();
    let mut implicit = Vec::new();
    for o in &graph.outputs {
        let (file, line) = place(o.location.as_ref(), root);
        // A relation flow named after its table is the table's query; an AUTO CDC flow stays a
        // flow of its own, as `APPLY CHANGES INTO` is in SQL.
        let own_flow = graph
            .flows
            .iter()
            .position(|f| f.name == o.name && f.target == o.name && matches!(f.details, FlowDetails::Relation(_)));
        let mut clauses = String::new();
        // The schema's columns and the expectations share the parentheses after the name.
        let mut columns: Vec<String> = o.table_details.iter().filter_map(|t| t.schema.clone()).collect();
        columns.extend(records.expectations.get(&o.name.to_lowercase()).into_iter().flatten().cloned());
        if !columns.is_empty() {
            clauses.push_str(&format!(" ({})", columns.join(", ")));
        }
        if let Some(t) = &o.table_details {
            if let Some(format) = &t.format {
                clauses.push_str(&format!(" USING {}", quoted(format)));
            }
            if !t.partition_cols.is_empty() {
                let cols: Vec<String> = t.partition_cols.iter().map(|c| quoted(c)).collect();
                clauses.push_str(&format!(" PARTITIONED BY ({})", cols.join(", ")));
            }
            if !t.clustering_columns.is_empty() {
                let cols: Vec<String> = t.clustering_columns.iter().map(|c| quoted(c)).collect();
                clauses.push_str(&format!(" CLUSTER BY ({})", cols.join(", ")));
            }
            if !t.table_properties.is_empty() {
                clauses.push_str(&format!(" TBLPROPERTIES ({})", properties(&t.table_properties)));
            }
        }
        if let Some(c) = &o.comment {
            clauses.push_str(&format!(" COMMENT {}", string(c)));
        }
        // Databricks' `table` over a batch query is a materialized view; spark-pipelines' is a
        // streaming table whose flow reads its input in full on every run.
        // The own flow's query, translated once.
        let own_query = own_flow.map(|i| flow_query(&graph.flows[i].details));
        let batch_table = databricks
            && records.tables.contains(&o.name.to_lowercase())
            && own_query.as_ref().is_some_and(|(_, df)| !df.as_ref().is_some_and(|df| df.streaming));
        let kind = match o.output_type {
            OutputType::MaterializedView => "MATERIALIZED VIEW",
            OutputType::Table if batch_table => "MATERIALIZED VIEW",
            OutputType::Table => "STREAMING TABLE",
            OutputType::TemporaryView => "TEMPORARY VIEW",
            OutputType::Sink => {
                let Some(s) = &o.sink_details else { continue };
                let options =
                    if s.options.is_empty() { String::new() } else { format!(" OPTIONS ({})", properties(&s.options)) };
                out.push(PythonStatement {
                    file,
                    line,
                    sql: format!("CREATE SINK {} USING {}{options}", quoted(&o.name), quoted(&s.format)),
                    dataframe: None,
                });
                continue;
            }
        };
        let mut settings = String::new();
        let (query, dataframe) = match own_flow.zip(own_query) {
            Some((i, (q, df))) => {
                implicit.push(i);
                settings = sets(&graph.flows[i].sql_conf);
                (format!(" AS {q}"), df)
            }
            None if o.output_type == OutputType::Table => (String::new(), None),
            // Its query function failed: that failure is already reported at its line.
            None if problems.iter().any(|p| p.location.as_ref().is_some_and(|l| l.file == file)) => continue,
            None => {
                problems.push(Diagnostic::at(
                    &SourceLocation::new(&file, line, 1),
                    format!("`{}` is defined without a query", o.name),
                ));
                continue;
            }
        };
        out.push(PythonStatement {
            file,
            line,
            sql: format!("{settings}CREATE {kind} {}{clauses}{query}", quoted(&o.name)),
            dataframe,
        });
    }
    for (_, f) in graph.flows.iter().enumerate().filter(|(i, _)| !implicit.contains(i)) {
        let (file, line) = place(f.location.as_ref(), root);
        if let FlowDetails::AutoCdc(cdc) = &f.details {
            let flow = if f.name == f.target {
                format!("APPLY CHANGES INTO {}", quoted(&f.target))
            } else {
                format!("CREATE FLOW {} AS AUTO CDC INTO {}", quoted(&f.name), quoted(&f.target))
            };
            out.push(PythonStatement {
                file,
                line,
                sql: format!("{}{flow} {}", sets(&f.sql_conf), auto_cdc_clauses(cdc)),
                dataframe: None,
            });
            continue;
        }
        let (q, dataframe) = flow_query(&f.details);
        let once = if f.once { "ONCE " } else { "" };
        out.push(PythonStatement {
            file,
            line,
            sql: format!(
                "{}CREATE FLOW {} AS INSERT INTO {once}{} BY NAME {q}",
                sets(&f.sql_conf),
                quoted(&f.name),
                quoted(&f.target)
            ),
            dataframe,
        });
    }
    out
}
