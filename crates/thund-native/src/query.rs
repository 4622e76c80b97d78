//! `thund query`: SQL over a pipeline's stored tables and persistent views, in the same dialect.
//!
//! The text may start with `SET key = value;` statements, which apply to the query after them
//! (the settings the embedded engine honours, see `knut_thund::sql_conf`); a text of `SET`s only
//! answers as Spark does, with the `key` and `value` of the last one.
//!
//! `EXPLAIN query` answers, as Spark does, one row with a `plan` column: here the optimized
//! logical plan and the physical plan DataFusion runs. `EXPLAIN ANALYZE query` runs the query and
//! shows the physical plan with each operator's metrics (rows, time, spills), for finding where
//! a query's time goes.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::StringArray;
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::datasource::ViewTable;
use knut_thund::frontend::{analyze_query, NameContext};
use knut_thund::ir::{DatasetKind, Pipeline, QualifiedName, Query, Read, SourceLocation};

use crate::delta::storage::Storage;
use crate::delta::table::open_stored_table;
use crate::engine::{context_with, ensure_schema, pipeline_context, plan_query, table_ref, EngineOptions};
use crate::error::{NativeError, Result};

/// A query's result: its schema (known even when there are no rows) and its batches.
#[derive(Debug, Clone)]
pub struct QueryResult {
    /// Result schema.
    pub schema: SchemaRef,
    /// Result rows.
    pub batches: Vec<RecordBatch>,
}

/// Runs `sql` against the pipeline's stored datasets.
pub async fn query(p: &Pipeline, sql: &str, engine: &EngineOptions) -> Result<QueryResult> {
    let location = SourceLocation::new("<query>", 1, 1);
    let plan_error = |message: String| NativeError::Plan { location: location.to_string(), message };
    let mut configuration = p.configuration.clone();
    let mut statements = statements(sql);
    let sql = match statements.pop() {
        Some(last) if set_statement(last).is_none() => last,
        Some(last) => {
            statements.push(last);
            ""
        }
        None => return Err(plan_error("no query to run".into())),
    };
    let mut shown = None;
    for s in statements {
        let (key, value) = set_statement(s)
            .ok_or_else(|| plan_error(format!("only `SET` statements may come before the query: `{s}`")))?;
        shown = Some(match value {
            Some(value) => {
                if let Some(why) = knut_thund::sql_conf::refusal(&key, &value) {
                    return Err(plan_error(why));
                }
                configuration.retain(|k, _| !k.trim().eq_ignore_ascii_case(&key));
                configuration.insert(key.clone(), value.clone());
                (key, value)
            }
            None => {
                let value = setting(&configuration, &key)
                    .ok_or_else(|| plan_error(format!("the native backend does not know Spark's value of `{key}`")))?;
                (key, value)
            }
        });
    }
    if let (true, Some((key, value))) = (sql.is_empty(), shown) {
        return Ok(setting_row(&key, &value));
    }
    let (explain, sql) = explained(sql).map_err(plan_error)?;
    let storage = Storage::of(p)?;
    let ctx = context_with(p, &configuration, engine)?;
    let names = NameContext { catalog: p.catalog.clone(), database: p.database.clone(), databricks: false };
    let q = analyze_query(sql, &location, &names)
        .map_err(|ds| plan_error(ds.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; ")))?;

    let mut stored_views: BTreeMap<QualifiedName, Query> = BTreeMap::new();
    for d in &p.datasets {
        ensure_schema(&ctx, &d.name.catalog, &d.name.database)?;
        if d.kind.is_table() {
            if let Some(provider) = open_stored_table(&ctx, &storage, &d.name).await? {
                ctx.register_table(table_ref(&d.name), provider)?;
            }
        } else if d.kind == DatasetKind::PersistentView {
            if let Some(q) = crate::views::stored_definition(&storage, &d.name).await? {
                stored_views.insert(d.name.clone(), q);
            }
        }
    }
    // The event log, unless a dataset of the pipeline has its name.
    let log_name = QualifiedName::new(&p.catalog, &p.database, "event_log");
    if p.dataset(&log_name).is_none() {
        ensure_schema(&ctx, &p.catalog, &p.database)?;
        if let Some(provider) = crate::event_log::provider(&ctx, &storage).await? {
            ctx.register_table(table_ref(&log_name), provider)?;
        }
    }
    // Views may read views: plan them until none is left or no progress is made.
    let mut pending = stored_views;
    while !pending.is_empty() {
        let mut progressed = false;
        for (name, q) in std::mem::take(&mut pending) {
            match plan_query(&ctx, &q, &p.root).await {
                Ok(plan) => {
                    ctx.register_table(table_ref(&name), Arc::new(ViewTable::new(plan, Some(q.sql.clone()))))?;
                    progressed = true;
                }
                Err(_) => {
                    pending.insert(name, q);
                }
            }
        }
        if !progressed {
            break;
        }
    }

    for r in &q.reads {
        let Read::Dataset { name, .. } = r else { continue };
        let Some(d) = p.dataset(name) else {
            if *name == log_name && !ctx.table_exist(table_ref(name)).unwrap_or(false) {
                return Err(plan_error("`event_log` is empty: no run has been logged yet".into()));
            }
            continue;
        };
        if ctx.table_exist(table_ref(name)).unwrap_or(false) {
            continue;
        }
        let why = match d.kind {
            DatasetKind::TemporaryView => "is a temporary view, which exists only while the pipeline runs".to_string(),
            DatasetKind::Sink => "is a sink; read its files directly".to_string(),
            DatasetKind::MaterializedView | DatasetKind::StreamingTable | DatasetKind::PersistentView => {
                format!("has no data yet (its {} has not been written): run `thund run` first", d.kind)
            }
        };
        return Err(plan_error(format!("`{}` {why}", name.name)));
    }
    let plan = plan_query(&ctx, &q, &p.root).await?;
    // A failure while the query runs (a constant that fails, a malformed value) in Spark's words,
    // without the layers it surfaced through.
    let failed =
        |e: datafusion::error::DataFusionError| NativeError::Execution(thund_sql::in_sparks_words(&e.to_string()));
    let df = ctx.execute_logical_plan(plan).await.map_err(failed)?;
    if let Some(analyze) = explain {
        let rows = df.explain(false, analyze)?.collect().await.map_err(failed)?;
        return Ok(plan_row(&rows));
    }
    let schema = Arc::clone(df.schema().inner());
    Ok(QueryResult { schema, batches: df.collect().await.map_err(failed)? })
}

/// Whether `sql` is an `EXPLAIN` (`Some(true)` with `ANALYZE`), and the query it explains.
fn explained(sql: &str) -> std::result::Result<(Option<bool>, &str), String> {
    let Some(rest) = keyword(sql, "EXPLAIN") else { return Ok((None, sql)) };
    if let Some(query) = keyword(rest, "ANALYZE") {
        return Ok((Some(true), query));
    }
    let mode = ["EXTENDED", "FORMATTED", "CODEGEN", "COST"].into_iter().find(|m| keyword(rest, m).is_some());
    match mode {
        Some(mode) => Err(format!(
            "`EXPLAIN {mode}` is Spark's; the native backend explains with `EXPLAIN` (its logical and physical plans) \
             or `EXPLAIN ANALYZE` (the physical plan with each operator's metrics)"
        )),
        None => Ok((Some(false), rest)),
    }
}

/// The rest of `sql` after its first word when that word is `word` (in any case).
fn keyword<'a>(sql: &'a str, word: &str) -> Option<&'a str> {
    let sql = sql.trim_start();
    let (first, rest) = sql.split_at_checked(word.len())?;
    (first.eq_ignore_ascii_case(word) && rest.starts_with(char::is_whitespace)).then(|| rest.trim_start())
}

/// DataFusion's `EXPLAIN` rows (a plan's kind, the plan) as Spark's one `plan` value.
fn plan_row(rows: &[RecordBatch]) -> QueryResult {
    let mut text = String::new();
    for batch in rows {
        let text_of = |i: usize| arrow::compute::cast(batch.column(i), &DataType::Utf8).ok();
        let (Some(kind), Some(plan)) = (text_of(0), text_of(1)) else { continue };
        let (kind, plan) = (kind.as_any().downcast_ref::<StringArray>(), plan.as_any().downcast_ref::<StringArray>());
        for (kind, plan) in kind.into_iter().flatten().zip(plan.into_iter().flatten()) {
            text.push_str(&format!("== {} ==\n{}\n", kind.unwrap_or_default(), plan.unwrap_or_default()));
        }
    }
    let schema = Arc::new(Schema::new(vec![Field::new("plan", DataType::Utf8, false)]));
    let column: arrow::array::ArrayRef = Arc::new(StringArray::from(vec![text.trim_end().to_string()]));
    let batches = RecordBatch::try_new(Arc::clone(&schema), vec![column]).into_iter().collect();
    QueryResult { schema, batches }
}

/// The statements of `sql`, split at the semicolons outside quotes and comments (empty ones left
/// out).
fn statements(sql: &str) -> Vec<&str> {
    let (mut out, mut start, mut quote, mut chars) = (Vec::new(), 0, None, sql.char_indices().peekable());
    while let Some((i, c)) = chars.next() {
        match (quote, c) {
            (Some(_), '\\') => {
                chars.next();
            }
            (Some(q), _) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(c),
            (None, '-') if chars.peek().is_some_and(|(_, n)| *n == '-') => {
                while chars.next_if(|(_, n)| *n != '\n').is_some() {}
            }
            (None, ';') => {
                out.push(&sql[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&sql[start..]);
    out.into_iter().map(str::trim).filter(|s| !s.is_empty()).collect()
}

/// `SET key = value` as its key and value (`None` for `SET key`, which shows the value); `None`
/// if `statement` is not a `SET`.
fn set_statement(statement: &str) -> Option<(String, Option<String>)> {
    let (word, rest) = statement.split_at_checked(3)?;
    if !word.eq_ignore_ascii_case("SET") || !rest.starts_with(char::is_whitespace) {
        return None;
    }
    let (key, value) = match rest.split_once('=') {
        Some((k, v)) => (k, Some(v.trim().to_string())),
        None => (rest, None),
    };
    Some((key.trim().trim_matches('`').to_string(), value))
}

/// The value of `key` under `configuration`: as set, else the default of a mode the embedded
/// engine honours.
fn setting(configuration: &BTreeMap<String, String>, key: &str) -> Option<String> {
    if let Some((_, v)) = configuration.iter().find(|(k, _)| k.trim().eq_ignore_ascii_case(key)) {
        return Some(v.clone());
    }
    let (_, default) = knut_thund::sql_conf::RUN_MODES.iter().find(|(k, _)| k.eq_ignore_ascii_case(key))?;
    Some(default.to_string())
}

/// What Spark answers a `SET`: one row of `key` and `value`.
fn setting_row(key: &str, value: &str) -> QueryResult {
    let schema = Arc::new(Schema::new(vec![
        Field::new("key", DataType::Utf8, false),
        Field::new("value", DataType::Utf8, false),
    ]));
    let columns: Vec<arrow::array::ArrayRef> =
        vec![Arc::new(StringArray::from(vec![key])), Arc::new(StringArray::from(vec![value]))];
    let batches = RecordBatch::try_new(Arc::clone(&schema), columns).into_iter().collect();
    QueryResult { schema, batches }
}

/// The stored table of dataset `name`: its schema and row count, opening only that table;
/// `None` before its first write.
pub async fn table_summary(
    p: &Pipeline,
    name: &QualifiedName,
    engine: &EngineOptions,
) -> Result<Option<(SchemaRef, u64)>> {
    let storage = Storage::of(p)?;
    let ctx = pipeline_context(p, engine)?;
    let Some(provider) = open_stored_table(&ctx, &storage, name).await? else { return Ok(None) };
    let schema = provider.schema();
    let rows = ctx.read_table(provider)?.count().await?;
    Ok(Some((schema, rows as u64)))
}

#[cfg(test)]
mod tests {
    use super::{explained, set_statement, statements};

    #[test]
    fn explain_takes_the_query_after_it() {
        assert_eq!(explained("SELECT 1"), Ok((None, "SELECT 1")));
        assert_eq!(explained("explain  SELECT 1"), Ok((Some(false), "SELECT 1")));
        assert_eq!(explained("EXPLAIN analyze\nSELECT 1"), Ok((Some(true), "SELECT 1")));
        assert_eq!(explained("EXPLAINED SELECT 1"), Ok((None, "EXPLAINED SELECT 1")));
        assert!(explained("EXPLAIN FORMATTED SELECT 1").unwrap_err().contains("EXPLAIN ANALYZE"));
    }

    #[test]
    fn a_query_text_splits_at_semicolons_outside_quotes_and_comments() {
        assert_eq!(statements("SET a=1; SELECT ';' -- x; y\n, 2;"), vec!["SET a=1", "SELECT ';' -- x; y\n, 2"]);
        assert_eq!(statements("SELECT 'it\\'s;'"), vec!["SELECT 'it\\'s;'"]);
        assert_eq!(statements(" ; "), Vec::<&str>::new());
    }

    #[test]
    fn set_statements_give_their_key_and_value() {
        let set = |k: &str, v: Option<&str>| Some((k.to_string(), v.map(str::to_string)));
        assert_eq!(set_statement("SET spark.sql.ansi.enabled = false"), set("spark.sql.ansi.enabled", Some("false")));
        assert_eq!(set_statement("set `k`=v"), set("k", Some("v")));
        assert_eq!(set_statement("SET k"), set("k", None));
        assert_eq!(set_statement("SELECT 1"), None);
        assert_eq!(set_statement("SETTINGS"), None);
    }
}
