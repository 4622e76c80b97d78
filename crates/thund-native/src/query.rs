//! `thund query`: SQL over a pipeline's stored tables and persistent views, in the same dialect.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use datafusion::datasource::ViewTable;
use knut_thund::frontend::{analyze_query, NameContext};
use knut_thund::ir::{DatasetKind, Pipeline, QualifiedName, Query, Read, SourceLocation};

use crate::engine::{ensure_schema, pipeline_context, plan_query, table_ref, EngineOptions};
use crate::error::{NativeError, Result};
use crate::storage::Storage;
use crate::table::open_stored_table;

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
    let storage = Storage::of(p)?;
    let ctx = pipeline_context(p, engine)?;
    let location = SourceLocation::new("<query>", 1, 1);
    let names = NameContext { catalog: p.catalog.clone(), database: p.database.clone() };
    let plan_error = |message: String| NativeError::Plan { location: location.to_string(), message };
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
    let df = ctx.execute_logical_plan(plan).await?;
    let schema = Arc::clone(df.schema().inner());
    Ok(QueryResult { schema, batches: df.collect().await? })
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
