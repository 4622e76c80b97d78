//! Spark's `sum` of a DECIMAL(p,s) of more than 28 digits: a DECIMAL(min(p+10, 38), s) whose
//! total, when its digits do not fit, is NULL — or, in ANSI mode, fails the query
//! (`NUMERIC_VALUE_OUT_OF_RANGE`). DataFusion's adds in 128 bits and wraps around.
//!
//! The plan rewrite (`fidelity`) casts the argument to a DECIMAL of 256 bits and puts this
//! function in place of DataFusion's; it adds with DataFusion's own `sum` (its accumulators,
//! partial states and window frames, all in 256 bits) and fits each answer to Spark's type as
//! the aggregate answers it. The check belongs in the aggregate, not in a cast above it: a filter
//! on the aggregate's output (a HAVING) is pushed below such a cast, and a column nobody reads is
//! pruned with it, so an overflowing group would go unseen where Spark's aggregate fails.
//!
//! Spark checks each addition, so a total that leaves the range on the way and comes back
//! (`MAX + 1 - 2`) fails there in some orders of its rows; here only a total that does not fit
//! fails, the answer every order of Spark's gives.

use std::sync::Arc;

use arrow::array::ArrayRef;
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, Result};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, GroupsAccumulator, ReversedUDAF, Signature, Volatility,
};

use super::answered::{answered, answered_groups, Answer};

/// The `sum` of a DECIMAL of 256 bits answered in Spark's DECIMAL type; `ansi` for the mode.
pub(crate) fn decimal_sum(ansi: bool) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::from(DecimalSum { ansi, signature: Signature::any(1, Volatility::Immutable) }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalSum {
    ansi: bool,
    signature: Signature,
}

/// Spark's type of the sum of a DECIMAL(p,s), and the 256-bit one it is added up in.
fn types(arg: &DataType) -> Result<(DataType, DataType)> {
    match arg {
        DataType::Decimal256(p, s) => {
            Ok((DataType::Decimal128((p + 10).min(38), *s), DataType::Decimal256((p + 10).min(76), *s)))
        }
        other => exec_err!("sum of DECIMALs called on {other}"),
    }
}

impl DecimalSum {
    /// The arguments of DataFusion's `sum`: its own (256-bit) result type.
    fn wide_field(&self, field: &FieldRef, arg: &DataType) -> Result<FieldRef> {
        Ok(Arc::new(Field::new(field.name(), types(arg)?.1, true)))
    }

    fn fitted(&self, args: &AccumulatorArgs) -> Result<Fit> {
        Ok(Fit { to: types(args.expr_fields[0].data_type())?.0, ansi: self.ansi })
    }
}

impl AggregateUDFImpl for DecimalSum {
    fn name(&self) -> &str {
        "sum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(types(&args[0])?.0)
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fit = self.fitted(&args)?;
        let return_field = self.wide_field(&args.return_field, args.expr_fields[0].data_type())?;
        Ok(answered(sum_udaf().accumulator(AccumulatorArgs { return_field, ..args })?, fit))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let return_field = self.wide_field(&args.return_field, args.input_fields[0].data_type())?;
        sum_udaf().inner().state_fields(StateFieldsArgs { return_field, ..args })
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fit = self.fitted(&args)?;
        let return_field = self.wide_field(&args.return_field, args.expr_fields[0].data_type())?;
        let sum = sum_udaf().inner().create_sliding_accumulator(AccumulatorArgs { return_field, ..args })?;
        Ok(answered(sum, fit))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let fit = self.fitted(&args)?;
        let return_field = self.wide_field(&args.return_field, args.expr_fields[0].data_type())?;
        let sums = sum_udaf().inner().create_groups_accumulator(AccumulatorArgs { return_field, ..args })?;
        Ok(answered_groups(sums, fit))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// How a 256-bit total becomes Spark's answer.
#[derive(Debug)]
struct Fit {
    to: DataType,
    ansi: bool,
}

impl Answer for Fit {
    fn array(&self, totals: &ArrayRef) -> Result<ArrayRef> {
        crate::functions::cast::fitted_decimals(totals, &self.to, self.ansi)
    }
}
