//! Spark's answers where DataFusion's planned array and map functions give others.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, ScalarValue};
use datafusion::error::Result;
use datafusion::logical_expr::{cast, lit, when, Expr, ExprSchemable, ScalarUDF};
use datafusion::prelude::coalesce;

use crate::declare::{call, refused, Call, PlanContext};

/// `a[i]`: counted from 0 in Spark SQL, from 1 in DataFusion; an index outside the array fails
/// in ANSI mode (NULL without it, as DataFusion's).
pub(super) fn subscript(mut c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if c.args.len() != 2 {
        return c.unchanged();
    }
    let index = c.args[1].clone() + lit(1i64);
    c.args[1] = match cx.ansi {
        true => super::element_at::index_within(c.args[0].clone(), index),
        false => index,
    };
    Ok(Transformed::yes(c.into_expr()))
}

/// `element_at(array, i)`: counted from 1, from the end when negative (as DataFusion's
/// `array_element`); 0 fails, an index outside the array fails in ANSI mode (NULL without it,
/// and always for `try_element_at`). `element_at(map, key)`: DataFusion's `map_extract`
/// answers a list of the one value.
pub(super) fn element_at(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if c.args.len() != 2 {
        return c.unchanged();
    }
    let array_element = datafusion::functions_nested::extract::array_element_udf();
    let name = c.name().to_string();
    if name != "map_extract" && !matches!(c.args[0].get_type(cx.schema)?, DataType::Map(..)) {
        let index = cast(c.args[1].clone(), DataType::Int64);
        let index = super::element_at::element_at_index(c.args[0].clone(), index, cx.ansi && name == "element_at");
        return Ok(Transformed::yes(call(array_element, vec![c.args[0].clone(), index])));
    }
    let map_extract = datafusion::functions_nested::map_extract::map_extract_udf();
    Ok(Transformed::yes(call(array_element, vec![call(map_extract, c.args), lit(1i64)])))
}

/// `size(NULL)` is NULL in ANSI mode, -1 (DataFusion's answer) without it.
pub(super) fn size(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if !cx.ansi || c.args.len() != 1 {
        return c.unchanged();
    }
    let value = c.args[0].clone();
    Ok(Transformed::yes(when(value.is_null(), lit(ScalarValue::Int32(None))).otherwise(c.into_expr())?))
}

/// Spark's `array_remove` removes every element equal to the value.
pub(super) fn array_remove(c: Call, _: &PlanContext) -> Result<Transformed<Expr>> {
    Ok(Transformed::yes(call(datafusion::functions_nested::remove::array_remove_all_udf(), c.args)))
}

/// Spark's `array_sort(a)` puts NULL last.
pub(super) fn array_sort(mut c: Call, _: &PlanContext) -> Result<Transformed<Expr>> {
    if c.args.len() != 1 {
        return c.unchanged();
    }
    c.args.extend([lit("ASC"), lit("NULLS LAST")]);
    Ok(Transformed::yes(c.into_expr()))
}

/// Spark's `array_append(NULL, x)` is NULL.
pub(super) fn array_append(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if c.args.len() != 2 {
        return c.unchanged();
    }
    let array = c.args[0].clone();
    let appended = c.into_expr();
    let null = lit(ScalarValue::try_from(appended.get_type(cx.schema)?)?);
    Ok(Transformed::yes(when(array.is_null(), null).otherwise(appended)?))
}

/// Spark's `array_position` is a BIGINT, 0 when the value is missing (NULL for a NULL array or
/// value).
pub(super) fn array_position(c: Call, _: &PlanContext) -> Result<Transformed<Expr>> {
    if c.args.len() != 2 {
        return c.unchanged();
    }
    let either_null = c.args[0].clone().is_null().or(c.args[1].clone().is_null());
    let found = cast(c.into_expr(), DataType::Int64);
    Ok(Transformed::yes(when(either_null, lit(ScalarValue::Int64(None))).otherwise(coalesce(vec![found, lit(0i64)]))?))
}

/// Spark names `arrays_zip`'s fields after the columns given, else by position from 0
/// (DataFusion's from 1).
pub(super) fn arrays_zip(c: Call, _: &PlanContext) -> Result<Transformed<Expr>> {
    let names = c
        .args
        .iter()
        .enumerate()
        .map(|(i, a)| match a {
            Expr::Column(c) => c.name.clone(),
            _ => i.to_string(),
        })
        .collect();
    Ok(Transformed::yes(call(super::arrays::arrays_zip(names), c.args)))
}

/// `concat` and `reverse` of an array, map or struct ([`array_form`]).
pub(super) fn of_arrays(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    match array_form(&c, cx)? {
        Some(form) => Ok(Transformed::yes(call(form, c.args))),
        None => c.unchanged(),
    }
}

/// The function for a call of `concat`, `reverse`, `nvl`, `ifnull` or `nvl2` with an array,
/// map or struct argument, which DataFusion's turn into text where Spark keeps its type:
/// arrays of one type are answered by the array functions, anything else is refused. `None`
/// for a call without such an argument.
pub(crate) fn array_form(c: &Call, cx: &PlanContext) -> Result<Option<Arc<ScalarUDF>>> {
    let nested = |a: &Expr| {
        a.get_type(cx.schema).is_ok_and(|t| {
            matches!(t, DataType::List(_) | DataType::LargeList(_) | DataType::Struct(_) | DataType::Map(..))
        })
    };
    if !c.args.iter().any(nested) {
        return Ok(None);
    }
    match nested_form(c.name(), &c.args, cx.schema) {
        Some(form) => Ok(Some(form)),
        None => Err(refused(c.name(), "on an array, map or struct it answers with text")),
    }
}

/// The function computing `name` (one of [`array_form`]'s) of arrays, where its arguments have
/// one type (NULLs aside; Spark would widen the others, which is left to it): `reverse` reverses
/// the elements, `concat` concatenates the arrays, `nvl` and `ifnull` are `coalesce`.
fn nested_form(name: &str, args: &[Expr], schema: &DFSchema) -> Option<Arc<ScalarUDF>> {
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
