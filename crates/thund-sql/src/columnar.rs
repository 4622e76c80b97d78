//! Helpers every function's kernel uses, below every category: an argument's values as text,
//! a parent's NULLs over a child, and a result that is one value when every argument was one.

use arrow::array::{Array, ArrayRef, AsArray, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::ColumnarValue;

/// `a` with the rows `nulls` marks NULL made NULL too (a parent's NULLs over its children).
pub(crate) fn with_nulls(a: ArrayRef, nulls: Option<&arrow::buffer::NullBuffer>) -> Result<ArrayRef> {
    let Some(nulls) = nulls else { return Ok(a) };
    let data = a.to_data();
    let merged = arrow::buffer::NullBuffer::union(data.nulls(), Some(nulls));
    Ok(arrow::array::make_array(data.into_builder().nulls(merged).build()?))
}

/// An argument's values as UTF-8 strings.
pub(crate) fn utf8(a: &ArrayRef) -> Result<StringArray> {
    let c = arrow::compute::cast(a, &DataType::Utf8)?;
    Ok(c.as_any().downcast_ref::<StringArray>().cloned().unwrap_or_else(|| StringArray::new_null(a.len())))
}

/// A function's result: one value when every argument was one. (Asked for no rows — DataFusion
/// evaluates an `IN` list's constants so — the answer is the empty column it is.)
pub(crate) fn columnar(result: ArrayRef, scalar: bool) -> Result<ColumnarValue> {
    Ok(if scalar && !result.is_empty() {
        ColumnarValue::Scalar(datafusion::common::ScalarValue::try_from_array(&result, 0)?)
    } else {
        ColumnarValue::Array(result)
    })
}

/// An argument's values as DOUBLEs.
pub(crate) fn doubles(a: &ArrayRef) -> Result<arrow::array::Float64Array> {
    Ok(arrow::compute::cast(a, &DataType::Float64)?.as_primitive::<arrow::datatypes::Float64Type>().clone())
}

/// Refuses an argument of `name` that is not a number (NULL passes).
pub(crate) fn numeric_argument(name: &str, t: &DataType) -> Result<()> {
    if t.is_numeric() || t == &DataType::Null {
        return Ok(());
    }
    datafusion::common::plan_err!(
        "{name} of {} runs on the Spark backend (only numbers are taken here)",
        crate::types::spark_type_name(t)
    )
}
