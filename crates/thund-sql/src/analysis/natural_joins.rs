//! A NATURAL join as the USING join it is on Spark: its keys are the names both sides' columns
//! carry — the left side's names that the right side also has, compared by case as Spark's
//! `left.output.map(_.name).intersect(right.output.map(_.name))` does, in the left side's order.
//! DataFusion's planner finds the same keys, but then reads them as it reads a USING join (the
//! left side's order, the left side's key everywhere); `using_joins` gives Spark's reading, and
//! it needs the keys written out.
//!
//! The keys are known only once each side's columns are, so this runs before the rules on the
//! syntax tree: each side of each NATURAL join is planned alone as `SELECT * FROM <side>` (with
//! the CTEs in scope, through the whole analysis, so a side's names are the ones it will have),
//! then the join becomes `USING (<keys>)`. A side that does not plan alone (a LATERAL one,
//! correlated names), a key some side names twice, or no common name at all leaves the join as
//! written: DataFusion's reading, with `shapes` refusing where that differs from Spark's.
//!
//! Spark's lines disagree where a name is common only ignoring case (`K` on one side, `k` on the
//! other): 4.1 compares names by case (no key: a cross join), 4.2 and later ignore case (a join
//! on `k`). No answer is Spark's there, so such a join is refused.

use std::collections::VecDeque;
use std::ops::ControlFlow;

use datafusion::prelude::SessionContext;
use sqlparser::ast::{
    Cte, Ident, JoinConstraint, JoinOperator, ObjectName, Query, SelectItem, SetExpr, TableFactor, TableWithJoins,
    VisitMut, VisitorMut, WildcardAdditionalOptions, With,
};

/// Every NATURAL inner, left, right or full join of `query` (subqueries and CTEs included) as a
/// USING join of its keys, where they are known. Fails on a join whose keys Spark's lines find
/// differently.
pub(crate) async fn resolve(ctx: &SessionContext, query: &mut Query) -> Result<(), String> {
    let mut collect = Naturals { scopes: Vec::new(), mode: Mode::Collect(Vec::new()) };
    let _ = query.visit(&mut collect);
    let Mode::Collect(sides) = collect.mode else { return Ok(()) };
    if sides.is_empty() {
        return Ok(());
    }
    let mut keys = VecDeque::with_capacity(sides.len());
    for (left, right) in sides {
        keys.push_back(common_names(ctx, left, right).await?);
    }
    let _ = query.visit(&mut Naturals { scopes: Vec::new(), mode: Mode::Apply(keys) });
    Ok(())
}

/// The names of `left`'s columns that `right` also has, in `left`'s order; `None` where either
/// side does not plan or names a key twice, or no name is common; an error where a name is
/// common only ignoring case.
async fn common_names(ctx: &SessionContext, left: Query, right: Query) -> Result<Option<Vec<String>>, String> {
    let names = |plan: &datafusion::logical_expr::LogicalPlan| -> Vec<String> {
        plan.schema().fields().iter().map(|f| f.name().clone()).collect()
    };
    // (Boxed: planning a side resolves the NATURAL joins inside it, a recursion.)
    let (Ok(left), Ok(right)) =
        (Box::pin(crate::plan::plan_query(ctx, left)).await, Box::pin(crate::plan::plan_query(ctx, right)).await)
    else {
        return Ok(None);
    };
    let (left, right) = (names(&left), names(&right));
    if let Some(name) = left.iter().find(|n| !right.contains(n) && right.iter().any(|r| r.eq_ignore_ascii_case(n))) {
        return Err(format!(
            "a NATURAL join whose sides name the column `{name}` only ignoring case: Spark 4.1 joins on the names \
             written the same (a cross join where there is none), 4.2 and later ignore case; name the keys with \
             USING (…) instead"
        ));
    }
    let count = |names: &[String], name: &String| names.iter().filter(|n| *n == name).count();
    let keys: Vec<String> = left.iter().filter(|n| right.contains(n)).cloned().collect();
    let unique = keys.iter().all(|k| count(&left, k) == 1 && count(&right, k) == 1);
    Ok((unique && !keys.is_empty()).then_some(keys))
}

enum Mode {
    /// The first pass: each NATURAL join's sides, as queries, in the order they are met.
    Collect(Vec<(Query, Query)>),
    /// The second pass, in the same order: the keys each join was found to have.
    Apply(VecDeque<Option<Vec<String>>>),
}

struct Naturals {
    /// The WITH clauses around the query being visited, outermost first.
    scopes: Vec<Option<With>>,
    mode: Mode,
}

impl VisitorMut for Naturals {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        self.scopes.push(query.with.clone());
        self.body(&mut query.body);
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _: &mut Query) -> ControlFlow<()> {
        self.scopes.pop();
        ControlFlow::Continue(())
    }
}

impl Naturals {
    /// The SELECTs of a query body's set operations (a nested query is visited on its own).
    fn body(&mut self, body: &mut SetExpr) {
        match body {
            SetExpr::Select(select) => {
                for from in &mut select.from {
                    self.relation(from);
                }
            }
            SetExpr::SetOperation { left, right, .. } => {
                self.body(left);
                self.body(right);
            }
            _ => {}
        }
    }

    fn relation(&mut self, from: &mut TableWithJoins) {
        if let TableFactor::NestedJoin { table_with_joins, .. } = &mut from.relation {
            self.relation(table_with_joins);
        }
        for at in 0..from.joins.len() {
            if let TableFactor::NestedJoin { table_with_joins, .. } = &mut from.joins[at].relation {
                self.relation(table_with_joins);
            }
            let join = &from.joins[at];
            if !is_natural(&join.join_operator) || matches!(join.relation, TableFactor::Derived { lateral: true, .. }) {
                continue;
            }
            match &mut self.mode {
                Mode::Collect(sides) => {
                    let left = TableWithJoins { relation: from.relation.clone(), joins: from.joins[..at].to_vec() };
                    let right = TableWithJoins { relation: join.relation.clone(), joins: Vec::new() };
                    sides.push((star_of(left, &self.scopes), star_of(right, &self.scopes)));
                }
                Mode::Apply(keys) => {
                    if let Some(Some(keys)) = keys.pop_front() {
                        let keys =
                            keys.into_iter().map(|k| ObjectName::from(vec![Ident::with_quote('`', k)])).collect();
                        if let Some(constraint) = constraint_of(&mut from.joins[at].join_operator) {
                            *constraint = JoinConstraint::Using(keys);
                        }
                    }
                }
            }
        }
    }
}

/// A NATURAL join of a kind Spark runs (a NATURAL semi or anti join it refuses: `shapes`).
fn is_natural(op: &JoinOperator) -> bool {
    matches!(
        op,
        JoinOperator::Join(JoinConstraint::Natural)
            | JoinOperator::Inner(JoinConstraint::Natural)
            | JoinOperator::Left(JoinConstraint::Natural)
            | JoinOperator::LeftOuter(JoinConstraint::Natural)
            | JoinOperator::Right(JoinConstraint::Natural)
            | JoinOperator::RightOuter(JoinConstraint::Natural)
            | JoinOperator::FullOuter(JoinConstraint::Natural)
    )
}

fn constraint_of(op: &mut JoinOperator) -> Option<&mut JoinConstraint> {
    match op {
        JoinOperator::Join(c)
        | JoinOperator::Inner(c)
        | JoinOperator::Left(c)
        | JoinOperator::LeftOuter(c)
        | JoinOperator::Right(c)
        | JoinOperator::RightOuter(c)
        | JoinOperator::FullOuter(c) => Some(c),
        _ => None,
    }
}

/// `WITH <the CTEs it reads> SELECT * FROM from`: the CTEs in scope that `from` reads, directly or
/// through one another (an inner CTE hides an outer one of its name). Only those: the CTE that
/// holds the join is in scope too, and planning it would plan this side again.
fn star_of(from: TableWithJoins, scopes: &[Option<With>]) -> Query {
    let mut in_scope: Vec<Cte> = Vec::new();
    let mut recursive = false;
    for with in scopes.iter().flatten() {
        recursive |= with.recursive;
        for cte in &with.cte_tables {
            in_scope.retain(|c| !c.alias.name.value.eq_ignore_ascii_case(&cte.alias.name.value));
            in_scope.push(cte.clone());
        }
    }
    let mut wanted = vec![false; in_scope.len()];
    let mut pending: Vec<String> = read_names(&from);
    while let Some(name) = pending.pop() {
        if let Some(at) = in_scope.iter().position(|c| c.alias.name.value.eq_ignore_ascii_case(&name)) {
            if !wanted[at] {
                wanted[at] = true;
                pending.extend(read_names(&*in_scope[at].query));
            }
        }
    }
    let ctes: Vec<Cte> = in_scope.into_iter().zip(wanted).filter(|(_, w)| *w).map(|(c, _)| c).collect();
    let mut query =
        crate::syntax::select_query(vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())], vec![from]);
    if !ctes.is_empty() {
        query.with = Some(With {
            with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
            recursive,
            cte_tables: ctes,
        });
    }
    query
}

/// The one-part names of the relations `node` reads (a CTE is read by a one-part name).
fn read_names<V: sqlparser::ast::Visit>(node: &V) -> Vec<String> {
    let mut names = Vec::new();
    let _ = sqlparser::ast::visit_relations(node, |name: &ObjectName| {
        if let [part] = name.0.as_slice() {
            if let Some(id) = part.as_ident() {
                names.push(id.value.clone());
            }
        }
        ControlFlow::<()>::Continue(())
    });
    names
}

#[cfg(test)]
mod tests {
    use sqlparser::ast::Statement;

    /// `sql` with its NATURAL joins resolved in a session of Spark's semantics, or the refusal.
    fn resolved(sql: &str) -> String {
        resolving(sql).unwrap_or_else(|e| panic!("{sql}: {e}"))
    }

    fn resolving(sql: &str) -> Result<String, String> {
        let config =
            crate::session::spark_config(datafusion::prelude::SessionConfig::new(), crate::modes::SqlModes::default());
        let runtime = std::sync::Arc::new(datafusion::execution::runtime_env::RuntimeEnv::default());
        let ctx = crate::session::spark_context(crate::session::spark_state_builder(config, runtime).build());
        let dialect = sqlparser::dialect::SparkSqlDialect {};
        let mut statements = sqlparser::parser::Parser::parse_sql(&dialect, sql).unwrap();
        let Some(Statement::Query(query)) = statements.first_mut() else { panic!("not a query") };
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        rt.block_on(super::resolve(&ctx, query))?;
        Ok(query.to_string())
    }

    #[test]
    fn a_natural_join_becomes_a_using_join_of_the_names_both_sides_have() {
        let with = "WITH l(a, k, j) AS (VALUES ('a', 1, 2)), r(j, b, k) AS (VALUES (2, 'x', 1)) ";
        let full = resolved(&format!("{with}SELECT * FROM l NATURAL FULL JOIN r"));
        assert!(full.ends_with("FROM l FULL JOIN r USING(`k`, `j`)"), "{full}");
        // A name common only ignoring case: Spark 4.1 finds no key there, 4.2 and later `k`.
        let cased = resolving(&format!("{with}SELECT * FROM (SELECT k AS K FROM l) AS x NATURAL JOIN r")).unwrap_err();
        assert!(cased.contains("`K` only ignoring case"), "{cased}");
        // Inside a CTE, whose sides read an earlier CTE; and a chain, resolved left to right.
        let cte = resolved(&format!("{with}, n AS (SELECT * FROM l NATURAL JOIN r) SELECT * FROM n"));
        assert!(cte.contains("n AS (SELECT * FROM l JOIN r USING(`k`, `j`))"), "{cte}");
        let chain = resolved(&format!("{with}SELECT * FROM l NATURAL JOIN r NATURAL LEFT JOIN (SELECT 1 AS b) AS s"));
        assert!(chain.ends_with("JOIN r USING(`k`, `j`) LEFT JOIN (SELECT 1 AS b) AS s USING(`b`)"), "{chain}");
    }
}
