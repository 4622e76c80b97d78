//! An aggregate that never answers NULL (`count`), planned as one that may, inside a correlated
//! scalar subquery.
//!
//! Why: `(SELECT count(1) IS NULL FROM t2 WHERE t2.k = t1.k)` is `false` on Spark for a row of
//! `t1` no row of `t2` matches (the count of nothing is 0: "the count bug"). DataFusion
//! decorrelates such a subquery into a left join and puts back each aggregate's value on no
//! rows where the join found none — but its simplifier first folds `count(1) IS NULL` to
//! `false` (a count is never NULL), the aggregate disappears, and the unmatched rows get NULL.
//! Declared as possibly NULL, the count stays, and so does its value on no rows.

use std::hash::{Hash, Hasher};
use std::sync::Arc;

use arrow::datatypes::{DataType, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, GroupsAccumulator, ReversedUDAF, Signature,
};

/// `f` as an aggregate that may be NULL; `f` itself when it may already.
pub(crate) fn may_be_null(f: &Arc<AggregateUDF>) -> Arc<AggregateUDF> {
    if f.inner().is_nullable() {
        return Arc::clone(f);
    }
    Arc::new(AggregateUDF::new_from_impl(MayBeNull(Arc::clone(f))))
}

#[derive(Debug)]
struct MayBeNull(Arc<AggregateUDF>);

impl PartialEq for MayBeNull {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl Eq for MayBeNull {}

impl Hash for MayBeNull {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.name().hash(state);
    }
}

impl AggregateUDFImpl for MayBeNull {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn signature(&self) -> &Signature {
        self.0.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.0.return_type(args)
    }

    fn is_nullable(&self) -> bool {
        true
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.0.accumulator(args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        self.0.state_fields(args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        self.0.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        self.0.create_groups_accumulator(args)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.0.create_sliding_accumulator(args)
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.0.coerce_types(args)
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        self.0.default_value(data_type)
    }
}
