//! Query shapes DataFusion answers differently from Spark, refused on the parse (before the
//! planner, which would lose what tells them apart): a `FULL JOIN … USING` whose
//! join column is read unqualified (Spark's is either side's key, DataFusion's the left one's);
//! and a NATURAL semi or anti join, which Spark refuses.
//! A refusal is an error at the query's line that sends the user to the Spark backend.

use std::ops::ControlFlow;

use sqlparser::ast::Expr;

/// Why a query body (its set operations, not its subqueries, which are queries of their own)
/// would answer differently here, if it would.
pub(crate) fn refusal(body: &sqlparser::ast::SetExpr) -> Option<String> {
    if natural_semi_join(body) {
        return Some(
            "Spark refuses a NATURAL semi or anti join (\"Unsupported natural join type\"): join ON or USING the keys"
                .to_string(),
        );
    }
    full_join_using(body).then(|| {
        "a FULL or RIGHT JOIN with USING or NATURAL answers differently here than on Spark where its join columns \
         are read unqualified, with `*` or by a later join USING them (they take only the left side's keys): name each side's column, join ON \
         the keys, or run on the Spark backend"
            .to_string()
    })
}

/// Whether a SELECT of a query body's set operations has a `NATURAL LEFT SEMI` or `NATURAL LEFT
/// ANTI` join, which Spark refuses and DataFusion would run.
fn natural_semi_join(body: &sqlparser::ast::SetExpr) -> bool {
    use sqlparser::ast::{JoinConstraint, JoinOperator, SetExpr};
    match body {
        SetExpr::SetOperation { left, right, .. } => natural_semi_join(left) || natural_semi_join(right),
        SetExpr::Select(select) => select.from.iter().flat_map(|t| &t.joins).any(|j| {
            matches!(
                &j.join_operator,
                JoinOperator::LeftSemi(JoinConstraint::Natural)
                    | JoinOperator::LeftAnti(JoinConstraint::Natural)
                    | JoinOperator::Semi(JoinConstraint::Natural)
                    | JoinOperator::Anti(JoinConstraint::Natural)
            )
        }),
        _ => false,
    }
}

/// Whether a SELECT of a query body's set operations reads the join column of a `FULL JOIN …
/// USING (…)` (or `NATURAL FULL JOIN`) unqualified, or all columns with `*`: Spark's join column
/// is the one side's key or the other's, DataFusion's only the left side's. (Qualified
/// columns, `l.k`, are each side's own on both.) A later join of the chain that joins USING
/// such a key, or NATURAL, reads it unqualified as well.
fn full_join_using(body: &sqlparser::ast::SetExpr) -> bool {
    use sqlparser::ast::{JoinConstraint, JoinOperator, SelectItem, SetExpr};
    match body {
        SetExpr::SetOperation { left, right, .. } => full_join_using(left) || full_join_using(right),
        SetExpr::Select(select) => {
            let mut natural = false;
            let mut keys: Vec<String> = Vec::new();
            // A join after the full join (in its chain) whose USING names a key, or that is
            // NATURAL, reads the merged key unqualified too.
            let later_reads_key = |joins: &[sqlparser::ast::Join], keys: &[String], natural: bool| {
                joins.iter().any(|j| match join_constraint(&j.join_operator) {
                    Some(JoinConstraint::Using(columns)) => {
                        natural || columns.iter().any(|c| keys.contains(&key_name(c)))
                    }
                    Some(JoinConstraint::Natural) => true,
                    _ => false,
                })
            };
            for (table, at, j) in
                select.from.iter().flat_map(|t| t.joins.iter().enumerate().map(move |(at, j)| (t, at, j)))
            {
                let before = (natural, keys.len());
                match &j.join_operator {
                    JoinOperator::FullOuter(JoinConstraint::Using(columns))
                    | JoinOperator::RightOuter(JoinConstraint::Using(columns))
                    | JoinOperator::Right(JoinConstraint::Using(columns)) => {
                        keys.extend(columns.iter().map(key_name));
                    }
                    JoinOperator::FullOuter(JoinConstraint::Natural)
                    | JoinOperator::RightOuter(JoinConstraint::Natural)
                    | JoinOperator::Right(JoinConstraint::Natural) => natural = true,
                    _ => {}
                }
                if (natural, keys.len()) != before && later_reads_key(&table.joins[at + 1..], &keys, natural) {
                    return true;
                }
            }
            if !natural && keys.is_empty() {
                return false;
            }
            if select.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_))) {
                return true;
            }
            // Not in a derived table of the FROM clause, whose names (`(SELECT k FROM l) AS m`)
            // are its own; in a subquery of an expression, which may read the join's.
            struct Reads<'a> {
                keys: &'a [String],
                natural: bool,
                depth: usize,
                unqualified: bool,
            }
            impl sqlparser::ast::Visitor for Reads<'_> {
                type Break = ();
                fn pre_visit_table_factor(&mut self, t: &sqlparser::ast::TableFactor) -> ControlFlow<()> {
                    self.depth += usize::from(matches!(t, sqlparser::ast::TableFactor::Derived { .. }));
                    ControlFlow::Continue(())
                }
                fn post_visit_table_factor(&mut self, t: &sqlparser::ast::TableFactor) -> ControlFlow<()> {
                    self.depth -= usize::from(matches!(t, sqlparser::ast::TableFactor::Derived { .. }));
                    ControlFlow::Continue(())
                }
                fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
                    if let (Expr::Identifier(id), 0) = (e, self.depth) {
                        self.unqualified |= self.natural || self.keys.contains(&id.value.to_ascii_lowercase());
                    }
                    ControlFlow::Continue(())
                }
            }
            let mut reads = Reads { keys: &keys, natural, depth: 0, unqualified: false };
            let _ = sqlparser::ast::Visit::visit(select.as_ref(), &mut reads);
            reads.unqualified
        }
        _ => false,
    }
}

/// The constraint of a join operator that has one.
fn join_constraint(op: &sqlparser::ast::JoinOperator) -> Option<&sqlparser::ast::JoinConstraint> {
    use sqlparser::ast::JoinOperator as J;
    match op {
        J::Join(c)
        | J::Inner(c)
        | J::Left(c)
        | J::LeftOuter(c)
        | J::Right(c)
        | J::RightOuter(c)
        | J::FullOuter(c)
        | J::Semi(c)
        | J::LeftSemi(c)
        | J::RightSemi(c)
        | J::Anti(c)
        | J::LeftAnti(c)
        | J::RightAnti(c)
        | J::StraightJoin(c) => Some(c),
        _ => None,
    }
}

/// A USING column's name as an unqualified read matches it: unquoted, in lower case.
fn key_name(column: &sqlparser::ast::ObjectName) -> String {
    let last = column.0.last().and_then(sqlparser::ast::ObjectNamePart::as_ident);
    last.map_or_else(|| column.to_string(), |id| id.value.clone()).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use crate::analysis::rewritten_by;

    fn refused(sql: &str) -> bool {
        rewritten_by(super::super::refuse_shapes, sql).is_err()
    }

    #[test]
    fn a_full_joins_key_read_unqualified_is_refused_wherever_it_is_read() {
        // Read by the select list, `*`, or a later join of the chain.
        assert!(refused("SELECT id FROM a FULL JOIN b USING (id) JOIN c ON c.x = a.x"));
        assert!(refused("SELECT * FROM a FULL JOIN b USING (id) JOIN c ON c.x = a.x"));
        assert!(refused("SELECT a.x FROM a FULL JOIN b USING (id) LEFT ANTI JOIN c USING (id)"));
        assert!(refused("SELECT a.x FROM a RIGHT JOIN b USING (`id`) JOIN c USING (id)"));
        assert!(refused("SELECT a.x FROM a FULL JOIN b USING (id) NATURAL JOIN c"));
        // Each side's own column, another key, or a derived table's own names.
        assert!(!refused("SELECT a.id, b.id FROM a FULL JOIN b USING (id) JOIN c ON c.x = a.x"));
        assert!(!refused("SELECT a.x FROM a FULL JOIN b USING (id) JOIN c USING (x)"));
        assert!(!refused("SELECT m.k FROM r FULL JOIN (SELECT k FROM l) AS m USING (k) JOIN c ON c.k = m.k"));
        // A subquery of an expression may read the join's key.
        assert!(refused(
            "SELECT a.x FROM a FULL JOIN b USING (k) JOIN c ON c.x = a.x WHERE EXISTS (SELECT 1 FROM z WHERE z.k = k)"
        ));
    }
}
