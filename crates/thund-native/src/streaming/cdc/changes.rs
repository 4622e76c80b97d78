//! A batch's new changes: the feed's new rows evaluated against the flow's clauses (the target's
//! columns, the sequence, the operation), checked and stamped with their batch.

use std::collections::BTreeSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::common::{Column, ScalarValue};
use datafusion::functions::expr_fn::coalesce;
use datafusion::logical_expr::{lit, when, Expr, LogicalPlan};
use datafusion::prelude::DataFrame;
use knut_thund::ir::{AutoCdc, Expression, Flow};

use super::replay::rows_of;
use super::shape::{Shape, AT, BATCH, DELETE, OP, SEQ, TRUNCATE, UPSERT};
use crate::engine::plan_expr;
use crate::error::{NativeError, Result};
use crate::streaming::append::over_new_input;
use crate::streaming::checkpoint::Checkpoint;
use crate::streaming::kind::Batch;

/// The feed's new changes as the target takes them — its columns (`COLUMNS`), the evaluated
/// `SEQUENCE BY` ([`SEQ`]) and the operation the `APPLY AS` clauses give each change ([`OP`]) —
/// and the shape of the target; `None` when no new change arrived. `next` reads past them.
pub(super) async fn evaluated(
    batch: &Batch<'_, '_>,
    cdc: &AutoCdc,
    next: &mut Checkpoint,
) -> Result<Option<(Shape, LogicalPlan)>> {
    let (ctx, f) = (batch.job.ctx, batch.job.flow);
    let Some(feed) = over_new_input(batch, &cdc.source, next).await? else { return Ok(None) };
    let feed = DataFrame::new(ctx.state(), feed);
    let shape = Shape::of(f, cdc, feed.schema().as_arrow())?;
    let schema = feed.schema().clone();
    let clause = |e: &Expression, what: &str| {
        plan_expr(ctx, e, &schema).map_err(|x| NativeError::Plan {
            location: f.location.to_string(),
            message: format!("AUTO CDC flow `{}`: {what} `{e}`: {}", f.name, x.strip_backtrace()),
        })
    };
    let sequence = match &cdc.sequence_by {
        Some(e) => clause(e, "SEQUENCE BY")?,
        None => lit(ScalarValue::Null),
    };
    let holds = |e: Expr| coalesce(vec![e, lit(false)]);
    let op = match (&cdc.apply_as_truncate, &cdc.apply_as_delete) {
        (Some(t), Some(d)) => when(holds(clause(t, "APPLY AS TRUNCATE WHEN")?), lit(TRUNCATE))
            .when(holds(clause(d, "APPLY AS DELETE WHEN")?), lit(DELETE))
            .otherwise(lit(UPSERT))?,
        (Some(t), None) => when(holds(clause(t, "APPLY AS TRUNCATE WHEN")?), lit(TRUNCATE)).otherwise(lit(UPSERT))?,
        (None, Some(d)) => when(holds(clause(d, "APPLY AS DELETE WHEN")?), lit(DELETE)).otherwise(lit(UPSERT))?,
        (None, None) => lit(UPSERT),
    };
    let mut columns: Vec<Expr> = shape.columns.iter().map(|c| Expr::Column(Column::from_name(c))).collect();
    columns.push(sequence.alias(SEQ));
    columns.push(op.alias(OP));
    Ok(Some((shape, feed.select(columns)?.into_unoptimized_plan())))
}

/// The new changes of a batch, evaluated: checks that no sequence is NULL and adds the batch
/// number and the time it is applied.
pub(super) fn stamp(
    f: &Flow,
    changes: Vec<RecordBatch>,
    schema: SchemaRef,
    batch: i64,
    at: i64,
) -> Result<RecordBatch> {
    let all = concat_batches(&schema, &changes)?;
    let seq = all.column(all.schema().index_of(SEQ)?);
    if seq.null_count() > 0 {
        return Err(NativeError::Execution(format!(
            "AUTO CDC flow `{}` ({}): {} change(s) have a NULL `SEQUENCE BY` value; every change needs one",
            f.name,
            f.location,
            seq.null_count()
        )));
    }
    let mut fields: Vec<Field> = all.schema().fields().iter().map(|f| f.as_ref().clone()).collect();
    fields.push(Field::new(BATCH, DataType::Int64, false));
    fields.push(Field::new(AT, DataType::Int64, false));
    let mut columns = all.columns().to_vec();
    columns.push(Arc::new(Int64Array::from(vec![batch; all.num_rows()])));
    columns.push(Arc::new(Int64Array::from(vec![at; all.num_rows()])));
    // Strings as plain UTF-8: the history is written and read back, and view arrays would carry
    // the whole buffers of the batch they came from.
    let (fields, columns): (Vec<Field>, Vec<ArrayRef>) = fields
        .into_iter()
        .zip(columns)
        .map(|(f, c)| match f.data_type() {
            DataType::Utf8View => {
                let c = arrow::compute::cast(&c, &DataType::Utf8)?;
                Ok((f.with_data_type(DataType::Utf8), c))
            }
            _ => Ok((f, c)),
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .unzip();
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}

/// Whether a batch of stamped changes holds a truncation (every key is then touched).
pub(super) fn truncates(changes: &RecordBatch) -> Result<bool> {
    let ops = changes.column(changes.schema().index_of(OP)?).as_string::<i32>().clone();
    Ok(ops.iter().any(|o| o == Some(TRUNCATE)))
}

/// The distinct keys of `changes` as a one-batch table of the key columns.
pub(super) fn touched_keys(shape: &Shape, changes: &RecordBatch) -> Result<RecordBatch> {
    let keys = rows_of(&shape.keys.iter().map(|k| Arc::clone(changes.column(*k))).collect::<Vec<_>>())?;
    let mut seen = BTreeSet::new();
    let picks: Vec<u32> =
        (0..changes.num_rows()).filter(|i| seen.insert(keys.row(*i).as_ref().to_vec())).map(|i| i as u32).collect();
    let picks = UInt32Array::from(picks);
    let fields: Vec<Field> =
        shape.keys.iter().map(|k| changes.schema().field(*k).as_ref().clone().with_nullable(true)).collect();
    let columns: Vec<ArrayRef> = shape
        .keys
        .iter()
        .map(|k| take(changes.column(*k).as_ref(), &picks, None))
        .collect::<std::result::Result<_, _>>()?;
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), columns)?)
}
