//! The average of DECIMALs an aggregate view keeps as an exact sum and a count (`incremental`),
//! divided exactly as the engine's `avg` divides them.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility};

use crate::error::{NativeError, Result};

/// `avg` of DECIMALs from its state: the exact sum of the values (at their scale) and their
/// count, divided as DataFusion's `avg` divides them (`DecimalAverager`): the sum scaled up to
/// the result's scale, divided by the count truncating toward zero, an average beyond the
/// result's precision an overflow error; no values, NULL. The view's own cast to Spark's type
/// then rounds it as a recompute's does.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(super) struct DecimalMean {
    signature: Signature,
    /// The average's type, `avg`'s own (`Decimal128(p, s)`).
    target: DataType,
}

impl DecimalMean {
    pub(super) fn new(target: DataType) -> Result<Self> {
        match target {
            DataType::Decimal128(..) => Ok(DecimalMean { signature: Signature::any(2, Volatility::Immutable), target }),
            other => Err(NativeError::Execution(format!("internal error: a DECIMAL average of type {other}"))),
        }
    }
}

impl ScalarUDFImpl for DecimalMean {
    fn name(&self) -> &str {
        "decimal_mean"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> datafusion::common::Result<DataType> {
        Ok(self.target.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> datafusion::common::Result<ColumnarValue> {
        use arrow::array::{Array, AsArray, Decimal128Array};
        use datafusion::common::exec_err;
        let DataType::Decimal128(precision, scale) = self.target else {
            return exec_err!("decimal_mean of {}", self.target);
        };
        let arrays = ColumnarValue::values_to_arrays(&args.args)?;
        let sums = &arrays[0];
        let DataType::Decimal128(_, sum_scale) = sums.data_type().clone() else {
            return exec_err!("decimal_mean of a sum of type {}", sums.data_type());
        };
        let counts = arrow::compute::cast(&arrays[1], &DataType::Int64)?;
        let (sums, counts) = (
            sums.as_primitive::<arrow::datatypes::Decimal128Type>(),
            counts.as_primitive::<arrow::datatypes::Int64Type>(),
        );
        if scale < sum_scale {
            return exec_err!("Arithmetic Overflow in AvgAccumulator");
        }
        let up = 10i128.pow((scale - sum_scale) as u32);
        let bound = 10i128.checked_pow(precision as u32).unwrap_or(i128::MAX);
        let mut out = Vec::with_capacity(sums.len());
        for i in 0..sums.len() {
            if sums.is_null(i) || counts.is_null(i) || counts.value(i) == 0 {
                out.push(None);
                continue;
            }
            let Some(scaled) = sums.value(i).checked_mul(up) else {
                return exec_err!("Arithmetic Overflow in AvgAccumulator");
            };
            let mean = scaled / counts.value(i) as i128;
            if mean.abs() >= bound {
                return exec_err!("Arithmetic Overflow in AvgAccumulator");
            }
            out.push(Some(mean));
        }
        let means = Decimal128Array::from(out).with_precision_and_scale(precision, scale)?;
        Ok(ColumnarValue::Array(Arc::new(means)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{Array, AsArray, Decimal128Array, Int64Array, RecordBatch};
    use arrow::datatypes::{Decimal128Type, Field, Int64Type, Schema};
    use datafusion::datasource::MemTable;
    use datafusion::prelude::SessionContext;

    /// The mean of a sum and a count equals DataFusion's own `avg` of the values, digit for
    /// digit: many small groups of positive and negative values, whose averages end in every
    /// digit at the result's last place.
    #[tokio::test]
    async fn the_decimal_mean_of_a_sum_and_a_count_is_the_engines_avg() {
        let (mut x, mut groups, mut values) = (7u64, Vec::new(), Vec::new());
        let mut next = |n: u64| {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (x >> 33) % n
        };
        for g in 0..3000i64 {
            for _ in 0..1 + next(7) {
                groups.push(g);
                let v = next(2_000_000) as i128 - 1_000_000;
                values.push(if next(9) == 0 { None } else { Some(v) });
            }
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("g", DataType::Int64, false),
            Field::new("d", DataType::Decimal128(10, 2), true),
        ]));
        let d = Decimal128Array::from(values).with_precision_and_scale(10, 2).unwrap();
        let batch =
            RecordBatch::try_new(Arc::clone(&schema), vec![Arc::new(Int64Array::from(groups)), Arc::new(d)]).unwrap();
        let ctx = SessionContext::new();
        ctx.register_table("t", Arc::new(MemTable::try_new(schema, vec![vec![batch]]).unwrap())).unwrap();
        let sql = "SELECT avg(d) AS a, sum(d) AS s, count(d) AS c FROM t GROUP BY g";
        let batches = ctx.sql(sql).await.unwrap().collect().await.unwrap();
        let mut checked = 0;
        for b in batches {
            let target = b.schema().field(0).data_type().clone();
            let mean = DecimalMean::new(target.clone()).unwrap();
            let args = ScalarFunctionArgs {
                args: vec![
                    ColumnarValue::Array(Arc::clone(b.column(1))),
                    ColumnarValue::Array(Arc::clone(b.column(2))),
                ],
                arg_fields: vec![Arc::new(b.schema().field(1).clone()), Arc::new(b.schema().field(2).clone())],
                number_rows: b.num_rows(),
                return_field: Arc::new(Field::new("m", target, true)),
                config_options: Arc::new(Default::default()),
            };
            let ColumnarValue::Array(got) = mean.invoke_with_args(args).unwrap() else { panic!("an array") };
            let (got, want) = (got.as_primitive::<Decimal128Type>(), b.column(0).as_primitive::<Decimal128Type>());
            assert_eq!(got.data_type(), want.data_type());
            for i in 0..b.num_rows() {
                assert_eq!(got.is_null(i), want.is_null(i), "row {i}");
                if !want.is_null(i) {
                    assert_eq!(
                        got.value(i),
                        want.value(i),
                        "sum {:?}, count {}",
                        b.column(1),
                        b.column(2).as_primitive::<Int64Type>().value(i)
                    );
                    checked += 1;
                }
            }
        }
        assert!(checked > 2500, "{checked}");
    }
}
