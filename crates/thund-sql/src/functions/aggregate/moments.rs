//! Spark's central-moment aggregates: `var_pop`, `var_samp`, `stddev_pop`, `stddev_samp`
//! (`stddev`), `skewness` and `kurtosis` (DataFusion has no skewness nor kurtosis, and its
//! variances answer otherwise at the edges).
//!
//! Each keeps Spark's buffer, the count and the central moments (`n`, mean, `m2`, `m3`, `m4`,
//! as DOUBLEs; the variances only up to `m2`), and updates and merges it with Spark's own
//! formulas (`CentralMomentAgg`, after Meng's one-pass updates), in the same order of
//! operations: a DOUBLE's last digits depend on that order, and the answer is to be Spark's to
//! the digit. The edges follow from the formulas, as on Spark: one infinite value makes
//! `m2` NaN (DataFusion's variance answered 0.0), and values near the largest DOUBLE make it
//! infinite or NaN as Spark's do. NULLs are skipped.
//!
//! - var_pop = m2 / n, var_samp = m2 / (n − 1), the stddevs their square roots: NULL for no
//!   values, and the sample ones NULL for one value (Spark 4's `statisticalAggregate` default);
//! - skewness = √n · m3 / √(m2³), kurtosis = n · m4 / m2² − 3: NULL when `m2` is 0.
//!
//! One case has no single answer on Spark, and is refused: finite values so large that their
//! moments overflow a DOUBLE (beyond about 1e154 for the variances). Spark's final aggregate
//! merges the partial buffers of its partitions into an empty one, and whether such a merge
//! makes `m2` NaN (∞ · 0) or infinite depends on how the rows were split: the same values
//! answered Infinity in one query and NaN in another on Spark 4.1.4. Any infinite or NaN value
//! makes every moment NaN on every split, and so do values of one sign that are all that large
//! (`merged_answer`); those are answered.
//!
//! In a window frame that slides (rows leave it), Spark recomputes the frame's buffer from its
//! first row for every row, so the sliding accumulator here keeps the frame's values and does
//! the same, rather than retracting (which changes the last digits). `DISTINCT` keeps the
//! distinct values (−0.0 as 0.0, as Spark's grouping normalizes them) and feeds them in
//! ascending order; Spark's order there is its hash table's, so only the last digits may
//! differ.

use std::collections::{HashSet, VecDeque};
use std::sync::Arc;

use arrow::array::{ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::columnar::{doubles, numeric_argument};

pub(crate) fn register(ctx: &SessionContext) {
    for moment in
        [Moment::VarPop, Moment::VarSamp, Moment::StddevPop, Moment::StddevSamp, Moment::Skewness, Moment::Kurtosis]
    {
        let aliases: &[&str] = match moment {
            Moment::StddevSamp => &["stddev"],
            _ => &[],
        };
        ctx.register_udaf(AggregateUDF::from(CentralMoment {
            moment,
            aliases: aliases.iter().map(|a| a.to_string()).collect(),
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Moment {
    VarPop,
    VarSamp,
    StddevPop,
    StddevSamp,
    Skewness,
    Kurtosis,
}

impl Moment {
    /// The highest central moment the answer needs (Spark's `momentOrder`).
    fn order(self) -> u8 {
        match self {
            Moment::VarPop | Moment::VarSamp | Moment::StddevPop | Moment::StddevSamp => 2,
            Moment::Skewness => 3,
            Moment::Kurtosis => 4,
        }
    }

    /// The answer from a buffer (Spark's `evaluateExpression`), its NaN the positive one: the
    /// NaN of `∞ − ∞` has its sign bit set, and Arrow's comparisons order floating point
    /// totally, so it would be less than every number (Spark's NaN is greater).
    fn answer(self, b: &Buffer) -> Option<f64> {
        self.formula(b).map(|v| if v.is_nan() { f64::NAN } else { v })
    }

    fn formula(self, b: &Buffer) -> Option<f64> {
        let Buffer { n, m2, m3, m4, .. } = *b;
        if n == 0.0 {
            return None;
        }
        match self {
            Moment::VarPop => Some(m2 / n),
            Moment::StddevPop => Some((m2 / n).sqrt()),
            Moment::VarSamp | Moment::StddevSamp if n == 1.0 => None,
            Moment::VarSamp => Some(m2 / (n - 1.0)),
            Moment::StddevSamp => Some((m2 / (n - 1.0)).sqrt()),
            Moment::Skewness | Moment::Kurtosis if m2 == 0.0 => None,
            Moment::Skewness => Some(n.sqrt() * m3 / (m2 * m2 * m2).sqrt()),
            Moment::Kurtosis => Some(n * m4 / (m2 * m2) - 3.0),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CentralMoment {
    moment: Moment,
    aliases: Vec<String>,
    signature: Signature,
}

/// Spark casts a number to a DOUBLE for these; anything else (a string Spark would cast) is
/// left to Spark.
impl CentralMoment {
    fn name_of(moment: Moment) -> &'static str {
        match moment {
            Moment::VarPop => "var_pop",
            Moment::VarSamp => "var_samp",
            Moment::StddevPop => "stddev_pop",
            Moment::StddevSamp => "stddev_samp",
            Moment::Skewness => "skewness",
            Moment::Kurtosis => "kurtosis",
        }
    }
}

impl AggregateUDFImpl for CentralMoment {
    fn name(&self) -> &str {
        Self::name_of(self.moment)
    }

    /// `stddev` is Spark's `stddev_samp`.
    fn aliases(&self) -> &[String] {
        &self.aliases
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        numeric_argument(self.name(), &args[0])?;
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        if args.is_distinct {
            let item = Arc::new(Field::new_list_field(DataType::Float64, true));
            return Ok(vec![Arc::new(Field::new(
                format_state_name(args.name, "distinct"),
                DataType::List(item),
                true,
            ))]);
        }
        Ok(["n", "avg", "m2", "m3", "m4", "nonfinite", "positives", "negatives", "min_abs"]
            .iter()
            .map(|f| Arc::new(Field::new(format_state_name(args.name, f), DataType::Float64, false)))
            .collect())
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return Ok(Box::new(DistinctMoments { moment: self.moment, values: HashSet::new() }));
        }
        Ok(Box::new(Moments { moment: self.moment, buffer: Buffer::default(), extent: Extent::default() }))
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return plan_err!("{}(DISTINCT …) in a sliding window frame runs on the Spark backend", self.name());
        }
        Ok(Box::new(SlidingMoments { moment: self.moment, frame: VecDeque::new() }))
    }
}

/// Spark's aggregation buffer.
#[derive(Debug, Default, Clone, Copy)]
struct Buffer {
    n: f64,
    avg: f64,
    m2: f64,
    m3: f64,
    m4: f64,
}

impl Buffer {
    /// One value, as Spark's `updateExpressions`, up to the moment of `order`.
    fn update(&mut self, x: f64, order: u8) {
        let n = self.n + 1.0;
        let delta = x - self.avg;
        let delta_n = delta / n;
        let avg = self.avg + delta_n;
        let m2 = self.m2 + delta * (delta - delta_n);
        if order < 3 {
            *self = Buffer { n, avg, m2, ..*self };
            return;
        }
        let delta2 = delta * delta;
        let delta_n2 = delta_n * delta_n;
        let m3 = self.m3 - 3.0 * delta_n * m2 + delta * (delta2 - delta_n2);
        let m4 = self.m4 - 4.0 * delta_n * m3 - 6.0 * delta_n2 * m2 + delta * (delta * delta2 - delta_n * delta_n2);
        *self = Buffer { n, avg, m2, m3, m4 };
    }

    /// Another buffer, as Spark's `mergeExpressions` (`self` is the left one), up to the moment
    /// of `order`.
    fn merge(&mut self, r: Buffer, order: u8) {
        let (n1, n2) = (self.n, r.n);
        let n = n1 + n2;
        let delta = r.avg - self.avg;
        let delta_n = if n == 0.0 { 0.0 } else { delta / n };
        let avg = self.avg + delta_n * n2;
        let m2 = self.m2 + r.m2 + delta * delta_n * n1 * n2;
        if order < 3 {
            *self = Buffer { n, avg, m2, ..*self };
            return;
        }
        let m3 = self.m3
            + r.m3
            + delta_n * delta_n * delta * n1 * n2 * (n1 - n2)
            + 3.0 * delta_n * (n1 * r.m2 - n2 * self.m2);
        let m4 = self.m4
            + r.m4
            + delta_n * delta_n * delta_n * delta * n1 * n2 * (n1 * n1 - n1 * n2 + n2 * n2)
            + 6.0 * delta_n * delta_n * (n1 * n1 * r.m2 + n2 * n2 * self.m2)
            + 4.0 * delta_n * (n1 * r.m3 - n2 * self.m3);
        *self = Buffer { n, avg, m2, m3, m4 };
    }
}

#[derive(Debug)]
struct Moments {
    moment: Moment,
    buffer: Buffer,
    extent: Extent,
}

/// What tells whether Spark's answer depends on how it splits the rows (see the opening
/// comment): how many values were infinite or NaN, positive, negative, and the least magnitude.
#[derive(Debug, Clone, Copy)]
struct Extent {
    nonfinite: f64,
    positives: f64,
    negatives: f64,
    min_abs: f64,
}

impl Default for Extent {
    fn default() -> Self {
        Extent { nonfinite: 0.0, positives: 0.0, negatives: 0.0, min_abs: f64::INFINITY }
    }
}

impl Extent {
    fn add(&mut self, x: f64) {
        self.nonfinite += f64::from(u8::from(!x.is_finite()));
        self.positives += f64::from(u8::from(x > 0.0));
        self.negatives += f64::from(u8::from(x < 0.0));
        self.min_abs = self.min_abs.min(x.abs());
    }

    fn merge(&mut self, o: Extent) {
        self.nonfinite += o.nonfinite;
        self.positives += o.positives;
        self.negatives += o.negatives;
        self.min_abs = self.min_abs.min(o.min_abs);
    }
}

/// The answer of a buffer that Spark's final aggregate merged, or the refusal where its answer
/// depends on its partitions (see the opening comment).
///
/// Spark's final aggregate merges each partition's buffer into an empty one, whose first merge
/// multiplies `avg² / n` by zero: where that product is infinite the answer is NaN. When every
/// value has one sign and the least of them already makes it infinite, every partition's
/// buffer does, and Spark's answer is NaN however the rows were split.
fn merged_answer(moment: Moment, b: &Buffer, extent: Extent) -> Result<ScalarValue> {
    let order = moment.order();
    let moments = [b.m2, b.m3, b.m4];
    let overflows = moments[..usize::from(order - 1)].iter().any(|m| !m.is_finite())
        || !(b.avg.abs().powi(i32::from(order)) * b.n).is_finite();
    if extent.nonfinite == 0.0 && overflows {
        let one_sign = extent.positives == b.n || extent.negatives == b.n;
        if one_sign && !(extent.min_abs * (extent.min_abs / b.n)).is_finite() {
            return Ok(ScalarValue::Float64(Some(f64::NAN)));
        }
        return exec_err!(
            "{}: the values are too large for a DOUBLE's moments (beyond about 1e{}); Spark's answer, \
             NaN or Infinity, depends on how it splits the rows into partitions",
            CentralMoment::name_of(moment),
            308 / usize::from(order)
        );
    }
    Ok(ScalarValue::Float64(moment.answer(b)))
}

impl Accumulator for Moments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let order = self.moment.order();
        for x in doubles(&values[0])?.iter().flatten() {
            self.extent.add(x);
            self.buffer.update(x, order);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let order = self.moment.order();
        let columns: Vec<Float64Array> = states.iter().map(doubles).collect::<Result<_>>()?;
        for i in 0..columns[0].len() {
            let at = |c: usize| columns[c].value(i);
            self.buffer.merge(Buffer { n: at(0), avg: at(1), m2: at(2), m3: at(3), m4: at(4) }, order);
            self.extent.merge(Extent { nonfinite: at(5), positives: at(6), negatives: at(7), min_abs: at(8) });
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let b = self.buffer;
        let e = self.extent;
        Ok([b.n, b.avg, b.m2, b.m3, b.m4, e.nonfinite, e.positives, e.negatives, e.min_abs]
            .into_iter()
            .map(|v| ScalarValue::Float64(Some(v)))
            .collect())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        merged_answer(self.moment, &self.buffer, self.extent)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// A sliding window frame's accumulator: the frame's values, the buffer recomputed from the
/// first of them for each answer, as Spark's sliding frame does.
#[derive(Debug)]
struct SlidingMoments {
    moment: Moment,
    frame: VecDeque<f64>,
}

impl Accumulator for SlidingMoments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.frame.extend(doubles(&values[0])?.iter().flatten());
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        // Rows leave a frame from its start, in the order they came in; NULLs were never kept.
        for _ in doubles(&values[0])?.iter().flatten() {
            self.frame.pop_front();
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, _states: &[ArrayRef]) -> Result<()> {
        plan_err!("{:?} of a sliding window frame has no partial states to merge", self.moment)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        plan_err!("{:?} of a sliding window frame has no partial state", self.moment)
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let order = self.moment.order();
        let mut b = Buffer::default();
        self.frame.iter().for_each(|x| b.update(*x, order));
        Ok(ScalarValue::Float64(self.moment.answer(&b)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.frame.capacity() * std::mem::size_of::<f64>()
    }
}

/// `DISTINCT`: the distinct values (by their bits, −0.0 as 0.0 and every NaN as one), fed in
/// ascending order when the answer is asked for.
#[derive(Debug)]
struct DistinctMoments {
    moment: Moment,
    values: HashSet<u64>,
}

impl DistinctMoments {
    fn add(&mut self, values: &Float64Array) {
        for x in values.iter().flatten() {
            let x = if x == 0.0 {
                0.0
            } else if x.is_nan() {
                f64::NAN
            } else {
                x
            };
            self.values.insert(x.to_bits());
        }
    }
}

impl Accumulator for DistinctMoments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&doubles(&values[0])?);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for list in lists.iter().flatten() {
            self.add(&doubles(&list)?);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values: Float64Array = self.values.iter().map(|b| Some(f64::from_bits(*b))).collect();
        Ok(vec![ScalarValue::List(Arc::new(arrow::array::ListArray::new(
            Arc::new(Field::new_list_field(DataType::Float64, true)),
            arrow::buffer::OffsetBuffer::from_lengths([values.len()]),
            Arc::new(values),
            None,
        )))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let mut values: Vec<f64> = self.values.iter().map(|b| f64::from_bits(*b)).collect();
        values.sort_by(f64::total_cmp);
        let order = self.moment.order();
        let mut b = Buffer::default();
        values.iter().for_each(|x| b.update(*x, order));
        let mut extent = Extent::default();
        values.iter().for_each(|x| extent.add(*x));
        merged_answer(self.moment, &b, extent)
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.capacity() * std::mem::size_of::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[f64]) -> Buffer {
        let mut b = Buffer::default();
        values.iter().for_each(|v| b.update(*v, 4));
        b
    }

    #[test]
    fn merging_partial_buffers_gives_the_moments_of_all_values() {
        let all = moments(&[1.0, 10.0, 100.0, 10.0, 1.0]);
        let mut merged = Buffer::default();
        merged.merge(moments(&[1.0, 10.0]), 4);
        merged.merge(moments(&[100.0, 10.0, 1.0]), 4);
        for (a, b) in [(all.n, merged.n), (all.avg, merged.avg), (all.m2, merged.m2), (all.m4, merged.m4)] {
            assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} vs {b}");
        }
    }

    fn answer(moment: Moment, values: &[f64]) -> Option<f64> {
        let mut b = Buffer::default();
        values.iter().for_each(|v| b.update(*v, moment.order()));
        moment.answer(&b)
    }

    #[test]
    fn the_variances_answer_sparks_edges() {
        // Spark 4.1.4: one infinite value is NaN for the population moments (DataFusion's
        // variance said 0.0) and NULL for the sample ones; one value's sample variance is NULL.
        assert!(answer(Moment::VarPop, &[f64::INFINITY]).is_some_and(f64::is_nan));
        // Positive, so that it compares greater than every number, as Spark's NaN.
        assert!(answer(Moment::VarPop, &[f64::INFINITY]).is_some_and(f64::is_sign_positive));
        assert!(answer(Moment::StddevPop, &[f64::INFINITY]).is_some_and(f64::is_nan));
        assert_eq!(answer(Moment::VarSamp, &[f64::INFINITY]), None);
        assert_eq!(answer(Moment::StddevSamp, &[7.0]), None);
        assert_eq!(answer(Moment::VarPop, &[7.0]), Some(0.0));
        assert_eq!(answer(Moment::VarPop, &[]), None);
        // Spark 4.1.4: var_samp of 1.0, 2.0, 4.0 is 2.333333333333333, var_pop 1.5555555555555554.
        assert_eq!(answer(Moment::VarSamp, &[1.0, 2.0, 4.0]), Some(2.333333333333333));
        assert_eq!(answer(Moment::VarPop, &[1.0, 2.0, 4.0]), Some(1.5555555555555554));
    }

    #[test]
    fn moments_that_overflow_are_refused_unless_a_value_is_not_finite() {
        // Spark 4.1.4 answers NaN for 1e300, -1e300, 1e300 and Infinity for values holding one
        // 1e300 among small ones, by how its partitions' buffers merge: refused here.
        let accumulate = |values: &[f64]| {
            let mut m = Moments { moment: Moment::VarSamp, buffer: Buffer::default(), extent: Extent::default() };
            m.update_batch(&[Arc::new(Float64Array::from(values.to_vec())) as ArrayRef]).unwrap();
            m.evaluate()
        };
        let refused = accumulate(&[1e300, -1e300, 1e300]).unwrap_err().to_string();
        assert!(refused.contains("depends on how it splits the rows"), "{refused}");
        assert!(accumulate(&[7.75, 1e300, 3.5]).is_err());
        let large = accumulate(&[1e30, 2e30]).unwrap();
        assert!(matches!(large, ScalarValue::Float64(Some(v)) if (v - 5e59).abs() <= 1e-15 * 5e59), "{large:?}");
        let nan = accumulate(&[1e300, f64::NAN]).unwrap();
        assert!(matches!(nan, ScalarValue::Float64(Some(v)) if v.is_nan()), "{nan:?}");
        // Values of one sign whose squares all overflow: NaN on every split of Spark's (Spark
        // 4.1.4: stddev_pop of 1e300 repeated is NaN).
        let same = accumulate(&[1e300, 1e300, 2e300]).unwrap();
        assert!(matches!(same, ScalarValue::Float64(Some(v)) if v.is_nan()), "{same:?}");
    }

    #[test]
    fn a_sliding_frame_answers_as_its_values_recomputed() {
        let mut s = SlidingMoments { moment: Moment::VarSamp, frame: VecDeque::new() };
        let batch = |v: &[f64]| -> Vec<ArrayRef> { vec![Arc::new(Float64Array::from(v.to_vec()))] };
        s.update_batch(&batch(&[1.0, 5.0, 3.0])).unwrap();
        s.retract_batch(&batch(&[1.0])).unwrap();
        s.update_batch(&batch(&[10.0])).unwrap();
        assert_eq!(s.evaluate().unwrap(), ScalarValue::Float64(answer(Moment::VarSamp, &[5.0, 3.0, 10.0])));
    }

    #[test]
    fn an_empty_buffer_merged_changes_nothing() {
        let mut b = moments(&[-10.0, -20.0, 100.0, 1000.0]);
        let before = b;
        b.merge(Buffer::default(), 4);
        assert_eq!((b.n, b.avg, b.m2, b.m3, b.m4), (before.n, before.avg, before.m2, before.m3, before.m4));
    }
}
