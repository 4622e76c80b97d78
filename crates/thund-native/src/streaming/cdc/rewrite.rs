//! A target without deletion vectors: the files holding a touched key are rewritten, their other
//! rows streamed through the engine beside the replayed ones (after a truncation, all of them).

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::datatypes::{DataType, SchemaRef};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{col, Expr, JoinType};
use datafusion::prelude::{DataFrame, SessionContext};
use deltalake::DeltaTable;

use super::history::key_join;
use crate::error::Result;

/// The files of `target` holding a touched key (`None`: every file), as the table lists them.
pub(super) async fn touched_files(
    ctx: &SessionContext,
    target: &DeltaTable,
    keys: Option<&RecordBatch>,
    key_names: &[String],
) -> Result<Vec<String>> {
    let active: Vec<String> = target.snapshot()?.log_data().into_iter().map(|f| f.path().to_string()).collect();
    let Some(keys) = keys else { return Ok(active) };
    target.update_datafusion_session(&ctx.state())?;
    let provider = crate::delta::filtered::filtered(target.table_provider().with_file_column(FILE).await?);
    let touched = ctx.read_table(Arc::new(MemTable::try_new(keys.schema(), vec![vec![keys.clone()]])?))?;
    let hits = key_join(&ctx.read_table(provider)?, &touched, key_names, JoinType::LeftSemi)?
        .select(vec![col(FILE)])?
        .distinct()?
        .collect()
        .await?;
    let mut named = BTreeSet::new();
    for b in &hits {
        let c = arrow::compute::cast(b.column(0), &DataType::Utf8)?;
        for v in c.as_string::<i32>().iter().flatten() {
            named.insert(v.to_string());
        }
    }
    // The scan names files by URL or path; the log by path relative to the table.
    Ok(active.into_iter().filter(|p| named.iter().any(|n| n == p || n.ends_with(&format!("/{p}")))).collect())
}

/// Name of the file column of a scan that finds touched files.
pub(super) const FILE: &str = "__thund_file";

/// The rows of `files` in `target` whose key is not touched (`None`: none are kept).
pub(super) async fn untouched_rows(
    ctx: &SessionContext,
    target: &DeltaTable,
    files: &[String],
    keys: Option<&RecordBatch>,
    key_names: &[String],
    schema: &SchemaRef,
) -> Result<Option<DataFrame>> {
    let Some(keys) = keys else { return Ok(None) };
    if files.is_empty() {
        return Ok(None);
    }
    let provider = crate::delta::filtered::filtered(target.table_provider().with_file_paths(files.to_vec()).await?);
    let touched = ctx.read_table(Arc::new(MemTable::try_new(keys.schema(), vec![vec![keys.clone()]])?))?;
    let kept = key_join(&ctx.read_table(provider)?, &touched, key_names, JoinType::LeftAnti)?;
    let columns: Vec<Expr> = schema
        .fields()
        .iter()
        .map(|f| {
            Expr::Cast(datafusion::logical_expr::Cast::new(
                Box::new(col(datafusion::common::Column::new(Some("__thund_l"), f.name()))),
                f.data_type().clone(),
            ))
            .alias(f.name())
        })
        .collect();
    Ok(Some(kept.select(columns)?))
}
