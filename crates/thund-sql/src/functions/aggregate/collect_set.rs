//! The order of `collect_set`'s elements as Spark gives it.
//!
//! Spark collects a set in a Scala `mutable.HashSet` and answers its iteration order: buckets in
//! index order, each bucket's elements by their (improved) hash. With `h = x.## ^ (x.## >>> 16)`
//! and a table of `size` buckets (16, doubled each time the set reaches three quarters of it),
//! the order is by `(h & (size - 1), h)`, whatever order the elements were added in. `x.##` is
//! Scala's hash of the value Spark holds: an integer's own value (a BIGINT's folded to 32 bits
//! when it does not fit an INT), a floating-point number's as an integer when it is one, a
//! string's Murmur3 hash with seed 42 (`UTF8String.hashCode`), a date's day number, a
//! timestamp's microseconds, a boolean's Java hash. Lists of other element types keep the order
//! they come in (Spark's hash of those values is not computed here). A set of floating-point
//! numbers holding NaN or both zeros is refused: Spark keeps every NaN (NaN is not equal to
//! itself there) and whichever zero came first.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListArray, UInt32Array};
use arrow::datatypes::{
    DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

/// The function's name (`collect_set`'s template puts it around DataFusion's).
pub(crate) const SPARK_SET_ORDER: &str = "__thund_spark_set_order";

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(SetOrder { signature: Signature::any(1, Volatility::Immutable) }));
}

/// Scala's `##` of a long.
fn long_hash(v: i64) -> i32 {
    if v as i32 as i64 == v {
        v as i32
    } else {
        (v ^ (v as u64 >> 32) as i64) as i32
    }
}

/// Scala's `##` of a double (`Statics.doubleHash`).
fn double_hash(d: f64) -> i32 {
    if (d as i32) as f64 == d {
        return d as i32;
    }
    if (d as i64) as f64 == d {
        return long_hash(d as i64);
    }
    if (d as f32) as f64 == d {
        return float_bits(d as f32);
    }
    let bits = if d.is_nan() { 0x7ff8_0000_0000_0000 } else { d.to_bits() };
    (bits ^ (bits >> 32)) as i32
}

/// Java's `Float.hashCode` (`floatToIntBits`, NaN canonical).
fn float_bits(f: f32) -> i32 {
    if f.is_nan() {
        0x7fc0_0000
    } else {
        f.to_bits() as i32
    }
}

/// Scala's `##` of a float (`Statics.floatHash`).
fn float_hash(f: f32) -> i32 {
    if (f as i32) as f32 == f {
        return f as i32;
    }
    if (f as i64) as f32 == f {
        return long_hash(f as i64);
    }
    float_bits(f)
}

/// Each element's Scala hash, if this element type's is computed here.
fn hashes(values: &dyn Array) -> Option<Vec<i32>> {
    let n = values.len();
    let each = |f: &dyn Fn(usize) -> i32| (0..n).map(|i| if values.is_null(i) { 0 } else { f(i) }).collect();
    Some(match values.data_type() {
        DataType::Int8 => each(&|i| values.as_primitive::<Int8Type>().value(i).into()),
        DataType::Int16 => each(&|i| values.as_primitive::<Int16Type>().value(i).into()),
        DataType::Int32 => each(&|i| values.as_primitive::<Int32Type>().value(i)),
        DataType::Date32 => each(&|i| values.as_primitive::<Date32Type>().value(i)),
        DataType::Int64 => each(&|i| long_hash(values.as_primitive::<Int64Type>().value(i))),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            each(&|i| long_hash(values.as_primitive::<TimestampMicrosecondType>().value(i)))
        }
        DataType::Float32 => each(&|i| float_hash(values.as_primitive::<Float32Type>().value(i))),
        DataType::Float64 => each(&|i| double_hash(values.as_primitive::<Float64Type>().value(i))),
        DataType::Boolean => each(&|i| if values.as_boolean().value(i) { 1231 } else { 1237 }),
        DataType::Utf8 => {
            each(&|i| crate::functions::hash::hash_bytes(values.as_string::<i32>().value(i).as_bytes(), 42))
        }
        DataType::LargeUtf8 => {
            each(&|i| crate::functions::hash::hash_bytes(values.as_string::<i64>().value(i).as_bytes(), 42))
        }
        DataType::Utf8View => {
            each(&|i| crate::functions::hash::hash_bytes(values.as_string_view().value(i).as_bytes(), 42))
        }
        _ => return None,
    })
}

/// Floating-point elements as doubles; `None` for another type.
fn floats(values: &dyn Array) -> Option<Vec<Option<f64>>> {
    match values.data_type() {
        DataType::Float64 => Some(values.as_primitive::<Float64Type>().iter().collect()),
        DataType::Float32 => Some(values.as_primitive::<Float32Type>().iter().map(|f| f.map(f64::from)).collect()),
        _ => None,
    }
}

/// The number of buckets of a Scala `mutable.HashSet` holding `n` elements.
fn table_size(n: usize) -> usize {
    let mut size = 16;
    while n >= size * 3 / 4 {
        size *= 2;
    }
    size
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SetOrder {
    signature: Signature,
}

impl ScalarUDFImpl for SetOrder {
    fn name(&self) -> &str {
        SPARK_SET_ORDER
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let list = args.args[0].to_array(args.number_rows)?;
        let DataType::List(field) = list.data_type() else { return exec_err!("collect_set answers an array") };
        let list = list.as_list::<i32>();
        let start = list.offsets()[0] as usize;
        let end = list.offsets()[list.len()] as usize;
        let values = list.values().slice(start, end - start);
        let Some(h) = hashes(values.as_ref()) else {
            return Ok(args.args[0].clone());
        };
        if let Some(floats) = floats(values.as_ref()) {
            if floats.iter().flatten().any(|f| f.is_nan()) {
                return exec_err!("collect_set of NaN runs on the Spark backend (Spark keeps each NaN)");
            }
            for r in 0..list.len() {
                let (from, to) = (list.offsets()[r] as usize - start, list.offsets()[r + 1] as usize - start);
                let zeros: Vec<bool> =
                    floats[from..to].iter().flatten().filter(|f| **f == 0.0).map(|f| f.is_sign_negative()).collect();
                if zeros.contains(&true) && zeros.contains(&false) {
                    return exec_err!(
                        "collect_set of both 0.0 and -0.0 runs on the Spark backend (Spark keeps the first it meets)"
                    );
                }
            }
        }
        let improved: Vec<i32> = h.iter().map(|&x| x ^ ((x as u32) >> 16) as i32).collect();
        let mut order: Vec<u32> = Vec::with_capacity(values.len());
        for r in 0..list.len() {
            let (from, to) = (list.offsets()[r] as usize - start, list.offsets()[r + 1] as usize - start);
            let mask = table_size(to - from) - 1;
            let mut row: Vec<u32> = (from as u32..to as u32).collect();
            row.sort_by_key(|&i| ((improved[i as usize] as u32 as usize & mask), improved[i as usize]));
            order.extend(row);
        }
        let offsets = arrow::buffer::OffsetBuffer::new(
            list.offsets().iter().map(|o| o - start as i32).collect::<Vec<_>>().into(),
        );
        let sorted = arrow::compute::take(values.as_ref(), &UInt32Array::from(order), None)?;
        let out: ArrayRef = Arc::new(ListArray::try_new(Arc::clone(field), offsets, sorted, list.nulls().cloned())?);
        Ok(match scalar {
            true => ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&out, 0)?),
            false => ColumnarValue::Array(out),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_scalas() {
        assert_eq!(double_hash(1.5), 0x3FC0_0000);
        assert_eq!(double_hash(-0.0), 0);
        assert_eq!(long_hash(5_000_000_000), 0x2A05_F201);
        assert_eq!(table_size(11), 16);
        assert_eq!(table_size(12), 32);
        assert_eq!(table_size(24), 64);
    }
}
