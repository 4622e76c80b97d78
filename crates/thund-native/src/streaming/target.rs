//! Where a streaming flow's rows go: its streaming table, a Delta sink, or a file sink. Each
//! says in its own way whether a batch's commit landed (a Delta table by the flow's application
//! transaction, a file sink by its batch marker), so the protocol can resolve a crash's intent.

use datafusion::logical_expr::LogicalPlan;
use deltalake::kernel::Transaction;
use deltalake::DeltaTable;
use knut_thund::ir::DatasetKind;
use url::Url;

use super::checkpoint::{app_id, committed_batch};
use super::sink::FileSink;
use crate::delta::storage::local_commits;
use crate::delta::table::{dir_url, write_append};
use crate::error::Result;
use crate::flow::FlowJob;

/// Where a flow's batches are committed.
pub(crate) struct Target {
    /// The kind of place.
    pub place: Place,
    /// The Delta table's URL (a file sink's folder).
    pub url: Url,
    /// The Delta table as the batch found it; `None` before its first commit, and for a file
    /// sink.
    pub existing: Option<DeltaTable>,
    /// The application id of the flow's commits.
    pub app: String,
}

/// The kinds of place a streaming flow writes to.
pub(crate) enum Place {
    /// The streaming table's own Delta table under the storage root.
    Table,
    /// A Delta table at a sink's path.
    DeltaSink,
    /// Parquet, CSV or JSON files at a sink's path.
    Files(FileSink),
}

impl Target {
    /// The target of `job`'s flow, with its table loaded.
    pub(crate) async fn of(job: &FlowJob<'_>) -> Result<Target> {
        let (d, f, storage) = (job.dataset, job.flow, job.storage);
        let app = app_id(&f.name);
        let target = match d.kind {
            DatasetKind::Sink => {
                let sink = FileSink::of(d, &job.pipeline.root)?;
                let url = dir_url(&sink.path)?;
                match sink.format == "delta" {
                    true => {
                        // A process that died while creating the table may leave its log folder
                        // without a commit: the table does not exist yet.
                        let existing = match local_commits(&sink.path).next().is_some() {
                            true => Some(DeltaTable::try_from_url(url.clone()).await?),
                            false => None,
                        };
                        Target { place: Place::DeltaSink, url, existing, app }
                    }
                    false => Target { place: Place::Files(sink), url, existing: None, app },
                }
            }
            DatasetKind::StreamingTable => {
                let existing = storage.latest_table(&d.name).await?;
                Target { place: Place::Table, url: storage.table_url(&d.name), existing, app }
            }
            DatasetKind::MaterializedView | DatasetKind::TemporaryView | DatasetKind::PersistentView => {
                return Err(crate::error::NativeError::Execution(format!(
                    "internal error: {} `{}` has no streaming flows",
                    d.kind, d.name
                )))
            }
        };
        Ok(target)
    }

    /// The last batch of `job`'s flow that landed, when a crash left the intent of batch
    /// `pending`. A file sink's half-renamed files of an unfinished batch are removed here, except
    /// in a dry run: it takes no lock, so they may be a live run's staged files.
    pub(crate) async fn committed_batch(&self, job: &FlowJob<'_>, pending: Option<i64>) -> Result<Option<i64>> {
        let Some(b) = pending else { return Ok(None) };
        match &self.place {
            Place::Files(sink) => {
                let done = sink.committed_batch(&job.flow.name, Some(b));
                if done.is_none() && !job.dry {
                    sink.discard(&job.flow.name, b)?;
                }
                Ok(done)
            }
            // Finding a transaction version replays the table's whole log: only after a crash.
            Place::Table | Place::DeltaSink => committed_batch(self.existing.as_ref(), &self.app).await,
        }
    }

    /// Appends `plan`'s rows as batch `txn` of the flow: one Delta commit, or a file sink's
    /// marked batch.
    pub(crate) async fn append(&self, job: &FlowJob<'_>, plan: LogicalPlan, txn: Transaction) -> Result<u64> {
        let (ctx, d) = (job.ctx, job.dataset);
        match &self.place {
            Place::Files(sink) => sink.write(ctx, plan, &job.flow.name, txn.version).await,
            Place::Table | Place::DeltaSink => {
                // A streaming table is registered for the flows after it; a sink cannot be read.
                let register = match self.place {
                    Place::Table => true,
                    Place::DeltaSink | Place::Files(_) => false,
                };
                // A changed definition's new columns join the table first (`evolve_to_target`).
                let existing = match self.existing.clone() {
                    Some(t) => {
                        let t = crate::delta::table::with_new_columns(t, plan.schema().as_arrow()).await?;
                        crate::failpoint::hit("stream-after-new-columns", &job.flow.name)?;
                        Some(t)
                    }
                    None => None,
                };
                write_append(ctx, &self.url, d, plan, existing, txn, register).await
            }
        }
    }

    /// Whether the rows go to files rather than a Delta table.
    pub(crate) fn is_file_sink(&self) -> bool {
        match self.place {
            Place::Files(_) => true,
            Place::Table | Place::DeltaSink => false,
        }
    }
}
