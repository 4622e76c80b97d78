//! The replay: a key's changes in sequence order, applied one after another as SCD type 1 (the
//! latest row) or type 2 (every version, with its validity), truncations removing whatever
//! precedes them. Vectorised: keys and sequences are compared as Arrow row encodings, and the
//! result is taken column by column from the changes.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch, UInt32Array};
use arrow::compute::take;
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, Rows, SortField};
use knut_thund::ir::ScdType;

use super::shape::{Shape, BATCH, DELETE, OP, SEQ, TRUNCATE};
use crate::error::{NativeError, Result};

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
pub(super) async fn replay_apart(shape: &Shape, history: RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
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

pub(super) fn rows_of(columns: &[ArrayRef]) -> Result<Rows> {
    let converter = RowConverter::new(columns.iter().map(|c| SortField::new(c.data_type().clone())).collect())?;
    Ok(converter.convert_columns(columns)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

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
}
