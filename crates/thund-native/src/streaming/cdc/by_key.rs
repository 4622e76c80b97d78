//! Planning a batch into a target with deletion vectors by key: only what the touched keys need
//! is read (`keyscan`), and only a late key's history.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, UInt32Array};
use arrow::compute::{concat_batches, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};
use deltalake::DeltaTable;
use knut_thund::ir::ScdType;
use roaring::RoaringTreemap;

use super::replay::replay_apart;
use super::shape::{Shape, AT, BATCH, END_AT, OP, SEQ, TRUNCATE, UPSERT};
use crate::error::{NativeError, Result};
use crate::flow::Steps;

/// What a batch does to a target with deletion vectors: the rows it adds and the rows it marks
/// deleted.
pub(super) struct Planned {
    pub rows: RecordBatch,
    pub marked: Vec<crate::delta::deletion::Marked>,
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
pub(super) async fn incremental(
    shape: &Shape,
    new: &RecordBatch,
    history: Option<&DeltaTable>,
    target: &DeltaTable,
    key_names: &[String],
    target_schema: &SchemaRef,
    watermark: Option<&ArrayRef>,
    steps: &mut Steps,
) -> Result<Planned> {
    use crate::delta::keyscan::{read_rows, scan, Also, Wanted};
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
            marked.push(crate::delta::deletion::Marked { file: s.file, deleted, records: s.rows });
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
pub(super) struct Changes {
    pub seq: Rows,
    pub ops: arrow::array::StringArray,
    pub batches: Int64Array,
}

impl Changes {
    pub(super) fn of(
        s: &crate::delta::keyscan::Scanned,
        sequences: &RowConverter,
        seq_type: &DataType,
    ) -> Result<Changes> {
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
