//! Queries Spark's analyzer refuses and DataFusion would answer: each is refused here with
//! Spark's error, since an answer where Spark stops the flow is a table Spark would never
//! write. Checked on a planned node, once its expressions are Spark's (`fidelity`).
//!
//! - `grouping(x)` / `grouping_id()` in a `GROUP BY` without grouping sets
//!   (`UNSUPPORTED_GROUPING_EXPRESSION`; DataFusion answers 0);
//! - a ranking or offset window function without `ORDER BY` (`row_number() OVER ()`: Spark's
//!   rows have no order to number; DataFusion numbers them as they come);
//! - an aggregate with `FILTER (WHERE …)` or `DISTINCT` over a window
//!   (`DISTINCT_WINDOW_FUNCTION_UNSUPPORTED`; DataFusion answers it);
//! - `median` over an ordered window (`INVALID_WINDOW_SPEC_FOR_AGGREGATION_FUNC`);
//! - a year-month interval compared with a day-time one (`DATATYPE_MISMATCH`);
//! - `array_contains` / `map_contains_key` of a text in numbers or a number in texts (Spark
//!   finds no common type without making the number text: `DATATYPE_MISMATCH`);
//! - `count()` with no argument (`WRONG_NUM_ARGS`; DataFusion's planner makes it `count(1)`
//!   before any plan rule sees it, so this one is found on the syntax tree, [`refuse_rule`]),
//!   and `sort_array(a, order)` whose order is not a BOOLEAN literal (the template it is
//!   written as reads `'1'` as true).

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
    let schema = crate::declare::merged_input_schema(node);
    for e in node.expressions() {
        let mut found = None;
        e.apply(|e| {
            found = refusal(e, &schema);
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

fn refusal(e: &Expr, schema: &datafusion::common::DFSchema) -> Option<String> {
    use arrow::datatypes::{DataType, IntervalUnit};
    use datafusion::logical_expr::ExprSchemable;
    let type_of = |e: &Expr| e.get_type(schema).ok();
    match e {
        Expr::BinaryExpr(b) if super::common_types::is_comparison(b.op) => {
            let year_month = |t: &Option<DataType>| matches!(t, Some(DataType::Interval(IntervalUnit::YearMonth)));
            let day_time = |t: &Option<DataType>| matches!(t, Some(DataType::Duration(_)));
            let (l, r) = (type_of(&b.left), type_of(&b.right));
            ((year_month(&l) && day_time(&r)) || (day_time(&l) && year_month(&r))).then(|| {
                "[DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES] a year-month interval and a day-time interval cannot be \
                 compared"
                    .to_string()
            })
        }
        Expr::ScalarFunction(f) if f.name() == "array_has" && f.args.len() == 2 => {
            let element = match type_of(&f.args[0]) {
                Some(DataType::List(field) | DataType::LargeList(field)) => Some(field.data_type().clone()),
                _ => None,
            }?;
            let value = type_of(&f.args[1])?;
            if matches!(value, DataType::Null) {
                return Some(
                    "[DATATYPE_MISMATCH.NULL_TYPE] Null typed values cannot be used as arguments of \
                     `array_contains` / `map_contains_key` (cast the NULL to the elements' type)"
                        .into(),
                );
            }
            let texts = |t: &DataType| t.is_string();
            (!matches!(element, DataType::Null) && texts(&element) != texts(&value)).then(|| {
                format!(
                    "[DATATYPE_MISMATCH] `array_contains` / `map_contains_key`: the value ({}) and the elements or \
                     keys ({}) share no type",
                    crate::types::spark_type_name(&value),
                    crate::types::spark_type_name(&element)
                )
            })
        }
        Expr::WindowFunction(w) => {
            let name = w.fun.name();
            let ordered = !w.params.order_by.is_empty();
            match &w.fun {
                WindowFunctionDefinition::WindowUDF(_) if ORDERED_ONLY.contains(&name) && !ordered => {
                    Some(format!("Window function {name}() requires window to be ordered, please add ORDER BY clause"))
                }
                WindowFunctionDefinition::AggregateUDF(_) if w.params.distinct => Some(format!(
                    "[DISTINCT_WINDOW_FUNCTION_UNSUPPORTED] Distinct window functions are not supported: \
                     {name}(DISTINCT …) OVER (…)"
                )),
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
    sort_orders(query)
}

/// Refuses `sort_array(a, order)` whose order is not a BOOLEAN literal (or NULL), as Spark does
/// ("Sort order in second argument requires a boolean literal"), and a bare NULL sought by
/// `array_contains` / `map_contains_key` (Spark's NULL_TYPE).
fn sort_orders(query: &sqlparser::ast::Query) -> Result<(), String> {
    use sqlparser::ast::{Expr as Syntax, FunctionArg, FunctionArgExpr, FunctionArguments, Value, Visit, Visitor};
    fn boolean_literal(e: &Syntax) -> bool {
        match e {
            Syntax::Value(v) => matches!(v.value, Value::Boolean(_) | Value::Null),
            Syntax::Nested(inner) | Syntax::UnaryOp { expr: inner, op: sqlparser::ast::UnaryOperator::Not } => {
                boolean_literal(inner)
            }
            _ => false,
        }
    }
    struct Find(Option<String>);
    impl Visitor for Find {
        type Break = ();
        fn pre_visit_expr(&mut self, e: &Syntax) -> ControlFlow<()> {
            let Syntax::Function(f) = e else { return ControlFlow::Continue(()) };
            let name = f.name.to_string().to_ascii_lowercase();
            let FunctionArguments::List(list) = &f.args else { return ControlFlow::Continue(()) };
            // A bare NULL sought in an array or a map (Spark's NULL_TYPE; the planner types it).
            if let (true, [_, FunctionArg::Unnamed(FunctionArgExpr::Expr(Syntax::Value(v)))]) =
                (matches!(name.as_str(), "array_contains" | "map_contains_key"), list.args.as_slice())
            {
                if v.value == Value::Null {
                    self.0 = Some(format!(
                        "[DATATYPE_MISMATCH.NULL_TYPE] Cannot resolve \"{e}\": Null typed values cannot be used \
                         as arguments of `{name}` (cast the NULL to the elements' type)"
                    ));
                    return ControlFlow::Break(());
                }
            }
            if name != "sort_array" {
                return ControlFlow::Continue(());
            }
            if let [_, FunctionArg::Unnamed(FunctionArgExpr::Expr(order))] = list.args.as_slice() {
                if !boolean_literal(order) {
                    self.0 = Some(format!(
                        "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] Cannot resolve \"{e}\": sort order in second \
                         argument requires a boolean literal"
                    ));
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut find = Find(None);
    let _ = Visit::visit(query, &mut find);
    find.0.map_or(Ok(()), Err)
}
