//! How a category declares its functions: one row per Spark function, saying how it runs here
//! (DataFusion's builtin, a UDF of the category's, a template over DataFusion's functions, or a
//! refusal) and the rewrites that give Spark's answer — on the parse, where DataFusion spells
//! the call otherwise, and on the plan, where its call would answer otherwise.
//!
//! ```text
//!  Function::template("lcase", &[(1, "lower(__a1)")])
//!  Function::udf("mask")
//!  Function::builtin("array_remove").plan(remove_every_match)
//!  Function::refused("version", "it names the engine")
//! ```
//!
//! A category's `FUNCTIONS` table is its one declaration: the registry (`functions`) gathers the
//! tables, the analysis rules look a call up by name, and `functions::tests` checks that no name
//! has two homes and that every UDF a table names is registered. A function with nothing to
//! declare (DataFusion's or `datafusion-spark`'s builtin gives Spark's answer) has no row.

use std::sync::Arc;

use datafusion::common::tree_node::Transformed;
use datafusion::common::DFSchema;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{Expr, ScalarUDF};

/// One Spark function as this engine runs it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Function {
    /// Spark's name, lower case (or, for Spark syntax DataFusion plans as a call, the call's
    /// name: `array_element` is a subscript `a[i]`).
    pub(crate) name: &'static str,
    /// How a call runs.
    pub(crate) runs: Runs,
    /// Spark's spelling as DataFusion reads it, applied to a call on the parse when the
    /// function has no template of the call's argument count.
    pub(crate) parse: Option<ParseRewrite>,
    /// Spark's answer where DataFusion's planned call gives another one.
    pub(crate) plan: Option<PlanRewrite>,
}

/// How a call runs.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Runs {
    /// DataFusion's or `datafusion-spark`'s function of the same name.
    Builtin,
    /// A function the category registers (its `register`).
    Udf,
    /// Spark's spelling of an expression DataFusion has: SQL by argument count, whose `__a1`,
    /// `__a2`, … stand for the call's arguments (substituted as parsed expressions, never as
    /// text). Another argument count is left as written (a missing function, refused).
    Template(&'static [(usize, &'static str)]),
    /// Refused when planned: the answer would differ from Spark's, for this reason.
    Refused(&'static str),
}

/// A rewrite of a call on the parse: `None` leaves it as written.
pub(crate) type ParseRewrite = fn(&sqlparser::ast::Expr) -> Option<sqlparser::ast::Expr>;

/// A rewrite of a planned call, given its context: `Transformed::no` of the call as it was
/// leaves it alone, an error refuses the query.
pub(crate) type PlanRewrite = fn(Call, &PlanContext) -> Result<Transformed<Expr>>;

/// A planned call of a scalar function.
pub(crate) struct Call {
    /// The function DataFusion planned.
    pub(crate) func: Arc<ScalarUDF>,
    /// Its arguments.
    pub(crate) args: Vec<Expr>,
}

impl Call {
    /// The function's name as planned.
    pub(crate) fn name(&self) -> &str {
        self.func.name()
    }

    /// The call as it was.
    pub(crate) fn unchanged(self) -> Result<Transformed<Expr>> {
        Ok(Transformed::no(self.into_expr()))
    }

    /// The call as an expression.
    pub(crate) fn into_expr(self) -> Expr {
        call(self.func, self.args)
    }
}

/// What a plan rewrite knows besides the call.
pub(crate) struct PlanContext<'a> {
    /// The fields the call's arguments are evaluated against.
    pub(crate) schema: &'a DFSchema,
    /// Spark's ANSI mode.
    pub(crate) ansi: bool,
    /// The analysis rules' rewrite of one expression, for a rewrite whose answer is another
    /// expression those rules must see (`mod(a, b)` is `a % b`, with the operator's rules).
    pub(crate) again: &'a dyn Fn(Expr) -> Result<Transformed<Expr>>,
}

/// The expression `func(args…)`.
pub(crate) fn call(func: Arc<ScalarUDF>, args: Vec<Expr>) -> Expr {
    Expr::ScalarFunction(ScalarFunction { func, args })
}

/// The refusal of `function`, whose answer here would differ from Spark's for `why`.
pub(crate) fn refused(function: &str, why: &str) -> DataFusionError {
    DataFusionError::Plan(format!(
        "`{function}` answers differently here than on Spark ({why}): it runs on the Spark backend"
    ))
}

impl Function {
    /// DataFusion's function `name`, with a rewrite to add.
    pub(crate) const fn builtin(name: &'static str) -> Self {
        Function { name, runs: Runs::Builtin, parse: None, plan: None }
    }

    /// The category's UDF `name`.
    pub(crate) const fn udf(name: &'static str) -> Self {
        Function { name, runs: Runs::Udf, parse: None, plan: None }
    }

    /// `name` as templates over DataFusion's functions, by argument count.
    pub(crate) const fn template(name: &'static str, forms: &'static [(usize, &'static str)]) -> Self {
        Function { name, runs: Runs::Template(forms), parse: None, plan: None }
    }

    /// `name` refused when planned, for `why`.
    pub(crate) const fn refused(name: &'static str, why: &'static str) -> Self {
        Function { name, runs: Runs::Refused(why), parse: None, plan: None }
    }

    /// With `rewrite` on the parse.
    pub(crate) const fn parse(self, rewrite: ParseRewrite) -> Self {
        Function { parse: Some(rewrite), ..self }
    }

    /// With `rewrite` once planned.
    pub(crate) const fn plan(self, rewrite: PlanRewrite) -> Self {
        Function { plan: Some(rewrite), ..self }
    }

    /// The planned call with Spark's answer: refused, rewritten, or as it was.
    pub(crate) fn planned(&self, call: Call, cx: &PlanContext) -> Result<Transformed<Expr>> {
        if let Runs::Refused(why) = self.runs {
            return Err(refused(call.name(), why));
        }
        match self.plan {
            Some(rewrite) => rewrite(call, cx),
            None => call.unchanged(),
        }
    }
}
