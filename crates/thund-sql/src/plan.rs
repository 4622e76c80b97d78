//! Planning with Spark's semantics: a parsed query through the analysis rules to a DataFusion
//! plan, and an expression planned alone against a schema.

use datafusion::common::DFSchema;
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;

use crate::error::{Result, SqlError};
use crate::modes::SqlModes;

/// Plans `query` in `ctx`'s session with Spark's semantics (`analysis`): NATURAL joins' keys
/// found, the rules on its syntax tree, DataFusion's planner (resolving names as Spark does), then the plan rules.
/// Every table it reads must be registered in the session.
pub async fn plan_query(ctx: &SessionContext, mut query: sqlparser::ast::Query) -> Result<LogicalPlan> {
    let config = ctx.copied_config();
    let modes = SqlModes::of(config.options());
    crate::analysis::natural_joins::resolve(ctx, &mut query).await.map_err(SqlError::Plan)?;
    crate::analysis::rewrite_query(&mut query, &modes).map_err(SqlError::Plan)?;
    let mut plan = crate::analysis::resolution::plan_case_insensitively(ctx, query)
        .await
        .map_err(|e| SqlError::Plan(describe_plan_error(&e)))?;
    for rule in crate::analysis::plan_rules() {
        plan = rule.analyze(plan, config.options()).map_err(|e| SqlError::Plan(describe_plan_error(&e)))?;
    }
    Ok(plan)
}

/// Plans a parsed expression (an expectation, an AUTO CDC clause) against `schema`, with the
/// spellings queries get.
pub fn plan_expr(
    ctx: &SessionContext,
    expr: &sqlparser::ast::Expr,
    schema: &DFSchema,
) -> datafusion::error::Result<datafusion::logical_expr::Expr> {
    let mut expr = expr.clone();
    crate::analysis::rewrite_expression(&mut expr, &SqlModes::of_session(ctx));
    let expr = sqlparser::ast::ExprWithAlias { expr, alias: None };
    ctx.state().create_logical_expr_from_sql_expr(expr, schema)
}

/// DataFusion's planning errors, phrased for pipeline authors.
pub(crate) fn describe_plan_error(e: &datafusion::error::DataFusionError) -> String {
    let text = e.strip_backtrace();
    if let Some(rest) = text.split("Invalid function '").nth(1) {
        let name = rest.split('\'').next().unwrap_or(rest);
        return format!(
            "function `{name}` is not supported by the native backend (Spark function missing in DataFusion)"
        );
    }
    let text = text.trim_start_matches("Error during planning: ").to_string();
    if text.contains("No field named") {
        // DataFusion's hint (double quotes, a setting of its own) is not how Spark SQL is
        // written: names resolve ignoring case here, and Spark quotes with backticks.
        let mut text = text;
        if let (Some(from), Some(to)) = (text.find("Column names are case sensitive."), text.find("configuration.")) {
            if from < to {
                text.replace_range(from..to + "configuration.".len(), "");
            }
        }
        return text.replace('"', "`").replace("\n\n", "\n");
    }
    text
}

/// Every function Spark lists (`SHOW FUNCTIONS`) under a name a query can call, on any line
/// tested (4.1.4, 4.2.1, 4.3.0), one per line: the differential tests check it against the
/// servers.
pub const SPARK_FUNCTIONS: &str = include_str!("functions/spark_functions.txt");

/// Whether a function called `name` is one the engine runs, one only Spark has, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FunctionKnown {
    /// The engine runs it (or refuses it where its answer would differ from Spark's).
    Engine,
    /// Spark has it; the embedded engine does not.
    SparkOnly,
    /// Neither Spark nor the engine: a Databricks-only function, a typo.
    Unknown,
}

/// The functions `query` calls that the engine does not run, each with whether Spark has it
/// and where its name starts in the query's text (1-based line and column): what planning
/// would refuse as an unknown function, found without planning (for `thund validate`). What a
/// FROM clause calls (`read_files`, `STREAM read_files(…)`, `range`, `explode` in a lateral
/// view) is a source the front end or the planner reads, not a call of this kind.
pub fn unknown_functions(
    ctx: &SessionContext,
    query: &sqlparser::ast::Query,
) -> Vec<(String, FunctionKnown, (u64, u64))> {
    use sqlparser::ast::{Expr, TableFactor, Visit, Visitor};
    struct Calls<'a> {
        engine: &'a dyn Fn(&str) -> bool,
        /// How many FROM-clause calls the visit is inside.
        in_source: usize,
        out: Vec<(String, FunctionKnown, (u64, u64))>,
    }
    impl Visitor for Calls<'_> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, tf: &TableFactor) -> std::ops::ControlFlow<()> {
            self.in_source += usize::from(calls_a_source(tf));
            std::ops::ControlFlow::Continue(())
        }
        fn post_visit_table_factor(&mut self, tf: &TableFactor) -> std::ops::ControlFlow<()> {
            self.in_source -= usize::from(calls_a_source(tf));
            std::ops::ControlFlow::Continue(())
        }
        fn pre_visit_expr(&mut self, e: &Expr) -> std::ops::ControlFlow<()> {
            let Expr::Function(f) = e else { return std::ops::ControlFlow::Continue(()) };
            if self.in_source > 0 {
                return std::ops::ControlFlow::Continue(());
            }
            if let [sqlparser::ast::ObjectNamePart::Identifier(ident)] = f.name.0.as_slice() {
                let name = ident.value.to_ascii_lowercase();
                if !(self.engine)(&name) {
                    let spark = SPARK_FUNCTIONS.lines().any(|l| l == name);
                    let known = if spark { FunctionKnown::SparkOnly } else { FunctionKnown::Unknown };
                    let at = (ident.span.start.line, ident.span.start.column);
                    self.out.push((ident.value.clone(), known, at));
                }
            }
            std::ops::ControlFlow::Continue(())
        }
    }
    let state = ctx.state();
    let engine = |name: &str| {
        crate::functions::lookup(name).is_some()
            || state.scalar_functions().contains_key(name)
            || state.aggregate_functions().contains_key(name)
            || state.window_functions().contains_key(name)
    };
    /// A FROM item that is a call: `read_files(…)`, `STREAM(…)`, `range(…)`.
    fn calls_a_source(tf: &TableFactor) -> bool {
        matches!(
            tf,
            TableFactor::Table { args: Some(_), .. } | TableFactor::Function { .. } | TableFactor::TableFunction { .. }
        )
    }
    let mut calls = Calls { engine: &engine, in_source: 0, out: Vec::new() };
    let _ = query.visit(&mut calls);
    calls.out
}
