//! Spark's higher-order functions: `transform`, `filter`, `exists`, `forall`, `aggregate`
//! (`reduce`), `zip_with`, `map_filter`, `map_zip_with`, `transform_keys`, `transform_values` and
//! `array_sort` with a comparator (planned as `array_sort_by`, since the one-argument
//! `array_sort` is a plain function), on DataFusion's lambda support (`HigherOrderUDFImpl`).
//!
//! Each function evaluates its lambda once per batch over the flattened elements of all rows,
//! never row by row: the lambda's parameters are whole Arrow arrays (the elements, their index
//! in their row, a map's keys and values), and columns the lambda captures from its row are
//! spread to the elements by row number. The one fold, `aggregate`, steps through element
//! positions: step k merges the k-th element of every row that has one, so a batch costs as
//! many evaluations as its longest array. `array_sort`'s comparator sorts every row at once by
//! a stable bottom-up merge sort run in lockstep: each step compares the heads of every merge
//! under way in one evaluation, so a batch costs about twice as many evaluations as its longest
//! array, and the comparisons made are O(n log n).
//!
//! Spark's rules kept here: `exists` and `forall` follow three-valued logic (a NULL from the
//! predicate with no decisive element answers NULL); `filter` drops elements whose predicate is
//! NULL; `zip_with` pads the shorter array with NULLs; `aggregate`'s merge must answer the
//! type of its start value, as Spark requires; `transform_keys` fails on a NULL or duplicate
//! key, as Spark does under its default `mapKeyDedupPolicy`; `map_zip_with` visits the first
//! map's keys in order, then the second's that the first lacks, a missing value being NULL;
//! `array_sort`'s comparator must answer an integer, and a NULL answer fails the query, as on
//! Spark. The sort is stable, as Java's `Arrays.sort` that Spark calls, so a consistent
//! comparator orders as on Spark.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, BooleanBufferBuilder, Int32Array, MapArray, StructArray,
    UInt32Array,
};
use arrow::buffer::{NullBuffer, OffsetBuffer};
use arrow::compute::{cast, filter, interleave, prep_null_mask_filter, take, take_arrays};
use arrow::datatypes::{DataType, Field, FieldRef};
use arrow::row::{RowConverter, SortField};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{
    ColumnarValue, HigherOrderFunctionArgs, HigherOrderReturnFieldArgs, HigherOrderSignature, HigherOrderUDF,
    HigherOrderUDFImpl, LambdaArgument, LambdaParametersProgress, ValueOrLambda, Volatility,
};
use datafusion::prelude::SessionContext;

mod map_zip;
mod sort;

use map_zip::{common_key, map_zip_with};
use sort::sort_with;

/// Spark's higher-order functions, as they run here: on DataFusion's lambdas.
pub(crate) const FUNCTIONS: &[crate::declare::Function] = &[
    crate::declare::Function::udf("transform"),
    crate::declare::Function::udf("filter"),
    crate::declare::Function::udf("exists"),
    crate::declare::Function::udf("forall"),
    crate::declare::Function::udf("aggregate"),
    crate::declare::Function::udf("reduce"),
    crate::declare::Function::udf("zip_with"),
    crate::declare::Function::udf("map_filter"),
    crate::declare::Function::udf("transform_keys"),
    crate::declare::Function::udf("transform_values"),
    crate::declare::Function::udf("map_zip_with"),
    // `array_sort(array, comparator)` (`collection`'s template names it so).
    crate::declare::Function::udf("array_sort_by"),
];

/// Registers the functions with `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    for kind in [
        Kind::Transform,
        Kind::Filter,
        Kind::Exists,
        Kind::Forall,
        Kind::Aggregate("aggregate"),
        Kind::Aggregate("reduce"),
        Kind::ZipWith,
        Kind::MapFilter,
        Kind::TransformKeys,
        Kind::TransformValues,
        Kind::MapZipWith,
        Kind::ArraySort,
    ] {
        ctx.register_higher_order_function(Arc::new(HigherOrderUDF::new_from_impl(SparkLambda::new(kind))));
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Transform,
    Filter,
    Exists,
    Forall,
    /// `aggregate` and its other name `reduce`.
    Aggregate(&'static str),
    ZipWith,
    MapFilter,
    TransformKeys,
    TransformValues,
    MapZipWith,
    /// `array_sort(array, comparator)`.
    ArraySort,
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SparkLambda {
    kind: Kind,
    signature: HigherOrderSignature,
}

impl SparkLambda {
    fn new(kind: Kind) -> Self {
        Self { kind, signature: HigherOrderSignature::variadic_any(Volatility::Immutable) }
    }

    /// The shape of the call: how many values come before the lambdas, and how many lambdas.
    fn shape(&self) -> (usize, std::ops::RangeInclusive<usize>) {
        match self.kind {
            Kind::Aggregate(_) => (2, 1..=2),
            Kind::ZipWith | Kind::MapZipWith => (2, 1..=1),
            _ => (1, 1..=1),
        }
    }

    fn usage(&self) -> &'static str {
        match self.kind {
            Kind::Transform => "transform(array, (x[, i]) -> expr)",
            Kind::Filter => "filter(array, (x[, i]) -> predicate)",
            Kind::Exists => "exists(array, x -> predicate)",
            Kind::Forall => "forall(array, x -> predicate)",
            Kind::Aggregate(_) => "aggregate(array, start, (acc, x) -> merge[, acc -> finish])",
            Kind::ZipWith => "zip_with(array1, array2, (x, y) -> expr)",
            Kind::MapFilter => "map_filter(map, (k, v) -> predicate)",
            Kind::TransformKeys => "transform_keys(map, (k, v) -> expr)",
            Kind::TransformValues => "transform_values(map, (k, v) -> expr)",
            Kind::MapZipWith => "map_zip_with(map1, map2, (k, v1, v2) -> expr)",
            Kind::ArraySort => "array_sort(array, (left, right) -> comparison)",
        }
    }

    /// The call's values and lambdas, checked against its shape.
    fn split<'a, V, L>(&self, args: &'a [ValueOrLambda<V, L>]) -> Result<(Vec<&'a V>, Vec<&'a L>)> {
        let (values, lambdas) = self.shape();
        let mut vs = Vec::new();
        let mut ls = Vec::new();
        for a in args {
            match a {
                ValueOrLambda::Value(v) if ls.is_empty() => vs.push(v),
                ValueOrLambda::Lambda(l) => ls.push(l),
                ValueOrLambda::Value(_) => {
                    return plan_err!("{} takes its lambdas last: {}", self.name(), self.usage())
                }
            }
        }
        if vs.len() != values || !lambdas.contains(&ls.len()) {
            return plan_err!("{} is called as {}", self.name(), self.usage());
        }
        Ok((vs, ls))
    }
}

/// The element field of a list type.
fn element(name: &str, t: &DataType) -> Result<FieldRef> {
    match t {
        DataType::List(f) => Ok(Arc::clone(f)),
        DataType::Null => Ok(Arc::new(Field::new("element", DataType::Null, true))),
        other => plan_err!("{name} expects an array, not {other}"),
    }
}

/// The key and value fields of a map type.
fn entries(name: &str, t: &DataType) -> Result<(FieldRef, FieldRef)> {
    match t {
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(fields) if fields.len() == 2 => Ok((Arc::clone(&fields[0]), Arc::clone(&fields[1]))),
            other => plan_err!("{name}: a map's entries are not a key and a value: {other}"),
        },
        other => plan_err!("{name} expects a map, not {other}"),
    }
}

fn named(field: &FieldRef, name: &str) -> FieldRef {
    Arc::new(field.as_ref().clone().with_name(name))
}

fn index_field() -> FieldRef {
    Arc::new(Field::new("i", DataType::Int32, false))
}

/// A map type with other key and value types, named as `map`'s.
fn map_type(map: &DataType, key: &DataType, value: &Field) -> Result<DataType> {
    let DataType::Map(entries, sorted) = map else { return plan_err!("expected a map, not {map}") };
    let DataType::Struct(fields) = entries.data_type() else { return plan_err!("expected map entries, not {map}") };
    let struct_fields = vec![
        Field::new(fields[0].name(), key.clone(), false),
        Field::new(fields[1].name(), value.data_type().clone(), true),
    ];
    let entries = Field::new(entries.name(), DataType::Struct(struct_fields.into()), false);
    Ok(DataType::Map(Arc::new(entries), *sorted))
}

impl HigherOrderUDFImpl for SparkLambda {
    fn name(&self) -> &str {
        match self.kind {
            Kind::Transform => "transform",
            Kind::Filter => "filter",
            Kind::Exists => "exists",
            Kind::Forall => "forall",
            Kind::Aggregate(name) => name,
            Kind::ZipWith => "zip_with",
            Kind::MapFilter => "map_filter",
            Kind::TransformKeys => "transform_keys",
            Kind::TransformValues => "transform_values",
            Kind::MapZipWith => "map_zip_with",
            Kind::ArraySort => "array_sort_by",
        }
    }

    fn signature(&self) -> &HigherOrderSignature {
        &self.signature
    }

    fn lambda_parameters(
        &self,
        _step: usize,
        fields: &[ValueOrLambda<FieldRef, Option<FieldRef>>],
    ) -> Result<LambdaParametersProgress> {
        let (values, lambdas) = self.split(fields)?;
        let name = self.name();
        let params = match self.kind {
            Kind::Transform | Kind::Filter => {
                vec![vec![named(&element(name, values[0].data_type())?, "x"), index_field()]]
            }
            Kind::Exists | Kind::Forall => vec![vec![named(&element(name, values[0].data_type())?, "x")]],
            Kind::Aggregate(_) => {
                // The accumulator has the start value's type throughout, as in Spark.
                let acc = named(values[1], "acc").as_ref().clone().with_nullable(true);
                let acc = Arc::new(acc);
                let x = named(&element(name, values[0].data_type())?, "x");
                let mut params = vec![vec![Arc::clone(&acc), x]];
                if lambdas.len() == 2 {
                    params.push(vec![acc]);
                }
                params
            }
            Kind::ZipWith => {
                let nullable = |f: FieldRef| Arc::new(f.as_ref().clone().with_nullable(true));
                vec![vec![
                    nullable(named(&element(name, values[0].data_type())?, "x")),
                    nullable(named(&element(name, values[1].data_type())?, "y")),
                ]]
            }
            Kind::MapFilter | Kind::TransformKeys | Kind::TransformValues => {
                let (k, v) = entries(name, values[0].data_type())?;
                vec![vec![k, v]]
            }
            Kind::MapZipWith => {
                let (_, v1) = entries(name, values[0].data_type())?;
                let (_, v2) = entries(name, values[1].data_type())?;
                let key = Field::new("k", common_key(values[0].data_type(), values[1].data_type())?, false);
                let nullable = |f: FieldRef, n: &str| Arc::new(f.as_ref().clone().with_name(n).with_nullable(true));
                vec![vec![Arc::new(key), nullable(v1, "v1"), nullable(v2, "v2")]]
            }
            Kind::ArraySort => {
                let e = element("array_sort", values[0].data_type())?;
                let nullable = |n: &str| Arc::new(e.as_ref().clone().with_name(n).with_nullable(true));
                vec![vec![nullable("left"), nullable("right")]]
            }
        };
        Ok(LambdaParametersProgress::Complete(params))
    }

    fn return_field_from_args(&self, args: HigherOrderReturnFieldArgs) -> Result<FieldRef> {
        let (values, lambdas) = self.split(args.arg_fields)?;
        let name = self.name();
        let input = values[0];
        let list_of = |f: &FieldRef| DataType::List(Arc::new(Field::new("element", f.data_type().clone(), true)));
        let t = match self.kind {
            Kind::Transform => list_of(lambdas[0]),
            Kind::Filter => input.data_type().clone(),
            Kind::Exists | Kind::Forall => {
                if lambdas[0].data_type() != &DataType::Boolean {
                    return plan_err!("{name}'s lambda must answer a BOOLEAN, not {}", lambdas[0].data_type());
                }
                DataType::Boolean
            }
            Kind::MapFilter => {
                if lambdas[0].data_type() != &DataType::Boolean {
                    return plan_err!("{name}'s lambda must answer a BOOLEAN, not {}", lambdas[0].data_type());
                }
                input.data_type().clone()
            }
            Kind::Aggregate(_) => {
                let start = values[1].data_type();
                // Integers of another width are the planner's literal types before Spark's
                // (BIGINT, then INT): the lambda's parameters are typed again after that.
                let integers = start.is_integer() && lambdas[0].data_type().is_integer();
                if lambdas[0].data_type() != start && !integers {
                    return plan_err!(
                        "{name}'s merge answers {} but its start value is {start}: cast the start value to the \
                         merge's type, as Spark requires",
                        lambdas[0].data_type()
                    );
                }
                lambdas.get(1).map_or_else(|| start.clone(), |f| f.data_type().clone())
            }
            Kind::ZipWith => list_of(lambdas[0]),
            Kind::TransformKeys => {
                let (_, v) = entries(name, input.data_type())?;
                map_type(input.data_type(), lambdas[0].data_type(), &v)?
            }
            Kind::TransformValues => {
                let (k, _) = entries(name, input.data_type())?;
                map_type(input.data_type(), k.data_type(), lambdas[0])?
            }
            Kind::MapZipWith => {
                let key = common_key(input.data_type(), values[1].data_type())?;
                map_type(input.data_type(), &key, lambdas[0])?
            }
            Kind::ArraySort => {
                // Spark requires an INT; an integer literal is planned as a BIGINT first.
                if !lambdas[0].data_type().is_integer() {
                    return plan_err!("array_sort's comparator must answer an INT, not {}", lambdas[0].data_type());
                }
                input.data_type().clone()
            }
        };
        Ok(Arc::new(Field::new(name, t, true)))
    }

    /// Maps' NULL rows are handled here (DataFusion clears only lists'), and `zip_with` and
    /// `aggregate` take more than one value.
    fn clear_null_values(&self) -> bool {
        matches!(self.kind, Kind::Transform | Kind::Filter | Kind::Exists | Kind::Forall)
    }

    fn invoke_with_args(&self, args: HigherOrderFunctionArgs) -> Result<ColumnarValue> {
        let (values, lambdas) = self.split(&args.args)?;
        let n = args.number_rows;
        let arrays = values.iter().map(|v| v.to_array(n)).collect::<Result<Vec<_>>>()?;
        let out = match self.kind {
            Kind::Transform => transform(&arrays[0], lambdas[0], &args.return_field)?,
            Kind::Filter => filter_elements(&arrays[0], lambdas[0])?,
            Kind::Exists => quantify(&arrays[0], lambdas[0], true)?,
            Kind::Forall => quantify(&arrays[0], lambdas[0], false)?,
            Kind::Aggregate(_) => aggregate(&arrays[0], &arrays[1], &lambdas, args.return_field.data_type())?,
            Kind::ZipWith => zip_with(&arrays[0], &arrays[1], lambdas[0], &args.return_field)?,
            Kind::MapFilter => map_filter(&arrays[0], lambdas[0])?,
            Kind::TransformKeys => transform_map(&arrays[0], lambdas[0], true, args.return_field.data_type())?,
            Kind::TransformValues => transform_map(&arrays[0], lambdas[0], false, args.return_field.data_type())?,
            Kind::MapZipWith => map_zip_with(&arrays[0], &arrays[1], lambdas[0], args.return_field.data_type())?,
            Kind::ArraySort => sort_with(&arrays[0], lambdas[0])?,
        };
        Ok(ColumnarValue::Array(out))
    }
}

/// A list (or a map's entries) taken apart: its elements, offsets from 0 into them, and NULLs.
struct Flat {
    values: ArrayRef,
    offsets: Vec<usize>,
    nulls: Option<NullBuffer>,
}

impl Flat {
    fn of_list(name: &str, a: &ArrayRef) -> Result<Flat> {
        let DataType::List(_) = a.data_type() else {
            if a.data_type() == &DataType::Null {
                return Ok(Flat {
                    values: new_null_array(&DataType::Null, 0),
                    offsets: vec![0; a.len() + 1],
                    nulls: Some(NullBuffer::new_null(a.len())),
                });
            }
            return exec_err!("{name} expects an array, not {}", a.data_type());
        };
        let list = a.as_list::<i32>();
        let start = list.offsets()[0] as usize;
        let offsets: Vec<usize> = list.offsets().iter().map(|o| *o as usize - start).collect();
        let values = list.values().slice(start, offsets[offsets.len() - 1]);
        Ok(Flat { values, offsets, nulls: list.nulls().cloned() })
    }

    fn of_map(a: &ArrayRef) -> Result<(Flat, StructArray)> {
        let map: &MapArray = a.as_map();
        let start = map.offsets()[0] as usize;
        let offsets: Vec<usize> = map.offsets().iter().map(|o| *o as usize - start).collect();
        let entries = map.entries().slice(start, offsets[offsets.len() - 1]);
        let flat = Flat { values: Arc::new(entries.clone()), offsets, nulls: map.nulls().cloned() };
        Ok((flat, entries))
    }

    fn rows(&self) -> usize {
        self.offsets.len() - 1
    }

    /// Each element's row, to spread a lambda's captured columns to the elements.
    fn row_numbers(&self) -> UInt32Array {
        let mut rows = Vec::with_capacity(self.values.len());
        for r in 0..self.rows() {
            rows.extend(std::iter::repeat_n(r as u32, self.offsets[r + 1] - self.offsets[r]));
        }
        UInt32Array::from(rows)
    }

    /// Each element's index in its row (the `i` of `(x, i) -> …`).
    fn indexes(&self) -> Int32Array {
        let mut ix = Vec::with_capacity(self.values.len());
        for r in 0..self.rows() {
            ix.extend(0..(self.offsets[r + 1] - self.offsets[r]) as i32);
        }
        Int32Array::from(ix)
    }

    fn spread(&self) -> impl FnOnce(&[ArrayRef]) -> Result<Vec<ArrayRef>> + '_ {
        move |captured| Ok(take_arrays(captured, &self.row_numbers(), None)?)
    }

    fn offset_buffer(offsets: &[usize]) -> OffsetBuffer<i32> {
        OffsetBuffer::new(offsets.iter().map(|o| *o as i32).collect::<Vec<_>>().into())
    }
}

/// The lambda's answer over the elements `params` supplies, one per element.
fn evaluate(
    lambda: &LambdaArgument,
    params: &[&dyn Fn() -> Result<ArrayRef>],
    flat: &Flat,
    len: usize,
) -> Result<ArrayRef> {
    lambda.evaluate(params, flat.spread())?.into_array(len)
}

fn transform(list: &ArrayRef, lambda: &LambdaArgument, ret: &FieldRef) -> Result<ArrayRef> {
    let flat = Flat::of_list("transform", list)?;
    let x = || Ok(Arc::clone(&flat.values));
    let i = || Ok(Arc::new(flat.indexes()) as ArrayRef);
    let out = evaluate(lambda, &[&x, &i], &flat, flat.values.len())?;
    let DataType::List(field) = ret.data_type() else { return exec_err!("transform answers an array") };
    let out = if out.data_type() == field.data_type() { out } else { cast(&out, field.data_type())? };
    Ok(Arc::new(arrow::array::ListArray::try_new(
        Arc::clone(field),
        Flat::offset_buffer(&flat.offsets),
        out,
        flat.nulls.clone(),
    )?))
}

/// The predicate's answers over the list's elements.
fn predicate(name: &str, lambda: &LambdaArgument, flat: &Flat, with_index: bool) -> Result<BooleanArray> {
    let x = || Ok(Arc::clone(&flat.values));
    let i = || Ok(Arc::new(flat.indexes()) as ArrayRef);
    let params: Vec<&dyn Fn() -> Result<ArrayRef>> = if with_index { vec![&x, &i] } else { vec![&x] };
    let out = evaluate(lambda, &params, flat, flat.values.len())?;
    match out.as_boolean_opt() {
        Some(b) => Ok(b.clone()),
        None => exec_err!("{name}'s lambda answered {}, not a BOOLEAN", out.data_type()),
    }
}

/// The elements a mask keeps, with each row's new offsets.
fn keep(flat: &Flat, mask: &BooleanArray) -> Result<(ArrayRef, Vec<usize>)> {
    let mask = if mask.null_count() > 0 { prep_null_mask_filter(mask) } else { mask.clone() };
    let kept = filter(&flat.values, &mask)?;
    let mut offsets = Vec::with_capacity(flat.offsets.len());
    offsets.push(0);
    for r in 0..flat.rows() {
        let n = (flat.offsets[r]..flat.offsets[r + 1]).filter(|&i| mask.value(i)).count();
        offsets.push(offsets[r] + n);
    }
    Ok((kept, offsets))
}

fn filter_elements(list: &ArrayRef, lambda: &LambdaArgument) -> Result<ArrayRef> {
    let flat = Flat::of_list("filter", list)?;
    let mask = predicate("filter", lambda, &flat, true)?;
    let (kept, offsets) = keep(&flat, &mask)?;
    let DataType::List(field) = list.data_type() else { return Ok(new_null_array(list.data_type(), list.len())) };
    Ok(Arc::new(arrow::array::ListArray::try_new(
        Arc::clone(field),
        Flat::offset_buffer(&offsets),
        kept,
        flat.nulls.clone(),
    )?))
}

/// `exists` (`any`) or `forall`, with three-valued logic: the decisive answer if an element
/// gives it, else NULL if one answered NULL, else the other answer.
fn quantify(list: &ArrayRef, lambda: &LambdaArgument, any: bool) -> Result<ArrayRef> {
    let name = if any { "exists" } else { "forall" };
    let flat = Flat::of_list(name, list)?;
    let answers = predicate(name, lambda, &flat, false)?;
    let out: BooleanArray = (0..flat.rows())
        .map(|r| {
            if flat.nulls.as_ref().is_some_and(|n| n.is_null(r)) {
                return None;
            }
            let mut unknown = false;
            for i in flat.offsets[r]..flat.offsets[r + 1] {
                if answers.is_null(i) {
                    unknown = true;
                } else if answers.value(i) == any {
                    return Some(any);
                }
            }
            if unknown {
                None
            } else {
                Some(!any)
            }
        })
        .collect();
    Ok(Arc::new(out))
}

/// Spark's fold: the start value merged with each element in turn, then finished.
fn aggregate(list: &ArrayRef, start: &ArrayRef, lambdas: &[&LambdaArgument], ret: &DataType) -> Result<ArrayRef> {
    let flat = Flat::of_list("aggregate", list)?;
    let rows = flat.rows();
    let mut acc = Arc::clone(start);
    let longest = (0..rows).map(|r| flat.offsets[r + 1] - flat.offsets[r]).max().unwrap_or(0);
    for k in 0..longest {
        // The rows with a k-th element, and where that element is.
        let active: Vec<u32> =
            (0..rows).filter(|&r| flat.offsets[r + 1] - flat.offsets[r] > k).map(|r| r as u32).collect();
        let active = UInt32Array::from(active);
        let elements =
            UInt32Array::from_iter_values(active.values().iter().map(|&r| (flat.offsets[r as usize] + k) as u32));
        let acc_k = take(&acc, &active, None)?;
        let x_k = take(&flat.values, &elements, None)?;
        let a = || Ok(Arc::clone(&acc_k));
        let x = || Ok(Arc::clone(&x_k));
        let merged = lambdas[0]
            .evaluate(&[&a, &x], |captured| Ok(take_arrays(captured, &active, None)?))?
            .into_array(active.len())?;
        let merged = if merged.data_type() == acc.data_type() { merged } else { cast(&merged, acc.data_type())? };
        // Active rows take the merged value; the others keep theirs.
        let mut next = 0;
        let picks: Vec<(usize, usize)> = (0..rows)
            .map(|r| {
                if next < active.len() && active.value(next) as usize == r {
                    next += 1;
                    (1, next - 1)
                } else {
                    (0, r)
                }
            })
            .collect();
        acc = interleave(&[acc.as_ref(), merged.as_ref()], &picks)?;
    }
    let out = match lambdas.get(1) {
        Some(finish) => {
            let a = || Ok(Arc::clone(&acc));
            finish.evaluate(&[&a], |captured| Ok(captured.to_vec()))?.into_array(rows)?
        }
        None => acc,
    };
    let out = if out.data_type() == ret { out } else { cast(&out, ret)? };
    // A NULL array folds to NULL.
    crate::columnar::with_nulls(out, flat.nulls.as_ref())
}

fn zip_with(left: &ArrayRef, right: &ArrayRef, lambda: &LambdaArgument, ret: &FieldRef) -> Result<ArrayRef> {
    let l = Flat::of_list("zip_with", left)?;
    let r = Flat::of_list("zip_with", right)?;
    let rows = l.rows();
    let mut offsets = vec![0usize];
    let (mut li, mut ri, mut row_of) = (Vec::new(), Vec::new(), Vec::new());
    let nulls = NullBuffer::union(l.nulls.as_ref(), r.nulls.as_ref());
    for row in 0..rows {
        let null = nulls.as_ref().is_some_and(|n| n.is_null(row));
        let (ln, rn) = (l.offsets[row + 1] - l.offsets[row], r.offsets[row + 1] - r.offsets[row]);
        let len = if null { 0 } else { ln.max(rn) };
        for k in 0..len {
            li.push((k < ln).then(|| (l.offsets[row] + k) as u32));
            ri.push((k < rn).then(|| (r.offsets[row] + k) as u32));
            row_of.push(row as u32);
        }
        offsets.push(offsets[row] + len);
    }
    let xs = take(&l.values, &UInt32Array::from(li), None)?;
    let ys = take(&r.values, &UInt32Array::from(ri), None)?;
    let row_of = UInt32Array::from(row_of);
    let x = || Ok(Arc::clone(&xs));
    let y = || Ok(Arc::clone(&ys));
    let out =
        lambda.evaluate(&[&x, &y], |captured| Ok(take_arrays(captured, &row_of, None)?))?.into_array(row_of.len())?;
    let DataType::List(field) = ret.data_type() else { return exec_err!("zip_with answers an array") };
    let out = if out.data_type() == field.data_type() { out } else { cast(&out, field.data_type())? };
    Ok(Arc::new(arrow::array::ListArray::try_new(Arc::clone(field), Flat::offset_buffer(&offsets), out, nulls)?))
}

fn map_filter(map: &ArrayRef, lambda: &LambdaArgument) -> Result<ArrayRef> {
    let (flat, entries) = Flat::of_map(map)?;
    let k = || Ok(Arc::clone(entries.column(0)));
    let v = || Ok(Arc::clone(entries.column(1)));
    let out = evaluate(lambda, &[&k, &v], &flat, entries.len())?;
    let Some(mask) = out.as_boolean_opt() else {
        return exec_err!("map_filter's lambda answered {}, not a BOOLEAN", out.data_type());
    };
    let (kept, offsets) = keep(&flat, mask)?;
    let DataType::Map(field, sorted) = map.data_type() else { return exec_err!("map_filter expects a map") };
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(field),
        Flat::offset_buffer(&offsets),
        kept.as_struct().clone(),
        flat.nulls.clone(),
        *sorted,
    )?))
}

/// `transform_keys` (`keys`) or `transform_values`: the lambda's answers replace the keys or
/// the values of every entry.
fn transform_map(map: &ArrayRef, lambda: &LambdaArgument, keys: bool, ret: &DataType) -> Result<ArrayRef> {
    let (flat, entries) = Flat::of_map(map)?;
    let k = || Ok(Arc::clone(entries.column(0)));
    let v = || Ok(Arc::clone(entries.column(1)));
    let out = evaluate(lambda, &[&k, &v], &flat, entries.len())?;
    let DataType::Map(field, sorted) = ret else { return exec_err!("expected a map type, not {ret}") };
    let DataType::Struct(fields) = field.data_type() else { return exec_err!("expected map entries") };
    let target = fields[if keys { 0 } else { 1 }].data_type();
    let out = if out.data_type() == target { out } else { cast(&out, target)? };
    let columns = if keys {
        check_keys(&flat, &out)?;
        vec![out, Arc::clone(entries.column(1))]
    } else {
        vec![Arc::clone(entries.column(0)), out]
    };
    let entries = StructArray::try_new(fields.clone(), columns, None)?;
    Ok(Arc::new(MapArray::try_new(
        Arc::clone(field),
        Flat::offset_buffer(&flat.offsets),
        entries,
        flat.nulls.clone(),
        *sorted,
    )?))
}

/// Spark's map keys: never NULL, and (under its default dedup policy) never repeated in a map.
fn check_keys(flat: &Flat, keys: &ArrayRef) -> Result<()> {
    let valid = |r: usize| !flat.nulls.as_ref().is_some_and(|n| n.is_null(r));
    if keys.null_count() > 0 {
        let mut in_valid_row = BooleanBufferBuilder::new(keys.len());
        for r in 0..flat.rows() {
            in_valid_row.append_n(flat.offsets[r + 1] - flat.offsets[r], valid(r));
        }
        let in_valid_row = in_valid_row.finish();
        if (0..keys.len()).any(|i| keys.is_null(i) && in_valid_row.value(i)) {
            return exec_err!("transform_keys made a NULL map key, which Spark does not allow");
        }
    }
    let converter = RowConverter::new(vec![SortField::new(keys.data_type().clone())])?;
    let rows = converter.convert_columns(&[Arc::clone(keys)])?;
    for r in (0..flat.rows()).filter(|&r| valid(r)) {
        let mut seen = HashSet::new();
        for i in flat.offsets[r]..flat.offsets[r + 1] {
            if !seen.insert(rows.row(i)) {
                return exec_err!(
                    "transform_keys made a duplicate map key, which Spark refuses (spark.sql.mapKeyDedupPolicy)"
                );
            }
        }
    }
    Ok(())
}

/// Whether any operator of `plan` evaluates a lambda (shown as `(x) -> …`): DataFusion 55
/// renumbers the columns of an expression it moves through a projection, but not a lambda's
/// variables, which are numbered after the input's columns, so a moved lambda's variable reads a
/// column of the input instead (see `crate::physical`).
pub(crate) fn holds_lambda(plan: &Arc<dyn datafusion::physical_plan::ExecutionPlan>) -> bool {
    let shown = datafusion::physical_plan::displayable(plan.as_ref()).indent(true).to_string();
    shown.contains(") -> ")
}
