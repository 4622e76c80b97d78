//! Spark's window functions where DataFusion spells them otherwise.

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
