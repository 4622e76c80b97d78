//! `approx_count_distinct(x[, rsd])` as Spark estimates it: HyperLogLog++ (`HyperLogLogPlusPlus`)
//! with `p = ⌈2·log2(1.106 / rsd)⌉` bits of register index (9, 512 registers, for the default
//! `rsd` of 0.05), each value hashed by Spark's XxHash64 with seed 42 (floating point first
//! normalized: one NaN, `-0.0` as `0.0`), NULLs skipped.
//!
//! Spark's estimate from the registers is linear counting (`m·ln(m/V)`, `V` the empty registers)
//! while that is at most the paper's threshold for `p` (400 for `p = 9`) or the raw estimate
//! `α·m²/Σ2^-M` is at most `2.5·m`; else the raw estimate, less an interpolated bias where it
//! is below `5·m`. That bias comes from the empirical tables of the HLL++ paper's appendix, which
//! this engine does not hold: an estimate that needs it (a raw estimate between 1,280 and 2,560
//! at the default `rsd`, where linear counting is past its threshold) fails the query with a
//! clear error rather than answer another number. Below and above that band the answer is
//! Spark's, to the unit.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, Field, FieldRef, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type,
    Int8Type, TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::utils::format_state_name;
use datafusion::logical_expr::{Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility};
use datafusion::physical_expr::expressions::Literal;
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udaf(AggregateUDF::from(ApproxCountDistinct {
        signature: Signature::variadic_any(Volatility::Immutable),
    }));
}

/// Where linear counting gives way to the raw estimate, by `p` from 4 to 18 (the HLL++ paper's).
const THRESHOLDS: [f64; 15] = [
    10.0, 20.0, 40.0, 80.0, 220.0, 400.0, 900.0, 1800.0, 3100.0, 6500.0, 15500.0, 20000.0, 50000.0, 120000.0, 350000.0,
];

#[derive(Debug, PartialEq, Eq, Hash)]
struct ApproxCountDistinct {
    signature: Signature,
}

/// Whether Spark's hash of a value of `t` is computed here.
fn hashable(t: &DataType) -> bool {
    matches!(
        t,
        DataType::Null
            | DataType::Boolean
            | DataType::Int8
            | DataType::Int16
            | DataType::Int32
            | DataType::Int64
            | DataType::Float32
            | DataType::Float64
            | DataType::Date32
            | DataType::Utf8
            | DataType::LargeUtf8
            | DataType::Utf8View
            | DataType::Binary
            | DataType::Timestamp(TimeUnit::Microsecond, _)
    ) || matches!(t, DataType::Decimal128(p, _) if *p <= 18)
}

impl AggregateUDFImpl for ApproxCountDistinct {
    fn name(&self) -> &str {
        "approx_count_distinct"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match args {
            [t] | [t, DataType::Float64 | DataType::Decimal128(..) | DataType::Float32] if hashable(t) => {
                Ok(DataType::Int64)
            }
            [t, ..] if !hashable(t) => plan_err!(
                "approx_count_distinct of {} runs on the Spark backend (its hash of that type is not computed here)",
                crate::types::spark_type_name(t)
            ),
            _ => plan_err!("approx_count_distinct takes a column and a relative standard deviation (a number)"),
        }
    }

    fn is_nullable(&self) -> bool {
        false
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(format_state_name(args.name, "registers"), DataType::Binary, true))])
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if args.is_distinct {
            return plan_err!("approx_count_distinct(DISTINCT …) runs on the Spark backend");
        }
        let rsd = match args.exprs.get(1) {
            None => 0.05,
            Some(e) => match e.downcast_ref::<Literal>().map(|l| l.value().cast_to(&DataType::Float64)) {
                Some(Ok(ScalarValue::Float64(Some(v)))) => v,
                _ => return plan_err!("approx_count_distinct's relative standard deviation is a literal number"),
            },
        };
        let p = (2.0 * (1.106 / rsd).log2()).ceil();
        if !(4.0..19.0).contains(&p) {
            return plan_err!(
                "approx_count_distinct's relative standard deviation {rsd} is out of the range this engine estimates \
                 as Spark does (0.0039 to 0.39)"
            );
        }
        let p = p as u32;
        Ok(Box::new(Registers { p, registers: vec![0; 1 << p] }))
    }
}

#[derive(Debug)]
struct Registers {
    p: u32,
    registers: Vec<u8>,
}

impl Registers {
    fn add(&mut self, hash: u64) {
        let idx = (hash >> (64 - self.p)) as usize;
        let w = (hash << self.p) | (1u64 << (self.p - 1));
        let pw = w.leading_zeros() as u8 + 1;
        if pw > self.registers[idx] {
            self.registers[idx] = pw;
        }
    }

    /// Spark's estimate (see the module).
    fn estimate(&self) -> Result<i64> {
        let m = self.registers.len() as f64;
        let z_inverse: f64 = self.registers.iter().map(|&r| 1.0 / (1u64 << r) as f64).sum();
        let empty = self.registers.iter().filter(|&&r| r == 0).count() as f64;
        let alpha_m2 = match self.p {
            4 => 0.673 * m * m,
            5 => 0.697 * m * m,
            6 => 0.709 * m * m,
            _ => (0.7213 / (1.0 + 1.079 / m)) * m * m,
        };
        let e = alpha_m2 / z_inverse;
        if empty > 0.0 {
            let h = m * (m / empty).ln();
            if h <= THRESHOLDS[(self.p - 4) as usize] || e <= 2.5 * m {
                return Ok(h.round() as i64);
            }
        }
        if e < 5.0 * m {
            return exec_err!(
                "approx_count_distinct estimates about {} distinct values here, where Spark corrects its \
                 HyperLogLog++ estimate by the paper's empirical bias tables, which this engine does not hold: \
                 run it on the Spark backend, or count exactly with count(DISTINCT …)",
                e.round()
            );
        }
        Ok(e.round() as i64)
    }
}

/// Spark's XxHash64 (seed 42) of every non-NULL value of `values`.
fn hashes(values: &ArrayRef, mut each: impl FnMut(u64)) -> Result<()> {
    use twox_hash::XxHash64;
    let int = |v: i32| XxHash64::oneshot(42, &v.to_le_bytes());
    let long = |v: i64| XxHash64::oneshot(42, &v.to_le_bytes());
    let n = values.len();
    macro_rules! each_valid {
        ($array:expr, $hash:expr) => {{
            let a = $array;
            for i in 0..n {
                if a.is_valid(i) {
                    each($hash(a.value(i)));
                }
            }
        }};
    }
    match values.data_type() {
        DataType::Null => {}
        DataType::Boolean => each_valid!(values.as_boolean(), |v: bool| int(i32::from(v))),
        DataType::Int8 => each_valid!(values.as_primitive::<Int8Type>(), |v: i8| int(i32::from(v))),
        DataType::Int16 => each_valid!(values.as_primitive::<Int16Type>(), |v: i16| int(i32::from(v))),
        DataType::Int32 => each_valid!(values.as_primitive::<Int32Type>(), int),
        DataType::Date32 => each_valid!(values.as_primitive::<Date32Type>(), int),
        DataType::Int64 => each_valid!(values.as_primitive::<Int64Type>(), long),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            each_valid!(values.as_primitive::<TimestampMicrosecondType>(), long)
        }
        // Spark's HLL++ normalizes floating point first: one NaN, and -0.0 as 0.0.
        DataType::Float32 => each_valid!(values.as_primitive::<Float32Type>(), |v: f32| {
            let v = if v.is_nan() { f32::NAN } else { v + 0.0 };
            int(v.to_bits() as i32)
        }),
        DataType::Float64 => each_valid!(values.as_primitive::<Float64Type>(), |v: f64| {
            let v = if v.is_nan() { f64::NAN } else { v + 0.0 };
            long(v.to_bits() as i64)
        }),
        // A DECIMAL of up to 18 digits is hashed as its unscaled long.
        DataType::Decimal128(..) => each_valid!(values.as_primitive::<Decimal128Type>(), |v: i128| long(v as i64)),
        DataType::Utf8 => each_valid!(values.as_string::<i32>(), |v: &str| XxHash64::oneshot(42, v.as_bytes())),
        DataType::LargeUtf8 => each_valid!(values.as_string::<i64>(), |v: &str| XxHash64::oneshot(42, v.as_bytes())),
        DataType::Utf8View => each_valid!(values.as_string_view(), |v: &str| XxHash64::oneshot(42, v.as_bytes())),
        DataType::Binary => each_valid!(values.as_binary::<i32>(), |v: &[u8]| XxHash64::oneshot(42, v)),
        other => return exec_err!("approx_count_distinct of {other} is not estimated here"),
    }
    Ok(())
}

impl Accumulator for Registers {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let mut seen = Vec::new();
        hashes(&values[0], |h| seen.push(h))?;
        for h in seen {
            self.add(h);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let states: &BinaryArray = states[0].as_binary::<i32>();
        for other in states.iter().flatten() {
            if other.len() != self.registers.len() {
                return exec_err!("approx_count_distinct merged registers of another precision");
            }
            for (mine, theirs) in self.registers.iter_mut().zip(other) {
                *mine = (*mine).max(*theirs);
            }
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.registers.clone()))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(ScalarValue::Int64(Some(self.estimate()?)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.registers.len()
    }
}
