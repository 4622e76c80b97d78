//! Spark's ANSI intervals (YEAR-MONTH as Arrow's `Interval(YearMonth)`, DAY-TIME as
//! microsecond `Duration`s): the literal forms and their names (`literals`), their operators
//! with dates, timestamps, numbers and each other, and `abs`/`sign`/`extract` of them
//! (`arithmetic`), `sum`, `avg`, `try_avg` and the percentiles of them (`aggregates`), and
//! `make_ym_interval`/`make_interval` (`make`).
//!
//! Besides its own functions, this category wraps others for interval arguments (registered
//! last, over them): [`WRAPPED`].

pub(crate) mod aggregates;
pub(crate) mod arithmetic;
pub(crate) mod literals;
pub(crate) mod make;

use datafusion::common::tree_node::Transformed;
use datafusion::error::Result;
use datafusion::logical_expr::Expr;

use crate::declare::{Call, Function, PlanContext};

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    make::register(ctx);
    literals::register(ctx);
    // Last: they wrap functions registered before them.
    arithmetic::register(ctx);
    aggregates::register(ctx);
}

/// Spark's interval functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("make_ym_interval"),
    Function::udf("try_make_interval"),
    // In ANSI mode an interval that overflows fails (datafusion-spark's is NULL).
    Function::builtin("make_interval").plan(make_interval),
    Function::builtin("make_dt_interval").plan(make_dt_interval),
    Function::udf("try_avg"),
    // An interval literal's value, typed with its fields (`literals`).
    Function::udf("spark_interval"),
];

/// The functions this category wraps so that they take intervals as Spark does, each of them
/// declared in its own category (or DataFusion's): what `functions::tests` finds registered
/// over another function without a row of its own.
#[cfg(test)]
pub(crate) const WRAPPED: [&str; 13] = [
    "abs",
    "signum",
    "date_part",
    "datepart",
    "avg",
    "sum",
    "median",
    "percentile",
    "percentile_cont",
    // DataFusion's other name for `percentile_cont`.
    "quantile_cont",
    "percentile_disc",
    "percentile_approx",
    "approx_percentile",
];

/// `make_interval` in ANSI mode: an interval that overflows fails.
fn make_interval(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if !cx.ansi {
        return c.unchanged();
    }
    let args = c.args.clone();
    Ok(Transformed::yes(make::overflow_check("make_interval", c.into_expr(), args)))
}

/// `make_dt_interval`: an interval that overflows fails, in either mode (datafusion-spark's
/// gives NULL).
fn make_dt_interval(c: Call, _: &PlanContext) -> Result<Transformed<Expr>> {
    let args = c.args.clone();
    Ok(Transformed::yes(make::overflow_check("make_dt_interval", c.into_expr(), args)))
}
