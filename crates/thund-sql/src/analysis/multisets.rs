//! `EXCEPT ALL` and `INTERSECT ALL` with Spark's counts: a row that occurs m times on the left
//! and n times on the right occurs max(m − n, 0) times in `EXCEPT ALL` and min(m, n) times in
//! `INTERSECT ALL`. DataFusion plans both as a semi or anti join on every column, which keeps a
//! left row as often as it occurs whenever the right has it at all (`{1,2,2,3} EXCEPT ALL
//! {2,3,4}` would be `{1}`, Spark's is `{1,2}`).
//!
//! Each occurrence of a row is numbered first (`row_number()` over a partition of every
//! column): the k-th occurrence on the left meets the k-th on the right, so the semi join keeps
//! the first min(m, n) of them and the anti join the last m − n. Planning loses which semi and
//! anti joins were a set operation, so the query rule marks each one, as a derived table named
//! `__thund_multiset_<n>` ([`mark_rule`]); the plan rule ([`CountedMultisets`]) rewrites the join
//! under each mark, after `fidelity::SparkSemantics` gave both sides Spark's common types.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{Column, NullEquality};
use datafusion::error::Result;
use datafusion::logical_expr::{col, ExprFunctionExt, JoinType, LogicalPlan, LogicalPlanBuilder};
use sqlparser::ast::{
    Ident, Query, SelectItem, SetExpr, SetOperator, SetQuantifier, TableAlias, TableFactor, TableWithJoins, VisitMut,
    VisitorMut, WildcardAdditionalOptions,
};

use crate::functions::window::float_keys::float_key;
use crate::modes::SqlModes;

const MARK: &str = "__thund_multiset_";
const OCCURRENCE: &str = "__thund_occurrence";

/// The query rule: every `EXCEPT ALL` / `INTERSECT ALL` of `query` (subqueries included) as
/// `SELECT * FROM (l op ALL r) AS __thund_multiset_<n>`.
pub(crate) fn mark_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Marks(usize);
    impl VisitorMut for Marks {
        type Break = ();
        // After a query's subqueries: the derived table a mark makes is not visited again.
        fn post_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            mark_body(&mut query.body, &mut self.0);
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Marks(0));
    Ok(())
}

fn mark_body(body: &mut SetExpr, next: &mut usize) {
    let SetExpr::SetOperation { op, set_quantifier, left, right } = body else { return };
    mark_body(left, next);
    mark_body(right, next);
    let all = matches!(set_quantifier, SetQuantifier::All);
    if !(all && matches!(op, SetOperator::Except | SetOperator::Minus | SetOperator::Intersect)) {
        return;
    }
    *next += 1;
    let alias = Ident::new(format!("{MARK}{next}"));
    // (A placeholder while the operation moves into the derived table.)
    let placeholder = *crate::syntax::select_query(vec![], vec![]).body;
    let operation = std::mem::replace(body, placeholder);
    let derived = TableFactor::Derived {
        lateral: false,
        subquery: Box::new(crate::syntax::query(operation)),
        alias: Some(TableAlias { explicit: true, name: alias, columns: vec![], at: None }),
        sample: None,
    };
    let select = crate::syntax::select_query(
        vec![SelectItem::Wildcard(WildcardAdditionalOptions::default())],
        vec![TableWithJoins { relation: derived, joins: vec![] }],
    );
    *body = *select.body;
}

/// The plan rule: the semi or anti join under each mark of [`mark_rule`] joins numbered
/// occurrences.
#[derive(Debug)]
pub(crate) struct CountedMultisets;

impl datafusion::optimizer::AnalyzerRule for CountedMultisets {
    fn name(&self) -> &str {
        "counted_multisets"
    }

    fn analyze(&self, plan: LogicalPlan, _: &datafusion::config::ConfigOptions) -> Result<LogicalPlan> {
        plan.transform_up(|node| {
            let LogicalPlan::SubqueryAlias(a) = &node else { return Ok(Transformed::no(node)) };
            if !a.alias.table().starts_with(MARK) {
                return Ok(Transformed::no(node));
            }
            let Some(counted) = counted(&a.input)? else { return Ok(Transformed::no(node)) };
            Ok(Transformed::yes(LogicalPlanBuilder::from(counted).alias(a.alias.clone())?.build()?))
        })
        .map(|t| t.data)
    }
}

/// The set operation's join, its sides' occurrences numbered and joined too; `None` when the
/// plan under the mark is not the join DataFusion plans for it.
fn counted(plan: &LogicalPlan) -> Result<Option<LogicalPlan>> {
    let LogicalPlan::Join(join) = plan else { return Ok(None) };
    if !matches!(join.join_type, JoinType::LeftSemi | JoinType::LeftAnti) || join.filter.is_some() {
        return Ok(None);
    }
    let numbered = |side: &LogicalPlan, name: &str| -> Result<LogicalPlan> {
        // A NaN is one value and -0.0 is 0.0 on Spark, here too.
        let schema = side.schema();
        let columns: Vec<_> = schema
            .columns()
            .into_iter()
            .map(|c| {
                let e = datafusion::prelude::Expr::Column(c);
                float_key(&e, schema).unwrap_or(e)
            })
            .collect();
        let occurrence =
            datafusion::functions_window::expr_fn::row_number().partition_by(columns).build()?.alias(OCCURRENCE);
        LogicalPlanBuilder::from(side.clone()).window(vec![occurrence])?.alias(name)?.build()
    };
    let left = numbered(&join.left, "__thund_left")?;
    let right = numbered(&join.right, "__thund_right")?;
    let names =
        |side: &LogicalPlan| -> Vec<String> { side.schema().fields().iter().map(|f| f.name().clone()).collect() };
    let (left_names, right_names) = (names(&join.left), names(&join.right));
    let keys: (Vec<Column>, Vec<Column>) = left_names
        .iter()
        .zip(&right_names)
        .map(|(l, r)| (Column::new(Some("__thund_left"), l), Column::new(Some("__thund_right"), r)))
        .chain(std::iter::once((
            Column::new(Some("__thund_left"), OCCURRENCE),
            Column::new(Some("__thund_right"), OCCURRENCE),
        )))
        .unzip();
    let joined = LogicalPlanBuilder::from(left)
        .join_detailed(right, join.join_type, keys, None, NullEquality::NullEqualsNull)?
        .build()?;
    // Spark counts rows by grouping them: a floating column comes out as its group's key.
    let schema = Arc::clone(joined.schema());
    let items = left_names.iter().map(|n| {
        let e = col(Column::new(Some("__thund_left"), n));
        match float_key(&e, &schema) {
            Some(key) => key.alias(n),
            None => e,
        }
    });
    let joined = LogicalPlanBuilder::from(joined).project(items)?.build()?;
    Ok(Some(joined))
}

#[cfg(test)]
mod tests {
    use super::mark_rule;
    use crate::analysis::rewritten_by;

    #[test]
    fn multiset_operations_are_marked_where_they_are() {
        let marked = rewritten_by(mark_rule, "SELECT a FROM t EXCEPT ALL SELECT a FROM u").unwrap();
        assert_eq!(marked, "SELECT * FROM (SELECT a FROM t EXCEPT ALL SELECT a FROM u) AS __thund_multiset_1");
        let kept = "SELECT a FROM t EXCEPT SELECT a FROM u UNION ALL SELECT a FROM v";
        assert_eq!(rewritten_by(mark_rule, kept).unwrap(), kept);
    }
}
