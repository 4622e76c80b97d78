//! Spark's window functions where DataFusion spells them otherwise.

use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::Expr as Planned;
use sqlparser::ast::{Expr, FunctionArguments};

use crate::declare::Function;

pub(crate) mod float_keys;

/// Spark's window functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::builtin("rank").parse(rank_arguments),
    Function::builtin("dense_rank").parse(rank_arguments),
    Function::builtin("percent_rank").parse(rank_arguments),
];

/// `rank(x) OVER (…)` (`dense_rank`, `percent_rank`): Spark ranks by the window's ORDER BY and
/// ignores the arguments, which DataFusion's functions do not take.
fn rank_arguments(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if f.over.is_none() || list.args.is_empty() {
        return None;
    }
    let mut call = f.clone();
    let mut list = list.clone();
    list.args.clear();
    call.args = FunctionArguments::List(list);
    Some(Expr::Function(call))
}

/// A window function whose PARTITION BY or ORDER BY keys of floating point read `-0.0` as
/// `0.0` and every NaN as one, as Spark normalizes them (`-0.0` and `0.0` are one partition
/// there and rank equal; DataFusion's window keys tell them apart, its GROUP BY does not): each
/// such key read through `float_keys`. `None` when it has no such key.
pub(crate) fn zero_keys(e: &Planned, schema: &DFSchema) -> Result<Option<Planned>> {
    let Planned::WindowFunction(w) = e else { return Ok(None) };
    let normalized = |x: &Planned| -> Result<Option<Planned>> { Ok(float_keys::float_key(x, schema)) };
    let mut w = w.as_ref().clone();
    let mut changed = false;
    for key in w.params.partition_by.iter_mut() {
        if let Some(n) = normalized(key)? {
            *key = n;
            changed = true;
        }
    }
    for sort in w.params.order_by.iter_mut() {
        if let Some(n) = normalized(&sort.expr)? {
            sort.expr = n;
            changed = true;
        }
    }
    Ok(changed.then(|| Planned::WindowFunction(Box::new(w))))
}
