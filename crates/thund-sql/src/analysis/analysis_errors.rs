//! Queries Spark's analyzer refuses and DataFusion would answer: each is refused here with
//! Spark's error, since an answer where Spark stops the flow is a table Spark would never
//! write. Checked on a planned node, once its expressions are Spark's (`fidelity`).
//!
//! - `grouping(x)` / `grouping_id()` in a `GROUP BY` without grouping sets
//!   (`UNSUPPORTED_GROUPING_EXPRESSION`; DataFusion answers 0);
//! - a ranking or offset window function without `ORDER BY` (`row_number() OVER ()`: Spark's
//!   rows have no order to number; DataFusion numbers them as they come);
//! - an aggregate with `FILTER (WHERE …)` over a window;
//! - `median` over an ordered window (`INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC`);
//! - `count()` with no argument (`WRONG_NUM_ARGS`; DataFusion's planner makes it `count(1)`
//!   before any plan rule sees it, so this one is found on the syntax tree, [`refuse_rule`]).

use std::ops::ControlFlow;

use datafusion::common::tree_node::TreeNode;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{Expr, GroupingSet, LogicalPlan, WindowFunctionDefinition};

/// The window functions Spark computes only over an ordered window.
const ORDERED_ONLY: &[&str] =
    &["row_number", "rank", "dense_rank", "percent_rank", "cume_dist", "ntile", "lag", "lead", "nth_value"];

fn refuse(message: String) -> Result<()> {
    Err(DataFusionError::Plan(message))
}

/// Spark's error for the first of `node`'s expressions it would refuse.
pub(crate) fn check(node: &LogicalPlan) -> Result<()> {
    if let LogicalPlan::Aggregate(a) = node {
        let grouping_sets = matches!(
            a.group_expr.as_slice(),
            [Expr::GroupingSet(GroupingSet::Rollup(_) | GroupingSet::Cube(_) | GroupingSet::GroupingSets(_))]
        );
        let grouping = a.aggr_expr.iter().any(|e| {
            e.exists(|e| Ok(matches!(e, Expr::AggregateFunction(f) if f.func.name() == "grouping"))).unwrap_or(false)
        });
        if grouping && !grouping_sets {
            return refuse(
                "[UNSUPPORTED_GROUPING_EXPRESSION] grouping()/grouping_id() can only be used with \
                 GroupingSets/Cube/Rollup"
                    .into(),
            );
        }
    }
    for e in node.expressions() {
        let mut found = None;
        e.apply(|e| {
            found = refusal(e);
            Ok(if found.is_some() {
                datafusion::common::tree_node::TreeNodeRecursion::Stop
            } else {
                datafusion::common::tree_node::TreeNodeRecursion::Continue
            })
        })?;
        if let Some(message) = found {
            return refuse(message);
        }
    }
    Ok(())
}

fn refusal(e: &Expr) -> Option<String> {
    match e {
        Expr::WindowFunction(w) => {
            let name = w.fun.name();
            let ordered = !w.params.order_by.is_empty();
            match &w.fun {
                WindowFunctionDefinition::WindowUDF(_) if ORDERED_ONLY.contains(&name) && !ordered => {
                    Some(format!("Window function {name}() requires window to be ordered, please add ORDER BY clause"))
                }
                WindowFunctionDefinition::AggregateUDF(_) if w.params.filter.is_some() => {
                    Some("Window aggregate function with filter predicate is not supported yet".into())
                }
                WindowFunctionDefinition::AggregateUDF(_) if name == "median" && ordered => Some(
                    "[INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC] Cannot specify ORDER BY or a window frame for \
                     \"median\""
                        .into(),
                ),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Refuses `query` where it calls `count()` with no argument, as Spark does.
pub(super) fn refuse_rule(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    use sqlparser::ast::{Expr as Syntax, FunctionArguments, Visit, Visitor};
    struct Find(bool);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Syntax) -> ControlFlow<()> {
            let Syntax::Function(f) = e else { return ControlFlow::Continue(()) };
            let count = f.name.0.len() == 1 && f.name.to_string().eq_ignore_ascii_case("count");
            if count && matches!(&f.args, FunctionArguments::List(l) if l.args.is_empty()) {
                self.0 = true;
                return ControlFlow::Break(());
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(false);
    let _ = Visit::visit(&*query, &mut find);
    if find.0 {
        return Err("[WRONG_NUM_ARGS.WITH_SUGGESTION] The `count` requires >= 1 parameters but the actual number \
                    is 0 (`count(*)` counts every row)"
            .into());
    }
    Ok(())
}
