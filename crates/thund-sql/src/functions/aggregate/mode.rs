//! Spark's `mode(col[, deterministic])` and `mode() WITHIN GROUP (ORDER BY col [DESC])`: the
//! most frequent non-NULL value of a group (NULL for none).
//!
//! Where several values are the most frequent, Spark's `mode(col)` returns any one of them (the
//! first its hash map yields), which no other engine can reproduce: that fails the query here,
//! naming the values and the deterministic forms. `mode(col, true)` returns the least of them,
//! as `WITHIN GROUP (ORDER BY col)` does; with `DESC`, the greatest (the front-end rewrites that
//! form to `mode(col, true, false)`, its third argument saying "ascending").
//!
//! Values are counted in a hash map of `ScalarValue`s, row by row: `mode` keeps every distinct
//! value of a group whatever the engine, and is not on the paths pipelines run per row.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::from(Mode { signature: Signature::variadic_any(Volatility::Immutable) }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Mode {
    signature: Signature,
}

/// How a tie between the most frequent values is broken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tie {
    /// It fails the query (Spark returns any one of them).
    Refused,
    Least,
    Greatest,
}

impl AggregateUDFImpl for Mode {
    fn name(&self) -> &str {
        "mode"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !(1..=3).contains(&args.len()) || args[1..].iter().any(|t| !matches!(t, DataType::Boolean | DataType::Null))
        {
            return plan_err!("mode takes a column and whether to break ties deterministically (a BOOLEAN)");
        }
        // DataFusion's own intervals (months, days and nanoseconds at once) are no type of Spark's.
        if matches!(
            args[0],
            DataType::Interval(arrow::datatypes::IntervalUnit::MonthDayNano | arrow::datatypes::IntervalUnit::DayTime)
        ) {
            return plan_err!("mode of {} runs on the Spark backend", crate::types::spark_type_name(&args[0]));
        }
        Ok(args[0].clone())
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        let value = args.input_fields[0].data_type().clone();
        Ok(vec![
            Arc::new(Field::new_list(format_state_name(args.name, "values"), Field::new_list_field(value, true), true)),
            Arc::new(Field::new_list(
                format_state_name(args.name, "counts"),
                Field::new_list_field(DataType::Int64, true),
                true,
            )),
        ])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return plan_err!("mode(DISTINCT …) runs on the Spark backend");
        }
        let flag = |i: usize| -> Result<Option<bool>> {
            let Some(e) = args.exprs.get(i) else { return Ok(None) };
            match e.downcast_ref::<Literal>().map(|l| l.value()) {
                Some(ScalarValue::Boolean(b)) => Ok(*b),
                _ => plan_err!("mode's second and third arguments are literal BOOLEANs"),
            }
        };
        let tie = match (flag(1)?, flag(2)?) {
            (Some(true), Some(false)) => Tie::Greatest,
            (Some(true), _) => Tie::Least,
            _ => Tie::Refused,
        };
        Ok(Box::new(Counts { value_type: args.return_field.data_type().clone(), tie, counts: HashMap::new() }))
    }
}

#[derive(Debug)]
struct Counts {
    value_type: DataType,
    tie: Tie,
    counts: HashMap<ScalarValue, i64>,
}

impl Counts {
    fn count(&mut self, values: &ArrayRef, counts: Option<&ArrayRef>) -> Result<()> {
        for row in 0..values.len() {
            if values.is_null(row) {
                continue;
            }
            let by = match counts {
                Some(c) => c.as_primitive::<arrow::datatypes::Int64Type>().value(row),
                None => 1,
            };
            *self.counts.entry(ScalarValue::try_from_array(values, row)?).or_insert(0) += by;
        }
        Ok(())
    }
}

impl Accumulator for Counts {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.count(&values[0], None)
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let (values, counts) = (states[0].as_list::<i32>(), states[1].as_list::<i32>());
        for row in 0..values.len() {
            if values.is_valid(row) && counts.is_valid(row) {
                self.count(&values.value(row), Some(&counts.value(row)))?;
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        let (values, counts): (Vec<ScalarValue>, Vec<ScalarValue>) =
            self.counts.iter().map(|(v, c)| (v.clone(), ScalarValue::Int64(Some(*c)))).unzip();
        Ok(vec![
            ScalarValue::List(ScalarValue::new_list_nullable(&values, &self.value_type)),
            ScalarValue::List(ScalarValue::new_list_nullable(&counts, &DataType::Int64)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let Some(most) = self.counts.values().max().copied() else {
            return ScalarValue::try_from(&self.value_type);
        };
        let mut modes: Vec<&ScalarValue> = self.counts.iter().filter(|(_, c)| **c == most).map(|(v, _)| v).collect();
        modes.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        match (self.tie, modes.as_slice()) {
            (_, [one]) => Ok((*one).clone()),
            (Tie::Least, [least, ..]) => Ok((*least).clone()),
            (Tie::Greatest, [.., greatest]) => Ok((*greatest).clone()),
            (_, several) => {
                let shown: Vec<String> = several.iter().take(5).map(|v| v.to_string()).collect();
                exec_err!(
                    "mode: {} values are the most frequent ({}{}), and Spark returns any one of them: use mode(col, \
                     true) for the least, or mode() WITHIN GROUP (ORDER BY col DESC) for the greatest",
                    several.len(),
                    shown.join(", "),
                    if several.len() > 5 { ", …" } else { "" }
                )
            }
        }
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.counts.keys().map(|v| v.size() + size_of::<i64>()).sum::<usize>()
    }
}
