//! How a category declares its functions: one row per Spark function, saying how it runs here
//! (DataFusion's builtin, a UDF of the category's, a template over DataFusion's functions, or a
//! refusal) and the rewrites that give Spark's answer — on the parse, where DataFusion spells
//! the call otherwise, and on the plan, where its call would answer otherwise.
//!
//! ```text
//!  Function::spelled("lcase", &[(1, "lower(__a1)")])       a template
//!  Function::udf("mask")                                     the category's UDF
//!  Function::builtin("array_remove").plan(every_match)       DataFusion's, answering as Spark's
//!  Function::refused("version", "it names the engine")       a refusal
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
    /// What runs a call once it is planned.
    pub(crate) runs: Runs,
    /// Spark's spelling of a call as DataFusion's SQL: by argument count, SQL whose `__a1`,
    /// `__a2`, … stand for the call's arguments (substituted as parsed expressions, never as
    /// text). A call of another argument count is left to `parse`.
    pub(crate) templates: &'static [(usize, &'static str)],
    /// The arguments whose integer literals Spark types INT (the planner reads `2024` as a
    /// BIGINT, which these functions refuse, as Spark refuses a BIGINT column in ANSI mode).
    pub(crate) ints: &'static [usize],
    /// A rewrite of a call on the parse that no template covers.
    pub(crate) parse: Option<ParseRewrite>,
    /// Spark's answer where DataFusion's planned call gives another one.
    pub(crate) plan: Option<PlanRewrite>,
}

/// What runs a call once it is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Runs {
    /// DataFusion's or `datafusion-spark`'s function of the same name.
    Builtin,
    /// A function the category registers (its `register`).
    Udf,
    /// Nothing of this name: its templates and parse rewrite spell every call it takes as
    /// others (another call is a missing function, refused).
    Spelled,
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
    const fn new(name: &'static str, runs: Runs) -> Self {
        Function { name, runs, templates: &[], ints: &[], parse: None, plan: None }
    }

    /// DataFusion's function `name`, with what it needs besides.
    pub(crate) const fn builtin(name: &'static str) -> Self {
        Self::new(name, Runs::Builtin)
    }

    /// The category's function `name`.
    pub(crate) const fn udf(name: &'static str) -> Self {
        Self::new(name, Runs::Udf)
    }

    /// `name`, which the parse spells as other calls: by `templates`, and any `parse` added.
    pub(crate) const fn spelled(name: &'static str, templates: &'static [(usize, &'static str)]) -> Self {
        Function { templates, ..Self::new(name, Runs::Spelled) }
    }

    /// `name`, refused when planned, for `why`.
    pub(crate) const fn refused(name: &'static str, why: &'static str) -> Self {
        Self::new(name, Runs::Refused(why))
    }

    /// With `templates` on the parse.
    pub(crate) const fn templates(self, templates: &'static [(usize, &'static str)]) -> Self {
        Function { templates, ..self }
    }

    /// With the integer literals of the arguments at `positions` typed INT.
    pub(crate) const fn ints(self, positions: &'static [usize]) -> Self {
        Function { ints: positions, ..self }
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

/// A count DataFusion types as a BIGINT (signed or not), as Spark's INT: `cardinality`,
/// `regexp_count`, `regexp_instr`.
pub(crate) fn counted_as_int(c: Call, _: &PlanContext) -> Result<Transformed<Expr>> {
    Ok(Transformed::yes(datafusion::logical_expr::cast(c.into_expr(), arrow::datatypes::DataType::Int32)))
}

/// The schema a plan node's expressions are evaluated against: its inputs' fields together.
pub(crate) fn merged_input_schema(node: &datafusion::logical_expr::LogicalPlan) -> DFSchema {
    let mut schema = DFSchema::empty();
    for input in node.inputs() {
        schema.merge(input.schema());
    }
    schema
}
