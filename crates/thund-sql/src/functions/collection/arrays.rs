//! Spark's `array_insert(array, pos, item)` and `sequence(start, stop[, step])`, which DataFusion
//! lacks.
//!
//! - `array_insert` counts `pos` from 1, and from the end when negative (-1 appends); a
//!   position past either end pads with NULLs; 0 fails. The item takes the array's element type
//!   (a NULL, or an item of that type; other pairs are left to Spark's widening).
//! - `sequence` of integers steps by 1 or -1 (towards `stop`) or by `step`; of dates by a day or
//!   a `step` interval of months and days, each element computed from `start` (so month ends
//!   are kept as `add_months` keeps them). A step that leads away from `stop`, or 0 between two
//!   different ends, fails, as on Spark.

use std::sync::Arc;

use arrow::array::{make_array, Array, ArrayRef, AsArray, GenericListArray, Int64Array, MutableArrayData};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, IntervalMonthDayNanoType};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(ArrayInsert { signature: Signature::any(3, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(Sequence { signature: Signature::variadic_any(Volatility::Immutable) }));
}

/// Spark's longest array.
const MAX_ELEMENTS: i64 = i32::MAX as i64 - 15;

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArrayInsert {
    signature: Signature,
}

impl ScalarUDFImpl for ArrayInsert {
    fn name(&self) -> &str {
        "array_insert"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let DataType::List(element) = &args[0] else {
            return plan_err!("array_insert of {} runs on the Spark backend", crate::types::spark_type_name(&args[0]));
        };
        // An integer item no wider than the elements takes their type, as Spark widens it.
        let e = element.data_type();
        let narrower_integer = e.is_integer()
            && args[2].is_integer()
            && &crate::functions::math::arithmetic::wider_integer(e, &args[2]) == e;
        let item_fits = args[2] == DataType::Null || args[2].equals_datatype(e) || narrower_integer;
        if !item_fits || !(args[1].is_integer() || args[1] == DataType::Null) {
            return plan_err!(
                "array_insert of {} at {} of {} runs on the Spark backend (here the item has the array's element type)",
                crate::types::spark_type_name(&args[2]),
                crate::types::spark_type_name(&args[1]),
                crate::types::spark_type_name(&args[0])
            );
        }
        Ok(DataType::List(Arc::new(Field::new_list_field(element.data_type().clone(), true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let lists = args.args[0].to_array(n)?;
        let lists = lists.as_list::<i32>();
        let positions = arrow::compute::cast(&args.args[1].to_array(n)?, &DataType::Int64)?;
        let positions = positions.as_primitive::<arrow::datatypes::Int64Type>();
        let element = match args.return_field.data_type() {
            DataType::List(f) => f.data_type().clone(),
            other => return exec_err!("internal error: {} answers an array, not {other}", self.name()),
        };
        let items = arrow::compute::cast(&args.args[2].to_array(n)?, &element)?;
        let values = lists.values();
        let (values_data, items_data) = (values.to_data(), items.to_data());
        let mut out = MutableArrayData::new(vec![&values_data, &items_data], true, values.len() + n);
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(n);
        for row in 0..n {
            if lists.is_null(row) || positions.is_null(row) {
                offsets.push(offsets.last().copied().unwrap_or_default());
                valid.push(false);
                continue;
            }
            let (start, end) = (lists.value_offsets()[row] as usize, lists.value_offsets()[row + 1] as usize);
            let len = (end - start) as i64;
            let pos = positions.value(row);
            // Where the item goes among the elements (0-based), and NULLs padded before the
            // elements (a negative position past the start) or before the item (past the end).
            let (at, pad_front, pad_item) = match pos {
                0 => {
                    return exec_err!(
                        "[INVALID_INDEX_OF_ZERO] array_insert: the index 0 is invalid; arrays count from 1"
                    )
                }
                p if p > 0 && p - 1 <= len => (p - 1, 0, 0),
                p if p > 0 => (len, 0, p - 1 - len),
                p if len + p + 1 >= 0 => (len + p + 1, 0, 0),
                p => (0, -(len + p + 1), 0),
            };
            let total = len + 1 + pad_front + pad_item;
            if total > MAX_ELEMENTS {
                return exec_err!("array_insert: an array of {total} elements is longer than Spark's longest");
            }
            let at = start + at as usize;
            if pad_front > 0 {
                // The item first, then the NULLs up to the first element.
                out.try_extend(1, row, row + 1)?;
                out.try_extend_nulls(pad_front as usize)?;
                out.try_extend(0, start, end)?;
            } else {
                out.try_extend(0, start, at)?;
                out.try_extend_nulls(pad_item as usize)?;
                out.try_extend(1, row, row + 1)?;
                out.try_extend(0, at, end)?;
            }
            offsets.push(offsets.last().copied().unwrap_or_default() + total as i32);
            valid.push(true);
        }
        let list = GenericListArray::<i32>::new(
            Arc::new(Field::new_list_field(element, true)),
            OffsetBuffer::new(offsets.into()),
            make_array(out.freeze()),
            Some(valid.into()),
        );
        crate::columnar::columnar(Arc::new(list), scalar)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Sequence {
    signature: Signature,
}

impl ScalarUDFImpl for Sequence {
    fn name(&self) -> &str {
        "sequence"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let int = |t: &DataType| t.is_integer() || t == &DataType::Null;
        let element = match args {
            [a, b] | [a, b, _] if int(a) && int(b) && args.get(2).is_none_or(int) => {
                crate::functions::math::arithmetic::wider_integer(a, b)
            }
            [DataType::Date32, DataType::Date32] => DataType::Date32,
            [DataType::Date32, DataType::Date32, DataType::Interval(_) | DataType::Duration(_)] => DataType::Date32,
            _ => {
                let types: Vec<String> = args.iter().map(crate::types::spark_type_name).collect();
                return plan_err!(
                    "sequence of ({}) runs on the Spark backend (here: integers, or dates by days or months)",
                    types.join(", ")
                );
            }
        };
        Ok(DataType::List(Arc::new(Field::new_list_field(element, true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let arrays = args.args.iter().map(|a| a.to_array(n)).collect::<Result<Vec<ArrayRef>>>()?;
        let element = match args.return_field.data_type() {
            DataType::List(f) => f.data_type().clone(),
            other => return exec_err!("internal error: {} answers an array, not {other}", self.name()),
        };
        let list: ArrayRef = if element == DataType::Date32 {
            Arc::new(date_sequences(&arrays)?)
        } else {
            let ints = |a: &ArrayRef| -> Result<Int64Array> {
                Ok(arrow::compute::cast(a, &DataType::Int64)?.as_primitive().clone())
            };
            let (start, stop) = (ints(&arrays[0])?, ints(&arrays[1])?);
            let step = arrays.get(2).map(ints).transpose()?;
            let mut rows: Vec<Option<Vec<i64>>> = Vec::with_capacity(n);
            for row in 0..n {
                if start.is_null(row) || stop.is_null(row) || step.as_ref().is_some_and(|s| s.is_null(row)) {
                    rows.push(None);
                    continue;
                }
                let (a, b) = (start.value(row), stop.value(row));
                let s = step.as_ref().map_or(if a <= b { 1 } else { -1 }, |s| s.value(row));
                rows.push(Some(integers(a, b, s)?));
            }
            let wide = GenericListArray::<i32>::from_iter_primitive::<arrow::datatypes::Int64Type, _, _>(
                rows.into_iter().map(|r| r.map(|v| v.into_iter().map(Some))),
            );
            arrow::compute::cast(&wide, args.return_field.data_type())?
        };
        crate::columnar::columnar(list, scalar)
    }
}

fn boundaries_error<T>(
    start: impl std::fmt::Display,
    stop: impl std::fmt::Display,
    step: impl std::fmt::Display,
) -> Result<T> {
    exec_err!("[ILLEGAL_SEQUENCE_BOUNDARIES] Illegal sequence boundaries: {start} to {stop} by {step}")
}

/// `start` to `stop` by `step`, both ends included where the steps meet them.
fn integers(start: i64, stop: i64, step: i64) -> Result<Vec<i64>> {
    if (step == 0 && start != stop) || (step > 0 && start > stop) || (step < 0 && start < stop) {
        return boundaries_error(start, stop, step);
    }
    if step == 0 {
        return Ok(vec![start]);
    }
    let count = (i128::from(stop) - i128::from(start)) / i128::from(step) + 1;
    if count > i128::from(MAX_ELEMENTS) {
        return exec_err!("sequence: {count} elements are more than Spark's longest array");
    }
    Ok((0..count as i64).map(|i| start + i * step).collect())
}

/// A step of a date sequence as months, days and nanoseconds: a year-month interval's months,
/// a day-time interval's whole days and the rest.
fn month_day_nano(a: &ArrayRef) -> Result<arrow::array::PrimitiveArray<IntervalMonthDayNanoType>> {
    use arrow::datatypes::IntervalMonthDayNano;
    Ok(match a.data_type() {
        DataType::Duration(_) => {
            let micros = crate::functions::interval::arithmetic::interval_values(a)?;
            micros
                .into_iter()
                .map(|m| {
                    m.map(|m| {
                        let day = 86_400_000_000i64;
                        IntervalMonthDayNano::new(0, (m / day) as i32, (m % day) * 1000)
                    })
                })
                .collect()
        }
        _ => {
            let cast = arrow::compute::cast(a, &DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano))?;
            cast.as_primitive::<IntervalMonthDayNanoType>().clone()
        }
    })
}

/// Sequences of dates, by a day (towards `stop`) or by a step of months and days.
fn date_sequences(arrays: &[ArrayRef]) -> Result<GenericListArray<i32>> {
    let (start, stop) = (
        arrays[0].as_primitive::<arrow::datatypes::Date32Type>(),
        arrays[1].as_primitive::<arrow::datatypes::Date32Type>(),
    );
    let steps = arrays.get(2).map(month_day_nano).transpose()?;
    let mut rows: Vec<Option<Vec<i32>>> = Vec::with_capacity(start.len());
    for row in 0..start.len() {
        if start.is_null(row) || stop.is_null(row) || steps.as_ref().is_some_and(|s| s.is_null(row)) {
            rows.push(None);
            continue;
        }
        let (a, b) = (start.value(row), stop.value(row));
        let (months, days, nanos) = match &steps {
            Some(s) => {
                let v = s.value(row);
                (v.months, v.days, v.nanoseconds)
            }
            None => (0, if a <= b { 1 } else { -1 }, 0),
        };
        if nanos != 0 {
            return exec_err!("sequence of dates by a step finer than a day runs on the Spark backend");
        }
        rows.push(Some(dates(a, b, months, days)?));
    }
    let list = GenericListArray::<i32>::from_iter_primitive::<arrow::datatypes::Date32Type, _, _>(
        rows.into_iter().map(|r| r.map(|v| v.into_iter().map(Some))),
    );
    Ok(list)
}

/// The dates from `start` by `months` and `days` while not past `stop`.
fn dates(start: i32, stop: i32, months: i32, days: i32) -> Result<Vec<i32>> {
    let Some(epoch) = chrono::NaiveDate::from_ymd_opt(1970, 1, 1) else {
        return exec_err!("internal error: no 1970-01-01");
    };
    let day = |d: i32| epoch + chrono::TimeDelta::days(i64::from(d));
    let forward = months > 0 || (months == 0 && days > 0);
    let backward = months < 0 || (months == 0 && days < 0);
    if (!forward && !backward && start != stop) || (forward && start > stop) || (backward && start < stop) {
        return boundaries_error(day(start), day(stop), format!("{months} months {days} days"));
    }
    if !forward && !backward {
        return Ok(vec![start]);
    }
    let mut out = Vec::new();
    for i in 0i64.. {
        let by_months = chrono::Months::new((i * i64::from(months.unsigned_abs())) as u32);
        let moved = if months >= 0 {
            day(start).checked_add_months(by_months)
        } else {
            day(start).checked_sub_months(by_months)
        };
        let Some(moved) = moved.and_then(|d| d.checked_add_signed(chrono::TimeDelta::days(i * i64::from(days)))) else {
            break;
        };
        let value = (moved - epoch).num_days() as i32;
        if (forward && value > stop) || (backward && value < stop) {
            break;
        }
        out.push(value);
        if out.len() as i64 > MAX_ELEMENTS {
            return exec_err!("sequence: more elements than Spark's longest array");
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_sequences_step_towards_the_end() {
        assert_eq!(integers(1, 5, 1).unwrap(), vec![1, 2, 3, 4, 5]);
        assert_eq!(integers(5, 1, -1).unwrap(), vec![5, 4, 3, 2, 1]);
        assert_eq!(integers(1, 6, 2).unwrap(), vec![1, 3, 5]);
        assert!(integers(1, 5, -1).is_err());
        assert!(integers(1, 5, 0).is_err());
        assert_eq!(integers(3, 3, 0).unwrap(), vec![3]);
    }

    #[test]
    fn date_sequences_keep_month_ends_from_the_start() {
        let d = |y, m, day| {
            (chrono::NaiveDate::from_ymd_opt(y, m, day).unwrap() - chrono::NaiveDate::from_ymd_opt(1970, 1, 1).unwrap())
                .num_days() as i32
        };
        assert_eq!(
            dates(d(2018, 1, 31), d(2018, 4, 30), 1, 0).unwrap(),
            vec![d(2018, 1, 31), d(2018, 2, 28), d(2018, 3, 31), d(2018, 4, 30)]
        );
        assert_eq!(
            dates(d(2018, 1, 3), d(2018, 1, 1), 0, -1).unwrap(),
            vec![d(2018, 1, 3), d(2018, 1, 2), d(2018, 1, 1)]
        );
    }
}

/// Spark's `arrays_zip(a1, a2, …)`: an array of structs, the `i`th holding each array's `i`th
/// element (NULL past an array's end), as long as the longest; NULL if an array is NULL. A field
/// is named after its argument when that is a column, else by its position from 0 (`fidelity`
/// gives the names: only the plan knows which arguments are columns).
pub(crate) fn arrays_zip(names: Vec<String>) -> Arc<ScalarUDF> {
    Arc::new(ScalarUDF::from(ArraysZip { names, signature: Signature::variadic_any(Volatility::Immutable) }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ArraysZip {
    names: Vec<String>,
    signature: Signature,
}

impl ArraysZip {
    fn element_fields(&self, args: &[DataType]) -> Result<arrow::datatypes::Fields> {
        args.iter()
            .zip(&self.names)
            .map(|(t, name)| match t {
                DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
                    Ok(Field::new(name, f.data_type().clone(), true))
                }
                DataType::Null => Ok(Field::new(name, DataType::Null, true)),
                other => plan_err!("arrays_zip takes arrays, not {}", crate::types::spark_type_name(other)),
            })
            .collect()
    }
}

impl ScalarUDFImpl for ArraysZip {
    // Not `arrays_zip`, DataFusion's, which the plan rewrite replaces by this one.
    fn name(&self) -> &str {
        "spark_arrays_zip"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let fields = self.element_fields(args)?;
        Ok(DataType::List(Arc::new(Field::new_list_field(DataType::Struct(fields), true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let DataType::List(item) = args.return_field.data_type() else { return exec_err!("arrays_zip: not a list") };
        let DataType::Struct(fields) = item.data_type() else { return exec_err!("arrays_zip: not a struct") };
        let lists: Vec<Option<GenericListArray<i32>>> = args
            .args
            .iter()
            .zip(fields.iter())
            .map(|(a, f)| {
                let a = a.to_array(n)?;
                if a.data_type() == &DataType::Null {
                    return Ok(None);
                }
                let as_list = DataType::List(Arc::new(Field::new_list_field(f.data_type().clone(), true)));
                Ok(Some(arrow::compute::cast(&a, &as_list)?.as_list::<i32>().clone()))
            })
            .collect::<Result<_>>()?;
        let mut indices: Vec<Vec<Option<u32>>> = vec![Vec::new(); lists.len()];
        let mut offsets = vec![0i32];
        let mut valid = Vec::with_capacity(n);
        for row in 0..n {
            let null = lists.iter().any(|l| l.as_ref().is_none_or(|l| l.is_null(row)));
            if !null {
                let spans: Vec<(usize, usize)> = lists
                    .iter()
                    .flatten()
                    .map(|l| (l.value_offsets()[row] as usize, l.value_length(row) as usize))
                    .collect();
                let longest = spans.iter().map(|s| s.1).max().unwrap_or(0);
                for (k, (start, len)) in spans.iter().enumerate() {
                    indices[k].extend((0..longest).map(|j| (j < *len).then(|| (start + j) as u32)));
                }
                offsets.push(offsets.last().copied().unwrap_or(0) + longest as i32);
            } else {
                offsets.push(offsets.last().copied().unwrap_or(0));
            }
            valid.push(!null);
        }
        let columns = lists
            .iter()
            .zip(&indices)
            .zip(fields.iter())
            .map(|((l, idx), f)| match l {
                Some(l) => Ok(arrow::compute::take(l.values(), &arrow::array::UInt32Array::from(idx.clone()), None)?),
                None => Ok(arrow::array::new_null_array(f.data_type(), idx.len())),
            })
            .collect::<Result<Vec<ArrayRef>>>()?;
        let len = offsets.last().copied().unwrap_or(0) as usize;
        let structs = if fields.is_empty() {
            arrow::array::StructArray::new_empty_fields(len, None)
        } else {
            arrow::array::StructArray::try_new(fields.clone(), columns, None)?
        };
        let nulls = valid.iter().any(|v| !v).then(|| arrow::buffer::NullBuffer::from(valid));
        let out = GenericListArray::<i32>::try_new(
            Arc::clone(item),
            OffsetBuffer::new(offsets.into()),
            Arc::new(structs),
            nulls,
        )?;
        crate::columnar::columnar(Arc::new(out), scalar)
    }
}
