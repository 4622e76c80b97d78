//! `sum` and `avg` of floating point with Spark's one NaN. Adding `∞` and `−∞` makes a NaN
//! whose sign bit is set (x86's default NaN), and Arrow's comparisons order floating point
//! totally, so that NaN was less than every number: `HAVING sum(x) < -5` kept a group Spark
//! drops (Spark's NaN is one value, greater than every number). This wraps DataFusion's own
//! aggregate (`answered`: its accumulators, partial states, group accumulators and sliding
//! window frames unchanged) and gives each answer's NaN as the positive one (`float_keys::one_nan`).

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, GroupsAccumulator, ReversedUDAF, Signature,
};

use super::answered::{answered, answered_groups, Answer};
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
        Ok(answered(self.inner.accumulator(args)?, OneNan))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.inner.inner().state_fields(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(answered(self.inner.inner().create_sliding_accumulator(args)?, OneNan))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.inner.inner().groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(answered_groups(self.inner.inner().create_groups_accumulator(args)?, OneNan))
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

/// Each answer's NaN the positive one.
#[derive(Debug)]
struct OneNan;

impl Answer for OneNan {
    fn array(&self, answers: &ArrayRef) -> Result<ArrayRef> {
        Ok(one_nan(Arc::clone(answers)))
    }

    fn scalar(&self, answer: ScalarValue) -> Result<ScalarValue> {
        Ok(match answer {
            ScalarValue::Float64(Some(v)) if v.is_nan() => ScalarValue::Float64(Some(f64::NAN)),
            ScalarValue::Float32(Some(v)) if v.is_nan() => ScalarValue::Float32(Some(f32::NAN)),
            other => other,
        })
    }
}
