//! Append-only refresh of materialized views whose inputs were only appended to.
//!
//! A view like `SELECT id, upper(name) AS name FROM bronze WHERE ok` — or one joining and
//! unioning tables, `SELECT … FROM orders o JOIN customers c ON …` — over tables that were only
//! appended to since the last refresh gains exactly the query's rows over the new rows: the query
//! is monotonic (projections, filters, `UNION ALL` and inner joins; `propagate::check`). For a
//! join that is the new rows of each input joined with the other side (`propagate::delta`): the
//! new orders with every customer now, every order before with the new customers. So a refresh
//! runs the query over those rows and appends what it gives to the view, in one Delta commit,
//! instead of recomputing it.
//!
//! A record beside the view (`<view>.append.json`) says which version of each input the view
//! covers and which version of the view that is. It is written after the append: a crash in
//! between leaves a view version the record does not name, and the next refresh recomputes. So
//! does an input that lost rows (a delete, an update, a rewrite), a changed definition, a full
//! refresh — each said in the refresh's planning.

use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, Flow, QualifiedName};

use super::input::{Inputs, ViewRecord};
use super::planning::{Issue, Technique};
use super::propagate::{self, Rows};
use crate::delta::storage::Storage;
use crate::delta::table::{conform, write_append, write_overwrite};
use crate::error::Result;

/// A view that qualifies, planned and ready to refresh.
pub(crate) struct AppendView {
    pub(super) sources: Vec<QualifiedName>,
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

    /// Appends the query's rows over what the inputs gained since the record, or, when that
    /// cannot be told or an input lost rows, recomputes the view.
    async fn refresh(
        self: Box<Self>,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        rebuild: bool,
    ) -> Result<(u64, Option<Issue>)> {
        let (usable, view_version) = ViewRecord::usable(storage, &d.name, "append", &self.definition, rebuild).await?;
        let before = propagate::joins(&self.plan);
        let gained = match &usable {
            Some(r) => Inputs::since(ctx, storage, &self.sources, &r.sources, true, before).await?,
            None => Err(super::input::no_record(rebuild)),
        };
        let (rows, offsets, why) = match gained {
            Ok(inputs) => {
                let mut terms = propagate::delta(&self.plan, &inputs)?.inserted.into_iter();
                let rows = match terms.next() {
                    // Nothing new: the view stays as it is.
                    None => 0,
                    Some(first) => {
                        let mut gained = LogicalPlanBuilder::from(conform(ctx, d, f, first)?);
                        for term in terms {
                            gained = gained.union(conform(ctx, d, f, term)?)?;
                        }
                        let existing = storage.latest_table(&d.name).await?;
                        let txn =
                            deltalake::kernel::Transaction::new(format!("thund-append-{}", d.name), view_version + 1);
                        let url = storage.table_url(&d.name);
                        write_append(ctx, &url, d, gained.build()?, existing, txn, true).await?
                    }
                };
                (rows, inputs.offsets(&self.sources), None)
            }
            Err(why) => {
                let all = Inputs::now(ctx, storage, &self.sources).await?;
                let plan = conform(ctx, d, f, propagate::over(&self.plan, &all, Rows::Now)?)?;
                (write_overwrite(ctx, storage, d, plan).await?, all.offsets(&self.sources), Some(why))
            }
        };
        crate::failpoint::hit("append-after-view", &d.name)?;
        ViewRecord::write(storage, &d.name, "append", self.definition, offsets).await?;
        Ok((rows, why))
    }
}
