//! `map_zip_with(map1, map2, (k, v1, v2) -> …)`: every key of either map once, the first map's
//! in order and then the second's that the first lacks, with the lambda's answer over its two
//! values (NULL where a map lacks the key), evaluated once over all entries of a batch.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{ArrayRef, MapArray, StructArray, UInt32Array};
use arrow::buffer::NullBuffer;
use arrow::compute::{cast, interleave, take, take_arrays};
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::LambdaArgument;

use super::{entries, Flat};

/// The key type two maps are zipped by: theirs if they agree, else their common type as
/// `map_concat` widens them (`maps::common`: the wider integer, one text encoding).
pub(super) fn common_key(left: &DataType, right: &DataType) -> Result<DataType> {
    let (k1, _) = entries("map_zip_with", left)?;
    let (k2, _) = entries("map_zip_with", right)?;
    let (a, b) = (k1.data_type(), k2.data_type());
    match crate::functions::collection::maps::common(a, b) {
        Some(key) => Ok(key),
        None => plan_err!("map_zip_with's maps have keys of different types: {a} and {b}"),
    }
}

/// `map_zip_with`: every key of either map once (the first map's in order, then the second's
/// that the first lacks) with the lambda's answer over its two values, NULL where a map lacks
/// the key. A NULL map gives NULL.
pub(super) fn map_zip_with(
    left: &ArrayRef,
    right: &ArrayRef,
    lambda: &LambdaArgument,
    ret: &DataType,
) -> Result<ArrayRef> {
    let DataType::Map(field, sorted) = ret else { return exec_err!("expected a map type, not {ret}") };
    let DataType::Struct(fields) = field.data_type() else { return exec_err!("expected map entries") };
    let key_type = fields[0].data_type();
    let (l, le) = Flat::of_map(left)?;
    let (r, re) = Flat::of_map(right)?;
    let lk = cast(le.column(0), key_type)?;
    let rk = cast(re.column(0), key_type)?;
    let converter = RowConverter::new(vec![SortField::new(key_type.clone())])?;
    let (lrows, rrows) =
        (converter.convert_columns(&[Arc::clone(&lk)])?, converter.convert_columns(&[Arc::clone(&rk)])?);
    let nulls = NullBuffer::union(l.nulls.as_ref(), r.nulls.as_ref());
    // Each entry of the answer: where its key is (0: the first map's, 1: the second's) and the
    // positions of its values in either map.
    let (mut keys, mut li, mut ri, mut row_of, mut offsets) = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), vec![0]);
    for row in 0..l.rows() {
        if !nulls.as_ref().is_some_and(|n| n.is_null(row)) {
            let in_right: std::collections::HashMap<_, usize> =
                (r.offsets[row]..r.offsets[row + 1]).map(|j| (rrows.row(j), j)).collect();
            let mut in_left = HashSet::new();
            for i in l.offsets[row]..l.offsets[row + 1] {
                in_left.insert(lrows.row(i));
                keys.push((0, i));
                li.push(Some(i as u32));
                ri.push(in_right.get(&lrows.row(i)).map(|&j| j as u32));
                row_of.push(row as u32);
            }
            for j in r.offsets[row]..r.offsets[row + 1] {
                if !in_left.contains(&rrows.row(j)) {
                    keys.push((1, j));
                    li.push(None);
                    ri.push(Some(j as u32));
                    row_of.push(row as u32);
                }
            }
        }
        offsets.push(keys.len());
    }
    let key = interleave(&[lk.as_ref(), rk.as_ref()], &keys)?;
    let v1 = take(le.column(1), &UInt32Array::from(li), None)?;
    let v2 = take(re.column(1), &UInt32Array::from(ri), None)?;
    let row_of = UInt32Array::from(row_of);
    let (k, a, b) = (|| Ok(Arc::clone(&key)), || Ok(Arc::clone(&v1)), || Ok(Arc::clone(&v2)));
    let out = lambda
        .evaluate(&[&k, &a, &b], |captured| Ok(take_arrays(captured, &row_of, None)?))?
        .into_array(row_of.len())?;
    let out = if out.data_type() == fields[1].data_type() { out } else { cast(&out, fields[1].data_type())? };
    let entries = StructArray::try_new(fields.clone(), vec![key, out], None)?;
    Ok(Arc::new(MapArray::try_new(Arc::clone(field), Flat::offset_buffer(&offsets), entries, nulls, *sorted)?))
}
