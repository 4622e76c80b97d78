//! Window-function refresh: a materialized view computing window functions with `PARTITION BY`
//! over one table of the pipeline recomputes only the partitions its input changed.
//!
//! In `SELECT k, x, row_number() OVER (PARTITION BY k ORDER BY x) FROM t`, a row's window values
//! depend on the rows of its partition alone. So a refresh reads what `t` gained and lost since
//! the last one (its new files, or its net change, `delta::changes`), takes the partition keys
//! of those rows, recomputes the query over the input rows of those partitions only, and
//! replaces the view's rows of those partitions with the result in one Delta commit (a
//! `replaceWhere` on the partition columns). Partitions nothing touched keep their rows.
//!
//! It applies when the view has one window node whose functions all share one `PARTITION BY` of
//! plain columns, under it projections and filters of one table, above it projections and
//! filters that pass the partition columns through by name (so the view's rows carry them). A
//! record beside the view (`<view>.window.json`) names the input version and the view version
//! it covers; a crash between the commit and the record, a changed definition, a change whose
//! partitions are too many, a full refresh: each recomputes the whole view, and says why.

use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ScalarValue};
use datafusion::logical_expr::{lit, Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, Flow, QualifiedName};

use super::incremental::{has_subquery, replace_scan};
use super::input::ViewRecord;
use super::planning::{Issue, IssueType, Technique};
use crate::delta::storage::Storage;
use crate::delta::table::{conform, write_overwrite, write_replace_where};
use crate::error::{NativeError, Result};
use crate::streaming::checkpoint::SourceOffset;

/// The most partitions a refresh recomputes one by one; past it, the whole view is recomputed.
const MOST_PARTITIONS: usize = 1000;

fn not_this(detail: impl Into<String>) -> Issue {
    Issue::new(IssueType::OperatorNotIncrementalizable, detail)
}

/// The partition columns of `plan`'s one window, if the view recomputes by partition (what
/// stands in the way if not).
pub(super) fn partitions_of(plan: &LogicalPlan, source: &QualifiedName) -> std::result::Result<Vec<String>, Issue> {
    // Above the window: projections and filters, the partition columns passed through.
    let mut above: Vec<&LogicalPlan> = Vec::new();
    let mut node = plan;
    let window = loop {
        match node {
            LogicalPlan::Window(w) => break w,
            LogicalPlan::Projection(_) | LogicalPlan::Filter(_) | LogicalPlan::SubqueryAlias(_) => {
                if node.expressions().iter().any(has_subquery) {
                    return Err(not_this("a subquery"));
                }
                above.push(node);
                node = node.inputs()[0];
            }
            _ => return Err(not_this("no window function over projections and filters of one input")),
        }
    };
    // DataFusion plans one window node per window specification, with projections between them:
    // every one must share the partition, and under the lowest only projections and filters of
    // one scan of the source may follow.
    let mut windows = vec![window];
    let mut node = window.input.as_ref();
    loop {
        match node {
            LogicalPlan::TableScan(scan) if scan.table_name.table() == source.name => break,
            LogicalPlan::Window(w) => {
                windows.push(w);
                node = w.input.as_ref();
            }
            LogicalPlan::Projection(_) | LogicalPlan::Filter(_) | LogicalPlan::SubqueryAlias(_) => {
                if node.expressions().iter().any(has_subquery) {
                    return Err(not_this("a subquery"));
                }
                node = node.inputs()[0];
            }
            other => {
                let name = other.display().to_string();
                return Err(not_this(format!(
                    "`{}` under the window (only projections and filters of one input)",
                    name.split(':').next().unwrap_or("an operator")
                )));
            }
        }
    }
    let mut keys: Option<Vec<String>> = None;
    for e in windows.iter().flat_map(|w| &w.window_expr) {
        let Expr::WindowFunction(w) = strip(e) else { return Err(not_this(format!("`{e}`"))) };
        if w.params.partition_by.is_empty() {
            return Err(Issue::new(
                IssueType::WindowWithoutPartitionBy,
                format!("`{}` has no PARTITION BY: every row depends on every other", strip(e)),
            ));
        }
        let names: Vec<String> = w
            .params
            .partition_by
            .iter()
            .map(|p| match p {
                Expr::Column(c) => Ok(c.name.clone()),
                other => Err(not_this(format!("PARTITION BY `{other}` (only columns are recomputed by partition)"))),
            })
            .collect::<std::result::Result<_, _>>()?;
        match &keys {
            Some(k) if *k != names => return Err(not_this("window functions over different partitions")),
            _ => keys = Some(names),
        }
    }
    let keys = keys.ok_or_else(|| not_this("a window node without functions"))?;
    // The view's rows carry the partition columns, under their names.
    for node in &above {
        if let LogicalPlan::Projection(p) = node {
            for k in &keys {
                let passed = p
                    .expr
                    .iter()
                    .zip(p.schema.fields())
                    .any(|(e, field)| field.name() == k && matches!(strip(e), Expr::Column(c) if &c.name == k));
                if !passed {
                    return Err(not_this(format!("the view does not keep the partition column `{k}` as it is")));
                }
            }
        }
    }
    Ok(keys)
}

fn strip(e: &Expr) -> &Expr {
    match e {
        Expr::Alias(a) => strip(&a.expr),
        other => other,
    }
}

/// A view that qualifies, planned and ready to refresh.
pub(crate) struct WindowView {
    pub(super) source: QualifiedName,
    pub(super) plan: LogicalPlan,
    pub(super) keys: Vec<String>,
    pub(super) definition: String,
}

/// Rows whose partition columns `keys` hold one of `values` (NULL matching NULL).
fn in_partitions(keys: &[String], values: &[Vec<ScalarValue>]) -> Expr {
    values
        .iter()
        .map(|tuple| {
            keys.iter()
                .zip(tuple)
                .map(|(k, v)| {
                    let c = Expr::Column(Column::new_unqualified(k));
                    match v.is_null() {
                        true => c.is_null(),
                        false => c.eq(lit(v.clone())),
                    }
                })
                .reduce(Expr::and)
                .unwrap_or(lit(true))
        })
        .reduce(Expr::or)
        .unwrap_or(lit(false))
}

impl WindowView {
    /// The partition keys of the rows the input gained and lost since `r`, and its offset
    /// after them; `Err` says why the whole view must be recomputed instead.
    async fn touched(
        &self,
        ctx: &SessionContext,
        storage: &Storage,
        r: &ViewRecord,
    ) -> Result<std::result::Result<(Vec<Vec<ScalarValue>>, SourceOffset), Issue>> {
        let src = &self.source;
        let Some(recorded) = r.sources.get(&src.to_string()) else {
            let why = format!("no earlier refresh read `{src}`");
            return Ok(Err(Issue::new(IssueType::ChangeSetMissing, why)));
        };
        let changed = match super::input::since(ctx, storage, src, recorded, false).await? {
            Ok(c) => c,
            Err(why) => return Ok(Err(why)),
        };
        let offset = changed.offset;
        let rows: Vec<std::sync::Arc<dyn datafusion::catalog::TableProvider>> =
            std::iter::once(changed.inserted).chain(changed.deleted).collect();
        let Some(LogicalPlan::Window(window)) = find_window(&self.plan) else {
            return Err(NativeError::Execution("internal error: the view's window is gone".into()));
        };
        let mut touched: Vec<Vec<ScalarValue>> = Vec::new();
        for rows in rows {
            let input = replace_scan(window.input.as_ref().clone(), src, rows)?;
            let keys: Vec<Expr> = self.keys.iter().map(|k| Expr::Column(Column::new_unqualified(k))).collect();
            let distinct = LogicalPlanBuilder::from(input).project(keys)?.distinct()?.build()?;
            let batches = datafusion::prelude::DataFrame::new(ctx.state(), distinct).collect().await?;
            for b in batches {
                for row in 0..b.num_rows() {
                    let tuple = b
                        .columns()
                        .iter()
                        .map(|c| ScalarValue::try_from_array(c, row))
                        .collect::<std::result::Result<Vec<_>, _>>()?;
                    if !touched.contains(&tuple) {
                        touched.push(tuple);
                    }
                }
            }
        }
        if touched.len() > MOST_PARTITIONS {
            let why =
                format!("{} partitions changed (more than {MOST_PARTITIONS} are recomputed whole)", touched.len());
            return Ok(Err(Issue::new(IssueType::ChangeSetTooLarge, why)));
        }
        Ok(Ok((touched, offset)))
    }
}

/// The plan's lowest window node (the one reading the rows): the last met top-down.
fn find_window(plan: &LogicalPlan) -> Option<LogicalPlan> {
    let mut found = None;
    let _ = plan.apply(|node| {
        if let LogicalPlan::Window(_) = node {
            found = Some(node.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    });
    found
}

#[async_trait::async_trait]
impl super::Maintenance for WindowView {
    fn technique(&self) -> Technique {
        Technique::WindowFunction
    }

    fn into_plan(self: Box<Self>) -> LogicalPlan {
        self.plan
    }

    /// Refreshes the view: recomputes the partitions its input changed since the record, or
    /// the whole view when that cannot be told.
    async fn refresh(
        self: Box<Self>,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        rebuild: bool,
        dq: &mut Option<knut_thund::backend::DataQuality>,
    ) -> Result<super::Refreshed> {
        let (usable, _) = ViewRecord::usable(storage, &d.name, "window", &self.definition, rebuild).await?;
        let changed = match &usable {
            Some(r) => self.touched(ctx, storage, r).await?,
            None => Err(super::input::no_record(rebuild)),
        };
        let (rows, offset, why) = match changed {
            Ok((touched, offset)) if touched.is_empty() => (0, offset, None),
            Ok((touched, offset)) => {
                let only = in_partitions(&self.keys, &touched);
                // The query over the input rows of the touched partitions alone.
                // The lowest window's input (the first window met bottom-up), filtered.
                let mut filtered = false;
                let plan = self
                    .plan
                    .clone()
                    .transform_up(|node| match node {
                        LogicalPlan::Window(mut w) if !filtered => {
                            filtered = true;
                            let input =
                                LogicalPlanBuilder::from(w.input.as_ref().clone()).filter(only.clone())?.build()?;
                            w.input = std::sync::Arc::new(input);
                            Ok(Transformed::yes(LogicalPlan::Window(w)))
                        }
                        other => Ok(Transformed::no(other)),
                    })?
                    .data;
                // Expectations are checked over the rows recomputed.
                let plan = conform(ctx, d, f, plan)?;
                let checker = super::checker_for(ctx, d, &plan)?;
                let written =
                    write_replace_where(ctx, storage, d, super::checked(ctx, &checker, plan).await?, only).await;
                *dq = checker.map(|c| c.metrics());
                (written?, offset, None)
            }
            Err(why) => {
                let all = super::input::all_of(ctx, storage, &self.source).await?;
                let plan = conform(ctx, d, f, replace_scan(self.plan.clone(), &self.source, all.inserted)?)?;
                let checker = super::checker_for(ctx, d, &plan)?;
                let written = write_overwrite(ctx, storage, d, super::checked(ctx, &checker, plan).await?).await;
                *dq = checker.map(|c| c.metrics());
                (written?, all.offset, Some(why))
            }
        };
        crate::failpoint::hit("window-after-view", &d.name)?;
        let offsets = [(self.source.to_string(), offset)].into_iter().collect();
        ViewRecord::write(storage, &d.name, "window", self.definition, offsets).await?;
        Ok(super::Refreshed::by(rows, Technique::WindowFunction, why))
    }
}
