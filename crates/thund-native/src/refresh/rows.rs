//! Row-based refresh: the rows a view's query gained and lost (`propagate::delta`) applied to
//! its table in one Delta commit, a MERGE of the affected rows.
//!
//! A view like `SELECT o.k, o.v, c.region FROM orders o JOIN customers c ON o.c = c.c` whose
//! inputs lost rows (a delete, the old side of an update) loses exactly the query's rows over
//! them (joined with the other side as it was), and gains the query's rows over what they
//! gained: both are planned row by row, and only they are written. A view's rows have no key,
//! and equal rows may repeat: each lost row takes out one copy of itself. So the lost rows are
//! counted by value, the view's files are scanned for those values (`keyscan`: one column
//! decoded to find the candidate rows, then those rows whole to compare them), and as many copies as were lost are marked deleted — with deletion vectors when
//! the view has them (`delta.enableDeletionVectors`), else by rewriting the files holding them
//! with their other rows. The gained rows are added in the same commit, checked by the view's
//! expectations (a lost row a `DROP ROW` or `FAIL UPDATE` rule kept out was never there). A view that does not
//! hold a row its query lost (changed by hand?) cannot be maintained this way: it is recomputed,
//! and says why.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::concat_batches;
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::prelude::{DataFrame, SessionContext};
use deltalake::DeltaTable;
use knut_thund::ir::{Dataset, Flow, ViolationAction};
use roaring::RoaringTreemap;

use super::planning::{Issue, IssueType};
use super::propagate::Delta;
use crate::delta::changes::Changes;
use crate::delta::deletion::{self, Marked};
use crate::delta::keyscan::{read_rows, scan, Wanted};
use crate::delta::storage::Storage;
use crate::delta::table::{commit_rows, conform};
use crate::delta::write::Commit;
use crate::error::Result;
use crate::streaming::sources::table_id;

/// The terms of a change as one plan of the view's rows (`None`: no rows).
pub(super) fn union_of(
    ctx: &SessionContext,
    d: &Dataset,
    f: &Flow,
    terms: Vec<LogicalPlan>,
) -> Result<Option<LogicalPlan>> {
    let mut terms = terms.into_iter();
    let Some(first) = terms.next() else { return Ok(None) };
    let mut union = LogicalPlanBuilder::from(conform(ctx, d, f, first)?);
    for term in terms {
        union = union.union(conform(ctx, d, f, term)?)?;
    }
    Ok(Some(union.build()?))
}

/// The rows of `plan` the view's expectations let in: those a `DROP ROW` or `FAIL UPDATE` rule
/// keeps out were never written, so they are never taken out either.
fn admitted(ctx: &SessionContext, d: &Dataset, plan: LogicalPlan) -> Result<LogicalPlan> {
    let mut kept: Option<Expr> = None;
    for e in d.expectations.iter().filter(|e| e.action != ViolationAction::Warn) {
        let rule = crate::engine::plan_expr(ctx, &e.predicate, plan.schema())?;
        let passes = Expr::IsTrue(Box::new(rule));
        kept = Some(match kept {
            None => passes,
            Some(all) => all.and(passes),
        });
    }
    Ok(match kept {
        Some(kept) => LogicalPlanBuilder::from(plan).filter(kept)?.build()?,
        None => plan,
    })
}

/// Applies `delta` to the view `d` in one commit; returns the rows written, or why the view
/// must be recomputed instead. The view's expectations are checked over the rows it gains
/// (`dq` gets their counts).
pub(super) async fn apply(
    ctx: &SessionContext,
    storage: &Storage,
    d: &Dataset,
    f: &Flow,
    delta: Delta,
    dq: &mut Option<knut_thund::backend::DataQuality>,
) -> Result<std::result::Result<u64, Issue>> {
    let not = |detail: String| Ok(Err(Issue::new(IssueType::ChangeSetMissing, detail)));
    let mut steps = crate::flow::Steps::of("refresh", &d.name);
    let Some(table) = storage.latest_table(&d.name).await? else {
        return not(format!("`{}` has no table to maintain", d.name));
    };
    let gained = union_of(ctx, d, f, delta.inserted)?;
    let checker = match &gained {
        Some(g) => super::checker_for(ctx, d, g)?,
        None => None,
    };
    let gained = match gained {
        Some(g) => Some(super::checked(ctx, &checker, g).await?),
        None => None,
    };
    let Some(lost) = union_of(ctx, d, f, delta.deleted)? else {
        return Err(crate::error::NativeError::Execution(
            "internal error: a row-based refresh without lost rows".into(),
        ));
    };
    let schema = Arc::new(lost.schema().as_arrow().clone());
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    let fields: Vec<SortField> = schema.fields().iter().map(|f| SortField::new(f.data_type().clone())).collect();
    if !RowConverter::supports_fields(&fields) {
        let why = format!("the rows of `{}` cannot be compared by value (a map column?)", d.name);
        return Ok(Err(Issue::new(IssueType::OperatorNotIncrementalizable, why)));
    }
    let collect = |plan: Option<LogicalPlan>| {
        let schema = Arc::clone(&schema);
        async move {
            let batches = match plan {
                Some(plan) => DataFrame::new(ctx.state(), plan).collect().await?,
                None => Vec::new(),
            };
            Ok::<_, crate::error::NativeError>(concat_batches(&schema, &batches)?)
        }
    };
    let lost = collect(Some(admitted(ctx, d, lost)?)).await?;
    steps.done(&format!("compute the {} rows lost", lost.num_rows()));
    let gained = collect(gained).await;
    steps.done("compute the rows gained");
    *dq = checker.map(|c| c.metrics());
    let gained = gained?;
    // A row both lost and gained stays: only the net change is applied. (A deleted order of a
    // customer whose region changed is lost with its new region and gained with it too.)
    let both = concat_batches(&schema, [&lost, &gained])?;
    let columns: Vec<ArrayRef> = both.columns().to_vec();
    let wanted = Wanted::new(&columns)?;
    let ids: Vec<u32> = wanted.ids_of(&columns)?.into_iter().map(|id| id.unwrap_or(u32::MAX)).collect();
    let mut net: HashMap<u32, i64> = HashMap::new();
    for (i, id) in ids.iter().enumerate() {
        *net.entry(*id).or_default() += if i < lost.num_rows() { 1 } else { -1 };
    }
    // The rows gained beyond those lost, and how many copies of each value the view loses.
    let mut added = Vec::new();
    for (i, id) in ids.iter().enumerate().skip(lost.num_rows()) {
        if let Some(n) = net.get_mut(id).filter(|n| **n < 0) {
            *n += 1;
            added.push((i - lost.num_rows()) as u32);
        }
    }
    let gained = arrow::compute::take_record_batch(&gained, &arrow::array::UInt32Array::from(added))?;
    let mut owed: HashMap<u32, u64> = net.into_iter().filter(|(_, n)| *n > 0).map(|(id, n)| (id, n as u64)).collect();
    if owed.is_empty() && gained.num_rows() == 0 {
        // What was lost was gained back: the view stays as it is.
        return Ok(Ok(0));
    }
    // The view's net change, for the views downstream: the copies it loses, the rows it gains.
    let mut left = owed.clone();
    let taken: Vec<u32> = (0..lost.num_rows())
        .filter(|i| left.get_mut(&ids[*i]).filter(|n| **n > 0).map(|n| *n -= 1).is_some())
        .map(|i| i as u32)
        .collect();
    let change = Changes {
        schema: Arc::clone(&schema),
        deleted: vec![arrow::compute::take_record_batch(&lost, &arrow::array::UInt32Array::from(taken))?],
        inserted: vec![gained.clone()],
        rows_read: 0,
    };
    // The view's rows holding them, as many as are owed, file by file: first the rows whose
    // probe column (an integer one if there is, whose pages the scan can skip by their bounds)
    // holds a lost value, decoding that column alone; then those rows whole, to compare.
    let probe = schema.fields().iter().position(|f| f.data_type().is_integer()).unwrap_or(0);
    let probed = Arc::new(Wanted::new(&[Arc::clone(lost.column(probe))])?);
    let mut marked = Vec::new();
    // (What the inputs lost may give the query no rows: a deleted order of no customer.)
    let found = match owed.is_empty() {
        true => Vec::new(),
        _ => scan(&table, &probed, &names[probe..=probe], &[], None).await?,
    };
    steps.done(&format!("probe `{}` in {} files", names[probe], found.len()));
    for found in found {
        let candidates: RoaringTreemap = found.positions.iter().copied().collect();
        let rows = read_rows(&table, &found.file, Some(&found.opened), &candidates, &schema).await?;
        let mut deleted = found.deleted.clone();
        for (position, id) in candidates.iter().zip(wanted.ids_of(rows.columns())?) {
            if let Some(left) = id.and_then(|id| owed.get_mut(&id)).filter(|left| **left > 0) {
                *left -= 1;
                deleted.insert(position);
            }
        }
        if deleted.len() > found.deleted.len() {
            marked.push(Marked { file: found.file, deleted, records: found.rows });
        }
    }
    steps.done("read the candidate rows");
    if owed.values().any(|left| *left > 0) {
        return not(format!(
            "`{}` does not hold every row its query lost (was it changed outside the pipeline?)",
            d.name
        ));
    }
    // Without deletion vectors every file losing rows is rewritten with its other rows.
    let rewrite: HashSet<String> = match deletion::enabled(&table)? {
        true => HashSet::new(),
        false => marked.iter().map(|m| m.file.path.clone()).collect(),
    };
    let (kept, dropped, vectors) = deletion::vectors_for(&table, marked, &rewrite, &schema).await?;
    steps.done("write the deletion vectors");
    let rows = ctx.read_batches(kept.into_iter().chain([gained]))?.into_unoptimized_plan();
    let commit = Commit::Replace { dropped, marked: vectors, txn: None };
    let (written, version) = commit_rows(ctx, d, &table, rows, commit).await?;
    steps.done("commit");
    remember(storage, d, &table, version, change).await;
    Ok(Ok(written))
}

/// Keeps `change` as the view's change from `table`'s version to `version`, its columns as
/// `changes::between` reads them (strings as views, say).
async fn remember(storage: &Storage, d: &Dataset, table: &DeltaTable, version: i64, change: Changes) {
    let (Ok(schema), Some(from)) = (crate::delta::changes::schema_of(table).await, table.version()) else { return };
    let names = |s: &SchemaRef| s.fields().iter().map(|f| f.name().clone()).collect::<Vec<_>>();
    let Some(id) = table_id(storage, &storage.table_key(&d.name)).await else { return };
    if names(&schema) != names(&change.schema) {
        return;
    }
    let as_read = |batches: Vec<RecordBatch>| -> Option<Vec<RecordBatch>> {
        let read = |b: &RecordBatch| {
            let columns = b
                .columns()
                .iter()
                .zip(schema.fields())
                .map(|(c, f)| arrow::compute::cast(c, f.data_type()))
                .collect::<std::result::Result<Vec<_>, _>>()
                .ok()?;
            RecordBatch::try_new(Arc::clone(&schema), columns).ok()
        };
        batches.iter().map(read).collect()
    };
    let (Some(inserted), Some(deleted)) = (as_read(change.inserted), as_read(change.deleted)) else { return };
    let change = Changes { schema: Arc::clone(&schema), inserted, deleted, rows_read: 0 };
    storage.remember_change(&d.name, &id, from as i64, version, Arc::new(change));
}
