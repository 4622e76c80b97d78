//! Spark's HyperLogLog sketches: `hll_sketch_agg(x[, lgConfigK])`, `hll_union_agg(sketch[,
//! allowDifferentLgConfigK])`, `hll_union(a, b[, allowDifferentLgConfigK])` and
//! `hll_sketch_estimate(sketch)`.
//!
//! Spark's rules, each read off Spark 4.1.4: values are INT, BIGINT, STRING or BINARY (no other
//! type, none cast); an INT is hashed as a BIGINT, text as its UTF-8 bytes, and an empty string
//! or binary is skipped as NULL is; `lgConfigK` is an INT literal in 4..=21 (12 by default); the
//! sketch is always HLL_8 and written in Java's updatable form, which is what `to_updatable`
//! makes of the Rust library's compact one; the estimate is rounded half up; a group without
//! values is the empty sketch, never NULL.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, Int64Array};
use arrow::datatypes::{DataType, FieldRef, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datasketches::hash::value::raw_bytes;
use datasketches::hll::{HllSketch, HllType, HllUnion};

/// Spark's default `lgConfigK`.
const DEFAULT_LG_K: u8 = 12;

pub(super) fn register(ctx: &SessionContext) {
    for union in [false, true] {
        ctx.register_udaf(AggregateUDF::from(HllAggregate {
            union,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
    for op in [Op::Estimate, Op::Union] {
        ctx.register_udf(ScalarUDF::from(HllFunction {
            op,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

fn invalid_buffer<T>(function: &str) -> Result<T> {
    super::invalid_buffer("HLL", function, "hll_sketch_agg")
}

fn read(bytes: &[u8], function: &str) -> Result<HllSketch> {
    HllSketch::deserialize(bytes).or_else(|_| invalid_buffer(function))
}

fn different_lg_k<T>(left: u8, right: u8, function: &str) -> Result<T> {
    exec_err!(
        "[HLL_UNION_DIFFERENT_LG_K] Sketches have different `lgConfigK` values: {left} and {right}. Set the \
         `allowDifferentLgConfigK` parameter to true to call `{function}` with different `lgConfigK` values"
    )
}

/// A sketch's bytes as Spark writes them where that can be known here. Java writes a sketch of
/// few values (LIST mode) as its whole list of 8 slots in the order the values came, the flag
/// byte without the compact bit; the Rust library writes only the coupons held, compactly, and
/// here they are laid out as Java's list. A sketch of more (SET mode) keeps the compact form:
/// Java's hash table depends on the order of every insertion and growth, which the final table
/// does not tell, and a table laid out otherwise would mislead Java's lookups, while the compact
/// form is one Java reads and rebuilds. A sketch of many values (HLL mode) is written alike by
/// both libraries.
fn to_updatable(sketch: &HllSketch) -> Vec<u8> {
    let compact = sketch.serialize();
    const COMPACT: u8 = 0x08;
    const LIST: u8 = 0;
    if compact[7] & 3 != LIST || compact[5] & COMPACT == 0 {
        return compact;
    }
    let mut out = compact[..8].to_vec();
    out[5] &= !COMPACT;
    let slots = 1usize << compact[4];
    out.extend_from_slice(&compact[8..]);
    out.resize(8 + 4 * slots, 0);
    out
}

/// The value types `hll_sketch_agg` takes (Spark casts none to them).
fn hll_value(t: &DataType) -> bool {
    matches!(t, DataType::Int32 | DataType::Int64 | DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
        || (super::is_binary(t) && t != &DataType::Null)
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HllAggregate {
    /// `hll_union_agg`: merges sketches rather than building one from values.
    union: bool,
    signature: Signature,
}

impl HllAggregate {
    fn function(&self) -> &'static str {
        if self.union {
            "hll_union_agg"
        } else {
            "hll_sketch_agg"
        }
    }
}

impl AggregateUDFImpl for HllAggregate {
    fn name(&self) -> &str {
        self.function()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let fits = match (self.union, args) {
            (false, [t]) => hll_value(t),
            (false, [t, k]) if k.is_integer() || k == &DataType::Null => hll_value(t),
            (true, [t] | [t, DataType::Boolean | DataType::Null]) => super::is_binary(t),
            _ => false,
        };
        if !fits {
            return plan_err!(
                "{} does not take {} (it takes {})",
                self.function(),
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", "),
                if self.union {
                    "HLL sketches and a BOOLEAN"
                } else {
                    "INT, BIGINT, STRING or BINARY values and an INT"
                }
            );
        }
        Ok(DataType::Binary)
    }

    fn is_nullable(&self) -> bool {
        false
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(super::state_fields(args.name))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        if self.union {
            let allow = match args.exprs.get(1) {
                None => false,
                Some(e) => match e.downcast_ref::<datafusion::physical_expr::expressions::Literal>().map(|l| l.value())
                {
                    Some(ScalarValue::Boolean(b)) => b.unwrap_or(false),
                    Some(ScalarValue::Null) => false,
                    _ => return plan_err!("hll_union_agg's allowDifferentLgConfigK is a BOOLEAN literal here"),
                },
            };
            return Ok(Box::new(Union { allow, union: None }));
        }
        let lg_k = match super::int_parameter(&args, 1, "hll_sketch_agg", "K", DEFAULT_LG_K as i64, 4..=21)? {
            Ok(k) => k as u8,
            Err(k) => {
                return plan_err!(
                    "[HLL_INVALID_LG_K] Invalid call to `hll_sketch_agg`; the `lgConfigK` value must be between 4 \
                     and 21, inclusive: {k}"
                )
            }
        };
        let sketch = HllSketch::new(lg_k, HllType::Hll8).or_else(|e| exec_err!("hll_sketch_agg: {e}"))?;
        Ok(Box::new(Sketching { lg_k, sketch, updated: false }))
    }
}

#[derive(Debug)]
struct Sketching {
    lg_k: u8,
    sketch: HllSketch,
    /// Whether rows were added here (rather than partial sketches merged).
    updated: bool,
}

impl Sketching {
    /// Spark's merge of two buffers: a union the size of the first, its result as HLL_8.
    fn merge(&mut self, other: &HllSketch) -> Result<()> {
        let mut union = HllUnion::new(self.sketch.lg_config_k()).or_else(|e| exec_err!("hll_sketch_agg: {e}"))?;
        union.update(&self.sketch);
        union.update(other);
        self.sketch = union.to_sketch(HllType::Hll8);
        Ok(())
    }
}

impl Accumulator for Sketching {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.updated = true;
        let v = &values[0];
        match v.data_type() {
            DataType::Int32 | DataType::Int64 => {
                let longs = arrow::compute::cast(v, &DataType::Int64)?;
                longs.as_primitive::<Int64Type>().iter().flatten().for_each(|x| self.sketch.update(x));
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let text = arrow::compute::cast(v, &DataType::Utf8)?;
                for s in text.as_string::<i32>().iter().flatten().filter(|s| !s.is_empty()) {
                    self.sketch.update(raw_bytes::from_str(s));
                }
            }
            _ => {
                for b in super::binaries(v)?.iter().flatten().filter(|b| !b.is_empty()) {
                    self.sketch.update(raw_bytes::from_slice(b));
                }
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        for b in super::binaries(&states[0])?.iter().flatten() {
            let other = read(b, "hll_sketch_agg")?;
            self.merge(&other)?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(to_updatable(&self.sketch)))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        if self.updated {
            // Spark's final answer: a fresh sketch merged with the partial one.
            let partial = std::mem::replace(
                &mut self.sketch,
                HllSketch::new(self.lg_k, HllType::Hll8).or_else(|e| exec_err!("hll_sketch_agg: {e}"))?,
            );
            self.merge(&partial)?;
            self.updated = false;
        }
        Ok(ScalarValue::Binary(Some(to_updatable(&self.sketch))))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.sketch.estimated_size()
    }
}

#[derive(Debug)]
struct Union {
    allow: bool,
    /// Made from the first sketch, with its `lgConfigK`.
    union: Option<HllUnion>,
}

impl Accumulator for Union {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for b in super::binaries(&values[0])?.iter().flatten() {
            let sketch = read(b, "hll_union_agg")?;
            let union = match &mut self.union {
                Some(u) => u,
                None => {
                    self.union.insert(HllUnion::new(sketch.lg_config_k()).or_else(|e| exec_err!("hll_union_agg: {e}"))?)
                }
            };
            if !self.allow && union.lg_config_k() != sketch.lg_config_k() {
                return different_lg_k(union.lg_config_k(), sketch.lg_config_k(), "hll_union_agg");
            }
            union.update(&sketch);
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.evaluate().map(|v| vec![v])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let sketch = match &self.union {
            Some(u) => u.to_sketch(HllType::Hll8),
            None => HllSketch::new(DEFAULT_LG_K, HllType::Hll8).or_else(|e| exec_err!("hll_union_agg: {e}"))?,
        };
        Ok(ScalarValue::Binary(Some(to_updatable(&sketch))))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.union.as_ref().map_or(0, HllUnion::estimated_size)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Estimate,
    Union,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HllFunction {
    op: Op,
    signature: Signature,
}

impl ScalarUDFImpl for HllFunction {
    fn name(&self) -> &str {
        match self.op {
            Op::Estimate => "hll_sketch_estimate",
            Op::Union => "hll_union",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let fits = match (self.op, args) {
            (Op::Estimate, [a]) => super::is_binary(a),
            (Op::Union, [a, b]) => super::is_binary(a) && super::is_binary(b),
            (Op::Union, [a, b, c]) => {
                super::is_binary(a) && super::is_binary(b) && matches!(c, DataType::Boolean | DataType::Null)
            }
            _ => false,
        };
        if !fits {
            return plan_err!(
                "{} does not take {}",
                self.name(),
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(args.iter().enumerate().map(|(i, _)| if i < 2 { DataType::Binary } else { DataType::Boolean }).collect())
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(if self.op == Op::Estimate { DataType::Int64 } else { DataType::Binary })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = super::all_scalar(&args.args);
        let columns = super::arrays(&args.args, args.number_rows)?;
        let sketches = super::binaries(&columns[0])?;
        let rows = sketches.len();
        let out: ArrayRef = match self.op {
            Op::Estimate => {
                let mut out = Vec::with_capacity(rows);
                for i in 0..rows {
                    // Java's `Math.round`: half up (an estimate is never negative).
                    out.push(if sketches.is_null(i) {
                        None
                    } else {
                        Some(read(sketches.value(i), self.name())?.estimate().round() as i64)
                    });
                }
                Arc::new(Int64Array::from(out))
            }
            Op::Union => {
                let right = super::binaries(&columns[1])?;
                let allow = columns.get(2).map(|c| c.as_boolean().clone());
                let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(rows);
                for i in 0..rows {
                    if super::any_null(&columns, i) {
                        out.push(None);
                        continue;
                    }
                    let (a, b) = (read(sketches.value(i), self.name())?, read(right.value(i), self.name())?);
                    let allowed = allow.as_ref().is_some_and(|c| c.value(i));
                    if !allowed && a.lg_config_k() != b.lg_config_k() {
                        return different_lg_k(a.lg_config_k(), b.lg_config_k(), self.name());
                    }
                    let lg_k = a.lg_config_k().min(b.lg_config_k());
                    let mut union = HllUnion::new(lg_k).or_else(|e| exec_err!("hll_union: {e}"))?;
                    union.update(&a);
                    union.update(&b);
                    out.push(Some(to_updatable(&union.to_sketch(HllType::Hll8))));
                }
                Arc::new(BinaryArray::from_iter(out))
            }
        };
        super::answer(out, scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02X}")).collect()
    }

    #[test]
    fn sketches_are_sparks_bytes() {
        // Each as Spark 4.1.4 writes it.
        let empty = HllSketch::new(12, HllType::Hll8).unwrap();
        assert_eq!(hex(&to_updatable(&empty)), format!("0201070C03040008{}", "0".repeat(64)));
        let mut ints = HllSketch::new(12, HllType::Hll8).unwrap();
        [1i64, 2, 3].into_iter().for_each(|v| ints.update(v));
        assert_eq!(hex(&to_updatable(&ints)), format!("0201070C030003082BF2FB06862FF90D75816607{}", "0".repeat(40)));
        let mut text = HllSketch::new(12, HllType::Hll8).unwrap();
        ["a", "b"].into_iter().for_each(|v| text.update(raw_bytes::from_str(v)));
        assert_eq!(hex(&to_updatable(&text)), format!("0201070C030002082F823B040AFF8004{}", "0".repeat(48)));
        // Past eight values (SET mode) the compact form, which Java reads back to the same sketch.
        let mut set = HllSketch::new(12, HllType::Hll8).unwrap();
        (1i64..=10).for_each(|v| set.update(v));
        let bytes = to_updatable(&set);
        assert_eq!(bytes[5] & 0x08, 0x08);
        assert_eq!(HllSketch::deserialize(&bytes).unwrap().estimate().round(), 10.0);
    }
}
