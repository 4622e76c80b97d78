//! Spark's `range` table function: DataFusion's, with its column named `id` (DataFusion's own
//! `range` calls it `value`, so `SELECT id FROM range(10)`, valid Spark, failed); the partition
//! count only splits Spark's work and is dropped.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::Result;
use datafusion::datasource::{provider_as_source, ViewTable};
use datafusion::logical_expr::LogicalPlanBuilder;
use datafusion::prelude::{col, SessionContext};

/// Registers Spark's `range` over DataFusion's.
pub(crate) fn register(ctx: &SessionContext) {
    if let Ok(builtin) = ctx.table_function("range") {
        ctx.register_udtf("range", Arc::new(SparkRange { inner: Arc::clone(builtin.function()) }));
    }
}

/// Spark's `range`: DataFusion's, with its column named `id`.
#[derive(Debug)]
struct SparkRange {
    inner: Arc<dyn TableFunctionImpl>,
}

impl TableFunctionImpl for SparkRange {
    fn call_with_args(&self, args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let exprs = args.exprs();
        if exprs.is_empty() || exprs.len() > 4 {
            return datafusion::common::plan_err!(
                "range takes 1 to 4 arguments: range(end) or range(start, end[, step[, numPartitions]])"
            );
        }
        let provider =
            self.inner.call_with_args(TableFunctionArgs::new(&exprs[..exprs.len().min(3)], args.session()))?;
        let plan = LogicalPlanBuilder::scan("range", provider_as_source(provider), None)?
            .project(vec![col("value").alias("id")])?
            .build()?;
        Ok(Arc::new(ViewTable::new(plan, None)))
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn range_is_sparks_with_an_id_column() {
        let ctx = crate::session::test_context(crate::modes::SqlModes::default());
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let rows = |sql: &str| {
            let batches = rt.block_on(async { ctx.sql(sql).await?.collect().await }).unwrap();
            arrow::util::pretty::pretty_format_batches(&batches).unwrap().to_string()
        };
        assert!(rows("SELECT sum(id) AS s, count(*) AS n FROM range(1, 11)").contains("| 55 | 10 |"));
        assert!(rows("SELECT max(id) AS m FROM range(5)").contains("| 4 |"));
        assert!(rows("SELECT count(*) AS n FROM range(0, 10, 3, 4)").contains("| 4 |"), "numPartitions is dropped");
        assert!(rt.block_on(async { ctx.sql("SELECT * FROM range()").await }).is_err());
    }
}
