//! Spark's DataSketches functions: KLL quantile sketches (`kll`), HyperLogLog distinct counts
//! (`hll`) and Theta sketches with their set operations (`theta`).
//!
//! Spark builds these on Apache DataSketches for Java and stores a sketch as its serialized
//! bytes in a BINARY column. They are built here on Apache DataSketches for Rust, whose bytes are
//! the Java library's: a sketch written by a native run is read by Spark and the other way round,
//! so a table of sketches can be built on one engine and merged or queried on the other.
//!
//! What makes two engines' sketches the same is what they hash: Java hashes the little-endian
//! bytes of a value (an INT widened to a BIGINT first, a string's UTF-8 bytes, a DOUBLE after
//! -0.0 and NaN are made canonical), and the Rust library hashes exactly those bytes only when
//! a value is handed over through its `hash::value` wrappers (`raw_bytes`, `canonical_float`),
//! never through Rust's own `Hash` of a string or slice, which frames it.
//!
//! Each aggregate follows Spark's pipeline: a final answer is a fresh sketch merged with each
//! partial one, so a group aggregated in one step is merged into a fresh sketch before it is
//! written, as Spark's single partition is. Each was compared with Spark 4.1.4's bytes and
//! answers; a sketch's estimate past the exact range depends, on Spark too, on how rows were
//! split between partitions.

mod hll;
mod kll;
mod theta;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::AccumulatorArgs;
use datafusion::logical_expr::ColumnarValue;
use datafusion::physical_expr::expressions::Literal;
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    kll::register(ctx);
    hll::register(ctx);
    theta::register(ctx);
}

/// The integer parameter `i` of an aggregate (`k`, `lgConfigK`, …): `default` when it is not
/// given; a literal; `Err(value)` outside `range`, for the caller's Spark error.
fn int_parameter(
    args: &AccumulatorArgs,
    i: usize,
    function: &str,
    parameter: &str,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<std::result::Result<i64, i64>> {
    let Some(e) = args.exprs.get(i) else { return Ok(Ok(default)) };
    let value = match e.downcast_ref::<Literal>().map(|l| l.value()) {
        Some(v) if v.data_type().is_integer() => v.clone(),
        Some(ScalarValue::Null) => ScalarValue::Int64(None),
        _ => {
            return plan_err!(
                "Invalid call to `{function}`; the `{parameter}` value must be a constant value, but got a \
                 non-constant expression"
            )
        }
    };
    let value = match value.cast_to(&DataType::Int64)? {
        ScalarValue::Int64(Some(v)) => v,
        // Spark unboxes a NULL to 0.
        _ => 0,
    };
    Ok(if range.contains(&value) { Ok(value) } else { Err(value) })
}

/// The state of each aggregate here: its sketch's bytes.
fn state_fields(name: &str) -> Vec<arrow::datatypes::FieldRef> {
    let field = arrow::datatypes::Field::new(
        datafusion::logical_expr::utils::format_state_name(name, "sketch"),
        DataType::Binary,
        true,
    );
    vec![std::sync::Arc::new(field)]
}

/// Spark's error for bytes that are no sketch of the `family` (`KLL`, `HLL`, `THETA`).
fn invalid_buffer<T>(family: &str, function: &str, producer: &str) -> Result<T> {
    let shown = if family == "THETA" { "Theta" } else { family };
    exec_err!(
        "[{family}_INVALID_INPUT_SKETCH_BUFFER] Invalid call to `{function}`; only valid {shown} sketch buffers \
         are supported as inputs (such as those produced by the `{producer}` function)"
    )
}

/// A column of sketches as BINARY (from any of Arrow's binary layouts).
fn binaries(a: &ArrayRef) -> Result<BinaryArray> {
    match a.data_type() {
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null => {
            let cast = arrow::compute::cast(a, &DataType::Binary)?;
            match cast.as_binary_opt::<i32>() {
                Some(bytes) => Ok(bytes.clone()),
                None => exec_err!("internal error: a cast to BINARY gave {}", cast.data_type()),
            }
        }
        other => exec_err!("a sketch is a BINARY value, not {}", crate::types::spark_type_name(other)),
    }
}

/// Whether `t` holds sketches.
fn is_binary(t: &DataType) -> bool {
    matches!(t, DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::Null)
}

/// The `i`th argument of a scalar call as a constant: Spark takes these as literals only.
fn constant<'a>(args: &'a [ColumnarValue], i: usize, function: &str, what: &str) -> Result<&'a ScalarValue> {
    match args.get(i) {
        Some(ColumnarValue::Scalar(s)) => Ok(s),
        _ => exec_err!("the {what} of `{function}` must be a constant"),
    }
}

/// Every argument of a scalar call as an array of `rows`.
fn arrays(args: &[ColumnarValue], rows: usize) -> Result<Vec<ArrayRef>> {
    args.iter().map(|a| a.to_array(rows)).collect()
}

/// Whether every argument is a scalar (the answer is then one scalar too).
fn all_scalar(args: &[ColumnarValue]) -> bool {
    args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)))
}

/// `out` (one value per row) as the call's answer: a scalar when every argument was.
fn answer(out: ArrayRef, scalar: bool) -> Result<ColumnarValue> {
    Ok(if scalar { ColumnarValue::Scalar(ScalarValue::try_from_array(&out, 0)?) } else { ColumnarValue::Array(out) })
}

/// Whether row `i` of any argument is NULL (the functions here answer NULL then).
fn any_null(columns: &[ArrayRef], i: usize) -> bool {
    columns.iter().any(|c| c.is_null(i))
}
