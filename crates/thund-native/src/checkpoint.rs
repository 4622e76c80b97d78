//! Streaming checkpoints: each run of a streaming flow processes only the input that arrived since
//! the last one, exactly once, even if the process is killed at any moment.
//!
//! A flow's progress is its checkpoint: per streaming source, how far it has read (a source
//! table's Delta version, or the set of files processed), plus the number of the last batch.
//! One batch is committed in three steps:
//!
//! ```text
//!  1. write  pending.json  {batch: n+1, offsets: new}     (the intent: what batch n+1 covers)
//!  2. commit the rows to the target Delta table, with application transaction (flow, n+1)
//!  3. write  state.json    {batch: n+1, offsets: new}    and remove pending.json
//! ```
//! After a crash, a leftover `pending.json` is resolved against the target table: if the table's
//! transaction version for the flow is n+1, the commit landed and the intent becomes the state;
//! otherwise the intent is dropped and the batch is recomputed. Rows are therefore never lost and
//! never written twice. Files are written with an atomic rename, so a checkpoint is never torn.
//!
//! A flow aggregating over event time also carries its watermark and the key of its open windows'
//! rows (`event_time`), written under a name of its own before step 1; the checkpoint that wins
//! names the state that goes with it, and the loser's file is removed by the next commit.
//!
//! Layout: `<storage>/checkpoints/<catalog>/<database>/<table>/<flow>/{state,pending}.json`
//! (`Storage::checkpoint_dir`), each holding `format_version` ([`CHECKPOINT_FORMAT_VERSION`]).
//! What a batch reads from each source is in `sources`; the batch itself in `streaming`.

use std::collections::{BTreeMap, BTreeSet};

use arrow::datatypes::SchemaRef;
use deltalake::DeltaTable;
use knut_thund::ir::{QualifiedName, Read};
use serde::{Deserialize, Serialize};

use crate::error::{NativeError, Result};
use crate::storage::Storage;

/// Version of the checkpoint files' format.
/// 2 added the watermark and the open windows' state of flows aggregating over event time.
pub const CHECKPOINT_FORMAT_VERSION: u32 = 2;

/// How far one flow has read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Checkpoint {
    /// [`CHECKPOINT_FORMAT_VERSION`].
    pub format_version: u32,
    /// Number of the last committed batch (0: none yet).
    pub batch: i64,
    /// Per streaming source (keyed by [`source_key`]), its offset.
    pub sources: BTreeMap<String, SourceOffset>,
    /// A once flow has run.
    #[serde(default)]
    pub once_done: bool,
    /// The watermark in milliseconds, for a flow aggregating over event time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub watermark: Option<i64>,
    /// Key of the rows of windows still open after this batch (`Storage::window_state_key`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_state: Option<String>,
    /// When an SCD 1 AUTO CDC flow last collected expired tombstones (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tombstones_collected_at: Option<i64>,
    /// The highest `SEQUENCE BY` value an AUTO CDC flow has applied (a one-row Arrow IPC stream,
    /// hex): a change above it cannot be late, so its key's history is not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cdc_sequence_watermark: Option<String>,
}

/// Progress through one streaming source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SourceOffset {
    /// A Delta table (another streaming table): the last version read.
    Table {
        /// Delta version.
        version: i64,
        /// The table's id (Delta `metaData.id`): a full refresh creates a new table whose
        /// version numbers start again, so the version alone cannot tell them apart.
        #[serde(default)]
        table_id: Option<String>,
    },
    /// Files: every file processed, and the schema fixed on the first batch.
    Files {
        /// Paths relative to the source folder.
        processed: BTreeSet<String>,
        /// The schema inferred from the first files, kept for all later files.
        schema: Option<SchemaRef>,
    },
}

/// The key of a streaming source in a checkpoint.
pub fn source_key(r: &Read) -> String {
    match r {
        Read::Dataset { name, .. } => format!("table:{name}"),
        Read::Files(f) => format!("files:{}:{}", f.format, f.path),
    }
}

/// A flow's checkpoint files.
pub struct CheckpointStore {
    storage: Storage,
    dir: String,
}

impl CheckpointStore {
    /// The store in folder `dir` of `storage`.
    pub fn new(storage: &Storage, dir: String) -> Self {
        CheckpointStore { storage: storage.clone(), dir }
    }

    fn state_key(&self) -> String {
        format!("{}/state.json", self.dir)
    }

    fn pending_key(&self) -> String {
        format!("{}/pending.json", self.dir)
    }

    /// Loads the state, first resolving an intent left by a crash: `committed_batch` is the
    /// target table's transaction version for this flow.
    pub async fn recover(&self, committed_batch: Option<i64>) -> Result<Checkpoint> {
        self.resolve(committed_batch, true).await
    }

    /// The state [`Self::recover`] would load, writing nothing: what a dry run plans from. The
    /// intent stays for the run that owns it (a live run beside the dry run may be writing it).
    pub async fn peek(&self, committed_batch: Option<i64>) -> Result<Checkpoint> {
        self.resolve(committed_batch, false).await
    }

    async fn resolve(&self, committed_batch: Option<i64>, write: bool) -> Result<Checkpoint> {
        let state: Checkpoint = self
            .storage
            .read_json(&self.state_key())
            .await?
            .unwrap_or(Checkpoint { format_version: CHECKPOINT_FORMAT_VERSION, ..Default::default() });
        if state.format_version > CHECKPOINT_FORMAT_VERSION {
            return Err(NativeError::Storage(format!(
                "{}: checkpoint format {} is newer than this thund understands ({CHECKPOINT_FORMAT_VERSION})",
                self.storage.display(&self.dir),
                state.format_version
            )));
        }
        let Some(pending) = self.storage.read_json::<Checkpoint>(&self.pending_key()).await? else {
            return Ok(state);
        };
        let landed = committed_batch.is_some_and(|b| b >= pending.batch);
        if write {
            if landed {
                // The data commit of the pending batch landed: the intent is the truth.
                self.storage.write_json(&self.state_key(), &pending).await?;
            }
            self.clear_pending().await?;
        }
        Ok(if landed { pending } else { state })
    }

    /// The batch number of a leftover intent, if any.
    pub async fn pending_batch(&self) -> Result<Option<i64>> {
        Ok(self.storage.read_json::<Checkpoint>(&self.pending_key()).await?.map(|c| c.batch))
    }

    /// Step 1: record what the next batch covers.
    pub async fn write_pending(&self, next: &Checkpoint) -> Result<()> {
        self.storage.write_json(&self.pending_key(), next).await
    }

    /// Step 3: the batch is committed.
    pub async fn commit(&self, next: &Checkpoint) -> Result<()> {
        self.storage.write_json(&self.state_key(), next).await?;
        self.clear_pending().await
    }

    async fn clear_pending(&self) -> Result<()> {
        self.storage.delete(&self.pending_key()).await
    }
}

/// The application id a flow's commits carry.
pub fn app_id(flow: &QualifiedName) -> String {
    format!("thund:{flow}")
}

/// The target's transaction version for `app`, if the table exists.
pub async fn committed_batch(table: Option<&DeltaTable>, app: &str) -> Result<Option<i64>> {
    let Some(table) = table else { return Ok(None) };
    let Ok(state) = table.snapshot() else { return Ok(None) };
    Ok(state.transaction_version(table.log_store().as_ref(), app).await?)
}
