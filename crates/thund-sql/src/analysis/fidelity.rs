//! Spark's answers where DataFusion's functions give other ones: a planned query is rewritten
//! where the difference is only in the arguments, an edge case or a type, and refused where the
//! function would answer differently. Types come first (`spark_types`: INT integer literals,
//! INT ranks, DECIMAL averages), since every later rule and the written table follow them. A
//! refusal is an error at the query's line ("runs on the Spark backend"); a different answer
//! would be a wrong table without an error.
//!
//! Each rule was found by `thund-cli/tests/spark_functions.rs`, which runs Spark's own documented
//! examples on a real server and natively: a rule here is checked by the examples it fixes.
//! (The rewrites that need the query's text, such as `position(substr, str)`, are made on the
//! parse in `engine`.)

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::{AggregateFunction, Exists, InSubquery, ScalarFunction, WindowFunction};
use datafusion::logical_expr::{
    cast, lit, Aggregate, BinaryExpr, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator, Union,
    WindowFunctionDefinition,
};
use datafusion::optimizer::analyzer::type_coercion::coerce_union_schema;

use crate::declare::{Call, PlanContext};
use crate::functions::math::arithmetic::{OnFailure, Op};

/// The plan rule: Spark's types and answers in the session's ANSI mode, or the first function
/// that would answer differently ([`spark_semantics`]).
#[derive(Debug)]
pub(crate) struct SparkSemantics;

impl datafusion::optimizer::AnalyzerRule for SparkSemantics {
    fn name(&self) -> &str {
        "spark_semantics"
    }

    fn analyze(&self, plan: LogicalPlan, config: &datafusion::config::ConfigOptions) -> Result<LogicalPlan> {
        spark_semantics(plan, crate::modes::SqlModes::of(config).ansi)
    }
}

/// `plan` with Spark's semantics in Spark's ANSI mode or without it (`ansi`), or the first
/// function that would answer differently.
pub(crate) fn spark_semantics(plan: LogicalPlan, ansi: bool) -> Result<LogicalPlan> {
    // A generator's columns are named by the query's alias or as Spark names them: which one is
    // marked before the types below rename what they retype.
    let plan = crate::functions::generator::mark_unnamed(plan)?;
    let plan = spark_types(plan, ansi)?;
    let plan = crate::functions::generator::plan_generators(plan)?;
    let plan = plan
        .transform_up_with_subqueries(|node| {
            if let (true, LogicalPlan::Union(u)) = (ansi, &node) {
                for i in 0..u.schema.fields().len() {
                    crate::types::text_and_number(
                        "UNION",
                        u.inputs.iter().map(|input| input.schema().field(i).data_type().clone()),
                    )?;
                }
            }
            ambiguous_references(&node)?;
            super::analysis_errors::check(&node)?;
            let node = super::text_operands::join_keys(node, ansi)?;
            let schema = crate::declare::merged_input_schema(&node);
            // Every node's schema is derived again: a rewrite below may have changed a type.
            keeping_names(node, |e| {
                Ok(e.transform_up(|e| {
                    rewrite(e, &schema, ansi)?.transform_data(|e| {
                        Ok(match crate::functions::window::float_keys::nan_arithmetic(&e, &schema) {
                            Some(one) => Transformed::yes(one),
                            None => Transformed::no(e),
                        })
                    })
                })?
                .data)
            })?
            .map_data(refresh_schema)?
            .transform_data(no_rows_from_no_rows)?
            .transform_data(crate::functions::window::float_keys::sort_keys)?
            .transform_data(crate::functions::window::float_keys::group_keys)?
            .transform_data(crate::functions::window::float_keys::join_keys)?
            .transform_data(crate::functions::window::float_keys::nan_filters)
        })?
        .data;
    // A lambda's parameters were typed when it was planned; a retyped argument (an INT literal
    // array) changes them.
    let resolved = plan.resolve_lambda_variables()?;
    if !resolved.transformed {
        return Ok(resolved.data);
    }
    // The lambdas' answers may have new types (an INT where a BIGINT was): every schema again.
    Ok(resolved.data.transform_up_with_subqueries(|node| Ok(Transformed::yes(refresh_schema(node)?)))?.data)
}

/// An aggregate over grouping sets of which one is empty (`ROLLUP`, `CUBE`, `GROUPING SETS (…,
/// ())`) gives no rows for no input rows on Spark, which expands each row into one per set
/// before it groups; DataFusion gives the empty set's row of a grand total. The aggregate also
/// counts its rows, and only groups that have some are kept.
fn no_rows_from_no_rows(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    use datafusion::logical_expr::GroupingSet;
    let LogicalPlan::Aggregate(a) = &node else { return Ok(Transformed::no(node)) };
    let has_empty_set = match a.group_expr.as_slice() {
        [Expr::GroupingSet(GroupingSet::Rollup(_) | GroupingSet::Cube(_))] => true,
        [Expr::GroupingSet(GroupingSet::GroupingSets(sets))] => sets.iter().any(Vec::is_empty),
        _ => false,
    };
    if !has_empty_set {
        return Ok(Transformed::no(node));
    }
    const ROWS: &str = "__spark_rows";
    // (The grouping id is internal: DataFusion's analyzer drops it from the aggregate's output.)
    let outputs: Vec<Expr> = a
        .schema
        .columns()
        .into_iter()
        .filter(|c| c.name != Aggregate::INTERNAL_GROUPING_ID)
        .map(Expr::Column)
        .collect();
    let mut aggr_expr = a.aggr_expr.clone();
    aggr_expr.push(datafusion::functions_aggregate::count::count(lit(1i64)).alias(ROWS));
    let counted = Aggregate::try_new(Arc::clone(&a.input), a.group_expr.clone(), aggr_expr)?;
    let plan = LogicalPlanBuilder::from(LogicalPlan::Aggregate(counted))
        .filter(datafusion::prelude::col(ROWS).gt(lit(0i64)))?
        .project(outputs)?
        .build()?;
    Ok(Transformed::yes(plan))
}

/// A derived table with two columns of one name (`SELECT * FROM t JOIN t`) is one whose name is
/// ambiguous on Spark where it is read; DataFusion names the second `name:1` and reads the
/// first. A node that reads `s.name` and not `s.name:1` (as a `*` would) is refused, as on Spark
/// — also where a subquery of the node reads it as an outer column (`WHERE NOT EXISTS (… WHERE
/// c.k = s.name)`: Spark cannot resolve it, and DataFusion read the first).
fn ambiguous_references(node: &LogicalPlan) -> Result<()> {
    if matches!(node, LogicalPlan::SubqueryAlias(_)) {
        return Ok(());
    }
    let mut read = std::collections::HashSet::new();
    for e in node.expressions() {
        read.extend(e.column_refs().into_iter().cloned());
        e.apply(|e| {
            if let Expr::Exists(Exists { subquery, .. })
            | Expr::InSubquery(InSubquery { subquery, .. })
            | Expr::ScalarSubquery(subquery) = e
            {
                for outer in &subquery.outer_ref_columns {
                    if let Expr::OuterReferenceColumn(_, c) = outer {
                        read.insert(c.clone());
                    }
                }
            }
            Ok(datafusion::common::tree_node::TreeNodeRecursion::Continue)
        })?;
    }
    for input in node.inputs() {
        for (q, f) in input.schema().iter() {
            let Some((name, suffix)) = f.name().rsplit_once(':') else { continue };
            if suffix.is_empty() || !suffix.bytes().all(|b| b.is_ascii_digit()) {
                continue;
            }
            let first = datafusion::common::Column::new(q.cloned(), name);
            let second = datafusion::common::Column::new(q.cloned(), f.name());
            if read.contains(&first) && !read.contains(&second) && input.schema().has_column(&first) {
                return Err(DataFusionError::Plan(format!(
                    "[AMBIGUOUS_REFERENCE] reference `{first}` is ambiguous: the derived table has two columns `{name}`"
                )));
            }
        }
    }
    Ok(())
}

/// `node`'s schema derived again from its expressions and inputs. (A union would keep its
/// first input's types: it gets its inputs' common types, to which the analyzer casts them.)
pub(super) fn refresh_schema(node: LogicalPlan) -> Result<LogicalPlan> {
    match node {
        LogicalPlan::Union(u) => {
            let schema = Arc::new(coerce_union_schema(&u.inputs)?);
            Ok(LogicalPlan::Union(Union { inputs: u.inputs, schema }))
        }
        other => other.recompute_schema(),
    }
}

/// `sum` of a BIGINT (Spark sums every integer type as one) that is not DISTINCT, as an
/// aggregate or over a window, with `sums::ansi_sum`: in ANSI mode an overflow fails.
fn ansi_sum(e: &Expr, schema: &DFSchema) -> Result<Option<Expr>> {
    let bigint =
        |args: &[Expr]| -> Result<bool> { Ok(matches!(args, [arg] if arg.get_type(schema)? == DataType::Int64)) };
    Ok(match e {
        Expr::AggregateFunction(f) if f.func.name() == "sum" && !f.params.distinct && bigint(&f.params.args)? => {
            let params = f.params.clone();
            Some(Expr::AggregateFunction(AggregateFunction {
                func: crate::functions::aggregate::sum::ansi_sum(),
                params,
            }))
        }
        Expr::WindowFunction(w) => match &w.fun {
            WindowFunctionDefinition::AggregateUDF(f)
                if f.name() == "sum" && !w.params.distinct && bigint(&w.params.args)? =>
            {
                let fun = WindowFunctionDefinition::AggregateUDF(crate::functions::aggregate::sum::ansi_sum());
                Some(Expr::WindowFunction(Box::new(WindowFunction { fun, params: w.params.clone() })))
            }
            _ => None,
        },
        _ => None,
    })
}

/// `node` with `f` applied to each of its expressions. A projection, aggregate or window names
/// its outputs after their expressions: a rewritten one keeps its old name, so that the nodes
/// above still find it.
fn keeping_names(node: LogicalPlan, f: impl Fn(Expr) -> Result<Expr>) -> Result<Transformed<LogicalPlan>> {
    let named = matches!(node, LogicalPlan::Projection(_) | LogicalPlan::Aggregate(_) | LogicalPlan::Window(_));
    node.map_expressions(|e| {
        let old = named.then(|| e.qualified_name());
        let new = f(e)?;
        Ok(Transformed::yes(match old {
            Some(old) if new.qualified_name() != old => new.alias_qualified(old.0, old.1),
            _ => new,
        }))
    })
}

/// Spark's DECIMAL arithmetic for `b` where a side is a DECIMAL: its types, and an overflow
/// NULL or an error; `None` where neither side is one.
fn decimal_arithmetic(b: &BinaryExpr, schema: &DFSchema, ansi: bool) -> Result<Option<Expr>> {
    // Spark types an integer literal met by a DECIMAL in arithmetic as the narrowest DECIMAL
    // that holds it (`2` is DECIMAL(1,0)), so `DECIMAL(5,2) * 2` is a DECIMAL(7,2);
    // DataFusion widens the literal to its type's DECIMAL(10,0) or (20,0).
    let arithmetic =
        matches!(b.op, Operator::Plus | Operator::Minus | Operator::Multiply | Operator::Divide | Operator::Modulo);
    let decimal = |x: &Expr| x.get_type(schema).is_ok_and(|t| matches!(t, DataType::Decimal128(..)));
    let (mut left, mut right) = (b.left.as_ref().clone(), b.right.as_ref().clone());
    if arithmetic && decimal(&b.left) {
        right = decimal_literal(&right).unwrap_or(right);
    }
    if arithmetic && decimal(&b.right) {
        left = decimal_literal(&left).unwrap_or(left);
    }
    // Spark's `/` of decimals (an integer as the DECIMAL of its type) has a scale of at
    // least 6 and rounds half up; DataFusion's has other types and digits.
    let decimal_operands = [&left, &right].iter().any(|x| decimal(x))
        && [&left, &right]
            .iter()
            .all(|x| x.get_type(schema).is_ok_and(|t| t.is_integer() || matches!(t, DataType::Decimal128(..))));
    if b.op == Operator::Divide && decimal_operands {
        let on_failure = if ansi { OnFailure::Error } else { OnFailure::Null };
        let udf = Arc::new(crate::functions::math::decimals::decimal_divide(on_failure));
        return Ok(Some(Expr::ScalarFunction(ScalarFunction { func: udf, args: vec![left, right] })));
    }
    // A DECIMAL sum, difference or product whose digits do not fit its type is NULL, or
    // fails in ANSI mode; DataFusion's keeps the digits while they fit an i128.
    let decimal_op = match b.op {
        Operator::Plus => Some(Op::Add),
        Operator::Minus => Some(Op::Subtract),
        Operator::Multiply => Some(Op::Multiply),
        Operator::Modulo => Some(Op::Mod),
        _ => None,
    };
    if let (Some(op), true) = (decimal_op, decimal_operands) {
        let on_failure = if ansi { OnFailure::Error } else { OnFailure::Null };
        let udf = Arc::new(crate::functions::math::arithmetic::operator(op, on_failure));
        return Ok(Some(Expr::ScalarFunction(ScalarFunction { func: udf, args: vec![left, right] })));
    }
    if (&left, &right) != (b.left.as_ref(), b.right.as_ref()) {
        return Ok(Some(Expr::BinaryExpr(BinaryExpr::new(Box::new(left), b.op, Box::new(right)))));
    }
    Ok(None)
}

/// A correlated scalar subquery whose aggregates are all planned as ones that may be NULL, so that
/// the value of a count on no rows survives its decorrelation (`aggregate::nullable`).
fn counts_may_be_null(sq: &datafusion::logical_expr::Subquery) -> Result<Transformed<Expr>> {
    let plan = sq.subquery.as_ref().clone().transform_up(|node| {
        let LogicalPlan::Aggregate(a) = node else { return Ok(Transformed::yes(node.recompute_schema()?)) };
        let aggr_expr = a
            .aggr_expr
            .into_iter()
            .map(|e| {
                e.transform_up(|e| match e {
                    Expr::AggregateFunction(f) => Ok(Transformed::yes(Expr::AggregateFunction(AggregateFunction {
                        func: crate::functions::aggregate::nullable::may_be_null(&f.func),
                        params: f.params,
                    }))),
                    other => Ok(Transformed::no(other)),
                })
                .map(|t| t.data)
            })
            .collect::<Result<Vec<_>>>()?;
        let rebuilt = Aggregate::try_new(a.input, a.group_expr, aggr_expr)?;
        Ok(Transformed::yes(LogicalPlan::Aggregate(rebuilt)))
    })?;
    let mut sq = sq.clone();
    sq.subquery = Arc::new(plan.data);
    Ok(Transformed::yes(Expr::ScalarSubquery(sq)))
}

/// Spark's cast, when it differs from Arrow's (see `casts`).
fn cast_rewrite(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    let Some((inner, to, try_)) = crate::functions::cast::cast_parts(&e) else { return Ok(Transformed::no(e)) };
    let Ok(from) = inner.get_type(schema) else { return Ok(Transformed::no(e)) };
    // An interval's text and number depend on its fields (`INTERVAL '3' DAY` is 3 as a BIGINT),
    // which an interval column's Arrow type does not keep (a literal's cast is made in the
    // parse, `functions::interval::literals`).
    if crate::functions::interval::arithmetic::is_interval(&from) && from != *to {
        let unit = crate::functions::interval::arithmetic::end_field_micros(inner, schema);
        if let (Some(unit), true) =
            (unit, matches!(to, DataType::Int8 | DataType::Int16 | DataType::Int32 | DataType::Int64))
        {
            return Ok(Transformed::yes(crate::functions::interval::arithmetic::cast_to_integer(
                inner.clone(),
                unit,
                to,
                try_,
            )));
        }
        return Err(crate::declare::refused(
            "CAST",
            "an interval's text and number depend on fields its type here does not keep",
        ));
    }
    if let Some(cast) = crate::functions::cast::datetime_numbers::rule(inner, &from, to, try_, ansi)? {
        return Ok(Transformed::yes(cast));
    }
    match crate::functions::cast::spark_cast(inner.clone(), &from, to, try_, ansi) {
        Some(cast) => Ok(Transformed::yes(cast)),
        None => Ok(Transformed::no(e)),
    }
}

/// One of the rewrites of floating point in [`rewrite`]: the expression it makes, if any.
type FloatStep<'a> = dyn Fn(&Expr) -> Result<Option<Expr>> + 'a;

fn rewrite(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    if let Some(doubles) = super::common_types::doubles_over_decimals(&e, schema)? {
        return Ok(Transformed::yes(doubles));
    }
    if let Some(text) = crate::functions::string::text_arguments::unwrap(&e, schema) {
        return Ok(Transformed::yes(text));
    }
    if matches!(e, Expr::Cast(_) | Expr::TryCast(_)) {
        return cast_rewrite(e, schema, ansi);
    }
    if let Some(unordered) = crate::functions::aggregate::collect_set::unordered(&e) {
        return Ok(Transformed::yes(unordered));
    }
    // Floating point read as Spark reads it. One call may need several of these (`max(DISTINCT
    // x)`, `sum(x) OVER (PARTITION BY y)`), so each step takes what the one before it made.
    use crate::functions::window::float_keys::{distinct_arguments, eliminate_distinct, extremes, in_lists, totals};
    let steps: [&FloatStep; 6] = [
        &|e| Ok(eliminate_distinct(e)),
        &|e| Ok(in_lists(e, schema)),
        &|e| crate::functions::window::zero_keys(e, schema),
        &|e| Ok(extremes(e, schema)),
        &|e| Ok(distinct_arguments(e, schema)),
        &|e| Ok(totals(e, schema)),
    ];
    let mut floating: Option<Expr> = None;
    for step in steps {
        if let Some(next) = step(floating.as_ref().unwrap_or(&e))? {
            floating = Some(next);
        }
    }
    if let Some(f) = floating {
        return Ok(Transformed::yes(f));
    }
    // A DECIMAL's `-x` and `abs(x)` round to 34 digits on Spark (`decimal::sign`).
    match &e {
        Expr::Negative(x) if matches!(x.get_type(schema)?, DataType::Decimal128(..)) => {
            return Ok(Transformed::yes(crate::functions::decimal::sign::negate(x.as_ref().clone(), false)));
        }
        Expr::ScalarFunction(f)
            if f.name() == "abs"
                && matches!(f.args.as_slice(), [x] if matches!(x.get_type(schema)?, DataType::Decimal128(..))) =>
        {
            return Ok(Transformed::yes(crate::functions::decimal::sign::negate(f.args[0].clone(), true)));
        }
        _ => {}
    }
    // In ANSI mode, negating an integer's least value fails (DataFusion's wraps, as Spark's
    // does without ANSI mode).
    if let (true, Expr::Negative(x)) = (ansi, &e) {
        let t = x.get_type(schema)?;
        if t.is_integer() {
            let udf = Arc::new(crate::functions::math::arithmetic::operator(Op::Subtract, OnFailure::Error));
            let args = vec![lit(ScalarValue::new_zero(&t)?), x.as_ref().clone()];
            return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: udf, args })));
        }
    }
    if let Some(sum) = ansi.then(|| ansi_sum(&e, schema)).transpose()?.flatten() {
        return Ok(Transformed::yes(sum));
    }
    if let (true, Expr::Case(case)) = (ansi, &e) {
        let branches = case.when_then_expr.iter().map(|(_, t)| t.as_ref()).chain(case.else_expr.as_deref());
        crate::types::text_and_number("CASE", branches.filter_map(|b| b.get_type(schema).ok()))?;
    }
    if let Expr::Case(case) = &e {
        if let Some(typed) = case_branches(case, schema)? {
            return Ok(Transformed::yes(typed));
        }
    }
    if let Expr::BinaryExpr(b) = &e {
        if let Some(decimal) = decimal_arithmetic(b, schema, ansi)? {
            return Ok(Transformed::yes(decimal));
        }
        // Spark's `/` of two integers is a DOUBLE (`3 / 2` is 1.5); DataFusion's divides
        // integers (1). A zero divisor of `/` or `%` fails in ANSI mode and gives NULL without
        // it (DataFusion: an error for integers, an infinity or NaN for floating point), and
        // in ANSI mode integer `+`, `-`, `*` fail on an overflow (DataFusion's wrap, as Spark's
        // do without ANSI mode). (`div` is Spark's integer division.)
        let typed = |x: &Expr, p: fn(&DataType) -> bool| x.get_type(schema).is_ok_and(|t| p(&t));
        let integers = typed(&b.left, DataType::is_integer) && typed(&b.right, DataType::is_integer);
        let float_or_int = |t: &DataType| t.is_integer() || t.is_floating();
        // A DECIMAL met by floating point is computed as a DOUBLE, as Spark computes it.
        let floating = typed(&b.left, DataType::is_floating) || typed(&b.right, DataType::is_floating);
        let decimal = |t: &DataType| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..));
        let number = |t: &DataType| float_or_int(t) || (floating && decimal(t));
        let numbers = [&b.left, &b.right].iter().all(|x| x.get_type(schema).is_ok_and(|t| number(&t)));
        let as_double = |x: &Expr| {
            if typed(x, decimal) {
                cast(x.clone(), DataType::Float64)
            } else {
                x.clone()
            }
        };
        let on_failure = if ansi { OnFailure::Error } else { OnFailure::Null };
        let op = match b.op {
            Operator::Divide if numbers => Some((Op::Divide, on_failure)),
            Operator::Modulo if numbers => Some((Op::Mod, on_failure)),
            Operator::Plus if ansi && integers => Some((Op::Add, on_failure)),
            Operator::Minus if ansi && integers => Some((Op::Subtract, on_failure)),
            Operator::Multiply if ansi && integers => Some((Op::Multiply, on_failure)),
            _ => None,
        };
        if let Some((op, on_failure)) = op {
            let udf = Arc::new(crate::functions::math::arithmetic::operator(op, on_failure));
            let args = vec![as_double(&b.left), as_double(&b.right)];
            return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: udf, args })));
        }
        return Ok(Transformed::no(e));
    }
    if let Expr::ScalarSubquery(sq) = &e {
        if !sq.outer_ref_columns.is_empty() {
            return counts_may_be_null(sq);
        }
    }
    // A call of a function its category declares: refused, or rewritten to Spark's answer.
    let Expr::ScalarFunction(ScalarFunction { func, args }) = e else { return Ok(Transformed::no(e)) };
    let call = Call { func, args };
    match crate::functions::lookup(call.name()) {
        Some(function) => {
            let again = |e: Expr| rewrite(e, schema, ansi);
            function.planned(call, &PlanContext { schema, ansi, again: &again })
        }
        None => call.unchanged(),
    }
}

/// A CASE whose branches are of different types, each cast to their common type here rather
/// than by DataFusion's type coercion at execution: a CASE is typed by its first branch until
/// then, so an aggregate or a window over it (`sum(CASE … THEN int ELSE double END)`) would be
/// planned with a type the rows do not have. `None` when the branches agree.
fn case_branches(case: &datafusion::logical_expr::expr::Case, schema: &DFSchema) -> Result<Option<Expr>> {
    let then_types = case.when_then_expr.iter().map(|(_, then)| then.get_type(schema)).collect::<Result<Vec<_>>>()?;
    let else_type = case.else_expr.as_ref().map(|e| e.get_type(schema)).transpose()?;
    let typed: Vec<DataType> = then_types.iter().chain(else_type.as_ref()).filter(|t| !t.is_null()).cloned().collect();
    // Text with other types is left to the rules on text (a refusal in ANSI mode).
    if typed.windows(2).all(|w| w[0] == w[1]) || typed.iter().any(DataType::is_string) {
        return Ok(None);
    }
    let common = super::common_types::spark_common_number(&typed).or_else(|| {
        datafusion::logical_expr::type_coercion::other::get_coerce_type_for_case_expression(
            &then_types,
            else_type.as_ref(),
        )
    });
    let Some(common) = common else { return Ok(None) };
    let to_common = |e: &Expr, t: &DataType| if t == &common { e.clone() } else { cast(e.clone(), common.clone()) };
    let mut case = case.clone();
    for ((_, then), t) in case.when_then_expr.iter_mut().zip(&then_types) {
        **then = to_common(then, t);
    }
    if let (Some(e), Some(t)) = (case.else_expr.as_mut(), else_type.as_ref()) {
        **e = to_common(e, t);
    }
    Ok(Some(Expr::Case(case)))
}

/// An integer literal as the narrowest DECIMAL that holds it (Spark's `DecimalType.fromLiteral`).
fn decimal_literal(e: &Expr) -> Option<Expr> {
    let v: i64 = match e {
        Expr::Literal(ScalarValue::Int8(Some(v)), _) => i64::from(*v),
        Expr::Literal(ScalarValue::Int16(Some(v)), _) => i64::from(*v),
        Expr::Literal(ScalarValue::Int32(Some(v)), _) => i64::from(*v),
        Expr::Literal(ScalarValue::Int64(Some(v)), _) => *v,
        _ => return None,
    };
    let digits = v.unsigned_abs().checked_ilog10().map_or(1, |d| d + 1) as u8;
    Some(Expr::Literal(ScalarValue::Decimal128(Some(i128::from(v)), digits, 0), None))
}

/// Output names stay what the planner named them, so the nodes above still find their columns.
fn spark_types(plan: LogicalPlan, ansi: bool) -> Result<LogicalPlan> {
    Ok(plan.transform_up_with_subqueries(|node| retype(node, ansi))?.data)
}

fn retype(node: LogicalPlan, ansi: bool) -> Result<Transformed<LogicalPlan>> {
    // `LIMIT n` stays a BIGINT, as the planner needs it.
    if matches!(node, LogicalPlan::Limit(_)) {
        return Ok(Transformed::no(node));
    }
    let node = match node {
        LogicalPlan::Values(v) => {
            // The planner typed the column's NULLs as its other rows (BIGINT): untyped again.
            let untyped = |e: &Expr| match e {
                Expr::Literal(ScalarValue::Int64(None), meta) => Ok(Expr::Literal(ScalarValue::Null, meta.clone())),
                other => int_literals(other.clone()),
            };
            let mut values: Vec<Vec<Expr>> =
                v.values.iter().map(|row| row.iter().map(untyped).collect::<Result<_>>()).collect::<Result<_>>()?;
            let planned: Vec<DataType> = v.schema.fields().iter().map(|f| f.data_type().clone()).collect();
            super::common_types::values_doubles_over_decimals(&mut values, &planned)?;
            if values == v.values {
                return Ok(Transformed::no(LogicalPlan::Values(v)));
            }
            // Typed again from the rows (a column of INT and BIGINT rows is a BIGINT), named as before.
            let typed = LogicalPlanBuilder::values(values)?.build()?;
            let LogicalPlan::Values(mut typed) = typed else {
                return Err(DataFusionError::Internal("VALUES planned as another node".into()));
            };
            let fields: Vec<_> = v
                .schema
                .iter()
                .zip(typed.schema.fields())
                .map(|((q, old), new)| (q.cloned(), Arc::new(new.as_ref().clone().with_name(old.name()))))
                .collect();
            typed.schema = Arc::new(DFSchema::new_with_metadata(fields, v.schema.metadata().clone())?);
            return Ok(Transformed::yes(LogicalPlan::Values(typed)));
        }
        LogicalPlan::Projection(_)
        | LogicalPlan::Aggregate(_)
        | LogicalPlan::Window(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::Join(_)
        | LogicalPlan::Sort(_) => {
            let node = keeping_names(node, int_literals)?.data.recompute_schema()?;
            // Spark's common types of numbers, before the aggregates and set operations above
            // read them.
            let schema = crate::declare::merged_input_schema(&node);
            keeping_names(node, |e| {
                Ok(e.transform_up(|e| {
                    if let Some(rounded) = crate::functions::math::decimal_round(&e, &schema)? {
                        return Ok(Transformed::yes(rounded));
                    }
                    if let Expr::BinaryExpr(b) = &e {
                        if let Some(decimal) = decimal_arithmetic(b, &schema, ansi)? {
                            return Ok(Transformed::yes(decimal));
                        }
                        // `/` of integers is a DOUBLE on Spark (computed by `rewrite` below).
                        let integer = |x: &Expr| x.get_type(&schema).is_ok_and(|t| t.is_integer());
                        if b.op == Operator::Divide && integer(&b.left) && integer(&b.right) {
                            let double = |x: &Expr| cast(x.clone(), DataType::Float64);
                            return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                                Box::new(double(&b.left)),
                                Operator::Divide,
                                Box::new(double(&b.right)),
                            ))));
                        }
                    }
                    if let Some(common) = super::common_types::doubles_over_decimals(&e, &schema)? {
                        return Ok(Transformed::yes(common));
                    }
                    Ok(match &e {
                        Expr::Case(case) => match case_branches(case, &schema)? {
                            Some(typed) => Transformed::yes(typed),
                            None => Transformed::no(e),
                        },
                        _ => Transformed::no(e),
                    })
                })?
                .data)
            })?
            .data
        }
        other => other,
    };
    let node = refresh_schema(node)?;
    let node = super::common_types::set_operation_types(node, ansi)?;
    if let LogicalPlan::Aggregate(_) = &node {
        return super::aggregate_types::aggregate_types(node, ansi);
    }
    if let LogicalPlan::Window(_) = &node {
        return super::aggregate_types::window_types(node, ansi);
    }
    Ok(Transformed::yes(node))
}

/// `e` with its integer literals that fit in 32 bits typed INT.
fn int_literals(e: Expr) -> Result<Expr> {
    Ok(e.transform_up(|e| match e {
        Expr::Literal(ScalarValue::Int64(Some(v)), meta) if i32::try_from(v).is_ok() => {
            Ok(Transformed::yes(Expr::Literal(ScalarValue::Int32(Some(v as i32)), meta)))
        }
        other => Ok(Transformed::no(other)),
    })?
    .data)
}
