//! `sum` and `avg` of floating point with Spark's one NaN. Adding `∞` and `−∞` makes a NaN
//! whose sign bit is set (x86's default NaN), and Arrow's comparisons order floating point
//! totally, so that NaN was less than every number: `HAVING sum(x) < -5` kept a group Spark
//! drops (Spark's NaN is one value, greater than every number). This wraps DataFusion's own
//! aggregate — its accumulators, partial states, group accumulators and sliding window frames
//! unchanged — and gives each answer's NaN as the positive one (`float_keys::one_nan`).

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray};
use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF, Signature,
};

use crate::functions::window::float_keys::one_nan;

/// `inner` (DataFusion's `sum` or `avg`) answering Spark's one NaN.
pub(crate) fn one_nan_total(inner: Arc<AggregateUDF>) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::from(OneNanTotal { inner }))
}

/// Whether `f` is such a wrapper already.
pub(crate) fn is_one_nan_total(f: &AggregateUDF) -> bool {
    f.inner().downcast_ref::<OneNanTotal>().is_some()
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct OneNanTotal {
    inner: Arc<AggregateUDF>,
}

impl AggregateUDFImpl for OneNanTotal {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(args)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn is_nullable(&self) -> bool {
        self.inner.is_nullable()
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(OneNan(self.inner.accumulator(args)?)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.inner().state_fields(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(OneNan(self.inner.inner().create_sliding_accumulator(args)?)))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.inner().groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(OneNanGroups(self.inner.inner().create_groups_accumulator(args)?)))
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.inner.inner().default_value(data_type)
    }

    // A sum or an average is the same whichever way its rows come.
    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// DataFusion's accumulator, its answer's NaN the positive one.
#[derive(Debug)]
struct OneNan(Box<dyn Accumulator>);

impl Accumulator for OneNan {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.update_batch(values)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.0.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.0.supports_retract_batch()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.0.merge_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.0.state()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(match self.0.evaluate()? {
            ScalarValue::Float64(Some(v)) if v.is_nan() => ScalarValue::Float64(Some(f64::NAN)),
            ScalarValue::Float32(Some(v)) if v.is_nan() => ScalarValue::Float32(Some(f32::NAN)),
            other => other,
        })
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.0.size()
    }
}

/// DataFusion's group accumulator, its answers' NaNs the positive one.
struct OneNanGroups(Box<dyn GroupsAccumulator>);

impl GroupsAccumulator for OneNanGroups {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.0.update_batch(values, groups, filter, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.0.merge_batch(states, groups, total)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        Ok(one_nan(self.0.evaluate(emit_to)?))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.0.state(emit_to)
    }

    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        self.0.convert_to_state(values, filter)
    }

    fn size(&self) -> usize {
        self.0.size()
    }
}
