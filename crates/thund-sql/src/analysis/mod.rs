//! Analysis: how a parsed query becomes a DataFusion plan with Spark's semantics, as one
//! ordered list of named rules in two stages.
//!
//! ```text
//!  sqlparser AST ─natural_joins::resolve (each side planned alone)→ NATURAL joins as USING joins
//!     ─QUERY_RULES (in order, each with the session's SqlModes)→ AST DataFusion reads
//!     ─resolution::plan_case_insensitively→ LogicalPlan (names resolved ignoring case, lateral
//!                                            column aliases, sum of VOID)
//!     ─PLAN_RULES (AnalyzerRules, in order)→ LogicalPlan with Spark's types and answers, or a
//!                                            refusal at the query's line
//!  at execution, in the session's analyzer after DataFusion's type coercion:
//!     session_analyzer_rules (cast::SparkText: Spark's text for the casts coercion added;
//!       folding::FoldingErrors: a constant of a select list that fails fails the query)
//! ```
//!
//! Rules on the syntax tree come first where what tells Spark's meaning apart is lost by
//! planning (how a name was written, a literal's spelling, a set operation's `ALL`); rules on
//! the plan where types decide. The plan rules run right after planning rather than in the
//! session's analyzer, so a refusal is an error when the query is planned (a dry run finds
//! it) and DataFusion's type coercion sees the types they chose; `SparkText` runs in the
//! session's analyzer, after that coercion, because it rewrites the casts coercion adds.

pub(crate) mod aggregate_types;
pub(crate) mod analysis_errors;
pub(crate) mod common_types;
pub(crate) mod fidelity;
pub(crate) mod folding;
pub(crate) mod global_filters;
pub(crate) mod grouping;
pub(crate) mod lateral;
pub(crate) mod multisets;
pub(crate) mod named_windows;
pub(crate) mod names;
pub(crate) mod natural_joins;
pub(crate) mod not_in;
pub(crate) mod null_aware_joins;
pub(crate) mod outer_joins;
pub(crate) mod pivots;
pub(crate) mod predicates;
pub(crate) mod resolution;
pub(crate) mod shapes;
pub(crate) mod spellings;
pub(crate) mod string_literals;
pub(crate) mod text_operands;
pub(crate) mod using_joins;

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::optimizer::AnalyzerRule;
use sqlparser::ast::{Query, VisitMut, VisitorMut};

use crate::modes::SqlModes;

/// A rule on a query's syntax tree: it rewrites the tree in place, or says why the query is
/// refused.
pub(crate) struct QueryRule {
    /// What the rule is called where rules are listed.
    pub name: &'static str,
    /// The rewrite.
    pub apply: fn(&mut Query, &SqlModes) -> Result<(), String>,
}

/// The rules on a query's syntax tree, in the order they run.
pub(crate) const QUERY_RULES: [QueryRule; 18] = [
    // Before anything reads a literal: under the parser's mode a literal is its text as written.
    QueryRule { name: "escaped_string_literals", apply: string_literals::keep_backslashes },
    // While the tree is as written: an operator after a predicate without parentheses, which
    // Spark's grammar reads otherwise.
    QueryRule { name: "predicate_operands", apply: predicates::refuse_rule },
    // `count()`, which DataFusion's planner makes `count(1)`, and `sort_array(a, '1')`, which its
    // template reads as true: Spark refuses both.
    QueryRule { name: "syntax_refusals", apply: analysis_errors::refuse_rule },
    // `GROUP BY window(…)` becomes a lateral view over each row's windows, which the next rules
    // treat as any other.
    QueryRule { name: "time_windows", apply: crate::functions::datetime::windows::rewrite_rule },
    // Hive's spellings of grouping sets, which DataFusion's planner would read as a plain GROUP BY.
    QueryRule { name: "grouping_sets", apply: grouping::rewrite_rule },
    // `OVER (w)`, which DataFusion's planner would run over the whole input.
    QueryRule { name: "named_windows", apply: named_windows::rewrite_rule },
    // A USING join's keys as Spark reads them (before `query_shapes`, which refuses the shapes
    // this rule leaves as DataFusion reads them).
    QueryRule { name: "using_joins", apply: using_joins::rewrite_rule },
    // `EXCEPT ALL` / `INTERSECT ALL`, marked for `multisets::CountedMultisets`, which counts
    // their rows.
    QueryRule { name: "multiset_operations", apply: multisets::mark_rule },
    QueryRule { name: "query_shapes", apply: refuse_shapes },
    // While expressions are as written: Spark's names for the columns PIVOT and UNPIVOT make
    // (planned by `pivots::PivotPlanner`).
    QueryRule { name: "pivot_names", apply: pivots::name_rule },
    // Before any expression is rewritten: Spark names a column as the user wrote it.
    QueryRule { name: "select_list_names", apply: name_select_lists },
    // A LIKE pattern's escapes as Spark allows them (once the select list is named as written,
    // before the spellings write out LIKEs of their own).
    QueryRule { name: "like_patterns", apply: crate::functions::string::like_patterns::like_rule },
    // `NOT IN (subquery)` read as a value (in `OR`, under `NOT`, in a select list) as Spark's
    // existence test, once the select list is named as written.
    QueryRule { name: "not_in_subqueries", apply: not_in::rewrite_rule },
    // Spark's `col1`, `col2`, … for an inline table's columns.
    QueryRule { name: "inline_table_names", apply: names::name_inline_tables },
    QueryRule { name: "spark_spellings", apply: spellings::rewrite_query },
    QueryRule { name: "lateral_views", apply: lateral::rewrite_rule },
    QueryRule { name: "datetime_types", apply: crate::types::datetime_types_rule },
    // Last: it marks the arguments of the functions the rules above wrote out.
    QueryRule { name: "text_arguments", apply: crate::functions::string::text_arguments::wrap_rule },
];

/// The rules on a planned query, in the order they run (DataFusion `AnalyzerRule`s, run by
/// `plan::plan_query` right after planning).
pub(crate) fn plan_rules() -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    vec![Arc::new(fidelity::SparkSemantics), Arc::new(multisets::CountedMultisets)]
}

/// The rules the session's own analyzer runs after DataFusion's, at execution.
pub(crate) fn session_analyzer_rules() -> Vec<Arc<dyn AnalyzerRule + Send + Sync>> {
    vec![Arc::new(crate::functions::cast::SparkText), Arc::new(folding::FoldingErrors)]
}

/// The rules on an expression planned alone (an expectation, an AUTO CDC clause): those of
/// [`QUERY_RULES`] that apply to an expression.
pub(crate) fn rewrite_expression(expr: &mut sqlparser::ast::Expr, modes: &SqlModes) {
    string_literals::keep_backslashes_in(expr, modes);
    spellings::rewrite_expr(expr);
}

/// The names of every rule, in the order they run: the rules on the syntax tree, the plan
/// rules, then the session's own.
pub(crate) fn rule_names() -> Vec<String> {
    let mut names: Vec<String> = QUERY_RULES.iter().map(|r| r.name.to_string()).collect();
    names.extend(plan_rules().iter().map(|r| r.name().to_string()));
    names.extend(session_analyzer_rules().iter().map(|r| r.name().to_string()));
    names
}

/// Every rule of [`QUERY_RULES`] on `query`, in order; the first refusal ends it.
pub(crate) fn rewrite_query(query: &mut Query, modes: &SqlModes) -> Result<(), String> {
    for rule in &QUERY_RULES {
        (rule.apply)(query, modes)?;
    }
    Ok(())
}

/// Refuses a query with a shape DataFusion answers differently (`shapes`), in any of its
/// queries.
fn refuse_shapes(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Shapes(Option<String>);
    impl VisitorMut for Shapes {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            match shapes::refusal(&query.body) {
                Some(refusal) => {
                    self.0 = Some(refusal);
                    ControlFlow::Break(())
                }
                None => ControlFlow::Continue(()),
            }
        }
    }
    let mut shapes = Shapes(None);
    let _ = query.visit(&mut shapes);
    shapes.0.map_or(Ok(()), Err)
}

/// Gives the unnamed select-list items of every query in `query` Spark's names (`names`).
fn name_select_lists(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Names;
    impl VisitorMut for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            names::name_select_items(&mut query.body);
            for cte in query.with.iter_mut().flat_map(|w| w.cte_tables.iter_mut()) {
                names::keep_alias_case(&mut cte.alias);
            }
            ControlFlow::Continue(())
        }
        fn pre_visit_table_factor(&mut self, factor: &mut sqlparser::ast::TableFactor) -> ControlFlow<()> {
            use sqlparser::ast::TableFactor;
            if let TableFactor::Derived { alias: Some(alias), .. } | TableFactor::Table { alias: Some(alias), .. } =
                factor
            {
                names::keep_alias_case(alias);
            }
            ControlFlow::Continue(())
        }
    }
    let _ = query.visit(&mut Names);
    Ok(())
}

/// `sql` parsed as Spark SQL, rewritten by `rule` and printed again, for the rules' tests.
#[cfg(test)]
pub(crate) fn rewritten_by(rule: fn(&mut Query, &SqlModes) -> Result<(), String>, sql: &str) -> Result<String, String> {
    let dialect = sqlparser::dialect::SparkSqlDialect {};
    let mut statements = sqlparser::parser::Parser::parse_sql(&dialect, sql).map_err(|e| e.to_string())?;
    let Some(sqlparser::ast::Statement::Query(query)) = statements.first_mut() else {
        return Err("not a query".into());
    };
    rule(query, &SqlModes::default())?;
    Ok(query.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_has_its_own_name() {
        let mut names = rule_names();
        let count = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), count, "two rules share a name");
    }
}
