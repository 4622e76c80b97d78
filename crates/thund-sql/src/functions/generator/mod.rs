//! Spark's generators in a SELECT list: `explode`, `posexplode`, `inline`, `stack` and their
//! `_outer` forms, each turning one input row into as many output rows as its argument has
//! elements (`LATERAL VIEW` is rewritten into this form on the parse, in `lateral`).
//!
//! DataFusion plans a generator as an ordinary call (the functions registered here give its
//! types), then [`plan_generators`] replaces the projection holding it with three steps:
//!
//! 1. the input's columns and `__thund_generate(arg, kind)`: one array per row of structs, one
//!    struct per output row (`pos`, then `col`, or `key` and `value`, or the inlined fields), with
//!    one all-NULL struct for a NULL or empty argument of an `_outer` generator;
//! 2. DataFusion's `Unnest`, twice: the array into rows, the struct into columns;
//! 3. the projection's other items as they were, and the generated columns named as Spark
//!    names them (`col`, `pos`, `key`, `value`, `col1`…) or as the query aliases them.
//!
//! A generator anywhere else (nested in an expression, in WHERE) is refused before the run, as
//! Spark refuses it.

pub(crate) mod range;

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, AsArray, Int32Array, ListArray, StructArray, UInt32Array};
use arrow::buffer::OffsetBuffer;
use arrow::compute::take;
use arrow::datatypes::{DataType, Field, Fields};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{exec_err, plan_err, Column, Result, ScalarValue};
use datafusion::logical_expr::expr::{Alias, ScalarFunction};
use datafusion::logical_expr::{
    col, lit, ColumnarValue, Expr, LogicalPlan, LogicalPlanBuilder, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};
use datafusion::prelude::SessionContext;

use crate::declare::Function;

/// Spark's generators, as they run here: each planned as DataFusion `Unnest` steps
/// ([`plan_generators`]), in a SELECT list or a LATERAL VIEW (`analysis::lateral`).
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("explode"),
    Function::udf("explode_outer"),
    Function::udf("posexplode"),
    Function::udf("posexplode_outer"),
    Function::udf("inline"),
    Function::udf("inline_outer"),
    Function::udf("stack"),
    // The markers of a generator's columns and of a LATERAL VIEW's items.
    Function::udf("__thund_generate"),
    Function::udf("__thund_lateral"),
    // Spark's `range` table function (`range`).
    Function::udf("range"),
];

/// The generators, by the name a query calls them.
const GENERATORS: [&str; 7] =
    ["explode", "explode_outer", "posexplode", "posexplode_outer", "inline", "inline_outer", "stack"];

/// The metadata key marking a generator's struct type as its several columns.
const COLUMNS_KEY: &str = "thund.generator.columns";

/// The column the generated structs are held in between the steps.
const GENERATED: &str = "__thund_generated";

/// Registers the generators and the function that lays out their rows.
/// Registers the category's functions with `ctx`: the generators, then Spark's `range`.
pub(crate) fn register(ctx: &SessionContext) {
    register_generators(ctx);
    range::register(ctx);
}

fn register_generators(ctx: &SessionContext) {
    for name in GENERATORS {
        ctx.register_udf(ScalarUDF::from(Generator::new(name)));
    }
    ctx.register_udf(ScalarUDF::from(Generate::new()));
    ctx.register_udf(ScalarUDF::from(Lateral { signature: Signature::variadic_any(Volatility::Immutable) }));
}

/// What a generator makes of its argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Kind {
    /// A `pos` column first (`posexplode`).
    pos: bool,
    /// The argument's elements are structs whose fields become the columns (`inline`).
    inline: bool,
    /// A NULL or empty argument still gives one row, of NULLs.
    outer: bool,
}

impl Kind {
    fn of(name: &str) -> Option<Kind> {
        let outer = name.ends_with("_outer");
        let base = name.trim_end_matches("_outer");
        let (pos, inline) = match base {
            "explode" => (false, false),
            "posexplode" => (true, false),
            "inline" => (false, true),
            _ => return None,
        };
        Some(Kind { pos, inline, outer })
    }
}

/// The fields of the struct each output row is made of, for an argument of type `t`.
fn row_fields(name: &str, kind: Kind, t: &DataType) -> Result<Fields> {
    let mut fields = Vec::new();
    if kind.pos {
        fields.push(Field::new("pos", DataType::Int32, true));
    }
    match t {
        DataType::List(f) if kind.inline => match f.data_type() {
            DataType::Struct(inner) => {
                fields.extend(inner.iter().map(|f| f.as_ref().clone().with_nullable(true)));
            }
            other => return plan_err!("{name} expects an array of structs, not an array of {other}"),
        },
        DataType::List(f) => fields.push(Field::new("col", f.data_type().clone(), true)),
        DataType::Map(entries, _) if !kind.inline => {
            let DataType::Struct(kv) = entries.data_type() else { return plan_err!("{name}: a map without entries") };
            fields.push(Field::new("key", kv[0].data_type().clone(), true));
            fields.push(Field::new("value", kv[1].data_type().clone(), true));
        }
        DataType::Null => fields.push(Field::new("col", DataType::Null, true)),
        other if kind.inline => return plan_err!("{name} expects an array of structs, not {other}"),
        other => return plan_err!("{name} expects an array or a map, not {other}"),
    }
    Ok(fields.into())
}

/// A generator as DataFusion plans it: a call typed as the struct of one output row. It never
/// runs: [`plan_generators`] replaces it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Generator {
    name: &'static str,
    signature: Signature,
}

impl Generator {
    fn new(name: &'static str) -> Self {
        let signature = match name {
            "stack" => Signature::variadic_any(Volatility::Immutable),
            // Spark's parameter names, for `explode(collection => …)`.
            _ => {
                let parameter = if name.starts_with("inline") { "input" } else { "collection" };
                let any = Signature::any(1, Volatility::Immutable);
                // One name for one parameter always fits; without it, arguments stay positional.
                any.clone().with_parameter_names(vec![parameter]).unwrap_or(any)
            }
        };
        Self { name, signature }
    }
}

impl ScalarUDFImpl for Generator {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        plan_err!("{}'s type depends on its arguments", self.name)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        let types: Vec<DataType> = args.arg_fields.iter().map(|f| f.data_type().clone()).collect();
        let fields = if self.name == "stack" {
            stack_fields(&types, args.scalar_arguments.first().copied().flatten())?
        } else {
            let [t] = types.as_slice() else { return plan_err!("{} takes one argument", self.name) };
            let Some(kind) = Kind::of(self.name) else {
                return plan_err!("internal error: {} is no generator", self.name);
            };
            row_fields(self.name, kind, t)?
        };
        // One column is typed as itself, so that a generator nested in an expression still
        // plans and is then refused with the reason. Several are a struct, marked as such (one
        // column may be a struct too).
        Ok(Arc::new(match fields.len() {
            1 => Field::new(self.name, fields[0].data_type().clone(), true),
            n => Field::new(self.name, DataType::Struct(fields), true)
                .with_metadata([(COLUMNS_KEY.to_string(), n.to_string())].into()),
        }))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("`{}` is a generator: it must be a whole item of a SELECT list", self.name)
    }
}

/// `stack(n, v1, …, vk)`'s columns: `col0`, `col1`, … (k/n of them), each of its values'
/// common type.
fn stack_fields(args: &[DataType], count: Option<&ScalarValue>) -> Result<Fields> {
    let Some((_, values)) = args.split_first() else { return plan_err!("stack takes a row count and values") };
    let types = stack_column_types(values, stack_rows(count)?)?;
    Ok(types.into_iter().enumerate().map(|(i, t)| Field::new(format!("col{i}"), t, true)).collect())
}

/// The type of each of `stack`'s columns, given its values' types row after row: their common
/// type, as Spark's (a NULL takes the others').
fn stack_column_types(values: &[DataType], rows: usize) -> Result<Vec<DataType>> {
    if values.is_empty() {
        return plan_err!("stack takes a row count and at least one value");
    }
    let width = values.len().div_ceil(rows);
    (0..width)
        .map(|c| {
            let mut column = (0..rows).filter_map(|r| values.get(r * width + c));
            let first = column.next().cloned().unwrap_or(DataType::Null);
            let common = column.try_fold(first, |a, b| {
                if &a == b || b == &DataType::Null {
                    Some(a)
                } else if a == DataType::Null {
                    Some(b.clone())
                } else {
                    datafusion::logical_expr::type_coercion::binary::comparison_coercion(&a, b)
                }
            });
            common.ok_or_else(|| {
                datafusion::common::DataFusionError::Plan(format!(
                    "stack's column {c} mixes types that have no common type"
                ))
            })
        })
        .collect()
}

/// `stack`'s row count, a positive integer literal.
fn stack_rows(count: Option<&ScalarValue>) -> Result<usize> {
    let rows = match count {
        Some(ScalarValue::Int8(Some(v))) => *v as i64,
        Some(ScalarValue::Int16(Some(v))) => *v as i64,
        Some(ScalarValue::Int32(Some(v))) => *v as i64,
        Some(ScalarValue::Int64(Some(v))) => *v,
        _ => return plan_err!("stack's row count must be an integer literal"),
    };
    if rows < 1 {
        return plan_err!("stack's row count must be positive, not {rows}");
    }
    Ok(rows as usize)
}

/// `__thund_lateral(generator, 'a', 'b', …)`: a LATERAL VIEW's generator, whose columns are
/// one struct named by the view (`AS a, b`), read back field by field by the query around it.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Lateral {
    signature: Signature,
}

pub(crate) const LATERAL: &str = "__thund_lateral";

impl ScalarUDFImpl for Lateral {
    fn name(&self) -> &str {
        LATERAL
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        plan_err!("{LATERAL}'s type depends on its arguments")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        let names = args.scalar_arguments[1..]
            .iter()
            .map(|a| match a {
                Some(ScalarValue::Utf8(Some(n))) => Ok(n.clone()),
                _ => plan_err!("{LATERAL} takes its column names as literals"),
            })
            .collect::<Result<Vec<_>>>()?;
        let generated = &args.arg_fields[0];
        let types: Vec<DataType> = match generated.data_type() {
            DataType::Struct(fields) if generated.metadata().contains_key(COLUMNS_KEY) => {
                fields.iter().map(|f| f.data_type().clone()).collect()
            }
            t => vec![t.clone()],
        };
        if types.len() != names.len() {
            return plan_err!(
                "the LATERAL VIEW's generator makes {} columns, but the view names {}: {}",
                types.len(),
                names.len(),
                if names.is_empty() { "name them with `AS a, b, …`".to_string() } else { names.join(", ") }
            );
        }
        let fields: Fields = names.iter().zip(types).map(|(n, t)| Field::new(n, t, true)).collect();
        Ok(Arc::new(Field::new(LATERAL, DataType::Struct(fields), true)))
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        exec_err!("a LATERAL VIEW's generator runs as its own step")
    }
}

/// `__thund_generate(arg, 'kind')`: per input row, the list of output rows' structs.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Generate {
    signature: Signature,
}

impl Generate {
    fn new() -> Self {
        Self { signature: Signature::any(2, Volatility::Immutable) }
    }
}

fn kind_argument(arg: Option<&ScalarValue>) -> Result<(&str, Kind)> {
    match arg {
        Some(ScalarValue::Utf8(Some(name))) => match Kind::of(name) {
            Some(k) => Ok((name.as_str(), k)),
            None => plan_err!("not a generator: {name}"),
        },
        _ => plan_err!("__thund_generate takes the generator's name as a literal"),
    }
}

impl ScalarUDFImpl for Generate {
    fn name(&self) -> &str {
        "__thund_generate"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _args: &[DataType]) -> Result<DataType> {
        plan_err!("__thund_generate's type depends on its arguments")
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<Arc<Field>> {
        let (name, kind) = kind_argument(args.scalar_arguments.get(1).copied().flatten())?;
        let fields = row_fields(name, kind, args.arg_fields[0].data_type())?;
        let element = Field::new("element", DataType::Struct(fields), false);
        Ok(Arc::new(Field::new(self.name(), DataType::List(Arc::new(element)), false)))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let ColumnarValue::Scalar(s) = &args.args[1] else { return exec_err!("__thund_generate: kind not literal") };
        let (_, kind) = kind_argument(Some(s))?;
        let input = args.args[0].to_array(args.number_rows)?;
        let DataType::List(element) = args.return_field.data_type() else { return exec_err!("not a list") };
        let DataType::Struct(fields) = element.data_type() else { return exec_err!("not a struct") };
        Ok(ColumnarValue::Array(generate(&input, kind, fields, Arc::clone(element))?))
    }
}

/// The output rows of each input row, as a list of structs (see the module's step 1).
fn generate(input: &ArrayRef, kind: Kind, fields: &Fields, element: Arc<Field>) -> Result<ArrayRef> {
    // The flattened elements, as the columns each output row takes a value of.
    let (offsets, nulls, columns): (Vec<usize>, _, Vec<ArrayRef>) = match input.data_type() {
        DataType::List(_) => {
            let list = input.as_list::<i32>();
            let offsets = list.offsets().iter().map(|o| *o as usize).collect();
            let values = list.values();
            let columns = if kind.inline {
                let s = values.as_struct();
                // A NULL struct gives a row of NULLs: its fields' values are hidden behind it.
                s.columns()
                    .iter()
                    .map(|c| crate::columnar::with_nulls(Arc::clone(c), s.nulls()))
                    .collect::<Result<Vec<_>>>()?
            } else {
                vec![Arc::clone(values)]
            };
            (offsets, list.nulls().cloned(), columns)
        }
        DataType::Map(_, _) => {
            let map = input.as_map();
            let offsets = map.offsets().iter().map(|o| *o as usize).collect();
            (offsets, map.nulls().cloned(), map.entries().columns().to_vec())
        }
        DataType::Null => (vec![0; input.len() + 1], Some(arrow::buffer::NullBuffer::new_null(input.len())), vec![]),
        other => return exec_err!("a generator's argument is {other}"),
    };
    let mut take_ix: Vec<Option<u32>> = Vec::new();
    let mut pos: Vec<Option<i32>> = Vec::new();
    let mut out_offsets = vec![0i32];
    for r in 0..input.len() {
        let (from, to) = (offsets[r], offsets[r + 1]);
        let valid = !nulls.as_ref().is_some_and(|n| n.is_null(r));
        if valid && to > from {
            take_ix.extend((from..to).map(|i| Some(i as u32)));
            pos.extend((0..(to - from) as i32).map(Some));
        } else if kind.outer {
            take_ix.push(None);
            pos.push(None);
        }
        out_offsets.push(take_ix.len() as i32);
    }
    let indices = UInt32Array::from(take_ix);
    let mut out: Vec<ArrayRef> = Vec::new();
    if kind.pos {
        out.push(Arc::new(Int32Array::from(pos)));
    }
    for c in &columns {
        out.push(take(c.as_ref(), &indices, None)?);
    }
    if columns.is_empty() {
        out.push(new_null_array(&DataType::Null, indices.len()));
    }
    let rows = StructArray::try_new(fields.clone(), out, None)?;
    Ok(Arc::new(ListArray::try_new(element, OffsetBuffer::new(out_offsets.into()), Arc::new(rows), None)?))
}

/// How a generator's columns are named.
enum Naming<'a> {
    /// As Spark names them (`col`, `pos`, `key`, …), or by the item's alias if it makes one.
    Items(Option<&'a str>),
    /// One struct column, named by the item's alias, whose fields a LATERAL VIEW names.
    Lateral(&'a str, Vec<String>),
}

/// The generator call an item of a SELECT list is, and how its columns are named.
fn generator_item(e: &Expr) -> Option<(&ScalarFunction, Naming<'_>)> {
    match e {
        Expr::Alias(Alias { expr, name, .. }) => match expr.as_ref() {
            Expr::ScalarFunction(f) if f.func.name() == LATERAL => {
                let Some(Expr::ScalarFunction(g)) = f.args.first() else { return None };
                let names = f.args[1..]
                    .iter()
                    .filter_map(|a| match a {
                        Expr::Literal(ScalarValue::Utf8(Some(n)), _) => Some(n.clone()),
                        _ => None,
                    })
                    .collect();
                Some((g, Naming::Lateral(name.as_str(), names)))
            }
            _ => {
                let alias = (name != UNNAMED).then_some(name.as_str());
                generator_item(expr).map(|(f, _)| (f, Naming::Items(alias)))
            }
        },
        Expr::ScalarFunction(f) if GENERATORS.contains(&f.func.name()) => Some((f, Naming::Items(None))),
        _ => None,
    }
}

/// Whether a function of this name is a generator.
pub(crate) fn is_generator(name: &str) -> bool {
    GENERATORS.contains(&name.to_ascii_lowercase().as_str())
}

fn is_generator_call(e: &Expr) -> bool {
    matches!(e, Expr::ScalarFunction(f) if GENERATORS.contains(&f.func.name()) || f.func.name() == LATERAL)
}

/// The alias of a generator item the query did not name.
const UNNAMED: &str = "__thund_unnamed";

/// `plan` with each generator item the query did not name aliased as [`UNNAMED`], so that an
/// alias given later (for a retyped argument) is not taken for the query's.
pub(crate) fn mark_unnamed(plan: LogicalPlan) -> Result<LogicalPlan> {
    Ok(plan
        .transform_up_with_subqueries(|node| match node {
            // (Several generators in one list are refused later; two marks would clash first.)
            LogicalPlan::Projection(mut p) if p.expr.iter().filter(|e| is_generator_call(e)).count() == 1 => {
                for e in p.expr.iter_mut().filter(|e| is_generator_call(e)) {
                    *e = std::mem::replace(e, lit(0)).alias(UNNAMED);
                }
                Ok(Transformed::yes(LogicalPlan::Projection(datafusion::logical_expr::Projection::try_new(
                    p.expr, p.input,
                )?)))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data)
}

/// `plan` with each projection that holds a generator replaced by the steps that generate its
/// rows; a generator anywhere else is an error.
pub(crate) fn plan_generators(plan: LogicalPlan) -> Result<LogicalPlan> {
    let plan = plan
        .transform_up_with_subqueries(|node| match node {
            LogicalPlan::Projection(p) if p.expr.iter().any(|e| generator_item(e).is_some()) => {
                Ok(Transformed::yes(generate_rows(&p.expr, Arc::unwrap_or_clone(p.input))?))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data;
    let mut misplaced = None;
    plan.apply_with_subqueries(|node| {
        for e in node.expressions() {
            e.apply(|e| {
                if let Expr::ScalarFunction(f) = e {
                    if is_generator_call(e) {
                        misplaced = Some(f.func.name().to_string());
                        return Ok(TreeNodeRecursion::Stop);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })?;
        }
        Ok(if misplaced.is_some() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    })?;
    if let Some(name) = misplaced {
        return plan_err!(
            "`{name}` is a generator: it must be a whole item of a SELECT list (or a LATERAL VIEW), as in Spark"
        );
    }
    Ok(plan)
}

/// The steps replacing a projection `items` over `input` whose one generator is an item.
fn generate_rows(items: &[Expr], input: LogicalPlan) -> Result<LogicalPlan> {
    let generators: Vec<usize> = (0..items.len()).filter(|&i| generator_item(&items[i]).is_some()).collect();
    let [g] = generators.as_slice() else {
        return plan_err!("a SELECT list may hold one generator (explode, inline, …), as in Spark");
    };
    let Some((call, naming)) = generator_item(&items[*g]) else {
        return plan_err!("internal error: item {g} is not a generator");
    };
    let name = call.func.name();
    if items.iter().enumerate().any(|(i, e)| i != *g && e.exists(|e| Ok(is_generator_call(e))).unwrap_or(false)) {
        return plan_err!("`{name}` is a generator: it must be a whole item of a SELECT list, as in Spark");
    }
    let (arg, kind_name) = match name {
        "stack" => (stack_argument(&call.args, input.schema())?, "inline"),
        _ => {
            let [arg] = call.args.as_slice() else { return plan_err!("{name} takes one argument") };
            (arg.clone(), name)
        }
    };
    let generate = Expr::ScalarFunction(ScalarFunction::new_udf(
        Arc::new(ScalarUDF::from(Generate::new())),
        vec![arg, lit(kind_name)],
    ));
    let mut inner: Vec<Expr> = input.schema().columns().into_iter().map(Expr::Column).collect();
    inner.push(generate.alias(GENERATED));
    let unnested = LogicalPlanBuilder::from(input)
        .project(inner)?
        .unnest_column(Column::from_name(GENERATED))?
        .unnest_column(Column::from_name(GENERATED))?
        .build()?;
    let prefix = format!("{GENERATED}.");
    let generated: Vec<String> =
        unnested.schema().fields().iter().filter(|f| f.name().starts_with(&prefix)).map(|f| f.name().clone()).collect();
    let columns = |names: &[String]| -> Vec<(Expr, String)> {
        generated.iter().zip(names).map(|(g, n)| (col(Column::from_name(g)), n.clone())).collect()
    };
    let made: Vec<Expr> = match naming {
        Naming::Lateral(alias, names) => {
            if names.len() != generated.len() {
                return plan_err!(
                    "`{name}` makes {} columns, but the LATERAL VIEW names {}",
                    generated.len(),
                    names.len()
                );
            }
            let fields = columns(&names).into_iter().flat_map(|(c, n)| [lit(n), c]).collect();
            vec![datafusion::functions::core::expr_fn::named_struct(fields).alias(alias)]
        }
        Naming::Items(alias) => {
            let names: Vec<String> = match alias {
                Some(a) if generated.len() == 1 => vec![a.to_string()],
                Some(a) => {
                    return plan_err!(
                        "`{name}` makes {} columns: name them in a LATERAL VIEW (`AS a, b`), not with one alias `{a}`",
                        generated.len()
                    )
                }
                None => generated.iter().map(|g| g[prefix.len()..].to_string()).collect(),
            };
            columns(&names).into_iter().map(|(c, n)| c.alias(n)).collect()
        }
    };
    let mut outer = Vec::new();
    for (i, item) in items.iter().enumerate() {
        if i == *g {
            outer.extend(made.iter().cloned());
        } else {
            outer.push(item.clone());
        }
    }
    LogicalPlanBuilder::from(unnested).project(outer)?.build()
}

/// `stack(n, v1, …, vk)` as an array of n structs (`col0` … `col{k/n-1}`), the last padded with
/// NULLs, for `inline` to generate from.
fn stack_argument(args: &[Expr], schema: &datafusion::common::DFSchema) -> Result<Expr> {
    use datafusion::logical_expr::ExprSchemable;
    let Some((n, values)) = args.split_first() else { return plan_err!("stack takes a row count and values") };
    let Expr::Literal(count, _) = n else { return plan_err!("stack's row count must be a literal") };
    let rows = stack_rows(Some(count))?;
    let value_types = values.iter().map(|v| v.get_type(schema)).collect::<Result<Vec<_>>>()?;
    let types = stack_column_types(&value_types, rows)?;
    let width = types.len();
    let structs = (0..rows)
        .map(|r| {
            let mut fields = Vec::with_capacity(width * 2);
            for (c, t) in types.iter().enumerate() {
                let v = values.get(r * width + c).cloned().unwrap_or(Expr::Literal(ScalarValue::Null, None));
                fields.push(lit(format!("col{c}")));
                // Values of the column's type stay as they are, for Spark's literal types to
                // apply to them as to any other; NULL padding takes the array's common type.
                let same = v.get_type(schema).is_ok_and(|vt| &vt == t || vt == DataType::Null);
                fields.push(if same { v } else { datafusion::logical_expr::cast(v, t.clone()) });
            }
            datafusion::functions::core::expr_fn::named_struct(fields)
        })
        .collect();
    Ok(datafusion::functions_nested::expr_fn::make_array(structs))
}
