//! Spark's math functions: its arithmetic in both modes (`arithmetic`: the `try_` operators,
//! the ANSI ones), DECIMAL arithmetic with Spark's types and rounding (`decimals`), `conv`, rounding to decimal places (`rounding`), `log1p`, `pmod` by a
//! floating-point zero (`pmod`),
//! and the spellings and answers of DataFusion's own (`rewrites`).

pub(crate) mod arithmetic;
pub(crate) mod conv;
pub(crate) mod decimals;
pub(crate) mod log1p;
mod pmod;
mod rewrites;
pub(crate) mod rounding;

use crate::declare::Function;

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    conv::register(ctx);
    rounding::register(ctx);
    arithmetic::register(ctx);
    log1p::register(ctx);
    pmod::register(ctx);
}

/// Spark's math functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("conv").plan(rewrites::conv),
    Function::udf("bround"),
    // Rounding up (down) to a number of decimal places (`rounding`); the parser reads
    // `ceil(x, d)` as CEIL with a scale where it can (`analysis::spellings`).
    Function::udf("ceil_at"),
    Function::udf("floor_at"),
    Function::builtin("ceil").templates(&[(2, "ceil_at(__a1, __a2)")]),
    Function::builtin("ceiling").templates(&[(2, "ceil_at(__a1, __a2)")]),
    Function::builtin("floor").templates(&[(2, "floor_at(__a1, __a2)")]),
    // `a DIV b`: in ANSI mode a zero divisor and an overflow fail.
    Function::udf("div").plan(rewrites::div),
    Function::udf("try_add"),
    Function::udf("try_subtract"),
    Function::udf("try_multiply"),
    Function::udf("try_divide"),
    Function::udf("try_mod"),
    Function::udf("log1p"),
    // A floating-point zero divisor of either sign is NULL, or fails in ANSI mode (`pmod`).
    Function::udf("pmod"),
    Function::builtin("mod").plan(rewrites::modulo),
    Function::builtin("round").plan(rewrites::round),
    Function::spelled("sign", &[(1, "CAST(signum(__a1) AS DOUBLE)")]),
    Function::builtin("signum").templates(&[(1, "CAST(signum(__a1) AS DOUBLE)")]),
    // Spark's logarithms are NULL where the argument (or the base) is not positive (DataFusion's:
    // NaN or an infinity), and its `log(x)` is the natural one (DataFusion's: base 10).
    Function::builtin("ln").templates(&[(1, "CASE WHEN __a1 <= 0 THEN NULL ELSE ln(__a1) END")]),
    Function::builtin("log10").templates(&[(1, "CASE WHEN __a1 <= 0 THEN NULL ELSE log10(__a1) END")]),
    Function::builtin("log2").templates(&[(1, "CASE WHEN __a1 <= 0 THEN NULL ELSE log2(__a1) END")]),
    Function::builtin("log").templates(&[
        (1, "CASE WHEN __a1 <= 0 THEN NULL ELSE ln(__a1) END"),
        (2, "CASE WHEN __a1 <= 0 OR __a2 <= 0 THEN NULL ELSE log(CAST(__a1 AS DOUBLE), CAST(__a2 AS DOUBLE)) END"),
    ]),
    Function::spelled("e", &[(0, "exp(CAST(1 AS DOUBLE))")]),
    Function::builtin("rint").templates(&[(1, "rint(CAST(__a1 AS DOUBLE))")]),
    Function::spelled("positive", &[(1, "(+__a1)")]),
    Function::builtin("factorial").ints(&[0, 1, 2, 3, 4]),
];

/// `round(decimal, d)` in Spark's DECIMAL type (`rewrites::round`), for the rules that type a
/// plan before the aggregates above it read the type (an `avg` of a rounded DECIMAL).
pub(crate) fn decimal_round(
    e: &datafusion::logical_expr::Expr,
    schema: &datafusion::common::DFSchema,
) -> datafusion::error::Result<Option<datafusion::logical_expr::Expr>> {
    use datafusion::logical_expr::{Expr, ExprSchemable};
    let Expr::ScalarFunction(f) = e else { return Ok(None) };
    if f.name() != "round"
        || !matches!(f.args.first().map(|a| a.get_type(schema)), Some(Ok(arrow::datatypes::DataType::Decimal128(..))))
    {
        return Ok(None);
    }
    let call = crate::declare::Call { func: std::sync::Arc::clone(&f.func), args: f.args.clone() };
    let again = |e: Expr| Ok(datafusion::common::tree_node::Transformed::no(e));
    let cx = crate::declare::PlanContext { schema, ansi: true, again: &again };
    Ok(Some(rewrites::round(call, &cx)?.data))
}
