//! Spark's approximate percentiles: `percentile_approx(x, p[, accuracy])` and its other name
//! `approx_percentile`, with `p` a number or an array of them.
//!
//! Spark summarises the values in a Greenwald–Khanna quantile summary (its
//! `QuantileSummaries`) whose relative error is `1 / accuracy` (10,000 by default), and this
//! module keeps the same summary by the same rules: values gather in a buffer of 50,000, are
//! folded into the sorted samples when it fills, samples are compressed when they pass 10,000 or
//! before a partial state is shipped, and two summaries merge by interleaving their samples. A
//! query reads the sample at rank `⌈p·n⌉`; a percentage within the error of 0 or 1 reads the
//! least or greatest value. While the samples are fewer than `1 / (2·error)` nothing is merged
//! away, so on groups that small (below 5,000 values by default) the answer is exact and equal
//! to Spark's whatever the partitioning; above it, both are within the summary's error bound,
//! and which sample each picks depends on how the rows were split, on Spark as here.
//!
//! The answer has the input's type (an ARRAY of it for an array of percentages): the value read
//! as a DOUBLE and converted back as Spark converts it (integers and dates cut, a DECIMAL through
//! `Double.toString` to the column's scale). Text is read as DOUBLE, as Spark coerces it.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for name in ["percentile_approx", "approx_percentile"] {
        ctx.register_udaf(AggregateUDF::from(ApproxPercentile {
            name,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
}

/// Spark's `ApproximatePercentile.DEFAULT_PERCENTILE_ACCURACY`.
const DEFAULT_ACCURACY: i64 = 10_000;
/// `QuantileSummaries.defaultCompressThreshold`.
const COMPRESS_THRESHOLD: usize = 10_000;
/// `QuantileSummaries.defaultHeadSize`.
const HEAD_SIZE: usize = 50_000;

#[derive(Debug, PartialEq, Eq, Hash)]
struct ApproxPercentile {
    name: &'static str,
    signature: Signature,
}

/// The type the values are summarised from: Spark's input types, text read as DOUBLE.
fn value_type(t: &DataType) -> Option<DataType> {
    match t {
        DataType::Utf8 | DataType::Utf8View | DataType::LargeUtf8 | DataType::Null => Some(DataType::Float64),
        DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(..)
        | DataType::Date32
        | DataType::Timestamp(TimeUnit::Microsecond, _) => Some(t.clone()),
        _ => None,
    }
}

impl AggregateUDFImpl for ApproxPercentile {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !(2..=3).contains(&args.len()) {
            return plan_err!("{} is called as {}(x, percentage[, accuracy])", self.name, self.name);
        }
        let Some(t) = value_type(&args[0]) else {
            return plan_err!(
                "{} of {} runs on the Spark backend (it takes numbers, dates and timestamps here)",
                self.name,
                crate::types::spark_type_name(&args[0])
            );
        };
        if args.get(2).is_some_and(|a| !a.is_integer()) {
            return plan_err!("{}: the accuracy must be an integer constant", self.name);
        }
        Ok(match &args[1] {
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) => {
                DataType::List(Arc::new(Field::new_list_field(t, true)))
            }
            p if p.is_numeric() => t,
            p => {
                return plan_err!(
                    "{}: the percentage must be a number, not {}",
                    self.name,
                    crate::types::spark_type_name(p)
                )
            }
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "summary"), DataType::Binary, true))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        // Constants (folded to literals while planning) evaluate without rows.
        let empty = arrow::array::RecordBatch::new_empty(Arc::new(arrow::datatypes::Schema::empty()));
        let constant = |i: usize| match args.exprs.get(i).map(|e| e.evaluate(&empty)) {
            Some(Ok(datafusion::logical_expr::ColumnarValue::Scalar(v))) => Some(v),
            _ => None,
        };
        let Some(percentage) = constant(1) else {
            return plan_err!("{}: the percentage must be a constant", self.name);
        };
        let percentages = crate::functions::aggregate::percentiles::percentages(&percentage)
            .or_else(|why| plan_err!("{}: {why}", self.name))?;
        let accuracy = match args.exprs.len() {
            3 => match constant(2).and_then(|v| v.cast_to(&DataType::Int64).ok()) {
                Some(ScalarValue::Int64(Some(a))) if a > 0 && a <= i64::from(i32::MAX) => a,
                Some(ScalarValue::Int64(Some(a))) => {
                    return plan_err!(
                        "[DATATYPE_MISMATCH.VALUE_OUT_OF_RANGE] {}: the accuracy must be between (0, 2147483647] \
                         (current value = {a})",
                        self.name
                    )
                }
                _ => return plan_err!("{}: the accuracy must be an integer constant", self.name),
            },
            _ => DEFAULT_ACCURACY,
        };
        let out = match args.return_field.data_type() {
            DataType::List(f) => f.data_type().clone(),
            t => t.clone(),
        };
        Ok(Box::new(Approx {
            summary: Summary::new(1.0 / accuracy as f64),
            percentages,
            array: matches!(args.return_field.data_type(), DataType::List(_)),
            out,
        }))
    }
}

/// One Greenwald–Khanna sample: a value, the least rank gap `g` from the previous sample and
/// the rank's uncertainty `delta`.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Stats {
    value: f64,
    g: i64,
    delta: i64,
}

/// Spark's `QuantileSummaries`.
#[derive(Debug, Clone)]
struct Summary {
    relative_error: f64,
    sampled: Vec<Stats>,
    /// Values folded into `sampled` (the head buffer's are not counted yet).
    count: i64,
    head: Vec<f64>,
}

impl Summary {
    fn new(relative_error: f64) -> Self {
        Summary { relative_error, sampled: Vec::new(), count: 0, head: Vec::new() }
    }

    fn insert(&mut self, x: f64) {
        self.head.push(x);
        if self.head.len() >= HEAD_SIZE {
            self.fold_head();
            if self.sampled.len() >= COMPRESS_THRESHOLD {
                self.compress();
            }
        }
    }

    /// Folds the sorted head buffer into the samples (Spark's `withHeadBufferInserted`).
    fn fold_head(&mut self) {
        if self.head.is_empty() {
            return;
        }
        let mut sorted = std::mem::take(&mut self.head);
        // Java's `Double` order: -0.0 before 0.0, NaN last (Rust's total order, once NaN's sign
        // is set aside).
        sorted.sort_by(|a, b| match (a.is_nan(), b.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => a.total_cmp(b),
        });
        let mut current = self.count;
        let mut merged = Vec::with_capacity(self.sampled.len() + sorted.len());
        let mut at = 0;
        let last = sorted.len() - 1;
        for (i, &x) in sorted.iter().enumerate() {
            while at < self.sampled.len() && self.sampled[at].value <= x {
                merged.push(self.sampled[at]);
                at += 1;
            }
            current += 1;
            let delta = if merged.is_empty() || (at == self.sampled.len() && i == last) {
                0
            } else {
                (2.0 * self.relative_error * current as f64).floor() as i64
            };
            merged.push(Stats { value: x, g: 1, delta });
        }
        merged.extend_from_slice(&self.sampled[at..]);
        self.sampled = merged;
        self.count = current;
    }

    fn compress(&mut self) {
        self.fold_head();
        let threshold = 2.0 * self.relative_error * self.count as f64;
        self.sampled = compressed(&self.sampled, threshold);
    }

    /// Merges `other` (both compressed) into this one.
    fn merge(&mut self, other: Summary) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = other;
            return;
        }
        let error = self.relative_error.max(other.relative_error);
        let count = self.count + other.count;
        let extra_self = (2.0 * other.relative_error * other.count as f64).floor() as i64;
        let extra_other = (2.0 * self.relative_error * self.count as f64).floor() as i64;
        let (a, b) = (&self.sampled, &other.sampled);
        let mut merged = Vec::with_capacity(a.len() + b.len());
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].value < b[j].value {
                let extra = if j > 0 { extra_self } else { 0 };
                merged.push(Stats { delta: a[i].delta + extra, ..a[i] });
                i += 1;
            } else {
                let extra = if i > 0 { extra_other } else { 0 };
                merged.push(Stats { delta: b[j].delta + extra, ..b[j] });
                j += 1;
            }
        }
        merged.extend_from_slice(&a[i..]);
        merged.extend_from_slice(&b[j..]);
        self.sampled = compressed(&merged, 2.0 * error * count as f64);
        self.relative_error = error;
        self.count = count;
    }

    /// The value at `quantile` of a compressed summary.
    fn query(&self, quantile: f64) -> Option<f64> {
        let (first, last) = (self.sampled.first()?, self.sampled.last()?);
        if quantile <= self.relative_error {
            return Some(first.value);
        }
        if quantile >= 1.0 - self.relative_error {
            return Some(last.value);
        }
        let rank = (quantile * self.count as f64).ceil() as i64;
        let target_error = self.sampled.iter().map(|s| s.delta + s.g).max().unwrap_or(0) / 2;
        let mut min_rank = 0;
        for s in &self.sampled[..self.sampled.len() - 1] {
            min_rank += s.g;
            let max_rank = min_rank + s.delta;
            if max_rank - target_error <= rank && rank <= min_rank + target_error {
                return Some(s.value);
            }
        }
        Some(last.value)
    }

    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(16 + self.sampled.len() * 24);
        out.extend_from_slice(&self.relative_error.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        for s in &self.sampled {
            out.extend_from_slice(&s.value.to_le_bytes());
            out.extend_from_slice(&s.g.to_le_bytes());
            out.extend_from_slice(&s.delta.to_le_bytes());
        }
        out
    }

    fn from_bytes(b: &[u8]) -> Option<Summary> {
        let word = |i: usize| b.get(i * 8..i * 8 + 8).and_then(|w| <[u8; 8]>::try_from(w).ok());
        if b.len() < 16 || !(b.len() - 16).is_multiple_of(24) {
            return None;
        }
        let relative_error = f64::from_le_bytes(word(0)?);
        let count = i64::from_le_bytes(word(1)?);
        let sampled = (0..(b.len() - 16) / 24)
            .map(|k| {
                let at = 2 + 3 * k;
                Some(Stats {
                    value: f64::from_le_bytes(word(at)?),
                    g: i64::from_le_bytes(word(at + 1)?),
                    delta: i64::from_le_bytes(word(at + 2)?),
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Summary { relative_error, sampled, count, head: Vec::new() })
    }
}

/// Spark's `compressImmut`: from the greatest sample down, a sample merges into the one above
/// it while their span stays under `threshold`; the least and greatest are always kept.
fn compressed(samples: &[Stats], threshold: f64) -> Vec<Stats> {
    let Some(&last) = samples.last() else { return Vec::new() };
    // Built from the greatest down, then turned around.
    let mut out = Vec::with_capacity(samples.len());
    let mut head = last;
    for s in samples.iter().take(samples.len() - 1).skip(1).rev() {
        if ((s.g + head.g + head.delta) as f64) < threshold {
            head.g += s.g;
        } else {
            out.push(head);
            head = *s;
        }
    }
    out.push(head);
    if samples.len() > 1 && samples[0].value <= head.value {
        out.push(samples[0]);
    }
    out.reverse();
    out
}

#[derive(Debug)]
struct Approx {
    summary: Summary,
    percentages: Option<Vec<f64>>,
    array: bool,
    /// The type of each answer.
    out: DataType,
}

/// `v` (a DOUBLE from a summary) as a value of `t`, as Spark converts it back.
fn typed(v: f64, t: &DataType) -> Result<ScalarValue> {
    Ok(match t {
        // Java's `toLong` and `toInt` saturate; a narrower integer then keeps the low bits.
        DataType::Int8 => ScalarValue::Int8(Some(v as i32 as i8)),
        DataType::Int16 => ScalarValue::Int16(Some(v as i32 as i16)),
        DataType::Int32 => ScalarValue::Int32(Some(v as i32)),
        DataType::Int64 => ScalarValue::Int64(Some(v as i64)),
        DataType::Float32 => ScalarValue::Float32(Some(v as f32)),
        DataType::Float64 => ScalarValue::Float64(Some(v)),
        DataType::Date32 => ScalarValue::Date32(Some(v as i32)),
        DataType::Timestamp(TimeUnit::Microsecond, zone) => {
            ScalarValue::TimestampMicrosecond(Some(v as i64), zone.clone())
        }
        DataType::Decimal128(p, s) => {
            ScalarValue::Decimal128(crate::functions::decimal::of_double(v).and_then(|n| n.fit(*p, *s)), *p, *s)
        }
        other => return exec_err!("percentile_approx: no answer of type {other}"),
    })
}

impl Accumulator for Approx {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let v = &values[0];
        let as_number = match v.data_type() {
            DataType::Date32 => arrow::compute::cast(v, &DataType::Int32)?,
            DataType::Timestamp(..) => arrow::compute::cast(v, &DataType::Int64)?,
            _ => Arc::clone(v),
        };
        let doubles = arrow::compute::cast(&as_number, &DataType::Float64)?;
        for x in doubles.as_primitive::<Float64Type>().iter().flatten() {
            self.summary.insert(x);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.summary.compress();
        for b in states[0].as_binary::<i32>().iter().flatten() {
            let Some(other) = Summary::from_bytes(b) else {
                return exec_err!("percentile_approx: a partial summary does not read");
            };
            self.summary.merge(other);
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.summary.compress();
        Ok(vec![ScalarValue::Binary(Some(self.summary.to_bytes()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        self.summary.compress();
        let empty = self.summary.count == 0;
        let Some(percentages) = self.percentages.as_ref().filter(|_| !empty) else {
            return match self.array {
                true => {
                    Ok(ScalarValue::try_from(&DataType::List(Arc::new(Field::new_list_field(self.out.clone(), true))))?)
                }
                false => Ok(ScalarValue::try_from(&self.out)?),
            };
        };
        let answers = percentages
            .iter()
            .map(|p| match self.summary.query(*p) {
                Some(v) => typed(v, &self.out),
                None => Ok(ScalarValue::try_from(&self.out)?),
            })
            .collect::<Result<Vec<_>>>()?;
        if !self.array {
            return Ok(answers.into_iter().next().unwrap_or(ScalarValue::try_from(&self.out)?));
        }
        Ok(ScalarValue::List(ScalarValue::new_list_nullable(&answers, &self.out)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.summary.sampled.capacity() * 24 + self.summary.head.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary_of(values: &[f64], error: f64) -> Summary {
        let mut s = Summary::new(error);
        values.iter().for_each(|v| s.insert(*v));
        s.compress();
        s
    }

    #[test]
    fn small_groups_read_the_exact_rank() {
        // Spark 4.1.4: percentile_approx(col, 0.5) of 0, 6, 7, 9, 10 is 7; of 0, 6, 7, 9 it is 6.
        assert_eq!(summary_of(&[10.0, 0.0, 7.0, 6.0, 9.0], 1e-4).query(0.5), Some(7.0));
        assert_eq!(summary_of(&[0.0, 6.0, 7.0, 9.0], 1e-4).query(0.5), Some(6.0));
        assert_eq!(summary_of(&[0.5, 6.25, 7.0, 9.5], 1e-4).query(0.3), Some(6.25));
        assert_eq!(summary_of(&[0.5, 6.25, 7.0, 9.5], 1e-4).query(0.0), Some(0.5));
    }

    #[test]
    fn merged_summaries_answer_as_one() {
        let mut a = summary_of(&[1.0, 5.0, 9.0], 1e-4);
        a.merge(Summary::from_bytes(&summary_of(&[2.0, 3.0, 8.0], 1e-4).to_bytes()).unwrap());
        assert_eq!(a.count, 6);
        assert_eq!(a.query(0.5), Some(3.0));
        assert_eq!(a.query(1.0), Some(9.0));
    }

    #[test]
    fn large_groups_stay_within_the_error_bound() {
        let values: Vec<f64> = (0..200_000).map(|i| ((i * 7919) % 200_000) as f64).collect();
        let s = summary_of(&values, 0.01);
        assert!(s.sampled.len() < 2_000, "{} samples", s.sampled.len());
        for q in [0.1, 0.5, 0.9] {
            let v = s.query(q).unwrap();
            assert!((v / 200_000.0 - q).abs() <= 0.01 + 1e-9, "{q}: {v}");
        }
    }
}
