//! A Delta table's provider whose constant filters are applied above its scan.
//!
//! delta-rs answers `Exact` for a filter that names only partition columns, and so for one that
//! names no column at all: `NULL`, `FALSE`, what a filter pushed into one branch of a union
//! folds to where that branch's column is a NULL (`WHERE flag = false` over `SELECT NULL AS
//! flag … UNION ALL …`). Its scan prunes nothing by such a filter, and DataFusion, told the
//! scan applied it, drops the filter: every row of the branch came back. Here such a filter is
//! `Inexact`, so DataFusion keeps it; every other answer is delta-rs's own.

use std::borrow::Cow;
use std::sync::Arc;

use arrow::datatypes::SchemaRef;
use async_trait::async_trait;
use datafusion::catalog::{ScanArgs, ScanResult, Session};
use datafusion::common::{Constraints, Result, Statistics};
use datafusion::datasource::{TableProvider, TableType};
use datafusion::logical_expr::dml::InsertOp;
use datafusion::logical_expr::{Expr, LogicalPlan, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;

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
