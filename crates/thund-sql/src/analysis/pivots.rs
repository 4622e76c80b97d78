//! Spark's `PIVOT` and `UNPIVOT` in a FROM clause, which DataFusion's planner does not read.
//!
//! `t PIVOT (agg [AS a], … FOR col IN (v1 [AS x1], …))` groups `t` by every column that neither
//! the aggregates nor `col` read, and gives one column per value (and per aggregate when there
//! are several: `x1_a`). Spark computes it one of two ways (`ResolvePivot`), and they differ
//! where no row of a group holds the value:
//! - when every aggregate answers a number or a boolean, it aggregates per (group, value) and
//!   picks each value's answer, so such a cell is NULL, a `count` included;
//! - otherwise each aggregate reads only the rows holding the value (its arguments are NULL
//!   elsewhere; `first` / `last` then skip NULLs), so such a cell is the aggregate of no rows
//!   (`count` 0, `collect_list` `[]`).
//!
//! Both are written here as aggregates with a `FILTER` on `col <=> CAST(v AS type of col)`, the
//! first under `CASE WHEN count(*) FILTER (…) > 0`. A column's name is the value's alias, or the
//! value cast to text as Spark writes it (`{a, x}` for a tuple, `null`), which the query rule
//! [`name_rule`] writes as an alias while the query is as written.
//!
//! `t UNPIVOT [INCLUDE | EXCLUDE NULLS] (v FOR name IN (c1 [AS n1], …))` gives, per row of `t`
//! and per column `ci`, the columns no `ci` is, then `name` (`ni`, or the column as written)
//! and `v` (`ci`'s value): a UNION ALL of one projection per column, without the rows whose
//! values are all NULL unless `INCLUDE NULLS`. Several values unpivot tuples of columns (`(a, b)
//! AS x`, named `a_b` without an alias). The values must share a type Spark can widen to:
//! numbers, or one type; otherwise the query is refused with Spark's error.

use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_datafusion_err, plan_err, Column, DFSchema, Result};
use datafusion::logical_expr::expr::{AggregateFunction, Case};
use datafusion::logical_expr::planner::{PlannedRelation, RelationPlanner, RelationPlannerContext, RelationPlanning};
use datafusion::logical_expr::utils::find_aggregate_exprs;
use datafusion::logical_expr::{binary_expr, lit, Expr, ExprSchemable, LogicalPlan, LogicalPlanBuilder, Operator};
use sqlparser::ast::{
    Expr as SqlExpr, ExprWithAlias, Ident, PivotValueSource, Query, TableFactor, UnaryOperator, Value, VisitMut,
    VisitorMut,
};

use crate::modes::SqlModes;

/// The query rule: gives every pivot value, every aggregate of a pivot with several, and every
/// unpivoted column the name Spark gives its column, as an alias, while the query is as written
/// (later rules rewrite expressions); refuses what Spark refuses before planning.
pub(crate) fn name_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Names(Option<String>);
    impl VisitorMut for Names {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            match whole_from_clauses(&query.body) {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    self.0 = Some(e);
                    ControlFlow::Break(())
                }
            }
        }
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            let named = match factor {
                TableFactor::Pivot { alias: Some(sqlparser::ast::TableAlias { name: alias, .. }), .. } => Err(format!(
                    "Spark's PIVOT takes no alias after it (`… PIVOT (…) AS {alias}` is a syntax error there): name \
                     the table before it (`FROM t AS {alias} PIVOT (…)`)"
                )),
                TableFactor::Pivot { aggregate_functions, value_source, .. } => {
                    name_pivot(aggregate_functions, value_source)
                }
                TableFactor::Unpivot { columns, .. } => name_unpivot(columns),
                _ => Ok(()),
            };
            match named {
                Ok(()) => ControlFlow::Continue(()),
                Err(e) => {
                    self.0 = Some(e);
                    ControlFlow::Break(())
                }
            }
        }
    }
    let mut names = Names(None);
    let _ = query.visit(&mut names);
    names.0.map_or(Ok(()), Err)
}

/// Refuses a PIVOT or UNPIVOT in a FROM clause of several relations: Spark's grammar applies it
/// to the whole clause (`FROM a JOIN b PIVOT (…)` pivots the join, `FROM a, b PIVOT` the
/// product), sqlparser's to the relation it follows.
fn whole_from_clauses(body: &sqlparser::ast::SetExpr) -> Result<(), String> {
    use sqlparser::ast::SetExpr;
    match body {
        SetExpr::Select(select) => {
            let relations: Vec<&TableFactor> = select
                .from
                .iter()
                .flat_map(|f| std::iter::once(&f.relation).chain(f.joins.iter().map(|j| &j.relation)))
                .collect();
            let pivoted =
                relations.iter().any(|r| matches!(r, TableFactor::Pivot { .. } | TableFactor::Unpivot { .. }));
            match pivoted && relations.len() > 1 {
                true => Err("Spark applies PIVOT and UNPIVOT to the whole FROM clause, joins included, which reads \
                     differently here: pivot a subquery (`FROM (SELECT … FROM a JOIN b …) PIVOT (…)`)"
                    .into()),
                false => Ok(()),
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            whole_from_clauses(left)?;
            whole_from_clauses(right)
        }
        _ => Ok(()),
    }
}

fn name_pivot(aggregates: &mut [ExprWithAlias], values: &mut PivotValueSource) -> Result<(), String> {
    let PivotValueSource::List(values) = values else {
        return Err("PIVOT reads a list of values here, as Spark does: `IN ('a', 'b')`".into());
    };
    for value in values.iter_mut() {
        if value.alias.is_some() {
            continue;
        }
        let Some(name) = value_name(&value.expr) else {
            return Err(match is_literal(&value.expr) {
                true => format!(
                    "the PIVOT value `{}` would name its column differently here than on Spark: give it an alias \
                     (`{} AS name`)",
                    value.expr, value.expr
                ),
                false => format!(
                    "[NON_LITERAL_PIVOT_VALUES] Literal expressions required for pivot values, found `{}`",
                    value.expr
                ),
            });
        };
        value.alias = Some(Ident::with_quote('`', name));
    }
    let mut seen = std::collections::HashSet::new();
    for value in values.iter() {
        let name = value.alias.as_ref().map(|a| a.value.clone()).unwrap_or_default();
        if !seen.insert(name.clone()) {
            // Spark plans two columns of one name and fails when it runs.
            return Err(format!("PIVOT names two columns `{name}`: each value must be given once"));
        }
    }
    if aggregates.len() > 1 {
        for aggregate in aggregates.iter_mut().filter(|a| a.alias.is_none()) {
            let Some(name) = crate::analysis::names::sql(&aggregate.expr) else {
                return Err(format!(
                    "the PIVOT aggregate `{}` would name its columns differently here than on Spark: give it an \
                     alias (`{} AS name`)",
                    aggregate.expr, aggregate.expr
                ));
            };
            aggregate.alias = Some(Ident::with_quote('`', name));
        }
    }
    Ok(())
}

/// A pivot value cast to text as Spark casts it, where that is known here.
fn value_name(e: &SqlExpr) -> Option<String> {
    match e {
        SqlExpr::Value(v) if v.value == Value::Null => Some("null".into()),
        SqlExpr::Value(v) => match &v.value {
            Value::Number(..) | Value::SingleQuotedString(_) | Value::DoubleQuotedString(_) | Value::Boolean(_) => {
                crate::analysis::names::sql(e)
            }
            _ => None,
        },
        SqlExpr::UnaryOp { op: UnaryOperator::Minus, expr } if matches!(**expr, SqlExpr::Value(_)) => {
            let name = value_name(expr)?;
            name.chars().next().is_some_and(|c| c.is_ascii_digit()).then(|| format!("-{name}"))
        }
        SqlExpr::TypedString(t) if t.data_type == sqlparser::ast::DataType::Date => match &t.value.value {
            Value::SingleQuotedString(s) if s.len() == 10 => Some(s.clone()),
            _ => None,
        },
        SqlExpr::Tuple(items) => {
            let names: Option<Vec<String>> = items.iter().map(value_name).collect();
            Some(format!("{{{}}}", names?.join(", ")))
        }
        SqlExpr::Nested(inner) => value_name(inner),
        _ => None,
    }
}

/// Whether `e` is a literal or a tuple of them (what Spark takes as a pivot value).
fn is_literal(e: &SqlExpr) -> bool {
    match e {
        SqlExpr::Value(_) | SqlExpr::TypedString(_) => true,
        SqlExpr::UnaryOp { expr, .. } | SqlExpr::Nested(expr) => is_literal(expr),
        SqlExpr::Tuple(items) => items.iter().all(is_literal),
        SqlExpr::Cast { expr, .. } => is_literal(expr),
        _ => false,
    }
}

fn name_unpivot(columns: &mut [ExprWithAlias]) -> Result<(), String> {
    for column in columns.iter_mut().filter(|c| c.alias.is_none()) {
        let name = match &column.expr {
            SqlExpr::Tuple(items) => items.iter().map(column_name).collect::<Option<Vec<_>>>().map(|n| n.join("_")),
            one => column_name(one),
        };
        let Some(name) = name else {
            return Err(format!("UNPIVOT reads columns, and `{}` is not one", column.expr));
        };
        column.alias = Some(Ident::with_quote('`', name));
    }
    Ok(())
}

/// A column as written, without its table (Spark's name for an unpivoted column).
fn column_name(e: &SqlExpr) -> Option<String> {
    match e {
        SqlExpr::Identifier(i) => Some(i.value.clone()),
        SqlExpr::CompoundIdentifier(parts) => parts.last().map(|i| i.value.clone()),
        _ => None,
    }
}

/// Plans `PIVOT` and `UNPIVOT` table factors (see the module); DataFusion plans the others.
#[derive(Debug)]
pub(crate) struct PivotPlanner;

impl RelationPlanner for PivotPlanner {
    fn plan_relation(&self, relation: TableFactor, cx: &mut dyn RelationPlannerContext) -> Result<RelationPlanning> {
        match relation {
            TableFactor::Pivot { table, aggregate_functions, value_column, value_source, default_on_null, alias } => {
                if default_on_null.is_some() {
                    return plan_err!("PIVOT … DEFAULT ON NULL is not Spark SQL");
                }
                let PivotValueSource::List(values) = value_source else {
                    return plan_err!("PIVOT reads a list of values here, as Spark does: `IN ('a', 'b')`");
                };
                let input = cx.plan(*table)?;
                let plan = pivot(cx, input, &aggregate_functions, &value_column, &values)?;
                Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(plan, alias))))
            }
            TableFactor::Unpivot { table, value, null_inclusion, name, columns, alias } => {
                let input = cx.plan(*table)?;
                let include_nulls = matches!(null_inclusion, Some(sqlparser::ast::NullInclusion::IncludeNulls));
                let plan = unpivot(cx, input, &value, &name, &columns, include_nulls)?;
                Ok(RelationPlanning::Planned(Box::new(PlannedRelation::new(plan, alias))))
            }
            other => Ok(RelationPlanning::Original(Box::new(other))),
        }
    }
}

fn pivot(
    cx: &mut dyn RelationPlannerContext,
    input: LogicalPlan,
    aggregates: &[ExprWithAlias],
    pivot_columns: &[SqlExpr],
    values: &[ExprWithAlias],
) -> Result<LogicalPlan> {
    let schema = Arc::clone(input.schema());
    let keys =
        pivot_columns.iter().map(|c| cx.sql_expr_to_logical_expr(c.clone(), &schema)).collect::<Result<Vec<_>>>()?;
    let mut planned = Vec::with_capacity(aggregates.len());
    for aggregate in aggregates {
        let expr = cx.sql_expr_to_logical_expr(aggregate.expr.clone(), &schema)?;
        if find_aggregate_exprs(std::iter::once(&expr)).is_empty() {
            return plan_err!(
                "Aggregate expression required for pivot, but `{}` did not appear in any aggregate function",
                aggregate.expr
            );
        }
        planned.push(expr);
    }
    // Spark groups by every column neither the aggregates nor the pivot columns read.
    let groups = unread(&schema, keys.iter().chain(&planned));

    let key_types = keys.iter().map(|k| k.get_type(&schema)).collect::<Result<Vec<_>>>()?;
    // Spark's two ways (see the module): per (group, value) when every aggregate is a number.
    let per_group_and_value =
        planned.iter().map(|e| e.get_type(&schema)).collect::<Result<Vec<_>>>()?.iter().all(|t| {
            t.is_integer() || matches!(t, arrow::datatypes::DataType::Boolean) || t.is_floating() || t.is_decimal()
        });
    let count = cx.context_provider().get_aggregate_meta("count").ok_or_else(|| plan_datafusion_err!("no count"))?;
    let mut cells = Vec::new();
    for value in values {
        let literal = cx.sql_expr_to_logical_expr(value.expr.clone(), &DFSchema::empty())?;
        let parts = match (&value.expr, keys.len()) {
            (_, 1) => vec![literal],
            (SqlExpr::Tuple(_), n) => match literal {
                Expr::ScalarFunction(f) if f.args.len() == n => f.args,
                _ => return plan_err!("the PIVOT value `{}` is not a tuple of {n} values", value.expr),
            },
            (_, n) => return plan_err!("the PIVOT value `{}` is not a tuple of {n} values", value.expr),
        };
        if parts.len() != keys.len() {
            return plan_err!("the PIVOT value `{}` is not a tuple of {} values", value.expr, keys.len());
        }
        let holds = keys
            .iter()
            .zip(parts)
            .zip(&key_types)
            .map(|((key, part), t)| {
                Ok(binary_expr(key.clone(), Operator::IsNotDistinctFrom, part.cast_to(t, &DFSchema::empty())?))
            })
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .reduce(Expr::and)
            .ok_or_else(|| plan_datafusion_err!("PIVOT without a column"))?;
        let value_name = value.alias.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| value.expr.to_string());
        for (aggregate, expr) in aggregates.iter().zip(&planned) {
            let cell = filtered(expr.clone(), &holds, !per_group_and_value)?;
            let cell = match per_group_and_value {
                true => {
                    let rows = Expr::AggregateFunction(AggregateFunction::new_udf(
                        Arc::clone(&count),
                        vec![lit(1)],
                        false,
                        Some(Box::new(holds.clone())),
                        vec![],
                        None,
                    ));
                    Expr::Case(Case::new(None, vec![(Box::new(rows.gt(lit(0i64))), Box::new(cell))], None))
                }
                false => cell,
            };
            let name = match (aggregates.len(), &aggregate.alias) {
                (1, _) => value_name.clone(),
                (_, Some(alias)) => format!("{value_name}_{}", alias.value),
                (_, None) => format!("{value_name}_{}", aggregate.expr),
            };
            cells.push(cell.alias(name));
        }
    }
    let aggregate_calls = find_aggregate_exprs(cells.iter());
    let grouped = LogicalPlanBuilder::from(input).aggregate(groups.clone(), aggregate_calls.clone())?.build()?;
    // The cells read the aggregates' columns; the groups keep their qualified names.
    let mut output = groups;
    for cell in cells {
        output.push(
            cell.transform_down(|e| match aggregate_calls.contains(&e) {
                true => Ok(Transformed::yes(Expr::Column(Column::from_name(e.schema_name().to_string())))),
                false => Ok(Transformed::no(e)),
            })?
            .data,
        );
    }
    LogicalPlanBuilder::from(grouped).project(output)?.build()
}

/// The columns of `schema` that none of `exprs` reads, in order: PIVOT's implicit groups, the
/// columns UNPIVOT keeps.
fn unread<'a>(schema: &DFSchema, exprs: impl Iterator<Item = &'a Expr>) -> Vec<Expr> {
    let read: std::collections::HashSet<&Column> = exprs.flat_map(|e| e.column_refs()).collect();
    schema
        .iter()
        .map(|(qualifier, field)| Column::new(qualifier.cloned(), field.name()))
        .filter(|c| !read.contains(c))
        .map(Expr::Column)
        .collect()
}

/// `expr` with every aggregate in it reading only the rows where `holds` (and, read as Spark
/// reads an aggregate's arguments when it pivots the second way, `first`/`last` skipping NULLs).
fn filtered(expr: Expr, holds: &Expr, skip_nulls: bool) -> Result<Expr> {
    expr.transform_down(|e| match e {
        Expr::AggregateFunction(mut call) => {
            let mut condition = holds.clone();
            let name = call.func.name().to_ascii_lowercase();
            if skip_nulls {
                if ["first", "first_value", "last", "last_value"].contains(&name.as_str()) {
                    if let Some(arg) = call.params.args.first() {
                        condition = condition.and(arg.clone().is_not_null());
                    }
                } else if name == "any_value" {
                    return plan_err!("`any_value` in a PIVOT answers differently here than on Spark");
                }
            }
            call.params.filter = Some(Box::new(match call.params.filter.take() {
                Some(own) => condition.and(*own),
                None => condition,
            }));
            Ok(Transformed::new(
                Expr::AggregateFunction(call),
                true,
                datafusion::common::tree_node::TreeNodeRecursion::Jump,
            ))
        }
        other => Ok(Transformed::no(other)),
    })
    .map(|t| t.data)
}

fn unpivot(
    cx: &mut dyn RelationPlannerContext,
    input: LogicalPlan,
    value: &SqlExpr,
    name: &Ident,
    columns: &[ExprWithAlias],
    include_nulls: bool,
) -> Result<LogicalPlan> {
    let schema = Arc::clone(input.schema());
    let value_names: Vec<String> = match value {
        SqlExpr::Tuple(items) => items.iter().map(|i| column_name(i).unwrap_or_else(|| i.to_string())).collect(),
        one => vec![column_name(one).unwrap_or_else(|| one.to_string())],
    };
    let mut rows: Vec<(String, Vec<Expr>)> = Vec::with_capacity(columns.len());
    for column in columns {
        let exprs = match &column.expr {
            SqlExpr::Tuple(items) => items.clone(),
            one => vec![one.clone()],
        };
        if exprs.len() != value_names.len() {
            return plan_err!(
                "[UNPIVOT_ARITY_MISMATCH] UNPIVOT gives {} value columns, and `{}` has {}",
                value_names.len(),
                column.expr,
                exprs.len()
            );
        }
        let planned = exprs.into_iter().map(|e| cx.sql_expr_to_logical_expr(e, &schema)).collect::<Result<Vec<_>>>()?;
        if let Some(not_column) = planned.iter().find(|e| !matches!(e, Expr::Column(_))) {
            return plan_err!("UNPIVOT reads columns, and `{not_column}` is not one");
        }
        let label = column.alias.as_ref().map(|a| a.value.clone()).unwrap_or_else(|| column.expr.to_string());
        rows.push((label, planned));
    }
    // Each value column's type: one type, or numbers Spark widens (checked as Spark does).
    for (i, value_name) in value_names.iter().enumerate() {
        let types = rows.iter().map(|(_, c)| c[i].get_type(&schema)).collect::<Result<Vec<_>>>()?;
        let numeric = types.iter().all(|t| t.is_numeric());
        if !numeric && types.iter().any(|t| t != &types[0]) {
            let listed: Vec<String> = rows
                .iter()
                .zip(&types)
                .map(|((_, c), t)| format!("\"{}\" (`{}`)", crate::types::spark_type_name(t).to_uppercase(), c[i]))
                .collect();
            return plan_err!(
                "[UNPIVOT_VALUE_DATA_TYPE_MISMATCH] Unpivot value columns must share a least common type, some types \
                 do not: [{}] (unpivoting `{value_name}`)",
                listed.join(", ")
            );
        }
    }
    let kept = unread(&schema, rows.iter().flat_map(|(_, c)| c.iter()));
    let mut union: Option<LogicalPlanBuilder> = None;
    for (label, values) in rows {
        let projection: Vec<Expr> = kept
            .iter()
            .cloned()
            .chain(std::iter::once(lit(label).alias(name.value.clone())))
            .chain(values.into_iter().zip(&value_names).map(|(v, n)| v.alias(n.clone())))
            .collect();
        let side = LogicalPlanBuilder::from(input.clone()).project(projection)?.build()?;
        union = Some(match union {
            None => LogicalPlanBuilder::from(side),
            Some(left) => left.union(side)?,
        });
    }
    let mut plan = union.ok_or_else(|| plan_datafusion_err!("UNPIVOT without a column"))?;
    if !include_nulls {
        let any_value = value_names
            .iter()
            .map(|n| Expr::Column(Column::from_name(n.clone())).is_not_null())
            .reduce(Expr::or)
            .ok_or_else(|| plan_datafusion_err!("UNPIVOT without a value"))?;
        plan = plan.filter(any_value)?;
    }
    plan.build()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::rewritten_by;

    #[test]
    fn values_and_aggregates_are_named_as_spark_names_them() {
        let sql = "SELECT * FROM t PIVOT (sum(v), count(v) AS n FOR c IN ('a', 1.50, NULL, -2, ('b', 3) , 'z' AS y))";
        let rewritten = rewritten_by(name_rule, sql).unwrap();
        assert!(rewritten.contains("sum(v) AS `sum(v)`, count(v) AS n"), "{rewritten}");
        for named in
            ["'a' AS `a`", "1.50 AS `1.50`", "NULL AS `null`", "-2 AS `-2`", "('b', 3) AS `{b, 3}`", "'z' AS y"]
        {
            assert!(rewritten.contains(named), "{named} in {rewritten}");
        }
        let unpivot = rewritten_by(name_rule, "SELECT * FROM t UNPIVOT (v FOR n IN (t.A, (b, c), d AS x))").unwrap();
        assert!(unpivot.contains("t.A AS `A`, (b, c) AS `b_c`, d AS x"), "{unpivot}");
    }

    #[test]
    fn spark_refusals_before_planning() {
        let refused = rewritten_by(name_rule, "SELECT * FROM t PIVOT (sum(v) FOR c IN (k))").unwrap_err();
        assert!(refused.contains("NON_LITERAL_PIVOT_VALUES"), "{refused}");
        let twice = rewritten_by(name_rule, "SELECT * FROM t PIVOT (sum(v) FOR c IN ('a', 'a'))").unwrap_err();
        assert!(twice.contains("two columns `a`"), "{twice}");
        let expression = rewritten_by(name_rule, "SELECT * FROM t UNPIVOT (v FOR n IN (a + 1))").unwrap_err();
        assert!(expression.contains("not one"), "{expression}");
        let aliased = rewritten_by(name_rule, "SELECT * FROM t PIVOT (sum(v) FOR c IN ('a')) AS p").unwrap_err();
        assert!(aliased.contains("FROM t AS p PIVOT"), "{aliased}");
        let joined = rewritten_by(name_rule, "SELECT * FROM s, t PIVOT (sum(v) FOR c IN ('a'))").unwrap_err();
        assert!(joined.contains("whole FROM clause"), "{joined}");
        let joined = rewritten_by(name_rule, "SELECT * FROM t UNPIVOT (v FOR n IN (a)) JOIN s USING (k)").unwrap_err();
        assert!(joined.contains("whole FROM clause"), "{joined}");
    }
}
