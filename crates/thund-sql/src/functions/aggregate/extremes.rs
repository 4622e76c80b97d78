//! Spark's `min` and `max` of floating point. Spark orders a NaN after every number and
//! `-0.0` equal to `0.0`, and keeps the value it met first among equals (`Least` / `Greatest`
//! replace the buffer only with a strictly smaller or greater value). DataFusion's grouped
//! `min` / `max` compare with IEEE's partial order and take any value a NaN is compared with
//! (so `max` of a NaN then `-2.5` is `-2.5`: the answer depends on the rows' order).
//!
//! The functions are named `min` and `max`, so that a query's column names stay what they
//! were; the plan rewrite (`fidelity`) puts them in place of DataFusion's for a FLOAT or DOUBLE
//! argument, in an aggregate or a window, and never registers them. Values are compared as
//! DOUBLE (every FLOAT is one exactly) and answered in the argument's type.

use std::cmp::Ordering;
use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Float64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::{format_state_name, AggregateOrderSensitivity};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF, Signature, Volatility,
};

/// Spark's `max` (`greatest`) or `min` of FLOAT or DOUBLE values.
pub(crate) fn extreme(greatest: bool) -> Arc<AggregateUDF> {
    let signature = Signature::uniform(1, vec![DataType::Float32, DataType::Float64], Volatility::Immutable);
    Arc::new(AggregateUDF::from(Extreme { signature, greatest }))
}

/// Whether `udaf` is one of these (and need not be put in place again).
pub(crate) fn is_extreme(udaf: &AggregateUDF) -> bool {
    udaf.inner().downcast_ref::<Extreme>().is_some()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Extreme {
    signature: Signature,
    greatest: bool,
}

/// Spark's order of DOUBLE values (`SQLOrderingUtil.compareDoubles`).
fn spark_order(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// `current` replaced by `new` only where `new` is strictly beyond it.
fn fold(current: &mut Option<f64>, new: f64, greatest: bool) {
    let beyond = if greatest { Ordering::Greater } else { Ordering::Less };
    match current {
        Some(c) if spark_order(new, *c) != beyond => {}
        _ => *current = Some(new),
    }
}

fn doubles(values: &ArrayRef) -> Result<Float64Array> {
    Ok(arrow::compute::cast(values, &DataType::Float64)?.as_primitive::<Float64Type>().clone())
}

impl AggregateUDFImpl for Extreme {
    fn name(&self) -> &str {
        if self.greatest {
            "max"
        } else {
            "min"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Frame::new(self.greatest, args.return_field.data_type(), false)))
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Frame::new(self.greatest, args.return_field.data_type(), true)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let name = format_state_name(args.name, self.name());
        Ok(vec![Arc::new(Field::new(name, args.return_field.data_type().clone(), true))])
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(Groups { greatest: self.greatest, output: args.return_field.data_type().clone(), values: vec![] }))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// The answer of a query without groups, or of a window's frame. A sliding frame keeps its
/// values in the order they came: its rows leave it in the order they entered, and its answer
/// is taken again over those that remain, as Spark takes it whenever a sliding frame loses rows.
#[derive(Debug)]
struct Frame {
    greatest: bool,
    output: DataType,
    sliding: bool,
    values: VecDeque<Option<f64>>,
    answer: Option<f64>,
}

impl Frame {
    fn new(greatest: bool, output: &DataType, sliding: bool) -> Self {
        Frame { greatest, output: output.clone(), sliding, values: VecDeque::new(), answer: None }
    }

    fn scalar(&self) -> Result<ScalarValue> {
        ScalarValue::Float64(self.answer).cast_to(&self.output)
    }
}

impl Accumulator for Frame {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for v in doubles(&values[0])?.iter() {
            if self.sliding {
                self.values.push_back(v);
            }
            if let Some(v) = v {
                fold(&mut self.answer, v, self.greatest);
            }
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for _ in 0..values[0].len() {
            self.values.pop_front();
        }
        self.answer = None;
        for v in self.values.iter().flatten() {
            fold(&mut self.answer, *v, self.greatest);
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for v in doubles(&states[0])?.iter().flatten() {
            fold(&mut self.answer, v, self.greatest);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![self.scalar()?])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.scalar()
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.values.capacity() * size_of::<Option<f64>>()
    }
}

/// Each group's answer so far.
#[derive(Debug)]
struct Groups {
    greatest: bool,
    output: DataType,
    values: Vec<Option<f64>>,
}

impl Groups {
    fn fold_in(
        &mut self,
        values: &ArrayRef,
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.values.resize(total, None);
        let counted = |row: usize| filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        for (row, (v, &group)) in doubles(values)?.iter().zip(groups).enumerate() {
            if let (Some(v), true) = (v, counted(row)) {
                fold(&mut self.values[group], v, self.greatest);
            }
        }
        Ok(())
    }

    fn emit(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let values = emit_to.take_needed(&mut self.values);
        let nulls = NullBuffer::from(values.iter().map(Option::is_some).collect::<Vec<_>>());
        let doubles = Float64Array::new(values.into_iter().map(Option::unwrap_or_default).collect(), Some(nulls));
        Ok(arrow::compute::cast(&doubles, &self.output)?)
    }
}

impl GroupsAccumulator for Groups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.fold_in(&values[0], groups, filter, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.fold_in(&states[0], groups, None, total)
    }

    /// Each row as its own group's answer: its value, NULL where the filter leaves it out.
    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let Some(filter) = filter else { return Ok(vec![Arc::clone(&values[0])]) };
        let left_out = arrow::compute::not(&arrow::compute::prep_null_mask_filter(filter))?;
        Ok(vec![arrow::compute::nullif(&values[0], &left_out)?])
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.emit(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        Ok(vec![self.emit(emit_to)?])
    }

    fn size(&self) -> usize {
        self.values.capacity() * size_of::<Option<f64>>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn folded(values: &[f64], greatest: bool) -> Option<f64> {
        let mut answer = None;
        for v in values {
            fold(&mut answer, *v, greatest);
        }
        answer
    }

    #[test]
    fn a_nan_is_greatest_whatever_its_sign_and_the_first_of_equal_zeros_stays() {
        let nan = -f64::NAN;
        assert!(nan.is_sign_negative());
        assert_eq!(folded(&[nan, 1.0], false), Some(1.0));
        assert!(folded(&[1.0, nan], true).is_some_and(f64::is_nan));
        assert!(folded(&[nan, -2.5], true).is_some_and(f64::is_nan));
        assert_eq!(folded(&[f64::NEG_INFINITY], true), Some(f64::NEG_INFINITY));
        assert!(folded(&[-0.0, 0.0], true).is_some_and(|z| z.is_sign_negative()));
        assert!(folded(&[0.0, -0.0], false).is_some_and(|z| z.is_sign_positive()));
    }
}
