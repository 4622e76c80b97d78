//! Spark's `skewness(x)` and `kurtosis(x)` (DataFusion has neither).
//!
//! Both aggregates keep Spark's buffer, the count and the central moments (`n`, mean, `m2`,
//! `m3`, `m4`, as DOUBLEs), and update and merge it with Spark's own formulas
//! (`CentralMomentAgg`, after Meng's one-pass updates), in the same order of operations: a
//! DOUBLE's last digits depend on that order, and the answer is to be Spark's to the digit.
//! NULLs are skipped; a group with no values, or whose values are all equal (`m2` = 0), gives
//! NULL, as Spark 4's does.
//!
//! - skewness = √n · m3 / √(m2³)
//! - kurtosis = n · m4 / m2² − 3

use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::columnar::{doubles, numeric_argument};

pub(crate) fn register(ctx: &SessionContext) {
    for moment in [Moment::Skewness, Moment::Kurtosis] {
        ctx.register_udaf(AggregateUDF::from(CentralMoment {
            moment,
            signature: Signature::any(1, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Moment {
    Skewness,
    Kurtosis,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct CentralMoment {
    moment: Moment,
    signature: Signature,
}

/// Spark casts a number to a DOUBLE for these; anything else (a string Spark would cast) is
/// left to Spark.
impl AggregateUDFImpl for CentralMoment {
    fn name(&self) -> &str {
        match self.moment {
            Moment::Skewness => "skewness",
            Moment::Kurtosis => "kurtosis",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        numeric_argument(self.name(), &args[0])?;
        Ok(DataType::Float64)
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(["n", "avg", "m2", "m3", "m4"]
            .iter()
            .map(|f| Arc::new(Field::new(format_state_name(args.name, f), DataType::Float64, false)))
            .collect())
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return plan_err!("{}(DISTINCT …) runs on the Spark backend", self.name());
        }
        Ok(Box::new(Moments { moment: self.moment, buffer: Buffer::default() }))
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
    /// One value, as Spark's `updateExpressions`.
    fn update(&mut self, x: f64) {
        let n = self.n + 1.0;
        let delta = x - self.avg;
        let delta_n = delta / n;
        let avg = self.avg + delta_n;
        let m2 = self.m2 + delta * (delta - delta_n);
        let delta2 = delta * delta;
        let delta_n2 = delta_n * delta_n;
        let m3 = self.m3 - 3.0 * delta_n * m2 + delta * (delta2 - delta_n2);
        let m4 = self.m4 - 4.0 * delta_n * m3 - 6.0 * delta_n2 * m2 + delta * (delta * delta2 - delta_n * delta_n2);
        *self = Buffer { n, avg, m2, m3, m4 };
    }

    /// Another buffer, as Spark's `mergeExpressions` (`self` is the left one).
    fn merge(&mut self, r: Buffer) {
        let (n1, n2) = (self.n, r.n);
        let n = n1 + n2;
        let delta = r.avg - self.avg;
        let delta_n = if n == 0.0 { 0.0 } else { delta / n };
        let avg = self.avg + delta_n * n2;
        let m2 = self.m2 + r.m2 + delta * delta_n * n1 * n2;
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
}

impl Accumulator for Moments {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for x in doubles(&values[0])?.iter().flatten() {
            self.buffer.update(x);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let columns: Vec<Float64Array> = states.iter().map(doubles).collect::<Result<_>>()?;
        for i in 0..columns[0].len() {
            let at = |c: usize| columns[c].value(i);
            self.buffer.merge(Buffer { n: at(0), avg: at(1), m2: at(2), m3: at(3), m4: at(4) });
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let b = self.buffer;
        Ok([b.n, b.avg, b.m2, b.m3, b.m4].into_iter().map(|v| ScalarValue::Float64(Some(v))).collect())
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let Buffer { n, m2, m3, m4, .. } = self.buffer;
        if n == 0.0 || m2 == 0.0 {
            return Ok(ScalarValue::Float64(None));
        }
        Ok(ScalarValue::Float64(Some(match self.moment {
            Moment::Skewness => n.sqrt() * m3 / (m2 * m2 * m2).sqrt(),
            Moment::Kurtosis => n * m4 / (m2 * m2) - 3.0,
        })))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moments(values: &[f64]) -> Buffer {
        let mut b = Buffer::default();
        values.iter().for_each(|v| b.update(*v));
        b
    }

    #[test]
    fn merging_partial_buffers_gives_the_moments_of_all_values() {
        let all = moments(&[1.0, 10.0, 100.0, 10.0, 1.0]);
        let mut merged = Buffer::default();
        merged.merge(moments(&[1.0, 10.0]));
        merged.merge(moments(&[100.0, 10.0, 1.0]));
        for (a, b) in [(all.n, merged.n), (all.avg, merged.avg), (all.m2, merged.m2), (all.m4, merged.m4)] {
            assert!((a - b).abs() <= 1e-9 * a.abs().max(1.0), "{a} vs {b}");
        }
    }

    #[test]
    fn an_empty_buffer_merged_changes_nothing() {
        let mut b = moments(&[-10.0, -20.0, 100.0, 1000.0]);
        let before = b;
        b.merge(Buffer::default());
        assert_eq!((b.n, b.avg, b.m2, b.m3, b.m4), (before.n, before.avg, before.m2, before.m3, before.m4));
    }
}
