//! Spark's `sum` of BIGINTs in ANSI mode: a total that does not fit a BIGINT fails the query
//! (`[ARITHMETIC_OVERFLOW]`), where DataFusion's `sum` wraps (as Spark's does without ANSI mode).
//!
//! The function is named `sum`, so that a query's column names stay what they were; the plan
//! rewrite (`fidelity`) puts it in place of DataFusion's for a BIGINT argument (Spark sums
//! every integer type as a BIGINT) in an aggregate or a window, and never registers it.
//!
//! Totals are kept as `i128`, and each answer is checked. Spark adds row by row in `i64`, so
//! whether it fails on a total that leaves the BIGINT range on the way and comes back
//! (`MAX + 1 - 2`) depends on how its rows were split into partitions; when the total itself
//! does not fit, every order fails. Here only that fails, so both answer the same whenever
//! Spark's answer does not depend on its partitions.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal128Array, Int64Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{DataType, Decimal128Type, Field, FieldRef, Int64Type};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::utils::AggregateOrderSensitivity;
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF, Signature, Volatility,
};

/// The `sum` that fails on a BIGINT overflow.
pub(crate) fn ansi_sum() -> Arc<AggregateUDF> {
    Arc::new(AggregateUDF::from(AnsiSum { signature: Signature::exact(vec![DataType::Int64], Volatility::Immutable) }))
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct AnsiSum {
    signature: Signature,
}

fn overflow<T>() -> Result<T> {
    exec_err!("[ARITHMETIC_OVERFLOW] bigint overflow in sum: {}", crate::modes::ansi_hint(Some("try_sum")))
}

impl AggregateUDFImpl for AnsiSum {
    fn name(&self) -> &str {
        "sum"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        Ok(DataType::Int64)
    }

    fn accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Total::default()))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "sum"), PARTIAL, true))])
    }

    fn create_sliding_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(Total::default()))
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(&self, _args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(GroupSums::default()))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// One total: of a whole query without groups, or of a window's frame (from which the rows
/// that leave it are taken).
#[derive(Debug, Default)]
struct Total {
    total: i128,
    /// The non-NULL values summed: with none, the sum is NULL.
    values: i64,
}

impl Total {
    fn answer(&self) -> Result<Option<i64>> {
        if self.values == 0 {
            return Ok(None);
        }
        Ok(Some(bigint(self.total)?))
    }

    fn add(&mut self, values: &ArrayRef, sign: i128) -> Result<()> {
        let values = values.as_primitive::<Int64Type>();
        // Arrow's kernel, vectorised; a batch whose own sum leaves the BIGINT range is added up
        // again in `i128`.
        let sum = match arrow::compute::sum_checked(values) {
            Ok(sum) => i128::from(sum.unwrap_or(0)),
            Err(_) => values.iter().flatten().map(i128::from).sum(),
        };
        self.total += sign * sum;
        self.values += sign as i64 * (values.len() - values.null_count()) as i64;
        Ok(())
    }
}

fn bigint(total: i128) -> Result<i64> {
    match i64::try_from(total) {
        Ok(sum) => Ok(sum),
        Err(_) => overflow(),
    }
}

/// A partial total, as passed between the phases of an aggregation.
const PARTIAL: DataType = DataType::Decimal128(38, 0);

fn partial(totals: Vec<i128>, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    Ok(Arc::new(Decimal128Array::new(totals.into(), nulls).with_precision_and_scale(38, 0)?))
}

impl Accumulator for Total {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], 1)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], -1)
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let partials = states[0].as_primitive::<Decimal128Type>();
        self.total += partials.iter().flatten().sum::<i128>();
        self.values += (partials.len() - partials.null_count()) as i64;
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let total = (self.values > 0).then_some(self.total);
        Ok(vec![ScalarValue::Decimal128(total, 38, 0)])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Int64(self.answer()?))
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}

/// The totals of each group, and whether it has seen a value (else its sum is NULL).
#[derive(Debug, Default)]
struct GroupSums {
    sums: Vec<i128>,
    seen: Vec<bool>,
}

impl GroupSums {
    fn add(&mut self, values: impl Iterator<Item = Option<i128>>, groups: &[usize], total: usize) {
        self.sums.resize(total, 0);
        self.seen.resize(total, false);
        for (value, &group) in values.zip(groups) {
            if let Some(value) = value {
                self.sums[group] += value;
                self.seen[group] = true;
            }
        }
    }
}

impl GroupsAccumulator for GroupSums {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        let values = values[0].as_primitive::<Int64Type>();
        let counted = |row: usize| filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        let values = values.iter().enumerate().map(|(row, v)| v.filter(|_| counted(row)).map(i128::from));
        self.add(values, groups, total);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.add(states[0].as_primitive::<Decimal128Type>().iter(), groups, total);
        Ok(())
    }

    /// Each row as its own group's partial total: its value, NULL where the filter leaves it out.
    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let totals = arrow::compute::cast(&values[0], &PARTIAL)?;
        let Some(filter) = filter else { return Ok(vec![totals]) };
        let left_out = arrow::compute::not(&arrow::compute::prep_null_mask_filter(filter))?;
        Ok(vec![arrow::compute::nullif(&totals, &left_out)?])
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = emit_to.take_needed(&mut self.seen);
        let sums = sums.into_iter().zip(&seen).map(|(sum, seen)| if *seen { bigint(sum) } else { Ok(0) });
        let sums: Vec<i64> = sums.collect::<Result<_>>()?;
        Ok(Arc::new(Int64Array::new(sums.into(), Some(NullBuffer::from(seen)))))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = emit_to.take_needed(&mut self.seen);
        Ok(vec![partial(sums, Some(NullBuffer::from(seen)))?])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * size_of::<i128>() + self.seen.capacity()
    }
}
