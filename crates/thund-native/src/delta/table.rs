//! Delta tables: opening them, shaping a query's rows to fit a table, and the two commits a
//! flow makes — an overwrite (materialized views) and an append that records the flow's batch
//! number (streaming tables, Delta sinks).

use std::sync::Arc;

use arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::dataframe::DataFrame;
use datafusion::logical_expr::{cast, ident, Expr, LogicalPlan};
use datafusion::prelude::SessionContext;
use deltalake::kernel::transaction::CommitProperties;
use deltalake::kernel::Transaction;
use deltalake::operations::vacuum::VacuumMode;
use deltalake::operations::write::WriteBuilder;
use deltalake::protocol::SaveMode;
use deltalake::DeltaTable;
use futures::StreamExt;
use knut_thund::ir::{ColumnDef, Dataset, Flow, QualifiedName};
use url::Url;

use crate::delta::storage::Storage;
use crate::delta::write::{parallel_write, writer_properties_for, Commit};
use crate::delta::{delta_storable, INVALID_COLUMN_CHARS};
use crate::engine::table_ref;
use crate::error::{NativeError, Result};
use thund_sql::parse_type;

/// The table properties a new table is created with. Creating a table refuses keys Delta does not
/// know; only `delta.*` ones go in here, the rest follow in `sync_properties` right after.
fn creation_properties(d: &Dataset) -> Vec<(String, Option<String>)> {
    let delta = d.details.properties.iter().filter(|(k, _)| k.starts_with("delta."));
    delta.map(|(k, v)| (k.clone(), Some(v.clone()))).collect()
}

/// delta-rs's write of `plan` into `table` (the path for what `write::parallel_write` does not
/// handle), with our Parquet settings.
fn delta_write(ctx: &SessionContext, table: DeltaTable, plan: LogicalPlan, mode: SaveMode, name: &str) -> WriteBuilder {
    table
        .write(Vec::<RecordBatch>::new())
        .with_writer_properties(writer_properties_for(plan.schema().as_arrow()))
        .with_input_plan(plan)
        .with_session_state(Arc::new(ctx.state()))
        .with_save_mode(mode)
        .with_table_name(name.to_string())
}

/// Creation-time details of the dataset's table: partitioning, properties, comment.
fn with_table_details(mut builder: WriteBuilder, d: &Dataset) -> WriteBuilder {
    if !d.details.partitioned_by.is_empty() {
        builder = builder.with_partition_columns(d.details.partitioned_by.clone());
    }
    let delta_keys = creation_properties(d);
    if !delta_keys.is_empty() {
        builder = builder.with_configuration(delta_keys);
    }
    if let Some(c) = &d.comment {
        builder = builder.with_description(c.clone());
    }
    builder
}

/// Brings a table's properties up to the dataset's declared `TBLPROPERTIES`: before writing to
/// an existing table, and right after creating one (creation takes only `delta.*` keys). One
/// metadata commit, only when a declared value differs; properties no longer declared are left as
/// they are, as `ALTER TABLE … SET TBLPROPERTIES` leaves them.
async fn sync_properties(table: DeltaTable, d: &Dataset) -> Result<DeltaTable> {
    if d.details.properties.is_empty() {
        return Ok(table);
    }
    let current = table.snapshot().map(|s| s.metadata().configuration().clone()).unwrap_or_default();
    let changed: std::collections::HashMap<String, String> = d
        .details
        .properties
        .iter()
        .filter(|(k, v)| current.get(k.as_str()) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if changed.is_empty() {
        return Ok(table);
    }
    Ok(table.set_tbl_properties().with_properties(changed).with_raise_if_not_exists(false).await?)
}

/// Makes the new version of a dataset's table what later flows in this run read.
async fn register_written(ctx: &SessionContext, d: &Dataset, table: &DeltaTable) -> Result<()> {
    table.update_datafusion_session(&ctx.state())?;
    let provider = crate::delta::filtered::of(table, None).await?;
    let _ = ctx.deregister_table(table_ref(&d.name));
    ctx.register_table(table_ref(&d.name), provider)?;
    Ok(())
}

/// Matches a named flow's columns to the existing target: by name with `BY NAME`, else by
/// position, as `INSERT INTO` does.
pub(crate) async fn align_to_target(
    ctx: &SessionContext,
    f: &Flow,
    plan: LogicalPlan,
    target: &DeltaTable,
    by_name: bool,
) -> Result<LogicalPlan> {
    let err = |message: String| NativeError::Plan { location: f.location.to_string(), message };
    let target_schema = target.table_provider().await?.schema();
    let df = DataFrame::new(ctx.state(), plan);
    let got: Vec<String> = df.schema().fields().iter().map(|fl| fl.name().clone()).collect();
    let want: Vec<&str> = target_schema.fields().iter().map(|fl| fl.name().as_str()).collect();
    let exprs: Vec<Expr> = if by_name {
        let missing: Vec<&str> =
            want.iter().copied().filter(|w| !got.iter().any(|g| g.eq_ignore_ascii_case(w))).collect();
        let extra: Vec<&str> =
            got.iter().map(String::as_str).filter(|g| !want.iter().any(|w| w.eq_ignore_ascii_case(g))).collect();
        if !missing.is_empty() || !extra.is_empty() {
            return Err(err(format!(
                "flow `{}` does not match its target's columns by name (missing: {}; not in the target: {})",
                f.name,
                if missing.is_empty() { "none".to_string() } else { missing.join(", ") },
                if extra.is_empty() { "none".to_string() } else { extra.join(", ") }
            )));
        }
        want.iter()
            .map(|w| {
                let g = got.iter().find(|g| g.eq_ignore_ascii_case(w)).cloned().unwrap_or_default();
                ident(g).alias(*w)
            })
            .collect()
    } else {
        if got.len() != want.len() {
            return Err(err(format!(
                "flow `{}` produces {} columns, its target has {} ({}); use `INSERT INTO … BY NAME` to match by name",
                f.name,
                got.len(),
                want.len(),
                want.join(", ")
            )));
        }
        got.iter().zip(&want).map(|(g, w)| ident(g).alias(*w)).collect()
    };
    Ok(df.select(exprs)?.into_unoptimized_plan())
}

/// How a streaming table's stored columns differ from what its own query now returns (its
/// definition changed since the table was written).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct SchemaChange {
    /// Columns the query returns that the table lacks: added, NULL in the earlier rows.
    pub added: Vec<String>,
    /// Columns of the table the query no longer returns: kept, NULL in the new rows.
    pub dropped: Vec<String>,
}

impl SchemaChange {
    /// The warning a run gives for the change, if there is one.
    pub(crate) fn warning(&self, d: &Dataset) -> Option<String> {
        let mut parts = Vec::new();
        if !self.added.is_empty() {
            parts.push(format!("adds {} (NULL in the rows written before)", self.added.join(", ")));
        }
        if !self.dropped.is_empty() {
            parts.push(format!("no longer returns {} (kept, NULL in the new rows)", self.dropped.join(", ")));
        }
        (!parts.is_empty()).then(|| {
            format!(
                "the definition of streaming table `{}` changed since its rows were written: it {}; \
                 `thund run --full-refresh {}` rewrites every row with the new definition",
                d.name,
                parts.join(" and "),
                d.name.name
            )
        })
    }
}

/// The rows of a streaming table's own flow shaped to the table it appends to, as DLT evolves a
/// streaming table whose query changed: the table's columns in its order (NULL where the query
/// no longer returns one), then the query's new columns. Unchanged columns pass as they are.
pub(crate) async fn evolve_to_target(
    ctx: &SessionContext,
    plan: LogicalPlan,
    target: &DeltaTable,
) -> Result<(LogicalPlan, SchemaChange)> {
    let target_schema = target.table_provider().await?.schema();
    let df = DataFrame::new(ctx.state(), plan);
    let got: Vec<String> = df.schema().fields().iter().map(|fl| fl.name().clone()).collect();
    let has = |names: &[String], n: &str| names.iter().any(|g| g.eq_ignore_ascii_case(n));
    let stored: Vec<String> = target_schema.fields().iter().map(|fl| fl.name().clone()).collect();
    let change = SchemaChange {
        added: got.iter().filter(|g| !has(&stored, g)).cloned().collect(),
        dropped: stored.iter().filter(|w| !has(&got, w)).cloned().collect(),
    };
    if change == SchemaChange::default() {
        return Ok((df.into_unoptimized_plan(), change));
    }
    let mut exprs: Vec<Expr> = target_schema
        .fields()
        .iter()
        .map(|w| match got.iter().find(|g| g.eq_ignore_ascii_case(w.name())) {
            Some(g) => ident(g).alias(w.name()),
            None => cast(datafusion::prelude::lit(datafusion::scalar::ScalarValue::Null), w.data_type().clone())
                .alias(w.name()),
        })
        .collect();
    exprs.extend(change.added.iter().map(ident));
    Ok((df.select(exprs)?.into_unoptimized_plan(), change))
}

/// `table` with the columns of `schema` it lacks added (nullable) in a commit of their own,
/// before a batch that writes them: a crash in between leaves the columns, empty, and the batch
/// redone writes them.
pub(crate) async fn with_new_columns(table: DeltaTable, schema: &arrow::datatypes::Schema) -> Result<DeltaTable> {
    use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
    let stored = table.table_provider().await?.schema();
    let new: Vec<arrow::datatypes::Field> = schema
        .fields()
        .iter()
        .filter(|f| !stored.fields().iter().any(|s| s.name().eq_ignore_ascii_case(f.name())))
        .map(|f| f.as_ref().clone().with_nullable(true))
        .collect();
    if new.is_empty() {
        return Ok(table);
    }
    let normalized =
        deltalake::kernel::schema::cast::normalize_for_delta(&Arc::new(arrow::datatypes::Schema::new(new)));
    let fields: Vec<deltalake::kernel::StructField> =
        normalized.fields().iter().map(|f| f.as_ref().try_into_kernel()).collect::<std::result::Result<_, _>>()?;
    Ok(table.add_columns().with_fields(fields).await?)
}

/// Appends the plan's rows in one Delta commit that also records the flow's batch number (an
/// application transaction), which is how a restart tells whether the batch landed.
pub(crate) async fn write_append(
    ctx: &SessionContext,
    url: &Url,
    d: &Dataset,
    plan: LogicalPlan,
    existing: Option<DeltaTable>,
    txn: Transaction,
    register: bool,
) -> Result<u64> {
    ensure_local_dir(url)?;
    let unloaded = || -> Result<DeltaTable> { Ok(deltalake::DeltaTableBuilder::from_url(url.clone())?.build()?) };
    let (table, created) = match existing {
        Some(t) => (sync_properties(t, d).await?, false),
        // A new unpartitioned table starts empty in a commit of its own — a streaming table's
        // state before its first batch — so the batch itself takes the parallel write. A crash
        // in between leaves an empty table without the batch's transaction: the batch reruns.
        None if d.details.partitioned_by.is_empty() => {
            let table = create_empty(unloaded()?, d, plan.schema().inner()).await?;
            (sync_properties(table, d).await?, false)
        }
        None => (unloaded()?, true),
    };
    if !created && d.details.partitioned_by.is_empty() {
        if let Some(w) = parallel_write(ctx, &table, plan.clone(), Commit::Append(txn.clone())).await? {
            if register {
                register_written(ctx, d, &w.table).await?;
            }
            return Ok(w.rows);
        }
    }
    let builder = delta_write(ctx, table, plan, SaveMode::Append, &d.name.name)
        .with_commit_properties(CommitProperties::default().with_application_transaction(txn));
    let builder = with_table_details(builder, d);
    let table = builder.await?;
    crate::delta::write::checkpointed(&table).await;
    let rows = last_commit_rows(&table).await;
    let table = if created { sync_properties(table, d).await? } else { table };
    if register {
        register_written(ctx, d, &table).await?;
    }
    Ok(rows)
}

/// Appends `batch` to the Delta table at `url` (created by this commit when `existing` is
/// `None`), recording `txn`: plain tables Þund keeps for itself, such as an AUTO CDC history.
pub(crate) async fn append_batches(
    url: &Url,
    existing: Option<DeltaTable>,
    batch: RecordBatch,
    txn: Transaction,
) -> Result<DeltaTable> {
    ensure_local_dir(url)?;
    let (table, created) = match existing {
        Some(t) => (t, false),
        None => (deltalake::DeltaTableBuilder::from_url(url.clone())?.build()?, true),
    };
    let properties = writer_properties_for(&batch.schema());
    let mut write = table.write(vec![batch]);
    if created {
        // Rows leave such a table by deletion vectors (`deletion`), not by rewriting its files.
        write = write.with_configuration([("delta.enableDeletionVectors", Some("true"))]);
    }
    let table = write
        .with_save_mode(SaveMode::Append)
        .with_writer_properties(properties)
        .with_commit_properties(CommitProperties::default().with_application_transaction(txn))
        .await?;
    crate::delta::write::checkpointed(&table).await;
    Ok(table)
}

/// Commits `plan`'s rows into `target` with `commit` (which files it replaces or marks, and the
/// flow's batch), and registers the new version for the flows that read it. Returns the rows
/// written and the version committed.
pub(crate) async fn commit_rows(
    ctx: &SessionContext,
    d: &Dataset,
    target: &DeltaTable,
    plan: LogicalPlan,
    commit: Commit,
) -> Result<(u64, i64)> {
    match parallel_write(ctx, target, plan, commit).await? {
        Some(w) => {
            register_written(ctx, d, &w.table).await?;
            Ok((w.rows, w.table.version().map_or(-1, |v| v as i64)))
        }
        None => Err(NativeError::Execution(format!(
            "AUTO CDC into `{}`: the native backend rewrites only unpartitioned tables on Delta's basic protocol \
             (deletion vectors aside)",
            d.name
        ))),
    }
}

/// Creates `table` (not yet on storage) with no rows: `schema` as Delta would store it and the
/// dataset's creation details.
async fn create_empty(table: DeltaTable, d: &Dataset, schema: &arrow::datatypes::SchemaRef) -> Result<DeltaTable> {
    use deltalake::kernel::engine::arrow_conversion::TryIntoKernel;
    let schema = deltalake::kernel::schema::cast::normalize_for_delta(schema);
    let columns: deltalake::kernel::StructType = schema
        .as_ref()
        .try_into_kernel()
        .map_err(|e| NativeError::Storage(format!("`{}`: no Delta schema for {schema:?}: {e}", d.name)))?;
    let mut builder = table.create().with_columns(columns.fields().cloned()).with_table_name(d.name.name.clone());
    let delta_keys = creation_properties(d);
    if !delta_keys.is_empty() {
        builder = builder.with_configuration(delta_keys);
    }
    if let Some(c) = &d.comment {
        builder = builder.with_comment(c.clone());
    }
    Ok(builder.await?)
}

/// Opens the Delta table of `name` if it has been written, registering its store with `ctx`.
pub(crate) async fn open_stored_table(
    ctx: &SessionContext,
    storage: &Storage,
    name: &QualifiedName,
) -> Result<Option<Arc<dyn TableProvider>>> {
    let Some(table) = storage.latest_table(name).await? else { return Ok(None) };
    table.update_datafusion_session(&ctx.state())?;
    Ok(Some(crate::delta::filtered::of(&table, None).await?))
}

/// Creates the folder of a local table location (delta-rs needs it to exist); object stores
/// have no folders.
fn ensure_local_dir(url: &Url) -> Result<()> {
    if url.scheme() == "file" {
        let path = url.to_file_path().map_err(|_| NativeError::Storage(format!("`{url}` is not a local path")))?;
        std::fs::create_dir_all(&path).map_err(|e| NativeError::io(&path, e))?;
    }
    Ok(())
}

pub(crate) fn dir_url(path: &std::path::Path) -> Result<url::Url> {
    url::Url::from_directory_path(path)
        .map_err(|_| NativeError::Storage(format!("`{}` is not an absolute path", path.display())))
}

/// Makes the query's result fit the table: the declared schema (names must match; values are
/// cast to the declared types), Delta-storable types, and column names Delta accepts.
pub(crate) fn conform(ctx: &SessionContext, d: &Dataset, f: &Flow, plan: LogicalPlan) -> Result<LogicalPlan> {
    let err = |message: String| NativeError::Plan { location: f.location.to_string(), message };
    let df = DataFrame::new(ctx.state(), plan);
    let fields: Vec<(String, arrow::datatypes::DataType)> =
        df.schema().fields().iter().map(|fl| (fl.name().clone(), fl.data_type().clone())).collect();
    let mut exprs: Vec<Expr> = Vec::with_capacity(fields.len());
    let declared = &d.details.columns;
    // Declared columns are matched to the query's by name, as Spark and DLT match them, and keep
    // the declared order: JSON inference, for one, orders columns by name.
    let order: Vec<(usize, Option<&ColumnDef>)> = match declared.is_empty() {
        true => (0..fields.len()).map(|i| (i, None)).collect(),
        false => {
            let position = |name: &str| fields.iter().position(|(n, _)| n.eq_ignore_ascii_case(name));
            let missing: Vec<&str> =
                declared.iter().filter(|c| position(&c.name).is_none()).map(|c| c.name.as_str()).collect();
            let extra: Vec<&str> = fields
                .iter()
                .filter(|(n, _)| !declared.iter().any(|c| c.name.eq_ignore_ascii_case(n)))
                .map(|(n, _)| n.as_str())
                .collect();
            if !missing.is_empty() || !extra.is_empty() {
                let mut what = Vec::new();
                if !missing.is_empty() {
                    what.push(format!("the query has no {}", missing.join(", ")));
                }
                if !extra.is_empty() {
                    what.push(format!("{} not declared", extra.join(", ")));
                }
                return Err(err(format!(
                    "the query's columns ({}) do not match the declared schema of `{}` ({}): {}",
                    fields.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>().join(", "),
                    d.name,
                    declared.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", "),
                    what.join("; ")
                )));
            }
            declared.iter().filter_map(|c| position(&c.name).map(|i| (i, Some(c)))).collect()
        }
    };
    let mut changed = order.iter().enumerate().any(|(at, (i, _))| at != *i);
    for (i, column) in order {
        let (name, dt) = &fields[i];
        if let Some(bad) = name.chars().find(|c| INVALID_COLUMN_CHARS.contains(c)) {
            return Err(err(format!(
                "column `{name}` of `{}` has the character {bad:?}, which Delta tables do not allow in names \
                 (hint: give it a name with `AS`)",
                d.name
            )));
        }
        if thund_sql::holds_variant(dt) {
            return Err(err(format!(
                "column `{name}` of `{}` is a VARIANT, which the native backend does not store in Delta (Spark \
                 writes Delta's variantType feature): the dataset runs on the Spark backend, or store \
                 `to_json({name})` as a STRING",
                d.name
            )));
        }
        let target = match column {
            Some(c) => Some(parse_type(&c.data_type).map_err(|m| err(format!("column `{}`: {m}", c.name)))?),
            None => None,
        };
        let target = target.map(|t| delta_storable(&t).unwrap_or(t)).or_else(|| delta_storable(dt));
        let out_name = column.map_or(name.as_str(), |c| c.name.as_str());
        match target {
            Some(t) if &t != dt => {
                changed = true;
                exprs.push(cast(ident(name), t).alias(out_name));
            }
            _ if out_name != name => {
                changed = true;
                exprs.push(ident(name).alias(out_name));
            }
            _ => exprs.push(ident(name)),
        }
    }
    let df = if changed { df.select(exprs)? } else { df };
    Ok(df.into_unoptimized_plan())
}

/// Replaces the table's contents with the plan's rows in one Delta commit: readers see the old
/// or the new version, never a partial one; on failure no commit happens and the old version
/// stays current.
pub(crate) async fn write_overwrite(
    ctx: &SessionContext,
    storage: &Storage,
    d: &Dataset,
    plan: LogicalPlan,
) -> Result<u64> {
    let exists = storage.is_table(&storage.table_key(&d.name)).await?;
    let (table, rows) = overwrite(ctx, &storage.table_url(&d.name), exists, &d.name.name, Some(d), plan).await?;
    let table = if exists { table } else { sync_properties(table, d).await? };
    register_written(ctx, d, &table).await?;
    Ok(rows)
}

/// Replaces the rows of the view's table that `predicate` selects with the plan's rows (all of
/// which it must select) in one Delta commit, and registers the new version.
pub(crate) async fn write_replace_where(
    ctx: &SessionContext,
    storage: &Storage,
    d: &Dataset,
    plan: LogicalPlan,
    predicate: Expr,
) -> Result<u64> {
    let table = sync_properties(DeltaTable::try_from_url(storage.table_url(&d.name)).await?, d).await?;
    let table = delta_write(ctx, table, plan, SaveMode::Overwrite, &d.name.name).with_replace_where(predicate).await?;
    crate::delta::write::checkpointed(&table).await;
    let rows = last_commit_rows(&table).await;
    register_written(ctx, d, &table).await?;
    Ok(rows)
}

/// [`write_overwrite`] of a table of Þund's own (no dataset details, not registered), and the
/// rows written.
pub(crate) async fn write_overwrite_at(
    ctx: &SessionContext,
    storage: &Storage,
    key: &str,
    name: &str,
    plan: LogicalPlan,
) -> Result<(DeltaTable, u64)> {
    let exists = storage.is_table(key).await?;
    overwrite(ctx, &storage.url_of(&format!("{key}/")), exists, name, None, plan).await
}

async fn overwrite(
    ctx: &SessionContext,
    url: &Url,
    exists: bool,
    name: &str,
    d: Option<&Dataset>,
    plan: LogicalPlan,
) -> Result<(DeltaTable, u64)> {
    ensure_local_dir(url)?;
    let url = url.clone();
    // Loading a location that holds no table yet only produces noise; build it unloaded instead.
    let table = if exists {
        let table = DeltaTable::try_from_url(url).await?;
        let table = match d {
            Some(d) => sync_properties(table, d).await?,
            None => table,
        };
        // A changed PARTITIONED BY rewrites the layout: delta-rs's write does that.
        if d.is_none_or(|d| d.details.partitioned_by.is_empty()) {
            if let Some(w) = parallel_write(ctx, &table, plan.clone(), Commit::Overwrite).await? {
                return Ok((vacuum(w.table).await, w.rows));
            }
        }
        table
    } else {
        deltalake::DeltaTableBuilder::from_url(url)?.build()?
    };
    let builder = delta_write(ctx, table, plan, SaveMode::Overwrite, name)
        .with_schema_mode(deltalake::operations::write::SchemaMode::Overwrite);
    let builder = match d {
        Some(d) => with_table_details(builder, d),
        None => builder,
    };
    let table = builder.await?;
    crate::delta::write::checkpointed(&table).await;
    // Counted before the vacuum, whose own commit may come next.
    let rows = last_commit_rows(&table).await;
    Ok((vacuum(table).await, rows))
}

/// Deletes the files an overwrite left behind once no version within the table's retention
/// (`delta.deletedFileRetentionDuration`, 7 days unless set) needs them — otherwise every refresh
/// of a materialized view would keep its old files forever. Files of failed writes, which no
/// version references, go the same way. Commits (VACUUM START/END) only when it deletes
/// something. The data is already committed, so a failure here is only logged.
async fn vacuum(table: DeltaTable) -> DeltaTable {
    let before = table.clone();
    match table.vacuum().with_mode(VacuumMode::Full).await {
        Ok((table, _)) => table,
        Err(e) => {
            tracing::warn!(table = %before.table_url(), error = %e, "old files could not be vacuumed");
            let mut table = before;
            let _ = table.update_state().await;
            table
        }
    }
}

/// Opens the table at `url` and vacuums it (`vacuum`); a failure is only logged.
pub(crate) async fn vacuum_at(url: &Url) {
    match DeltaTable::try_from_url(url.clone()).await {
        Ok(table) => drop(vacuum(table).await),
        Err(e) => tracing::warn!(table = %url, error = %e, "old files could not be vacuumed"),
    }
}

/// A provider over the Delta table at `url`, its store registered with `ctx`.
pub(crate) async fn open_at(ctx: &SessionContext, url: &Url) -> Result<Arc<dyn TableProvider>> {
    let table = deltalake::open_table(url.clone()).await?;
    table.update_datafusion_session(&ctx.state())?;
    crate::delta::filtered::of(&table, None).await
}

/// Rows added by the table's latest commit, from its operation metrics.
async fn last_commit_rows(table: &DeltaTable) -> u64 {
    let Some(Ok(last)) = table.history(Some(1)).next().await else { return 0 };
    last.info
        .get("operationMetrics")
        .cloned()
        .and_then(|m| m.get("num_added_rows").and_then(|v| v.as_u64()))
        .unwrap_or(0)
}
