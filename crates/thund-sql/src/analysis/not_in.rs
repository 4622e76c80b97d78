//! `x NOT IN (subquery)` where its answer is read as a value rather than as a row filter: inside
//! `OR`, under `NOT`, in a CASE, a select list or a join condition. There Spark rewrites it as
//! `NOT exists`, an existence join on `x = k OR (x = k) IS NULL` (`RewritePredicateSubquery`): a
//! NULL on either side counts as a match, so the answer is false, never true, where a NULL is met.
//! DataFusion decorrelates it into a mark join on `x = k`, whose mark ignores NULLs: `2 NOT IN
//! (SELECT k FROM VALUES (1), (NULL))` was true (Spark: false), and `WHERE x NOT IN (…) OR y`
//! kept rows Spark drops. (A filter's own conjunct stays as written: DataFusion's null-aware anti
//! join, which answers as Spark does for a column operand over an uncorrelated subquery; over a
//! constant operand or a correlated subquery the optimizer rule `null_aware_joins` gives that
//! join Spark's condition.)
//!
//! The rule writes Spark's answer out of parts DataFusion answers alike. A match ignoring NULLs, a
//! NULL operand over rows, a NULL among the rows: `NOT (x IN (q)) AND NOT (x IS NULL AND EXISTS
//! (q)) AND NOT EXISTS (<q's rows whose value is NULL>)` — the last one as `SELECT 1 FROM <q's
//! FROM> WHERE <q's WHERE> AND <q's value> IS NULL` for a plain `q`, so a correlated `q` stays
//! correlated as DataFusion decorrelates it. A tuple operand, or a `q` that is not a plain SELECT
//! (grouped, DISTINCT, limited, a set operation), is refused there. `NOT (x IN (q))`
//! is the same predicate. A plain `x IN (q)` needs nothing: Spark's existence join answers false
//! where DataFusion's mark does.

use std::ops::ControlFlow;

use sqlparser::ast::{BinaryOperator, Expr, Query, Select, SelectItem, SetExpr, UnaryOperator, VisitMut, VisitorMut};

use crate::modes::SqlModes;

/// The rule: every `NOT IN (subquery)` of `query` (its subqueries included) that is not a
/// conjunct of its SELECT's WHERE or HAVING.
pub(crate) fn rewrite_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Selects(bool);
    impl VisitorMut for Selects {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            self.0 |= rewrite_body(&mut query.body);
            ControlFlow::Continue(())
        }
    }
    let mut selects = Selects(false);
    let _ = query.visit(&mut selects);
    if selects.0 {
        return Err("`NOT IN` of a tuple, or over a subquery that is not a plain SELECT (grouped, DISTINCT, limited, \
                    a set operation), read as a value (inside OR, under NOT, in a select list) answers differently here \
                    than on Spark: make it a condition of its own in WHERE, or run on the Spark backend"
            .to_string());
    }
    Ok(())
}

/// Rewrites the SELECTs of a query body; whether one holds a `NOT IN` this cannot rewrite.
fn rewrite_body(body: &mut SetExpr) -> bool {
    match body {
        SetExpr::Select(select) => rewrite_select(select),
        SetExpr::SetOperation { left, right, .. } => rewrite_body(left) | rewrite_body(right),
        _ => false,
    }
}

fn rewrite_select(select: &mut Select) -> bool {
    // A filter's own conjuncts stay (each `NOT IN` there is DataFusion's null-aware anti join);
    // everything else of the SELECT is rewritten, its subqueries' own clauses left to their turn.
    let mut values = Values { depth: 0, refused: false };
    for filter in [&mut select.selection, &mut select.having].into_iter().flatten() {
        let placeholder = Expr::Value(sqlparser::ast::Value::Null.into());
        *filter = normalized(std::mem::replace(filter, placeholder));
        filter_conjuncts(filter, &mut values);
    }
    for item in &mut select.projection {
        let _ = item.visit(&mut values);
    }
    for from in &mut select.from {
        let _ = from.visit(&mut values);
    }
    let _ = select.group_by.visit(&mut values);
    for window in &mut select.named_window {
        let _ = window.visit(&mut values);
    }
    values.refused
}

/// A filter with its negations pushed down to the membership tests they negate, as Spark's
/// `BooleanSimplification` does before it rewrites subqueries (`NOT (a OR b)` is `NOT a AND NOT
/// b`, `NOT NOT a` is `a`, `NOT (x NOT IN (q))` is `x IN (q)`): so `NOT (x NOT IN (q) OR y)` has
/// the conjunct `x IN (q)`, a semi join on Spark, where NULL operands find no row. Only the
/// boolean structure above a membership test is touched (De Morgan's laws and double negation
/// hold in SQL's three-valued logic).
fn normalized(e: Expr) -> Expr {
    match e {
        Expr::UnaryOp { op: UnaryOperator::Not, expr } if tests_membership(&expr) => negated(*expr),
        Expr::BinaryOp { left, op: op @ (BinaryOperator::And | BinaryOperator::Or), right } => {
            Expr::BinaryOp { left: Box::new(normalized(*left)), op, right: Box::new(normalized(*right)) }
        }
        Expr::Nested(inner) => Expr::Nested(Box::new(normalized(*inner))),
        other => other,
    }
}

/// `NOT e`, pushed down (see [`normalized`]).
fn negated(e: Expr) -> Expr {
    let nested = |e: Expr| Box::new(Expr::Nested(Box::new(e)));
    match e {
        Expr::Nested(inner) => negated(*inner),
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            Expr::BinaryOp { left: nested(negated(*left)), op: BinaryOperator::Or, right: nested(negated(*right)) }
        }
        Expr::BinaryOp { left, op: BinaryOperator::Or, right } => {
            Expr::BinaryOp { left: nested(negated(*left)), op: BinaryOperator::And, right: nested(negated(*right)) }
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr } => normalized(*expr),
        Expr::InSubquery { expr, subquery, negated } => Expr::InSubquery { expr, subquery, negated: !negated },
        other => Expr::UnaryOp { op: UnaryOperator::Not, expr: nested(other) },
    }
}

/// Whether the boolean structure of `e` (through AND, OR, NOT and parentheses) reaches an
/// `IN (subquery)`.
fn tests_membership(e: &Expr) -> bool {
    match e {
        Expr::InSubquery { .. } => true,
        Expr::Nested(inner) | Expr::UnaryOp { op: UnaryOperator::Not, expr: inner } => tests_membership(inner),
        Expr::BinaryOp { left, op: BinaryOperator::And | BinaryOperator::Or, right } => {
            tests_membership(left) || tests_membership(right)
        }
        _ => false,
    }
}

/// The conjuncts of a filter: one that is a `NOT IN` is kept (its operands rewritten), any other
/// rewritten whole.
fn filter_conjuncts(e: &mut Expr, values: &mut Values) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            filter_conjuncts(left, values);
            filter_conjuncts(right, values);
        }
        Expr::Nested(inner) => filter_conjuncts(inner, values),
        Expr::InSubquery { expr, negated: true, .. } => {
            let _ = expr.visit(values);
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr: inner }
            if matches!(strip(inner), Expr::InSubquery { negated: false, .. }) =>
        {
            if let Expr::InSubquery { expr, .. } = strip_mut(inner) {
                let _ = expr.visit(values);
            }
        }
        other => {
            let _ = other.visit(values);
        }
    }
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Nested(inner) => strip(inner),
        other => other,
    }
}

fn strip_mut(e: &mut Expr) -> &mut Expr {
    match e {
        Expr::Nested(inner) => strip_mut(inner),
        other => other,
    }
}

/// Rewrites each `NOT IN (subquery)` (and `NOT (… IN (subquery))`) it meets outside subqueries.
struct Values {
    /// Subqueries entered: their clauses are rewritten when the rule visits them as queries.
    depth: usize,
    /// A `NOT IN` met that is not rewritten (see [`sparks_not_in`]).
    refused: bool,
}

impl VisitorMut for Values {
    type Break = ();

    fn pre_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        if self.depth == 0 {
            if let Some((operand, subquery)) = not_in(e) {
                match sparks_not_in(operand, subquery) {
                    Some(rewritten) => *e = rewritten,
                    None => self.refused = true,
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The operand and the subquery of a `NOT IN (subquery)` or `NOT (… IN (subquery))`.
fn not_in(e: &Expr) -> Option<(Expr, Box<Query>)> {
    match e {
        Expr::InSubquery { expr, subquery, negated: true } => Some((expr.as_ref().clone(), subquery.clone())),
        Expr::UnaryOp { op: UnaryOperator::Not, expr } => match strip(expr) {
            Expr::InSubquery { expr, subquery, negated: false } => Some((expr.as_ref().clone(), subquery.clone())),
            _ => None,
        },
        _ => None,
    }
}

/// `operand NOT IN (subquery)` as Spark answers it (see the module); `None` for a tuple or a
/// subquery that is not a plain SELECT, refused.
fn sparks_not_in(operand: Expr, subquery: Box<Query>) -> Option<Expr> {
    if matches!(operand, Expr::Tuple(_)) {
        return None;
    }
    let and = |a: Expr, b: Expr| Expr::BinaryOp { left: Box::new(a), op: BinaryOperator::And, right: Box::new(b) };
    let not = |e: Expr| Expr::UnaryOp { op: UnaryOperator::Not, expr: Box::new(Expr::Nested(Box::new(e))) };
    let exists = |subquery: Box<Query>| Expr::Exists { subquery, negated: false };
    let operand = Expr::Nested(Box::new(operand));
    let matched = Expr::InSubquery { expr: Box::new(operand.clone()), subquery: subquery.clone(), negated: false };
    let null_over_rows = and(Expr::IsNull(Box::new(operand)), exists(subquery.clone()));
    let null_row = Expr::Exists { subquery: null_rows(subquery)?, negated: true };
    Some(Expr::Nested(Box::new(and(and(not(matched), not(null_over_rows)), null_row))))
}

/// The rows of a one-column subquery whose value is NULL: its own FROM and WHERE with the value
/// `IS NULL` added; `None` where it is not a plain SELECT. (An aggregate in a plain SELECT's
/// value, `SELECT max(k) FROM s`, lands in the WHERE and fails to plan: an error, not an answer.)
fn null_rows(subquery: Box<Query>) -> Option<Box<Query>> {
    let plain = subquery.with.is_none()
        && subquery.order_by.is_none()
        && subquery.limit_clause.is_none()
        && subquery.fetch.is_none()
        && matches!(subquery.body.as_ref(), SetExpr::Select(s) if s.distinct.is_none()
            && s.top.is_none()
            && s.having.is_none()
            && s.qualify.is_none()
            && s.named_window.is_empty()
            && matches!(&s.group_by, sqlparser::ast::GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty())
            && matches!(s.projection.as_slice(), [SelectItem::UnnamedExpr(_) | SelectItem::ExprWithAlias { .. }]));
    if !plain {
        return None;
    }
    let mut query = subquery;
    let SetExpr::Select(select) = query.body.as_mut() else { return None };
    let value = match select.projection.first()? {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => e.clone(),
        _ => return None,
    };
    let null = Expr::IsNull(Box::new(Expr::Nested(Box::new(value))));
    select.selection = Some(match select.selection.take() {
        Some(w) => {
            Expr::BinaryOp { left: Box::new(Expr::Nested(Box::new(w))), op: BinaryOperator::And, right: Box::new(null) }
        }
        None => null,
    });
    select.projection =
        vec![SelectItem::UnnamedExpr(Expr::Value(sqlparser::ast::Value::Number("1".into(), false).into()))];
    Some(query)
}

#[cfg(test)]
mod tests {
    use super::rewrite_rule;
    use crate::analysis::rewritten_by;

    #[test]
    fn a_not_in_read_as_a_value_becomes_sparks_existence_test() {
        let or = rewritten_by(rewrite_rule, "SELECT x FROM t WHERE x NOT IN (SELECT k FROM s) OR x = 1").unwrap();
        assert_eq!(
            or,
            "SELECT x FROM t WHERE (NOT ((x) IN (SELECT k FROM s)) AND NOT ((x) IS NULL AND EXISTS (SELECT k FROM s)) \
             AND NOT EXISTS (SELECT 1 FROM s WHERE (k) IS NULL)) OR x = 1"
        );
        // A subquery that is not a plain SELECT, or a tuple: refused.
        assert!(rewritten_by(
            rewrite_rule,
            "SELECT x FROM t WHERE x NOT IN (SELECT max(k) FROM s GROUP BY g) OR x = 1"
        )
        .is_err());
        assert!(rewritten_by(rewrite_rule, "SELECT (a, b) NOT IN (SELECT k, l FROM s) AS n FROM t").is_err());
        // A filter's own conjunct stays: DataFusion's null-aware anti join.
        let conjunct = "SELECT x FROM t WHERE x > 0 AND x NOT IN (SELECT k FROM s)";
        assert_eq!(rewritten_by(rewrite_rule, conjunct).unwrap(), conjunct);
        // Negations pushed down first, as Spark's optimizer does: `NOT (x NOT IN …)` is `x IN …`.
        let double = rewritten_by(rewrite_rule, "SELECT x FROM t WHERE NOT (x NOT IN (SELECT k FROM s) OR y)").unwrap();
        assert_eq!(double, "SELECT x FROM t WHERE (x IN (SELECT k FROM s)) AND (NOT (y))");
        let negated =
            rewritten_by(rewrite_rule, "SELECT x FROM t WHERE NOT (x IN (SELECT k FROM s)) OR x = 1").unwrap();
        assert!(negated.starts_with("SELECT x FROM t WHERE (NOT ((x) IN (SELECT k FROM s))"), "{negated}");
        // A subquery's own filter is its own.
        let inner = "SELECT x FROM t WHERE EXISTS (SELECT 1 FROM s WHERE k NOT IN (SELECT v FROM u))";
        assert_eq!(rewritten_by(rewrite_rule, inner).unwrap(), inner);
    }
}
