//! Views: a temporary or persistent view is registered in the run's session and inlined into its
//! readers. A view with expectations is checked where it is read ([`CheckedView`]), and its counts
//! are reported when the run ends; a persistent view's definition is stored for `thund query`.

use std::sync::{Arc, Mutex};

use datafusion::catalog::TableProvider;
use datafusion::datasource::ViewTable;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::prelude::SessionContext;
use knut_thund::frontend::reparse;
use knut_thund::ir::{Dataset, DatasetKind, Flow, QualifiedName, Query};
use serde_json::json;

use crate::delta::storage::Storage;
use crate::engine::table_ref;
use crate::error::{NativeError, Result};
use crate::expect::Checker;

/// The views of one run, and the checkers of those with expectations.
#[derive(Default)]
pub(crate) struct Views {
    checked: Mutex<Vec<(Flow, Arc<Checker>)>>,
}

impl Views {
    /// Registers view `d` (defined by flow `f` as `plan`) and, unless `dry`, stores a persistent
    /// view's definition.
    pub(crate) async fn register(
        &self,
        ctx: &SessionContext,
        storage: &Storage,
        d: &Dataset,
        f: &Flow,
        plan: LogicalPlan,
        dry: bool,
    ) -> Result<()> {
        let _ = ctx.deregister_table(table_ref(&d.name));
        if d.expectations.is_empty() {
            let view = ViewTable::new(plan, Some(f.query().sql.clone()));
            ctx.register_table(table_ref(&d.name), Arc::new(view))?;
        } else {
            let checker = Arc::new(Checker::new(ctx, d, &plan)?);
            if let Ok(mut v) = self.checked.lock() {
                v.push((f.clone(), Arc::clone(&checker)));
            }
            ctx.register_table(table_ref(&d.name), Arc::new(CheckedView { plan, checker, ctx: ctx.clone() }))?;
        }
        if d.kind == DatasetKind::PersistentView && !dry {
            let definition = json!({ "name": d.name, "query": f.query(), "comment": d.comment });
            storage.write_json(&storage.view_key(&d.name), &definition).await?;
        }
        Ok(())
    }

    /// The views with expectations registered so far, with their checkers (taken: each is
    /// reported once).
    pub(crate) fn take_checked(&self) -> Vec<(Flow, Arc<Checker>)> {
        self.checked.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default()
    }
}

/// The stored definition of persistent view `name`, parsed; `None` before its first run.
pub(crate) async fn stored_definition(storage: &Storage, name: &QualifiedName) -> Result<Option<Query>> {
    let key = storage.view_key(name);
    let Some(def) = storage.read_json::<serde_json::Value>(&key).await? else { return Ok(None) };
    let unreadable = |e: String| NativeError::Storage(format!("{}: {e}", storage.display(&key)));
    let mut q: Query = serde_json::from_value(def["query"].clone()).map_err(|e| unreadable(e.to_string()))?;
    reparse(&mut q).map_err(|d| unreadable(d.to_string()))?;
    Ok(Some(q))
}

/// A view whose rows are checked against its expectations each time a reader scans it; each scan
/// counts apart, and the view's rows are reported once.
struct CheckedView {
    plan: LogicalPlan,
    checker: Arc<Checker>,
    ctx: SessionContext,
}

impl std::fmt::Debug for CheckedView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CheckedView")
    }
}

#[async_trait::async_trait]
impl TableProvider for CheckedView {
    fn schema(&self) -> arrow::datatypes::SchemaRef {
        Arc::clone(self.plan.schema().inner())
    }

    fn table_type(&self) -> datafusion::logical_expr::TableType {
        datafusion::logical_expr::TableType::View
    }

    async fn scan(
        &self,
        state: &dyn datafusion::catalog::Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn datafusion::physical_plan::ExecutionPlan>> {
        let table = self
            .checker
            .wrap_scan(&self.ctx, self.plan.clone())
            .await
            .map_err(|e| datafusion::error::DataFusionError::External(Box::new(e)))?;
        table.scan(state, projection, filters, limit).await
    }
}
