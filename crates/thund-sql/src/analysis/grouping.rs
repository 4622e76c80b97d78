//! Grouping sets as Spark reads them, in the spellings DataFusion's planner ignores or refuses.
//!
//! - Hive's `GROUP BY a, b WITH ROLLUP` and `WITH CUBE` are `GROUP BY ROLLUP (a, b)` and
//!   `CUBE (a, b)` (DataFusion's planner drops the modifier and groups by `a, b` alone).
//! - Hive's `GROUP BY a, b GROUPING SETS ((a), ())` groups by the sets, and its grouping
//!   columns are the listed ones: `b` is in the result (NULL in every row here), and
//!   `grouping_id()` has a bit for `a` and for `b`, in the listed order. DataFusion's grouping
//!   columns are those of its sets, in the order they first appear, so the listed columns are
//!   put first as a set of their own; when no set of the query holds all of them, that set's
//!   rows are left out again by `HAVING grouping(a, b) <> 0` (only it groups by every column).
//! - A `ROLLUP (…)` or `CUBE (…)` inside `GROUPING SETS` stands for the sets it makes.
//!
//! A set naming a column the list does not name is refused: Spark's grouping columns are then
//! not the listed ones, which this reading would give.

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, GroupByWithModifier, Query,
    Select, Value, VisitMut, VisitorMut,
};

use crate::modes::SqlModes;

/// At most this many columns in one CUBE: 2^n grouping sets each.
const CUBE_COLUMNS: usize = 12;

/// Every SELECT of `query` with its grouping sets spelled as DataFusion reads them.
pub(crate) fn rewrite_rule(query: &mut Query, _: &SqlModes) -> Result<(), String> {
    struct Grouping(Option<String>);
    impl VisitorMut for Grouping {
        type Break = ();
        fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
            match rewrite(select) {
                Ok(()) => ControlFlow::Continue(()),
                Err(refusal) => {
                    self.0 = Some(refusal);
                    ControlFlow::Break(())
                }
            }
        }
    }
    let mut grouping = Grouping(None);
    let _ = query.visit(&mut grouping);
    grouping.0.map_or(Ok(()), Err)
}

fn rewrite(select: &mut Select) -> Result<(), String> {
    let (exprs, modifiers) = match &mut select.group_by {
        GroupByExpr::Expressions(exprs, modifiers) => (exprs, modifiers),
        GroupByExpr::All(modifiers) if modifiers.is_empty() => return Ok(()),
        GroupByExpr::All(_) => return Err("`GROUP BY ALL` with grouping sets is not Spark SQL".into()),
    };
    for e in exprs.iter_mut() {
        if let Expr::GroupingSets(sets) = e {
            *sets = expand(std::mem::take(sets))?;
        }
    }
    let modifiers = std::mem::take(modifiers);
    let Some(modifier) = modifiers.first() else { return Ok(()) };
    if modifiers.len() > 1 || exprs.iter().any(|e| matches!(e, Expr::GroupingSets(_) | Expr::Cube(_) | Expr::Rollup(_)))
    {
        return Err(format!("`GROUP BY {}` groups in two ways at once: Spark refuses it", modifiers_text(&modifiers)));
    }
    let listed = distinct(exprs);
    let units: Vec<Vec<Expr>> = listed.iter().map(|e| vec![e.clone()]).collect();
    match modifier {
        GroupByWithModifier::Rollup => *exprs = vec![Expr::Rollup(units)],
        GroupByWithModifier::Cube => *exprs = vec![Expr::Cube(units)],
        GroupByWithModifier::GroupingSets(Expr::GroupingSets(sets)) => {
            let mut sets = expand(sets.clone())?;
            if let Some(stray) = sets.iter().flatten().find(|m| !listed.iter().any(|l| same(l, m))) {
                return Err(format!(
                    "GROUPING SETS name `{stray}`, which `GROUP BY` does not list: list it, or write `GROUP BY \
                     GROUPING SETS (…)`"
                ));
            }
            match sets.iter().position(|s| listed.iter().all(|l| s.iter().any(|m| same(l, m)))) {
                // The set of every column: first, its columns in the listed order.
                Some(full) => {
                    sets.remove(full);
                }
                // A set of every column first, whose rows `HAVING` leaves out.
                None => {
                    let phantom = Expr::BinaryOp {
                        left: Box::new(crate::syntax::function("grouping", listed.clone())),
                        op: BinaryOperator::NotEq,
                        right: Box::new(Expr::value(Value::Number("0".into(), false))),
                    };
                    select.having = Some(match select.having.take() {
                        Some(having) => Expr::BinaryOp {
                            left: Box::new(Expr::Nested(Box::new(having))),
                            op: BinaryOperator::And,
                            right: Box::new(phantom),
                        },
                        None => phantom,
                    });
                }
            }
            sets.insert(0, listed);
            *exprs = vec![Expr::GroupingSets(sets)];
        }
        other => return Err(format!("`GROUP BY … {other}` is not Spark SQL")),
    }
    Ok(())
}

/// `sets` with each `ROLLUP (…)` or `CUBE (…)` standing alone in a set replaced by the sets
/// it makes.
fn expand(sets: Vec<Vec<Expr>>) -> Result<Vec<Vec<Expr>>, String> {
    let mut out = Vec::new();
    for set in sets {
        match set.as_slice() {
            [e] => match multi(e) {
                Some((Multi::Rollup, units)) => {
                    for n in (0..=units.len()).rev() {
                        out.push(units[..n].concat());
                    }
                }
                Some((Multi::Cube, units)) => {
                    if units.len() > CUBE_COLUMNS {
                        return Err(format!("a CUBE of more than {CUBE_COLUMNS} columns is not supported natively"));
                    }
                    // The full set first, so the grouping columns come in the written order.
                    for mask in (0..1u32 << units.len()).rev() {
                        let bit = |i: usize| mask & (1 << (units.len() - 1 - i)) != 0;
                        out.push(
                            units.iter().enumerate().filter(|(i, _)| bit(*i)).flat_map(|(_, u)| u.clone()).collect(),
                        );
                    }
                }
                None => out.push(set),
            },
            _ => out.push(set),
        }
    }
    Ok(out)
}

enum Multi {
    Rollup,
    Cube,
}

/// A `ROLLUP (…)` or `CUBE (…)` as its kind and units (a parenthesized list is one unit).
fn multi(e: &Expr) -> Option<(Multi, Vec<Vec<Expr>>)> {
    match e {
        Expr::Rollup(units) => Some((Multi::Rollup, units.clone())),
        Expr::Cube(units) => Some((Multi::Cube, units.clone())),
        Expr::Function(f) => {
            let kind = match f.name.to_string().to_ascii_lowercase().as_str() {
                "rollup" => Multi::Rollup,
                "cube" => Multi::Cube,
                _ => return None,
            };
            let FunctionArguments::List(list) = &f.args else { return None };
            let units = list
                .args
                .iter()
                .map(|a| match a {
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Tuple(members))) => Some(members.clone()),
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Nested(e))) => Some(vec![(**e).clone()]),
                    FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(vec![e.clone()]),
                    _ => None,
                })
                .collect::<Option<Vec<_>>>()?;
            Some((kind, units))
        }
        _ => None,
    }
}

/// `exprs` without repeats, in order.
fn distinct(exprs: &[Expr]) -> Vec<Expr> {
    let mut out: Vec<Expr> = Vec::new();
    for e in exprs {
        if !out.iter().any(|o| same(o, e)) {
            out.push(e.clone());
        }
    }
    out
}

/// Whether two grouping expressions are the same column: names are read ignoring case.
fn same(a: &Expr, b: &Expr) -> bool {
    a == b || a.to_string().eq_ignore_ascii_case(&b.to_string())
}

fn modifiers_text(modifiers: &[GroupByWithModifier]) -> String {
    modifiers.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> Result<String, String> {
        crate::analysis::rewritten_by(rewrite_rule, sql)
    }

    #[test]
    fn hives_spellings_become_grouping_sets_over_the_listed_columns() {
        assert_eq!(
            rewritten("SELECT a, b FROM t GROUP BY a, b WITH ROLLUP").unwrap(),
            "SELECT a, b FROM t GROUP BY ROLLUP (a, b)"
        );
        assert_eq!(
            rewritten("SELECT a, b FROM t GROUP BY a, b WITH CUBE").unwrap(),
            "SELECT a, b FROM t GROUP BY CUBE (a, b)"
        );
        assert_eq!(
            rewritten("SELECT a, b FROM t GROUP BY a, b GROUPING SETS ((a), ())").unwrap(),
            "SELECT a, b FROM t GROUP BY GROUPING SETS ((a, b), (a), ()) HAVING grouping(a, b) <> 0"
        );
        assert_eq!(
            rewritten("SELECT a, b FROM t GROUP BY a, b GROUPING SETS ((b, a), a) HAVING count(*) > 1").unwrap(),
            "SELECT a, b FROM t GROUP BY GROUPING SETS ((a, b), (a)) HAVING count(*) > 1"
        );
        assert_eq!(
            rewritten("SELECT a FROM t GROUP BY GROUPING SETS (ROLLUP (a, b), CUBE (c))").unwrap(),
            "SELECT a FROM t GROUP BY GROUPING SETS ((a, b), (a), (), (c), ())"
        );
        assert!(rewritten("SELECT a FROM t GROUP BY a GROUPING SETS ((a, b))").unwrap_err().contains("`b`"));
    }
}
