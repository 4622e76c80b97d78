//! Spark's order of floating point, for the keys of ORDER BY and windows: every NaN is one
//! value, greater than any other, and `-0.0` equals `0.0` (Spark's `SQLOrderingUtil`).
//! DataFusion orders by IEEE's total order, where a NaN with its sign bit set (what `-x`, `%`
//! or `∞ - ∞` may give) comes before every number and `-0.0` before `0.0`. A floating-point key
//! is read through [`float_key`], which gives the one NaN and `0.0` for them.
//!
//! Grouping keys are normalized the same way (Spark's `NormalizeFloatingNumbers`: one group for
//! every NaN, whatever its sign bit), and `min` / `max` of floating point are Spark's
//! ([`extremes`]).

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::tree_node::Transformed;
use datafusion::common::tree_node::TreeNode;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction, WindowFunction};
use datafusion::logical_expr::{
    Aggregate, AggregateUDF, ColumnarValue, Distinct, Expr, ExprSchemable, GroupingSet, LogicalPlan, Operator,
    ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility, WindowFunctionDefinition,
};

/// `x` read as Spark orders it when it is floating point (and not already so read); `None`
/// otherwise.
pub(crate) fn float_key(x: &Expr, schema: &DFSchema) -> Option<Expr> {
    if !x.get_type(schema).is_ok_and(|t| t.is_floating()) {
        return None;
    }
    if matches!(x, Expr::ScalarFunction(f) if f.name() == NAME) {
        return None;
    }
    Some(FloatKey::call(x, true))
}

/// Floating-point arithmetic (`-x`, `x + y`, `x - y`, `x * y`) with every NaN it gives the
/// one positive NaN. IEEE leaves a NaN's sign open: `-x` flips it, and x86 gives a new NaN
/// (`∞ - ∞`, `0 * ∞`) with it set; DataFusion then compares, joins and groups it apart from
/// other NaNs and orders it first, where Spark has one NaN, greater than every number. (`/`
/// and `%` are Spark's own here, and give one NaN.) `None` for every other expression.
pub(crate) fn nan_arithmetic(e: &Expr, schema: &DFSchema) -> Option<Expr> {
    let arithmetic = match e {
        Expr::Negative(_) => true,
        Expr::BinaryExpr(b) => matches!(b.op, Operator::Plus | Operator::Minus | Operator::Multiply),
        _ => false,
    };
    if !arithmetic || !e.get_type(schema).is_ok_and(|t| t.is_floating()) {
        return None;
    }
    // Only the outermost arithmetic of a tree is read: its operands lose their own reading, so
    // `a * b + c` makes one pass over its rows, not two.
    let inner = |x: Box<Expr>| match *x {
        Expr::ScalarFunction(f) if f.name() == ONE_NAN && f.args.len() == 1 => Box::new(f.args[0].clone()),
        x => Box::new(x),
    };
    let e = match e.clone() {
        Expr::Negative(x) => Expr::Negative(inner(x)),
        Expr::BinaryExpr(b) => Expr::BinaryExpr(datafusion::logical_expr::BinaryExpr {
            left: inner(b.left),
            op: b.op,
            right: inner(b.right),
        }),
        e => e,
    };
    Some(FloatKey::call(&e, false))
}

/// `values` with every NaN the one positive NaN, when they are floating point.
pub(crate) fn one_nan(values: ArrayRef) -> ArrayRef {
    match values.data_type() {
        DataType::Float64 => Arc::new(values.as_primitive::<Float64Type>().unary::<_, Float64Type>(|v| {
            if v.is_nan() {
                f64::NAN
            } else {
                v
            }
        })),
        DataType::Float32 => Arc::new(values.as_primitive::<Float32Type>().unary::<_, Float32Type>(|v| {
            if v.is_nan() {
                f32::NAN
            } else {
                v
            }
        })),
        _ => values,
    }
}

/// `min` / `max` (grouped, or over a window) of floating point as Spark's
/// (`aggregate::extremes`); `None` for every other expression.
pub(crate) fn extremes(e: &Expr, schema: &DFSchema) -> Option<Expr> {
    use crate::functions::aggregate::extremes::{extreme, is_extreme};
    floating_aggregate(e, schema, &["min", "max"], is_extreme, |f| extreme(f.name() == "max"))
}

/// Aggregates whose answer duplicates do not change: Spark drops their DISTINCT
/// (`EliminateDistinct`), so `min(DISTINCT x)` is `min(x)`, the first of `-0.0` and `0.0` kept.
const DUPLICATE_AGNOSTIC: &[&str] =
    &["min", "max", "bit_and", "bit_or", "first_value", "last_value", "approx_distinct", "collect_set"];

/// Whether `f` groups its arguments' values before it aggregates them: a `DISTINCT` one that
/// duplicates change.
fn groups_its_arguments(f: &AggregateFunction) -> bool {
    f.params.distinct && !DUPLICATE_AGNOSTIC.contains(&f.func.name())
}

/// `e` without the DISTINCT Spark drops (`min(DISTINCT x)` is `min(x)`); `None` for every
/// other expression. DataFusion would group the values first, and which of `-0.0` and `0.0`
/// its grouping keeps is not Spark's first one.
pub(crate) fn eliminate_distinct(e: &Expr) -> Option<Expr> {
    let Expr::AggregateFunction(f) = e else { return None };
    if !f.params.distinct || !DUPLICATE_AGNOSTIC.contains(&f.func.name()) {
        return None;
    }
    let mut f = f.clone();
    f.params.distinct = false;
    Some(Expr::AggregateFunction(f))
}

/// An aggregate over `DISTINCT` floating-point values with its values read as Spark's
/// grouping reads them: `-0.0` as `0.0` and one NaN (`count(DISTINCT x)` of `-0.0` and `0.0`
/// is 1 on Spark); `None` for every other expression.
pub(crate) fn distinct_arguments(e: &Expr, schema: &DFSchema) -> Option<Expr> {
    let Expr::AggregateFunction(f) = e else { return None };
    if !groups_its_arguments(f) || !f.params.args.iter().any(|a| float_key(a, schema).is_some()) {
        return None;
    }
    let mut params = f.params.clone();
    params.args = params.args.iter().map(|a| float_key(a, schema).unwrap_or_else(|| a.clone())).collect();
    Some(Expr::AggregateFunction(AggregateFunction { func: Arc::clone(&f.func), params }))
}

/// `x IN (…)` of floating point with both sides read as keys (`-0.0` as `0.0`) where the list
/// may hold a zero: DataFusion looks a list of constants up in a set of the values' bits, where
/// `0.0` does not find `-0.0` (`0.0 IN (-0.0, 1.0, …)` is true on Spark); `None` for every other
/// expression, and for a list of literals none of which is a zero.
pub(crate) fn in_lists(e: &Expr, schema: &DFSchema) -> Option<Expr> {
    let Expr::InList(l) = e else { return None };
    if !l.expr.get_type(schema).is_ok_and(|t| t.is_floating()) {
        return None;
    }
    let may_be_zero = |x: &Expr| match x {
        Expr::Literal(ScalarValue::Float64(Some(v)), _) => *v == 0.0,
        Expr::Literal(ScalarValue::Float32(Some(v)), _) => *v == 0.0,
        Expr::Literal(..) => false,
        _ => true,
    };
    if !l.list.iter().any(may_be_zero) {
        return None;
    }
    let key = |x: &Expr| float_key(x, schema);
    if key(&l.expr).is_none() && l.list.iter().all(|x| key(x).is_none()) {
        return None;
    }
    let keyed = |x: &Expr| key(x).unwrap_or_else(|| x.clone());
    Some(Expr::InList(datafusion::logical_expr::expr::InList {
        expr: Box::new(keyed(&l.expr)),
        list: l.list.iter().map(keyed).collect(),
        negated: l.negated,
    }))
}

/// `sum` / `avg` (grouped, or over a window) of floating point answering Spark's one NaN
/// (`aggregate::float_totals`); `None` for every other expression.
pub(crate) fn totals(e: &Expr, schema: &DFSchema) -> Option<Expr> {
    use crate::functions::aggregate::float_totals::{is_one_nan_total, one_nan_total};
    floating_aggregate(e, schema, &["sum", "avg"], is_one_nan_total, |f| one_nan_total(Arc::clone(f)))
}

/// `e` with its aggregate function put in place by `spark`'s, where `e` calls one of `names`
/// (grouped, or over a window) on one floating-point argument and that function is not Spark's
/// already (`is_spark`); `None` otherwise.
fn floating_aggregate(
    e: &Expr,
    schema: &DFSchema,
    names: &[&str],
    is_spark: fn(&AggregateUDF) -> bool,
    spark: impl Fn(&Arc<AggregateUDF>) -> Arc<AggregateUDF>,
) -> Option<Expr> {
    let applies = |f: &AggregateUDF, args: &[Expr]| {
        names.contains(&f.name())
            && !is_spark(f)
            && matches!(args, [x] if x.get_type(schema).is_ok_and(|t| t.is_floating()))
    };
    match e {
        Expr::AggregateFunction(f) if applies(&f.func, &f.params.args) => {
            Some(Expr::AggregateFunction(AggregateFunction { func: spark(&f.func), params: f.params.clone() }))
        }
        Expr::WindowFunction(w) => match &w.fun {
            WindowFunctionDefinition::AggregateUDF(f) if applies(f, &w.params.args) => {
                let fun = WindowFunctionDefinition::AggregateUDF(spark(f));
                Some(Expr::WindowFunction(Box::new(WindowFunction { fun, params: w.params.clone() })))
            }
            _ => None,
        },
        _ => None,
    }
}

/// A join's floating-point keys, and the equalities of two floating-point values in a join's
/// or a filter's condition (where a join's keys are until DataFusion's optimizer takes them
/// out), read as Spark matches them: one NaN, `-0.0` as `0.0`. DataFusion's hash join hashes
/// a key's bits, so `-0.0` found no `0.0` (and `EXCEPT` / `INTERSECT` join a side whose keys
/// were grouped, and so read as Spark reads them, with one whose keys were not). A comparison
/// with a literal stays as it is (a scan prunes files by it), since it hashes nothing.
pub(crate) fn join_keys(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let schema = crate::declare::merged_input_schema(&node);
    let equalities = |e: Expr| {
        e.transform_up(|e| {
            let Expr::BinaryExpr(b) = &e else { return Ok(Transformed::no(e)) };
            let literal = |x: &Expr| matches!(x, Expr::Literal(..));
            if !matches!(b.op, Operator::Eq | Operator::IsNotDistinctFrom) || literal(&b.left) || literal(&b.right) {
                return Ok(Transformed::no(e));
            }
            let (l, r) = (float_key(&b.left, &schema), float_key(&b.right, &schema));
            if l.is_none() && r.is_none() {
                return Ok(Transformed::no(e));
            }
            let mut b = b.clone();
            b.left = Box::new(l.unwrap_or(*b.left));
            b.right = Box::new(r.unwrap_or(*b.right));
            Ok(Transformed::yes(Expr::BinaryExpr(b)))
        })
    };
    match node {
        LogicalPlan::Join(mut join) => {
            let (left, right) = (Arc::clone(join.left.schema()), Arc::clone(join.right.schema()));
            let mut changed = false;
            for (l, r) in join.on.iter_mut() {
                if let Some(k) = float_key(l, &left) {
                    *l = k;
                    changed = true;
                }
                if let Some(k) = float_key(r, &right) {
                    *r = k;
                    changed = true;
                }
            }
            // A USING join's keys are columns, by which DataFusion finds them from above; above
            // this plan its columns are resolved, so the keys are taken as those of an ON.
            if changed {
                join.join_constraint = datafusion::common::JoinConstraint::On;
            }
            if let Some(filter) = join.filter.take() {
                let t = equalities(filter)?;
                changed |= t.transformed;
                join.filter = Some(t.data);
            }
            Ok(Transformed::new_transformed(LogicalPlan::Join(join), changed))
        }
        LogicalPlan::Filter(mut filter) => {
            let t = equalities(filter.predicate)?;
            filter.predicate = t.data;
            Ok(Transformed::new_transformed(LogicalPlan::Filter(filter), t.transformed))
        }
        node => Ok(Transformed::no(node)),
    }
}

/// A filter's comparisons of a floating-point column that are true for a NaN (`x > 1`,
/// `NOT x BETWEEN 0 AND 3`, `x <> 2`: a NaN is greater than every number on Spark) with the
/// column read through [`float_key`]. A Delta or Parquet file's statistics leave NaN out of a
/// column's least and greatest values, so a scan that prunes files by `x > 1` would skip a file
/// whose only rows above 1 are NaN; a comparison false for a NaN (`x < 1`) still prunes.
pub(crate) fn nan_filters(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Filter(mut filter) = node else { return Ok(Transformed::no(node)) };
    let schema = Arc::clone(filter.input.schema());
    let mut changed = false;
    filter.predicate = nan_safe(filter.predicate, &schema, false, &mut changed);
    Ok(Transformed::new_transformed(LogicalPlan::Filter(filter), changed))
}

/// `e`, under `negated` NOTs, with each comparison true for a NaN column read as a key.
fn nan_safe(e: Expr, schema: &DFSchema, negated: bool, changed: &mut bool) -> Expr {
    use datafusion::logical_expr::{Between, BinaryExpr};
    // A column (or a cast of one) a scan may prune by, when it is floating point.
    let prunable = |x: &Expr| {
        let column = match x {
            Expr::Cast(c) => c.expr.as_ref(),
            Expr::TryCast(c) => c.expr.as_ref(),
            x => x,
        };
        matches!(column, Expr::Column(_)) && x.get_type(schema).is_ok_and(|t| t.is_floating())
    };
    let nan_literal = |x: &Expr| {
        matches!(x, Expr::Literal(ScalarValue::Float64(Some(v)), _) if v.is_nan())
            || matches!(x, Expr::Literal(ScalarValue::Float32(Some(v)), _) if v.is_nan())
    };
    let mut keyed = |x: Expr| match float_key(&x, schema) {
        Some(k) => {
            *changed = true;
            k
        }
        None => x,
    };
    match e {
        Expr::Not(inner) => Expr::Not(Box::new(nan_safe(*inner, schema, !negated, changed))),
        Expr::BinaryExpr(BinaryExpr { left, op: op @ (Operator::And | Operator::Or), right }) => {
            let left = nan_safe(*left, schema, negated, changed);
            let right = nan_safe(*right, schema, negated, changed);
            Expr::BinaryExpr(BinaryExpr { left: Box::new(left), op, right: Box::new(right) })
        }
        Expr::BinaryExpr(BinaryExpr { left, op, right }) if crate::analysis::common_types::is_comparison(op) => {
            // What `NaN op c` (column on the left) or `c op NaN` gives.
            let nan_answer = |column_left: bool| match op {
                Operator::Gt | Operator::GtEq => column_left,
                Operator::Lt | Operator::LtEq => !column_left,
                Operator::NotEq | Operator::IsDistinctFrom => true,
                _ => false,
            };
            let risky = |column_left: bool, other: &Expr| nan_answer(column_left) != negated || nan_literal(other);
            let (left, right) = (*left, *right);
            let left = if prunable(&left) && risky(true, &right) { keyed(left) } else { left };
            let right = if prunable(&right) && risky(false, &left) { keyed(right) } else { right };
            Expr::BinaryExpr(BinaryExpr { left: Box::new(left), op, right: Box::new(right) })
        }
        Expr::Between(b) if prunable(&b.expr) && (b.negated != negated || nan_literal(&b.high)) => {
            Expr::Between(Between { expr: Box::new(keyed(*b.expr)), ..b })
        }
        Expr::InList(mut l) if prunable(&l.expr) && (l.negated != negated || l.list.iter().any(nan_literal)) => {
            l.expr = Box::new(keyed(*l.expr));
            Expr::InList(l)
        }
        e => e,
    }
}

/// An aggregate's floating-point grouping keys read as Spark groups them, each keeping its
/// name, and a `DISTINCT` over floating-point columns made the aggregate DataFusion would make
/// of it later, with such keys. `grouping(key)` is given the key as it now reads, since
/// DataFusion finds its key by the expression.
pub(crate) fn group_keys(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let (input, group_expr, aggr_expr) = match &node {
        LogicalPlan::Aggregate(a) => (Arc::clone(&a.input), a.group_expr.clone(), a.aggr_expr.clone()),
        LogicalPlan::Distinct(Distinct::All(input))
            if input.schema().fields().iter().any(|f| f.data_type().is_floating()) =>
        {
            (Arc::clone(input), input.schema().columns().into_iter().map(Expr::Column).collect(), vec![])
        }
        _ => return Ok(Transformed::no(node)),
    };
    let schema = Arc::clone(input.schema());
    let key = |e: &Expr| -> Result<Option<Expr>> {
        let inner = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            e => e,
        };
        let Some(k) = float_key(inner, &schema) else { return Ok(None) };
        let (qualifier, field) = e.to_field(&schema)?;
        Ok(Some(k.alias_qualified(qualifier, field.name())))
    };
    let mut changed = false;
    let mut keyed = |e: &Expr| -> Result<Expr> {
        Ok(match key(e)? {
            Some(k) => {
                changed = true;
                k
            }
            None => e.clone(),
        })
    };
    let mut keys = |exprs: &[Expr]| exprs.iter().map(&mut keyed).collect::<Result<Vec<_>>>();
    let group_expr = match group_expr.as_slice() {
        [Expr::GroupingSet(set)] => vec![Expr::GroupingSet(match set {
            GroupingSet::Rollup(v) => GroupingSet::Rollup(keys(v)?),
            GroupingSet::Cube(v) => GroupingSet::Cube(keys(v)?),
            GroupingSet::GroupingSets(sets) => {
                GroupingSet::GroupingSets(sets.iter().map(|s| keys(s)).collect::<Result<_>>()?)
            }
        })],
        plain => keys(plain)?,
    };
    // `grouping()` reads the keys as grouped; a DISTINCT aggregate's arguments (and the values
    // of a tuple `count(DISTINCT a, b)` counts, a `struct` call) are grouped as keys are.
    let mut distinct_keyed = false;
    let aggr_expr = aggr_expr
        .into_iter()
        .map(|e| {
            // The aggregate keeps its column's name for the nodes above it.
            let name = match &e {
                Expr::Alias(_) => None,
                other => Some(other.schema_name().to_string()),
            };
            let rewritten = e.transform_up(|e| match &e {
                Expr::AggregateFunction(f) if f.func.name().starts_with("grouping") && changed => {
                    let mut f = f.clone();
                    f.params.args = f
                        .params
                        .args
                        .iter()
                        .map(|a| Ok(key(a)?.unwrap_or_else(|| a.clone())))
                        .collect::<Result<_>>()?;
                    Ok(Transformed::yes(Expr::AggregateFunction(f)))
                }
                Expr::AggregateFunction(f) if groups_its_arguments(f) => {
                    let mut f = f.clone();
                    let mut keyed = false;
                    f.params.args = f
                        .params
                        .args
                        .iter()
                        .map(|a| {
                            let a = match float_key(a, &schema) {
                                Some(k) => {
                                    keyed = true;
                                    k
                                }
                                None => a.clone(),
                            };
                            a.transform_up(|e| match e {
                                Expr::ScalarFunction(mut call) if matches!(call.name(), "struct" | "named_struct") => {
                                    for arg in call.args.iter_mut() {
                                        if let Some(k) = float_key(arg, &schema) {
                                            *arg = k;
                                            keyed = true;
                                        }
                                    }
                                    Ok(Transformed::yes(Expr::ScalarFunction(call)))
                                }
                                other => Ok(Transformed::no(other)),
                            })
                            .map(|t| t.data)
                        })
                        .collect::<Result<_>>()?;
                    distinct_keyed |= keyed;
                    Ok(Transformed::new_transformed(Expr::AggregateFunction(f), keyed))
                }
                _ => Ok(Transformed::no(e)),
            })?;
            Ok(match (rewritten.transformed, name) {
                (true, Some(name)) => rewritten.data.alias(name),
                (_, _) => rewritten.data,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    if !changed && !distinct_keyed {
        return Ok(Transformed::no(node));
    }
    Ok(Transformed::yes(LogicalPlan::Aggregate(Aggregate::try_new(input, group_expr, aggr_expr)?)))
}

/// A sort's floating-point keys read as Spark orders them.
pub(crate) fn sort_keys(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Sort(mut sort) = node else { return Ok(Transformed::no(node)) };
    let schema = std::sync::Arc::clone(sort.input.schema());
    let mut changed = false;
    for key in sort.expr.iter_mut() {
        if let Some(k) = float_key(&key.expr, &schema) {
            key.expr = k;
            changed = true;
        }
    }
    Ok(Transformed::new_transformed(LogicalPlan::Sort(sort), changed))
}

const NAME: &str = "spark_float_key";
const ONE_NAN: &str = "spark_one_nan";
/// `x` with every NaN the one positive NaN and, when `zeros`, `-0.0` as `0.0` (a key), or with
/// its zeros as they are (`spark_one_nan`, after arithmetic).
#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatKey {
    signature: Signature,
    zeros: bool,
}

impl FloatKey {
    fn call(x: &Expr, zeros: bool) -> Expr {
        let func = Arc::new(ScalarUDF::from(FloatKey { signature: Signature::any(1, Volatility::Immutable), zeros }));
        Expr::ScalarFunction(ScalarFunction { func, args: vec![x.clone()] })
    }
}

impl ScalarUDFImpl for FloatKey {
    fn name(&self) -> &str {
        if self.zeros {
            NAME
        } else {
            ONE_NAN
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = one_nan(args.args[0].to_array(args.number_rows)?);
        if !self.zeros {
            return crate::columnar::columnar(values, scalar);
        }
        // `v + 0.0` is `0.0` for both zeros and `v` for every other number (and NaN).
        let out: ArrayRef = match values.data_type() {
            DataType::Float64 => Arc::new(values.as_primitive::<Float64Type>().unary::<_, Float64Type>(|v| v + 0.0)),
            DataType::Float32 => Arc::new(values.as_primitive::<Float32Type>().unary::<_, Float32Type>(|v| v + 0.0)),
            _ => values,
        };
        crate::columnar::columnar(out, scalar)
    }
}
