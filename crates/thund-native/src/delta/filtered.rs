//! A Delta table's provider whose constant filters are applied above its scan.
//!
//! delta-rs answers `Exact` for a filter that names only partition columns, and so for one that
//! names no column at all: `NULL`, `FALSE`, what a filter pushed into one branch of a union
//! folds to where that branch's column is a NULL (`WHERE flag = false` over `SELECT NULL AS
//! flag … UNION ALL …`). Its scan prunes nothing by such a filter, and DataFusion, told the
//! scan applied it, drops the filter: every row of the branch came back. Here such a filter is
//! `Inexact`, so DataFusion keeps it; every other answer is delta-rs's own.
//!
//! delta-rs reads a table with deletion vectors as one stream: each file's row positions are
//! counted in one partition, so its files are decoded one after another on one core, and so is
//! everything above the scan up to the next repartition. A row-based refresh leaves its view,
//! and AUTO CDC its target, with deletion vectors: every later reader paid for it (a recompute
//! over such a view took 1.5 times as long). [`of`] reads such a table as one scan per share of
//! its files (by size), side by side.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{ScanArgs, ScanResult, Session};
use datafusion::common::{Constraints, Result, Statistics};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown};
use datafusion::physical_plan::union::UnionExec;
use datafusion::physical_plan::ExecutionPlan;
use deltalake::DeltaTable;

/// The provider a query reads `table` through (only `files` of it, if given): `filtered`, and
/// split into one scan per core's share of the files when any has a deletion vector.
pub(crate) async fn of(
    table: &DeltaTable,
    files: Option<Vec<String>>,
) -> std::result::Result<Arc<dyn TableProvider>, crate::error::NativeError> {
    let wanted: Option<HashSet<&str>> = files.as_ref().map(|f| f.iter().map(String::as_str).collect());
    let mut listed = Vec::new();
    let mut vectors = false;
    for f in table.snapshot()?.log_data() {
        let path = f.path().to_string();
        if wanted.as_ref().is_some_and(|w| !w.contains(path.as_str())) {
            continue;
        }
        vectors |= f.deletion_vector_descriptor().is_some();
        listed.push((f.size() as u64, path));
    }
    let shares = std::thread::available_parallelism().map_or(1, |n| n.get()).min(listed.len());
    if !vectors || shares < 2 {
        return Ok(filtered(match files {
            Some(files) => table.table_provider().with_file_paths(files).await?,
            None => table.table_provider().await?,
        }));
    }
    // The largest files first, each to the lightest share.
    listed.sort_unstable_by(|a, b| b.cmp(a));
    let mut split: Vec<(u64, Vec<String>)> = vec![(0, Vec::new()); shares];
    for (size, path) in listed {
        let lightest = split.iter_mut().min_by_key(|(weight, _)| *weight).map(|s| {
            s.0 += size;
            &mut s.1
        });
        if let Some(share) = lightest {
            share.push(path);
        }
    }
    let mut scans = Vec::with_capacity(shares);
    for (_, paths) in split {
        scans.push(table.table_provider().with_file_paths(paths).await?);
    }
    Ok(filtered(Arc::new(Shares(scans))))
}

/// One table read as several scans of its files, side by side (their union).
#[derive(Debug)]
struct Shares(Vec<Arc<dyn TableProvider>>);

#[async_trait]
impl TableProvider for Shares {
    fn schema(&self) -> SchemaRef {
        self.0[0].schema()
    }

    fn table_type(&self) -> TableType {
        self.0[0].table_type()
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        // (No limit below the union: a limit above it stays, and each share alone may hold
        // fewer rows than the limit asks.)
        let mut plans = Vec::with_capacity(self.0.len());
        for share in &self.0 {
            plans.push(share.scan(state, projection, filters, None).await?);
        }
        UnionExec::try_new(plans)
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        // Every share is the same table: what one applies exactly, each does.
        self.0[0].supports_filters_pushdown(filters)
    }
}

/// `provider` with its constant filters applied again above its scan.
pub(crate) fn filtered(provider: Arc<dyn TableProvider>) -> Arc<dyn TableProvider> {
    Arc::new(ConstantFilters(provider))
}

#[derive(Debug)]
struct ConstantFilters(Arc<dyn TableProvider>);

#[async_trait]
impl TableProvider for ConstantFilters {
    fn schema(&self) -> SchemaRef {
        self.0.schema()
    }

    fn constraints(&self) -> Option<&Constraints> {
        self.0.constraints()
    }

    fn table_type(&self) -> TableType {
        self.0.table_type()
    }

    fn get_table_definition(&self) -> Option<&str> {
        self.0.get_table_definition()
    }

    fn get_logical_plan(&'_ self) -> Option<Cow<'_, LogicalPlan>> {
        self.0.get_logical_plan()
    }

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.0.get_column_default(column)
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.0.scan(state, projection, filters, limit).await
    }

    async fn scan_with_args<'a>(&self, state: &dyn Session, args: ScanArgs<'a>) -> Result<ScanResult> {
        self.0.scan_with_args(state, args).await
    }

    fn supports_filters_pushdown(&self, filters: &[&Expr]) -> Result<Vec<TableProviderFilterPushDown>> {
        let answers = self.0.supports_filters_pushdown(filters)?;
        Ok(filters
            .iter()
            .zip(answers)
            .map(|(f, answer)| match answer {
                TableProviderFilterPushDown::Exact if f.column_refs().is_empty() => {
                    TableProviderFilterPushDown::Inexact
                }
                answer => answer,
            })
            .collect())
    }

    fn statistics(&self) -> Option<Statistics> {
        self.0.statistics()
    }

    async fn insert_into(
        &self,
        state: &dyn Session,
        input: Arc<dyn ExecutionPlan>,
        insert_op: InsertOp,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.0.insert_into(state, input, insert_op).await
    }
}

#[cfg(test)]
mod tests {
    use knut_thund::backend::{ExecBackend, RunOptions};

    /// A table of several files, some rows marked deleted, read through `of`: the same rows as
    /// through delta-rs's one scan, in one partition per share of the files.
    #[test]
    fn a_table_with_deletion_vectors_is_read_side_by_side_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("feed")).unwrap();
        std::fs::write(
            root.join("spark-pipeline.yml"),
            "name: c\nstorage: store\nlibraries:\n  - glob:\n      include: '*.sql'\n",
        )
        .unwrap();
        std::fs::write(
            root.join("p.sql"),
            "CREATE STREAMING TABLE target TBLPROPERTIES ('delta.enableDeletionVectors' = 'true');\n\
             CREATE FLOW f AS AUTO CDC INTO target FROM STREAM read_files('feed', format => 'json', \
             schema => 'k BIGINT, v BIGINT, seq BIGINT, op STRING') KEYS (k) APPLY AS DELETE WHEN op = 'D' \
             SEQUENCE BY seq COLUMNS * EXCEPT (op, seq);\n",
        )
        .unwrap();
        let mut seq = 0;
        for round in 0..4u64 {
            let mut feed = String::new();
            for k in 0..50u64 {
                // Each round deletes or rewrites some keys of the earlier rounds' files.
                if round == 0 || k % (round + 2) == 0 {
                    seq += 1;
                    let op = if round > 0 && k % 2 == 0 { "D" } else { "U" };
                    feed.push_str(&format!(
                        "{{\"k\": {k}, \"v\": {}, \"seq\": {seq}, \"op\": \"{op}\"}}\n",
                        k * 10 + round
                    ));
                }
            }
            std::fs::write(root.join(format!("feed/{round}.json")), feed).unwrap();
            let p = knut_thund::frontend::load(root).unwrap_or_else(|e| panic!("{e}"));
            let mut run = crate::NativeBackend::new().run_with(&p, &RunOptions::default()).unwrap();
            while run.poll_events().is_some() {}
            assert!(!run.finish().unwrap().failed());
        }
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(async {
            let url = url::Url::from_directory_path(root.join("store/tables/spark_catalog/default/target")).unwrap();
            let table = deltalake::open_table(url).await.unwrap();
            let files: Vec<_> = table.snapshot().unwrap().log_data().into_iter().collect();
            assert!(files.len() >= 2 && files.iter().any(|f| f.deletion_vector_descriptor().is_some()));
            let ctx = datafusion::prelude::SessionContext::new();
            table.update_datafusion_session(&ctx.state()).unwrap();
            let rows = |provider| {
                let ctx = ctx.clone();
                async move {
                    let df = ctx.read_table(provider).unwrap().sort_by(vec![datafusion::prelude::col("k")]).unwrap();
                    arrow::util::pretty::pretty_format_batches(&df.collect().await.unwrap()).unwrap().to_string()
                }
            };
            let one = super::filtered(table.table_provider().await.unwrap());
            let split = super::of(&table, None).await.unwrap();
            assert_eq!(rows(split.clone()).await, rows(one).await);
            let scan = split.scan(&ctx.state(), None, &[], None).await.unwrap();
            let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
            assert_eq!(scan.properties().partitioning.partition_count(), cores.min(files.len()));
        });
    }
}
