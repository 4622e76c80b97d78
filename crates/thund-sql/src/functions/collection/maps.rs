//! Spark's `map_concat(m1, m2, …)`, which DataFusion lacks: the entries of every map, in
//! order, in one map. A key met twice fails the query with Spark's `[DUPLICATED_MAP_KEY]` (its
//! default `spark.sql.mapKeyDedupPolicy`, EXCEPTION); a NULL map makes the answer NULL. The maps
//! must have one key type and one value type, up to VOID (`map('k', NULL)`) and integers of
//! different widths, which convert; Spark's widening of other differing types runs on the Spark
//! backend.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, MapArray, UInt32Array};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::columnar::columnar;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(MapConcat { signature: Signature::variadic_any(Volatility::Immutable) }));
}

/// The type both `a` and `b` convert to without loss: VOID to the other, an integer to a wider
/// one, text of any encoding to STRING; `None` for others.
pub(crate) fn common(a: &DataType, b: &DataType) -> Option<DataType> {
    let width = |t: &DataType| match t {
        DataType::Int8 => Some(1),
        DataType::Int16 => Some(2),
        DataType::Int32 => Some(3),
        DataType::Int64 => Some(4),
        _ => None,
    };
    let text = |t: &DataType| matches!(t, DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8);
    match (a, b) {
        _ if a == b => Some(a.clone()),
        (DataType::Null, t) | (t, DataType::Null) => Some(t.clone()),
        _ if text(a) && text(b) => Some(DataType::Utf8),
        _ => match (width(a), width(b)) {
            (Some(x), Some(y)) => Some(if x >= y { a.clone() } else { b.clone() }),
            _ => None,
        },
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MapConcat {
    signature: Signature,
}

impl ScalarUDFImpl for MapConcat {
    fn name(&self) -> &str {
        "map_concat"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let kv = |t: &DataType| match t {
            DataType::Map(f, _) => match f.data_type() {
                DataType::Struct(kv) if kv.len() == 2 => Some((kv[0].data_type().clone(), kv[1].data_type().clone())),
                _ => None,
            },
            _ => None,
        };
        let refuse = || {
            plan_err!(
                "map_concat of {} runs on the Spark backend (natively the maps have one key and one value type)",
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            )
        };
        // The answer's key and value types: one for all maps, VOID converting to any type and
        // integers to the widest.
        let mut key = DataType::Null;
        let mut value = DataType::Null;
        for t in args.iter().filter(|t| **t != DataType::Null) {
            let Some((k, v)) = kv(t) else { return refuse() };
            match (common(&key, &k), common(&value, &v)) {
                (Some(k), Some(v)) => (key, value) = (k, v),
                _ => return refuse(),
            }
        }
        let Some(first) = args.iter().find(|t| matches!(t, DataType::Map(..))) else { return refuse() };
        let DataType::Map(entries, sorted) = first else { return refuse() };
        let DataType::Struct(fields) = entries.data_type() else { return refuse() };
        let fields = arrow::datatypes::Fields::from(vec![
            fields[0].as_ref().clone().with_data_type(key),
            fields[1].as_ref().clone().with_data_type(value).with_nullable(true),
        ]);
        let entries = entries.as_ref().clone().with_data_type(DataType::Struct(fields));
        Ok(DataType::Map(Arc::new(entries), *sorted))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let out_type = args.return_field.data_type().clone();
        let DataType::Map(entries_field, sorted) = &out_type else { return exec_err!("map_concat: not a map") };
        // Maps of VOID keys or values take the answer's types.
        let maps: Vec<ArrayRef> = args
            .args
            .iter()
            .map(|a| {
                let m = a.to_array(n)?;
                match m.data_type() {
                    DataType::Map(..) if m.data_type() != &out_type => Ok(arrow::compute::cast(&m, &out_type)?),
                    _ => Ok(m),
                }
            })
            .collect::<Result<_>>()?;
        let maps: Vec<Option<&MapArray>> = maps.iter().map(|m| m.as_any().downcast_ref::<MapArray>()).collect();
        // Every map's entries one after another, and where each map's start in that list.
        let parts: Vec<ArrayRef> = maps.iter().flatten().map(|m| Arc::new(m.entries().clone()) as ArrayRef).collect();
        let all = if parts.is_empty() {
            arrow::array::new_empty_array(entries_field.data_type())
        } else {
            arrow::compute::concat(&parts.iter().map(|p| p.as_ref()).collect::<Vec<_>>())?
        };
        let mut base = Vec::with_capacity(maps.len());
        let mut at = 0usize;
        for m in &maps {
            base.push(at);
            at += m.map_or(0, |m| m.entries().len());
        }
        let all_struct = all.as_struct();
        let keys = RowConverter::new(vec![SortField::new(all_struct.column(0).data_type().clone())])?
            .convert_columns(&[Arc::clone(all_struct.column(0))])?;
        let mut take = Vec::new();
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(n);
        for row in 0..n {
            // A NULL argument (a NULL map, or a NULL literal) makes the row NULL.
            let null = maps.iter().zip(&args.args).any(|(m, a)| match m {
                Some(m) => m.is_null(row),
                None => a.data_type() == DataType::Null,
            });
            if !null {
                let mut seen = HashSet::new();
                for (m, b) in maps.iter().zip(&base) {
                    let Some(m) = m else { continue };
                    let (from, to) = (m.value_offsets()[row] as usize, m.value_offsets()[row + 1] as usize);
                    for e in from..to {
                        let k = b + e;
                        if !seen.insert(keys.row(k)) {
                            let key = arrow::util::display::array_value_to_string(all_struct.column(0), k)?;
                            return exec_err!(
                                "[DUPLICATED_MAP_KEY] Duplicate map key {key} was found, please check the input data"
                            );
                        }
                        take.push(k as u32);
                    }
                }
            }
            valid.push(!null);
            offsets.push(take.len() as i32);
        }
        let taken = arrow::compute::take(&all, &UInt32Array::from(take), None)?;
        let taken = taken.as_struct().clone();
        let nulls = valid.iter().any(|v| !v).then(|| NullBuffer::from(valid));
        let out =
            MapArray::try_new(Arc::clone(entries_field), OffsetBuffer::new(offsets.into()), taken, nulls, *sorted)?;
        columnar(Arc::new(out), scalar)
    }
}
