//! Tombstones of an SCD 1 flow: a deleted key's last change stays in the history, so an older
//! change arriving later cannot bring the key back — until `pipelines.cdc.tombstoneGCThresholdInSeconds`
//! has passed, when collection forgets it (between the target's commit and the checkpoint; only
//! keys with a delete that old are read).

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{AsArray, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use datafusion::logical_expr::{col, lit, Expr};
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use roaring::RoaringTreemap;

use super::by_key::Changes;
use super::shape::{AT, BATCH, DELETE, OP, SEQ, TRUNCATE};
use crate::delta::deletion::vectors_for;
use crate::error::{NativeError, Result};

/// DLT's table properties for how long an SCD 1 flow keeps a deleted key's tombstone (the
/// longest a change may arrive out of order) and how often expired ones are collected.
pub(super) const TOMBSTONE_THRESHOLD: &str = "pipelines.cdc.tombstoneGCThresholdInSeconds";
pub(super) const TOMBSTONE_FREQUENCY: &str = "pipelines.cdc.tombstoneGCFrequencyInSeconds";

/// Tombstone retention of an SCD 1 target, from its `TBLPROPERTIES` (DLT's defaults: two days,
/// checked every 30 minutes).
pub(super) struct Retention {
    pub(super) threshold_ms: i64,
    pub(super) frequency_ms: i64,
}

impl Retention {
    pub(super) fn of(d: &knut_thund::ir::Dataset) -> Result<Retention> {
        let seconds = |key: &str, default: i64| -> Result<i64> {
            match d.details.properties.iter().find(|(k, _)| k.eq_ignore_ascii_case(key)) {
                None => Ok(default),
                Some((k, v)) => v.trim().parse::<i64>().ok().filter(|s| *s >= 0).ok_or_else(|| NativeError::Plan {
                    location: d.location.to_string(),
                    message: format!(
                        "`{}`: table property `{k}` must be a whole number of seconds ≥ 0, not `{v}`",
                        d.name
                    ),
                }),
            }
        };
        Ok(Retention {
            threshold_ms: seconds(TOMBSTONE_THRESHOLD, 172_800)?.saturating_mul(1000),
            frequency_ms: seconds(TOMBSTONE_FREQUENCY, 1_800)?.saturating_mul(1000),
        })
    }
}

pub(super) fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Forgets every key whose latest change is a delete applied at or before `cutoff`: its rows
/// leave the history, so an older change arriving later applies as if the key were new (DLT's
/// behaviour once a tombstone is collected). Returns how many keys were forgotten.
///
/// Only a key with such a delete can be forgotten, and deletes are few: those keys are found
/// first (a filtered scan of the operation and time columns), and only their changes are read
/// to see which delete is still each key's latest.
pub(super) async fn collect_tombstones(
    ctx: &SessionContext,
    history: &DeltaTable,
    key_names: &[String],
    cutoff: i64,
) -> Result<usize> {
    use crate::delta::keyscan::{scan, Wanted};
    if !crate::delta::deletion::enabled(history)? {
        return Ok(0);
    }
    history.update_datafusion_session(&ctx.state())?;
    let schema = history.snapshot()?.snapshot().arrow_schema();
    let keys: Vec<Expr> = key_names.iter().map(|c| col(datafusion::common::Column::from_name(c))).collect();
    let candidates = ctx
        .read_table(crate::delta::filtered::filtered(history.table_provider().await?))?
        .filter(col(OP).eq(lit(DELETE)).and(col(AT).lt_eq(lit(cutoff))))?
        .select(keys)?
        .distinct()?
        .collect()
        .await?;
    let Some(first) = candidates.first() else { return Ok(0) };
    let candidates = concat_batches(&first.schema(), &candidates)?;
    if candidates.num_rows() == 0 {
        return Ok(0);
    }
    let wanted = Arc::new(Wanted::new(candidates.columns())?);
    let extra = [SEQ, OP, BATCH, AT].map(String::from);
    let scanned = scan(history, &wanted, key_names, &extra, None).await?;
    let seq_type = schema.field_with_name(SEQ)?.data_type().clone();
    let sequences = RowConverter::new(vec![SortField::new(seq_type.clone())])?;
    // Each candidate's latest change (sequence, then batch), in the order `replay` applies them:
    // whether it is a delete, and applied by the cutoff.
    let mut latest: std::collections::HashMap<u32, (arrow::row::OwnedRow, i64, bool)> =
        std::collections::HashMap::new();
    for s in &scanned {
        let Changes { seq, ops, batches } = Changes::of(s, &sequences, &seq_type)?;
        let at = arrow::compute::cast(&s.extra[3], &DataType::Int64)?;
        let at = at.as_primitive::<arrow::datatypes::Int64Type>();
        for (j, k) in s.keys.iter().enumerate() {
            let Some(k) = k else { continue };
            if ops.value(j) == TRUNCATE {
                continue;
            }
            let later = latest.get(k).is_none_or(|(seq_l, batch_l, _)| {
                seq.row(j).cmp(&seq_l.row()).then(batches.value(j).cmp(batch_l)).is_ge()
            });
            if later {
                let expired = ops.value(j) == DELETE && at.value(j) <= cutoff;
                latest.insert(*k, (seq.row(j).owned(), batches.value(j), expired));
            }
        }
    }
    let gone: std::collections::HashSet<u32> =
        latest.into_iter().filter(|(_, (_, _, expired))| *expired).map(|(k, _)| k).collect();
    if gone.is_empty() {
        return Ok(0);
    }
    let marked: Vec<crate::delta::deletion::Marked> = scanned
        .into_iter()
        .filter_map(|s| {
            let rows: RoaringTreemap = s
                .positions
                .iter()
                .zip(&s.keys)
                .filter(|(_, k)| k.is_some_and(|k| gone.contains(&k)))
                .map(|(p, _)| *p)
                .collect();
            (!rows.is_empty()).then(|| crate::delta::deletion::Marked {
                deleted: &s.deleted | &rows,
                records: s.rows,
                file: s.file,
            })
        })
        .collect();
    let (kept, dropped, marked) = vectors_for(history, marked, &HashSet::new(), &schema).await?;
    let kept = ctx.read_batches(kept.into_iter().chain([RecordBatch::new_empty(Arc::clone(&schema))]))?;
    let commit = crate::delta::write::Commit::Replace { dropped, marked, txn: None };
    match crate::delta::write::parallel_write(ctx, history, kept.into_unoptimized_plan(), commit).await? {
        Some(_) => Ok(gone.len()),
        None => Err(NativeError::Execution("the AUTO CDC history cannot be written".into())),
    }
}
