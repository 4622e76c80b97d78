//! The highest sequence an AUTO CDC flow has applied, kept in its checkpoint: a change above it
//! cannot be late, so its key's history need not be read. Stored as a one-row Arrow IPC stream,
//! so a sequence of any type (a struct, a timestamp with its zone) comes back exactly.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::row::{RowConverter, SortField};

use crate::error::{NativeError, Result};

/// `current` raised to the highest of `sequences` (a one-row array).
pub(super) fn raised(current: Option<&ArrayRef>, sequences: &ArrayRef) -> Result<ArrayRef> {
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

pub(super) fn encode(value: &ArrayRef) -> Result<String> {
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
pub(super) fn decode(hex: &str, kind: &DataType) -> Option<ArrayRef> {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| hex.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<_>>()?;
    let mut reader = arrow::ipc::reader::StreamReader::try_new(std::io::Cursor::new(bytes), None).ok()?;
    let batch = reader.next()?.ok()?;
    let value = batch.columns().first()?;
    (value.len() == 1 && value.data_type() == kind).then(|| Arc::clone(value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Int32Array, StructArray};

    #[test]
    fn the_highest_sequence_applied_comes_back_exactly_and_only_as_its_own_type() {
        // A struct sequence orders field by field: (2, 1) is above (1, 10).
        let day: ArrayRef = Arc::new(Int32Array::from(vec![1, 2, 1]));
        let n: ArrayRef = Arc::new(Int32Array::from(vec![10, 1, 9]));
        let seq: ArrayRef = Arc::new(StructArray::from(vec![
            (Arc::new(Field::new("day", DataType::Int32, true)), day),
            (Arc::new(Field::new("n", DataType::Int32, true)), n),
        ]));
        let top = raised(None, &seq).unwrap();
        assert_eq!(top.as_ref(), seq.slice(1, 1).as_ref());
        let stored = encode(&top).unwrap();
        let back = decode(&stored, seq.data_type()).unwrap();
        assert_eq!(back.as_ref(), top.as_ref());
        // A lower batch keeps the watermark; a sequence of another type reads as none.
        assert_eq!(raised(Some(&back), &seq.slice(0, 1)).unwrap().as_ref(), top.as_ref());
        assert!(decode(&stored, &DataType::Int64).is_none());
        assert!(decode("not hex", seq.data_type()).is_none());
    }
}
