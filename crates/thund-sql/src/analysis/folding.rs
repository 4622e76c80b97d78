//! Spark evaluates the constant parts of a query while it optimizes it (`ConstantFolding`), and
//! an error there fails the query — even where no row would reach the expression:
//! `SELECT CAST('x' AS INT) AS c FROM t WHERE false` fails in ANSI mode on Spark. DataFusion's
//! simplifier folds constants too but keeps one whose evaluation fails, to fail only if a row
//! reaches it, so the native engine would answer (no rows) where Spark stops the flow.
//!
//! This rule runs last in the session's analyzer, after DataFusion's type coercion and before
//! its optimizer removes what no row reaches: each constant part of every operator's
//! expressions (select lists, filters, join conditions, windows, sort keys, inline tables) is
//! evaluated on one row, and its error is the query's. That is Spark's answer for any input
//! but literal rows: over an inline table Spark first filters and projects the rows themselves
//! (`ConvertToLocalRelation`, where `x > 5 AND CAST('a' AS INT) = 1` stops at its first false
//! side) and drops what an empty relation feeds (`PropagateEmptyRelation`), so there it may
//! answer where this rule fails the query — a refusal, never a different answer. As on Spark, the
//! branches of a conditional are exempt (`CASE WHEN x THEN 1/0 END`, the later arguments of
//! `coalesce`, `nvl`, `if`): Spark folds them without failing, since no row may take them.

use std::sync::Arc;

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::Schema;
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::execution::context::ExecutionProps;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, LogicalPlan, Volatility};
use datafusion::optimizer::AnalyzerRule;

/// The rule (see the module): an analyzer rule of the session's.
#[derive(Debug)]
pub(crate) struct FoldingErrors;

impl AnalyzerRule for FoldingErrors {
    fn name(&self) -> &str {
        "spark_folding_errors"
    }

    fn analyze(&self, plan: LogicalPlan, config: &datafusion::config::ConfigOptions) -> Result<LogicalPlan> {
        // Functions read the session's settings (its ANSI mode) as they would at execution.
        let mut props = ExecutionProps::new();
        props.mark_start_execution(Arc::new(config.clone()));
        let mut failure = None;
        plan.apply_with_subqueries(|node| {
            for e in node.expressions() {
                if let Err(error) = check(&coalesced(e, &props), false, &props) {
                    failure = Some(error);
                    return Ok(TreeNodeRecursion::Stop);
                }
            }
            Ok(TreeNodeRecursion::Continue)
        })?;
        match failure {
            Some(error) => Err(error),
            None => Ok(plan),
        }
    }
}

/// `e` with Spark's simplification of `coalesce` (`NullPropagation`, before it folds
/// constants): NULL arguments dropped, and those after the first that cannot be NULL (here: a
/// constant that is not), the function itself where one argument is left. So in
/// `c - coalesce(CAST('-9.04' AS DECIMAL(10,2)), x)` the subtraction becomes constant, and an
/// overflow there fails the query on Spark whatever `x` holds.
fn coalesced(e: Expr, props: &ExecutionProps) -> Expr {
    let simplified = e.clone().transform_up(|e| {
        let Expr::ScalarFunction(f) = &e else { return Ok(Transformed::no(e)) };
        if !matches!(f.name(), "coalesce" | "nvl" | "ifnull") {
            return Ok(Transformed::no(e));
        }
        let mut args: Vec<Expr> =
            f.args.iter().filter(|a| !matches!(a, Expr::Literal(v, _) if v.is_null())).cloned().collect();
        if let Some(at) = args.iter().position(|a| constant(a) && value(a, props).is_some_and(|v| !v.is_null())) {
            args.truncate(at + 1);
        }
        match args.len() {
            0 => Ok(Transformed::no(e)),
            1 => Ok(Transformed::yes(args.remove(0))),
            n if n == f.args.len() => Ok(Transformed::no(e)),
            _ => Ok(Transformed::yes(Expr::ScalarFunction(ScalarFunction::new_udf(Arc::clone(&f.func), args)))),
        }
    });
    simplified.map(|t| t.data).unwrap_or(e)
}

/// The value of a constant `e`, where it evaluates (an error is no value).
pub(crate) fn value(e: &Expr, props: &ExecutionProps) -> Option<datafusion::common::ScalarValue> {
    match evaluated(e, props)?.ok()? {
        datafusion::logical_expr::ColumnarValue::Scalar(v) => Some(v),
        datafusion::logical_expr::ColumnarValue::Array(a) if a.len() == 1 => {
            datafusion::common::ScalarValue::try_from_array(&a, 0).ok()
        }
        _ => None,
    }
}

/// A constant `e` evaluated on one row of no columns; `None` where it does not plan so, or a
/// function cannot answer outside a query's rows (it panics).
fn evaluated(e: &Expr, props: &ExecutionProps) -> Option<Result<datafusion::logical_expr::ColumnarValue>> {
    // Simplified first, as the optimizer simplifies it before it runs: some functions answer
    // only in their simplified form (datafusion-spark's `date_trunc`).
    let context = datafusion::logical_expr::simplify::SimplifyContext::builder()
        .with_config_options(props.config_options.clone().unwrap_or_default())
        .with_query_execution_start_time(props.query_execution_start_time)
        .build();
    let e = match datafusion::optimizer::simplify_expressions::ExprSimplifier::new(context).simplify(e.clone()) {
        Ok(simplified) => simplified,
        Err(error) => return Some(Err(error)),
    };
    let physical =
        datafusion::physical_expr::create_physical_expr(&e, &DFSchema::empty(), props, &Default::default()).ok()?;
    let row = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )
    .ok()?;
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| physical.evaluate(&row))).ok()
}

/// The error of the first constant part of `e` that fails, outside a conditional's branches;
/// `branch`: `e` is one.
fn check(e: &Expr, branch: bool, props: &ExecutionProps) -> Result<()> {
    if !branch && !matches!(e, Expr::Literal(..) | Expr::Alias(_)) && constant(e) {
        match evaluated(e, props) {
            // Only an error Spark raises too, named by its class (`[CAST_INVALID_INPUT]`,
            // `[DIVIDE_BY_ZERO]`, …): a function DataFusion means to simplify before it runs may
            // fail when called directly here, which is no failure of the query's.
            Some(Err(error)) if spark_error_class(&error.to_string()) => return Err(error),
            Some(Ok(_)) => return Ok(()),
            // Not evaluable whole here (a function that answers only in a query's rows): its
            // parts may be, and fail (`hour(TIMESTAMP'…') % CAST('Ab' AS DECIMAL(38,18))`).
            _ => {}
        }
    }
    match e {
        Expr::Case(c) => {
            if let Some(operand) = &c.expr {
                check(operand, branch, props)?;
            }
            for (i, (when, then)) in c.when_then_expr.iter().enumerate() {
                check(when, branch || i > 0, props)?;
                check(then, true, props)?;
            }
            if let Some(otherwise) = &c.else_expr {
                check(otherwise, true, props)?;
            }
            Ok(())
        }
        Expr::ScalarFunction(f) => {
            let always = match f.name() {
                "coalesce" | "nvl" | "ifnull" | "if" | "nvl2" | "nanvl" => 1,
                _ => f.args.len(),
            };
            for (i, a) in f.args.iter().enumerate() {
                check(a, branch || i >= always, props)?;
            }
            Ok(())
        }
        // A subquery's plan is checked as a plan of its own (`apply_with_subqueries`).
        Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_) => Ok(()),
        other => {
            let mut result = Ok(());
            other.apply_children(|child| {
                result = check(child, branch, props);
                Ok(if result.is_err() { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
            })?;
            result
        }
    }
}

/// Whether `e` reads no column, no subquery, no aggregate or window, and no volatile function.
fn constant(e: &Expr) -> bool {
    let mut constant = true;
    let _ = e.apply(|x| {
        let stop = match x {
            Expr::Column(_)
            | Expr::OuterReferenceColumn(..)
            | Expr::ScalarSubquery(_)
            | Expr::Exists(_)
            | Expr::InSubquery(_)
            | Expr::AggregateFunction(_)
            | Expr::WindowFunction(_)
            | Expr::Placeholder(_)
            | Expr::ScalarVariable(..)
            | Expr::GroupingSet(_) => true,
            Expr::ScalarFunction(f) => f.func.signature().volatility == Volatility::Volatile,
            _ => false,
        };
        if stop {
            constant = false;
            return Ok(TreeNodeRecursion::Stop);
        }
        Ok(TreeNodeRecursion::Continue)
    });
    constant
}

/// Whether a message names a Spark error class: `[` upper-case letters, digits or `_`, `]`.
fn spark_error_class(message: &str) -> bool {
    message.match_indices('[').any(|(i, _)| {
        let rest = &message[i + 1..];
        let class: String =
            rest.chars().take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_').collect();
        class.len() >= 3 && rest[class.len()..].starts_with(']')
    })
}

#[cfg(test)]
mod tests {
    use super::spark_error_class;

    #[test]
    fn only_errors_named_by_a_spark_class_fail_the_query() {
        assert!(spark_error_class("Execution error: [CAST_INVALID_INPUT] the value 'x' …"));
        assert!(spark_error_class("[DIVIDE_BY_ZERO] division by zero"));
        assert!(!spark_error_class("Execution error: invoke should not be called on a simplified base64 function"));
        assert!(!spark_error_class("a list [1, 2]"));
    }
}
