//! The order of `collect_set`'s elements as Spark gives it.
//!
//! Spark collects a set in a Scala `mutable.HashSet` and answers its iteration order: buckets in
//! index order, each bucket's elements by their (improved) hash. With `h = x.## ^ (x.## >>> 16)`
//! and a table of `size` buckets (16, doubled each time the set reaches three quarters of it),
//! the order is by `(h & (size - 1), h)`, whatever order the elements were added in. `x.##` is
//! Scala's hash of the value Spark holds: an integer's own value (a BIGINT's folded to 32 bits
//! when it does not fit an INT), a floating-point number's as an integer when it is one, a
//! string's Murmur3 hash with seed 42 (`UTF8String.hashCode`), a date's day number, a
//! timestamp's microseconds, a boolean's Java hash. A set of two or more elements of another
//! type is refused (Spark's hash of those values is not computed here).
//!
//! That order is Spark's only while the set has fewer than 12 elements: from 12 on, Spark's
//! final set is built by merging the partial sets of its partitions, and its order depends on
//! how the rows were partitioned (measured: the same 12 values in 1, 2, 3, 5 or 8 partitions
//! come back in different orders). A set of 12 or more is refused, unless what reads it does
//! not depend on the order (`array_sort(collect_set(x))`, `size(…)`: [`unordered`]).
//!
//! Floating-point sets differ between Spark's lines: from 4.2 on (SPARK-57298) Spark keys a
//! FLOAT or DOUBLE set on the value's bits after turning `-0.0` into `0.0` and every NaN into
//! one, so its order follows Java's `Double.hashCode`/`Float.hashCode` of the value, while 4.1
//! keys on the boxed value (Scala's `##`, every NaN kept, `-0.0` apart). A set is answered when
//! both orders agree and refused when they do not, or when it holds NaN or `-0.0`.

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

/// Spark 4.2's hash of a DOUBLE set's element: Scala's `##` of the long of its bits
/// (`doubleToLongBits`, NaN canonical, `-0.0` never reaching it).
fn double_bits_hash(d: f64) -> i32 {
    long_hash(if d.is_nan() { 0x7ff8_0000_0000_0000 } else { d.to_bits() as i64 })
}

/// The largest set whose order does not depend on Spark's partitions: its table keeps the 16
/// buckets it starts with, however its partial sets are merged.
const LARGEST_ORDERED_SET: usize = 11;

/// Functions whose answer does not depend on the order of their first argument's elements.
/// (`array_sort` with a comparator is `array_sort_by`, which keeps ties in the order they come.)
const ORDER_FREE: [&str; 8] =
    ["array_sort", "cardinality", "size", "array_length", "array_has", "array_contains", "array_max", "array_min"];

/// `f(collect_set(x), …)` as `f` of the set in DataFusion's order, where `f`'s answer does not
/// depend on the order of the set's elements: nothing to refuse there.
pub(crate) fn unordered(e: &datafusion::logical_expr::Expr) -> Option<datafusion::logical_expr::Expr> {
    use datafusion::logical_expr::Expr;
    let set = |e: &Expr| match e {
        Expr::ScalarFunction(inner) if inner.name() == SPARK_SET_ORDER => Some(inner.args[0].clone()),
        _ => None,
    };
    match e {
        // (`size` in ANSI mode asks whether the set is NULL.)
        Expr::IsNull(x) => Some(Expr::IsNull(Box::new(set(x)?))),
        Expr::IsNotNull(x) => Some(Expr::IsNotNull(Box::new(set(x)?))),
        Expr::ScalarFunction(f) if ORDER_FREE.contains(&f.name()) => {
            let mut args = f.args.clone();
            args[0] = set(args.first()?)?;
            Some(Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction {
                func: Arc::clone(&f.func),
                args,
            }))
        }
        _ => None,
    }
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

/// The order of each row's elements in a Scala `mutable.HashSet` keyed by the hashes `h`: bucket
/// by bucket, each bucket's elements by their improved hash. Indices into the list's values.
fn spark_order(list: &ListArray, start: usize, h: &[i32]) -> Vec<u32> {
    let improved: Vec<i32> = h.iter().map(|&x| x ^ ((x as u32) >> 16) as i32).collect();
    let mut order: Vec<u32> = Vec::with_capacity(h.len());
    for r in 0..list.len() {
        let (from, to) = (list.offsets()[r] as usize - start, list.offsets()[r + 1] as usize - start);
        let mask = table_size(to - from) - 1;
        let mut row: Vec<u32> = (from as u32..to as u32).collect();
        row.sort_by_key(|&i| ((improved[i as usize] as u32 as usize & mask), improved[i as usize]));
        order.extend(row);
    }
    order
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
            if (0..list.len()).any(|r| list.value_length(r) > 1) {
                return exec_err!(
                    "collect_set of {} values: Spark's order of them (by its hash of each) is not computed here; sort \
                     the set (array_sort(collect_set(…))) or run on the Spark backend",
                    field.data_type()
                );
            }
            return Ok(args.args[0].clone());
        };
        for r in 0..list.len() {
            if list.value_length(r) as usize > LARGEST_ORDERED_SET {
                return exec_err!(
                    "collect_set of more than {LARGEST_ORDERED_SET} values: Spark's order of them depends on how its \
                     rows are partitioned; sort the set (array_sort(collect_set(…))) or run on the Spark backend"
                );
            }
        }
        // Spark 4.1's order, and for floating-point sets also 4.2's (refused where they differ).
        let mut order = spark_order(list, start, &h);
        if let Some(floats) = floats(values.as_ref()) {
            if floats.iter().flatten().any(|f| f.is_nan() || (*f == 0.0 && f.is_sign_negative())) {
                return exec_err!(
                    "collect_set of NaN or -0.0 answers differently on Spark 4.1 (each NaN kept, -0.0 apart) and \
                     4.2 on (one NaN, -0.0 read as 0.0): it runs on the Spark backend"
                );
            }
            let bits: Vec<i32> = match values.data_type() {
                DataType::Float32 => {
                    values.as_primitive::<Float32Type>().values().iter().map(|f| float_bits(*f)).collect()
                }
                _ => values.as_primitive::<Float64Type>().values().iter().map(|d| double_bits_hash(*d)).collect(),
            };
            let later = spark_order(list, start, &bits);
            let at = |o: &[u32]| o.iter().map(|&i| floats[i as usize].map(f64::to_bits)).collect::<Vec<_>>();
            if at(&order) != at(&later) {
                return exec_err!(
                    "collect_set of these FLOAT or DOUBLE values comes back in another order on Spark 4.1 than on 4.2 \
                     and later (each line hashes them differently): sort the set (array_sort(collect_set(…))) or run \
                     on the Spark backend"
                );
            }
            order = later;
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

    /// Spark 4.1 and 4.2 answer these sets in these orders (measured on 4.1.4 and 4.2.1).
    #[test]
    fn floating_sets_in_each_lines_order() {
        let sets = [
            (vec![1.5, 2.0, 1e20, -3.25], vec![-3.25, 1.5, 2.0, 1e20], vec![2.0, 1.5, -3.25, 1e20]),
            (vec![1.0, 2.0, 3.0, 4.0, 100.0], vec![1.0, 2.0, 3.0, 4.0, 100.0], vec![1.0, 2.0, 4.0, 3.0, 100.0]),
        ];
        for (values, on_4_1, on_4_2) in sets {
            let list = ListArray::from_iter_primitive::<Float64Type, _, _>([Some(values.iter().map(|v| Some(*v)))]);
            let doubles = list.values().as_primitive::<Float64Type>().values().to_vec();
            let in_order =
                |h: Vec<i32>| -> Vec<f64> { spark_order(&list, 0, &h).iter().map(|&i| doubles[i as usize]).collect() };
            assert_eq!(in_order(doubles.iter().map(|d| double_hash(*d)).collect()), on_4_1);
            assert_eq!(in_order(doubles.iter().map(|d| double_bits_hash(*d)).collect()), on_4_2);
        }
    }
}
