//! What a view's inputs gained and lost since the versions a refresh recorded, for every
//! incremental technique: an input's new files when it was only appended to (the cheapest read),
//! else its net change between the two versions from its Delta log (`delta::changes`) — or why
//! that cannot be had, for the technique to recompute instead. [`Inputs`] holds them for every
//! input of a view, with each input's rows now and, for a join, then (`propagate`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use knut_thund::ir::QualifiedName;
use serde::{Deserialize, Serialize};

use super::planning::{Issue, IssueType};
use crate::delta::storage::Storage;
use crate::error::Result;
use crate::streaming::checkpoint::SourceOffset;
use crate::streaming::sources::{table_id, table_increment};

/// The rows an input gained and lost, and its offset after them.
pub(super) struct Changed {
    /// Rows gained.
    pub inserted: Arc<dyn TableProvider>,
    /// Rows lost (deleted, or the old side of an update); `None` when it was only appended to.
    pub deleted: Option<Arc<dyn TableProvider>>,
    /// Its offset after them, for the next refresh's record.
    pub offset: SourceOffset,
}

/// Why a refresh without a usable record recomputes.
pub(super) fn no_record(rebuild: bool) -> Issue {
    match rebuild {
        true => Issue::new(IssueType::FullRefreshRequested, "a full refresh recomputes the view"),
        false => Issue::new(
            IssueType::ChangeSetMissing,
            "no record of an earlier refresh fits (the first refresh, or the definition changed)",
        ),
    }
}

/// `offset`, or the unborn offset of `source` (it has no commit yet).
pub(super) async fn offset_or_unborn(
    storage: &Storage,
    source: &QualifiedName,
    offset: Option<SourceOffset>,
) -> SourceOffset {
    match offset {
        Some(o) => o,
        None => SourceOffset::Table { version: -1, table_id: table_id(storage, &storage.table_key(source)).await },
    }
}

/// Every row of `source` now, and its offset.
pub(super) async fn all_of(ctx: &SessionContext, storage: &Storage, source: &QualifiedName) -> Result<Changed> {
    let all = table_increment(ctx, storage, source, None, None).await?;
    let offset = offset_or_unborn(storage, source, all.offset).await;
    Ok(Changed { inserted: all.provider, deleted: None, offset })
}

/// What `source` gained and lost since `recorded`. With `appended_only`, an input that lost rows
/// is not read further (the caller cannot use what it lost). `Err` says why the view must be
/// recomputed instead: a recreated input, an unreadable or vacuumed version, a change that
/// costs as much to read as the input whole.
pub(super) async fn since(
    ctx: &SessionContext,
    storage: &Storage,
    source: &QualifiedName,
    recorded: &SourceOffset,
    appended_only: bool,
) -> Result<std::result::Result<Changed, Issue>> {
    if let Ok(new) = table_increment(ctx, storage, source, Some(recorded), None).await {
        let offset = offset_or_unborn(storage, source, new.offset).await;
        return Ok(Ok(Changed { inserted: new.provider, deleted: None, offset }));
    }
    if appended_only {
        let why = format!("`{source}` lost or rewrote rows since the last refresh");
        return Ok(Err(Issue::new(IssueType::InputNotAppendOnly, why)));
    }
    let missing = |why: String| Ok(Err(Issue::new(IssueType::ChangeSetMissing, why)));
    let SourceOffset::Table { version, table_id: was } = recorded else {
        return missing(format!("no version of `{source}` was recorded"));
    };
    let id = table_id(storage, &storage.table_key(source)).await;
    if *version < 0 || &id != was {
        return missing(format!("`{source}` was recreated since the last refresh"));
    }
    let Some(latest) = storage.latest_table(source).await? else { return missing(format!("`{source}` is gone")) };
    let now = latest.version().map_or(-1, |v| v as i64);
    // The change as the flow that wrote it (or a view that read it before) knows it, else read
    // from the log.
    let known = id.as_deref().and_then(|id| storage.known_change(source, id, *version, now));
    let changes = match known {
        Some(known) => known,
        None => {
            let earlier = match deltalake::open_table_with_version(storage.table_url(source), *version as u64).await {
                Ok(t) => t,
                Err(e) => return missing(format!("version {version} of `{source}` cannot be read: {e}")),
            };
            let changes = match crate::delta::changes::between(&earlier, &latest).await {
                Ok(c) => Arc::new(c),
                Err(e) => {
                    return missing(format!("the change of `{source}` since version {version} cannot be read: {e}"))
                }
            };
            // Reading the change must cost less than reading the input whole.
            let whole = crate::delta::changes::live_rows(&latest)?;
            if changes.rows_read >= whole.max(1) {
                let why = format!(
                    "reading what `{source}` gained and lost ({} rows) costs as much as reading it whole ({whole} rows)",
                    changes.rows_read
                );
                return Ok(Err(Issue::new(IssueType::ChangeSetTooLarge, why)));
            }
            if let Some(id) = &id {
                storage.remember_change(source, id, *version, now, Arc::clone(&changes));
            }
            changes
        }
    };
    let schema = Arc::clone(&changes.schema);
    let table = |batches| -> Result<Arc<dyn TableProvider>> {
        Ok(Arc::new(MemTable::try_new(Arc::clone(&schema), vec![batches])?))
    };
    let lost = changes.deleted_rows() > 0;
    let offset = SourceOffset::Table { version: now, table_id: id };
    let deleted = if lost { Some(table(changes.deleted.clone())?) } else { None };
    Ok(Ok(Changed { inserted: table(changes.inserted.clone())?, deleted, offset }))
}

/// How far a refresh read each input of a view, by the input's qualified name.
pub(super) type Offsets = BTreeMap<String, SourceOffset>;

/// One input of a view as a refresh reads it.
pub(super) struct Input {
    /// Every row it holds at `offset`.
    pub now: Arc<dyn TableProvider>,
    /// Every row it held at the recorded offset, when it changed and a join needs it.
    pub before: Option<Arc<dyn TableProvider>>,
    /// The rows it gained and, if any, lost since the recorded offset; `None` when it did not
    /// change (or every row is read).
    pub change: Option<Change>,
    /// Its offset now, for the next refresh's record.
    pub offset: SourceOffset,
}

/// The rows an input gained and, if any, lost.
pub(super) struct Change {
    pub inserted: Arc<dyn TableProvider>,
    pub deleted: Option<Arc<dyn TableProvider>>,
}

/// The inputs of a view, by table name (as its plan's scans name them).
pub(super) struct Inputs(pub BTreeMap<String, Input>);

impl Inputs {
    /// Every row of every input now: what a recompute reads.
    pub(super) async fn now(ctx: &SessionContext, storage: &Storage, sources: &[QualifiedName]) -> Result<Inputs> {
        let mut inputs = BTreeMap::new();
        for source in sources {
            let all = all_of(ctx, storage, source).await?;
            let input = Input { now: all.inserted, before: None, change: None, offset: all.offset };
            inputs.insert(source.name.clone(), input);
        }
        Ok(Inputs(inputs))
    }

    /// What each input gained and lost since `recorded` (`since`), every row of it now, and
    /// every row it held then for the changed inputs `before` names (by table name, given the
    /// names of those that changed: what a join's change reads as it was, `propagate::befores`).
    /// `Err` says why the view must be recomputed instead.
    pub(super) async fn since(
        ctx: &SessionContext,
        storage: &Storage,
        sources: &[QualifiedName],
        recorded: &Offsets,
        appended_only: bool,
        before: impl Fn(&BTreeSet<String>) -> BTreeSet<String>,
    ) -> Result<std::result::Result<Inputs, Issue>> {
        let mut read = Vec::new();
        for source in sources {
            let Some(was) = recorded.get(&source.to_string()) else {
                let why = format!("no earlier refresh read `{source}`");
                return Ok(Err(Issue::new(IssueType::ChangeSetMissing, why)));
            };
            let mut steps = crate::flow::Steps::of("refresh input", source);
            let changed = match since(ctx, storage, source, was, appended_only).await? {
                Ok(c) => c,
                Err(why) => return Ok(Err(why)),
            };
            steps.done("read the change");
            read.push((source, was, changed));
        }
        // Only the earlier versions a join's change reads are opened: each costs a log replay.
        let changed: BTreeSet<String> =
            read.iter().filter(|(_, was, c)| &c.offset != *was).map(|(s, _, _)| s.name.clone()).collect();
        let wanted = before(&changed);
        let mut inputs = BTreeMap::new();
        for (source, was, changed) in read {
            let mut steps = crate::flow::Steps::of("refresh input", source);
            let at = |offset: &SourceOffset| {
                let offset = offset.clone();
                async move { table_increment(ctx, storage, source, None, Some(&offset)).await.map(|t| t.provider) }
            };
            let input = if &changed.offset == was {
                Input { now: at(was).await?, before: None, change: None, offset: changed.offset }
            } else {
                let earlier = match (wanted.contains(&source.name), was) {
                    (true, SourceOffset::Table { version, .. }) if *version >= 0 => Some(at(was).await?),
                    (true, _) => {
                        let why = format!("`{source}` had no rows at the last refresh");
                        return Ok(Err(Issue::new(IssueType::ChangeSetMissing, why)));
                    }
                    (false, _) => None,
                };
                Input {
                    now: at(&changed.offset).await?,
                    before: earlier,
                    change: Some(Change { inserted: changed.inserted, deleted: changed.deleted }),
                    offset: changed.offset,
                }
            };
            steps.done("open the versions");
            inputs.insert(source.name.clone(), input);
        }
        Ok(Ok(Inputs(inputs)))
    }

    /// Each input's offset, by qualified name.
    pub(super) fn offsets(&self, sources: &[QualifiedName]) -> Offsets {
        sources.iter().filter_map(|s| self.0.get(&s.name).map(|i| (s.to_string(), i.offset.clone()))).collect()
    }
}

/// Version of [`ViewRecord`]'s format.
const RECORD_FORMAT_VERSION: u32 = 2;

/// What a maintained view's table holds, written after each refresh beside the view
/// (`<view>.<technique>.json`): the input version its rows reach, and the view version holding
/// them. A crash between the view's commit and the record leaves a view version the record does
/// not name, so the next refresh recomputes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(super) struct ViewRecord {
    format_version: u32,
    /// The view's definition and table details; a change means a recompute.
    definition: String,
    /// How far into each input the view's rows reach.
    pub sources: Offsets,
    /// The view's version holding them.
    view_version: i64,
}

impl ViewRecord {
    fn key(storage: &Storage, view: &QualifiedName, technique: &str) -> String {
        storage.state_record_key(view).replace(".json", &format!(".{technique}.json"))
    }

    /// The record of `view` if it still describes it (the same definition, its version the
    /// view's current one) and no `rebuild` is asked for; and the view's current version.
    pub(super) async fn usable(
        storage: &Storage,
        view: &QualifiedName,
        technique: &str,
        definition: &str,
        rebuild: bool,
    ) -> Result<(Option<ViewRecord>, i64)> {
        let record: Option<ViewRecord> = storage.read_json(&Self::key(storage, view, technique)).await.unwrap_or(None);
        let version = storage.delta_version(&storage.table_key(view)).await?;
        let usable = record.filter(|r| {
            !rebuild
                && r.format_version == RECORD_FORMAT_VERSION
                && r.definition == definition
                && r.view_version == version
        });
        Ok((usable, version))
    }

    /// Records that `view`'s current version reaches `sources` of its inputs.
    pub(super) async fn write(
        storage: &Storage,
        view: &QualifiedName,
        technique: &str,
        definition: String,
        sources: Offsets,
    ) -> Result<()> {
        let view_version = storage.delta_version(&storage.table_key(view)).await?;
        let record = ViewRecord { format_version: RECORD_FORMAT_VERSION, definition, sources, view_version };
        storage.write_json(&Self::key(storage, view, technique), &record).await
    }
}
