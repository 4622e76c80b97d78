//! Spark's types of aggregates and window aggregates where DataFusion's differ, part of the plan
//! rule `fidelity::SparkSemantics`: `avg` of a DECIMAL(p,s) a DECIMAL(p+4,s+4) rounded half up
//! (over 28 digits a sum and a count divided as Spark divides them, [`WideAverage`]), a wide
//! DECIMAL `sum` added up in 256 bits with Spark's overflow (`aggregate::decimal_sum`), the ANSI
//! `sum(DISTINCT …)` of BIGINTs, and unsigned counts as BIGINTs or INTs.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, TableReference};
use datafusion::error::Result;
use datafusion::functions_aggregate::average::avg_udaf;
use datafusion::functions_aggregate::count::count_udaf;
use datafusion::logical_expr::expr::{AggregateFunction, ScalarFunction, WindowFunction};
use datafusion::logical_expr::{
    cast, Aggregate, AggregateUDF, Expr, ExprSchemable, LogicalPlan, Projection, WindowFunctionDefinition,
};

use crate::functions::aggregate::decimal_sum::decimal_sum;

/// Spark's types of window functions where DataFusion's differ, cast in a projection above the
/// window under its names: ranks are INTs (DataFusion's are unsigned), `avg` of a DECIMAL(p,s) is
/// a DECIMAL(p+4,s+4) rounded half up and `sum` of one NULL or an error on an overflow, as for an
/// aggregate (`aggregate_types`).
pub(super) fn window_types(node: LogicalPlan, ansi: bool) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Window(w) = node else { return Ok(Transformed::no(node)) };
    let input = w.input.schema().clone();
    let mut averages = Vec::new();
    // Whether a DECIMAL sum is Spark's now (its own type, no cast above).
    let mut retyped = false;
    let mut wide_averages = Vec::new();
    let mut window_expr = Vec::with_capacity(w.window_expr.len());
    for e in &w.window_expr {
        let function = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            other => other,
        };
        let decimal = match function {
            Expr::WindowFunction(f) => match (&f.fun, f.params.args.as_slice()) {
                (WindowFunctionDefinition::AggregateUDF(a), [arg]) if matches!(a.name(), "avg" | "sum") => {
                    match arg.get_type(&input)? {
                        DataType::Decimal128(p, s) => Some((f, a, p, s)),
                        _ => None,
                    }
                }
                _ => None,
            },
            _ => None,
        };
        let Some((f, a, p, s)) = decimal else {
            window_expr.push(e.clone());
            continue;
        };
        if a.name() == "sum" && p <= 28 {
            window_expr.push(e.clone());
            continue;
        }
        if a.name() == "sum" {
            // Added up in 256 bits, as an aggregate's (`wide_decimal_sum`).
            let (qualifier, name) = e.qualified_name();
            let params = f.params.clone();
            let fun = WindowFunctionDefinition::AggregateUDF(decimal_sum(ansi, true));
            let sum = Expr::WindowFunction(Box::new(WindowFunction { fun, params }));
            window_expr.push(sum.alias_qualified(qualifier, name));
            retyped = true;
            continue;
        }
        let (qualifier, name) = e.qualified_name();
        if p > 28 {
            // A sum and a count over the window, divided above (`decimal_avg`).
            let average = WideAverage::new(wide_averages.len(), qualifier, name, p, s);
            for (func, arg, name) in average.parts(&f.params.args[0], ansi, true) {
                let mut params = f.params.clone();
                params.args = vec![arg];
                let fun = WindowFunctionDefinition::AggregateUDF(func);
                window_expr.push(Expr::WindowFunction(Box::new(WindowFunction { fun, params })).alias(name));
            }
            wide_averages.push(average);
            retyped = true;
            continue;
        }
        let mut params = f.params.clone();
        params.args = vec![cast(params.args[0].clone(), DataType::Decimal128(p + 1, s + 1))];
        let avg = Expr::WindowFunction(Box::new(WindowFunction {
            fun: WindowFunctionDefinition::AggregateUDF(avg_udaf()),
            params,
        }));
        window_expr.push(avg.alias_qualified(qualifier.clone(), name.clone()));
        averages.push((qualifier, name, DataType::Decimal128(p + 4, s + 4)));
    }
    let node = if averages.is_empty() && !retyped {
        LogicalPlan::Window(w)
    } else {
        let (window_expr, repeats) = without_repeats(window_expr);
        let mut window = LogicalPlan::Window(datafusion::logical_expr::Window::try_new(window_expr, w.input)?);
        if !repeats.is_empty() {
            let columns = window.schema().iter().map(Expr::from).chain(repeats);
            window = LogicalPlan::Projection(Projection::try_new(columns.collect(), Arc::new(window))?);
        }
        WideAverage::divided(window, &wide_averages, ansi)?
    };
    if averages.is_empty() && !node.schema().fields().iter().any(|f| f.data_type() == &DataType::UInt64) {
        return Ok(Transformed::yes(node));
    }
    let spark_type = |_: usize, q: Option<&TableReference>, f: &Field| {
        if f.data_type() == &DataType::UInt64 {
            return Some(DataType::Int32);
        }
        averages.iter().find(|(wq, wn, _)| wq.as_ref() == q && wn == f.name()).map(|(_, _, t)| t.clone())
    };
    super::common_types::cast_columns(Arc::new(node), spark_type).map(Transformed::yes)
}

/// `exprs` (a window's) with each repeat of an expression under another name (a wide average's
/// sum beside the query's own `sum` over the same window) left out — DataFusion's planner plans
/// one column per window expression and fails on the second — and, for each repeat, the column
/// of the first under the repeat's name.
fn without_repeats(exprs: Vec<Expr>) -> (Vec<Expr>, Vec<Expr>) {
    let mut kept: Vec<Expr> = Vec::with_capacity(exprs.len());
    let mut repeats = Vec::new();
    for e in exprs {
        let unaliased = |e: &Expr| e.clone().unalias();
        match kept.iter().find(|k| unaliased(k) == unaliased(&e)) {
            Some(first) => {
                let (qualifier, name) = e.qualified_name();
                let (first_qualifier, first_name) = first.qualified_name();
                let first = Expr::Column(datafusion::common::Column::new(first_qualifier, first_name));
                repeats.push(first.alias_qualified(qualifier, name));
            }
            None => kept.push(e),
        }
    }
    (kept, repeats)
}

/// `sum` of a DECIMAL(p,s) is a DECIMAL(p+10,s) (at most 38 digits) on Spark too, but one whose
/// digits do not fit is NULL, or fails in ANSI mode; DataFusion's adds in 128 bits and wraps
/// around. A sum of a DECIMAL of more than 28 digits is added up in 256 bits by
/// `decimal_sum`, which answers Spark's type, NULL or an error in the aggregate itself (where a
/// HAVING cannot hide a group's overflow, as it could from a cast above). The sum, for such a sum.
fn wide_decimal_sum(f: &AggregateFunction, input: &DFSchema, ansi: bool) -> Result<Option<AggregateFunction>> {
    let [arg] = f.params.args.as_slice() else { return Ok(None) };
    let (DataType::Decimal128(p, _), "sum") = (arg.get_type(input)?, f.func.name()) else { return Ok(None) };
    // Below 29 digits the sum's 38 digits hold the sum of 10^10 rows: it would take more rows
    // than a table holds to overflow, and the sum stays a DECIMAL of 128 bits.
    if p <= 28 {
        return Ok(None);
    }
    Ok(Some(AggregateFunction { func: decimal_sum(ansi, false), params: f.params.clone() }))
}

/// An `avg` of a DECIMAL(p,s) wider than 28 digits, taken as a sum and a count (columns of
/// these names) and divided in a projection above (`decimal_avg`) under the average's name.
struct WideAverage {
    qualifier: Option<TableReference>,
    name: String,
    sum: String,
    count: String,
    /// The average's type.
    to: DataType,
}

impl WideAverage {
    fn new(i: usize, qualifier: Option<TableReference>, name: String, p: u8, s: i8) -> Self {
        let to = crate::functions::aggregate::decimal_avg::average_type(p, s);
        let (sum, count) = (format!("__thund_avg_sum_{i}"), format!("__thund_avg_count_{i}"));
        Self { qualifier, name, sum, count, to }
    }

    /// The aggregates taken for it (of the average's argument `arg`): each function, its
    /// argument and its column's name — the sum (in 256 bits, `window` for a window's)
    /// and the count.
    fn parts(&self, arg: &Expr, ansi: bool, window: bool) -> [(Arc<AggregateUDF>, Expr, &str); 2] {
        [(decimal_sum(ansi, window), arg.clone(), self.sum.as_str()), (count_udaf(), arg.clone(), self.count.as_str())]
    }

    /// `plan` (an aggregate or a window with the averages' sums and counts) with each pair
    /// divided into its average, every other column as it is.
    fn divided(plan: LogicalPlan, averages: &[WideAverage], ansi: bool) -> Result<LogicalPlan> {
        if averages.is_empty() {
            return Ok(plan);
        }
        let unqualified = |name: &str| Expr::Column(datafusion::common::Column::new_unqualified(name));
        let exprs = plan
            .schema()
            .iter()
            .filter_map(|(q, f)| {
                let ours = q.is_none();
                if let Some(a) = averages.iter().find(|a| ours && f.name() == &a.sum) {
                    let udf = crate::functions::aggregate::decimal_avg::quotient(a.to.clone(), ansi);
                    let average = Expr::ScalarFunction(ScalarFunction::new_udf(
                        udf,
                        vec![unqualified(&a.sum), unqualified(&a.count)],
                    ));
                    return Some(average.alias_qualified(a.qualifier.clone(), &a.name));
                }
                if averages.iter().any(|a| ours && f.name() == &a.count) {
                    return None;
                }
                Some(Expr::from((q, f)))
            })
            .collect();
        Ok(LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(plan))?))
    }
}

/// Spark's types of aggregates where DataFusion's differ, cast in a projection above the
/// aggregate under the aggregate's names:
/// - `avg` of a DECIMAL(p,s) is a DECIMAL(p+4,s+4) rounded half up (the Spark function library
///   here answers a DOUBLE; DataFusion's own average truncates). The average is taken by
///   DataFusion's over the values scaled up by one digit, and the cast rounds that digit away
///   (Arrow's cast to a smaller scale rounds half up). Over 28 digits DataFusion's 128-bit sum of
///   those could wrap (and over 33 the type would not fit): the average is a sum and a count
///   divided above the aggregate as Spark divides them ([`WideAverage`]).
/// - Spark has no unsigned types: an unsigned count (`regr_count`) is a BIGINT.
/// - In ANSI mode a `sum(DISTINCT …)` of BIGINTs that overflows fails (DataFusion's wraps, as
///   Spark's does without ANSI mode): it is taken over DECIMAL(38,0)s, and the cast back to a
///   BIGINT fails on an overflow.
pub(super) fn aggregate_types(node: LogicalPlan, ansi: bool) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Aggregate(agg) = node else { return Ok(Transformed::no(node)) };
    let input = agg.input.schema().clone();
    // The outputs to cast: their names and Spark's type.
    let mut spark_types = Vec::new();
    // Whether a DECIMAL sum is Spark's now (its own type, no cast above).
    let mut retyped = false;
    let mut wide_averages = Vec::new();
    let mut aggr_expr = Vec::with_capacity(agg.aggr_expr.len());
    for e in &agg.aggr_expr {
        let function = match e {
            Expr::Alias(a) => a.expr.as_ref(),
            other => other,
        };
        let Expr::AggregateFunction(f) = function else {
            aggr_expr.push(e.clone());
            continue;
        };
        let (qualifier, name) = e.qualified_name();
        // (`grouping(…)` stays an INT, Spark's is a TINYINT: the analyzer resolves it only in
        // the projection right above its aggregate, where a cast cannot go.)
        if e.get_type(&input)? == DataType::UInt64 {
            spark_types.push((qualifier.clone(), name.clone(), DataType::Int64));
        }
        // (A `sum` that is not DISTINCT is `sums::ansi_sum` already.)
        if let ([arg], true, "sum", true) = (f.params.args.as_slice(), ansi, f.func.name(), f.params.distinct) {
            if arg.get_type(&input)? == DataType::Int64 {
                let mut params = f.params.clone();
                params.args = vec![cast(arg.clone(), DataType::Decimal128(38, 0))];
                let sum = Expr::AggregateFunction(AggregateFunction { func: Arc::clone(&f.func), params });
                aggr_expr.push(sum.alias_qualified(qualifier.clone(), name.clone()));
                spark_types.push((qualifier, name, DataType::Int64));
                continue;
            }
        }
        // A wide DECIMAL sum is added up in 256 bits (`wide_decimal_sum`).
        if let Some(sum) = wide_decimal_sum(f, &input, ansi)? {
            aggr_expr.push(Expr::AggregateFunction(sum).alias_qualified(qualifier, name));
            retyped = true;
            continue;
        }
        let decimal = match f.params.args.as_slice() {
            [arg] if f.func.name() == "avg" => match arg.get_type(&input)? {
                DataType::Decimal128(p, s) => Some((p, s)),
                _ => None,
            },
            _ => None,
        };
        let Some((p, s)) = decimal else {
            aggr_expr.push(e.clone());
            continue;
        };
        if p > 28 {
            // A sum and a count, divided above (`decimal_avg`).
            let average = WideAverage::new(wide_averages.len(), qualifier, name, p, s);
            for (func, arg, name) in average.parts(&f.params.args[0], ansi, false) {
                let mut params = f.params.clone();
                params.args = vec![arg];
                aggr_expr.push(Expr::AggregateFunction(AggregateFunction { func, params }).alias(name));
            }
            wide_averages.push(average);
            retyped = true;
            continue;
        }
        let mut params = f.params.clone();
        params.args = vec![cast(params.args[0].clone(), DataType::Decimal128(p + 1, s + 1))];
        let avg = Expr::AggregateFunction(AggregateFunction { func: avg_udaf(), params });
        aggr_expr.push(avg.alias_qualified(qualifier.clone(), name.clone()));
        spark_types.push((qualifier, name, DataType::Decimal128(p + 4, s + 4)));
    }
    if spark_types.is_empty() && !retyped {
        return Ok(Transformed::no(LogicalPlan::Aggregate(agg)));
    }
    let agg = LogicalPlan::Aggregate(Aggregate::try_new(agg.input, agg.group_expr, aggr_expr)?);
    let agg = WideAverage::divided(agg, &wide_averages, ansi)?;
    if spark_types.is_empty() {
        return Ok(Transformed::yes(agg));
    }
    let spark_type = |_: usize, q: Option<&TableReference>, f: &Field| {
        spark_types.iter().find(|(wq, wn, _)| wq.as_ref() == q && wn == f.name()).map(|(_, _, t)| t.clone())
    };
    super::common_types::cast_columns(Arc::new(agg), spark_type).map(Transformed::yes)
}
