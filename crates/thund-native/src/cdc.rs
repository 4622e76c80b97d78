//! AUTO CDC: a change feed applied by key to a streaming table, as SCD type 1 (the latest row of
//! each key) or type 2 (every version, with `__START_AT` / `__END_AT`).
//!
//! Changes apply in `SEQUENCE BY` order, never in arrival order, so a batch cannot simply be
//! merged into the table: a late change may belong before rows already written, behind a delete,
//! or inside a version it splits. Each flow therefore keeps the changes it applied (its
//! *history*, a Delta table beside its checkpoint: the target's columns plus the evaluated
//! sequence, the operation and the batch number). A batch
//!
//! ```text
//!  1. evaluates the sequence and the DELETE / TRUNCATE conditions of its new changes
//!     (a NULL sequence is an error naming the flow and the row count)
//!  2. replays, per key it touches, where the key stands plus the new changes in sequence
//!     order (`replay`): the key's rows in the target
//!  3. appends the new changes to the history (its own application transaction: idempotent)
//!  4. marks the rows of the touched keys deleted in the target's files (deletion vectors, in
//!     one new file: `deletion`; a file left mostly dead is dropped and its live rows kept) and
//!     adds the replayed rows, in one Delta commit that carries the flow's application
//!     transaction
//! ```
//! Where a key stands is its whole history only for a *late* key, one with a new change at or
//! before a change already applied (or a truncation). Any other key continues from its row in the
//! target (SCD 2: its open version; SCD 1 without `IGNORE NULL UPDATES` needs not even that, the
//! latest change wins), which is the state its history's replay ended in (`incremental`). The
//! checkpoint keeps the highest sequence applied: when every new change is above it, as when a
//! feed arrives in order, the history is not read at all. Rows are found by key (`keyscan`):
//! the key columns of every file, then the other columns of the rows found alone.
//!
//! A target created by AUTO CDC has deletion vectors enabled unless its `TBLPROPERTIES` set
//! `delta.enableDeletionVectors` to false; a target without them, a first batch and a batch with
//! a truncation replay the touched keys' whole history (a truncation touches every key), and a
//! target without deletion vectors has the files holding a touched key rewritten (their other
//! rows plus the replayed ones), which costs as much as rewriting the table when the keys are
//! spread over every file.
//!
//! All of it runs inside the streaming checkpoint protocol (`checkpoint`): a crash anywhere is
//! resolved by the target's transaction version, and a recomputed batch reads the history of
//! earlier batches only, with the highest sequence of the checkpoint it started from. The result
//! equals a replay of the whole change feed sorted by sequence, whatever order it arrived in
//! (`tests/cdc.rs` checks random feeds against an independent replay).

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};
use datafusion::datasource::MemTable;
use datafusion::logical_expr::{col, lit, Expr, JoinType};
use datafusion::prelude::{DataFrame, SessionContext};
use deltalake::kernel::Transaction;
use deltalake::DeltaTable;
use knut_thund::ir::{AutoCdc, ColumnSelection, Flow, ScdType};
use roaring::RoaringTreemap;

use std::sync::atomic::{AtomicUsize, Ordering};

use datafusion::logical_expr::LogicalPlan;
use knut_thund::frontend::query::{analyze, NameContext};

use crate::checkpoint::{Checkpoint, CheckpointStore};
use crate::engine::{plan_query_with_streams, StreamTables};
use crate::error::{NativeError, Result};
use crate::flow::{FlowEffect, FlowJob};
use crate::sources::increments;

/// Columns of the history beside the target's.
pub(crate) const SEQ: &str = "__thund_seq";
pub(crate) const OP: &str = "__thund_op";
pub(crate) const BATCH: &str = "__thund_batch";
/// When the change was applied (ms since the epoch): tombstones expire by it.
pub(crate) const AT: &str = "__thund_at";
/// SCD type 2's validity columns, named as DLT names them.
pub const START_AT: &str = "__START_AT";
pub const END_AT: &str = "__END_AT";

/// An operation of a change.
pub(crate) const UPSERT: &str = "U";
pub(crate) const DELETE: &str = "D";
pub(crate) const TRUNCATE: &str = "T";

/// What the flow's clauses mean for a change feed of a given schema.
#[derive(Clone)]
pub(crate) struct Shape {
    /// The target's data columns (the `COLUMNS` selection of the feed), in the feed's order.
    pub columns: Vec<String>,
    /// Indices of the key columns in `columns`.
    pub keys: Vec<usize>,
    /// Indices (in `columns`) whose change opens a new SCD 2 version.
    pub tracked: Vec<usize>,
    pub scd: ScdType,
    pub ignore_nulls: bool,
}

impl Shape {
    /// Resolves the clauses against the feed's columns; unknown columns are an error at the
    /// flow's location, every one named at once.
    pub fn of(f: &Flow, cdc: &AutoCdc, feed: &Schema) -> Result<Shape> {
        let all: Vec<String> = feed.fields().iter().map(|f| f.name().clone()).collect();
        let find = |n: &str| all.iter().find(|c| c.eq_ignore_ascii_case(n)).cloned();
        let mut unknown = Vec::new();
        let mut check = |what: &str, names: &[String]| {
            for n in names {
                if find(n).is_none() {
                    unknown.push(format!("`{n}` ({what})"));
                }
            }
        };
        check("KEYS", &cdc.keys);
        let selected: Vec<String> = match &cdc.columns {
            ColumnSelection::All => all.clone(),
            ColumnSelection::Include(v) => {
                check("COLUMNS", v);
                all.iter().filter(|c| v.iter().any(|x| x.eq_ignore_ascii_case(c))).cloned().collect()
            }
            ColumnSelection::Except(v) => {
                check("COLUMNS * EXCEPT", v);
                all.iter().filter(|c| !v.iter().any(|x| x.eq_ignore_ascii_case(c))).cloned().collect()
            }
        };
        let tracked_names: Vec<String> = match &cdc.track_history {
            None | Some(ColumnSelection::All) => selected.clone(),
            Some(ColumnSelection::Include(v)) => {
                check("TRACK HISTORY ON", v);
                v.iter().filter_map(|n| find(n)).collect()
            }
            Some(ColumnSelection::Except(v)) => {
                check("TRACK HISTORY ON * EXCEPT", v);
                selected.iter().filter(|c| !v.iter().any(|x| x.eq_ignore_ascii_case(c))).cloned().collect()
            }
        };
        let err = |message: String| NativeError::Plan { location: f.location.to_string(), message };
        if !unknown.is_empty() {
            return Err(err(format!(
                "AUTO CDC flow `{}` names columns its change feed does not have: {} (the feed has: {})",
                f.name,
                unknown.join(", "),
                all.join(", ")
            )));
        }
        let index = |n: &String| selected.iter().position(|c| c.eq_ignore_ascii_case(n));
        let keys: Vec<usize> = cdc.keys.iter().filter_map(index).collect();
        if keys.len() != cdc.keys.len() {
            return Err(err(format!("AUTO CDC flow `{}`: every key must be one of the target's COLUMNS", f.name)));
        }
        for reserved in [START_AT, END_AT] {
            if cdc.scd_type == ScdType::Type2 && selected.iter().any(|c| c.eq_ignore_ascii_case(reserved)) {
                return Err(err(format!(
                    "AUTO CDC flow `{}`: the change feed has a column `{reserved}`, which SCD TYPE 2 adds itself; leave it out with COLUMNS * EXCEPT ({reserved})",
                    f.name
                )));
            }
        }
        // Neither the keys nor the sequence column (which every change moves) open a version.
        let sequence =
            cdc.sequence_by.as_deref().map(|s| s.trim().trim_matches('`')).and_then(|s| index(&s.to_string()));
        let tracked =
            tracked_names.iter().filter_map(index).filter(|i| !keys.contains(i) && Some(*i) != sequence).collect();
        Ok(Shape { columns: selected, keys, tracked, scd: cdc.scd_type, ignore_nulls: cdc.ignore_null_updates })
    }

    /// The target's schema: the data columns (types from the history) and, for SCD 2, the
    /// validity columns of the sequence's type.
    pub fn target_schema(&self, history: &Schema) -> Result<SchemaRef> {
        let mut fields: Vec<Field> = Vec::new();
        for c in &self.columns {
            fields.push(history.field_with_name(c)?.as_ref().clone().with_nullable(true));
        }
        if self.scd == ScdType::Type2 {
            let seq = history.field_with_name(SEQ)?.data_type().clone();
            fields.push(Field::new(START_AT, seq.clone(), true));
            fields.push(Field::new(END_AT, seq, true));
        }
        Ok(Arc::new(Schema::new(fields)))
    }
}

/// The SQL that evaluates a change feed's clauses: its columns, the sequence, the operation.
pub(crate) fn evaluating_sql(cdc: &AutoCdc, shape_columns: &[String], relation: &str) -> String {
    let op = match (&cdc.apply_as_truncate, &cdc.apply_as_delete) {
        (Some(t), Some(d)) => {
            format!("CASE WHEN coalesce(({t}), false) THEN '{TRUNCATE}' WHEN coalesce(({d}), false) THEN '{DELETE}' ELSE '{UPSERT}' END")
        }
        (Some(t), None) => format!("CASE WHEN coalesce(({t}), false) THEN '{TRUNCATE}' ELSE '{UPSERT}' END"),
        (None, Some(d)) => format!("CASE WHEN coalesce(({d}), false) THEN '{DELETE}' ELSE '{UPSERT}' END"),
        (None, None) => format!("'{UPSERT}'"),
    };
    let columns: Vec<String> = shape_columns.iter().map(|c| knut_thund::ir::quote_ident(c)).collect();
    format!(
        "SELECT {}, ({}) AS {SEQ}, {op} AS {OP} FROM {relation}",
        columns.join(", "),
        cdc.sequence_by.as_deref().unwrap_or("NULL")
    )
}

/// Rows of one key's replay: for each output row and data column, the history row its value
/// comes from; for SCD 2 also the rows whose sequence opens and closes the version.
struct Out {
    values: Values,
    start: usize,
    end: Option<usize>,
}

/// Where an output row's values come from: one history row, or (with `IGNORE NULL UPDATES`, a
/// NULL keeping the value before it) a row per column.
enum Values {
    Row(usize),
    Each(Box<[usize]>),
}

impl Values {
    fn of(&self, column: usize) -> usize {
        match self {
            Values::Row(i) => *i,
            Values::Each(v) => v[column],
        }
    }
}

/// Replays `history` (data columns, then [`SEQ`], [`OP`], [`BATCH`]) into the target rows of
/// every key in it, in key order. Truncations (rows whose operation is [`TRUNCATE`]) remove
/// every key's rows older than them.
pub(crate) fn replay(shape: &Shape, history: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let n = shape.columns.len();
    let seq_i = history.schema().index_of(SEQ)?;
    let op_i = history.schema().index_of(OP)?;
    let batch_i = history.schema().index_of(BATCH)?;
    let seq = rows_of(&[Arc::clone(history.column(seq_i))])?;
    let key_columns: Vec<ArrayRef> = shape.keys.iter().map(|k| Arc::clone(history.column(*k))).collect();
    let keys = rows_of(&key_columns)?;
    // Key and sequence in one encoding: sorting compares each pair of rows once.
    let key_seq = rows_of(&key_columns.iter().cloned().chain([Arc::clone(history.column(seq_i))]).collect::<Vec<_>>())?;
    let ops = history.column(op_i).as_string::<i32>().clone();
    let batches = history.column(batch_i).as_primitive::<arrow::datatypes::Int64Type>().clone();
    // Each tracked column on its own, so SCD 2 can compare versions column by column.
    let tracked: Vec<(usize, Rows)> = match shape.scd {
        ScdType::Type1 => Vec::new(),
        ScdType::Type2 => shape
            .tracked
            .iter()
            .map(|c| Ok((*c, rows_of(&[Arc::clone(history.column(*c))])?)))
            .collect::<Result<_>>()?,
    };

    // Sequence order; ties keep arrival order (earlier batch, then position).
    let arrival = |a: &usize, b: &usize| batches.value(*a).cmp(&batches.value(*b)).then(a.cmp(b));
    let (mut truncates, events): (Vec<usize>, Vec<usize>) =
        (0..history.num_rows()).partition(|i| ops.value(*i) == TRUNCATE);
    truncates.sort_unstable_by(|a, b| seq.row(*a).cmp(&seq.row(*b)).then_with(|| arrival(a, b)));
    // Keys in order, each key's changes in sequence order. Most comparisons are settled by the
    // first 16 bytes of the encoding (a key and most of a sequence), compared as one number.
    let mut keyed: Vec<(u128, usize)> = events.iter().map(|i| (prefix(&key_seq, *i), *i)).collect();
    keyed.sort_unstable_by(|(p, a), (q, b)| {
        p.cmp(q).then_with(|| key_seq.row(*a).cmp(&key_seq.row(*b))).then_with(|| arrival(a, b))
    });
    let events: Vec<usize> = keyed.into_iter().map(|(_, i)| i).collect();

    let mut out: Vec<Out> = Vec::with_capacity(events.len());
    let mut merged: Vec<(usize, bool)> = Vec::new();
    for events in events.chunk_by(|a, b| keys.row(*a) == keys.row(*b)) {
        // A key's events, with every truncation as a delete at its place.
        merged.clear();
        let (mut e, mut t) = (0, 0);
        while e < events.len() || t < truncates.len() {
            let take_truncate =
                t < truncates.len() && (e == events.len() || seq.row(truncates[t]) <= seq.row(events[e]));
            if take_truncate {
                merged.push((truncates[t], true));
                t += 1;
            } else {
                merged.push((events[e], false));
                e += 1;
            }
        }
        let mut current: Option<Out> = None;
        for &(i, truncate) in &merged {
            if truncate || ops.value(i) == DELETE {
                if let Some(mut v) = current.take() {
                    if shape.scd == ScdType::Type2 {
                        v.end = Some(i);
                        out.push(v);
                    }
                }
                continue;
            }
            let next = match &current {
                Some(cur) if shape.ignore_nulls => Values::Each(
                    (0..n).map(|c| if history.column(c).is_null(i) { cur.values.of(c) } else { i }).collect(),
                ),
                _ => Values::Row(i),
            };
            current = Some(match current.take() {
                None => Out { values: next, start: i, end: None },
                Some(cur) if shape.scd == ScdType::Type2 => {
                    let changed = tracked.iter().any(|(c, rows)| rows.row(cur.values.of(*c)) != rows.row(next.of(*c)));
                    if changed {
                        out.push(Out { end: Some(i), ..cur });
                        Out { values: next, start: i, end: None }
                    } else {
                        // Only untracked columns changed: the version is updated in place.
                        Out { values: next, ..cur }
                    }
                }
                Some(_) => Out { values: next, start: i, end: None },
            });
        }
        out.extend(current);
    }

    let picks = |c: usize| UInt32Array::from(out.iter().map(|o| o.values.of(c) as u32).collect::<Vec<_>>());
    // Without IGNORE NULL UPDATES every column of a row comes from the same change.
    let shared = (!shape.ignore_nulls).then(|| picks(0));
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(target.fields().len());
    for c in 0..n {
        let column = history.column(c).as_ref();
        columns.push(match &shared {
            Some(rows) => take(column, rows, None)?,
            None => take(column, &picks(c), None)?,
        });
    }
    if shape.scd == ScdType::Type2 {
        let seq_column = history.column(seq_i);
        let starts = UInt32Array::from(out.iter().map(|o| o.start as u32).collect::<Vec<_>>());
        let ends = UInt32Array::from(out.iter().map(|o| o.end.map(|e| e as u32)).collect::<Vec<_>>());
        columns.push(take(seq_column.as_ref(), &starts, None)?);
        columns.push(take(seq_column.as_ref(), &ends, None)?);
    }
    let columns = columns
        .into_iter()
        .zip(target.fields())
        .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c) } else { Ok(arrow::compute::cast(&c, f.data_type())?) })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new(Arc::clone(target), columns)?)
}

/// [`replay`] on a thread of its own: a flow shares its thread with the other flows of its
/// stage, which a replay of many changes would hold up.
async fn replay_apart(shape: &Shape, history: RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    let (shape, target) = (shape.clone(), Arc::clone(target));
    tokio::task::spawn_blocking(move || replay(&shape, &history, &target))
        .await
        .map_err(|e| NativeError::Execution(format!("a replay failed: {e}")))?
}

/// The first 16 bytes of row `i`'s encoding (zeros past its end) as a number: two rows whose
/// prefixes differ compare as their prefixes do, since a row cut short is a prefix of the longer
/// one and sorts first, like the zeros it is padded with.
fn prefix(rows: &Rows, i: usize) -> u128 {
    let row = rows.row(i);
    let row = row.as_ref();
    let mut bytes = [0u8; 16];
    let n = row.len().min(16);
    bytes[..n].copy_from_slice(&row[..n]);
    u128::from_be_bytes(bytes)
}

fn rows_of(columns: &[ArrayRef]) -> Result<Rows> {
    let converter = RowConverter::new(columns.iter().map(|c| SortField::new(c.data_type().clone())).collect())?;
    Ok(converter.convert_columns(columns)?)
}

/// The new changes of a batch, evaluated: checks that no sequence is NULL and adds the batch
/// number and the time it is applied.
pub(crate) fn stamp(
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
pub(crate) fn truncates(changes: &RecordBatch) -> Result<bool> {
    let ops = changes.column(changes.schema().index_of(OP)?).as_string::<i32>().clone();
    Ok(ops.iter().any(|o| o == Some(TRUNCATE)))
}

/// The distinct keys of `changes` as a one-batch table of the key columns.
pub(crate) fn touched_keys(shape: &Shape, changes: &RecordBatch) -> Result<RecordBatch> {
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

/// `left.k IS NOT DISTINCT FROM right.k` for every key column named in `keys`.
pub(crate) fn key_join(left: &DataFrame, right: &DataFrame, keys: &[String], kind: JoinType) -> Result<DataFrame> {
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
pub(crate) async fn earlier_history(
    ctx: &SessionContext,
    history: Option<&DeltaTable>,
    keys: Option<&RecordBatch>,
    key_names: &[String],
    batch: i64,
    schema: &SchemaRef,
) -> Result<Vec<RecordBatch>> {
    let Some(table) = history else { return Ok(Vec::new()) };
    table.update_datafusion_session(&ctx.state())?;
    let provider = table.table_provider().await?;
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

/// The files of `target` holding a touched key (`None`: every file), as the table lists them.
pub(crate) async fn touched_files(
    ctx: &SessionContext,
    target: &DeltaTable,
    keys: Option<&RecordBatch>,
    key_names: &[String],
) -> Result<Vec<String>> {
    let active: Vec<String> = target.snapshot()?.log_data().into_iter().map(|f| f.path().to_string()).collect();
    let Some(keys) = keys else { return Ok(active) };
    target.update_datafusion_session(&ctx.state())?;
    let provider = target.table_provider().with_file_column(FILE).await?;
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
pub(crate) const FILE: &str = "__thund_file";

/// The rows of `files` in `target` whose key is not touched (`None`: none are kept).
pub(crate) async fn untouched_rows(
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
    let provider = target.table_provider().with_file_paths(files.to_vec()).await?;
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

/// The application transaction the history's commit of a batch carries.
pub(crate) fn history_txn(app: &str, batch: i64) -> Transaction {
    Transaction::new(history_app(app), batch)
}

/// The application id of a flow's history commits.
fn history_app(app: &str) -> String {
    format!("{app}:history")
}

/// One batch of an AUTO CDC flow (the module doc has the steps). `state` is the flow's recovered
/// checkpoint, `next` the one this batch commits, `existing` the target if it has a commit, and
/// `after_crash` whether a crash left an intent (only then can the history hold this batch).
#[allow(clippy::too_many_arguments)]
pub(crate) async fn batch(
    job: &FlowJob<'_>,
    cdc: &AutoCdc,
    store: &CheckpointStore,
    state: &Checkpoint,
    mut next: Checkpoint,
    existing: Option<DeltaTable>,
    app: &str,
    after_crash: bool,
) -> Result<FlowEffect> {
    let (ctx, storage, p, d, f) = (job.ctx, job.storage, job.pipeline, job.dataset, job.flow);
    let plan_err = |e: NativeError| NativeError::Plan { location: f.location.to_string(), message: e.to_string() };
    let inputs = increments(ctx, storage, &p.root, &cdc.source.reads, state).await.map_err(plan_err)?;
    if !inputs.iter().any(|i| i.input.has_data) {
        return Ok(FlowEffect::Nothing);
    }
    let mut streams = StreamTables::new();
    for i in inputs {
        let name = format!("__thund_cdc_feed_{}", FEED_SEQ.fetch_add(1, Ordering::Relaxed));
        ctx.register_table(name.as_str(), i.input.provider)?;
        streams.insert(i.read, name);
        if let Some(o) = i.input.offset {
            next.sources.insert(i.key, o);
        }
    }
    let planned = evaluated_changes(ctx, job, cdc, &streams).await;
    for n in streams.values() {
        let _ = ctx.deregister_table(n.as_str());
    }
    let (shape, plan) = planned?;
    job.starting();
    if job.dry {
        return Ok(FlowEffect::Rows(0));
    }
    job.running();
    let df = DataFrame::new(ctx.state(), plan);
    let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
    let mut steps = Steps::start(&f.name);
    let now = now_ms();
    let new = stamp(f, df.collect().await?, schema, next.batch, now)?;
    steps.done("evaluate the changes");
    // SCD 1 keeps a deleted key's tombstone so that an older change arriving later cannot bring
    // it back; expired ones are collected after the batch, at most once per period.
    let optimize = auto_optimized(d)?;
    let retention = match shape.scd {
        ScdType::Type1 => Some(Retention::of(d)?),
        ScdType::Type2 => None,
    };
    let collect = match (&retention, state.tombstones_collected_at) {
        (Some(r), Some(last)) => now - last >= r.frequency_ms,
        _ => false,
    };
    // The first batch starts the period; a collection starts the next one.
    if retention.is_some() && (collect || state.tombstones_collected_at.is_none()) {
        next.tombstones_collected_at = Some(now);
    }
    let every_key = truncates(&new)?;
    let seq_column = Arc::clone(new.column(new.schema().index_of(SEQ)?));
    let watermark = state.cdc_sequence_watermark.as_deref().and_then(|w| watermark::decode(w, seq_column.data_type()));
    if new.num_rows() > 0 {
        next.cdc_sequence_watermark = Some(watermark::encode(&watermark::raised(watermark.as_ref(), &seq_column)?)?);
    }
    let key_names: Vec<String> = shape.keys.iter().map(|k| shape.columns[*k].clone()).collect();

    let history_key = storage.cdc_history_key(&d.name, &f.name);
    let history_url = storage.url_of(&format!("{history_key}/"));
    let history = match storage.is_table(&history_key).await? {
        true => Some(DeltaTable::try_from_url(history_url.clone()).await?),
        false => None,
    };
    let target_schema = shape.target_schema(&new.schema())?;
    // A target with deletion vectors takes the touched keys' rows by key (`incremental`); one
    // without them, a first batch and a truncation replay the keys' whole history.
    let marking = match &existing {
        Some(t) if !every_key => crate::deletion::enabled(t)?,
        _ => false,
    };
    // Found once: the replay reads their history, and a target without vectors their files.
    let touched = match marking || every_key {
        true => None,
        false => Some(touched_keys(&shape, &new)?),
    };
    // The history's append runs beside the planning, which reads only earlier batches' changes
    // (from the snapshot loaded above) and so never sees it; the target commits after both. The
    // pending checkpoint goes first: a crash once the append began is then known as one.
    store.write_pending(&next).await?;
    let append = {
        let (url, table, changes) = (history_url.clone(), history.clone(), new.clone());
        let (txn, app, batch) = (history_txn(app, next.batch), history_app(app), next.batch);
        tokio::spawn(async move {
            // A batch recomputed after a crash may find its own changes already appended
            // (finding out replays the history's log, so only then).
            let appended = match after_crash {
                true => crate::checkpoint::committed_batch(table.as_ref(), &app).await?,
                false => None,
            };
            match appended.is_none_or(|b| b < batch) {
                true => crate::table::append_batches(&url, table, changes, txn).await,
                // Found there: the history exists.
                false => table.ok_or_else(|| NativeError::Execution("internal error: no AUTO CDC history".into())),
            }
        })
    };
    let planning = async {
        let planned = match (&existing, marking) {
            (Some(target), true) => {
                let planned = incremental(
                    &shape,
                    &new,
                    history.as_ref(),
                    target,
                    &key_names,
                    &target_schema,
                    watermark.as_ref(),
                    &mut steps,
                )
                .await?;
                (planned.rows, Some(planned.marked))
            }
            _ => {
                let mut events =
                    earlier_history(ctx, history.as_ref(), touched.as_ref(), &key_names, next.batch, &new.schema())
                        .await?;
                events.push(new.clone());
                let events = concat_batches(&new.schema(), &events)?;
                steps.done("read the touched keys' history");
                (replay_apart(&shape, events, &target_schema).await?, None)
            }
        };
        steps.done("replay");
        Ok::<_, NativeError>(planned)
    };
    let planned = planning.await;
    // Awaited whatever the planning did, so no append outlives its batch.
    let appended = append.await.map_err(|e| NativeError::Execution(format!("the AUTO CDC history append failed: {e}")));
    let (rows, marked) = planned?;
    let history = appended??;
    // The append ran beside the planning: this is only what was left of it.
    steps.done("finish the history's append");
    crate::failpoint::hit("cdc-after-history", &f.name)?;
    let written = rows.num_rows() as u64;
    let txn = Transaction::new(app, next.batch);
    match (existing, marked) {
        (None, _) => {
            let plan = ctx.read_batch(rows)?.into_unoptimized_plan();
            let register = true;
            let url = storage.table_url(&d.name);
            crate::table::write_append(ctx, &url, &with_deletion_vectors(d), plan, None, txn, register).await?;
        }
        (Some(target), Some(marked)) => {
            let (marked, fold) = match optimize {
                true => to_fold(&target, marked).await?,
                false => (marked, HashSet::new()),
            };
            let (kept, dropped, vectors) = vectors_for(&target, marked, &fold, &target_schema).await?;
            steps.done("write the deletion vectors");
            crate::failpoint::hit("cdc-after-vectors", &f.name)?;
            let table = ctx.read_batches(kept.into_iter().chain([rows]))?;
            let commit = crate::write::Commit::Replace { dropped, marked: vectors, txn: Some(txn) };
            crate::table::commit_rows(ctx, d, &target, table.into_unoptimized_plan(), commit).await?;
        }
        (Some(target), None) => {
            // Without deletion vectors, the files holding a touched key are rewritten with their
            // other rows, streamed through the engine; after a truncation, all of them.
            let files = touched_files(ctx, &target, touched.as_ref(), &key_names).await?;
            let replayed = ctx.read_batch(rows)?;
            let table = match untouched_rows(ctx, &target, &files, touched.as_ref(), &key_names, &target_schema).await?
            {
                Some(kept) => kept.union(replayed)?,
                None => replayed,
            };
            let commit = crate::write::Commit::Replace { dropped: files, marked: Vec::new(), txn: Some(txn) };
            crate::table::commit_rows(ctx, d, &target, table.into_unoptimized_plan(), commit).await?;
        }
    }
    steps.done("commit the target");
    crate::failpoint::hit("cdc-after-commit", &f.name)?;
    if let (true, Some(r)) = (collect, &retention) {
        // Between the target's commit and the checkpoint: a crash here leaves the batch done and
        // the collection either done or left for the next period, which is all retention means.
        let forgotten = collect_tombstones(ctx, &history, &key_names, now - r.threshold_ms).await?;
        steps.done(&format!("collect expired tombstones ({forgotten} keys)"));
    }
    store.commit(&next).await?;
    steps.done("commit the checkpoint");
    Ok(FlowEffect::Rows(written))
}

/// What a batch does to a target with deletion vectors: the rows it adds and the rows it marks
/// deleted.
struct Planned {
    rows: RecordBatch,
    marked: Vec<crate::deletion::Marked>,
}

/// Plans a batch into a target with deletion vectors, reading by key (`keyscan`) only what the
/// touched keys need. Most changes follow every earlier change of their key: such a key's
/// result depends only on where the key stands, which is its row in the target (for SCD 2, its
/// open version), so its history is never read. SCD 1 without `IGNORE NULL UPDATES` does not
/// even need that row: the latest change wins. A key with a change at or before its latest
/// earlier one (or before a truncation) is *late*: its whole history is read and replayed, with
/// every truncation, as on a first batch. The result equals replaying every key's whole history:
/// the replay is a state machine over a key's changes in sequence order, and its state after
/// the earlier changes is exactly the key's rows in the target.
#[allow(clippy::too_many_arguments)]
async fn incremental(
    shape: &Shape,
    new: &RecordBatch,
    history: Option<&DeltaTable>,
    target: &DeltaTable,
    key_names: &[String],
    target_schema: &SchemaRef,
    watermark: Option<&ArrayRef>,
    steps: &mut Steps<'_>,
) -> Result<Planned> {
    use crate::keyscan::{read_rows, scan, Also, Wanted};
    use arrow::row::OwnedRow;

    if new.num_rows() == 0 {
        return Ok(Planned { rows: RecordBatch::new_empty(Arc::clone(target_schema)), marked: Vec::new() });
    }
    let key_columns: Vec<ArrayRef> = shape.keys.iter().map(|k| Arc::clone(new.column(*k))).collect();
    let wanted = Arc::new(Wanted::new(&key_columns)?);
    let ids: Vec<u32> = wanted.ids_of(&key_columns)?.into_iter().map(|i| i.unwrap_or(u32::MAX)).collect();
    let (seq_i, batch) = (new.schema().index_of(SEQ)?, new.column(new.schema().index_of(BATCH)?));
    let this_batch = batch.as_primitive::<arrow::datatypes::Int64Type>().values().first().copied().unwrap_or(0);
    let seq_type = new.column(seq_i).data_type().clone();
    let sequences = RowConverter::new(vec![SortField::new(seq_type.clone())])?;
    let new_seq = sequences.convert_columns(&[Arc::clone(new.column(seq_i))])?;
    // Each touched key's earliest new change.
    let mut first: std::collections::HashMap<u32, usize> = std::collections::HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        first
            .entry(*id)
            .and_modify(|j| {
                if new_seq.row(i) < new_seq.row(*j) {
                    *j = i
                }
            })
            .or_insert(i);
    }

    // A change above every sequence applied so far cannot be late: when all are, as when a feed
    // arrives in order, the history is not read at all.
    let above = match watermark {
        Some(w) => {
            let w = sequences.convert_columns(&[Arc::clone(w)])?;
            first.values().all(|i| new_seq.row(*i) > w.row(0))
        }
        None => false,
    };
    // The history's key columns, sequence, operation and batch: each touched key's latest change
    // and the latest truncation (a truncation's key means nothing; it is found whatever it is).
    let scanned = match history {
        Some(h) if !above => {
            let also: Also = Arc::new(|extra: &[ArrayRef]| {
                let ops = arrow::compute::cast(&extra[1], &DataType::Utf8)?;
                Ok(arrow::compute::kernels::cmp::eq(&ops, &arrow::array::StringArray::new_scalar(TRUNCATE))?)
            });
            let extra = [SEQ, OP, BATCH].map(String::from);
            scan(h, &wanted, key_names, &extra, Some(also)).await?
        }
        _ => Vec::new(),
    };
    let mut latest: std::collections::HashMap<u32, OwnedRow> = std::collections::HashMap::new();
    let mut truncated: Option<OwnedRow> = None;
    // Per file: which found rows are earlier batches' truncations (`None`) or changes of a key.
    let mut found: Vec<Vec<Option<Option<u32>>>> = Vec::with_capacity(scanned.len());
    for s in &scanned {
        let Changes { seq, ops, batches } = Changes::of(s, &sequences, &seq_type)?;
        let mut rows = Vec::with_capacity(s.positions.len());
        for j in 0..s.positions.len() {
            // A crash may have left this batch's own changes in the history.
            if batches.value(j) >= this_batch {
                rows.push(None);
                continue;
            }
            let later = |held: &Option<OwnedRow>| held.as_ref().is_none_or(|h| seq.row(j) > h.row());
            if ops.value(j) == TRUNCATE {
                if later(&truncated) {
                    truncated = Some(seq.row(j).owned());
                }
                rows.push(Some(None));
            } else if let Some(k) = s.keys[j] {
                if latest.get(&k).is_none_or(|h| seq.row(j) > h.row()) {
                    latest.insert(k, seq.row(j).owned());
                }
                rows.push(Some(Some(k)));
            } else {
                rows.push(None);
            }
        }
        found.push(rows);
    }
    let late: std::collections::HashSet<u32> = first
        .iter()
        .filter(|(k, i)| {
            let earliest = new_seq.row(**i);
            latest.get(k).is_some_and(|l| earliest <= l.row())
                || truncated.as_ref().is_some_and(|t| earliest <= t.row())
        })
        .map(|(k, _)| *k)
        .collect();
    match above {
        true => steps.done("every change follows the sequences applied"),
        false => steps.done(&format!("scan the history ({} of {} keys late)", late.len(), first.len())),
    }

    let mut events: Vec<RecordBatch> = Vec::new();
    if let (Some(h), false) = (history, late.is_empty()) {
        let schema = new.schema();
        let mut reads = Vec::new();
        for (s, rows) in scanned.iter().zip(&found) {
            let picks: RoaringTreemap = s
                .positions
                .iter()
                .zip(rows)
                .filter(|(_, r)| matches!(r, Some(None)) || matches!(r, Some(Some(k)) if late.contains(k)))
                .map(|(p, _)| *p)
                .collect();
            if !picks.is_empty() {
                let schema = &schema;
                reads.push(async move { read_rows(h, &s.file, Some(&s.opened), &picks, schema).await });
            }
        }
        events.extend(futures::future::try_join_all(reads).await?);
        steps.done("read the late keys' history");
    }

    // The target: every row of a late key is replaced; a key whose changes follow replaces its
    // current row (SCD 2: its open version) and continues from it where the replay needs it.
    let n = shape.columns.len();
    let scd2 = shape.scd == ScdType::Type2;
    let extra: Vec<String> = if scd2 { vec![END_AT.to_string()] } else { Vec::new() };
    let seeded = scd2 || shape.ignore_nulls;
    let seed_fields: Vec<Field> =
        target_schema.fields().iter().take(if scd2 { n + 1 } else { n }).map(|f| f.as_ref().clone()).collect();
    let seed_schema = Arc::new(Schema::new(seed_fields));
    let mut marked = Vec::new();
    let found = scan(target, &wanted, key_names, &extra, None).await?;
    steps.done("find the touched rows");
    let mut reads = Vec::new();
    for s in found {
        let (mut marks, mut seeds, mut seed_keys) = (RoaringTreemap::new(), RoaringTreemap::new(), Vec::new());
        for (j, (p, k)) in s.positions.iter().zip(&s.keys).enumerate() {
            let Some(k) = k else { continue };
            let current = !scd2 || s.extra[0].is_null(j);
            if late.contains(k) || current {
                marks.insert(*p);
            }
            if !late.contains(k) && current && seeded {
                seeds.insert(*p);
                seed_keys.push(*k);
            }
        }
        if !seeds.is_empty() {
            let (file, opened) = (s.file.clone(), s.opened.clone());
            let seed_schema = &seed_schema;
            reads.push(async move {
                let rows = read_rows(target, &file, Some(&opened), &seeds, seed_schema).await?;
                Ok::<_, NativeError>((rows, seed_keys))
            });
        }
        if !marks.is_empty() {
            let deleted = &s.deleted | &marks;
            marked.push(crate::deletion::Marked { file: s.file, deleted, records: s.rows });
        }
    }
    // The files' rows are read at once, each in its own task.
    for (rows, keys) in futures::future::try_join_all(reads).await? {
        events.push(seed_events(shape, new, &rows, &keys, &first)?);
    }
    if seeded {
        steps.done("read the rows the changes continue from");
    }
    events.push(new.clone());
    let events = concat_batches(&new.schema(), &events)?;
    let rows = replay_apart(shape, events, target_schema).await?;
    Ok(Planned { rows, marked })
}

/// The changes a history scan found, from its first `extra` columns ([`SEQ`], [`OP`], [`BATCH`]):
/// sequences encoded to compare, operations and batch numbers.
struct Changes {
    seq: Rows,
    ops: arrow::array::StringArray,
    batches: Int64Array,
}

impl Changes {
    fn of(s: &crate::keyscan::Scanned, sequences: &RowConverter, seq_type: &DataType) -> Result<Changes> {
        Ok(Changes {
            seq: sequences.convert_columns(&[arrow::compute::cast(&s.extra[0], seq_type)?])?,
            ops: arrow::compute::cast(&s.extra[1], &DataType::Utf8)?.as_string::<i32>().clone(),
            batches: arrow::compute::cast(&s.extra[2], &DataType::Int64)?
                .as_primitive::<arrow::datatypes::Int64Type>()
                .clone(),
        })
    }
}

/// Target rows (`rows`: the data columns, and for SCD 2 `__START_AT`) as changes the replay
/// continues from, ordered before every new change of their key: an SCD 2 version at its start,
/// an SCD 1 row at the key's earliest new change but an earlier batch.
fn seed_events(
    shape: &Shape,
    new: &RecordBatch,
    rows: &RecordBatch,
    keys: &[u32],
    first: &std::collections::HashMap<u32, usize>,
) -> Result<RecordBatch> {
    let schema = new.schema();
    let n = shape.columns.len();
    let count = rows.num_rows();
    let mut columns: Vec<ArrayRef> = Vec::with_capacity(schema.fields().len());
    for (i, f) in schema.fields().iter().enumerate() {
        let column: ArrayRef = match f.name().as_str() {
            SEQ if shape.scd == ScdType::Type2 => Arc::clone(rows.column(n)),
            SEQ => {
                let picks = UInt32Array::from(keys.iter().map(|k| first[k] as u32).collect::<Vec<_>>());
                take(new.column(i).as_ref(), &picks, None)?
            }
            OP => Arc::new(arrow::array::StringArray::from(vec![UPSERT; count])),
            BATCH => Arc::new(Int64Array::from(vec![i64::MIN; count])),
            AT => Arc::new(Int64Array::from(vec![0; count])),
            _ if i < n => Arc::clone(rows.column(i)),
            other => return Err(NativeError::Execution(format!("internal error: unexpected change column `{other}`"))),
        };
        columns.push(match column.data_type() == f.data_type() {
            true => column,
            false => arrow::compute::cast(&column, f.data_type())?,
        });
    }
    Ok(RecordBatch::try_new(schema, columns)?)
}

/// The target's dataset with deletion vectors enabled, unless its `TBLPROPERTIES` say otherwise:
/// a batch then marks the rows of its keys deleted instead of rewriting the files holding them
/// (`deletion`).
fn with_deletion_vectors(d: &knut_thund::ir::Dataset) -> knut_thund::ir::Dataset {
    let mut d = d.clone();
    d.details.properties.entry("delta.enableDeletionVectors".to_string()).or_insert_with(|| "true".to_string());
    d
}

/// Logs how long each step of a batch took (`THUND_LOG=thund_native::cdc=debug`).
struct Steps<'a> {
    flow: &'a knut_thund::ir::QualifiedName,
    last: std::time::Instant,
}

impl<'a> Steps<'a> {
    fn start(flow: &'a knut_thund::ir::QualifiedName) -> Self {
        Steps { flow, last: std::time::Instant::now() }
    }

    fn done(&mut self, step: &str) {
        let now = std::time::Instant::now();
        tracing::debug!(flow = %self.flow, step, ms = (now - self.last).as_secs_f64() * 1000.0, "AUTO CDC batch");
        self.last = now;
    }
}

/// DLT's table properties for how long an SCD 1 flow keeps a deleted key's tombstone (the
/// longest a change may arrive out of order) and how often expired ones are collected.
pub(crate) const TOMBSTONE_THRESHOLD: &str = "pipelines.cdc.tombstoneGCThresholdInSeconds";
pub(crate) const TOMBSTONE_FREQUENCY: &str = "pipelines.cdc.tombstoneGCFrequencyInSeconds";

/// Tombstone retention of an SCD 1 target, from its `TBLPROPERTIES` (DLT's defaults: two days,
/// checked every 30 minutes).
struct Retention {
    threshold_ms: i64,
    frequency_ms: i64,
}

impl Retention {
    fn of(d: &knut_thund::ir::Dataset) -> Result<Retention> {
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

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Forgets every key whose latest change is a delete applied at or before `cutoff`: its rows
/// leave the history, so an older change arriving later applies as if the key were new (DLT's
/// behaviour once a tombstone is collected). Returns how many keys were forgotten.
///
/// Only a key with such a delete can be forgotten, and deletes are few: those keys are found
/// first (a filtered scan of the operation and time columns), and only their changes are read
/// to see which delete is still each key's latest.
async fn collect_tombstones(
    ctx: &SessionContext,
    history: &DeltaTable,
    key_names: &[String],
    cutoff: i64,
) -> Result<usize> {
    use crate::keyscan::{scan, Wanted};
    if !crate::deletion::enabled(history)? {
        return Ok(0);
    }
    history.update_datafusion_session(&ctx.state())?;
    let schema = history.snapshot()?.snapshot().arrow_schema();
    let keys: Vec<Expr> = key_names.iter().map(|c| col(datafusion::common::Column::from_name(c))).collect();
    let candidates = ctx
        .read_table(history.table_provider().await?)?
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
    let marked: Vec<crate::deletion::Marked> = scanned
        .into_iter()
        .filter_map(|s| {
            let rows: RoaringTreemap = s
                .positions
                .iter()
                .zip(&s.keys)
                .filter(|(_, k)| k.is_some_and(|k| gone.contains(&k)))
                .map(|(p, _)| *p)
                .collect();
            (!rows.is_empty()).then(|| crate::deletion::Marked {
                deleted: &s.deleted | &rows,
                records: s.rows,
                file: s.file,
            })
        })
        .collect();
    let (kept, dropped, marked) = vectors_for(history, marked, &HashSet::new(), &schema).await?;
    let kept = ctx.read_batches(kept.into_iter().chain([RecordBatch::new_empty(Arc::clone(&schema))]))?;
    let commit = crate::write::Commit::Replace { dropped, marked, txn: None };
    match crate::write::parallel_write(ctx, history, kept.into_unoptimized_plan(), commit).await? {
        Some(_) => Ok(gone.len()),
        None => Err(NativeError::Execution("the AUTO CDC history cannot be written".into())),
    }
}

/// What marking `marked` takes: the live rows of the files better dropped than marked (as
/// `schema`; they are written again), those files, and the others with their new vectors
/// (written here). What a [`crate::write::Commit::Replace`] takes.
async fn vectors_for(
    table: &DeltaTable,
    marked: Vec<crate::deletion::Marked>,
    fold: &HashSet<String>,
    schema: &SchemaRef,
) -> Result<(Vec<RecordBatch>, Vec<String>, Vec<crate::deletion::Described>)> {
    let (dropped, marked): (Vec<_>, Vec<_>) =
        marked.into_iter().partition(|m| m.mostly_deleted() || fold.contains(&m.file.path));
    let reads = dropped.iter().filter_map(|m| {
        let mut live = RoaringTreemap::new();
        live.insert_range(0..m.records);
        live -= &m.deleted;
        (!live.is_empty())
            .then_some(async move { crate::keyscan::read_rows(table, &m.file, None, &live, schema).await })
    });
    let kept = futures::future::try_join_all(reads).await?;
    let vectors = crate::deletion::write(table, &marked).await?;
    Ok((kept, dropped.into_iter().map(|m| m.file.path).collect(), vectors))
}

/// How many files of about the same size a batch folds together.
const FOLD_AT: usize = 8;

/// The files of `table` a batch rewrites with its own rows, besides those mostly deleted, and
/// `marked` with the untouched ones among them added (their deleted rows as their vectors say).
///
/// Each batch adds a small file, and every later batch opens every file: fed small batches
/// without end, a target's file count would grow without bound (21 batches leave 21 files, 5
/// with folding, in `tests/cdc.rs`). As in size-tiered compaction, files are grouped by size in buckets a factor of 4
/// apart (under 64 KiB, under 256 KiB, …); once a bucket holds [`FOLD_AT`] files, the batch
/// rewrites them (their live rows join its new file, a bucket or two up) in its own commit, so
/// a crash or failure leaves them as they were. A row is rewritten about once per bucket it
/// climbs; files of half the target file size or more are never folded. DLT's
/// `pipelines.autoOptimize.managed = false` turns this off.
async fn to_fold(
    table: &DeltaTable,
    mut marked: Vec<crate::deletion::Marked>,
) -> Result<(Vec<crate::deletion::Marked>, HashSet<String>)> {
    use deltalake::table::config::TablePropertiesExt;
    let large = table.snapshot()?.table_config().target_file_size().get() / 2;
    let mut buckets: std::collections::BTreeMap<u32, Vec<crate::keyscan::Listed>> = Default::default();
    for file in crate::keyscan::files(table)? {
        // A file without a row count in the log would have to be opened to be folded.
        if file.size() < large && file.records().is_some() {
            let bucket = (file.size() / (64 * 1024)).checked_ilog(4).map_or(0, |b| b + 1);
            buckets.entry(bucket).or_default().push(file);
        }
    }
    let Some(files) = buckets.into_values().find(|files| files.len() >= FOLD_AT) else {
        return Ok((marked, HashSet::new()));
    };
    let fold: HashSet<String> = files.iter().map(|f| f.path.clone()).collect();
    let touched: HashSet<String> = marked.iter().map(|m| m.file.path.clone()).collect();
    let store = table.log_store().object_store(None);
    let untouched = files.into_iter().filter(|f| !touched.contains(&f.path)).map(|file| {
        let store = Arc::clone(&store);
        async move {
            let deleted = file.deleted(store.as_ref()).await?;
            let records = file.records().unwrap_or(0);
            Ok::<_, NativeError>(crate::deletion::Marked { file, deleted, records })
        }
    });
    marked.extend(futures::future::try_join_all(untouched).await?);
    Ok((marked, fold))
}

/// Whether a target's small files are folded as batches go (DLT's `pipelines.autoOptimize.managed`,
/// on unless a table property turns it off).
fn auto_optimized(d: &knut_thund::ir::Dataset) -> Result<bool> {
    match d.details.properties.iter().find(|(k, _)| k.eq_ignore_ascii_case(AUTO_OPTIMIZE)) {
        None => Ok(true),
        Some((k, v)) => match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(NativeError::Plan {
                location: d.location.to_string(),
                message: format!("`{}`: table property `{k}` must be true or false, not `{v}`", d.name),
            }),
        },
    }
}

/// DLT's table property for whether a table is optimized as it is written.
const AUTO_OPTIMIZE: &str = "pipelines.autoOptimize.managed";

static FEED_SEQ: AtomicUsize = AtomicUsize::new(0);

/// The feed's new changes with their sequence and operation, and the shape of the target.
async fn evaluated_changes(
    ctx: &SessionContext,
    job: &FlowJob<'_>,
    cdc: &AutoCdc,
    streams: &StreamTables,
) -> Result<(Shape, LogicalPlan)> {
    let (p, f) = (job.pipeline, job.flow);
    let feed = plan_query_with_streams(ctx, &cdc.source, &p.root, streams).await?;
    let shape = Shape::of(f, cdc, feed.schema().as_arrow())?;
    let relation = cdc.source.sql.strip_prefix("SELECT * FROM ").unwrap_or(&cdc.source.sql);
    let sql = evaluating_sql(cdc, &shape.columns, relation);
    let names = NameContext { catalog: f.name.catalog.clone(), database: f.name.database.clone() };
    let q = analyze(&sql, &cdc.source.location, &names).map_err(|problems| NativeError::Plan {
        location: f.location.to_string(),
        message: problems.iter().map(|d| d.message.clone()).collect::<Vec<_>>().join("; "),
    })?;
    // The relation's reads come last (the clauses' expressions precede `FROM`).
    let offset = q.reads.len().saturating_sub(cdc.source.reads.len());
    let mapped: StreamTables = streams.iter().map(|(i, n)| (i + offset, n.clone())).collect();
    let plan = plan_query_with_streams(ctx, &q, &p.root, &mapped).await?;
    Ok((shape, plan))
}

/// The highest sequence a flow has applied, kept in its checkpoint. Stored as a one-row Arrow IPC
/// stream, so a sequence of any type (a struct, a timestamp with its zone) comes back exactly.
mod watermark {
    use super::*;

    /// `current` raised to the highest of `sequences` (a one-row array).
    pub fn raised(current: Option<&ArrayRef>, sequences: &ArrayRef) -> Result<ArrayRef> {
        let converter = RowConverter::new(vec![SortField::new(sequences.data_type().clone())])?;
        let rows = converter.convert_columns(&[Arc::clone(sequences)])?;
        let top = (0..rows.num_rows()).max_by(|a, b| rows.row(*a).cmp(&rows.row(*b)));
        let top = match top {
            Some(i) => sequences.slice(i, 1),
            None => return current.cloned().ok_or_else(|| NativeError::Execution("no sequence".into())),
        };
        Ok(match current {
            Some(c)
                if converter.convert_columns(&[Arc::clone(c)])?.row(0)
                    >= converter.convert_columns(&[Arc::clone(&top)])?.row(0) =>
            {
                Arc::clone(c)
            }
            _ => top,
        })
    }

    pub fn encode(value: &ArrayRef) -> Result<String> {
        let schema = Arc::new(Schema::new(vec![Field::new("s", value.data_type().clone(), true)]));
        let batch = RecordBatch::try_new(Arc::clone(&schema), vec![Arc::clone(value)])?;
        let mut bytes = Vec::new();
        let mut writer = arrow::ipc::writer::StreamWriter::try_new(&mut bytes, &schema)?;
        writer.write(&batch)?;
        writer.finish()?;
        drop(writer);
        Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
    }

    /// The stored value, if it is one value of `kind` (a feed whose sequence changed type reads
    /// as none: every change is then checked against the history).
    pub fn decode(hex: &str, kind: &DataType) -> Option<ArrayRef> {
        let bytes: Vec<u8> = (0..hex.len())
            .step_by(2)
            .map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
            .collect::<Option<_>>()?;
        let mut reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None).ok()?;
        let batch = reader.next()?.ok()?;
        let value = batch.columns().first()?;
        (value.len() == 1 && value.data_type() == kind).then(|| Arc::clone(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StructArray};

    #[test]
    fn rows_ordered_by_their_prefix_first_keep_the_order_of_their_whole_encoding() {
        // Keys sharing their first 16 bytes and more, keys that are prefixes of others, NULLs,
        // empty strings, with sequences: only a whole comparison tells most of them apart.
        let long = "customer-0000000000000";
        let keys: Vec<Option<String>> = [
            Some(format!("{long}1")),
            Some(long.to_string()),
            Some(format!("{long}10")),
            None,
            Some(String::new()),
            Some("a".into()),
            Some(format!("{long}1")),
            Some("a\0".into()),
            Some(format!("{long}0")),
        ]
        .into_iter()
        .collect();
        let seqs: Vec<i64> = vec![5, 3, -1, 2, 9, i64::MIN, 4, 0, i64::MAX];
        let rows = rows_of(&[
            Arc::new(arrow::array::StringArray::from(keys)) as ArrayRef,
            Arc::new(Int64Array::from(seqs)) as ArrayRef,
        ])
        .unwrap();
        let mut whole: Vec<usize> = (0..rows.num_rows()).collect();
        whole.sort_by(|a, b| rows.row(*a).cmp(&rows.row(*b)));
        let mut by_prefix: Vec<usize> = (0..rows.num_rows()).collect();
        by_prefix
            .sort_by(|a, b| prefix(&rows, *a).cmp(&prefix(&rows, *b)).then_with(|| rows.row(*a).cmp(&rows.row(*b))));
        assert_eq!(by_prefix, whole);
        // And wherever two prefixes differ, they alone order the rows.
        for a in 0..rows.num_rows() {
            for b in 0..rows.num_rows() {
                if prefix(&rows, a) != prefix(&rows, b) {
                    assert_eq!(prefix(&rows, a).cmp(&prefix(&rows, b)), rows.row(a).cmp(&rows.row(b)), "{a} {b}");
                }
            }
        }
    }

    #[test]
    fn the_highest_sequence_applied_comes_back_exactly_and_only_as_its_own_type() {
        // A struct sequence orders field by field: (2, 1) is above (1, 10).
        let day: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 1]));
        let n: ArrayRef = Arc::new(Int32Array::from(vec![10, 1, 9]));
        let seq: ArrayRef = Arc::new(StructArray::from(vec![
            (Arc::new(Field::new("day", DataType::Int32, true)), day),
            (Arc::new(Field::new("n", DataType::Int32, true)), n),
        ]));
        let top = watermark::raised(None, &seq).unwrap();
        assert_eq!(top.as_ref(), seq.slice(1, 1).as_ref());
        let stored = watermark::encode(&top).unwrap();
        let back = watermark::decode(&stored, seq.data_type()).unwrap();
        assert_eq!(back.as_ref(), top.as_ref());
        // A lower batch keeps the watermark; a sequence of another type reads as none.
        assert_eq!(watermark::raised(Some(&back), &seq.slice(0, 1)).unwrap().as_ref(), top.as_ref());
        assert!(watermark::decode(&stored, &DataType::Int64).is_none());
        assert!(watermark::decode("not hex", seq.data_type()).is_none());
    }
}
