//! Spark's `sum` of BIGINTs in ANSI mode: a total that does not fit a BIGINT fails the query
//! (`[ARITHMETIC_OVERFLOW]`), where DataFusion's `sum` wraps (as Spark's does without ANSI mode).
//!
//! The function is named `sum`, so that a query's column names stay what they were; the plan
//! rewrite (`fidelity`) puts it in place of DataFusion's for a BIGINT argument (Spark sums
//! every integer type as a BIGINT) in an aggregate or a window, and never registers it.
//!
//! Totals are kept as `i128`, and each answer is checked. Spark adds row by row in `i64`, so
//! whether it fails on a total that leaves the BIGINT range on the way and comes back
//! (`MAX + 1 - 2`) depends on how it splits and orders its rows; when the total itself does not
//! fit, every order fails. Every running total lies between the sum of the negative values and
//! that of the positive ones, so these are kept beside the total: where both fit, every order
//! answers the total; where the total fits and one of them does not, the query is refused
//! rather than answered with one of Spark's possible answers.

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
        Ok(PARTS.map(|part| Arc::new(Field::new(format_state_name(args.name, part), PARTIAL, true))).to_vec())
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
    sums: Signed,
    /// The non-NULL values summed: with none, the sum is NULL.
    values: i64,
}

/// A total, and the totals of its positive and its negative values.
#[derive(Debug, Default, Clone, Copy)]
struct Signed {
    total: i128,
    positives: i128,
    negatives: i128,
}

impl Signed {
    fn add(&mut self, value: i128) {
        self.total += value;
        self.positives += value.max(0);
        self.negatives += value.min(0);
    }

    fn merge(&mut self, other: Signed) {
        self.total += other.total;
        self.positives += other.positives;
        self.negatives += other.negatives;
    }

    /// The total as a BIGINT, an error where it does not fit, or a refusal where some order of
    /// its values would leave the range on the way.
    fn answer(&self) -> Result<i64> {
        let Ok(total) = i64::try_from(self.total) else { return overflow() };
        if self.positives > i128::from(i64::MAX) || self.negatives < i128::from(i64::MIN) {
            return exec_err!(
                "the sum of these BIGINT values fits, but adding them up one by one leaves the BIGINT range in some \
                 orders of the rows: Spark's answer (the sum or an overflow error) depends on how it splits and orders \
                 them; sum them as DECIMAL (`sum(CAST(x AS DECIMAL(38,0)))`), or run on the Spark backend"
            );
        }
        Ok(total)
    }
}

impl Total {
    fn answer(&self) -> Result<Option<i64>> {
        if self.values == 0 {
            return Ok(None);
        }
        Ok(Some(self.sums.answer()?))
    }

    fn add(&mut self, values: &ArrayRef, sign: i128) -> Result<()> {
        let values = values.as_primitive::<Int64Type>();
        let mut batch = Signed::default();
        for v in values.iter().flatten() {
            batch.add(i128::from(v));
        }
        self.sums.merge(Signed {
            total: sign * batch.total,
            positives: sign * batch.positives,
            negatives: sign * batch.negatives,
        });
        self.values += sign as i64 * (values.len() - values.null_count()) as i64;
        Ok(())
    }
}

/// A partial total, as passed between the phases of an aggregation.
const PARTIAL: DataType = DataType::Decimal128(38, 0);

fn partial(totals: Vec<i128>, nulls: Option<NullBuffer>) -> Result<ArrayRef> {
    Ok(Arc::new(Decimal128Array::new(totals.into(), nulls).with_precision_and_scale(38, 0)?))
}

/// The partial states' sums (total, positives, negatives), NULL where no value was seen.
fn partials(states: &[ArrayRef]) -> impl Iterator<Item = Option<Signed>> + '_ {
    let [total, positives, negatives] = [0, 1, 2].map(|i| states[i].as_primitive::<Decimal128Type>());
    (0..total.len()).map(move |i| {
        total.is_valid(i).then(|| Signed {
            total: total.value(i),
            positives: positives.value(i),
            negatives: negatives.value(i),
        })
    })
}

/// The names of the state's fields: the total, and the totals of the positive and of the
/// negative values (see the module).
const PARTS: [&str; 3] = ["sum", "positives", "negatives"];

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
        for partial in partials(states).flatten() {
            self.sums.merge(partial);
            self.values += 1;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let seen = self.values > 0;
        let Signed { total, positives, negatives } = self.sums;
        Ok([total, positives, negatives].map(|v| ScalarValue::Decimal128(seen.then_some(v), 38, 0)).to_vec())
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
    sums: Vec<Signed>,
    seen: Vec<bool>,
}

impl GroupSums {
    fn add(&mut self, values: impl Iterator<Item = Option<Signed>>, groups: &[usize], total: usize) {
        self.sums.resize(total, Signed::default());
        self.seen.resize(total, false);
        for (value, &group) in values.zip(groups) {
            if let Some(value) = value {
                self.sums[group].merge(value);
                self.seen[group] = true;
            }
        }
    }
}

/// One value as the sums of itself.
fn one(value: i64) -> Signed {
    let mut s = Signed::default();
    s.add(i128::from(value));
    s
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
        let values = values.iter().enumerate().map(|(row, v)| v.filter(|_| counted(row)).map(one));
        self.add(values, groups, total);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.add(partials(states), groups, total);
        Ok(())
    }

    /// Each row as its own group's partial sums: its value, NULL where the filter leaves it out.
    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let values = values[0].as_primitive::<Int64Type>();
        let counted = |row: usize| values.is_valid(row) && filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        let nulls = NullBuffer::from((0..values.len()).map(counted).collect::<Vec<_>>());
        let part = |f: fn(i64) -> i64| {
            partial(values.values().iter().map(|&v| i128::from(f(v))).collect(), Some(nulls.clone()))
        };
        Ok(vec![part(|v| v)?, part(|v| v.max(0))?, part(|v| v.min(0))?])
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = emit_to.take_needed(&mut self.seen);
        let sums = sums.iter().zip(&seen).map(|(sum, seen)| if *seen { sum.answer() } else { Ok(0) });
        let sums: Vec<i64> = sums.collect::<Result<_>>()?;
        Ok(Arc::new(Int64Array::new(sums.into(), Some(NullBuffer::from(seen)))))
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = NullBuffer::from(emit_to.take_needed(&mut self.seen));
        let part = |f: fn(&Signed) -> i128| partial(sums.iter().map(f).collect(), Some(seen.clone()));
        Ok(vec![part(|s| s.total)?, part(|s| s.positives)?, part(|s| s.negatives)?])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * size_of::<Signed>() + self.seen.capacity()
    }
}
