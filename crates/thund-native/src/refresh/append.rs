//! Append-only refresh of materialized views whose inputs were only appended to, and the choice
//! between it and a row-based refresh (`rows`).
//!
//! A view like `SELECT id, upper(name) AS name FROM bronze WHERE ok` — or one joining and
//! unioning tables, `SELECT … FROM orders o JOIN customers c ON …` — over tables that were only
//! appended to since the last refresh gains exactly the query's rows over the new rows: the query
//! is monotonic (projections, filters, `UNION ALL` and inner joins). For a join that is the new
//! rows of each input joined with the other side (`propagate::delta`): the new orders with every
//! customer now, every order before with the new customers. So a refresh runs the query over
//! those rows and appends what it gives to the view, in one Delta commit, instead of recomputing
//! it. When the query lost rows too — an input lost some (a delete, an update), or an outer
//! join's padded row found its match — the refresh is row-based (`rows`) instead.
//!
//! A record beside the view (`<view>.append.json`) says which version of each input the view
//! covers and which version of the view that is. It is written after the commit: a crash in
//! between leaves a view version the record does not name, and the next refresh recomputes. So
//! do a change that cannot be read, a changed definition, a full refresh — each said in the
//! refresh's planning.

use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, Flow, QualifiedName};

use super::input::{Inputs, ViewRecord};
use super::planning::{Issue, IssueType, Technique};
use super::propagate::{self, Rows};
use super::Refreshed;
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

    /// Appends the query's rows over what the inputs gained since the record; when they lost
    /// rows, takes out the query's rows over those too (`rows`); when neither can be told,
    /// recomputes the view.
    async fn refresh(
        self: Box<Self>,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        rebuild: bool,
        dq: &mut Option<knut_thund::backend::DataQuality>,
    ) -> Result<Refreshed> {
        let (usable, view_version) = ViewRecord::usable(storage, &d.name, "append", &self.definition, rebuild).await?;
        let before = |changed: &_| propagate::befores(&self.plan, changed);
        let changed = match &usable {
            Some(r) => Inputs::since(ctx, storage, &self.sources, &r.sources, false, before).await?,
            None => Err(super::input::no_record(rebuild)),
        };
        let mut not = Vec::new();
        let mut refreshed = None;
        match changed {
            Ok(inputs) => {
                let offsets = inputs.offsets(&self.sources);
                let delta = propagate::delta(&self.plan, &inputs)?;
                if delta.deleted.is_empty() {
                    let rows = self.append(ctx, storage, d, f, delta.inserted, view_version, dq).await?;
                    refreshed = Some((Refreshed::by(rows, Technique::AppendOnly, None), offsets));
                } else {
                    let lost: Vec<String> = self
                        .sources
                        .iter()
                        .filter(|s| {
                            inputs
                                .0
                                .get(&s.name)
                                .is_some_and(|i| i.change.as_ref().is_some_and(|c| c.deleted.is_some()))
                        })
                        .map(|s| format!("`{s}`"))
                        .collect();
                    let why = match lost.is_empty() {
                        true => "an outer join's padded rows go when their match comes".to_string(),
                        false => format!("{} lost or rewrote rows since the last refresh", lost.join(", ")),
                    };
                    not.push((Technique::AppendOnly, Issue::new(IssueType::InputNotAppendOnly, why)));
                    match super::rows::apply(ctx, storage, d, f, delta, dq).await? {
                        Ok(rows) => {
                            let by = Refreshed { rows, by: Some(Technique::RowBased), not: std::mem::take(&mut not) };
                            refreshed = Some((by, offsets));
                        }
                        Err(why) => not.push((Technique::RowBased, why)),
                    }
                }
            }
            Err(why) => {
                not.push((Technique::AppendOnly, why.clone()));
                not.push((Technique::RowBased, why));
            }
        }
        let (refreshed, offsets) = match refreshed {
            Some(done) => done,
            None => {
                let all = Inputs::now(ctx, storage, &self.sources).await?;
                let plan = conform(ctx, d, f, propagate::over(&self.plan, &all, Rows::Now)?)?;
                let checker = super::checker_for(ctx, d, &plan)?;
                let written = write_overwrite(ctx, storage, d, super::checked(ctx, &checker, plan).await?).await;
                *dq = checker.map(|c| c.metrics());
                let rows = written?;
                (Refreshed { rows, by: None, not }, all.offsets(&self.sources))
            }
        };
        crate::failpoint::hit("append-after-view", &d.name)?;
        ViewRecord::write(storage, &d.name, "append", self.definition, offsets).await?;
        Ok(refreshed)
    }
}

impl AppendView {
    /// Appends the query's rows over what its inputs gained (`gained`, the change's terms) in
    /// one commit, its expectations checked over them; returns the rows appended.
    #[allow(clippy::too_many_arguments)]
    async fn append(
        &self,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        gained: Vec<LogicalPlan>,
        view_version: i64,
        dq: &mut Option<knut_thund::backend::DataQuality>,
    ) -> Result<u64> {
        // Nothing new: the view stays as it is.
        let Some(gained) = super::rows::union_of(ctx, d, f, gained)? else { return Ok(0) };
        let existing = storage.latest_table(&d.name).await?;
        let txn = deltalake::kernel::Transaction::new(format!("thund-append-{}", d.name), view_version + 1);
        let checker = super::checker_for(ctx, d, &gained)?;
        let gained = super::checked(ctx, &checker, gained).await?;
        let written = write_append(ctx, &storage.table_url(&d.name), d, gained, existing, txn, true).await;
        *dq = checker.map(|c| c.metrics());
        written
    }
}
