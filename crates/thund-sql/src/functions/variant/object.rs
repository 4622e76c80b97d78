//! Values into variants: `to_variant_object`.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature};

use crate::columnar::columnar;

use super::encoding::{build_error, Builder, FieldEntry, DATE, TIMESTAMP, TIMESTAMP_NTZ};
use super::{is_variant, parts, row, variant_array, variant_type};

/// `to_variant_object(x)`: a STRUCT or a MAP keyed by STRING as a variant object, an ARRAY as a
/// variant array, nested values likewise (a struct's fields keep their order in the dictionary).
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct ToVariantObject {
    pub(super) signature: Signature,
}

/// Whether a value of type `t` goes into a variant natively.
pub(super) fn storable(t: &DataType, top: bool) -> bool {
    match t {
        DataType::Struct(fields) if is_variant(t) => !top && !fields.is_empty(),
        DataType::Struct(fields) => fields.iter().all(|f| storable(f.data_type(), false)),
        DataType::List(f) | DataType::LargeList(f) => storable(f.data_type(), false),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                matches!(kv[0].data_type(), DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8)
                    && storable(kv[1].data_type(), false)
            }
            _ => false,
        },
        _ if top => false,
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(..)
        | DataType::Utf8
        | DataType::Utf8View
        | DataType::LargeUtf8
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::Date32
        | DataType::Timestamp(TimeUnit::Microsecond, _) => true,
        _ => false,
    }
}

impl ScalarUDFImpl for ToVariantObject {
    fn name(&self) -> &str {
        "to_variant_object"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !storable(&args[0], true) {
            return plan_err!(
                "to_variant_object of {} runs on the Spark backend (natively it takes a STRUCT, an ARRAY or a MAP keyed \
                 by STRING, of scalar values)",
                crate::types::spark_type_name(&args[0])
            );
        }
        Ok(variant_type())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let a = args.args[0].to_array(args.number_rows)?;
        let mut out = Vec::with_capacity(a.len());
        for i in 0..a.len() {
            out.push(match a.is_null(i) {
                true => None,
                false => {
                    let mut b = Builder::default();
                    put(&mut b, &a, i)?;
                    Some(b.finish().map_err(build_error)?)
                }
            });
        }
        columnar(variant_array(out)?, scalar)
    }
}

/// Writes row `i` of `a` into `b`.
pub(super) fn put(b: &mut Builder, a: &ArrayRef, i: usize) -> Result<()> {
    use arrow::datatypes::*;
    if a.is_null(i) {
        b.null();
        return Ok(());
    }
    match a.data_type() {
        DataType::Null => b.null(),
        DataType::Boolean => b.boolean(a.as_boolean().value(i)),
        DataType::Int8 => b.long(i64::from(a.as_primitive::<Int8Type>().value(i))),
        DataType::Int16 => b.long(i64::from(a.as_primitive::<Int16Type>().value(i))),
        DataType::Int32 => b.long(i64::from(a.as_primitive::<Int32Type>().value(i))),
        DataType::Int64 => b.long(a.as_primitive::<Int64Type>().value(i)),
        DataType::Float32 => b.float(a.as_primitive::<Float32Type>().value(i)),
        DataType::Float64 => b.double(a.as_primitive::<Float64Type>().value(i)),
        DataType::Decimal128(_, s) => b.decimal(a.as_primitive::<Decimal128Type>().value(i), *s as u8),
        DataType::Date32 => b.fixed(DATE, &a.as_primitive::<Date32Type>().value(i).to_le_bytes()),
        DataType::Timestamp(TimeUnit::Microsecond, zone) => {
            let t = a.as_primitive::<TimestampMicrosecondType>().value(i);
            b.fixed(if zone.is_some() { TIMESTAMP } else { TIMESTAMP_NTZ }, &t.to_le_bytes());
        }
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 => {
            let s = arrow::compute::cast(&a.slice(i, 1), &DataType::Utf8)?;
            b.string(s.as_string::<i32>().value(0));
        }
        DataType::Binary | DataType::BinaryView | DataType::LargeBinary => {
            let s = arrow::compute::cast(&a.slice(i, 1), &DataType::Binary)?;
            b.binary(s.as_binary::<i32>().value(0));
        }
        t if is_variant(t) => {
            let (s, value, metadata) = parts(a)?;
            if let Some(v) = row(&s, &value, &metadata, i)? {
                b.append(&v)?;
            }
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            let start = b.pos();
            let mut entries = Vec::with_capacity(fields.len());
            for (f, c) in fields.iter().zip(s.columns()) {
                let id = b.add_key(f.name());
                entries.push(FieldEntry { key: f.name().clone(), id, offset: b.pos() - start });
                put(b, c, i)?;
            }
            b.finish_object(start, entries).map_err(build_error)?;
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let list = arrow::compute::cast(&a.slice(i, 1), &DataType::List(list_field(a.data_type())))?;
            let items = list.as_list::<i32>().value(0);
            let start = b.pos();
            let mut offsets = Vec::with_capacity(items.len());
            for k in 0..items.len() {
                offsets.push(b.pos() - start);
                put(b, &items, k)?;
            }
            b.finish_array(start, &offsets).map_err(build_error)?;
        }
        DataType::Map(..) => {
            let m = a.as_map();
            let entries = m.value(i);
            let keys = arrow::compute::cast(entries.column(0), &DataType::Utf8)?;
            let values = entries.column(1);
            let start = b.pos();
            let mut fields = Vec::with_capacity(keys.len());
            for k in 0..keys.len() {
                let key = keys.as_string::<i32>().value(k).to_string();
                let id = b.add_key(&key);
                fields.push(FieldEntry { key, id, offset: b.pos() - start });
                put(b, values, k)?;
            }
            b.finish_object(start, fields).map_err(build_error)?;
        }
        other => return exec_err!("a {} in a VARIANT runs on the Spark backend", crate::types::spark_type_name(other)),
    }
    Ok(())
}

pub(super) fn list_field(t: &DataType) -> FieldRef {
    match t {
        DataType::List(f) | DataType::LargeList(f) => Arc::clone(f),
        _ => Arc::new(Field::new_list_field(DataType::Null, true)),
    }
}
