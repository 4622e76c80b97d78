//! `x NOT IN (subquery)` where its answer is read as a value rather than as a row filter: inside
//! `OR`, under `NOT`, in a CASE, a select list or a join condition. There Spark rewrites it as
//! `NOT exists`, an existence join on `x = k OR (x = k) IS NULL` (`RewritePredicateSubquery`): a
//! NULL on either side counts as a match, so the answer is false, never true, where a NULL is met.
//! DataFusion decorrelates it into a mark join on `x = k`, whose mark ignores NULLs: `2 NOT IN
//! (SELECT k FROM VALUES (1), (NULL))` was true (Spark: false), and `WHERE x NOT IN (…) OR y`
//! kept rows Spark drops. (As a filter's own conjunct, DataFusion's null-aware anti join answers
//! as Spark does, and the predicate stays as written.)
//!
//! The rule writes Spark's answer out of parts DataFusion answers alike. A match ignoring NULLs, a
//! NULL operand over rows, a NULL among the rows: `NOT (x IN (q)) AND NOT (x IS NULL AND EXISTS
//! (q)) AND NOT EXISTS (<q's rows whose value is NULL>)` — the last one as `SELECT 1 FROM <q's
//! FROM> WHERE <q's WHERE> AND <q's value> IS NULL` for a plain `q`, so a correlated `q` stays
//! correlated as DataFusion decorrelates it, and over `q` as a derived table otherwise. A tuple
//! `(a, b) NOT IN (q)` is Spark's condition itself: `NOT EXISTS (SELECT 1 FROM (q) AS
//! __thund_not_in(__v1, __v2) WHERE (a = __v1 OR (a = __v1) IS NULL) AND …)`. `NOT (x IN (q))`
//! is the same predicate. A plain `x IN (q)` needs nothing: Spark's existence join answers false
//! where DataFusion's mark does.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, Ident, Query, Select, SelectItem, SetExpr, TableFactor, UnaryOperator, VisitMut, VisitorMut,
};

use crate::modes::SqlModes;

/// The rule: every `NOT IN (subquery)` of `query` (its subqueries included) that is not a
/// conjunct of its SELECT's WHERE or HAVING.
pub(crate) fn rewrite_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Selects;
    impl VisitorMut for Selects {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            rewrite_body(&mut query.body);
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Selects);
    Ok(())
}

fn rewrite_body(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => rewrite_select(select),
        SetExpr::SetOperation { left, right, .. } => {
            rewrite_body(left);
            rewrite_body(right);
        }
        _ => {}
    }
}

fn rewrite_select(select: &mut Select) {
    // A filter's own conjuncts stay (each `NOT IN` there is DataFusion's null-aware anti join);
    // everything else of the SELECT is rewritten, its subqueries' own clauses left to their turn.
    for filter in [&mut select.selection, &mut select.having].into_iter().flatten() {
        let placeholder = Expr::Value(sqlparser::ast::Value::Null.into());
        *filter = normalized(std::mem::replace(filter, placeholder));
        filter_conjuncts(filter);
    }
    let mut values = Values { depth: 0 };
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
fn filter_conjuncts(e: &mut Expr) {
    match e {
        Expr::BinaryOp { left, op: BinaryOperator::And, right } => {
            filter_conjuncts(left);
            filter_conjuncts(right);
        }
        Expr::Nested(inner) => filter_conjuncts(inner),
        Expr::InSubquery { expr, negated: true, .. } => {
            let _ = expr.visit(&mut Values { depth: 0 });
        }
        Expr::UnaryOp { op: UnaryOperator::Not, expr: inner }
            if matches!(strip(inner), Expr::InSubquery { negated: false, .. }) =>
        {
            if let Expr::InSubquery { expr, .. } = strip_mut(inner) {
                let _ = expr.visit(&mut Values { depth: 0 });
            }
        }
        other => {
            let _ = other.visit(&mut Values { depth: 0 });
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
            if let Some(rewritten) = not_in(e).and_then(|(operand, subquery)| sparks_not_in(operand, subquery)) {
                *e = rewritten;
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

/// `operand NOT IN (subquery)` as Spark answers it (see the module).
fn sparks_not_in(operand: Expr, subquery: Box<Query>) -> Option<Expr> {
    if let Expr::Tuple(operands) = operand {
        return not_exists(operands, subquery);
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
/// `IS NULL` added, where it is a plain SELECT; over it as a derived table otherwise.
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
    let mut query = subquery;
    if !plain {
        let template = "SELECT 1 FROM (SELECT 1) AS __thund_not_in(__v1) WHERE __thund_not_in.__v1 IS NULL";
        let mut rows = parse_query(template)?;
        let SetExpr::Select(select) = rows.body.as_mut() else { return None };
        let Some(TableFactor::Derived { subquery: derived, .. }) = select.from.first_mut().map(|f| &mut f.relation)
        else {
            return None;
        };
        *derived = query;
        return Some(rows);
    }
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

fn parse_query(sql: &str) -> Option<Box<Query>> {
    let dialect = sqlparser::dialect::SparkSqlDialect {};
    sqlparser::parser::Parser::new(&dialect).try_with_sql(sql).and_then(|mut p| p.parse_query()).ok()
}

/// `NOT EXISTS (SELECT 1 FROM (<subquery>) AS __thund_not_in(__v1, …) WHERE <each operand
/// matches its column or meets a NULL>)`: Spark's condition for a tuple.
fn not_exists(operands: Vec<Expr>, subquery: Box<Query>) -> Option<Expr> {
    let columns: Vec<String> = (1..=operands.len()).map(|i| format!("__v{i}")).collect();
    let template =
        format!("NOT EXISTS (SELECT 1 FROM (SELECT 1) AS __thund_not_in({}) WHERE TRUE)", columns.join(", "));
    let dialect = sqlparser::dialect::SparkSqlDialect {};
    let mut parsed =
        sqlparser::parser::Parser::new(&dialect).try_with_sql(&template).and_then(|mut p| p.parse_expr()).ok()?;
    let condition = operands
        .into_iter()
        .zip(&columns)
        .map(|(operand, column)| {
            let value = Expr::CompoundIdentifier(vec![Ident::new("__thund_not_in"), Ident::new(column.clone())]);
            let equal = Expr::Nested(Box::new(Expr::BinaryOp {
                left: Box::new(Expr::Nested(Box::new(operand))),
                op: BinaryOperator::Eq,
                right: Box::new(value),
            }));
            Expr::Nested(Box::new(Expr::BinaryOp {
                left: Box::new(equal.clone()),
                op: BinaryOperator::Or,
                right: Box::new(Expr::IsNull(Box::new(equal))),
            }))
        })
        .reduce(|a, b| Expr::BinaryOp { left: Box::new(a), op: BinaryOperator::And, right: Box::new(b) });
    let Expr::Exists { subquery: exists, .. } = &mut parsed else { return None };
    let SetExpr::Select(select) = exists.body.as_mut() else { return None };
    select.selection = Some(condition?);
    let Some(TableFactor::Derived { subquery: derived, .. }) = select.from.first_mut().map(|f| &mut f.relation) else {
        return None;
    };
    *derived = subquery;
    Some(parsed)
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
        // A subquery that is not a plain SELECT: its NULL rows over it as a derived table.
        let grouped =
            rewritten_by(rewrite_rule, "SELECT x FROM t WHERE x NOT IN (SELECT max(k) FROM s GROUP BY g) OR x = 1")
                .unwrap();
        assert!(grouped.contains("NOT EXISTS (SELECT 1 FROM (SELECT max(k) FROM s GROUP BY g) AS __thund_not_in (__v1) WHERE __thund_not_in.__v1 IS NULL)"), "{grouped}");
        // A filter's own conjunct stays: DataFusion's null-aware anti join.
        let conjunct = "SELECT x FROM t WHERE x > 0 AND x NOT IN (SELECT k FROM s)";
        assert_eq!(rewritten_by(rewrite_rule, conjunct).unwrap(), conjunct);
        // Negations pushed down first, as Spark's optimizer does: `NOT (x NOT IN …)` is `x IN …`.
        let double = rewritten_by(rewrite_rule, "SELECT x FROM t WHERE NOT (x NOT IN (SELECT k FROM s) OR y)").unwrap();
        assert_eq!(double, "SELECT x FROM t WHERE (x IN (SELECT k FROM s)) AND (NOT (y))");
        let negated =
            rewritten_by(rewrite_rule, "SELECT x FROM t WHERE NOT (x IN (SELECT k FROM s)) OR x = 1").unwrap();
        assert!(negated.starts_with("SELECT x FROM t WHERE (NOT ((x) IN (SELECT k FROM s))"), "{negated}");
        let pair = rewritten_by(rewrite_rule, "SELECT (a, b) NOT IN (SELECT k, l FROM s) AS n FROM t").unwrap();
        assert!(pair.contains("AS __thund_not_in (__v1, __v2)") && pair.contains(" AND "), "{pair}");
        // A subquery's own filter is its own.
        let inner = "SELECT x FROM t WHERE EXISTS (SELECT 1 FROM s WHERE k NOT IN (SELECT v FROM u))";
        assert_eq!(rewritten_by(rewrite_rule, inner).unwrap(), inner);
    }
}
