//! Spark's exact percentiles: `percentile(x, p)` with `p` a number or an array of them, and
//! `percentile_disc(p) WITHIN GROUP (ORDER BY x [DESC])`.
//!
//! Spark's `Percentile` keeps every value and, for a percentage `p` of `n` values sorted, reads
//! the position `(n - 1)·p`: where it falls between two values, `percentile` interpolates
//! linearly and `percentile_disc` takes the lower one (Spark's rule, not the SQL standard's
//! cumulative distribution). Both answer DOUBLEs (an ARRAY<DOUBLE> for an array of
//! percentages); NULLs are skipped and a group without values gives NULL. A percentage must be a
//! constant between 0 and 1, checked while planning, as Spark checks it. (`percentile_cont` is
//! DataFusion's, which agrees.)

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array, ListArray};
use arrow::datatypes::{DataType, Field, FieldRef, Float64Type};
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    for discrete in [false, true] {
        ctx.register_udaf(AggregateUDF::from(Percentile {
            discrete,
            signature: Signature::any(2, Volatility::Immutable),
        }));
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Percentile {
    discrete: bool,
    signature: Signature,
}

fn list_of_doubles() -> DataType {
    DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true)))
}

/// The percentages of a constant: one, or an array of them (`None` where the array is NULL).
pub(crate) fn percentages(value: &ScalarValue) -> std::result::Result<Option<Vec<f64>>, String> {
    let one = |v: &ScalarValue| -> std::result::Result<f64, String> {
        let p = v.cast_to(&DataType::Float64).ok().and_then(|d| match d {
            ScalarValue::Float64(Some(p)) => Some(p),
            _ => None,
        });
        match p {
            Some(p) if (0.0..=1.0).contains(&p) => Ok(p),
            Some(p) => Err(format!("the percentage must be between 0.0 and 1.0, not {p}")),
            None => Err(format!("the percentage must be a constant number, not {v}")),
        }
    };
    match value {
        ScalarValue::List(list) if list.is_null(0) => Ok(None),
        ScalarValue::List(list) => {
            let values = list.value(0);
            (0..values.len())
                .map(|i| one(&ScalarValue::try_from_array(&values, i).map_err(|e| e.to_string())?))
                .collect::<std::result::Result<Vec<_>, _>>()
                .map(Some)
        }
        v => one(v).map(|p| Some(vec![p])),
    }
}

impl AggregateUDFImpl for Percentile {
    fn name(&self) -> &str {
        if self.discrete {
            "percentile_disc"
        } else {
            "percentile"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !(args[0].is_numeric() || args[0] == DataType::Null) {
            return plan_err!(
                "{} of {} runs on the Spark backend (it takes numbers here)",
                self.name(),
                crate::types::spark_type_name(&args[0])
            );
        }
        Ok(match &args[1] {
            DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..) if !self.discrete => {
                list_of_doubles()
            }
            t if t.is_numeric() || t == &DataType::Null => DataType::Float64,
            t => {
                return plan_err!(
                    "{}: the percentage must be a number, not {}",
                    self.name(),
                    crate::types::spark_type_name(t)
                )
            }
        })
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "values"), list_of_doubles(), true))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        // A constant (folded to a literal while planning) evaluates without rows.
        let empty = arrow::array::RecordBatch::new_empty(Arc::new(arrow::datatypes::Schema::empty()));
        let constant = match args.exprs.get(1).map(|e| e.evaluate(&empty)) {
            Some(Ok(datafusion::logical_expr::ColumnarValue::Scalar(v))) => v,
            _ => return plan_err!("{}: the percentage must be a constant", self.name()),
        };
        let percentages = match percentages(&constant) {
            Ok(p) => p,
            Err(why) => return plan_err!("{}: {why}", self.name()),
        };
        let descending = args.order_bys.first().is_some_and(|o| o.options.descending);
        Ok(Box::new(Values {
            discrete: self.discrete,
            array: matches!(args.return_field.data_type(), DataType::List(_)),
            percentages,
            descending,
            values: Vec::new(),
        }))
    }

    fn supports_within_group_clause(&self) -> bool {
        self.discrete
    }
}

#[derive(Debug)]
struct Values {
    discrete: bool,
    /// Whether the answer is an array (the percentages were one).
    array: bool,
    percentages: Option<Vec<f64>>,
    /// `ORDER BY x DESC`: the values read from the greatest.
    descending: bool,
    values: Vec<f64>,
}

impl Values {
    fn add(&mut self, values: &ArrayRef) -> Result<()> {
        let doubles = arrow::compute::cast(values, &DataType::Float64)?;
        self.values.extend(doubles.as_primitive::<Float64Type>().iter().flatten());
        Ok(())
    }

    /// Spark's `getPercentile` over the sorted values.
    fn at(&self, sorted: &[f64], p: f64) -> f64 {
        let position = (sorted.len() - 1) as f64 * p;
        let (lower, higher) = (position.floor(), position.ceil());
        let (low, high) = (sorted[lower as usize], sorted[higher as usize]);
        if lower == higher || low == high || self.discrete {
            return low;
        }
        (higher - position) * low + (position - lower) * high
    }
}

impl Accumulator for Values {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.add(&values[0])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let lists = states[0].as_list::<i32>();
        for list in lists.iter().flatten() {
            self.add(&list)?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let values: ArrayRef = Arc::new(Float64Array::from(std::mem::take(&mut self.values)));
        let list = ListArray::new(
            Arc::new(Field::new_list_field(DataType::Float64, true)),
            arrow::buffer::OffsetBuffer::from_lengths([values.len()]),
            values,
            None,
        );
        Ok(vec![ScalarValue::List(Arc::new(list))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let null = || -> Result<ScalarValue> {
            if self.array {
                ScalarValue::try_from(&list_of_doubles())
            } else {
                Ok(ScalarValue::Float64(None))
            }
        };
        let Some(percentages) = self.percentages.clone() else { return null() };
        if self.values.is_empty() {
            return null();
        }
        let mut sorted = self.values.clone();
        sorted.sort_by(f64::total_cmp);
        if self.descending {
            sorted.reverse();
        }
        let answers: Vec<f64> = percentages.iter().map(|p| self.at(&sorted, *p)).collect();
        if !self.array {
            return Ok(ScalarValue::Float64(answers.first().copied()));
        }
        Ok(ScalarValue::List(Arc::new(ListArray::from_iter_primitive::<Float64Type, _, _>([Some(
            answers.into_iter().map(Some),
        )]))))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.values.capacity() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(discrete: bool, v: &[f64]) -> Values {
        Values { discrete, array: false, percentages: None, descending: false, values: v.to_vec() }
    }

    #[test]
    fn percentiles_read_sparks_position() {
        // Spark 4.1.4: percentile(col, array(0.25, 0.75)) of 0 and 10 is [2.5, 7.5];
        // percentile_disc(0.25) of them is 0.0.
        let cont = values(false, &[0.0, 10.0]);
        assert_eq!((cont.at(&[0.0, 10.0], 0.25), cont.at(&[0.0, 10.0], 0.75)), (2.5, 7.5));
        let disc = values(true, &[]);
        assert_eq!(disc.at(&[0.0, 10.0], 0.25), 0.0);
        assert_eq!(disc.at(&[1.0, 2.0, 3.0, 4.0], 0.6), 2.0);
        assert_eq!(disc.at(&[1.0, 2.0, 3.0, 4.0], 1.0), 4.0);
        assert!(percentages(&ScalarValue::Float64(Some(1.5))).is_err());
    }
}
