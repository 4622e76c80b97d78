//! `array_sort(array, (left, right) -> comparison)`: each row sorted by a stable bottom-up merge
//! sort, every row and every merge of a pass stepping together, so that each step evaluates the
//! comparator once over the heads of all merges under way.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, UInt32Array};
use arrow::compute::{cast, take, take_arrays};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::LambdaArgument;

use super::Flat;

/// `array_sort(array, comparator)`: each row sorted by a stable bottom-up merge sort, all rows
/// and all merges of a pass stepping together (see the module's notes).
pub(super) fn sort_with(list: &ArrayRef, comparator: &LambdaArgument) -> Result<ArrayRef> {
    let flat = Flat::of_list("array_sort", list)?;
    if flat.values.data_type() == &DataType::Null {
        return Ok(Arc::clone(list)); // nothing to compare, as on Spark
    }
    // `order[p]`: the element at position p once sorted so far (positions are the elements').
    let mut order: Vec<u32> = (0..flat.values.len() as u32).collect();
    let longest = (0..flat.rows()).map(|r| flat.offsets[r + 1] - flat.offsets[r]).max().unwrap_or(0);
    let mut width = 1;
    while width < longest {
        // One merge per pair of neighbouring runs: its two cursors, its run ends, its row.
        struct Merge {
            left: usize,
            left_end: usize,
            right: usize,
            right_end: usize,
            out: usize,
            row: u32,
        }
        let mut merges = Vec::new();
        for row in 0..flat.rows() {
            let (start, end) = (flat.offsets[row], flat.offsets[row + 1]);
            let mut s = start;
            while s + width < end {
                let right_end = (s + 2 * width).min(end);
                merges.push(Merge {
                    left: s,
                    left_end: s + width,
                    right: s + width,
                    right_end,
                    out: s,
                    row: row as u32,
                });
                s = right_end;
            }
        }
        let mut next = order.clone();
        let mut active: Vec<usize> = (0..merges.len()).collect();
        while !active.is_empty() {
            let lefts = UInt32Array::from_iter_values(active.iter().map(|&m| order[merges[m].left]));
            let rights = UInt32Array::from_iter_values(active.iter().map(|&m| order[merges[m].right]));
            let rows = UInt32Array::from_iter_values(active.iter().map(|&m| merges[m].row));
            let (l, r) = (take(&flat.values, &lefts, None)?, take(&flat.values, &rights, None)?);
            // Java's merge asks compare(right, left) and takes the right element only when it
            // is less, which keeps equal elements in order.
            let (a, b) = (|| Ok(Arc::clone(&r)), || Ok(Arc::clone(&l)));
            let answers = comparator
                .evaluate(&[&a, &b], |captured| Ok(take_arrays(captured, &rows, None)?))?
                .into_array(active.len())?;
            let answers = cast(&answers, &DataType::Int64)?;
            let answers = answers.as_primitive::<arrow::datatypes::Int64Type>();
            if answers.null_count() > 0 {
                return exec_err!(
                    "array_sort's comparator answered NULL, which Spark does not allow: make it answer an INT for every pair (e.g. with coalesce)"
                );
            }
            let mut still = Vec::with_capacity(active.len());
            for (k, &m) in active.iter().enumerate() {
                let g = &mut merges[m];
                if answers.value(k) < 0 {
                    next[g.out] = order[g.right];
                    g.right += 1;
                } else {
                    next[g.out] = order[g.left];
                    g.left += 1;
                }
                g.out += 1;
                if g.left < g.left_end && g.right < g.right_end {
                    still.push(m);
                }
            }
            active = still;
        }
        // The rest of whichever run is left.
        for g in &merges {
            let rest = (g.left..g.left_end).chain(g.right..g.right_end);
            for (p, from) in (g.out..).zip(rest) {
                next[p] = order[from];
            }
        }
        order = next;
        width *= 2;
    }
    let sorted = take(&flat.values, &UInt32Array::from(order), None)?;
    let DataType::List(field) = list.data_type() else { return exec_err!("array_sort expects an array") };
    Ok(Arc::new(arrow::array::ListArray::try_new(
        Arc::clone(field),
        Flat::offset_buffer(&flat.offsets),
        sorted,
        flat.nulls.clone(),
    )?))
}
