//! Expectations: data quality rules checked on every row a flow writes, in the same pass as the
//! write.
//!
//! The flow's plan is wrapped in a table with one partition per partition of the plan (so a
//! checked write is as parallel as an unchecked one). Each executes its partition of the plan
//! and, batch by batch, evaluates each predicate (NULL counts as a violation), counts passes and
//! failures in counters all of them share, removes rows that violate a `DROP ROW` rule and
//! remembers up to five rows that violate a `FAIL UPDATE` rule. When its input ends with any
//! such row, its stream ends in an error: the Delta write is aborted before its commit, so the
//! table keeps its previous version.

use std::sync::{Arc, Mutex};

use arrow::array::{Array, BooleanArray};
use arrow::compute::{and, filter_record_batch, is_not_null};
use arrow::datatypes::SchemaRef;
use arrow::record_batch::RecordBatch;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::catalog::streaming::StreamingTable;
use datafusion::common::DFSchema;
use datafusion::datasource::provider_as_source;
use datafusion::error::DataFusionError;
use datafusion::execution::{SendableRecordBatchStream, TaskContext};
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder};
use datafusion::physical_expr::PhysicalExpr;
use datafusion::physical_plan::stream::RecordBatchStreamAdapter;
use datafusion::physical_plan::streaming::PartitionStream;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};
use datafusion::prelude::SessionContext;
use futures::StreamExt;
use knut_thund::backend::{DataQuality, ExpectationMetrics};
use knut_thund::ir::{Dataset, ViolationAction};

use crate::error::{NativeError, Result};

/// Running counts of one flow's expectations.
#[derive(Debug, Default, Clone)]
pub(crate) struct Counters {
    passed: Vec<u64>,
    failed: Vec<u64>,
    dropped: u64,
}

/// Checks a dataset's expectations on the rows of a plan.
pub(crate) struct Checker {
    dataset: Dataset,
    exprs: Vec<Arc<dyn PhysicalExpr>>,
    counters: Arc<Mutex<Counters>>,
    /// A view's counts, one per scan: a view read by two flows is scanned twice, and its rows
    /// are reported once (the fullest scan), never summed.
    scans: Mutex<Vec<Arc<Mutex<Counters>>>>,
}

impl Checker {
    /// Compiles the dataset's predicates against the plan's schema. A predicate that does not
    /// fit the rows (unknown column, wrong type) is an error at its own file:line.
    pub(crate) fn new(ctx: &SessionContext, dataset: &Dataset, plan: &LogicalPlan) -> Result<Self> {
        let schema: &DFSchema = plan.schema();
        let state = ctx.state();
        let mut exprs = Vec::new();
        for e in &dataset.expectations {
            let err = |m: String| NativeError::Plan {
                location: e.location.to_string(),
                message: format!("expectation `{}` on `{}`: {m}", e.name, dataset.name),
            };
            let logical = crate::engine::plan_expr(ctx, &e.predicate, schema).map_err(|x| err(x.strip_backtrace()))?;
            exprs.push(state.create_physical_expr(logical, schema).map_err(|x| err(x.strip_backtrace()))?);
        }
        let n = exprs.len();
        let counters = Counters { passed: vec![0; n], failed: vec![0; n], dropped: 0 };
        Ok(Checker {
            dataset: dataset.clone(),
            exprs,
            counters: Arc::new(Mutex::new(counters)),
            scans: Mutex::default(),
        })
    }

    /// The metrics so far, in the shape of DLT's event log.
    pub(crate) fn metrics(&self) -> DataQuality {
        let mut c = self.counters.lock().map(|c| c.clone()).unwrap_or_default();
        let rows = |c: &Counters| c.passed.first().copied().unwrap_or(0) + c.failed.first().copied().unwrap_or(0);
        let scans = self.scans.lock().map(|s| s.clone()).unwrap_or_default();
        let fullest = scans.iter().filter_map(|s| s.lock().ok().map(|s| s.clone())).max_by_key(rows);
        if let Some(scan) = fullest {
            for (total, n) in c.passed.iter_mut().zip(&scan.passed) {
                *total += n;
            }
            for (total, n) in c.failed.iter_mut().zip(&scan.failed) {
                *total += n;
            }
            c.dropped += scan.dropped;
        }
        let c = (c.passed, c.failed, c.dropped);
        DataQuality {
            expectations: self
                .dataset
                .expectations
                .iter()
                .enumerate()
                .map(|(i, e)| ExpectationMetrics {
                    name: e.name.clone(),
                    dataset: self.dataset.name.to_string(),
                    action: e.action,
                    passed_records: c.0.get(i).copied().unwrap_or(0),
                    failed_records: c.1.get(i).copied().unwrap_or(0),
                })
                .collect(),
            dropped_records: c.2,
        }
    }

    /// Wraps the plan: its rows, checked, as a table to write from. Counts add up across calls
    /// (the batches of one flow).
    pub(crate) async fn wrap(&self, ctx: &SessionContext, plan: LogicalPlan) -> Result<Arc<StreamingTable>> {
        self.wrap_counting(ctx, plan, Arc::clone(&self.counters)).await
    }

    /// Wraps one scan of a view: its counts are kept apart from other scans' (`scans`).
    pub(crate) async fn wrap_scan(&self, ctx: &SessionContext, plan: LogicalPlan) -> Result<Arc<StreamingTable>> {
        let n = self.exprs.len();
        let counters = Arc::new(Mutex::new(Counters { passed: vec![0; n], failed: vec![0; n], dropped: 0 }));
        if let Ok(mut scans) = self.scans.lock() {
            scans.push(Arc::clone(&counters));
        }
        self.wrap_counting(ctx, plan, counters).await
    }

    async fn wrap_counting(
        &self,
        ctx: &SessionContext,
        plan: LogicalPlan,
        counters: Arc<Mutex<Counters>>,
    ) -> Result<Arc<StreamingTable>> {
        let schema = Arc::clone(plan.schema().inner());
        let physical = ctx.state().create_physical_plan(&plan).await?;
        let parts = (0..physical.output_partitioning().partition_count())
            .map(|partition| {
                Arc::new(CheckedPartition {
                    schema: Arc::clone(&schema),
                    input: Arc::clone(&physical),
                    partition,
                    dataset: self.dataset.clone(),
                    exprs: self.exprs.clone(),
                    counters: Arc::clone(&counters),
                }) as Arc<dyn PartitionStream>
            })
            .collect();
        Ok(Arc::new(StreamingTable::try_new(schema, parts)?))
    }

    /// The plan's rows, checked, as a plan to write from.
    pub(crate) async fn checked_plan(&self, ctx: &SessionContext, plan: LogicalPlan) -> Result<LogicalPlan> {
        let table = self.wrap(ctx, plan).await?;
        Ok(LogicalPlanBuilder::scan("checked", provider_as_source(table), None)?.build()?)
    }
}

struct CheckedPartition {
    schema: SchemaRef,
    input: Arc<dyn ExecutionPlan>,
    /// The partition of `input` this one checks.
    partition: usize,
    dataset: Dataset,
    exprs: Vec<Arc<dyn PhysicalExpr>>,
    counters: Arc<Mutex<Counters>>,
}

impl std::fmt::Debug for CheckedPartition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CheckedPartition({})", self.dataset.name)
    }
}

/// What one batch told us about `FAIL UPDATE` rules: (expectation index, row text).
type FailSample = (usize, String);

impl CheckedPartition {
    fn check(&self, batch: RecordBatch, samples: &mut Vec<FailSample>) -> datafusion::error::Result<RecordBatch> {
        let rows = batch.num_rows();
        let mut keep: Option<BooleanArray> = None;
        let mut results = Vec::with_capacity(self.exprs.len());
        for expr in &self.exprs {
            let value = expr.evaluate(&batch)?.into_array(rows)?;
            let b = value
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| DataFusionError::Plan("an expectation predicate is not boolean".into()))?;
            // NULL is a violation: pass = value AND value IS NOT NULL.
            let pass = and(b, &is_not_null(b)?)?;
            results.push(pass);
        }
        let mut counters = self.counters.lock().map_err(|_| DataFusionError::Internal("counters poisoned".into()))?;
        for (i, pass) in results.iter().enumerate() {
            let ok = pass.true_count() as u64;
            counters.passed[i] += ok;
            counters.failed[i] += rows as u64 - ok;
            match self.dataset.expectations[i].action {
                ViolationAction::Warn => {}
                ViolationAction::Drop => {
                    keep = Some(match keep {
                        Some(k) => and(&k, pass)?,
                        None => pass.clone(),
                    })
                }
                ViolationAction::Fail => {
                    if ok as usize != rows && samples.len() < 5 {
                        let fmt = FormatOptions::default().with_null("NULL");
                        let cols: Vec<ArrayFormatter> = batch
                            .columns()
                            .iter()
                            .map(|c| ArrayFormatter::try_new(c.as_ref(), &fmt))
                            .collect::<std::result::Result<_, _>>()?;
                        for r in (0..rows).filter(|r| !pass.value(*r)).take(5 - samples.len()) {
                            let row: Vec<String> = batch
                                .schema()
                                .fields()
                                .iter()
                                .zip(&cols)
                                .map(|(f, c)| format!("{}={}", f.name(), c.value(r)))
                                .collect();
                            samples.push((i, format!("{{{}}}", row.join(", "))));
                        }
                    }
                }
            }
        }
        let out = match keep {
            Some(k) => {
                let out = filter_record_batch(&batch, &k)?;
                counters.dropped += (rows - out.num_rows()) as u64;
                out
            }
            None => batch,
        };
        // The rows leave under the logical plan's schema, which a writer creates the table with:
        // the physical plan may say a column is never NULL where the logical one does not (a
        // constant the optimizer folded), and delta-rs's file writer wants the two equal.
        match out.schema() == self.schema {
            true => Ok(out),
            false => Ok(out.with_schema(Arc::clone(&self.schema))?),
        }
    }

    /// The error of a `FAIL UPDATE` rule with violations, if any.
    fn failure(&self, samples: &[FailSample]) -> Option<DataFusionError> {
        let counters = self.counters.lock().ok()?;
        let mut parts = Vec::new();
        for (i, e) in self.dataset.expectations.iter().enumerate() {
            if e.action != ViolationAction::Fail || counters.failed[i] == 0 {
                continue;
            }
            let rows: Vec<&str> = samples.iter().filter(|(k, _)| *k == i).map(|(_, r)| r.as_str()).collect();
            parts.push(format!(
                "expectation `{}` (ON VIOLATION FAIL UPDATE, {}) on `{}` failed: {} row(s) violate `{}`; for example:\n    {}",
                e.name,
                e.location,
                self.dataset.name,
                counters.failed[i],
                e.predicate,
                rows.join("\n    ")
            ));
        }
        (!parts.is_empty()).then(|| DataFusionError::Execution(parts.join("\n")))
    }
}

impl PartitionStream for CheckedPartition {
    fn schema(&self) -> &SchemaRef {
        &self.schema
    }

    fn execute(&self, ctx: Arc<TaskContext>) -> SendableRecordBatchStream {
        let schema = Arc::clone(&self.schema);
        let this = CheckedPartition {
            schema: Arc::clone(&self.schema),
            input: Arc::clone(&self.input),
            partition: self.partition,
            dataset: self.dataset.clone(),
            exprs: self.exprs.clone(),
            counters: Arc::clone(&self.counters),
        };
        let stream = match this.input.execute(this.partition, ctx) {
            Err(e) => futures::stream::once(async move { Err(e) }).boxed(),
            Ok(input) => futures::stream::unfold(
                (this, input, Vec::<FailSample>::new(), false),
                |(this, mut input, mut samples, done)| async move {
                    if done {
                        return None;
                    }
                    match input.next().await {
                        Some(Ok(batch)) => {
                            let r = this.check(batch, &mut samples);
                            Some((r, (this, input, samples, false)))
                        }
                        Some(Err(e)) => Some((Err(e), (this, input, samples, true))),
                        None => this.failure(&samples).map(|e| (Err(e), (this, input, samples, true))),
                    }
                },
            )
            .boxed(),
        };
        Box::pin(RecordBatchStreamAdapter::new(schema, stream))
    }
}
