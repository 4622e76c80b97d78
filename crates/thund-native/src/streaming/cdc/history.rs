//! An AUTO CDC flow's history: the changes it applied, a Delta table beside its checkpoint (the
//! target's columns plus the evaluated sequence, the operation, the batch number and when it was
//! applied). A batch appends its changes under an application transaction of its own, so a batch
//! recomputed after a crash finds them there rather than appending them twice.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{col, lit, Expr, JoinType};
use datafusion::prelude::{DataFrame, SessionContext};
use deltalake::kernel::Transaction;
use deltalake::DeltaTable;

use super::shape::{BATCH, OP, TRUNCATE};
use crate::error::Result;

/// `left.k IS NOT DISTINCT FROM right.k` for every key column named in `keys`.
pub(super) fn key_join(left: &DataFrame, right: &DataFrame, keys: &[String], kind: JoinType) -> Result<DataFrame> {
    let (lq, rq) = ("__thund_l", "__thund_r");
    let l = left.clone().alias(lq)?;
    let r = right.clone().alias(rq)?;
    let on: Vec<Expr> = keys
        .iter()
        .map(|k| {
            datafusion::logical_expr::binary_expr(
                col(datafusion::common::Column::new(Some(lq), k)),
                datafusion::logical_expr::Operator::IsNotDistinctFrom,
                col(datafusion::common::Column::new(Some(rq), k)),
            )
        })
        .collect();
    Ok(l.join_on(r, kind, on)?)
}

/// Reads the history rows of earlier batches for the touched keys (`None`: every key).
pub(super) async fn earlier_history(
    ctx: &SessionContext,
    history: Option<&DeltaTable>,
    keys: Option<&RecordBatch>,
    key_names: &[String],
    batch: i64,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let Some(table) = history else { return Ok(Vec::new()) };
    table.update_datafusion_session(&ctx.state())?;
    let provider = crate::delta::filtered::filtered(table.table_provider().await?);
    let df = ctx.read_table(provider)?.filter(col(BATCH).lt(lit(batch)))?;
    let df = match keys {
        // The touched keys' changes, and every truncation: it removes whatever precedes it, so a
        // late change of any key falls behind it.
        Some(k) => {
            let touched = ctx.read_table(Arc::new(MemTable::try_new(k.schema(), vec![vec![k.clone()]])?))?;
            let changes =
                key_join(&df.clone().filter(col(OP).not_eq(lit(TRUNCATE)))?, &touched, key_names, JoinType::LeftSemi)?;
            let columns: Vec<Expr> = df
                .schema()
                .fields()
                .iter()
                .map(|f| col(datafusion::common::Column::new(Some("__thund_l"), f.name())).alias(f.name()))
                .collect();
            changes.select(columns)?.union(df.filter(col(OP).eq(lit(TRUNCATE)))?)?
        }
        None => df,
    };
    let columns: Vec<Expr> =
        schema.fields().iter().map(|f| col(datafusion::common::Column::from_name(f.name()))).collect();
    let batches = df.select(columns)?.collect().await?;
    batches
        .into_iter()
        .map(|b| {
            let columns = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| Ok(arrow::compute::cast(c, f.data_type())?))
                .collect::<Result<Vec<_>>>()?;
            Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
        })
        .collect()
}

/// The application transaction the history's commit of a batch carries.
pub(super) fn history_txn(app: &str, batch: i64) -> Transaction {
    Transaction::new(history_app(app), batch)
}

/// The application id of a flow's history commits.
pub(super) fn history_app(app: &str) -> String {
    format!("{app}:history")
}
