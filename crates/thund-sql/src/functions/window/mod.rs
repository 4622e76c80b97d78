//! Spark's window functions where DataFusion spells them otherwise.

use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::{lit, Expr as Planned, ExprSchemable};
use sqlparser::ast::{Expr, FunctionArguments};

use crate::declare::Function;

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
/// `0.0`, as Spark normalizes them (`-0.0` and `0.0` are one partition there and rank equal;
/// DataFusion's window keys tell them apart, its GROUP BY does not): each such key plus `0.0`,
/// which is `0.0` for `-0.0` and the key itself otherwise. `None` when it has no such key.
pub(crate) fn zero_keys(e: &Planned, schema: &DFSchema) -> Result<Option<Planned>> {
    let Planned::WindowFunction(w) = e else { return Ok(None) };
    let float = |x: &Planned| x.get_type(schema).ok().filter(|t| t.is_floating());
    let normalized = |x: &Planned| -> Result<Option<Planned>> {
        let Some(t) = float(x) else { return Ok(None) };
        if matches!(x, Planned::BinaryExpr(b) if b.op == datafusion::logical_expr::Operator::Plus && matches!(b.right.as_ref(), Planned::Literal(v, _) if v == &ScalarValue::new_zero(&t).unwrap_or(ScalarValue::Null)))
        {
            return Ok(None);
        }
        Ok(Some(x.clone() + lit(ScalarValue::new_zero(&t)?)))
    };
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
