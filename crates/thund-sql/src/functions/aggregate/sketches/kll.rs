//! Spark's KLL quantile sketches, for BIGINT, FLOAT and DOUBLE items: the aggregates
//! `kll_sketch_agg_*(x[, k])` and `kll_merge_agg_*(sketch[, k])`, and `kll_sketch_get_n_*`,
//! `kll_sketch_get_quantile_*`, `kll_sketch_get_rank_*` (a value or an array of them),
//! `kll_sketch_merge_*` and `kll_sketch_to_string_*`.
//!
//! Spark's rules, each read off Spark 4.1.4: `k` is an INT literal in 8..=65535 (200 by
//! default); NULLs are skipped and so is a NaN (Java's sketch never counts one); a group without
//! values is an empty sketch, never NULL; ranks and quantiles are inclusive, rank 0 and 1 being
//! the exact minimum and maximum, and a NaN rank answers the minimum as Java's sketch does.
//!
//! Java's sketch keeps its level 0 newest first and merges another sketch's level 0 in that
//! order; the Rust sketch keeps it oldest first (and writes it newest first, as Java does). So a
//! merge of an exact sketch here re-adds the other's items in the order of its bytes, which
//! keeps the merged bytes Java's. Past the exact range compaction is random in both libraries.

use std::fmt::Debug;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BinaryArray, Int64Array, ListArray};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field, FieldRef, Float32Type, Float64Type, Int64Type};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl,
    Signature, Volatility,
};
use datafusion::prelude::SessionContext;
use datasketches::codec::SketchSlice;
use datasketches::common::SearchCriteria;
use datasketches::kll::{KllFloat, KllSketch, KllValue};

/// Spark's default `k`.
const DEFAULT_K: u16 = 200;

pub(super) fn register(ctx: &SessionContext) {
    for items in [Items::Bigint, Items::Float, Items::Double] {
        for merge in [false, true] {
            ctx.register_udaf(AggregateUDF::from(KllAggregate {
                name: format!("kll_{}_agg_{}", if merge { "merge" } else { "sketch" }, items.suffix()),
                items,
                merge,
                signature: Signature::variadic_any(Volatility::Immutable),
            }));
        }
        for op in [Op::N, Op::Quantile, Op::Rank, Op::Merge, Op::Text] {
            ctx.register_udf(ScalarUDF::from(KllFunction {
                name: format!("kll_sketch_{}_{}", op.name(), items.suffix()),
                items,
                op,
                signature: Signature::user_defined(Volatility::Immutable),
            }));
        }
    }
}

/// The item type of a family of functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Items {
    Bigint,
    Float,
    Double,
}

impl Items {
    fn suffix(self) -> &'static str {
        match self {
            Items::Bigint => "bigint",
            Items::Float => "float",
            Items::Double => "double",
        }
    }

    fn item_type(self) -> DataType {
        match self {
            Items::Bigint => DataType::Int64,
            Items::Float => DataType::Float32,
            Items::Double => DataType::Float64,
        }
    }

    /// The column types Spark's aggregate takes (it casts none implicitly).
    fn accepts(self, t: &DataType) -> bool {
        match self {
            Items::Bigint => matches!(t, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64),
            Items::Float => t == &DataType::Float32,
            Items::Double => matches!(t, DataType::Float32 | DataType::Float64),
        }
    }
}

/// Runs `$body` with `$T` the Rust item type of `$items`.
macro_rules! with_item {
    ($items:expr, $T:ident => $body:expr) => {
        match $items {
            Items::Bigint => {
                type $T = i64;
                $body
            }
            Items::Float => {
                type $T = KllFloat<f32>;
                $body
            }
            Items::Double => {
                type $T = KllFloat<f64>;
                $body
            }
        }
    };
}

/// An item type of the Rust sketch, read from and written to Arrow.
trait Item: KllValue + Ord + Clone + Debug + Send + Sync + 'static {
    /// Java's name of its sketch class, as its `toString` prints it.
    const CLASS: &'static str;
    /// The bytes of one item.
    const SIZE: usize;
    /// A column's values as items: NULL (and NaN, which Java's sketch skips) as `None`.
    fn items(a: &ArrayRef) -> Result<Vec<Option<Self>>>;
    fn scalar(v: Option<Self>) -> ScalarValue;
    /// The item as Java's `toString` writes it.
    fn java_text(&self) -> String;
}

impl Item for i64 {
    const CLASS: &'static str = "KllKllLongsSketch";
    const SIZE: usize = 8;
    fn items(a: &ArrayRef) -> Result<Vec<Option<Self>>> {
        Ok(arrow::compute::cast(a, &DataType::Int64)?.as_primitive::<Int64Type>().iter().collect())
    }
    fn scalar(v: Option<Self>) -> ScalarValue {
        ScalarValue::Int64(v)
    }
    fn java_text(&self) -> String {
        self.to_string()
    }
}

impl Item for KllFloat<f32> {
    const CLASS: &'static str = "KllKllFloatsSketch";
    const SIZE: usize = 4;
    fn items(a: &ArrayRef) -> Result<Vec<Option<Self>>> {
        let a = arrow::compute::cast(a, &DataType::Float32)?;
        Ok(a.as_primitive::<Float32Type>().iter().map(|v| v.and_then(|v| KllFloat::<f32>::new(v).ok())).collect())
    }
    fn scalar(v: Option<Self>) -> ScalarValue {
        ScalarValue::Float32(v.map(|v| *v))
    }
    fn java_text(&self) -> String {
        crate::functions::variant::java_float(**self)
    }
}

impl Item for KllFloat<f64> {
    const CLASS: &'static str = "KllKllDoublesSketch";
    const SIZE: usize = 8;
    fn items(a: &ArrayRef) -> Result<Vec<Option<Self>>> {
        let a = arrow::compute::cast(a, &DataType::Float64)?;
        Ok(a.as_primitive::<Float64Type>().iter().map(|v| v.and_then(|v| KllFloat::<f64>::new(v).ok())).collect())
    }
    fn scalar(v: Option<Self>) -> ScalarValue {
        ScalarValue::Float64(v.map(|v| *v))
    }
    fn java_text(&self) -> String {
        crate::functions::variant::java_double(**self)
    }
}

fn invalid_buffer<T>(function: &str) -> Result<T> {
    super::invalid_buffer("KLL", function, "kll_sketch_agg")
}

fn read<T: Item>(bytes: &[u8], function: &str) -> Result<KllSketch<T>> {
    KllSketch::<T>::deserialize(bytes).or_else(|_| invalid_buffer(function))
}

/// The items of level 0 of `sketch` in the order Java keeps them (newest first), which is
/// the order of its bytes; `None` for a sketch past its exact range (more than one level).
fn level_zero<T: Item>(sketch: &KllSketch<T>) -> Option<Vec<T>> {
    let bytes = sketch.serialize();
    let start = if sketch.n() == 1 {
        8
    } else {
        // The full preamble: the number of levels at byte 18, each level's offset, min and max.
        let levels = *bytes.get(18)? as usize;
        if levels != 1 {
            return None;
        }
        20 + 4 * levels + 2 * T::SIZE
    };
    let mut slice = SketchSlice::new(bytes.get(start..)?);
    (0..sketch.num_retained()).map(|_| T::deserialize(&mut slice).ok()).collect()
}

/// Merges `other` into `into` as Java's sketch does (see the module's notes).
fn merge<T: Item>(into: &mut KllSketch<T>, other: &KllSketch<T>, function: &str) -> Result<()> {
    match level_zero(other) {
        Some(items) if !other.is_estimation_mode() => items.into_iter().for_each(|i| into.update(i)),
        _ => into.merge(other).or_else(|_| invalid_buffer(function))?,
    }
    Ok(())
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct KllAggregate {
    name: String,
    items: Items,
    /// `kll_merge_agg_*`: merges sketches rather than building one from values.
    merge: bool,
    signature: Signature,
}

impl AggregateUDFImpl for KllAggregate {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let first = args.first();
        let fits =
            if self.merge { first.is_some_and(super::is_binary) } else { first.is_some_and(|t| self.items.accepts(t)) };
        if !fits || args.len() > 2 || args.get(1).is_some_and(|t| !t.is_integer() && t != &DataType::Null) {
            return plan_err!(
                "{} takes {} and an INT k, not {}",
                self.name,
                if self.merge {
                    "KLL sketches (BINARY)".to_string()
                } else {
                    format!("{} values", self.items.suffix().to_uppercase())
                },
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
        let k = match super::int_parameter(&args, 1, &self.name, "k", DEFAULT_K as i64, 8..=65535)? {
            Ok(k) => k as u16,
            Err(k) => {
                return plan_err!(
                    "[KLL_SKETCH_K_OUT_OF_RANGE] For function `{}`, the k parameter must be between 8 and 65535 \
                     (inclusive), but got {k}",
                    self.name
                )
            }
        };
        let given = (args.exprs.len() > 1).then_some(k);
        let name = self.name.clone();
        Ok(
            with_item!(self.items, T => Box::new(Sketching::<T> { name, merge: self.merge, k, given, sketch: None, updated: false }) as Box<dyn Accumulator>),
        )
    }
}

#[derive(Debug)]
struct Sketching<T: Item> {
    name: String,
    merge: bool,
    /// `k`, Spark's default when not given.
    k: u16,
    /// `k` when it was given (`kll_merge_agg` takes the first sketch's otherwise).
    given: Option<u16>,
    sketch: Option<KllSketch<T>>,
    /// Whether rows were added here (rather than partial sketches merged).
    updated: bool,
}

impl<T: Item> Sketching<T> {
    fn fresh(&self, k: u16) -> Result<KllSketch<T>> {
        KllSketch::new(k).or_else(|e| exec_err!("{}: {e}", self.name))
    }

    /// Merges each sketch of `bytes` in, as Spark's merge of buffers does.
    fn merge_sketches(&mut self, bytes: &BinaryArray) -> Result<()> {
        for b in bytes.iter().flatten() {
            let other = read::<T>(b, &self.name)?;
            let mut sketch = match self.sketch.take() {
                Some(s) => s,
                None => self.fresh(self.given.unwrap_or(if self.merge { other.k() } else { self.k }))?,
            };
            merge(&mut sketch, &other, &self.name)?;
            self.sketch = Some(sketch);
        }
        Ok(())
    }

    fn bytes(&self) -> Result<Vec<u8>> {
        Ok(match &self.sketch {
            Some(s) => s.serialize(),
            None => self.fresh(self.given.unwrap_or(self.k))?.serialize(),
        })
    }
}

impl<T: Item> Accumulator for Sketching<T> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        if self.merge {
            return self.merge_sketches(&super::binaries(&values[0])?);
        }
        self.updated = true;
        let mut sketch = match self.sketch.take() {
            Some(s) => s,
            None => self.fresh(self.k)?,
        };
        T::items(&values[0])?.into_iter().flatten().for_each(|v| sketch.update(v));
        self.sketch = Some(sketch);
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.merge_sketches(&super::binaries(&states[0])?)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![ScalarValue::Binary(Some(self.bytes()?))])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        // Spark's final answer is a fresh sketch merged with the partial one (for
        // `kll_merge_agg` only when `k` was given: its buffer is otherwise the first sketch).
        let fresh_k = if self.merge { self.given } else { Some(self.k) };
        if let (true, Some(k), Some(partial)) = (self.updated || self.merge, fresh_k, &self.sketch) {
            let mut fresh = self.fresh(k)?;
            merge(&mut fresh, partial, &self.name)?;
            return Ok(ScalarValue::Binary(Some(fresh.serialize())));
        }
        Ok(ScalarValue::Binary(Some(self.bytes()?)))
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.sketch.as_ref().map_or(0, |s| s.num_retained() * T::SIZE)
    }
}

/// A scalar function of KLL sketches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    /// `get_n`: the number of items seen.
    N,
    /// `get_quantile`: the item at a rank (or an array of ranks).
    Quantile,
    /// `get_rank`: the rank of an item (or an array of items).
    Rank,
    /// `merge`: two sketches as one, with the first one's `k`.
    Merge,
    /// `to_string`: Java's summary of the sketch.
    Text,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::N => "get_n",
            Op::Quantile => "get_quantile",
            Op::Rank => "get_rank",
            Op::Merge => "merge",
            Op::Text => "to_string",
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct KllFunction {
    name: String,
    items: Items,
    op: Op,
    signature: Signature,
}

impl KllFunction {
    /// The type of the second argument: DOUBLE ranks, or the family's items.
    fn argument_type(&self) -> DataType {
        if self.op == Op::Quantile {
            DataType::Float64
        } else {
            self.items.item_type()
        }
    }
}

impl ScalarUDFImpl for KllFunction {
    fn name(&self) -> &str {
        &self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let arity = if matches!(self.op, Op::Quantile | Op::Rank | Op::Merge) { 2 } else { 1 };
        let fits = args.len() == arity
            && super::is_binary(&args[0])
            && match self.op {
                Op::Merge => super::is_binary(&args[1]),
                Op::Quantile | Op::Rank => {
                    let t = match &args[1] {
                        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => f.data_type(),
                        t => t,
                    };
                    t.is_numeric() || t == &DataType::Null || (self.op == Op::Quantile && t == &DataType::Utf8)
                }
                Op::N | Op::Text => true,
            };
        if !fits {
            return plan_err!(
                "{} does not take {}",
                self.name,
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            );
        }
        let mut out = vec![DataType::Binary];
        if let Some(second) = args.get(1) {
            out.push(match (self.op, second) {
                (Op::Merge, _) => DataType::Binary,
                (_, DataType::List(_) | DataType::LargeList(_) | DataType::FixedSizeList(..)) => {
                    DataType::new_list(self.argument_type(), true)
                }
                _ => self.argument_type(),
            });
        }
        Ok(out)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        let list = matches!(args.get(1), Some(DataType::List(_)));
        Ok(match self.op {
            Op::N => DataType::Int64,
            Op::Merge => DataType::Binary,
            Op::Text => DataType::Utf8,
            Op::Quantile if list => DataType::List(Arc::new(Field::new_list_field(self.items.item_type(), false))),
            Op::Quantile => self.items.item_type(),
            Op::Rank if list => DataType::List(Arc::new(Field::new_list_field(DataType::Float64, false))),
            Op::Rank => DataType::Float64,
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if matches!(self.op, Op::Quantile | Op::Rank) {
            super::constant(&args.args, 1, &self.name, if self.op == Op::Quantile { "rank" } else { "quantile" })?;
        }
        let scalar = super::all_scalar(&args.args);
        let columns = super::arrays(&args.args, args.number_rows)?;
        let out = with_item!(self.items, T => self.compute::<T>(&columns)?);
        super::answer(out, scalar)
    }
}

impl KllFunction {
    fn compute<T: Item>(&self, columns: &[ArrayRef]) -> Result<ArrayRef> {
        let sketches = super::binaries(&columns[0])?;
        let rows = sketches.len();
        let present = |i: usize| !super::any_null(columns, i);
        match self.op {
            Op::N => {
                let mut out = Vec::with_capacity(rows);
                for i in 0..rows {
                    out.push(if present(i) {
                        Some(read::<T>(sketches.value(i), &self.name)?.n() as i64)
                    } else {
                        None
                    });
                }
                Ok(Arc::new(Int64Array::from(out)))
            }
            Op::Text => {
                let mut out = Vec::with_capacity(rows);
                for i in 0..rows {
                    out.push(if present(i) { Some(summary::<T>(sketches.value(i), &self.name)?) } else { None });
                }
                Ok(Arc::new(arrow::array::StringArray::from(out)))
            }
            Op::Merge => {
                let right = super::binaries(&columns[1])?;
                let mut out: Vec<Option<Vec<u8>>> = Vec::with_capacity(rows);
                for i in 0..rows {
                    out.push(if present(i) {
                        let mut left = read::<T>(sketches.value(i), &self.name)?;
                        merge(&mut left, &read::<T>(right.value(i), &self.name)?, &self.name)?;
                        Some(left.serialize())
                    } else {
                        None
                    });
                }
                Ok(Arc::new(BinaryArray::from_iter(out)))
            }
            Op::Quantile | Op::Rank => self.query::<T>(&sketches, &columns[1], rows),
        }
    }

    /// `get_quantile` and `get_rank`, of one argument or an array of them.
    fn query<T: Item>(&self, sketches: &BinaryArray, argument: &ArrayRef, rows: usize) -> Result<ArrayRef> {
        let list = argument.as_list_opt::<i32>();
        let mut answers: Vec<Option<Vec<ScalarValue>>> = Vec::with_capacity(rows);
        for i in 0..rows {
            if sketches.is_null(i) || argument.is_null(i) {
                answers.push(None);
                continue;
            }
            let sketch = read::<T>(sketches.value(i), &self.name)?;
            if sketch.is_empty() {
                return invalid_buffer(&self.name);
            }
            let values = match list {
                Some(l) => l.value(i),
                None => argument.slice(i, 1),
            };
            let mut out = Vec::with_capacity(values.len());
            if self.op == Op::Quantile {
                let view = sketch.sorted_view();
                let ranks = arrow::compute::cast(&values, &DataType::Float64)?;
                for rank in ranks.as_primitive::<Float64Type>().iter() {
                    let Some(rank) = rank else { return exec_err!("a rank of `{}` is NULL", self.name) };
                    let item = if rank.is_nan() || rank == 0.0 {
                        sketch.min_item().cloned()
                    } else if rank == 1.0 {
                        sketch.max_item().cloned()
                    } else if (0.0..=1.0).contains(&rank) {
                        view.quantile(rank, SearchCriteria::Inclusive).or_else(|_| invalid_buffer(&self.name))?
                    } else {
                        return exec_err!(
                            "[KLL_SKETCH_INVALID_QUANTILE_RANGE] For function `{}`, the quantile value must be \
                             between 0.0 and 1.0 (inclusive)",
                            self.name
                        );
                    };
                    out.push(T::scalar(item));
                }
            } else {
                for item in T::items(&values)? {
                    // A NULL or NaN item has no rank.
                    let Some(item) = item else { return invalid_buffer(&self.name) };
                    out.push(ScalarValue::Float64(sketch.rank(&item, SearchCriteria::Inclusive)));
                }
            }
            answers.push(Some(out));
        }
        let item_type = if self.op == Op::Quantile { self.items.item_type() } else { DataType::Float64 };
        if list.is_none() {
            let null = ScalarValue::try_from(&item_type)?;
            let flat: Vec<ScalarValue> = answers
                .into_iter()
                .map(|a| a.and_then(|v| v.into_iter().next()).unwrap_or_else(|| null.clone()))
                .collect();
            if flat.is_empty() {
                return Ok(arrow::array::new_empty_array(&item_type));
            }
            return ScalarValue::iter_to_array(flat);
        }
        let lengths: Vec<usize> = answers.iter().map(|a| a.as_ref().map_or(0, Vec::len)).collect();
        let nulls: Vec<bool> = answers.iter().map(Option::is_some).collect();
        let flat: Vec<ScalarValue> = answers.into_iter().flatten().flatten().collect();
        let values =
            if flat.is_empty() { arrow::array::new_empty_array(&item_type) } else { ScalarValue::iter_to_array(flat)? };
        Ok(Arc::new(ListArray::try_new(
            Arc::new(Field::new_list_field(item_type, false)),
            OffsetBuffer::from_lengths(lengths),
            values,
            Some(nulls.into()),
        )?))
    }
}

/// Java's `toString` of the sketch in `bytes`, as Spark's `kll_sketch_to_string_*` prints it.
fn summary<T: Item>(bytes: &[u8], function: &str) -> Result<String> {
    let sketch = read::<T>(bytes, function)?;
    let full = bytes.first() == Some(&5);
    let levels = if full { bytes[18] as usize } else { 1 };
    // The free space of level 0 is the first level offset; capacity is it plus what is retained.
    let free = if full {
        u32::from_le_bytes([bytes[20], bytes[21], bytes[22], bytes[23]]) as usize
    } else {
        sketch.k() as usize - sketch.num_retained()
    };
    let capacity = free + sketch.num_retained();
    let sorted = bytes.get(3).is_some_and(|f| f & 2 != 0);
    let updatable = 20 + (levels + 1) * 4 + 2 * T::SIZE + capacity * T::SIZE;
    let compact = match sketch.n() {
        0 => 8,
        1 => 8 + T::SIZE,
        _ => 20 + levels * 4 + 2 * T::SIZE + sketch.num_retained() * T::SIZE,
    };
    let item = |i: Option<&T>| i.map_or_else(|| "NaN".to_string(), |i| i.java_text());
    let rows = [
        ("K", sketch.k().to_string()),
        ("Dynamic min K", sketch.min_k().to_string()),
        ("M", "8".to_string()),
        ("N", sketch.n().to_string()),
        ("Epsilon", format!("{:.3}%", sketch.normalized_rank_error() * 100.0)),
        ("Epsilon PMF", format!("{:.3}%", sketch.normalized_pmf_error() * 100.0)),
        ("Empty", sketch.is_empty().to_string()),
        ("Estimation Mode", sketch.is_estimation_mode().to_string()),
        ("Levels", levels.to_string()),
        ("Level 0 Sorted", sorted.to_string()),
        ("Capacity Items", capacity.to_string()),
        ("Retained Items", sketch.num_retained().to_string()),
        ("Free Space", free.to_string()),
        ("ReadOnly", "false".to_string()),
        ("Updatable Storage Bytes", updatable.to_string()),
        ("Compact Storage Bytes", compact.to_string()),
        ("Min Item", item(sketch.min_item())),
        ("Max Item", item(sketch.max_item())),
    ];
    let mut out = format!("\n### {} Summary:\n", T::CLASS);
    for (name, value) in rows {
        out.push_str(&format!("   {name:<23}: {value}\n"));
    }
    out.push_str("### End sketch summary\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|b| format!("{b:02X}")).collect()
    }

    #[test]
    fn sketches_are_javas_bytes() {
        // Spark 4.1.4's bytes: the empty sketch, one item, and five merged into a fresh sketch.
        assert_eq!(hex(&KllSketch::<i64>::new(200).unwrap().serialize()), "02010F01C8000800");
        let mut one = KllSketch::<i64>::new(200).unwrap();
        one.update(7);
        assert_eq!(hex(&one.serialize()), "02020F04C80008000700000000000000");
        let mut partial = KllSketch::<i64>::new(200).unwrap();
        (1..=5).for_each(|v| partial.update(v));
        let mut fresh = KllSketch::<i64>::new(200).unwrap();
        merge(&mut fresh, &partial, "t").unwrap();
        // Java's level 0 is newest first; the fresh sketch took the partial's items newest first.
        let bytes = hex(&fresh.serialize());
        assert!(bytes.starts_with("05010F00C80008000500000000000000C8000100C3000000"), "{bytes}");
        assert!(bytes.ends_with(
            "0100000000000000050000000000000001000000000000000200000000000000030000000000000004000000000000000500000000000000"
        ));
    }

    #[test]
    fn the_summary_is_javas() {
        let mut s = KllSketch::<i64>::new(200).unwrap();
        (1..=5).for_each(|v| s.update(v));
        let text = summary::<i64>(&s.serialize(), "t").unwrap();
        assert!(text.starts_with("\n### KllKllLongsSketch Summary:\n   K                      : 200\n"), "{text}");
        assert!(text.contains("   Epsilon                : 1.329%\n   Epsilon PMF            : 1.652%\n"), "{text}");
        assert!(text.contains(
            "   Capacity Items         : 200\n   Retained Items         : 5\n   Free Space             : 195\n"
        ));
        assert!(text.contains("   Updatable Storage Bytes: 1644\n   Compact Storage Bytes  : 80\n"), "{text}");
        assert!(
            text.ends_with("   Min Item               : 1\n   Max Item               : 5\n### End sketch summary\n")
        );
    }
}
