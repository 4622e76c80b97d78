//! Spark's `sum` of a DECIMAL(p,s) of more than 28 digits: a DECIMAL(min(p+10, 38), s) whose
//! total, when its digits do not fit, is NULL — or, in ANSI mode, fails the query
//! (`ARITHMETIC_OVERFLOW`). DataFusion's adds in 128 bits and wraps around.
//!
//! The plan rewrite (`fidelity`) puts this function in place of DataFusion's. The check belongs
//! in the aggregate, not in a cast above it: a filter on the aggregate's output (a HAVING) is
//! pushed below such a cast, and a column nobody reads is pruned with it, so an overflowing
//! group would go unseen where Spark's aggregate fails.
//!
//! Spark checks each addition in an aggregate (its buffer is a row of Spark's type; a window's
//! is not, and its answers alone are checked), so a total that leaves the range on the way and
//! comes back (`MAX + 1 - 2`) is NULL or an error in some orders of its rows and the total in
//! others: which one depends on how Spark splits and orders them. Every running total lies
//! between the sum of the negative values and that of the positive ones, so these two are what
//! is kept ([`Signed`]; the total is their difference): where both fit, every order of Spark's
//! gives the total; where the total fits and one of them does not, the query is refused rather
//! than answered with one of Spark's possible answers.
//!
//! Both sums are 128-bit magnitudes that saturate at `i128::MAX` (above any DECIMAL's 10^38):
//! one addition per row, and a partial state as narrow as DataFusion's own sum's but for the
//! second column — a 256-bit sum and a 256-bit state made a grouping by TPC-H orders a third
//! slower. A saturated sum still tells an overflow where the other sum is too small to bring the
//! total back into range; otherwise the query is refused. (A total without groups, and a
//! window's, whose frame takes values out again, keep them exact in 256 bits.)

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, Decimal128Array};
use arrow::buffer::NullBuffer;
use arrow::datatypes::{i256, DataType, Decimal128Type, Field, FieldRef};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::{format_state_name, AggregateOrderSensitivity};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, EmitTo, GroupsAccumulator, ReversedUDAF, Signature, Volatility,
};

/// The `sum` of a DECIMAL answered in Spark's DECIMAL type; `ansi` for the mode, `window` for a
/// window's (whose running totals Spark never checks, see below).
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

/// The argument's precision and scale.
fn argument(arg: &DataType) -> Result<(u8, i8)> {
    match arg {
        DataType::Decimal128(p, s) => Ok((*p, *s)),
        other => exec_err!("sum of DECIMALs called on {other}"),
    }
}

impl DecimalSum {
    fn check(&self, args: &AccumulatorArgs) -> Result<Check> {
        let (p, scale) = argument(args.expr_fields[0].data_type())?;
        let precision = (p + 10).min(38);
        Ok(Check { bound: 10i128.pow(u32::from(precision)), precision, scale, ansi: self.ansi, ordered: !self.window })
    }

    fn total(&self, args: &AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let check = self.check(args)?;
        if args.is_distinct {
            let argument = args.expr_fields[0].data_type().clone();
            return Ok(Box::new(Distinct { values: HashSet::new(), argument, check }));
        }
        Ok(Box::new(Total::new(check)))
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
        let (p, s) = argument(&args[0])?;
        Ok(DataType::Decimal128((p + 10).min(38), s))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.total(&args)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let argument = args.input_fields[0].data_type();
        if args.is_distinct {
            let values = Field::new_list_field(argument.clone(), true);
            return Ok(vec![Arc::new(Field::new_list(format_state_name(args.name, "sum distinct"), values, false))]);
        }
        let (_, s) = self::argument(argument)?;
        let partial = DataType::Decimal128(38, s);
        let mut fields: Vec<FieldRef> =
            PARTS.map(|part| Arc::new(Field::new(format_state_name(args.name, part), partial.clone(), true))).to_vec();
        fields.push(Arc::new(Field::new(format_state_name(args.name, "exact"), DataType::Binary, true)));
        Ok(fields)
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        self.total(&args)
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        !args.is_distinct
    }

    fn create_groups_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn GroupsAccumulator>> {
        Ok(Box::new(GroupSums { sums: Vec::new(), seen: Vec::new(), check: self.check(&args)? }))
    }

    fn reverse_expr(&self) -> ReversedUDAF {
        ReversedUDAF::Identical
    }

    fn order_sensitivity(&self) -> AggregateOrderSensitivity {
        AggregateOrderSensitivity::Insensitive
    }
}

/// The names of the state's first fields: the magnitudes of the positive and of the negative
/// values' sums. (Opaque 128-bit values in a DECIMAL(38, s) column: a saturated sum is beyond
/// its precision, which no one reads.) A third, `exact`, is NULL but where a total without groups
/// saturated: there it holds both magnitudes exactly ([`exact_bytes`]), so that the partial
/// totals of several partitions still add up exactly (4 bytes a row where a grouping emits it).
const PARTS: [&str; 2] = ["positives", "negatives"];

/// A saturated magnitude: the sum reached 2^127 - 1, past every DECIMAL's range.
const SATURATED: i128 = i128::MAX;

/// The magnitudes of the sums of a group's positive and of its negative values, each saturating
/// at [`SATURATED`]; the total is their difference.
#[derive(Debug, Clone, Copy, Default)]
struct Signed {
    positives: i128,
    negatives: i128,
}

impl Signed {
    fn add(&mut self, value: i128) {
        // A DECIMAL's value is below 10^38 in magnitude: its negation does not overflow.
        if value > 0 {
            self.positives = self.positives.saturating_add(value);
        } else {
            self.negatives = self.negatives.saturating_add(-value);
        }
    }

    fn merge(&mut self, other: Signed) {
        self.positives = self.positives.saturating_add(other.positives);
        self.negatives = self.negatives.saturating_add(other.negatives);
    }
}

/// How a group's sums become Spark's answer.
#[derive(Debug, Clone, Copy)]
struct Check {
    /// 10^precision of the answer: the first magnitude that does not fit.
    bound: i128,
    precision: u8,
    scale: i8,
    ansi: bool,
    /// Whether some order of the rows adding up past the range changes the answer (an
    /// aggregate's, not a window's).
    ordered: bool,
}

impl Check {
    /// The total of `sums` as Spark answers it: `None` for NULL (an overflow without ANSI
    /// mode); an error for an overflow in ANSI mode, or where the answer depends on the order.
    fn answer(&self, sums: &Signed) -> Result<Option<i128>> {
        let Signed { positives, negatives } = *sums;
        if positives == SATURATED || negatives == SATURATED {
            // The saturated sum is at least SATURATED: where the other is below SATURATED -
            // bound, the total is at least the bound in magnitude, in every order.
            let out = |saturated: i128, other: i128| saturated == SATURATED && other < SATURATED - self.bound;
            if out(positives, negatives) || out(negatives, positives) {
                return self.overflow();
            }
            return exec_err!(
                "the positive or the negative values of this DECIMAL sum add up past 1.7 · 10^38: its total is \
                 beyond what this engine adds up exactly (and Spark's answer may depend on the order of the rows); \
                 cast the values to DOUBLE, or run on the Spark backend"
            );
        }
        self.exact(i256::from_i128(positives), i256::from_i128(negatives))
    }

    /// The total of the exact magnitudes of the positive and the negative values' sums, as
    /// [`Self::answer`].
    fn exact(&self, positives: i256, negatives: i256) -> Result<Option<i128>> {
        let total = positives.wrapping_sub(negatives);
        let bound = i256::from_i128(self.bound);
        if total.wrapping_abs() >= bound {
            return self.overflow();
        }
        if self.ordered && (positives >= bound || negatives >= bound) {
            return exec_err!(
                "the sum of these DECIMAL values fits DECIMAL({},{}), but adding them up one by one leaves its \
                 range in some orders of the rows: Spark's answer (the sum, NULL or an overflow error) depends on how \
                 it splits and orders them; cast the values to DOUBLE, or run on the Spark backend",
                self.precision,
                self.scale
            );
        }
        Ok(total.to_i128())
    }

    fn overflow(&self) -> Result<Option<i128>> {
        if self.ansi {
            return exec_err!(
                "[ARITHMETIC_OVERFLOW] Overflow in sum of decimals: {}",
                crate::modes::ansi_hint(Some("try_sum"))
            );
        }
        Ok(None)
    }

    fn scalar(&self, sums: Option<&Signed>) -> Result<ScalarValue> {
        let total = sums.map(|s| self.answer(s)).transpose()?.flatten();
        Ok(ScalarValue::Decimal128(total, self.precision, self.scale))
    }

    /// An array of DECIMAL(`precision`, scale): answers, or (`precision` 38) partial sums.
    fn array(&self, values: Vec<i128>, nulls: Option<NullBuffer>, precision: u8) -> Result<ArrayRef> {
        Ok(Arc::new(Decimal128Array::new(values.into(), nulls).with_precision_and_scale(precision, self.scale)?))
    }
}

/// The partial states' sums, `None` where no value was seen; with their exact magnitudes where
/// the state holds them.
fn partials(states: &[ArrayRef]) -> impl Iterator<Item = Option<(Signed, Option<(i256, i256)>)>> + '_ {
    let [positives, negatives] = [0, 1].map(|i| states[i].as_primitive::<Decimal128Type>());
    let exact = states[2].as_binary::<i32>();
    (0..positives.len()).map(move |i| {
        positives.is_valid(i).then(|| {
            let sums = Signed { positives: positives.value(i), negatives: negatives.value(i) };
            (sums, exact.is_valid(i).then(|| exact_magnitudes(exact.value(i))).flatten())
        })
    })
}

/// Two exact magnitudes as a state's `exact` value: 32 bytes each, little-endian.
fn exact_bytes(positives: i256, negatives: i256) -> Vec<u8> {
    [positives.to_le_bytes(), negatives.to_le_bytes()].concat()
}

fn exact_magnitudes(bytes: &[u8]) -> Option<(i256, i256)> {
    let (p, n) = bytes.split_at_checked(32)?;
    Some((i256::from_le_bytes(p.try_into().ok()?), i256::from_le_bytes(n.try_into().ok()?)))
}

/// An `exact` state column of `n` NULLs.
fn no_exact(n: usize) -> ArrayRef {
    Arc::new(arrow::array::BinaryArray::new_null(n))
}

/// One total: of a whole query without groups, or of a window's frame (from which the rows
/// that leave it are taken). Its magnitudes are exact, in 256 bits: a window's frame takes
/// values out again, which a saturated sum could not (`sum(x) OVER ()` of values whose positive
/// ones add up past 2^127 and whose total fits answers on Spark).
#[derive(Debug)]
struct Total {
    positives: i256,
    negatives: i256,
    /// Whether a partial state merged in had saturated: the sums are no longer exact.
    saturated: bool,
    /// The non-NULL values summed: with none, the sum is NULL.
    values: i64,
    check: Check,
}

impl Total {
    fn new(check: Check) -> Self {
        Self { positives: i256::ZERO, negatives: i256::ZERO, saturated: false, values: 0, check }
    }

    /// Adds each value of `values` times `sign` (1, or -1 to take them out).
    fn add(&mut self, values: &ArrayRef, sign: i128) {
        let values = values.as_primitive::<Decimal128Type>();
        for v in values.iter().flatten() {
            let magnitude = i256::from_i128(sign * v.abs());
            if v > 0 {
                self.positives = self.positives.wrapping_add(magnitude);
            } else {
                self.negatives = self.negatives.wrapping_add(magnitude);
            }
        }
        self.values += sign as i64 * (values.len() - values.null_count()) as i64;
    }

    /// The sums as a partial state's: saturated at [`SATURATED`].
    fn saturating(&self) -> Signed {
        let cut = |v: i256| if self.saturated { SATURATED } else { v.to_i128().unwrap_or(SATURATED) };
        Signed { positives: cut(self.positives), negatives: cut(self.negatives) }
    }
}

impl Accumulator for Total {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], 1);
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0], -1);
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for (partial, exact) in partials(states).flatten() {
            let (positives, negatives) = match exact {
                Some(exact) => exact,
                None => {
                    self.saturated |= partial.positives == SATURATED || partial.negatives == SATURATED;
                    (i256::from_i128(partial.positives), i256::from_i128(partial.negatives))
                }
            };
            self.positives = self.positives.wrapping_add(positives);
            self.negatives = self.negatives.wrapping_add(negatives);
            self.values += 1;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let seen = self.values > 0;
        let sums = self.saturating();
        let part = |v: i128| ScalarValue::Decimal128(seen.then_some(v), 38, self.check.scale);
        let cut = sums.positives == SATURATED || sums.negatives == SATURATED;
        let exact = (seen && cut && !self.saturated).then(|| exact_bytes(self.positives, self.negatives));
        Ok(vec![part(sums.positives), part(sums.negatives), ScalarValue::Binary(exact)])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let total = match (self.values > 0, self.saturated) {
            (false, _) => None,
            (true, true) => self.check.answer(&self.saturating())?,
            (true, false) => self.check.exact(self.positives, self.negatives)?,
        };
        Ok(ScalarValue::Decimal128(total, self.check.precision, self.check.scale))
    }

    fn size(&self) -> usize {
        size_of_val(self)
    }
}

/// `sum(DISTINCT …)`: the distinct values, summed as they are answered.
#[derive(Debug)]
struct Distinct {
    values: HashSet<i128>,
    /// The values' type (their state is a list of them).
    argument: DataType,
    check: Check,
}

impl Accumulator for Distinct {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.values.extend(values[0].as_primitive::<Decimal128Type>().iter().flatten());
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for list in states[0].as_list::<i32>().iter().flatten() {
            self.values.extend(list.as_primitive::<Decimal128Type>().iter().flatten());
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (p, s) = argument(&self.argument)?;
        let values: Vec<_> = self.values.iter().map(|v| ScalarValue::Decimal128(Some(*v), p, s)).collect();
        Ok(vec![ScalarValue::List(ScalarValue::new_list_nullable(&values, &self.argument))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut sums = Signed::default();
        self.values.iter().for_each(|v| sums.add(*v));
        self.check.scalar((!self.values.is_empty()).then_some(&sums))
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.values.capacity() * size_of::<i128>()
    }
}

/// The sums of each group, and whether it has seen a value (else its sum is NULL).
#[derive(Debug)]
struct GroupSums {
    sums: Vec<Signed>,
    seen: Vec<bool>,
    check: Check,
}

impl GroupSums {
    fn grow(&mut self, total: usize) {
        self.sums.resize(total, Signed::default());
        self.seen.resize(total, false);
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
        self.grow(total);
        let values = values[0].as_primitive::<Decimal128Type>();
        if values.null_count() == 0 && filter.is_none() {
            // The common case, without a test per row.
            for (&v, &group) in values.values().iter().zip(groups) {
                self.sums[group].add(v);
                self.seen[group] = true;
            }
            return Ok(());
        }
        let counted = |row: usize| values.is_valid(row) && filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        for (row, (&v, &group)) in values.values().iter().zip(groups).enumerate() {
            if counted(row) {
                self.sums[group].add(v);
                self.seen[group] = true;
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.grow(total);
        // (A group's sums saturate: exact magnitudes in a state are read as their saturated
        // values beside them.)
        for (partial, &group) in partials(states).zip(groups) {
            if let Some((partial, _)) = partial {
                self.sums[group].merge(partial);
                self.seen[group] = true;
            }
        }
        Ok(())
    }

    /// Each row as its own group's partial sums: its value, NULL where the filter leaves it out.
    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let values = values[0].as_primitive::<Decimal128Type>();
        let counted = |row: usize| values.is_valid(row) && filter.is_none_or(|f| f.is_valid(row) && f.value(row));
        let nulls = NullBuffer::from((0..values.len()).map(counted).collect::<Vec<_>>());
        let part = |f: fn(i128) -> i128| {
            let parts = values.values().iter().map(|&v| f(v)).collect();
            self.check.array(parts, Some(nulls.clone()), 38)
        };
        Ok(vec![part(|v| v.max(0))?, part(|v| -v.min(0))?, no_exact(values.len())])
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = emit_to.take_needed(&mut self.seen);
        let mut totals = Vec::with_capacity(sums.len());
        let mut valid = Vec::with_capacity(sums.len());
        for (sums, seen) in sums.iter().zip(seen) {
            let total = if seen { self.check.answer(sums)? } else { None };
            totals.push(total.unwrap_or(0));
            valid.push(total.is_some());
        }
        self.check.array(totals, Some(NullBuffer::from(valid)), self.check.precision)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        let sums = emit_to.take_needed(&mut self.sums);
        let seen = NullBuffer::from(emit_to.take_needed(&mut self.seen));
        let part = |f: fn(&Signed) -> i128| self.check.array(sums.iter().map(f).collect(), Some(seen.clone()), 38);
        Ok(vec![part(|s| s.positives)?, part(|s| s.negatives)?, no_exact(sums.len())])
    }

    fn size(&self) -> usize {
        self.sums.capacity() * size_of::<Signed>() + self.seen.capacity()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(ansi: bool) -> Check {
        Check { bound: 10i128.pow(38), precision: 38, scale: 0, ansi, ordered: true }
    }

    /// Sums saturate past 2^127 and still tell an overflow where the other sum cannot bring the
    /// total back; where both are past it, the query is refused, never answered.
    #[test]
    fn saturated_sums_answer_only_what_they_know() {
        let big = 10i128.pow(38) - 1;
        let mut sums = Signed::default();
        [big, big, 5].iter().for_each(|v| sums.add(*v));
        assert_eq!(sums.positives, SATURATED);
        assert_eq!(check(false).answer(&sums).unwrap(), None);
        assert!(check(true).answer(&sums).unwrap_err().to_string().contains("ARITHMETIC_OVERFLOW"));
        [-big, -big].iter().for_each(|v| sums.add(*v));
        assert_eq!(sums.negatives, SATURATED);
        assert!(check(false).answer(&sums).unwrap_err().to_string().contains("past 1.7 · 10^38"));
    }

    /// Exact sums: the total, an overflow, and the refusal where the running total can leave
    /// the range in some order (not over a window).
    #[test]
    fn exact_sums_answer_spark() {
        let big = 10i128.pow(38) - 1;
        let mut sums = Signed::default();
        [big - 10, -3, 2].iter().for_each(|v| sums.add(*v));
        assert_eq!(check(false).answer(&sums).unwrap(), Some(big - 11));
        // The total past the range: in every order.
        sums.add(20);
        assert_eq!(check(false).answer(&sums).unwrap(), None);
        assert!(check(true).answer(&sums).unwrap_err().to_string().contains("ARITHMETIC_OVERFLOW"));
        // Back in range, but the positive values alone are not.
        let mut other = Signed::default();
        other.add(-20);
        sums.merge(other);
        assert!(check(false).answer(&sums).unwrap_err().to_string().contains("in some orders"));
        let window = Check { ordered: false, ..check(false) };
        assert_eq!(window.answer(&sums).unwrap(), Some(big - 11));
    }

    /// A window's total is exact past 2^127 and takes values out again: Spark answers the
    /// frame's total wherever it fits.
    #[test]
    fn a_windows_total_is_exact() {
        let big = 10i128.pow(38) - 1;
        let window = Check { ordered: false, ..check(true) };
        let mut total = Total::new(window);
        let values: ArrayRef =
            Arc::new(Decimal128Array::from(vec![big, big, -big, -big, 7]).with_precision_and_scale(38, 0).unwrap());
        total.update_batch(&[Arc::clone(&values)]).unwrap();
        assert_eq!(total.evaluate().unwrap(), ScalarValue::Decimal128(Some(7), 38, 0));
        let out: ArrayRef = Arc::new(Decimal128Array::from(vec![-big, -big]).with_precision_and_scale(38, 0).unwrap());
        total.retract_batch(&[out]).unwrap();
        assert!(total.evaluate().unwrap_err().to_string().contains("ARITHMETIC_OVERFLOW"));
    }

    /// Partial totals past 2^127 (of several partitions) pass their magnitudes exactly, and the
    /// final total answers as one exact sum would.
    #[test]
    fn partial_totals_stay_exact() {
        let big = 10i128.pow(38) - 1;
        let decimals =
            |v: Vec<i128>| -> ArrayRef { Arc::new(Decimal128Array::from(v).with_precision_and_scale(38, 0).unwrap()) };
        let mut parts = [Total::new(check(false)), Total::new(check(false))];
        parts[0].update_batch(&[decimals(vec![big, big, -5])]).unwrap();
        parts[1].update_batch(&[decimals(vec![-big, -big, 2])]).unwrap();
        let mut last = Total::new(check(false));
        for part in &mut parts {
            let state: Vec<ArrayRef> = part.state().unwrap().iter().map(|v| v.to_array().unwrap()).collect();
            last.merge_batch(&state).unwrap();
        }
        // -3 fits; the positive values alone (2 big) do not: refused, as its order matters.
        assert!(last.evaluate().unwrap_err().to_string().contains("in some orders"));
        let mut total = Total::new(check(false));
        let state: Vec<ArrayRef> = parts[1].state().unwrap().iter().map(|v| v.to_array().unwrap()).collect();
        total.merge_batch(&state).unwrap();
        // -2 big + 2 is past the range in every order: NULL without ANSI mode.
        assert_eq!(total.evaluate().unwrap(), ScalarValue::Decimal128(None, 38, 0));
    }
}
