//! Spark's conditional functions and predicates: the spellings DataFusion has under another
//! name or form, and the common types of `coalesce`, `nvl` and `ifnull` as Spark finds them.

use arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, ExprSchemable};

use crate::declare::{call, Call, Function, PlanContext};

/// Spark's conditional functions and predicates, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::spelled("isnull", &[(1, "(__a1 IS NULL)")]),
    Function::spelled("isnotnull", &[(1, "(__a1 IS NOT NULL)")]),
    Function::spelled("equal_null", &[(2, "(__a1 IS NOT DISTINCT FROM __a2)")]),
    Function::spelled("nullifzero", &[(1, "nullif(__a1, 0)")]),
    Function::spelled("zeroifnull", &[(1, "coalesce(__a1, 0)")]),
    Function::spelled("like", &[(2, "(__a1 LIKE __a2)")]),
    Function::spelled("ilike", &[(2, "(__a1 ILIKE __a2)")]),
    Function::builtin("coalesce").plan(common_type),
    Function::builtin("nvl").plan(common_type),
    Function::builtin("ifnull").plan(common_type),
    Function::builtin("nvl2").plan(common_type),
];

/// `coalesce`, `nvl`, `ifnull` and `nvl2` with Spark's common type of their arguments: of
/// arrays, maps or structs (`collection`'s `array_form`); in ANSI mode, Spark's common type of
/// text and a number is the number (refused, `types::text_and_number`); without it, Spark
/// finds no common type of text and a BOOLEAN (DataFusion's is text).
fn common_type(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if let Some(form) = crate::functions::collection::rewrites::array_form(&c, cx)? {
        return Ok(Transformed::yes(call(form, c.args)));
    }
    let name = c.name().to_string();
    if !matches!(name.as_str(), "coalesce" | "nvl" | "ifnull") {
        return c.unchanged();
    }
    let types: Vec<DataType> = c.args.iter().filter_map(|a| a.get_type(cx.schema).ok()).collect();
    if cx.ansi {
        crate::types::text_and_number(&name, types.into_iter())?;
    } else if types.iter().any(|t| t.is_string()) && types.contains(&DataType::Boolean) {
        return Err(DataFusionError::Plan(format!(
            "`{name}` of a BOOLEAN and a STRING: Spark finds no common type of the two; cast one side"
        )));
    }
    c.unchanged()
}
