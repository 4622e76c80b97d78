//! Spark's `hash(expr, …)`: Murmur3 x86 32-bit, seed 42, over Spark's own layout of each value.
//!
//! Each argument's value updates the hash of its row in turn, the running hash being the seed
//! of the next (a NULL leaves it as it is). A value is hashed as Spark's `HashExpression` hashes
//! it: integers up to INT and DATE as an int, BIGINT and TIMESTAMP as a long, FLOAT and DOUBLE by
//! their bits (-0.0 as 0, NaN canonical), BOOLEAN as 1 or 0, text and binaries by their bytes
//! with Spark's own tail (each trailing byte mixed alone, sign-extended: Spark's
//! `hashUnsafeBytes`, which is not the reference Murmur3), a DECIMAL of up to 18 digits by its
//! unscaled long and a wider one by the bytes of its unscaled big integer; arrays element by
//! element, structs field by field. Maps are refused, as Spark refuses them. (`xxhash64` is
//! `datafusion-spark`'s, which hashes the same layout.)

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int32Array};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::declare::{Call, Function, PlanContext};

/// Spark's hash functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[Function::udf("hash"), Function::builtin("xxhash64").plan(xxhash64)];

/// datafusion-spark's `xxhash64` hashes a DECIMAL otherwise than Spark (every example
/// differed); Spark's other types it hashes as Spark does.
fn xxhash64(
    c: Call,
    cx: &PlanContext,
) -> Result<datafusion::common::tree_node::Transformed<datafusion::logical_expr::Expr>> {
    use datafusion::logical_expr::ExprSchemable;
    if c.args.iter().any(|a| a.get_type(cx.schema).is_ok_and(|t| holds_decimal(&t))) {
        return Err(crate::declare::refused("xxhash64", "of a DECIMAL it is another hash"));
    }
    c.unchanged()
}

/// Whether a DECIMAL is anywhere in `t`.
fn holds_decimal(t: &DataType) -> bool {
    match t {
        DataType::Decimal128(..) | DataType::Decimal256(..) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => {
            holds_decimal(f.data_type())
        }
        DataType::Struct(fields) => fields.iter().any(|f| holds_decimal(f.data_type())),
        _ => false,
    }
}

const SEED: i32 = 42;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Hash { signature: Signature::variadic_any(Volatility::Immutable) }));
}

fn mix_k1(k1: i32) -> i32 {
    k1.wrapping_mul(0xcc9e2d51_u32 as i32).rotate_left(15).wrapping_mul(0x1b873593)
}

fn mix_h1(h1: i32, k1: i32) -> i32 {
    (h1 ^ k1).rotate_left(13).wrapping_mul(5).wrapping_add(0xe6546b64_u32 as i32)
}

fn fmix(h1: i32, length: i32) -> i32 {
    let mut h = (h1 ^ length) as u32;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85ebca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2ae35);
    h ^= h >> 16;
    h as i32
}

fn hash_int(v: i32, seed: i32) -> i32 {
    fmix(mix_h1(seed, mix_k1(v)), 4)
}

fn hash_long(v: i64, seed: i32) -> i32 {
    let h1 = mix_h1(seed, mix_k1(v as i32));
    fmix(mix_h1(h1, mix_k1((v as u64 >> 32) as i32)), 8)
}

/// Spark's `hashUnsafeBytes`: whole little-endian ints, then each remaining byte on its own.
pub(crate) fn hash_bytes(bytes: &[u8], seed: i32) -> i32 {
    let aligned = bytes.len() - bytes.len() % 4;
    let mut h1 = seed;
    for word in bytes[..aligned].chunks_exact(4) {
        h1 = mix_h1(h1, mix_k1(i32::from_le_bytes([word[0], word[1], word[2], word[3]])));
    }
    for b in &bytes[aligned..] {
        h1 = mix_h1(h1, mix_k1(i32::from(*b as i8)));
    }
    fmix(h1, bytes.len() as i32)
}

/// Whether Spark's hash of this type is computed here.
fn hashable(t: &DataType) -> bool {
    match t {
        DataType::Null
        | DataType::Boolean
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Date32
        | DataType::Decimal128(..)
        | DataType::Timestamp(TimeUnit::Microsecond, _) => true,
        t if t.is_string() || crate::functions::binary::is_bytes(t) => true,
        DataType::List(f) | DataType::LargeList(f) => hashable(f.data_type()),
        DataType::Struct(fields) => fields.iter().all(|f| hashable(f.data_type())),
        // Spark refuses maps (`HASH_MAP_TYPE`).
        _ => false,
    }
}

/// The hash of value `i` of `a` with `seed`; `seed` itself for a NULL.
fn hash_at(a: &dyn Array, i: usize, seed: i32) -> i32 {
    if a.is_null(i) {
        return seed;
    }
    match a.data_type() {
        DataType::Boolean => hash_int(i32::from(a.as_boolean().value(i)), seed),
        DataType::Int8 => hash_int(i32::from(a.as_primitive::<Int8Type>().value(i)), seed),
        DataType::Int16 => hash_int(i32::from(a.as_primitive::<Int16Type>().value(i)), seed),
        DataType::Int32 => hash_int(a.as_primitive::<Int32Type>().value(i), seed),
        DataType::Date32 => hash_int(a.as_primitive::<Date32Type>().value(i), seed),
        DataType::Int64 => hash_long(a.as_primitive::<Int64Type>().value(i), seed),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            hash_long(a.as_primitive::<TimestampMicrosecondType>().value(i), seed)
        }
        DataType::Float32 => {
            let f = a.as_primitive::<Float32Type>().value(i);
            let bits = if f == 0.0 {
                0
            } else if f.is_nan() {
                0x7fc00000
            } else {
                f.to_bits() as i32
            };
            hash_int(bits, seed)
        }
        DataType::Float64 => {
            let d = a.as_primitive::<Float64Type>().value(i);
            let bits = if d == 0.0 {
                0
            } else if d.is_nan() {
                0x7ff8000000000000
            } else {
                d.to_bits() as i64
            };
            hash_long(bits, seed)
        }
        DataType::Decimal128(precision, _) => {
            let v = a.as_primitive::<Decimal128Type>().value(i);
            if *precision <= 18 {
                hash_long(v as i64, seed)
            } else {
                hash_bytes(&big_integer_bytes(v), seed)
            }
        }
        DataType::Utf8 => hash_bytes(a.as_string::<i32>().value(i).as_bytes(), seed),
        DataType::LargeUtf8 => hash_bytes(a.as_string::<i64>().value(i).as_bytes(), seed),
        DataType::Utf8View => hash_bytes(a.as_string_view().value(i).as_bytes(), seed),
        DataType::Binary => hash_bytes(a.as_binary::<i32>().value(i), seed),
        DataType::LargeBinary => hash_bytes(a.as_binary::<i64>().value(i), seed),
        DataType::BinaryView => hash_bytes(a.as_binary_view().value(i), seed),
        DataType::FixedSizeBinary(_) => hash_bytes(a.as_fixed_size_binary().value(i), seed),
        DataType::List(_) => {
            let values = a.as_list::<i32>().value(i);
            (0..values.len()).fold(seed, |h, j| hash_at(&values, j, h))
        }
        DataType::LargeList(_) => {
            let values = a.as_list::<i64>().value(i);
            (0..values.len()).fold(seed, |h, j| hash_at(&values, j, h))
        }
        DataType::Struct(_) => a.as_struct().columns().iter().fold(seed, |h, c| hash_at(c.as_ref(), i, h)),
        // `hashable` admits only the types above.
        _ => seed,
    }
}

/// Java's `BigInteger.toByteArray` of an unscaled value: the shortest big-endian two's
/// complement.
fn big_integer_bytes(v: i128) -> Vec<u8> {
    let bytes = v.to_be_bytes();
    let sign = if v < 0 { 0xFF } else { 0 };
    let mut start = 0;
    // Drop a leading byte while the next one still carries the sign.
    while start < 15 && bytes[start] == sign && (bytes[start + 1] & 0x80) == (sign & 0x80) {
        start += 1;
    }
    bytes[start..].to_vec()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Hash {
    signature: Signature,
}

impl ScalarUDFImpl for Hash {
    fn name(&self) -> &str {
        "hash"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if let Some(t) = args.iter().find(|t| !hashable(t)) {
            return plan_err!("hash of {} runs on the Spark backend", crate::types::spark_type_name(t));
        }
        Ok(DataType::Int32)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let columns: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let hashes: Int32Array =
            (0..n).map(|i| Some(columns.iter().fold(SEED, |h, c| hash_at(c.as_ref(), i, h)))).collect();
        crate::columnar::columnar(Arc::new(hashes), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_as_sparks_murmur3() {
        // Spark 4.1.4: hash(1) = -559580957, hash('Spark') = 228093765, hash(1L) = -1712319331.
        assert_eq!(hash_int(1, SEED), -559580957);
        assert_eq!(hash_bytes(b"Spark", SEED), 228093765);
        assert_eq!(hash_long(1, SEED), -1712319331);
        assert_eq!(big_integer_bytes(127), vec![0x7F]);
        assert_eq!(big_integer_bytes(128), vec![0x00, 0x80]);
        assert_eq!(big_integer_bytes(-1), vec![0xFF]);
        assert_eq!(big_integer_bytes(-129), vec![0xFF, 0x7F]);
    }
}
