//! Text met by a number, a boolean or a date in a comparison or arithmetic: the cast Spark's
//! type coercion puts on the text side, put there as the operator is planned
//! ([`TextOperandPlanner`], before DataFusion types the operator: it would cast text by Arrow's
//! rules, so `s = 10` would fail the query on the first row that does not read, and `s + 1` or
//! `'t' = true` would not be planned at all).
//!
//! Spark's rules differ by mode (each read off a Spark 4.1.4 server, both modes):
//!
//! | operands                       | ANSI mode           | without ANSI mode              |
//! |--------------------------------|---------------------|--------------------------------|
//! | text ⋈ integer (comparison)    | text as BIGINT      | text as the integer's type     |
//! | text ⋈ DECIMAL / floating      | text as DOUBLE      | text as DOUBLE                 |
//! | text ⋈ BOOLEAN / DATE / TIMESTAMP | text as that type | text as that type            |
//! | text ± integer (arithmetic)    | text as BIGINT      | text as DOUBLE                 |
//! | text ± DECIMAL / floating      | text as DOUBLE      | text as DOUBLE                 |
//! | text ± text                    | refused by Spark    | both as DOUBLE                 |
//! //!
//! The cast becomes Spark's (`functions::cast`, by `fidelity` as every cast): a text that does not read is Spark's
//! `[CAST_INVALID_INPUT]` in ANSI mode and NULL for that row without it (`'1.5' = 1` is true
//! there: the INT cast cuts the fraction).

use arrow::datatypes::DataType;
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::planner::{ExprPlanner, PlannerResult, RawBinaryExpr};
use datafusion::logical_expr::{cast, Expr, ExprSchemable};
use sqlparser::ast::BinaryOperator;

/// Casts the text operand of a comparison or arithmetic operator as Spark's type coercion does
/// in the session's mode.
#[derive(Debug)]
pub(crate) struct TextOperandPlanner {
    /// Whether the session is in ANSI mode.
    pub(crate) ansi: bool,
}

impl ExprPlanner for TextOperandPlanner {
    fn plan_binary_op(&self, expr: RawBinaryExpr, schema: &DFSchema) -> Result<PlannerResult<RawBinaryExpr>> {
        let rule: fn(&DataType, &DataType, bool) -> Option<DataType> = if comparison(&expr.op) {
            compared
        } else if arithmetic(&expr.op) {
            computed
        } else {
            return Ok(PlannerResult::Original(expr));
        };
        let (Ok(l), Ok(r)) = (expr.left.get_type(schema), expr.right.get_type(schema)) else {
            return Ok(PlannerResult::Original(expr));
        };
        let (to_left, to_right) = (rule(&l, &r, self.ansi), rule(&r, &l, self.ansi));
        let RawBinaryExpr { op, left, right } = expr;
        let side = |e: Expr, to: Option<DataType>| match to {
            Some(t) => cast(e, t),
            None => e,
        };
        Ok(PlannerResult::Original(RawBinaryExpr { op, left: side(left, to_left), right: side(right, to_right) }))
    }
}

fn comparison(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Eq
            | BinaryOperator::NotEq
            | BinaryOperator::Lt
            | BinaryOperator::LtEq
            | BinaryOperator::Gt
            | BinaryOperator::GtEq
            | BinaryOperator::Spaceship
    )
}

fn arithmetic(op: &BinaryOperator) -> bool {
    matches!(
        op,
        BinaryOperator::Plus
            | BinaryOperator::Minus
            | BinaryOperator::Multiply
            | BinaryOperator::Divide
            | BinaryOperator::Modulo
    )
}

/// The type a text operand `t` is cast to when compared with `other`.
fn compared(t: &DataType, other: &DataType, ansi: bool) -> Option<DataType> {
    if !t.is_string() {
        return None;
    }
    match other {
        o if o.is_integer() && ansi => Some(DataType::Int64),
        o if o.is_integer() => Some(o.clone()),
        o if o.is_floating() || matches!(o, DataType::Decimal128(..) | DataType::Decimal256(..)) => {
            Some(DataType::Float64)
        }
        DataType::Boolean | DataType::Date32 => Some(other.clone()),
        DataType::Timestamp(..) => Some(other.clone()),
        _ => None,
    }
}

/// The type a text operand `t` is cast to in arithmetic with `other`.
fn computed(t: &DataType, other: &DataType, ansi: bool) -> Option<DataType> {
    if !t.is_string() {
        return None;
    }
    match other {
        o if o.is_integer() && ansi => Some(DataType::Int64),
        o if o.is_integer() || o.is_floating() || matches!(o, DataType::Decimal128(..) | DataType::Decimal256(..)) => {
            Some(DataType::Float64)
        }
        o if o.is_string() && !ansi => Some(DataType::Float64),
        _ => None,
    }
}

/// A join's key pairs (a USING join's, or the equalities DataFusion took from an ON condition)
/// where one side is text and the other not: the text side cast as a comparison casts it (the
/// join would otherwise cast it by Arrow's rules when it runs, failing on the first text that
/// does not read, in either mode).
pub(crate) fn join_keys(
    node: datafusion::logical_expr::LogicalPlan,
    ansi: bool,
) -> Result<datafusion::logical_expr::LogicalPlan> {
    use datafusion::logical_expr::LogicalPlan;
    let LogicalPlan::Join(mut join) = node else { return Ok(node) };
    let (left, right) = (std::sync::Arc::clone(join.left.schema()), std::sync::Arc::clone(join.right.schema()));
    let mut cast_keys = false;
    for (l, r) in join.on.iter_mut() {
        let (Ok(lt), Ok(rt)) = (l.get_type(&left), r.get_type(&right)) else { continue };
        // Text met by a DECIMAL or floating point: both sides as DOUBLE (Spark's common type; a
        // DOUBLE key met by a DECIMAL one would otherwise be cast to the DECIMAL, and round).
        let both = |t: &DataType| matches!(t, DataType::Float64);
        if let Some(t) = compared(&lt, &rt, ansi) {
            if both(&t) && rt != t {
                *r = cast(r.clone(), t.clone());
            }
            *l = cast(l.clone(), t);
            cast_keys = true;
        } else if let Some(t) = compared(&rt, &lt, ansi) {
            if both(&t) && lt != t {
                *l = cast(l.clone(), t.clone());
            }
            *r = cast(r.clone(), t);
            cast_keys = true;
        }
    }
    // A USING join's keys are columns (DataFusion finds them by name from above); the names
    // above are resolved by now, so cast keys are taken as an ON join's.
    if cast_keys {
        join.join_constraint = datafusion::common::JoinConstraint::On;
    }
    Ok(LogicalPlan::Join(join))
}
