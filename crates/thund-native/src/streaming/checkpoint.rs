//! Streaming checkpoints: each run of a streaming flow processes only the input that arrived since
//! the last one, exactly once, even if the process is killed at any moment.
//!
//! A flow's progress is its checkpoint: per streaming source, how far it has read (a source
//! table's Delta version, or the set of files processed), the number of the last batch, and what
//! its kind of flow keeps between batches ([`KindState`]). One batch is committed in three steps:
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
//! A flow aggregating over event time keeps its watermark and the key of its open windows' rows
//! (written under a name of its own before step 1; the checkpoint that wins names the state that
//! goes with it), an AUTO CDC flow the highest sequence it applied and when it last collected
//! tombstones, a once flow whether it ran.
//!
//! Layout: `<storage>/checkpoints/<catalog>/<database>/<table>/<flow>/{state,pending}.json`
//! (`Storage::checkpoint_dir`), each holding `format_version` ([`CHECKPOINT_FORMAT_VERSION`]).
//! Format 2 kept every kind's fields side by side; it is read and migrated by the kind that
//! reads it ([`Checkpoint::migrated`]). The protocol itself is in `streaming`.

use std::collections::{BTreeMap, BTreeSet};

use arrow::datatypes::SchemaRef;
use deltalake::DeltaTable;
use knut_thund::ir::{QualifiedName, Read};
use serde::{Deserialize, Serialize};

use crate::delta::storage::Storage;
use crate::error::{NativeError, Result};

/// Version of the checkpoint files' format.
/// 2 added the watermark and the open windows' state of flows aggregating over event time;
/// 3 keeps each kind's own fields in [`KindState`] (format 2 had every kind's side by side).
pub(crate) const CHECKPOINT_FORMAT_VERSION: u32 = 3;

/// How far one flow has read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Checkpoint {
    /// [`CHECKPOINT_FORMAT_VERSION`].
    pub format_version: u32,
    /// Number of the last committed batch (0: none yet).
    pub batch: i64,
    /// Per streaming source (keyed by [`source_key`]), its offset.
    pub sources: BTreeMap<String, SourceOffset>,
    /// What the flow's kind keeps between batches.
    pub state: KindState,
}

/// What one kind of streaming flow keeps between batches, besides its sources' offsets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum KindState {
    /// A flow appending what its query returns for the new input keeps nothing more.
    Append,
    /// `INSERT INTO ONCE`: whether it ran.
    Once {
        /// The flow ran; it runs again only after a full refresh.
        done: bool,
    },
    /// An aggregation over a stream: its watermark and the rows of groups that can still change.
    Windowed {
        /// The watermark in milliseconds.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        watermark: Option<i64>,
        /// Key of the rows of windows still open after this batch (`Storage::window_state_key`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        open_windows: Option<String>,
    },
    /// AUTO CDC.
    AutoCdc {
        /// The highest `SEQUENCE BY` value applied (a one-row Arrow IPC stream, hex): a change
        /// above it cannot be late, so its key's history is not read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        sequence_applied: Option<String>,
        /// When expired tombstones were last collected (SCD 1; ms since the epoch).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tombstones_collected_at: Option<i64>,
    },
}

impl KindState {
    /// A short name for messages.
    pub(crate) fn label(&self) -> &'static str {
        match self {
            KindState::Append => "append",
            KindState::Once { .. } => "once",
            KindState::Windowed { .. } => "windowed aggregation",
            KindState::AutoCdc { .. } => "AUTO CDC",
        }
    }

    /// Whether `other` is state of the same kind.
    pub(crate) fn same_kind(&self, other: &KindState) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(other)
    }

    /// This kind's state as format 2 kept it, in the fields every kind shared.
    fn migrated_from(&self, v2: &V2Fields) -> KindState {
        match self {
            KindState::Append => KindState::Append,
            KindState::Once { .. } => KindState::Once { done: v2.once_done },
            KindState::Windowed { .. } => {
                KindState::Windowed { watermark: v2.watermark, open_windows: v2.window_state.clone() }
            }
            KindState::AutoCdc { .. } => KindState::AutoCdc {
                sequence_applied: v2.cdc_sequence_watermark.clone(),
                tombstones_collected_at: v2.tombstones_collected_at,
            },
        }
    }
}

/// A checkpoint file as stored, in any format this release reads.
#[derive(Deserialize)]
struct Stored {
    format_version: u32,
    batch: i64,
    #[serde(default)]
    sources: BTreeMap<String, SourceOffset>,
    /// Format 3.
    #[serde(default)]
    state: Option<KindState>,
    /// Format 2 and earlier.
    #[serde(flatten)]
    v2: V2Fields,
}

/// Every kind's fields of format 2, side by side.
#[derive(Deserialize, Default)]
struct V2Fields {
    #[serde(default)]
    once_done: bool,
    #[serde(default)]
    watermark: Option<i64>,
    #[serde(default)]
    window_state: Option<String>,
    #[serde(default)]
    tombstones_collected_at: Option<i64>,
    #[serde(default)]
    cdc_sequence_watermark: Option<String>,
}

impl Checkpoint {
    /// A flow's checkpoint before its first batch.
    pub(crate) fn initial(state: KindState) -> Checkpoint {
        Checkpoint { format_version: CHECKPOINT_FORMAT_VERSION, batch: 0, sources: BTreeMap::new(), state }
    }

    /// What the next batch commits once it is done: the same reads and state, one batch on.
    pub(crate) fn next(&self) -> Checkpoint {
        Checkpoint { format_version: CHECKPOINT_FORMAT_VERSION, batch: self.batch + 1, ..self.clone() }
    }

    /// A stored checkpoint of a flow of `kind` (its initial state), migrated to this format.
    fn migrated(stored: Stored, kind: &KindState, at: &str) -> Result<Checkpoint> {
        if stored.format_version > CHECKPOINT_FORMAT_VERSION {
            return Err(NativeError::Storage(format!(
                "{at}: checkpoint format {} is newer than this thund understands ({CHECKPOINT_FORMAT_VERSION})",
                stored.format_version
            )));
        }
        let state = match stored.state {
            Some(s) if stored.format_version >= 3 => s,
            _ => kind.migrated_from(&stored.v2),
        };
        if !state.same_kind(kind) {
            return Err(NativeError::Storage(format!(
                "{at}: the checkpoint belongs to {} flow, and the flow is now {}; full-refresh the table to \
                 process its input again as the new flow",
                article(state.label()),
                article(kind.label()),
            )));
        }
        Ok(Checkpoint {
            format_version: CHECKPOINT_FORMAT_VERSION,
            batch: stored.batch,
            sources: stored.sources,
            state,
        })
    }
}

fn article(label: &str) -> String {
    match label.starts_with(['a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U']) {
        true => format!("an {label}"),
        false => format!("a {label}"),
    }
}

/// Progress through one streaming source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum SourceOffset {
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
pub(crate) fn source_key(r: &Read) -> String {
    match r {
        Read::Dataset { name, .. } => format!("table:{name}"),
        Read::Files(f) => format!("files:{}:{}", f.format, f.path),
    }
}

/// What a batch starts from.
pub(crate) struct Recovered {
    /// The committed state.
    pub state: Checkpoint,
    /// The input a batch that failed before its commit recorded (each source's offset at its
    /// end), which the next batch reads up to instead of the newest input.
    pub redo: Option<BTreeMap<String, SourceOffset>>,
}

/// A flow's checkpoint files.
pub(crate) struct CheckpointStore {
    storage: Storage,
    dir: String,
    /// The flow's kind, as its state before the first batch.
    kind: KindState,
}

impl CheckpointStore {
    /// The store in folder `dir` of `storage`, of a flow of the kind `kind` (its initial state).
    pub(crate) fn new(storage: &Storage, dir: String, kind: KindState) -> Self {
        CheckpointStore { storage: storage.clone(), dir, kind }
    }

    fn state_key(&self) -> String {
        format!("{}/state.json", self.dir)
    }

    fn pending_key(&self) -> String {
        format!("{}/pending.json", self.dir)
    }

    async fn read(&self, key: &str) -> Result<Option<Checkpoint>> {
        match self.storage.read_json::<Stored>(key).await? {
            Some(stored) => Ok(Some(Checkpoint::migrated(stored, &self.kind, &self.storage.display(key))?)),
            None => Ok(None),
        }
    }

    /// Loads the state, first resolving an intent left by a crash or a failed batch:
    /// `committed_batch` is the target table's transaction version for this flow.
    pub(crate) async fn recover(&self, committed_batch: Option<i64>) -> Result<Recovered> {
        self.resolve(committed_batch, true).await
    }

    /// The state [`Self::recover`] would load, writing nothing: what a dry run plans from. The
    /// intent stays for the run that owns it (a live run beside the dry run may be writing it).
    pub(crate) async fn peek(&self, committed_batch: Option<i64>) -> Result<Recovered> {
        self.resolve(committed_batch, false).await
    }

    async fn resolve(&self, committed_batch: Option<i64>, write: bool) -> Result<Recovered> {
        let state = match self.read(&self.state_key()).await? {
            Some(state) => state,
            None => Checkpoint::initial(self.kind.clone()),
        };
        let Some(pending) = self.read(&self.pending_key()).await? else {
            return Ok(Recovered { state, redo: None });
        };
        if committed_batch.is_some_and(|b| b >= pending.batch) {
            // The data commit of the pending batch landed: the intent is the truth.
            if write {
                self.storage.write_json(&self.state_key(), &pending).await?;
                self.clear_pending().await?;
            }
            return Ok(Recovered { state: pending, redo: None });
        }
        // The batch did not land, but parts of it may have been written (an AUTO CDC history
        // append): it is redone over exactly the input it recorded, whatever arrived since. The
        // intent stays until the batch commits, so a second failure redoes the same input again.
        let redo = (pending.batch == state.batch + 1).then_some(pending.sources);
        Ok(Recovered { state, redo })
    }

    /// Forgets an intent whose input is gone (nothing of it can be redone): the next batch plans
    /// from the committed state.
    pub(crate) async fn abandon_pending(&self) -> Result<()> {
        self.clear_pending().await
    }

    /// The batch number of a leftover intent, if any.
    pub(crate) async fn pending_batch(&self) -> Result<Option<i64>> {
        Ok(self.storage.read_json::<Stored>(&self.pending_key()).await?.map(|c| c.batch))
    }

    /// Records what the next batch covers: its input before anything of it is written, and again
    /// with the kind's state once it is staged.
    pub(crate) async fn write_pending(&self, next: &Checkpoint) -> Result<()> {
        self.storage.write_json(&self.pending_key(), next).await
    }

    /// Step 3: the batch is committed.
    pub(crate) async fn commit(&self, next: &Checkpoint) -> Result<()> {
        self.storage.write_json(&self.state_key(), next).await?;
        self.clear_pending().await
    }

    async fn clear_pending(&self) -> Result<()> {
        self.storage.delete(&self.pending_key()).await
    }
}

/// The application id a flow's commits carry.
pub(crate) fn app_id(flow: &QualifiedName) -> String {
    format!("thund:{flow}")
}

/// The target's transaction version for `app`, if the table exists.
pub(crate) async fn committed_batch(table: Option<&DeltaTable>, app: &str) -> Result<Option<i64>> {
    let Some(table) = table else { return Ok(None) };
    let Ok(state) = table.snapshot() else { return Ok(None) };
    Ok(state.transaction_version(table.log_store().as_ref(), app).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored(json: &str) -> Stored {
        serde_json::from_str(json).unwrap()
    }

    /// Format 2 as the release before format 3 wrote it: every kind's fields side by side.
    const V2_WINDOWED: &str = r#"{"format_version":2,"batch":3,"sources":{"table:spark_catalog.default.events":{"kind":"table","version":7,"table_id":"abc"}},"once_done":false,"watermark":1767261540000,"window_state":"checkpoints/spark_catalog/default/w/spark_catalog.default.w/windows-3.arrow"}"#;
    const V2_CDC: &str = r#"{"format_version":2,"batch":2,"sources":{},"once_done":false,"tombstones_collected_at":1767261540123,"cdc_sequence_watermark":"ffff"}"#;
    const V2_ONCE: &str = r#"{"format_version":2,"batch":1,"sources":{},"once_done":true}"#;

    #[test]
    fn a_format_2_checkpoint_is_read_as_the_state_of_the_kind_that_reads_it() {
        let windowed = KindState::Windowed { watermark: None, open_windows: None };
        let c = Checkpoint::migrated(stored(V2_WINDOWED), &windowed, "w").unwrap();
        assert_eq!(c.format_version, CHECKPOINT_FORMAT_VERSION);
        assert_eq!(c.batch, 3);
        assert_eq!(
            c.sources["table:spark_catalog.default.events"],
            SourceOffset::Table { version: 7, table_id: Some("abc".into()) }
        );
        assert_eq!(
            c.state,
            KindState::Windowed {
                watermark: Some(1767261540000),
                open_windows: Some(
                    "checkpoints/spark_catalog/default/w/spark_catalog.default.w/windows-3.arrow".into()
                )
            }
        );
        let cdc = KindState::AutoCdc { sequence_applied: None, tombstones_collected_at: None };
        let c = Checkpoint::migrated(stored(V2_CDC), &cdc, "c").unwrap();
        assert_eq!(
            c.state,
            KindState::AutoCdc { sequence_applied: Some("ffff".into()), tombstones_collected_at: Some(1767261540123) }
        );
        let c = Checkpoint::migrated(stored(V2_ONCE), &KindState::Once { done: false }, "o").unwrap();
        assert_eq!(c.state, KindState::Once { done: true });
        let c = Checkpoint::migrated(stored(V2_ONCE), &KindState::Append, "a").unwrap();
        assert_eq!((c.batch, c.state), (1, KindState::Append));
    }

    #[test]
    fn format_3_keeps_each_kinds_state_and_reads_back_as_written() {
        let c = Checkpoint {
            format_version: CHECKPOINT_FORMAT_VERSION,
            batch: 4,
            sources: BTreeMap::new(),
            state: KindState::AutoCdc { sequence_applied: Some("00ff".into()), tombstones_collected_at: None },
        };
        let json = serde_json::to_string(&c).unwrap();
        assert!(json.contains(r#""state":{"kind":"auto_cdc","sequence_applied":"00ff"}"#), "{json}");
        assert!(!json.contains("once_done") && !json.contains("watermark"), "{json}");
        let back = Checkpoint::migrated(
            stored(&json),
            &KindState::AutoCdc { sequence_applied: None, tombstones_collected_at: None },
            "c",
        )
        .unwrap();
        assert_eq!(back, c);
    }

    #[test]
    fn a_checkpoint_of_another_kind_or_a_newer_format_is_refused() {
        let c = Checkpoint::initial(KindState::Windowed { watermark: Some(5), open_windows: None });
        let json = serde_json::to_string(&c).unwrap();
        let e = Checkpoint::migrated(stored(&json), &KindState::Append, "x/state.json").unwrap_err().to_string();
        assert!(
            e.contains("x/state.json") && e.contains("a windowed aggregation flow") && e.contains("full-refresh"),
            "{e}"
        );
        let newer = json.replace(r#""format_version":3"#, r#""format_version":4"#);
        let e = Checkpoint::migrated(stored(&newer), &KindState::Append, "x").unwrap_err().to_string();
        assert!(e.contains("format 4 is newer"), "{e}");
    }
}
