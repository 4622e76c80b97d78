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
         are read unqualified or with `*` (they take only the left side's keys): name each side's column, join ON \
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
/// columns, `l.k`, are each side's own on both.)
fn full_join_using(body: &sqlparser::ast::SetExpr) -> bool {
    use sqlparser::ast::{JoinConstraint, JoinOperator, SelectItem, SetExpr};
    match body {
        SetExpr::SetOperation { left, right, .. } => full_join_using(left) || full_join_using(right),
        SetExpr::Select(select) => {
            let mut natural = false;
            let mut keys: Vec<String> = Vec::new();
            for j in select.from.iter().flat_map(|t| &t.joins) {
                match &j.join_operator {
                    JoinOperator::FullOuter(JoinConstraint::Using(columns))
                    | JoinOperator::RightOuter(JoinConstraint::Using(columns))
                    | JoinOperator::Right(JoinConstraint::Using(columns)) => {
                        keys.extend(columns.iter().map(|c| c.to_string().to_ascii_lowercase()));
                    }
                    JoinOperator::FullOuter(JoinConstraint::Natural)
                    | JoinOperator::RightOuter(JoinConstraint::Natural)
                    | JoinOperator::Right(JoinConstraint::Natural) => natural = true,
                    _ => {}
                }
            }
            if !natural && keys.is_empty() {
                return false;
            }
            if select.projection.iter().any(|i| matches!(i, SelectItem::Wildcard(_))) {
                return true;
            }
            let mut unqualified = false;
            let _ = sqlparser::ast::visit_expressions(select, |e| {
                if let Expr::Identifier(id) = e {
                    unqualified |= natural || keys.contains(&id.value.to_ascii_lowercase());
                }
                ControlFlow::<()>::Continue(())
            });
            unqualified
        }
        _ => false,
    }
}
