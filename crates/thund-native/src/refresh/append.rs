//! Append-only refresh of materialized views that project and filter one table of the pipeline.
//!
//! A view like `SELECT id, upper(name) AS name FROM bronze WHERE ok` over a table `bronze` that
//! was only appended to since the last refresh gains exactly the query's rows over the new rows:
//! the query is monotonic (a row of the input gives its rows alone, whatever else is there). So
//! a refresh runs the query over `bronze`'s new files and appends what it gives to the view, in
//! one Delta commit, instead of recomputing it.
//!
//! A record beside the view (`<view>.append.json`) says which version of the input the view
//! covers and which version of the view that is. It is written after the append: a crash in
//! between leaves a view version the record does not name, and the next refresh recomputes. So
//! does an input that lost rows (a delete, an update, a rewrite), a changed definition, a full
//! refresh — each said in the refresh's planning.

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, Flow, QualifiedName};

use super::incremental::{has_subquery, replace_scan};
use super::input::ViewRecord;
use super::planning::{Issue, IssueType, Technique};
use crate::delta::storage::Storage;
use crate::delta::table::{conform, write_append, write_overwrite};
use crate::error::Result;

/// Whether `plan` only projects and filters a scan of `source` (what stands in the way if not).
pub(super) fn append_of(plan: &LogicalPlan, source: &QualifiedName) -> std::result::Result<(), Issue> {
    let mut node = plan;
    loop {
        match node {
            LogicalPlan::TableScan(scan) if scan.table_name.table() == source.name && scan.filters.is_empty() => {
                return Ok(())
            }
            LogicalPlan::Projection(_) | LogicalPlan::Filter(_) | LogicalPlan::SubqueryAlias(_) => {
                if node.expressions().iter().any(has_subquery) {
                    return Err(Issue::new(IssueType::OperatorNotIncrementalizable, "a subquery"));
                }
                node = node.inputs()[0];
            }
            other => {
                let name = other.display().to_string();
                let name = name.split(':').next().unwrap_or("an operator");
                return Err(Issue::new(
                    IssueType::OperatorNotIncrementalizable,
                    format!("`{name}` (only projections and filters of one input append)"),
                ));
            }
        }
    }
}

/// A view that qualifies, planned and ready to refresh.
pub(crate) struct AppendView {
    pub(super) source: QualifiedName,
    pub(super) plan: LogicalPlan,
    pub(super) definition: String,
}

#[async_trait::async_trait]
impl super::Maintenance for AppendView {
    fn technique(&self) -> Technique {
        Technique::AppendOnly
    }

    fn into_plan(self: Box<Self>) -> LogicalPlan {
        self.plan
    }

    /// Appends the query's rows over what the input gained since the record, or, when that
    /// cannot be told or the input lost rows, recomputes the view.
    async fn refresh(
        self: Box<Self>,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        rebuild: bool,
    ) -> Result<(u64, Option<Issue>)> {
        let (usable, view_version) = ViewRecord::usable(storage, &d.name, "append", &self.definition, rebuild).await?;
        let gained = match &usable {
            Some(r) => super::input::since(ctx, storage, &self.source, &r.source, true).await?,
            None => Err(super::input::no_record(rebuild)),
        };
        let (rows, offset, why) = match gained {
            Ok(new) => {
                let plan = conform(ctx, d, f, replace_scan(self.plan.clone(), &self.source, new.inserted)?)?;
                let existing = storage.latest_table(&d.name).await?;
                let txn = deltalake::kernel::Transaction::new(format!("thund-append-{}", d.name), view_version + 1);
                let rows = write_append(ctx, &storage.table_url(&d.name), d, plan, existing, txn, true).await?;
                (rows, new.offset, None)
            }
            Err(why) => {
                let all = super::input::all_of(ctx, storage, &self.source).await?;
                let plan = conform(ctx, d, f, replace_scan(self.plan.clone(), &self.source, all.inserted)?)?;
                (write_overwrite(ctx, storage, d, plan).await?, all.offset, Some(why))
            }
        };
        crate::failpoint::hit("append-after-view", &d.name)?;
        ViewRecord::write(storage, &d.name, "append", self.definition, offset).await?;
        Ok((rows, why))
    }
}
