//! Spark's answers where DataFusion's planned math functions give others.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::tree_node::Transformed;
use datafusion::common::ScalarValue;
use datafusion::error::Result;
use datafusion::logical_expr::{cast, BinaryExpr, Expr, ExprSchemable, Operator};

use super::arithmetic::{OnFailure, Op};
use crate::declare::{call, refused, Call, PlanContext};

/// Without ANSI mode, a `conv` that overflows reads as -1.
pub(super) fn conv(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if cx.ansi {
        return c.unchanged();
    }
    Ok(Transformed::yes(call(super::conv::lenient(), c.args)))
}

/// `a DIV b` in ANSI mode: a zero divisor and an overflow fail.
pub(super) fn div(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    if !cx.ansi {
        return c.unchanged();
    }
    Ok(Transformed::yes(call(Arc::new(super::arithmetic::operator(Op::IntDivide, OnFailure::Error)), c.args)))
}

/// `mod(a, b)` is Spark's `a % b`, whose (decimal) type the operator has, with the operator's
/// own rules (a zero divisor in either mode).
pub(super) fn modulo(c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    let [a, b] = c.args.as_slice() else { return c.unchanged() };
    let remainder = Expr::BinaryExpr(BinaryExpr::new(Box::new(a.clone()), Operator::Modulo, Box::new(b.clone())));
    Ok(Transformed::yes((cx.again)(remainder)?.data))
}

/// Spark rounds a DECIMAL as a DECIMAL, half up, to `min(s, d)` digits with one more integral
/// digit for the carry (`round(decimal(14,6), 2)` is a DECIMAL(11,2)); DataFusion's answers a
/// DOUBLE. Arrow's cast to the smaller scale rounds half up.
pub(super) fn round(mut c: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
    let Some(Ok(DataType::Decimal128(p, s))) = c.args.first().map(|a| a.get_type(cx.schema)) else {
        return c.unchanged();
    };
    let digits = match c.args.get(1) {
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
    Ok(Transformed::yes(cast(c.args.swap_remove(0), DataType::Decimal128(precision, scale))))
}
