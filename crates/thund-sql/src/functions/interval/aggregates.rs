//! Aggregates of Spark's ANSI intervals: `sum`, `avg`/`try_avg`, and the percentiles
//! (`median`, `percentile`, `percentile_cont`, `percentile_disc`, `percentile_approx`).
//!
//! The built-ins take numbers only and refuse an interval while the query is planned, so each
//! is replaced by a wrapper ([`register`]) that hands any other argument to the built-in and
//! computes an interval column by Spark's rules: a sum exactly (an overflow of the interval's
//! range fails, or is NULL for `try_avg`), an average rounded half up (Spark divides the sum as
//! an interval), and a percentile over the interval's months or microseconds as DOUBLEs, its
//! answer truncated back to an interval (Spark's `toInt`/`toLong` of the percentile).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Float64Array};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature};
use datafusion::prelude::SessionContext;

use crate::functions::interval::arithmetic::{interval_values, is_interval, YEAR_MONTH};

/// How an aggregate computes over intervals.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Sum,
    /// `avg`; `try` gives NULL where the sum overflows.
    Average {
        try_: bool,
    },
    /// A percentile of the values as DOUBLEs, truncated back.
    Percentile,
}

/// Wraps the registered aggregates that take intervals on Spark.
pub(crate) fn register(ctx: &SessionContext) {
    let wrap = |name: &str, as_name: &'static str, kind: Kind| {
        if let Ok(inner) = datafusion::execution::FunctionRegistry::udaf(ctx, name) {
            let signature = Signature::user_defined(inner.signature().volatility);
            ctx.register_udaf(AggregateUDF::from(IntervalAggregate { inner, as_name, kind, signature }));
        }
    };
    // `try_avg` first: it wraps the built-in `avg`, which is then wrapped as `avg`.
    wrap("avg", "try_avg", Kind::Average { try_: true });
    wrap("avg", "avg", Kind::Average { try_: false });
    wrap("sum", "sum", Kind::Sum);
    for name in ["median", "percentile", "percentile_cont", "percentile_disc", "percentile_approx", "approx_percentile"]
    {
        if let Ok(inner) = datafusion::execution::FunctionRegistry::udaf(ctx, name) {
            let as_name: &'static str = match name {
                "median" => "median",
                "percentile" => "percentile",
                "percentile_cont" => "percentile_cont",
                "percentile_disc" => "percentile_disc",
                "percentile_approx" => "percentile_approx",
                _ => "approx_percentile",
            };
            if inner.name() != as_name {
                continue; // an alias of one wrapped already
            }
            let signature = Signature::user_defined(inner.signature().volatility);
            ctx.register_udaf(AggregateUDF::from(IntervalAggregate {
                inner,
                as_name,
                kind: Kind::Percentile,
                signature,
            }));
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalAggregate {
    inner: Arc<AggregateUDF>,
    as_name: &'static str,
    kind: Kind,
    signature: Signature,
}

/// The interval type of an aggregate's first argument, if it is one.
fn interval_of(types: &[DataType]) -> Option<DataType> {
    types.first().filter(|t| is_interval(t)).cloned()
}

/// The type an interval's numbers are given to the built-in percentile in.
const STAND_IN: DataType = DataType::Float64;

/// `t` (a percentile's answer, or a list of them) with DOUBLEs as `interval`.
fn as_interval_type(t: &DataType, interval: &DataType) -> DataType {
    match t {
        DataType::List(f) => {
            DataType::List(Arc::new(Field::new(f.name(), as_interval_type(f.data_type(), interval), true)))
        }
        _ => interval.clone(),
    }
}

impl AggregateUDFImpl for IntervalAggregate {
    fn name(&self) -> &str {
        self.as_name
    }

    fn aliases(&self) -> &[String] {
        if self.as_name == self.inner.name() {
            self.inner.aliases()
        } else {
            &[]
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        let stand_in: Vec<DataType> = match interval_of(arg_types) {
            Some(_) => std::iter::once(STAND_IN).chain(arg_types[1..].iter().cloned()).collect(),
            None => arg_types.to_vec(),
        };
        let fields: Vec<FieldRef> = stand_in.iter().map(|t| Arc::new(Field::new("a", t.clone(), true))).collect();
        let coerced =
            datafusion::logical_expr::type_coercion::functions::fields_with_udf(&fields, self.inner.as_ref())?;
        let mut types: Vec<DataType> = coerced.iter().map(|f| f.data_type().clone()).collect();
        if let (Some(t), Some(first)) = (interval_of(arg_types), types.first_mut()) {
            *first = t;
        }
        Ok(types)
    }

    fn return_type(&self, arg_types: &[DataType]) -> Result<DataType> {
        match interval_of(arg_types) {
            Some(t) if self.kind != Kind::Percentile => Ok(t),
            Some(t) => {
                let stand_in: Vec<DataType> = std::iter::once(STAND_IN).chain(arg_types[1..].iter().cloned()).collect();
                Ok(as_interval_type(&self.inner.return_type(&stand_in)?, &t))
            }
            None => self.inner.return_type(arg_types),
        }
    }

    fn return_field(&self, arg_fields: &[FieldRef]) -> Result<FieldRef> {
        let types: Vec<DataType> = arg_fields.iter().map(|f| f.data_type().clone()).collect();
        if interval_of(&types).is_none() {
            return self.inner.return_field(arg_fields);
        }
        Ok(Arc::new(Field::new(self.name(), self.return_type(&types)?, true)))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let types: Vec<DataType> = args.input_fields.iter().map(|f| f.data_type().clone()).collect();
        if interval_of(&types).is_none() {
            return self.inner.state_fields(args);
        }
        if self.kind != Kind::Percentile {
            return Ok(vec![
                Arc::new(Field::new(format_state_name(args.name, "sum"), DataType::Decimal128(38, 0), true)),
                Arc::new(Field::new(format_state_name(args.name, "count"), DataType::Int64, true)),
            ]);
        }
        let inputs: Vec<FieldRef> = std::iter::once(Arc::new(Field::new("a", STAND_IN, true)) as FieldRef)
            .chain(args.input_fields[1..].iter().cloned())
            .collect();
        let stand_in_types: Vec<DataType> = inputs.iter().map(|f| f.data_type().clone()).collect();
        let return_field = Arc::new(Field::new(self.name(), self.inner.return_type(&stand_in_types)?, true));
        self.inner.state_fields(StateFieldsArgs { input_fields: &inputs, return_field, ..args })
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args.expr_fields.iter().map(|f| f.data_type().clone()).collect();
        let Some(interval) = interval_of(&types) else { return self.inner.accumulator(args) };
        if let Kind::Sum | Kind::Average { .. } = self.kind {
            return Ok(Box::new(SumAccumulator {
                sum: 0,
                count: 0,
                kind: self.kind,
                year_month: interval == YEAR_MONTH,
            }));
        }
        let fields: Vec<FieldRef> = std::iter::once(Arc::new(Field::new("a", STAND_IN, true)) as FieldRef)
            .chain(args.expr_fields[1..].iter().cloned())
            .collect();
        let stand_in_types: Vec<DataType> = fields.iter().map(|f| f.data_type().clone()).collect();
        let return_field = Arc::new(Field::new(self.name(), self.inner.return_type(&stand_in_types)?, true));
        let inner = self.inner.accumulator(AccumulatorArgs { expr_fields: &fields, return_field, ..args })?;
        Ok(Box::new(PercentileAccumulator { inner, interval }))
    }

    fn is_nullable(&self) -> bool {
        true
    }

    fn supports_within_group_clause(&self) -> bool {
        self.inner.inner().supports_within_group_clause()
    }

    fn supports_null_handling_clause(&self) -> bool {
        self.inner.inner().supports_null_handling_clause()
    }

    fn groups_accumulator_supported(&self, args: AccumulatorArgs) -> bool {
        let types: Vec<DataType> = args.expr_fields.iter().map(|f| f.data_type().clone()).collect();
        interval_of(&types).is_none() && self.inner.groups_accumulator_supported(args)
    }

    fn create_groups_accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> Result<Box<dyn datafusion::logical_expr::GroupsAccumulator>> {
        // The built-in `avg` ignores the FILTER it is handed (`aggregate::filtered`).
        let inner = self.inner.create_groups_accumulator(args)?;
        Ok(Box::new(crate::functions::aggregate::filtered::Filtered { inner }))
    }

    fn create_sliding_accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        let types: Vec<DataType> = args.expr_fields.iter().map(|f| f.data_type().clone()).collect();
        match interval_of(&types) {
            Some(_) => self.accumulator(args),
            None => self.inner.create_sliding_accumulator(args),
        }
    }

    fn order_sensitivity(&self) -> datafusion::logical_expr::utils::AggregateOrderSensitivity {
        self.inner.inner().order_sensitivity()
    }

    fn reverse_expr(&self) -> datafusion::logical_expr::ReversedUDAF {
        datafusion::logical_expr::ReversedUDAF::Identical
    }

    fn default_value(&self, data_type: &DataType) -> Result<ScalarValue> {
        ScalarValue::try_from(data_type)
    }
}

/// A sum (and count) of months or microseconds, exact.
#[derive(Debug)]
struct SumAccumulator {
    sum: i128,
    count: i64,
    kind: Kind,
    year_month: bool,
}

impl Accumulator for SumAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for v in interval_values(&values[0])?.into_iter().flatten() {
            self.sum += i128::from(v);
            self.count += 1;
        }
        Ok(())
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for v in interval_values(&values[0])?.into_iter().flatten() {
            self.sum -= i128::from(v);
            self.count -= 1;
        }
        Ok(())
    }

    fn supports_retract_batch(&self) -> bool {
        true
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let sums = states[0].as_primitive::<arrow::datatypes::Decimal128Type>();
        let counts = states[1].as_primitive::<arrow::datatypes::Int64Type>();
        for i in 0..sums.len() {
            if sums.is_valid(i) {
                self.sum += sums.value(i);
                self.count += counts.value(i);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Decimal128(Some(self.sum), 38, 0), ScalarValue::Int64(Some(self.count))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let null =
            if self.year_month { ScalarValue::IntervalYearMonth(None) } else { ScalarValue::DurationMicrosecond(None) };
        if self.count == 0 {
            return Ok(null);
        }
        // Spark sums in the interval's own type: a sum beyond it overflows.
        let fits = |v: i128| if self.year_month { i32::try_from(v).is_ok() } else { i64::try_from(v).is_ok() };
        if !fits(self.sum) {
            return match self.kind {
                Kind::Average { try_: true } => Ok(null),
                _ => exec_err!(
                    "[INTERVAL_ARITHMETIC_OVERFLOW] the sum of the intervals overflows{}",
                    if self.kind == Kind::Sum { "" } else { ": use try_avg to get NULL instead" }
                ),
            };
        }
        let value = match self.kind {
            Kind::Sum => self.sum,
            _ => {
                let (n, d) = (self.sum, i128::from(self.count));
                let (q, r) = (n / d, n % d);
                if r.unsigned_abs() * 2 >= d.unsigned_abs() {
                    q + n.signum()
                } else {
                    q
                }
            }
        };
        Ok(if self.year_month {
            ScalarValue::IntervalYearMonth(Some(value as i32))
        } else {
            ScalarValue::DurationMicrosecond(Some(value as i64))
        })
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self)
    }
}

/// A built-in percentile over an interval's numbers as DOUBLEs.
#[derive(Debug)]
struct PercentileAccumulator {
    inner: Box<dyn Accumulator>,
    interval: DataType,
}

impl PercentileAccumulator {
    fn stand_in(values: &[ArrayRef]) -> Result<Vec<ArrayRef>> {
        let numbers: Float64Array = interval_values(&values[0])?.into_iter().map(|v| v.map(|v| v as f64)).collect();
        Ok(std::iter::once(Arc::new(numbers) as ArrayRef).chain(values[1..].iter().cloned()).collect())
    }

    /// A percentile's answer as the interval Spark makes of it (truncating the DOUBLE).
    fn back(&self, v: ScalarValue) -> Result<ScalarValue> {
        let year_month = self.interval == YEAR_MONTH;
        Ok(match v {
            ScalarValue::List(list) => {
                let values = list.value(0);
                let doubles = arrow::compute::cast(&values, &DataType::Float64)?;
                let converted: Vec<ScalarValue> = doubles
                    .as_primitive::<arrow::datatypes::Float64Type>()
                    .iter()
                    .map(|x| self.back(ScalarValue::Float64(x)))
                    .collect::<Result<_>>()?;
                ScalarValue::List(ScalarValue::new_list_nullable(&converted, &self.interval))
            }
            other => {
                let x = match other.cast_to(&DataType::Float64)? {
                    ScalarValue::Float64(x) => x,
                    _ => None,
                };
                let truncated = x.map(|x| x.trunc());
                if year_month {
                    ScalarValue::IntervalYearMonth(truncated.map(|x| x as i32))
                } else {
                    ScalarValue::DurationMicrosecond(truncated.map(|x| x as i64))
                }
            }
        })
    }
}

impl Accumulator for PercentileAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(&Self::stand_in(values)?)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(&Self::stand_in(values)?)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let v = self.inner.evaluate()?;
        self.back(v)
    }

    fn size(&self) -> usize {
        self.inner.size() + std::mem::size_of_val(self)
    }
}
