//! Spark's Theta sketches: `theta_sketch_agg(x[, lgNomEntries])`, `theta_union_agg(sketch[,
//! lgNomEntries])`, `theta_intersection_agg(sketch)`, `theta_union(a, b[, lgNomEntries])`,
//! `theta_intersection(a, b)`, `theta_difference(a, b)` and `theta_sketch_estimate(sketch)`.
//!
//! Spark's rules, each read off Spark 4.1.4: values are INT, BIGINT, FLOAT, DOUBLE, STRING,
//! BINARY, ARRAY<INT> or ARRAY<BIGINT> (none cast); an INT is hashed as a BIGINT, a FLOAT as a
//! DOUBLE (-0.0 as 0.0, every NaN as one), text as its UTF-8 bytes, an array as its items'
//! little-endian bytes, and an empty string, binary or array is skipped as NULL is;
//! `lgNomEntries` is an INT in 4..=26 (12 by default; 4, which the Rust library cannot build,
//! runs on the Spark backend); a sketch is written ordered and compressed as Java's
//! `toByteArrayCompressed` writes it; a group without values is the empty sketch, never NULL,
//! except for `theta_intersection_agg`, whose intersection of nothing fails as on Spark.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, Int64Array};
use arrow::datatypes::{DataType, FieldRef, Float64Type, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datasketches::hash::value::{canonical_float, raw_bytes};
use datasketches::theta::{
    CompactThetaSketch, ThetaANotB, ThetaIntersection, ThetaSketch, ThetaSketchBuilder, ThetaUnion, ThetaUnionBuilder,
};

/// Spark's default `lgNomEntries`.
const DEFAULT_LG: i64 = 12;

pub(super) fn register(ctx: &SessionContext) {
    for kind in [Kind::Sketch, Kind::Union, Kind::Intersection] {
        ctx.register_udaf(AggregateUDF::from(ThetaAggregate {
            kind,
            signature: Signature::variadic_any(Volatility::Immutable),
        }));
    }
    for op in [Op::Estimate, Op::Union, Op::Intersection, Op::Difference] {
        ctx.register_udf(ScalarUDF::from(ThetaFunction {
            op,
            signature: Signature::user_defined(Volatility::Immutable),
        }));
    }
}

fn invalid_buffer<T>(function: &str) -> Result<T> {
    super::invalid_buffer("THETA", function, "theta_sketch_agg")
}

fn read(bytes: &[u8], function: &str) -> Result<CompactThetaSketch> {
    CompactThetaSketch::deserialize(bytes).or_else(|_| invalid_buffer(function))
}

/// Spark's check of `lgNomEntries`; 4 is Spark's too but not the Rust library's.
fn check_lg(lg: i64, function: &str) -> Result<u8> {
    if !(4..=26).contains(&lg) {
        return exec_err!(
            "[THETA_INVALID_LG_NOM_ENTRIES] Invalid call to `{function}`; the `lgNomEntries` value must be between \
             4 and 26, inclusive: {lg}"
        );
    }
    if lg == 4 {
        return exec_err!("`{function}` with lgNomEntries 4 runs on the Spark backend");
    }
    Ok(lg as u8)
}

fn union_of(lg: u8, function: &str) -> Result<ThetaUnion> {
    ThetaUnionBuilder::default().lg_k(lg).build().or_else(|e| exec_err!("{function}: {e}"))
}

/// A sketch's bytes as Java's `toByteArrayCompressed` writes them. The one difference of the
/// Rust library's: a sketch of one hash carries Java's single-item flag.
fn bytes(sketch: &CompactThetaSketch) -> Vec<u8> {
    let mut out = sketch.serialize_compressed();
    const SINGLE_ITEM: u8 = 0x20;
    const EMPTY: u8 = 0x04;
    if out.len() == 16 && out[0] == 1 && out[1] == 3 && out[5] & EMPTY == 0 {
        out[5] |= SINGLE_ITEM;
    }
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Sketch,
    Union,
    Intersection,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ThetaAggregate {
    kind: Kind,
    signature: Signature,
}

impl ThetaAggregate {
    fn function(&self) -> &'static str {
        match self.kind {
            Kind::Sketch => "theta_sketch_agg",
            Kind::Union => "theta_union_agg",
            Kind::Intersection => "theta_intersection_agg",
        }
    }
}

/// The value types `theta_sketch_agg` takes.
fn sketchable(t: &DataType) -> bool {
    match t {
        DataType::Int32 | DataType::Int64 | DataType::Float32 | DataType::Float64 => true,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => true,
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => true,
        DataType::List(f) => matches!(f.data_type(), DataType::Int32 | DataType::Int64),
        _ => false,
    }
}

impl AggregateUDFImpl for ThetaAggregate {
    fn name(&self) -> &str {
        self.function()
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let lg = |t: &DataType| t.is_integer() || t == &DataType::Null;
        let fits = match (self.kind, args) {
            (Kind::Sketch, [t]) => sketchable(t),
            (Kind::Sketch, [t, l]) => sketchable(t) && lg(l),
            (Kind::Union, [t]) | (Kind::Intersection, [t]) => super::is_binary(t),
            (Kind::Union, [t, l]) => super::is_binary(t) && lg(l),
            _ => false,
        };
        if !fits {
            return plan_err!(
                "{} does not take {}",
                self.function(),
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
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
        let function = self.function();
        let lg = match super::int_parameter(&args, 1, function, "lgNomEntries", DEFAULT_LG, i64::MIN..=i64::MAX)? {
            Ok(lg) | Err(lg) => check_lg(lg, function)?,
        };
        Ok(match self.kind {
            Kind::Sketch => {
                let sketch =
                    ThetaSketchBuilder::default().lg_k(lg).build().or_else(|e| exec_err!("{function}: {e}"))?;
                Box::new(Sketching { lg, sketch, merged: None })
            }
            Kind::Union => Box::new(Combining { function, union: Some(union_of(lg, function)?), intersection: None }),
            Kind::Intersection => {
                Box::new(Combining { function, union: None, intersection: Some(ThetaIntersection::default()) })
            }
        })
    }
}

#[derive(Debug)]
struct Sketching {
    lg: u8,
    sketch: ThetaSketch,
    /// The union of the partial sketches merged here (Spark's final buffer).
    merged: Option<ThetaUnion>,
}

impl Sketching {
    /// The sketch rows added here made, as Spark's partial buffer writes it: rebuilt to its
    /// nominal size, compact and ordered.
    fn partial(&mut self) -> CompactThetaSketch {
        self.sketch.trim();
        self.sketch.compact(true)
    }
}

impl Accumulator for Sketching {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let v = &values[0];
        let sketch = &mut self.sketch;
        match v.data_type() {
            DataType::Int32 | DataType::Int64 => {
                let longs = arrow::compute::cast(v, &DataType::Int64)?;
                longs.as_primitive::<Int64Type>().iter().flatten().for_each(|x| sketch.update(x));
            }
            DataType::Float32 | DataType::Float64 => {
                let doubles = arrow::compute::cast(v, &DataType::Float64)?;
                for d in doubles.as_primitive::<Float64Type>().iter().flatten() {
                    sketch.update(canonical_float::from_f64(d));
                }
            }
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
                let text = arrow::compute::cast(v, &DataType::Utf8)?;
                for s in text.as_string::<i32>().iter().flatten().filter(|s| !s.is_empty()) {
                    sketch.update(raw_bytes::from_str(s));
                }
            }
            DataType::List(f) => {
                let width = if f.data_type() == &DataType::Int32 { 4 } else { 8 };
                let lists = v.as_list::<i32>();
                for i in 0..lists.len() {
                    if lists.is_null(i) || lists.value(i).is_empty() {
                        continue;
                    }
                    // Java hashes an int[] or long[] as its items' little-endian bytes; a NULL
                    // item reads as 0.
                    let items = arrow::compute::cast(&lists.value(i), &DataType::Int64)?;
                    let mut bytes = Vec::with_capacity(items.len() * width);
                    for x in items.as_primitive::<Int64Type>().iter() {
                        let x = x.unwrap_or(0);
                        if width == 4 {
                            bytes.extend_from_slice(&(x as i32).to_le_bytes());
                        } else {
                            bytes.extend_from_slice(&x.to_le_bytes());
                        }
                    }
                    sketch.update(raw_bytes::from_vec(bytes));
                }
            }
            _ => {
                for b in super::binaries(v)?.iter().flatten().filter(|b| !b.is_empty()) {
                    sketch.update(raw_bytes::from_slice(b));
                }
            }
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let union = match &mut self.merged {
            Some(u) => u,
            None => self.merged.insert(union_of(self.lg, "theta_sketch_agg")?),
        };
        for b in super::binaries(&states[0])?.iter().flatten() {
            let other = read(b, "theta_sketch_agg")?;
            union.update(&other).or_else(|_| invalid_buffer("theta_sketch_agg"))?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(bytes(&self.partial())))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        // Spark's final answer: a fresh sketch's union with each partial one.
        let union = match self.merged.take() {
            Some(u) => u,
            None => {
                let mut u = union_of(self.lg, "theta_sketch_agg")?;
                u.update(&self.partial()).or_else(|_| invalid_buffer("theta_sketch_agg"))?;
                u
            }
        };
        let out = bytes(&union.to_sketch(true));
        self.merged = Some(union);
        Ok(ScalarValue::Binary(Some(out)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.sketch.estimated_size()
    }
}

/// `theta_union_agg` (a union) or `theta_intersection_agg` (an intersection).
#[derive(Debug)]
struct Combining {
    function: &'static str,
    union: Option<ThetaUnion>,
    intersection: Option<ThetaIntersection>,
}

impl Accumulator for Combining {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        for b in super::binaries(&values[0])?.iter().flatten() {
            let sketch = read(b, self.function)?;
            let done = match (&mut self.union, &mut self.intersection) {
                (Some(u), _) => u.update(&sketch),
                (_, Some(i)) => i.update(&sketch),
                _ => Ok(()),
            };
            done.or_else(|_| invalid_buffer(self.function))?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.update_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        // An intersection of nothing yet is no sketch: NULL, which a merge skips.
        if self.intersection.as_ref().is_some_and(|i| !i.has_result()) {
            return Ok(vec![ScalarValue::Binary(None)]);
        }
        self.evaluate().map(|v| vec![v])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let sketch = match (&self.union, &self.intersection) {
            (Some(u), _) => u.to_sketch(true),
            (_, Some(i)) => match i.to_sketch(true) {
                Some(s) => s,
                None => {
                    return exec_err!(
                        "theta_intersection_agg of no sketches would be the infinite set, which is not a legal result"
                    )
                }
            },
            (None, None) => return exec_err!("internal error: a Theta aggregate holds no union or intersection"),
        };
        Ok(ScalarValue::Binary(Some(bytes(&sketch))))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.union.as_ref().map_or(0, ThetaUnion::estimated_size)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Estimate,
    Union,
    Intersection,
    Difference,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ThetaFunction {
    op: Op,
    signature: Signature,
}

impl ScalarUDFImpl for ThetaFunction {
    fn name(&self) -> &str {
        match self.op {
            Op::Estimate => "theta_sketch_estimate",
            Op::Union => "theta_union",
            Op::Intersection => "theta_intersection",
            Op::Difference => "theta_difference",
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let sketches = if self.op == Op::Estimate { 1 } else { 2 };
        let fits = args.len() >= sketches
            && args[..sketches].iter().all(super::is_binary)
            && match &args[sketches..] {
                [] => true,
                [l] => self.op == Op::Union && (l.is_integer() || l == &DataType::Null),
                _ => false,
            };
        if !fits {
            return plan_err!(
                "{} does not take {}",
                self.name(),
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(args
            .iter()
            .enumerate()
            .map(|(i, _)| if i < sketches { DataType::Binary } else { DataType::Int32 })
            .collect())
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(if self.op == Op::Estimate { DataType::Int64 } else { DataType::Binary })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = self.name();
        let scalar = super::all_scalar(&args.args);
        let columns = super::arrays(&args.args, args.number_rows)?;
        let left = super::binaries(&columns[0])?;
        let rows = left.len();
        if self.op == Op::Estimate {
            let mut out = Vec::with_capacity(rows);
            for i in 0..rows {
                // Java's `Math.round`: half up (an estimate is never negative).
                out.push(if left.is_null(i) {
                    None
                } else {
                    Some(read(left.value(i), name)?.estimate().round() as i64)
                });
            }
            return super::answer(Arc::new(Int64Array::from(out)), scalar);
        }
        let right = super::binaries(&columns[1])?;
        let lg = match columns.get(2) {
            Some(c) => Some(arrow::compute::cast(c, &DataType::Int64)?),
            None => None,
        };
        let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(rows);
        for i in 0..rows {
            if super::any_null(&columns, i) {
                out.push(None);
                continue;
            }
            let (a, b) = (read(left.value(i), name)?, read(right.value(i), name)?);
            let sketch = match self.op {
                Op::Union => {
                    let lg = lg.as_ref().map_or(DEFAULT_LG, |c| c.as_primitive::<Int64Type>().value(i));
                    let mut union = union_of(check_lg(lg, name)?, name)?;
                    union.update(&a).or_else(|_| invalid_buffer(name))?;
                    union.update(&b).or_else(|_| invalid_buffer(name))?;
                    union.to_sketch(true)
                }
                Op::Intersection => {
                    let mut intersection = ThetaIntersection::default();
                    intersection.update(&a).or_else(|_| invalid_buffer(name))?;
                    intersection.update(&b).or_else(|_| invalid_buffer(name))?;
                    match intersection.to_sketch(true) {
                        Some(sketch) => sketch,
                        None => return exec_err!("internal error: {name} of two sketches has no result"),
                    }
                }
                Op::Difference => ThetaANotB::default().compute(&a, &b, true).or_else(|_| invalid_buffer(name))?,
                Op::Estimate => return exec_err!("internal error: {name} estimates one sketch"),
            };
            out.push(Some(bytes(&sketch)));
        }
        super::answer(Arc::new(BinaryArray::from_iter(out)), scalar)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02X}")).collect()
    }

    fn sketch_of(values: &[i64]) -> CompactThetaSketch {
        let mut s = ThetaSketchBuilder::default().lg_k(12).build().unwrap();
        values.iter().for_each(|v| s.update(*v));
        s.compact(true)
    }

    #[test]
    fn sketches_and_their_set_operations_are_sparks_bytes() {
        // Each as Spark 4.1.4 writes it.
        assert_eq!(hex(&bytes(&sketch_of(&[]))), "01030300001E0000");
        assert_eq!(hex(&bytes(&sketch_of(&[1]))), "01030300003ACC9315F97DCBBD86A105");
        assert_eq!(
            hex(&bytes(&sketch_of(&[1, 2, 3]))),
            "0104033E011ACC930316861AF72DF7E4558FBE9C3477E9EAEFB2E5966BADAA3DC0"
        );
        let (a, b) = (sketch_of(&[1, 2, 3]), sketch_of(&[2, 3, 4]));
        let mut i = ThetaIntersection::default();
        i.update(&a).unwrap();
        i.update(&b).unwrap();
        assert_eq!(hex(&bytes(&i.to_sketch(true).unwrap())), "0104033E011ACC93027A75C2044BF25F0FECB9659AEB6A8F70");
        let difference = ThetaANotB::default().compute(&a, &b, true).unwrap();
        assert_eq!(hex(&bytes(&difference)), "01030300003ACC9315F97DCBBD86A105");
        let mut doubles = ThetaSketchBuilder::default().lg_k(12).build().unwrap();
        doubles.update(canonical_float::from_f64(1.0));
        assert_eq!(hex(&bytes(&doubles.compact(true))), "01030300003ACC9385D2CEE5CAD7A37C");
    }
}
