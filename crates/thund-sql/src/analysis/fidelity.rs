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

use arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue, TableReference};
use datafusion::error::{DataFusionError, Result};
use datafusion::functions_aggregate::average::avg_udaf;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction, WindowFunction};
use datafusion::logical_expr::{
    cast, lit, when, Aggregate, BinaryExpr, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator, Projection,
    Union, WindowFunctionDefinition,
};
use datafusion::optimizer::analyzer::type_coercion::coerce_union_schema;
use datafusion::prelude::coalesce;

use crate::functions::math::arithmetic::{OnFailure, Op};

/// Functions whose answers differ from Spark's whatever their arguments, and why.
const REFUSED: [(&str, &str); 2] =
    [("json_tuple", "Spark returns one column per field, DataFusion one struct"), ("version", "it names the engine")];

/// Functions that turn an array, map or struct argument into text (Spark keeps its type).
const NESTED_AS_TEXT: [&str; 5] = ["concat", "reverse", "nvl", "ifnull", "nvl2"];

fn is_binary(e: &Expr, schema: &DFSchema) -> bool {
    e.get_type(schema).is_ok_and(|t| crate::functions::binary::is_bytes(&t))
}

/// The function computing `name` (one of `NESTED_AS_TEXT`) of arrays, where its arguments have
/// one type (NULLs aside; Spark would widen the others, which is left to it): `reverse` reverses
/// the elements, `concat` concatenates the arrays, `nvl` and `ifnull` are `coalesce`.
fn nested_form(name: &str, args: &[Expr], schema: &DFSchema) -> Option<Arc<datafusion::logical_expr::ScalarUDF>> {
    let types: Vec<DataType> = args.iter().map(|a| a.get_type(schema)).collect::<Result<_>>().ok()?;
    let mut typed = types.iter().filter(|t| **t != DataType::Null);
    let first = typed.next()?;
    if !matches!(first, DataType::List(_)) || typed.any(|t| !t.equals_datatype(first)) {
        return None;
    }
    match name {
        "reverse" if args.len() == 1 => Some(datafusion::functions_nested::reverse::array_reverse_udf()),
        "concat" if types.iter().all(|t| t.equals_datatype(first)) => {
            Some(datafusion::functions_nested::concat::array_concat_udf())
        }
        "nvl" | "ifnull" => Some(datafusion::functions::core::coalesce()),
        _ => None,
    }
}

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
                    text_and_number("UNION", u.inputs.iter().map(|input| input.schema().field(i).data_type().clone()))?;
                }
            }
            let schema = merged_input_schema(&node);
            // Every node's schema is derived again: a rewrite below may have changed a type.
            keeping_names(node, |e| Ok(e.transform_up(|e| rewrite(e, &schema, ansi))?.data))?.map_data(refresh_schema)
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

/// `node`'s schema derived again from its expressions and inputs. (A union would keep its
/// first input's types: it gets its inputs' common types, to which the analyzer casts them.)
fn refresh_schema(node: LogicalPlan) -> Result<LogicalPlan> {
    match node {
        LogicalPlan::Union(u) => {
            let schema = Arc::new(coerce_union_schema(&u.inputs)?);
            Ok(LogicalPlan::Union(Union { inputs: u.inputs, schema }))
        }
        other => other.recompute_schema(),
    }
}

/// The schema a node's expressions are evaluated against: its inputs' fields together.
pub(crate) fn merged_input_schema(node: &LogicalPlan) -> DFSchema {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    schema
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

/// Whether a value of this type is or holds a DECIMAL.
fn holds_decimal(t: &DataType) -> bool {
    match t {
        DataType::Decimal128(..) | DataType::Decimal256(..) => true,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) | DataType::Map(f, _) => {
            holds_decimal(f.data_type())
        }
        DataType::Struct(fields) => fields.iter().any(|f| holds_decimal(f.data_type())),
        _ => false,
    }
}

fn refused(function: &str, why: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "`{function}` answers differently here than on Spark ({why}): it runs on the Spark backend"
    ))
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

/// Spark's cast, when it differs from Arrow's (see `casts`).
fn cast_rewrite(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    let Some((inner, to, try_)) = crate::functions::cast::cast_parts(&e) else { return Ok(Transformed::no(e)) };
    let Ok(from) = inner.get_type(schema) else { return Ok(Transformed::no(e)) };
    // An interval's text and number depend on its fields (`INTERVAL '3' DAY` is 3 as a BIGINT),
    // which an interval column's Arrow type does not keep (a literal's cast is made in the
    // parse, `interval_literals`).
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
        return Err(refused("CAST", "an interval's text and number depend on fields its type here does not keep"));
    }
    match crate::functions::cast::spark_cast(inner.clone(), &from, to, try_, ansi) {
        Some(cast) => Ok(Transformed::yes(cast)),
        None => Ok(Transformed::no(e)),
    }
}

fn rewrite(e: Expr, schema: &DFSchema, ansi: bool) -> Result<Transformed<Expr>> {
    if let Some(text) = crate::functions::string::text_arguments::unwrap(&e, schema) {
        return Ok(Transformed::yes(text));
    }
    if matches!(e, Expr::Cast(_) | Expr::TryCast(_)) {
        return cast_rewrite(e, schema, ansi);
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
        text_and_number("CASE", branches.filter_map(|b| b.get_type(schema).ok()))?;
    }
    if let Expr::BinaryExpr(b) = &e {
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
            let udf = Arc::new(crate::functions::math::arithmetic::decimal_divide(on_failure));
            return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: udf, args: vec![left, right] })));
        }
        // A DECIMAL sum, difference or product whose digits do not fit its type is NULL, or
        // fails in ANSI mode; DataFusion's keeps the digits while they fit an i128.
        let decimal_op = match b.op {
            Operator::Plus => Some(Op::Add),
            Operator::Minus => Some(Op::Subtract),
            Operator::Multiply => Some(Op::Multiply),
            _ => None,
        };
        if let (Some(op), true) = (decimal_op, decimal_operands) {
            let on_failure = if ansi { OnFailure::Error } else { OnFailure::Null };
            let udf = Arc::new(crate::functions::math::arithmetic::operator(op, on_failure));
            return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: udf, args: vec![left, right] })));
        }
        if (&left, &right) != (b.left.as_ref(), b.right.as_ref()) {
            return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(Box::new(left), b.op, Box::new(right)))));
        }
        // Spark's `/` of two integers is a DOUBLE (`3 / 2` is 1.5); DataFusion's divides
        // integers (1). A zero divisor of `/` or `%` fails in ANSI mode and gives NULL without
        // it (DataFusion: an error for integers, an infinity or NaN for floating point), and
        // in ANSI mode integer `+`, `-`, `*` fail on an overflow (DataFusion's wrap, as Spark's
        // do without ANSI mode). (`div` is Spark's integer division.)
        let typed = |x: &Expr, p: fn(&DataType) -> bool| x.get_type(schema).is_ok_and(|t| p(&t));
        let integers = typed(&b.left, DataType::is_integer) && typed(&b.right, DataType::is_integer);
        let float_or_int = |t: &DataType| t.is_integer() || t.is_floating();
        let numbers = typed(&b.left, float_or_int) && typed(&b.right, float_or_int);
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
            let args = vec![b.left.as_ref().clone(), b.right.as_ref().clone()];
            return Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction { func: udf, args })));
        }
        return Ok(Transformed::no(e));
    }
    let Expr::ScalarFunction(ScalarFunction { func, mut args }) = e else { return Ok(Transformed::no(e)) };
    let name = func.name().to_string();
    let call = |func, args| Expr::ScalarFunction(ScalarFunction { func, args });
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
        return Err(refused(&name, why));
    }
    // Spark names `arrays_zip`'s fields after the columns given, else by position from 0
    // (DataFusion's from 1).
    if name == "arrays_zip" {
        let names = args
            .iter()
            .enumerate()
            .map(|(i, a)| match a {
                Expr::Column(c) => c.name.clone(),
                _ => i.to_string(),
            })
            .collect();
        return Ok(Transformed::yes(call(crate::functions::collection::arrays::arrays_zip(names), args)));
    }
    let nested = |a: &Expr| {
        a.get_type(schema).is_ok_and(|t| {
            matches!(t, DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_) | DataType::Map(..))
        })
    };
    if NESTED_AS_TEXT.contains(&name.as_str()) && args.iter().any(nested) {
        if let Some(nested_call) = nested_form(&name, &args, schema) {
            return Ok(Transformed::yes(call(nested_call, args)));
        }
        return Err(refused(&name, "on an array, map or struct it answers with text"));
    }
    // datafusion-spark's `xxhash64` hashes a DECIMAL otherwise than Spark (every example
    // differed); Spark's other types it hashes as Spark does.
    if name == "xxhash64" && args.iter().any(|a| a.get_type(schema).is_ok_and(|t| holds_decimal(&t))) {
        return Err(refused(&name, "of a DECIMAL it is another hash"));
    }
    if ansi && matches!(name.as_str(), "coalesce" | "nvl" | "ifnull") {
        text_and_number(&name, args.iter().filter_map(|a| a.get_type(schema).ok()))?;
    }
    // Without ANSI mode, Spark finds no common type of text and a BOOLEAN (DataFusion's is text).
    if !ansi && matches!(name.as_str(), "coalesce" | "nvl" | "ifnull") {
        let types: Vec<DataType> = args.iter().filter_map(|a| a.get_type(schema).ok()).collect();
        if types.iter().any(|t| t.is_string()) && types.contains(&DataType::Boolean) {
            return Err(DataFusionError::Plan(format!(
                "`{name}` of a BOOLEAN and a STRING: Spark finds no common type of the two; cast one side"
            )));
        }
    }
    if matches!(name.as_str(), "format_string" | "printf") {
        return crate::functions::string::text_arguments::format_arguments(&name, args, schema)
            .map(|args| Transformed::yes(call(func, args)));
    }
    // A local time the clocks pass twice (or skip) is read as Java reads it (the earlier
    // offset; moved forward by the gap) in a zone that changes its clocks: datafusion-spark's
    // takes the later offset.
    if name == "to_utc_timestamp" && args.len() == 2 && !args.get(1).is_some_and(is_fixed_zone) {
        return Ok(Transformed::yes(call(
            Arc::new(crate::functions::datetime::make_timestamp::to_utc_timestamp()),
            args,
        )));
    }
    // In ANSI mode, a day that is not one fails `next_day` (DataFusion's: NULL).
    if ansi && name == "next_day" && !args.get(1).is_some_and(is_day_of_week) {
        return Err(refused("next_day", "in ANSI mode Spark fails on a day of the week it cannot read"));
    }
    let new = match name.as_str() {
        // `a[i]` counts from 0 in Spark SQL, from 1 in DataFusion (Spark has no
        // `array_element`, so every one in a plan is a subscript). An index outside the array
        // fails in ANSI mode (NULL without it, as DataFusion's).
        "array_element" if args.len() == 2 => {
            let index = args[1].clone() + lit(1i64);
            args[1] = match ansi {
                true => crate::functions::collection::element_at::index_within(args[0].clone(), index),
                false => index,
            };
            call(func, args)
        }
        // Without ANSI mode, a text the parsing functions cannot read is NULL.
        "to_date" | "to_timestamp" | "unix_timestamp" | "to_unix_timestamp" if !ansi => {
            match crate::functions::datetime::patterns::lenient(&name) {
                Some(lenient) => call(Arc::new(lenient), args),
                None => return Ok(Transformed::no(call(func, args))),
            }
        }
        // Without ANSI mode, a field out of its range (month 13) is NULL.
        "make_timestamp" | "make_timestamp_ltz" | "make_timestamp_ntz" if !ansi => {
            match crate::functions::datetime::make_timestamp::lenient(&name) {
                Some(lenient) => call(Arc::new(lenient), args),
                None => return Ok(Transformed::no(call(func, args))),
            }
        }
        // In ANSI mode an interval that overflows fails (datafusion-spark's is NULL).
        "make_interval" if ansi => crate::functions::interval::make::overflow_check(call(func, args.clone()), args),
        // Without ANSI mode, a `conv` that overflows reads as -1.
        "conv" if !ansi => call(crate::functions::math::conv::lenient(), args),
        // `size(NULL)` is NULL in ANSI mode, -1 (DataFusion's answer) without it.
        "size" if ansi && args.len() == 1 => {
            let value = args[0].clone();
            when(value.is_null(), lit(ScalarValue::Int32(None))).otherwise(call(func, args))?
        }
        // `element_at(array, i)`: counted from 1, from the end when negative (as DataFusion's
        // `array_element`); 0 fails, an index outside the array fails in ANSI mode (NULL
        // without it, and always for `try_element_at`).
        "element_at" | "try_element_at"
            if args.len() == 2 && !matches!(args[0].get_type(schema)?, DataType::Map(..)) =>
        {
            let index = cast(args[1].clone(), DataType::Int64);
            let index = crate::functions::collection::element_at::element_at_index(
                args[0].clone(),
                index,
                ansi && name == "element_at",
            );
            call(datafusion::functions_nested::extract::array_element_udf(), vec![args[0].clone(), index])
        }
        // `element_at(map, key)`: DataFusion's `map_extract` answers a list of the one value.
        "element_at" | "try_element_at" | "map_extract" if args.len() == 2 => {
            let array_element = datafusion::functions_nested::extract::array_element_udf();
            let map_extract = datafusion::functions_nested::map_extract::map_extract_udf();
            call(array_element, vec![call(map_extract, args), lit(1i64)])
        }
        // `left` and `substring` of a BINARY are bytes (DataFusion's read the bytes as text).
        "left" if args.len() == 2 && is_binary(&args[0], schema) => {
            call(crate::functions::binary::substr(), vec![args[0].clone(), lit(1i64), args[1].clone()])
        }
        "substr" | "substring" if is_binary(&args[0], schema) => call(crate::functions::binary::substr(), args),
        // `lpad`, `rpad` and `overlay` of a BINARY are bytes (DataFusion's read them as text).
        "lpad" | "rpad" | "overlay" if is_binary(&args[0], schema) => {
            match crate::functions::binary::bytes_function(&name) {
                Some(bytes_function) => call(bytes_function, args),
                None => return Ok(Transformed::no(call(func, args))),
            }
        }
        // `a DIV b` in ANSI mode: a zero divisor and an overflow fail.
        "div" if ansi => {
            call(Arc::new(crate::functions::math::arithmetic::operator(Op::IntDivide, OnFailure::Error)), args)
        }
        // Spark's `array_remove` removes every element equal to the value.
        "array_remove" => call(datafusion::functions_nested::remove::array_remove_all_udf(), args),
        // Spark reads a string given for a timestamp as a TIMESTAMP (an instant, in the session's
        // zone, UTC here); DataFusion as a timestamp without zone, so the answer had none either.
        "date_trunc" | "from_utc_timestamp" | "to_utc_timestamp"
            if args.get(timestamp_argument(&name)).is_some_and(|a| a.get_type(schema).is_ok_and(|t| t.is_string())) =>
        {
            let at = timestamp_argument(&name);
            let instant = DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, Some("UTC".into()));
            args[at] = cast(args[at].clone(), instant);
            call(func, args)
        }
        // Counts Spark types INT (DataFusion: an unsigned or signed BIGINT).
        "cardinality" | "regexp_count" | "regexp_instr" => cast(call(func, args), DataType::Int32),
        // `mod(a, b)` is Spark's `a % b`, whose (decimal) type the operator has.
        "mod" if args.len() == 2 => {
            let (a, b) = (args[0].clone(), args[1].clone());
            // The operator's own rules (a zero divisor in either mode) apply to it.
            let remainder = Expr::BinaryExpr(BinaryExpr::new(Box::new(a), Operator::Modulo, Box::new(b)));
            rewrite(remainder, schema, ansi)?.data
        }
        // Spark's `array_sort(a)` puts NULL last.
        "array_sort" if args.len() == 1 => {
            args.extend([lit("ASC"), lit("NULLS LAST")]);
            call(func, args)
        }
        // Spark's `array_append(NULL, x)` is NULL.
        "array_append" if args.len() == 2 => {
            let array = args[0].clone();
            let null = lit(ScalarValue::try_from(call(func.clone(), args.clone()).get_type(schema)?)?);
            when(array.is_null(), null).otherwise(call(func, args))?
        }
        // Spark's `array_position` is a BIGINT, 0 when the value is missing (NULL for a NULL
        // array or value).
        "array_position" if args.len() == 2 => {
            let either_null = args[0].clone().is_null().or(args[1].clone().is_null());
            let found = cast(call(func, args), DataType::Int64);
            when(either_null, lit(ScalarValue::Int64(None))).otherwise(coalesce(vec![found, lit(0i64)]))?
        }
        // Spark's `regexp_replace` replaces every match; DataFusion's only the first unless
        // flagged `g`. Spark's fourth argument is a position, DataFusion's the flags.
        "regexp_replace" if args.len() == 3 => {
            args.push(lit("g"));
            call(func, args)
        }
        "regexp_replace" => {
            return Err(refused("regexp_replace", "its fourth argument is a position on Spark, flags here"));
        }
        // Spark rounds a DECIMAL as a DECIMAL, half up, to `min(s, d)` digits with one more
        // integral digit for the carry (`round(decimal(14,6), 2)` is a DECIMAL(11,2));
        // DataFusion's answers a DOUBLE. Arrow's cast to the smaller scale rounds half up.
        "round" if args.first().is_some_and(|a| matches!(a.get_type(schema), Ok(DataType::Decimal128(..)))) => {
            let Ok(DataType::Decimal128(p, s)) = args[0].get_type(schema) else {
                return Ok(Transformed::no(call(func, args)));
            };
            let digits = match args.get(1) {
                None => Some(0),
                Some(Expr::Literal(v, _)) => v.cast_to(&DataType::Int64).ok().and_then(|v| match v {
                    ScalarValue::Int64(Some(d)) => Some(d),
                    _ => None,
                }),
                Some(_) => None,
            };
            let Some(d) = digits.filter(|d| *d >= 0) else {
                return Err(refused("round", "a DECIMAL to a negative or computed scale"));
            };
            let scale = (s as i64).min(d) as i8;
            let precision = ((p as i64) - (s as i64) + 1 + scale as i64).min(38) as u8;
            cast(args.swap_remove(0), DataType::Decimal128(precision, scale))
        }
        // Spark's seconds of a timestamp keep their fraction (`DECIMAL(8,6)`): DataFusion's
        // microseconds of the minute, divided exactly.
        "date_part"
            if args.first().is_some_and(is_seconds)
                && !args.get(1).is_some_and(|a| {
                    a.get_type(schema).is_ok_and(|t| crate::functions::interval::arithmetic::is_interval(&t))
                }) =>
        {
            if !matches!(args.get(1).map(|a| a.get_type(schema)), Some(Ok(DataType::Timestamp(..)))) {
                return Err(refused("date_part", "Spark's seconds of an interval or a date are other types"));
            }
            let micros = call(Arc::clone(&func), vec![lit("microsecond"), args[1].clone()]);
            let divide = Arc::new(crate::functions::math::arithmetic::decimal_divide(OnFailure::Null));
            let million = lit(ScalarValue::Decimal128(Some(1_000_000), 7, 0));
            let seconds = call(divide, vec![cast(micros, DataType::Decimal128(8, 0)), million]);
            cast(seconds, DataType::Decimal128(8, 6))
        }
        _ => return Ok(Transformed::no(call(func, args))),
    };
    Ok(Transformed::yes(new))
}

/// In ANSI mode, Spark's common type of text and a number (or a BOOLEAN) is the number (the
/// text is cast to it, and fails if it is not one); DataFusion's is text. Refused where `types`
/// mix the two.
fn text_and_number(what: &str, types: impl Iterator<Item = DataType>) -> Result<()> {
    let types: Vec<DataType> = types.collect();
    if types.iter().any(|t| t.is_string()) && types.iter().any(|t| t.is_numeric() || t == &DataType::Boolean) {
        return Err(refused(what, "in ANSI mode Spark casts the text to the number's type; cast one side explicitly"));
    }
    Ok(())
}

/// Whether `e` is a literal time zone whose offset is the same all year (UTC, `+02:00`,
/// `Asia/Seoul`), so that every local time is one instant.
fn is_fixed_zone(e: &Expr) -> bool {
    use arrow::array::timezone::Tz;
    use chrono::{Offset, TimeZone};
    let Expr::Literal(ScalarValue::Utf8(Some(z)) | ScalarValue::Utf8View(Some(z)) | ScalarValue::LargeUtf8(Some(z)), _) =
        e
    else {
        return false;
    };
    let Ok(tz) = z.parse::<Tz>() else { return false };
    // Two instants half a year apart, in a year recent enough for today's rules.
    let offset = |month| {
        chrono::NaiveDate::from_ymd_opt(2025, month, 1)
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| tz.offset_from_utc_datetime(&t).fix())
    };
    offset(1).is_some() && offset(1) == offset(7)
}

/// Whether `e` is a literal day of the week `next_day` reads (`MO`, `MON`, `MONDAY`, any case).
fn is_day_of_week(e: &Expr) -> bool {
    let Expr::Literal(ScalarValue::Utf8(Some(d)) | ScalarValue::Utf8View(Some(d)) | ScalarValue::LargeUtf8(Some(d)), _) =
        e
    else {
        return false;
    };
    let d = d.to_ascii_uppercase();
    ["MONDAY", "TUESDAY", "WEDNESDAY", "THURSDAY", "FRIDAY", "SATURDAY", "SUNDAY"]
        .iter()
        .any(|day| *day == d || day[..3] == d || day[..2] == d)
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

/// Which argument of `date_trunc(unit, ts)`, `from_utc_timestamp(ts, zone)` or
/// `to_utc_timestamp(ts, zone)` is the timestamp.
fn timestamp_argument(function: &str) -> usize {
    usize::from(function == "date_trunc")
}

/// Whether `e` is the literal field name of seconds (`'second'`, `'SECONDS'`, `'s'`, …).
fn is_seconds(e: &Expr) -> bool {
    let Expr::Literal(ScalarValue::Utf8(Some(f)) | ScalarValue::Utf8View(Some(f)) | ScalarValue::LargeUtf8(Some(f)), _) =
        e
    else {
        return false;
    };
    matches!(f.to_ascii_lowercase().as_str(), "second" | "seconds" | "s" | "sec" | "secs")
}

/// Spark's types where DataFusion's planner picks others, before anything else is decided from
/// the types:
/// - an integer literal that fits in 32 bits is an INT (DataFusion: BIGINT), so `VALUES (1)`,
///   `CASE … THEN 1`, `coalesce(sum(d), 0)` and `x + 1` have Spark's types. (Decimal literals
///   such as `1.50` are DECIMAL(3,2) through the parser's option, set in `engine`.)
/// - aggregates: `avg` of a DECIMAL is a DECIMAL, no count is unsigned (see
///   [`aggregate_types`]).
/// - `rank`, `dense_rank`, `row_number` and `ntile` are INT (DataFusion: an unsigned BIGINT,
///   which a Delta table would store as DECIMAL(20,0)).
///
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
            let values: Vec<Vec<Expr>> =
                v.values.iter().map(|row| row.iter().map(untyped).collect::<Result<_>>()).collect::<Result<_>>()?;
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
        | LogicalPlan::Sort(_) => keeping_names(node, int_literals)?.data,
        other => other,
    };
    let node = refresh_schema(node)?;
    if let LogicalPlan::Aggregate(_) = &node {
        return aggregate_types(node, ansi);
    }
    if let LogicalPlan::Window(w) = &node {
        if w.schema.fields().iter().any(|f| f.data_type() == &DataType::UInt64) {
            // The ranks, cast in a projection above.
            let ranks =
                |_: Option<&TableReference>, f: &Field| (f.data_type() == &DataType::UInt64).then_some(DataType::Int32);
            return cast_outputs(node, ranks).map(Transformed::yes);
        }
    }
    Ok(Transformed::yes(node))
}

/// `node` under a projection that casts the outputs `spark_type` names a type for, keeping their
/// names so that the nodes above still find them; the other outputs pass through.
fn cast_outputs(
    node: LogicalPlan,
    spark_type: impl Fn(Option<&TableReference>, &Field) -> Option<DataType>,
) -> Result<LogicalPlan> {
    let exprs = node
        .schema()
        .iter()
        .map(|(q, f)| {
            let column = Expr::from((q, f));
            match spark_type(q, f) {
                Some(t) => cast(column, t).alias_qualified(q.cloned(), f.name()),
                None => column,
            }
        })
        .collect();
    Ok(LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(node))?))
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

/// Spark's types of aggregates where DataFusion's differ, cast in a projection above the
/// aggregate under the aggregate's names:
/// - `avg` of a DECIMAL(p,s) is a DECIMAL(p+4,s+4) rounded half up (the Spark function library
///   here answers a DOUBLE; DataFusion's own average truncates). The average is taken by
///   DataFusion's over the values scaled up by one digit, and the cast rounds that digit away
///   (Arrow's cast to a smaller scale rounds half up).
/// - Spark has no unsigned types: an unsigned count (`regr_count`) is a BIGINT.
/// - In ANSI mode a `sum(DISTINCT …)` of BIGINTs that overflows fails (DataFusion's wraps, as
///   Spark's does without ANSI mode): it is taken over DECIMAL(38,0)s, and the cast back to a
///   BIGINT fails on an overflow.
fn aggregate_types(node: LogicalPlan, ansi: bool) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Aggregate(agg) = node else { return Ok(Transformed::no(node)) };
    let input = agg.input.schema().clone();
    // The outputs to cast: their names and Spark's type.
    let mut spark_types = Vec::new();
    let mut aggr_expr = Vec::with_capacity(agg.aggr_expr.len());
    for e in &agg.aggr_expr {
        let function = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            other => other,
        };
        let Expr::AggregateFunction(f) = function else {
            aggr_expr.push(e.clone());
            continue;
        };
        let (qualifier, name) = e.qualified_name();
        // (`grouping(…)` stays an INT, Spark's is a TINYINT: the analyzer resolves it only in
        // the projection right above its aggregate, where a cast cannot go.)
        if e.get_type(&input)? == DataType::UInt64 {
            spark_types.push((qualifier.clone(), name.clone(), DataType::Int64));
        }
        // (A `sum` that is not DISTINCT is `sums::ansi_sum` already.)
        if let ([arg], true, "sum", true) = (f.params.args.as_slice(), ansi, f.func.name(), f.params.distinct) {
            if arg.get_type(&input)? == DataType::Int64 {
                let mut params = f.params.clone();
                params.args = vec![cast(arg.clone(), DataType::Decimal128(38, 0))];
                let sum = Expr::AggregateFunction(AggregateFunction { func: Arc::clone(&f.func), params });
                aggr_expr.push(sum.alias_qualified(qualifier.clone(), name.clone()));
                spark_types.push((qualifier, name, DataType::Int64));
                continue;
            }
        }
        let decimal = match f.params.args.as_slice() {
            [arg] if f.func.name() == "avg" => match arg.get_type(&input)? {
                DataType::Decimal128(p, s) => Some((p, s)),
                _ => None,
            },
            _ => None,
        };
        let Some((p, s)) = decimal else {
            aggr_expr.push(e.clone());
            continue;
        };
        if p + 5 > 38 {
            return Err(refused("avg", "of a DECIMAL wider than 33 digits Spark bounds its scale"));
        }
        let mut params = f.params.clone();
        params.args = vec![cast(params.args[0].clone(), DataType::Decimal128(p + 1, s + 1))];
        let avg = Expr::AggregateFunction(AggregateFunction { func: avg_udaf(), params });
        aggr_expr.push(avg.alias_qualified(qualifier.clone(), name.clone()));
        spark_types.push((qualifier, name, DataType::Decimal128(p + 4, s + 4)));
    }
    if spark_types.is_empty() {
        return Ok(Transformed::no(LogicalPlan::Aggregate(agg)));
    }
    let agg = LogicalPlan::Aggregate(Aggregate::try_new(agg.input, agg.group_expr, aggr_expr)?);
    let spark_type = |q: Option<&TableReference>, f: &Field| {
        spark_types.iter().find(|(wq, wn, _)| wq.as_ref() == q && wn == f.name()).map(|(_, _, t)| t.clone())
    };
    cast_outputs(agg, spark_type).map(Transformed::yes)
}
