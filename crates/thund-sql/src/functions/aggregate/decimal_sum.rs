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
//! Spark checks each addition in an aggregate (its buffer is a row of Spark's type; a window's
//! is not, and its answers alone are checked), so a total that leaves the
//! range on the way and comes back (`MAX + 1 - 2`) is NULL or an error in some orders of its
//! rows and the total in others: which one depends on how Spark splits and orders them. Every
//! running total lies between the sum of the negative values and that of the positive ones, so
//! the positive ones are added up beside the total, the negative ones' sum being the difference
//! ([`SignedSums`]): where both fit, every order of Spark's
//! gives the total; where the total fits and one of them does not, the query is refused rather
//! than answered with one of Spark's possible answers.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::functions_aggregate::sum::sum_udaf;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF, Signature, Volatility,
};

use super::answered::{answered, answered_groups, Answer};

/// The `sum` of a DECIMAL of 256 bits answered in Spark's DECIMAL type; `ansi` for the mode,
/// `window` for a window's (whose running totals Spark never checks, see below).
pub(crate) fn decimal_sum(ansi: bool, window: bool) -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::from(DecimalSum { ansi, window, signature: Signature::any(1, Volatility::Immutable) }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct DecimalSum {
    ansi: bool,
    /// Over a window Spark keeps the running total in an object, unbounded, and checks only
    /// each answer: no order of the rows fails where the total fits, and nothing is refused.
    window: bool,
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
        let make = || sum_udaf().accumulator(AccumulatorArgs { return_field: Arc::clone(&return_field), ..args });
        let sums: Box<dyn Accumulator> =
            if self.window { make()? } else { Box::new(SignedSums::of(make, fit.to.clone())?) };
        Ok(answered(sums, fit))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let return_field = self.wide_field(&args.return_field, args.input_fields[0].data_type())?;
        let one = sum_udaf().inner().state_fields(StateFieldsArgs { return_field, ..args })?;
        if self.window {
            return Ok(one);
        }
        Ok(PARTS
            .iter()
            .flat_map(|part| {
                one.iter().map(move |f| Arc::new(f.as_ref().clone().with_name(format!("{}[{part}]", f.name()))))
            })
            .collect())
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let fit = self.fitted(&args)?;
        let return_field = self.wide_field(&args.return_field, args.expr_fields[0].data_type())?;
        let make = || {
            let args = AccumulatorArgs { return_field: Arc::clone(&return_field), ..args };
            sum_udaf().inner().create_sliding_accumulator(args)
        };
        let sums: Box<dyn Accumulator> =
            if self.window { make()? } else { Box::new(SignedSums::of(make, fit.to.clone())?) };
        Ok(answered(sums, fit))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        let fit = self.fitted(&args)?;
        let return_field = self.wide_field(&args.return_field, args.expr_fields[0].data_type())?;
        let make = || {
            let args = AccumulatorArgs { return_field: Arc::clone(&return_field), ..args };
            sum_udaf().inner().create_groups_accumulator(args)
        };
        let sums: Box<dyn GroupsAccumulator> =
            if self.window { make()? } else { Box::new(SignedSums::of(make, fit.to.clone())?) };
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

/// The state's parts, in order: the total and the positive values' sum.
const PARTS: [&str; 2] = ["total", "positive"];

/// DataFusion's sums (`A`: an accumulator or a group accumulator) of all values, of the
/// positive ones and of the negative ones; answers the total, or refuses a total that fits
/// `bound` where a running total of some order of the rows would not.
#[derive(Debug)]
struct SignedSums<A> {
    parts: [A; 2],
    bound: DataType,
}

impl<A> SignedSums<A> {
    fn of(make: impl Fn() -> Result<A>, bound: DataType) -> Result<Self> {
        Ok(Self { parts: [make()?, make()?], bound })
    }

    /// The values for each part: all of them, and the positive ones (the others NULL, which a
    /// sum skips).
    fn split(values: &[ArrayRef]) -> Result<[Vec<ArrayRef>; 2]> {
        use arrow::compute::kernels::{boolean::not, cmp};
        let [v] = values else { return exec_err!("sum of DECIMALs called with {} arguments", values.len()) };
        let zero = ScalarValue::new_zero(v.data_type())?.to_scalar()?;
        let positive = arrow::compute::nullif(v, &not(&cmp::gt(v, &zero)?)?)?;
        Ok([vec![Arc::clone(v)], vec![positive]])
    }

    /// `totals`, or an error where one fits `bound` and its positive or negative values' sum
    /// (the total less the positive ones') does not.
    fn checked(&self, totals: ArrayRef, positives: &ArrayRef) -> Result<ArrayRef> {
        use arrow::datatypes::{i256, Decimal256Type};
        let DataType::Decimal128(precision, _) = self.bound else {
            return exec_err!("a DECIMAL sum answered as {}", self.bound);
        };
        let Some(limit) = i256::from_i128(10).checked_pow(u32::from(precision)) else {
            return exec_err!("a DECIMAL sum answered as {}", self.bound);
        };
        let (t, p) = (totals.as_primitive::<Decimal256Type>(), positives.as_primitive::<Decimal256Type>());
        let leaves = (0..t.len()).any(|i| {
            let total = t.value(i);
            let positive = if p.is_valid(i) { p.value(i) } else { i256::ZERO };
            let negative = total.wrapping_sub(positive);
            t.is_valid(i) && total.wrapping_abs() < limit && (positive >= limit || negative <= limit.wrapping_neg())
        });
        if leaves {
            return exec_err!(
                "the sum of these DECIMAL values fits {}, but adding them up one by one leaves its range in some \
                 orders of the rows: Spark's answer (the sum, NULL or an overflow error) depends on how it splits and \
                 orders them; cast the values to DOUBLE, or run on the Spark backend",
                crate::types::spark_type_name(&self.bound)
            );
        }
        Ok(totals)
    }

    /// The parts' states in the order of [`PARTS`], split back.
    fn states(states: &[ArrayRef]) -> [&[ArrayRef]; 2] {
        states.split_at(states.len() / 2).into()
    }
}

impl Accumulator for SignedSums<Box<dyn Accumulator>> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for (part, values) in self.parts.iter_mut().zip(Self::split(values)?) {
            part.update_batch(&values)?;
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for (part, values) in self.parts.iter_mut().zip(Self::split(values)?) {
            part.retract_batch(&values)?;
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        self.parts.iter().all(|p| p.supports_retract_batch())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for (part, states) in self.parts.iter_mut().zip(Self::states(states)) {
            part.merge_batch(states)?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let mut state = Vec::new();
        for part in self.parts.iter_mut() {
            state.extend(part.state()?);
        }
        Ok(state)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let [t, p] = &mut self.parts;
        let (t, p) = (t.evaluate()?.to_array()?, p.evaluate()?.to_array()?);
        ScalarValue::try_from_array(&self.checked(t, &p)?, 0)
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.parts.iter().map(|p| p.size()).sum::<usize>()
    }
}

impl GroupsAccumulator for SignedSums<Box<dyn GroupsAccumulator>> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        for (part, values) in self.parts.iter_mut().zip(Self::split(values)?) {
            part.update_batch(&values, groups, filter, total)?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        for (part, states) in self.parts.iter_mut().zip(Self::states(states)) {
            part.merge_batch(states, groups, total)?;
        }
        Ok(())
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let [t, p] = &mut self.parts;
        let (t, p) = (t.evaluate(emit_to)?, p.evaluate(emit_to)?);
        self.checked(t, &p)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let mut state = Vec::new();
        for part in self.parts.iter_mut() {
            state.extend(part.state(emit_to)?);
        }
        Ok(state)
    }

    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let mut state = Vec::new();
        for (part, values) in self.parts.iter().zip(Self::split(values)?) {
            state.extend(part.convert_to_state(&values, filter)?);
        }
        Ok(state)
    }

    fn size(&self) -> usize {
        self.parts.iter().map(|p| p.size()).sum()
    }
}
