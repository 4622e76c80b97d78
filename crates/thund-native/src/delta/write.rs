//! Writing a query's rows into an existing Delta table with one Parquet writer per partition.
//!
//! delta-rs's write operation feeds every partition of an unpartitioned plan into a single
//! writer, so Parquet encoding — most of the CPU of a large write — runs on one core while the
//! query's other partitions wait on it (TPC-H SF1's 6M-row join: 140% CPU of 200%). Here each
//! partition of the physical plan drains into its own `DeltaWriter` (delta-rs's file writer, with
//! the same statistics and file sizes) on its own task, and all files land in one commit: an
//! overwrite removes every current file in that same commit, an append records the flow's
//! application transaction in it. A failure before the commit leaves the table as it was; the
//! files already written are unreferenced.
//!
//! Only tables this path can write exactly as delta-rs would take it: existing, unpartitioned
//! (partitioned writes are already parallel in delta-rs), on the basic writer protocol (≤ 2: no
//! column mapping, change data feed, generated columns or other writer features; or table
//! features limited to deletion vectors, which AUTO CDC targets use, and the legacy append-only
//! and invariants features the checks below cover), without
//! CHECK constraints or invariants, not append-only when overwriting, and whose schema the plan
//! matches column for column. Anything else returns `None` and the caller uses delta-rs's write.

use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use arrow::record_batch::RecordBatch;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::ExecutionPlanProperties;
use datafusion::prelude::SessionContext;
use deltalake::datafile::writer::{DeltaWriter, WriterConfig};
use deltalake::kernel::transaction::{CommitBuilder, CommitProperties};
use deltalake::kernel::{Action, DeletionVectorDescriptor, Transaction};
use deltalake::operations::write::configs::WriterStatsConfig;
use deltalake::parquet::basic::Compression;
use deltalake::parquet::file::properties::WriterProperties;
use deltalake::protocol::{DeltaOperation, SaveMode};
use deltalake::table::config::TablePropertiesExt;
use deltalake::DeltaTable;
use futures::{StreamExt, TryStreamExt};
use tokio::task::JoinSet;

use crate::error::{NativeError, Result};

/// Parquet settings of every Delta file Þund writes: delta-rs's (Snappy, dictionaries, page
/// statistics) with a 128 KiB dictionary page limit instead of 1 MiB. A column whose distinct
/// values outgrow the limit falls back to plain encoding; at 1 MiB, high-cardinality columns
/// (keys, prices) interned up to 128k values per row group into a dictionary that is then
/// dropped. On TPC-H SF1's 16-column silver table the encoder takes about 12% less time and the
/// files are 4% smaller (`examples/parquet_writer.rs`).
pub(crate) fn writer_properties() -> WriterProperties {
    builder().build()
}

fn builder() -> deltalake::parquet::file::properties::WriterPropertiesBuilder {
    WriterProperties::builder().set_compression(Compression::SNAPPY).set_dictionary_page_size_limit(128 * 1024)
}

/// [`writer_properties`] for a table of `schema`: an integer or time column whose values outgrow
/// its dictionary (keys, sequence numbers, ids) falls back to `DELTA_BINARY_PACKED` instead of
/// plain values. Such columns are often ascending or near one another, so the deltas pack into
/// a few bits: in `bench/cdc.py`'s AUTO CDC history of 1M sequential keys the key column went
/// from 4.0 MB to 0.1 MB and pyarrow reads it in 4.4 ms instead of 17.5 ms, which is what finding
/// a batch's keys costs (`keyscan`). Every Parquet reader (Spark, DuckDB, pyarrow) reads the
/// encoding.
pub(crate) fn writer_properties_for(schema: &arrow::datatypes::Schema) -> WriterProperties {
    use arrow::datatypes::DataType as T;
    let mut b = builder();
    for f in schema.fields() {
        let packs = matches!(
            f.data_type(),
            T::Int8
                | T::Int16
                | T::Int32
                | T::Int64
                | T::UInt8
                | T::UInt16
                | T::UInt32
                | T::UInt64
                | T::Date32
                | T::Timestamp(_, _)
        );
        if packs {
            let path = deltalake::parquet::schema::types::ColumnPath::new(vec![f.name().clone()]);
            b = b.set_column_encoding(path, deltalake::parquet::basic::Encoding::DELTA_BINARY_PACKED);
        }
    }
    b.build()
}

/// What the commit does besides adding the new files.
pub(crate) enum Commit {
    /// Remove every current file: the new files are the table.
    Overwrite,
    /// Keep the current files, and record the flow's batch number.
    Append(Transaction),
    /// Remove the `dropped` files and give the `marked` ones new deletion vectors (paths as the
    /// table lists them), and record the flow's batch if there is one: the new files hold the
    /// rows that replace the removed ones (an AUTO CDC batch, `deletion`).
    Replace {
        /// The files removed whole.
        dropped: Vec<String>,
        /// The files kept, each with its new vector.
        marked: Vec<(String, DeletionVectorDescriptor)>,
        /// The flow's batch.
        txn: Option<Transaction>,
    },
}

/// A committed parallel write: the table at its new version and the rows it added.
pub(crate) struct Committed {
    pub table: DeltaTable,
    pub rows: u64,
}

/// Writes `plan`'s rows into `table` with one writer per partition and commits them, or returns
/// `None` (nothing written) when the table is not one this path handles (see the module doc).
pub(crate) async fn parallel_write(
    ctx: &SessionContext,
    table: &DeltaTable,
    plan: LogicalPlan,
    commit: Commit,
) -> Result<Option<Committed>> {
    let snapshot = table.snapshot()?;
    let table_schema = snapshot.snapshot().arrow_schema();
    if !eligible(table, !matches!(commit, Commit::Append(_)))? {
        return Ok(None);
    }
    let physical = ctx.state().create_physical_plan(&plan).await?;
    if !fits(&physical.schema(), &table_schema, matches!(commit, Commit::Overwrite)) {
        // Why a write takes delta-rs's slower path, for whoever profiles one.
        tracing::debug!(plan = ?physical.schema(), table = ?table_schema, "the plan does not fit the table as stored");
        return Ok(None);
    }
    let stats = WriterStatsConfig::from_config(snapshot.snapshot().table_configuration());
    let config = WriterConfig::new(
        Arc::clone(&table_schema),
        Vec::new(),
        Some(writer_properties_for(&table_schema)),
        Some(snapshot.table_config().target_file_size()),
        None,
        stats.num_indexed_cols,
        stats.stats_columns,
    );
    let store = table.log_store().object_store(None);
    let task_ctx = ctx.task_ctx();
    let mut tasks = JoinSet::new();
    for partition in 0..physical.output_partitioning().partition_count() {
        let mut stream = physical.execute(partition, Arc::clone(&task_ctx))?;
        let mut writer = DeltaWriter::new(Arc::clone(&store), config.clone());
        let schema = Arc::clone(&table_schema);
        tasks.spawn(async move {
            let mut rows = 0u64;
            let drained: Result<()> = async {
                while let Some(batch) = stream.next().await {
                    let batch = batch?;
                    rows += batch.num_rows() as u64;
                    let batch = as_stored(&schema, &batch)?;
                    writer.write(&batch).await?;
                }
                Ok(())
            }
            .await;
            match drained {
                Ok(()) => Ok((writer.close().await?, rows)),
                Err(e) => {
                    let _ = writer.abort().await;
                    Err(e)
                }
            }
        });
    }
    let mut adds = Vec::new();
    let mut rows = 0u64;
    while let Some(joined) = tasks.join_next().await {
        let result = joined.map_err(|e| NativeError::Execution(format!("a write task failed: {e}")))?;
        match result {
            Ok((files, n)) => {
                adds.extend(files);
                rows += n;
            }
            Err(e) => {
                tasks.abort_all();
                return Err(e);
            }
        }
    }

    let log_store = table.log_store();
    let mut actions: Vec<Action> = Vec::with_capacity(adds.len());
    let mut removed = 0usize;
    let mut properties = CommitProperties::default();
    let mode = match commit {
        Commit::Overwrite => {
            let removes: Vec<Action> = snapshot
                .snapshot()
                .file_views(log_store.as_ref(), None)
                .map_ok(|f| Action::Remove(f.remove_action(true)))
                .try_collect()
                .await?;
            removed = removes.len();
            actions.extend(removes);
            SaveMode::Overwrite
        }
        Commit::Append(txn) => {
            properties = properties.with_application_transaction(txn);
            SaveMode::Append
        }
        Commit::Replace { dropped, marked, txn } => {
            let vectors: std::collections::HashMap<String, DeletionVectorDescriptor> = marked.into_iter().collect();
            let dropped: std::collections::HashSet<String> = dropped.into_iter().collect();
            let files: Vec<_> = snapshot
                .snapshot()
                .file_views(log_store.as_ref(), None)
                .try_filter(|f| {
                    let p = f.path();
                    std::future::ready(vectors.contains_key(p.as_ref()) || dropped.contains(p.as_ref()))
                })
                .try_collect()
                .await?;
            if files.len() != vectors.len() + dropped.len() {
                return Err(NativeError::Execution(format!(
                    "internal error: {} of the {} files to replace or mark are not in the table",
                    vectors.len() + dropped.len() - files.len(),
                    vectors.len() + dropped.len()
                )));
            }
            for f in files {
                // A file keeps its path and takes a new vector: remove it with its old one, add
                // it back with the new one. Its min/max statistics still bound the live rows.
                actions.push(Action::Remove(f.remove_action(true)));
                if let Some(v) = vectors.get(f.path().as_ref()) {
                    // The whole add action is what a file keeps; delta-rs marks the accessor
                    // deprecated in favour of Arrow arrays, which this one action does not need.
                    #[allow(deprecated)]
                    let mut add = f.add_action();
                    add.data_change = true;
                    add.deletion_vector = Some(v.clone());
                    add.stats = add.stats.map(|s| loose_bounds(&s));
                    actions.push(Action::Add(add));
                }
            }
            removed = dropped.len();
            if let Some(txn) = txn {
                properties = properties.with_application_transaction(txn);
            }
            SaveMode::Overwrite
        }
    };
    let added = adds.len();
    actions.extend(adds.into_iter().map(Action::Add));
    // The same operation metrics delta-rs records, so history readers see the usual numbers.
    let metrics = serde_json::json!({
        "num_added_files": added,
        "num_removed_files": removed,
        "num_added_rows": rows,
    });
    let properties = properties.with_metadata([("operationMetrics".to_string(), metrics)]);
    let operation = DeltaOperation::Write { mode, partition_by: None, predicate: None };
    let finalized =
        CommitBuilder::from(properties).with_actions(actions).build(Some(snapshot), log_store, operation).await?;
    let mut table = table.clone();
    table.state = Some(finalized.snapshot);
    checkpointed(&table).await;
    Ok(Some(Committed { table, rows }))
}

/// Spark's Delta writes a checkpoint every 10 commits (`delta.checkpointInterval`'s default),
/// delta-rs every 100. A table written batch by batch then makes every later run replay up to
/// 99 commit files to load it: after 55 one-percent batches into an AUTO CDC target, the step
/// that opens its history took 24 ms instead of 6, and the feed's copy 35 ms instead of 21. So
/// a table that does not set the property is checkpointed as Spark would. The commit stands
/// whatever happens here: a failed checkpoint only leaves the log longer to read.
pub(crate) async fn checkpointed(table: &DeltaTable) {
    let Ok(snapshot) = table.snapshot() else { return };
    let version = snapshot.version();
    if version == 0 || version % 10 != 0 || snapshot.metadata().configuration().contains_key("delta.checkpointInterval")
    {
        return;
    }
    if let Err(e) = deltalake::checkpoints::create_checkpoint(table, None).await {
        tracing::warn!(table = %table.table_url(), version, error = %e, "Delta checkpoint not written");
    }
}

/// A file's statistics once some of its rows are deleted: the bounds are no longer tight (the
/// protocol's `tightBounds`, which readers consult before trusting min/max as exact).
fn loose_bounds(stats: &str) -> String {
    match serde_json::from_str::<serde_json::Value>(stats) {
        Ok(serde_json::Value::Object(mut m)) => {
            m.insert("tightBounds".into(), serde_json::Value::Bool(false));
            serde_json::Value::Object(m).to_string()
        }
        _ => stats.to_string(),
    }
}

/// Whether the table is one this path writes exactly as delta-rs would.
fn eligible(table: &DeltaTable, overwrite: bool) -> Result<bool> {
    let snapshot = table.snapshot()?;
    let metadata = snapshot.metadata();
    if !metadata.partition_columns().is_empty() {
        return Ok(false);
    }
    // Writer protocol 1–2 has no writer features; anything newer may need actions of its own,
    // except deletion vectors (an add without one is valid; removes carry theirs) and the legacy
    // features the checks below cover.
    let protocol = serde_json::to_value(snapshot.protocol()).map_err(|e| NativeError::Storage(e.to_string()))?;
    let only = |key: &str, allowed: &[&str]| {
        protocol.get(key).and_then(|v| v.as_array()).is_none_or(|a| a.iter().all(|f| allowed.iter().any(|x| f == x)))
    };
    match protocol.get("minWriterVersion").and_then(|v| v.as_i64()) {
        Some(1 | 2) => {}
        Some(7)
            if only("writerFeatures", &["deletionVectors", "appendOnly", "invariants"])
                && only("readerFeatures", &["deletionVectors"]) => {}
        _ => return Ok(false),
    }
    let config = metadata.configuration();
    if config.keys().any(|k| k.starts_with("delta.constraints.")) {
        return Ok(false);
    }
    if overwrite && config.get("delta.appendOnly").is_some_and(|v| v.eq_ignore_ascii_case("true")) {
        return Ok(false);
    }
    let schema = snapshot.snapshot().arrow_schema();
    // Invariants and generation expressions live in field metadata.
    Ok(!schema.fields().iter().any(|f| f.metadata().keys().any(|k| k.starts_with("delta."))))
}

/// Whether the plan's rows are the table's columns: the same names, and the same types or the
/// view type of the table's (the engine reads strings as views; Delta stores them plain). Rows
/// added to a table keep its schema: a column it holds NOT NULL may come from a nullable
/// expression, each batch checked for NULLs there as it is written (`as_stored`). An overwrite
/// gives the table its plan's schema, so a nullable column where the table has a NOT NULL one
/// is a schema change, left to delta-rs.
fn fits(plan: &SchemaRef, table: &SchemaRef, overwrite: bool) -> bool {
    plan.fields().len() == table.fields().len()
        && plan.fields().iter().zip(table.fields()).all(|(p, t)| {
            p.name() == t.name()
                && stores_as(p.data_type(), t.data_type())
                && (!overwrite || t.is_nullable() || !p.is_nullable())
        })
}

/// Whether a column of type `plan` is stored as `table` by a cast that loses nothing.
fn stores_as(plan: &DataType, table: &DataType) -> bool {
    plan == table
        || matches!((plan, table), (DataType::Utf8View, DataType::Utf8) | (DataType::BinaryView, DataType::Binary))
}

/// `batch` as the table stores it: view types cast to the plain ones, the table's field
/// nullability and metadata (a NULL in a NOT NULL column is an error).
fn as_stored(schema: &SchemaRef, batch: &RecordBatch) -> Result<RecordBatch> {
    let columns = batch
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| match c.data_type() == f.data_type() {
            true => Ok(Arc::clone(c)),
            false => arrow::compute::cast(c, f.data_type()),
        })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delta::storage::Storage;
    use crate::delta::table::{open_at, write_overwrite_at};
    use crate::engine::{new_context, EngineOptions};
    use arrow::array::{Int32Array, StringArray};
    use arrow::datatypes::{DataType, Field, Schema};
    use datafusion::datasource::MemTable;

    fn ctx() -> SessionContext {
        new_context("c", "d", &EngineOptions { memory_limit: None, target_partitions: 3 }).unwrap()
    }

    /// A plan over `parts` partitions: partition i holds `n` rows x = i*n .. (i+1)*n-1, as text
    /// (so a bad value can fail the cast at run time) cast back to INT.
    async fn plan(ctx: &SessionContext, name: &str, parts: &[Vec<String>]) -> LogicalPlan {
        let schema = Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, false)]));
        let batches = parts
            .iter()
            .map(|p| {
                vec![RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(StringArray::from(p.clone()))]).unwrap()]
            })
            .collect();
        ctx.register_table(name, Arc::new(MemTable::try_new(schema, batches).unwrap())).unwrap();
        ctx.sql(&format!("SELECT CAST(s AS INT) AS x FROM {name}")).await.unwrap().into_unoptimized_plan()
    }

    fn numbers(parts: usize, n: usize) -> Vec<Vec<String>> {
        (0..parts).map(|i| (i * n..(i + 1) * n).map(|x| x.to_string()).collect()).collect()
    }

    /// `count(*), sum(x)` of the table at `path`, as a fresh reader sees it.
    async fn contents(path: &std::path::Path) -> (i64, i64) {
        let ctx = ctx();
        let url = crate::delta::table::dir_url(path).unwrap();
        ctx.register_table("t", open_at(&ctx, &url).await.unwrap()).unwrap();
        let b =
            ctx.sql("SELECT count(*) AS n, coalesce(sum(x), 0) AS s FROM t").await.unwrap().collect().await.unwrap();
        let n = b[0].column(0).as_any().downcast_ref::<arrow::array::Int64Array>().unwrap().value(0);
        let s = b[0].column(1).as_any().downcast_ref::<arrow::array::Int64Array>().unwrap().value(0);
        (n, s)
    }

    async fn active_files(table: &DeltaTable) -> usize {
        let s = table.snapshot().unwrap().snapshot();
        s.file_views(table.log_store().as_ref(), None).try_collect::<Vec<_>>().await.unwrap().len()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn overwrite_and_append_write_a_file_per_partition_in_one_commit() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let ctx = ctx();
        let first = plan(&ctx, "m0", &numbers(1, 10)).await;
        let table = write_overwrite_at(&ctx, &Storage::at(dir.path()).unwrap(), "t", "t", first).await.unwrap().0;
        assert_eq!(table.version(), Some(0));

        // 3 partitions of 1000: 0..2999.
        let rows = plan(&ctx, "m1", &numbers(3, 1000)).await;
        let w = parallel_write(&ctx, &table, rows, Commit::Overwrite).await.unwrap().expect("an eligible table");
        assert_eq!((w.rows, w.table.version()), (3000, Some(1)));
        assert!(active_files(&w.table).await > 1, "one file per partition, written side by side");
        assert_eq!(contents(&path).await, (3000, (0..3000).sum()));

        let more = plan(&ctx, "m2", &numbers(2, 50)).await;
        let txn = Transaction::new("flow-a", 7);
        let w = parallel_write(&ctx, &w.table, more, Commit::Append(txn)).await.unwrap().expect("an eligible table");
        assert_eq!((w.rows, w.table.version()), (100, Some(2)));
        assert_eq!(contents(&path).await, (3100, (0..3000).sum::<i64>() + (0..100).sum::<i64>()));
        let reopened = deltalake::open_table(crate::delta::table::dir_url(&path).unwrap()).await.unwrap();
        let state = reopened.snapshot().unwrap();
        assert_eq!(state.transaction_version(reopened.log_store().as_ref(), "flow-a").await.unwrap(), Some(7));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_partition_commits_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let ctx = ctx();
        let table = write_overwrite_at(
            &ctx,
            &Storage::at(dir.path()).unwrap(),
            "t",
            "t",
            plan(&ctx, "m0", &numbers(1, 10)).await,
        )
        .await
        .unwrap()
        .0;
        let mut parts = numbers(3, 1000);
        parts[2][999] = "not a number".to_string();
        let bad = plan(&ctx, "m1", &parts).await;
        let err = parallel_write(&ctx, &table, bad, Commit::Overwrite).await.err().expect("the cast fails");
        assert!(err.to_string().contains("not a number"), "{err}");
        let reopened = deltalake::open_table(crate::delta::table::dir_url(&path).unwrap()).await.unwrap();
        assert_eq!(reopened.version(), Some(0));
        assert_eq!(contents(&path).await, (10, 45));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tables_it_cannot_write_exactly_are_left_to_delta_rs() {
        let dir = tempfile::tempdir().unwrap();
        let ctx = ctx();
        let table = write_overwrite_at(
            &ctx,
            &Storage::at(dir.path()).unwrap(),
            "t",
            "t",
            plan(&ctx, "m0", &numbers(1, 10)).await,
        )
        .await
        .unwrap()
        .0;
        // Another schema: a wider row, or another type.
        for sql in
            ["SELECT CAST(s AS INT) AS x, s FROM m0", "SELECT s AS x FROM m0", "SELECT CAST(s AS INT) AS y FROM m0"]
        {
            let p = ctx.sql(sql).await.unwrap().into_unoptimized_plan();
            assert!(parallel_write(&ctx, &table, p, Commit::Overwrite).await.unwrap().is_none(), "{sql}");
        }
        // Append-only: an overwrite must meet delta-rs's refusal.
        let append_only = table
            .clone()
            .set_tbl_properties()
            .with_properties([("delta.appendOnly".to_string(), "true".to_string())].into())
            .await
            .unwrap();
        let p = plan(&ctx, "m1", &numbers(1, 5)).await;
        assert!(parallel_write(&ctx, &append_only, p, Commit::Overwrite).await.unwrap().is_none());
        // Partitioned: delta-rs already writes one file per partition value.
        let schema =
            Arc::new(Schema::new(vec![Field::new("x", DataType::Int32, true), Field::new("y", DataType::Int32, true)]));
        let columns: Vec<arrow::array::ArrayRef> =
            vec![Arc::new(Int32Array::from(vec![1, 2])), Arc::new(Int32Array::from(vec![1, 1]))];
        let batch = RecordBatch::try_new(schema, columns).unwrap();
        std::fs::create_dir_all(dir.path().join("p")).unwrap();
        let url = crate::delta::table::dir_url(&dir.path().join("p")).unwrap();
        let partitioned = deltalake::DeltaTableBuilder::from_url(url).unwrap().build().unwrap();
        let partitioned = partitioned.write(vec![batch]).with_partition_columns(["y"]).await.unwrap();
        plan(&ctx, "m2", &numbers(1, 5)).await;
        let p =
            ctx.sql("SELECT CAST(s AS INT) AS x, CAST(1 AS INT) AS y FROM m2").await.unwrap().into_unoptimized_plan();
        assert!(parallel_write(&ctx, &partitioned, p, Commit::Overwrite).await.unwrap().is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn string_views_and_nullable_expressions_are_written_here_and_nulls_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t");
        let ctx = ctx();
        // x INT NOT NULL, s STRING.
        plan(&ctx, "m0", &numbers(1, 10)).await;
        let first = ctx.sql("SELECT CAST(s AS INT) AS x, s FROM m0").await.unwrap().into_unoptimized_plan();
        let table = write_overwrite_at(&ctx, &Storage::at(dir.path()).unwrap(), "t", "t", first).await.unwrap().0;
        let stored = table.snapshot().unwrap().snapshot().arrow_schema();
        assert!(!stored.field(0).is_nullable());
        assert_eq!(stored.field(1).data_type(), &DataType::Utf8);

        // The engine's strings are views, and `x` comes from an expression that may be NULL.
        let schema = Arc::new(Schema::new(vec![Field::new("v", DataType::Utf8View, false)]));
        let views = |values: Vec<&str>| {
            let column = Arc::new(arrow::array::StringViewArray::from(values));
            MemTable::try_new(
                Arc::clone(&schema),
                vec![vec![RecordBatch::try_new(Arc::clone(&schema), vec![column]).unwrap()]],
            )
            .unwrap()
        };
        ctx.register_table("v1", Arc::new(views(vec!["1", "2", "3"]))).unwrap();
        let plain = ctx.sql("SELECT CAST(v AS INT) AS x, v AS s FROM v1").await.unwrap().into_unoptimized_plan();
        let w = parallel_write(&ctx, &table, plain, Commit::Overwrite).await.unwrap().expect("written by this path");
        assert_eq!((w.rows, w.table.version()), (3, Some(1)));
        assert_eq!(contents(&path).await, (3, 6));
        let table = w.table;
        let sql = "SELECT CASE WHEN v = 'none' THEN NULL ELSE CAST(v AS INT) END AS x, v AS s FROM v1";
        let rows = ctx.sql(sql).await.unwrap().into_unoptimized_plan();
        assert!(rows.schema().field(0).is_nullable());
        // An overwrite takes the plan's schema: a nullable `x` is a schema change, left to delta-rs.
        let overwrite = parallel_write(&ctx, &table, rows.clone(), Commit::Overwrite).await.unwrap();
        assert!(overwrite.is_none());
        let txn = Transaction::new("flow-a", 1);
        let w = parallel_write(&ctx, &table, rows, Commit::Append(txn)).await.unwrap().expect("written by this path");
        assert_eq!((w.rows, w.table.version()), (3, Some(2)));
        assert_eq!(contents(&path).await, (6, 12));

        // A NULL where the table holds none fails the append, and nothing is committed.
        ctx.register_table("v2", Arc::new(views(vec!["4", "none"]))).unwrap();
        let nulls = ctx.sql(&sql.replace("v1", "v2")).await.unwrap().into_unoptimized_plan();
        let txn = Transaction::new("flow-a", 2);
        let err = parallel_write(&ctx, &w.table, nulls, Commit::Append(txn)).await.err().expect("a NULL in x");
        assert!(err.to_string().contains("non-nullable"), "{err}");
        let reopened = deltalake::open_table(crate::delta::table::dir_url(&path).unwrap()).await.unwrap();
        assert_eq!(reopened.version(), Some(2));
        assert_eq!(contents(&path).await, (6, 12));
    }

    /// For each Parquet file of the folder: whether all data pages of column `x` are
    /// dictionary-encoded.
    fn all_dictionary(dir: &std::path::Path) -> Vec<bool> {
        use deltalake::parquet::basic::Encoding;
        use deltalake::parquet::file::reader::{FileReader, SerializedFileReader};
        let mut out = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "parquet") {
                let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
                let meta = reader.metadata();
                let column = meta.row_group(0).column(0);
                assert_eq!(column.column_path().string(), "x");
                let mask = column.page_encoding_stats_mask().expect("page encoding stats");
                out.push(column.dictionary_page_offset().is_some() && mask.is_only(Encoding::RLE_DICTIONARY));
            }
        }
        out
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn both_write_paths_stop_dictionaries_at_the_page_limit() {
        // 200,000 distinct 4-byte ints: 800 KB of dictionary (at least 200 KB per file however
        // the plan splits them), over the 128 KiB limit and under delta-rs's default of 1 MiB,
        // which would have kept the dictionary for the whole file.
        let distinct = vec![(0..200_000).map(|x| x.to_string()).collect::<Vec<String>>()];
        // As many rows of 40 distinct values: a dictionary of 160 bytes.
        let repeated = vec![(0..200_000).map(|x| (x % 40).to_string()).collect::<Vec<String>>()];
        for (name, rows, falls_back) in [("many", distinct, true), ("few", repeated, false)] {
            let dir = tempfile::tempdir().unwrap();
            let ctx = ctx();
            // New table: delta-rs's write. Then an overwrite by the parallel path.
            let first = plan(&ctx, &format!("{name}0"), &rows).await;
            let table = write_overwrite_at(&ctx, &Storage::at(dir.path()).unwrap(), "t", "t", first).await.unwrap().0;
            let again = plan(&ctx, &format!("{name}1"), &rows).await;
            parallel_write(&ctx, &table, again, Commit::Overwrite).await.unwrap().expect("an eligible table");
            let files = all_dictionary(&dir.path().join("t"));
            assert!(files.len() >= 2, "{name}: files of both writes");
            assert!(files.iter().all(|all| *all != falls_back), "{name}: {files:?}");
        }
    }
}
