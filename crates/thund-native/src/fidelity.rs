//! Spark's answers where DataFusion's functions give other ones: a planned query is rewritten
//! where the difference is only in the arguments or an edge case, and refused where the function
//! would answer differently. A refusal is an error at the query's line ("runs on the Spark
//! backend"); a different answer would be a wrong table without an error.
//!
//! Each rule was found by `thund-cli/tests/spark_functions.rs`, which runs Spark's own documented
//! examples on a real server and natively: a rule here is checked by the examples it fixes.
//! (The rewrites that need the query's text, such as `position(substr, str)`, are made on the
//! parse in `engine`.)

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{cast, lit, when, BinaryExpr, Expr, ExprSchemable, LogicalPlan, Operator};
use datafusion::prelude::coalesce;

/// Functions whose answers differ from Spark's whatever their arguments, and why.
const REFUSED: [(&str, &str); 6] = [
    ("arrays_zip", "Spark names the fields `0`, `1`, …, DataFusion `1`, `2`, …"),
    ("xxhash64", "Spark hashes its own binary layout of each value with seed 42"),
    ("json_tuple", "Spark returns one column per field, DataFusion one struct"),
    ("to_char", "Spark's datetime patterns (`yyyy-MM-dd`) are not DataFusion's (`%Y-%m-%d`)"),
    ("from_unixtime", "Spark returns text in its session time zone, DataFusion a timestamp"),
    ("version", "it names the engine"),
];

/// Functions that turn an array, map or struct argument into text (Spark keeps its type).
const NESTED_AS_TEXT: [&str; 5] = ["concat", "reverse", "nvl", "ifnull", "nvl2"];

/// `plan` with Spark's semantics, or the first function that would answer differently.
pub(crate) fn spark_semantics(plan: LogicalPlan) -> Result<LogicalPlan> {
    Ok(plan
        .transform_up_with_subqueries(|node| {
            let schema = merged_input_schema(&node);
            node.map_expressions(|e| e.transform_up(|e| rewrite(e, &schema)))
        })?
        .data)
}

/// The schema a node's expressions are evaluated against: its inputs' fields together.
fn merged_input_schema(node: &LogicalPlan) -> DFSchema {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    schema
}

fn refused(function: &str, why: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "`{function}` answers differently here than on Spark ({why}): it runs on the Spark backend"
    ))
}

fn rewrite(e: Expr, schema: &DFSchema) -> Result<Transformed<Expr>> {
    if let Expr::BinaryExpr(b) = &e {
        // Spark's `/` of two integers is a DOUBLE (`3 / 2` is 1.5); DataFusion's divides
        // integers (1). (`div` is Spark's integer division.)
        let integer = |x: &Expr| x.get_type(schema).is_ok_and(|t| t.is_integer());
        if b.op == Operator::Divide && integer(&b.left) && integer(&b.right) {
            let double = |x: &Expr| cast(x.clone(), arrow::datatypes::DataType::Float64);
            return Ok(Transformed::yes(Expr::BinaryExpr(BinaryExpr::new(
                Box::new(double(&b.left)),
                Operator::Divide,
                Box::new(double(&b.right)),
            ))));
        }
        return Ok(Transformed::no(e));
    }
    let Expr::ScalarFunction(ScalarFunction { func, mut args }) = e else { return Ok(Transformed::no(e)) };
    let name = func.name().to_string();
    let call = |func, args| Expr::ScalarFunction(ScalarFunction { func, args });
    if let Some((_, why)) = REFUSED.iter().find(|(n, _)| *n == name) {
        return Err(refused(&name, why));
    }
    let nested = |a: &Expr| {
        a.get_type(schema).is_ok_and(|t| {
            matches!(
                t,
                arrow::datatypes::DataType::List(_)
                    | arrow::datatypes::DataType::LargeList(_)
                    | arrow::datatypes::DataType::Struct(_)
                    | arrow::datatypes::DataType::Map(..)
            )
        })
    };
    if NESTED_AS_TEXT.contains(&name.as_str()) && args.iter().any(nested) {
        return Err(refused(&name, "on an array, map or struct it answers with text"));
    }
    let new = match name.as_str() {
        // `a[i]` counts from 0 in Spark SQL, from 1 in DataFusion (Spark has no
        // `array_element`, so every one in a plan is a subscript).
        "array_element" if args.len() == 2 => {
            let index = args.pop().expect("two arguments");
            args.push(index + lit(1i64));
            call(func, args)
        }
        // `element_at(map, key)`: DataFusion's answers a list of the one value.
        "map_extract" if args.len() == 2 => {
            let array_element = datafusion::functions_nested::extract::array_element_udf();
            call(array_element, vec![call(func, args), lit(1i64)])
        }
        // Spark's `array_remove` removes every element equal to the value.
        "array_remove" => call(datafusion::functions_nested::remove::array_remove_all_udf(), args),
        // Spark's `array_sort(a)` puts NULL last.
        "array_sort" if args.len() == 1 => {
            args.extend([lit("ASC"), lit("NULLS LAST")]);
            call(func, args)
        }
        // Spark's `array_prepend(array, element)` takes DataFusion's arguments the other way.
        "array_prepend" if args.len() == 2 => {
            args.swap(0, 1);
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
            let found = cast(call(func, args), arrow::datatypes::DataType::Int64);
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
        // Spark's seconds keep their fraction (`DECIMAL(8,6)`).
        "date_part" if args.first().is_some_and(is_seconds) => {
            return Err(refused("date_part", "Spark's seconds keep their fraction"));
        }
        _ => return Ok(Transformed::no(call(func, args))),
    };
    Ok(Transformed::yes(new))
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
