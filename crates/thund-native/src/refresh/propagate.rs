//! Row-based change propagation: what a query over several tables gains and loses when its
//! inputs gain and lose rows, as plans over those rows.
//!
//! A query of projections, filters, `UNION ALL` and inner joins is linear in each input: every
//! row of its result comes from one row of each input it reads (an outer join's padded rows
//! are an anti join's, handled apart). So if an input `R` becomes
//! `R′ = R + ΔR⁺ − ΔR⁻`, the result changes by the query over the changed rows alone:
//!
//! * a projection or filter of a change is the projection or filter of its rows;
//! * a union's change is its inputs' changes, side by side;
//! * an inner join's is `Δ(R ⋈ S) = ΔR ⋈ S′ + R ⋈ ΔS` — the rows `R` gained or lost joined with
//!   all of `S` now, and all of `R` before joined with the rows `S` gained or lost (both sides
//!   changing at once are counted once this way);
//! * a left or right join is the inner join plus the preserved side's unmatched rows padded
//!   with NULLs; those change by what that side gained and lost, and by its rows whose match
//!   came or went (see [`outer_delta`]).
//!
//! [`delta`] builds that change as two lists of plans — rows gained, rows lost — each with the
//! node's own schema (so the operators above apply to them unchanged); an input that did not
//! change contributes none. The result as a multiset is the old one plus what is gained minus
//! what is lost; the same row may be both gained and lost, which the techniques using this
//! (a group aggregate taking rows back out, an append of rows gained) handle as such.
//!
//! [`check`] says whether a plan is of that kind; a full outer join, an aggregate, a window, a
//! `DISTINCT` or a subquery below are not.

use std::collections::BTreeSet;
use std::sync::Arc;

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::Column;
use datafusion::datasource::provider_as_source;
use datafusion::logical_expr::{cast, lit, Expr, Join, JoinType, LogicalPlan, Projection, TableScanBuilder};
use datafusion::scalar::ScalarValue;

use super::incremental::has_subquery;
use super::input::Inputs;
use super::planning::{Issue, IssueType};
use crate::error::{NativeError, Result};

/// What a query gains and loses: plans of rows, each with the query's schema.
#[derive(Default, Clone)]
pub(super) struct Delta {
    pub inserted: Vec<LogicalPlan>,
    pub deleted: Vec<LogicalPlan>,
}

/// Whether `plan` is made only of projections, filters, `UNION ALL` and inner, left and right
/// joins over table scans (and constant rows); what stands in the way if not.
pub(super) fn check(plan: &LogicalPlan) -> std::result::Result<(), Issue> {
    let refuse = |what: String| Err(Issue::new(IssueType::OperatorNotIncrementalizable, what));
    if plan.expressions().iter().any(has_subquery) {
        return refuse("a subquery".into());
    }
    match plan {
        LogicalPlan::TableScan(scan) if scan.filters.is_empty() && scan.fetch.is_none() => Ok(()),
        LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => Ok(()),
        LogicalPlan::Projection(_)
        | LogicalPlan::Filter(_)
        | LogicalPlan::SubqueryAlias(_)
        | LogicalPlan::Union(_)
        | LogicalPlan::Join(Join { join_type: JoinType::Inner | JoinType::Left | JoinType::Right, .. }) => {
            plan.inputs().into_iter().try_for_each(check)
        }
        LogicalPlan::Join(j) => refuse(format!(
            "a {} join (inner, left and right joins are maintained row by row)",
            j.join_type.to_string().to_uppercase()
        )),
        other => {
            let name = match other {
                LogicalPlan::Aggregate(_) => "an aggregate".to_string(),
                LogicalPlan::Window(_) => "a window function".to_string(),
                LogicalPlan::Distinct(_) => "DISTINCT (or UNION without ALL)".to_string(),
                other => format!("`{}`", other.display().to_string().split(':').next().unwrap_or("an operator")),
            };
            refuse(format!("{name} (only projections, filters, UNION ALL and joins are maintained row by row)"))
        }
    }
}

/// Which of the `changed` inputs (by table name) [`delta`] reads as they were before: under a
/// join whose right side changed, those of its left side (`L ⋈ ΔR`); under a left or right
/// join whose other side (not the preserved one) changed, those of both sides. Only these
/// earlier versions need opening.
pub(super) fn befores(plan: &LogicalPlan, changed: &BTreeSet<String>) -> BTreeSet<String> {
    let under = |side: &LogicalPlan| -> BTreeSet<String> {
        let mut found = BTreeSet::new();
        let _ = side.apply(|n| {
            if let LogicalPlan::TableScan(scan) = n {
                if changed.contains(scan.table_name.table()) {
                    found.insert(scan.table_name.table().to_string());
                }
            }
            Ok(TreeNodeRecursion::Continue)
        });
        found
    };
    let mut out = BTreeSet::new();
    let _ = plan.apply(|n| {
        if let LogicalPlan::Join(j) = n {
            let (left, right) = (under(&j.left), under(&j.right));
            let other = match j.join_type {
                JoinType::Left => Some(&right),
                JoinType::Right => Some(&left),
                _ => None,
            };
            let both = other.is_some_and(|o| !o.is_empty());
            if !right.is_empty() || both {
                out.extend(left.iter().cloned());
            }
            if both {
                out.extend(right.iter().cloned());
            }
        }
        Ok(TreeNodeRecursion::Continue)
    });
    out
}

/// Which rows of the inputs a plan reads.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Rows {
    /// As they are now.
    Now,
    /// As they were at the last refresh.
    Before,
}

/// `plan` reading every input as it is now or was before.
pub(super) fn over(plan: &LogicalPlan, inputs: &Inputs, rows: Rows) -> Result<LogicalPlan> {
    Ok(plan
        .clone()
        .transform_up(|node| match node {
            LogicalPlan::TableScan(scan) => {
                let input = input_of(inputs, scan.table_name.table())?;
                let provider = match (rows, &input.before, &input.change) {
                    (Rows::Before, Some(before), _) => before,
                    (Rows::Before, None, Some(_)) => {
                        let what = format!("internal error: `{}` was not read as it was before", scan.table_name);
                        return Err(datafusion::error::DataFusionError::Plan(what));
                    }
                    _ => &input.now,
                };
                Ok(Transformed::yes(with_provider(&scan, Arc::clone(provider))?))
            }
            other => Ok(Transformed::no(other)),
        })?
        .data)
}

fn input_of<'a>(inputs: &'a Inputs, table: &str) -> datafusion::common::Result<&'a super::input::Input> {
    inputs
        .0
        .get(table)
        .ok_or_else(|| datafusion::error::DataFusionError::Plan(format!("internal error: no input `{table}`")))
}

fn with_provider(
    scan: &datafusion::logical_expr::TableScan,
    provider: Arc<dyn datafusion::catalog::TableProvider>,
) -> datafusion::common::Result<LogicalPlan> {
    Ok(LogicalPlan::TableScan(
        TableScanBuilder::new(scan.table_name.clone(), provider_as_source(provider))
            .with_projection(scan.projection.clone())
            .with_filters(scan.filters.clone())
            .with_fetch(scan.fetch)
            .build()?,
    ))
}

/// What `plan` (which [`check`] accepts) gains and loses given what its inputs did.
pub(super) fn delta(plan: &LogicalPlan, inputs: &Inputs) -> Result<Delta> {
    let internal = |what: &str| NativeError::Execution(format!("internal error: {what} in a maintained query"));
    Ok(match plan {
        LogicalPlan::TableScan(scan) => match &input_of(inputs, scan.table_name.table())?.change {
            None => Delta::default(),
            Some(change) => Delta {
                inserted: vec![with_provider(scan, Arc::clone(&change.inserted))?],
                deleted: change
                    .deleted
                    .iter()
                    .map(|d| with_provider(scan, Arc::clone(d)))
                    .collect::<std::result::Result<_, _>>()?,
            },
        },
        LogicalPlan::EmptyRelation(_) | LogicalPlan::Values(_) => Delta::default(),
        LogicalPlan::Projection(_) | LogicalPlan::Filter(_) | LogicalPlan::SubqueryAlias(_) => {
            let below = delta(plan.inputs()[0], inputs)?;
            let above = |terms: Vec<LogicalPlan>| -> Result<Vec<LogicalPlan>> {
                terms.into_iter().map(|t| Ok(plan.with_new_exprs(plan.expressions(), vec![t])?)).collect()
            };
            Delta { inserted: above(below.inserted)?, deleted: above(below.deleted)? }
        }
        // Each input's change, its columns renamed and cast as the union names and types them.
        LogicalPlan::Union(union) => {
            let mut out = Delta::default();
            for input in &union.inputs {
                let below = delta(input, inputs)?;
                let as_union = |term: LogicalPlan| -> Result<LogicalPlan> {
                    let exprs = term
                        .schema()
                        .iter()
                        .zip(union.schema.iter())
                        .map(|((q, f), (uq, uf))| {
                            cast(Expr::Column(Column::from((q, f))), uf.data_type().clone())
                                .alias_qualified(uq.cloned(), uf.name())
                        })
                        .collect();
                    Ok(LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(term))?))
                };
                out.inserted.extend(below.inserted.into_iter().map(as_union).collect::<Result<Vec<_>>>()?);
                out.deleted.extend(below.deleted.into_iter().map(as_union).collect::<Result<Vec<_>>>()?);
            }
            out
        }
        // Δ(L ⋈ R) = ΔL ⋈ R′ + L ⋈ ΔR.
        LogicalPlan::Join(join) if join.join_type == JoinType::Inner => {
            inner_delta(join, delta(&join.left, inputs)?, delta(&join.right, inputs)?, inputs)?
        }
        LogicalPlan::Join(join) if matches!(join.join_type, JoinType::Left | JoinType::Right) => {
            outer_delta(join, inputs)?
        }
        LogicalPlan::Join(_) => return Err(internal("a full, semi or anti join")),
        other => {
            return Err(internal(&other.display().to_string()));
        }
    })
}

/// `join` as another kind of join of other inputs, with the same condition.
fn rejoin(join: &Join, join_type: JoinType, left: LogicalPlan, right: LogicalPlan) -> Result<LogicalPlan> {
    let join = Join { join_type, left: Arc::new(left), right: Arc::new(right), ..join.clone() };
    Ok(LogicalPlan::Join(join).recompute_schema()?)
}

/// An inner join's change, given its inputs' (`dl`, `dr`): `ΔL ⋈ R′ + L ⋈ ΔR`.
fn inner_delta(join: &Join, dl: Delta, dr: Delta, inputs: &Inputs) -> Result<Delta> {
    let (left, right) = (join.left.as_ref(), join.right.as_ref());
    let inner = |l, r| rejoin(join, JoinType::Inner, l, r);
    let mut out = Delta::default();
    if !dl.inserted.is_empty() || !dl.deleted.is_empty() {
        let right_now = over(right, inputs, Rows::Now)?;
        for t in dl.inserted {
            out.inserted.push(inner(t, right_now.clone())?);
        }
        for t in dl.deleted {
            out.deleted.push(inner(t, right_now.clone())?);
        }
    }
    if !dr.inserted.is_empty() || !dr.deleted.is_empty() {
        let left_before = over(left, inputs, Rows::Before)?;
        for t in dr.inserted {
            out.inserted.push(inner(left_before.clone(), t)?);
        }
        for t in dr.deleted {
            out.deleted.push(inner(left_before.clone(), t)?);
        }
    }
    Ok(out)
}

/// A left (or right) join's change. `P ⟕ O` is the inner join plus the rows of the preserved
/// side `P` that match nothing in `O` (`P ▷ O`, an anti join), padded with NULLs. The inner
/// part changes as an inner join does. The anti join changes by what `P` gained and lost
/// (against `O` now), and by the rows of `P` whose match in `O` came or went: those matching a
/// row `O` gained or lost (`C`, each row of `P` once), taken out as they were against `O` before
/// and put back as they are against `O` now.
fn outer_delta(join: &Join, inputs: &Inputs) -> Result<Delta> {
    let (left, right) = (join.left.as_ref(), join.right.as_ref());
    let (dl, dr) = (delta(left, inputs)?, delta(right, inputs)?);
    let keeps_left = join.join_type == JoinType::Left;
    let (dp, dother, preserved, other) = match keeps_left {
        true => (dl.clone(), dr.clone(), left, right),
        false => (dr.clone(), dl.clone(), right, left),
    };
    let mut out = inner_delta(join, dl, dr, inputs)?;
    // `kind` (semi or anti, from the preserved side) of `p` with `o`.
    let (semi, anti) = match keeps_left {
        true => (JoinType::LeftSemi, JoinType::LeftAnti),
        false => (JoinType::RightSemi, JoinType::RightAnti),
    };
    let from = |kind, p: LogicalPlan, o: LogicalPlan| match keeps_left {
        true => rejoin(join, kind, p, o),
        false => rejoin(join, kind, o, p),
    };
    let mut unmatched = Delta::default();
    if !dp.inserted.is_empty() || !dp.deleted.is_empty() {
        let other_now = over(other, inputs, Rows::Now)?;
        for t in dp.inserted {
            unmatched.inserted.push(from(anti, t, other_now.clone())?);
        }
        for t in dp.deleted {
            unmatched.deleted.push(from(anti, t, other_now.clone())?);
        }
    }
    let changed: Vec<LogicalPlan> = dother.inserted.into_iter().chain(dother.deleted).collect();
    if !changed.is_empty() {
        let (other_now, other_before) = (over(other, inputs, Rows::Now)?, over(other, inputs, Rows::Before)?);
        // The rows of `P` before matching the i-th changed part and none before it.
        let mut rest = over(preserved, inputs, Rows::Before)?;
        for part in changed {
            let c = from(semi, rest.clone(), part.clone())?;
            unmatched.inserted.push(from(anti, c.clone(), other_now.clone())?);
            unmatched.deleted.push(from(anti, c, other_before.clone())?);
            rest = from(anti, rest, part)?;
        }
    }
    // Padded to the join's columns: NULL on the side that found no match.
    let lefts = left.schema().fields().len();
    let pad = |unmatched: LogicalPlan| -> Result<LogicalPlan> {
        let schema = Arc::clone(unmatched.schema());
        let mut kept = schema.iter();
        let exprs = join
            .schema
            .iter()
            .enumerate()
            .map(|(i, (q, f))| {
                let value = match (i < lefts) == keeps_left {
                    true => {
                        let (kq, kf) = kept.next().ok_or_else(|| {
                            NativeError::Execution("internal error: an unmatched row lacks a column".into())
                        })?;
                        Expr::Column(Column::from((kq, kf)))
                    }
                    false => cast(lit(ScalarValue::Null), f.data_type().clone()),
                };
                Ok(value.alias_qualified(q.cloned(), f.name()))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(LogicalPlan::Projection(Projection::try_new(exprs, Arc::new(unmatched))?))
    };
    for t in unmatched.inserted {
        out.inserted.push(pad(t)?);
    }
    for t in unmatched.deleted {
        out.deleted.push(pad(t)?);
    }
    Ok(out)
}
