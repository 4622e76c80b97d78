//! Streaming sources: what a batch reads from each `STREAM` read — the files not yet processed
//! under a folder, or the rows a source table committed since its last read — with the offset
//! that the batch's checkpoint records (`checkpoint`).
//!
//! Files still being written: a folder's files are taken by name, once each, and names starting
//! with `.` or `_` are never taken (Spark's and Hadoop's convention for temporary and hidden
//! files). So a writer makes a file appear whole by writing it under such a name (or in another
//! folder of the same file system) and renaming it into place: a rename is atomic, and the file
//! is read whole by the first batch that lists it. A file written in place, under its final
//! name, can be listed while half written and is then read as it stood — which is why the rule
//! is the writer's, as with Spark's file sources and Auto Loader.

use crate::engine::files::list_files;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::TableProvider;
use datafusion::datasource::file_format::csv::CsvFormat;
use datafusion::datasource::file_format::json::JsonFormat;
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::{ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl};
use datafusion::datasource::{MemTable, ViewTable};
use datafusion::prelude::SessionContext;
use deltalake::DeltaTable;
use futures::future::BoxFuture;
use knut_thund::ir::{Dataset, FileSource, Pipeline, QualifiedName, Query, Read};

use crate::delta::storage::{resolve_project_path, Storage};
use crate::engine::{plan_query_with_streams, StreamTables};
use crate::error::{NativeError, Result};
use crate::expect::Checker;
use crate::streaming::append::stream_table_name;
use crate::streaming::checkpoint::{source_key, Checkpoint, SourceOffset};

/// New input of one streaming source for the next batch.
pub(crate) struct NewInput {
    /// A provider over only the new rows (empty when there are none).
    pub provider: Arc<dyn TableProvider>,
    /// Whether there are new rows (files) at all.
    pub has_data: bool,
    /// The offset after this batch.
    pub offset: Option<SourceOffset>,
}

/// The rows of a source table committed after `last` (`None`: from the start).
pub(crate) async fn table_increment(
    ctx: &SessionContext,
    storage: &Storage,
    name: &QualifiedName,
    last: Option<&SourceOffset>,
    upto: Option<&SourceOffset>,
) -> Result<NewInput> {
    let key = storage.table_key(name);
    let (last_version, last_id) = match last {
        Some(SourceOffset::Table { version, table_id }) => (Some(*version), table_id.clone()),
        Some(SourceOffset::Files { .. }) => {
            return Err(NativeError::Storage(format!("checkpoint of `{name}` is not a table offset")))
        }
        None => (None, None),
    };
    let unborn = matches!(upto, Some(SourceOffset::Table { version, .. }) if *version < 0);
    let table = match unborn {
        // A batch redone from before the source's first commit.
        true => None,
        false => storage.latest_table(name).await?,
    };
    let Some(table) = table else {
        // The source has not produced anything yet.
        let empty = MemTable::try_new(Arc::new(Schema::empty()), vec![vec![]])?;
        return Ok(NewInput { provider: Arc::new(empty), has_data: false, offset: last.cloned() });
    };
    let url = storage.table_url(name);
    // A batch redone reads up to the version it recorded, not to the newest.
    let table = match upto {
        Some(SourceOffset::Table { version, .. }) if table.version().is_some_and(|v| (v as i64) > *version) => {
            deltalake::open_table_with_version(url.clone(), *version as u64).await?
        }
        _ => table,
    };
    table.update_datafusion_session(&ctx.state())?;
    let now = table.version().map_or(-1, |v| v as i64);
    let table_id = table_id(storage, &key).await;
    let rewritten = || {
        NativeError::Execution(format!(
            "streaming source `{name}` was rewritten since it was last read (a full refresh?); full-refresh this table too"
        ))
    };
    if last_id.is_some() && last_id != table_id {
        return Err(rewritten());
    }
    let files_now: BTreeSet<String> = active_files(&table)?;
    let added = match last_version {
        Some(v) if v >= 0 => match commits_since(storage, &key, v, now).await? {
            Commits::Added(added) if added.is_subset(&files_now) => added,
            Commits::Rewritten => return Err(rewritten()),
            // A commit file is gone (log cleanup) or unreadable: compare the two snapshots.
            Commits::Added(_) | Commits::Unknown => {
                let before = active_files(&deltalake::open_table_with_version(url, v as u64).await?)?;
                if !before.is_subset(&files_now) {
                    return Err(rewritten());
                }
                files_now.difference(&before).cloned().collect()
            }
        },
        _ => files_now,
    };
    let new: Vec<String> = added.into_iter().collect();
    let offset = Some(SourceOffset::Table { version: now, table_id });
    files_of(&table, new, offset).await
}

/// The rows of `files` of `table` (none: an empty input with the table's schema).
async fn files_of(table: &DeltaTable, files: Vec<String>, offset: Option<SourceOffset>) -> Result<NewInput> {
    if files.is_empty() {
        let schema = table.table_provider().await?.schema();
        let empty = MemTable::try_new(schema, vec![vec![]])?;
        return Ok(NewInput { provider: Arc::new(empty), has_data: false, offset });
    }
    let provider = crate::delta::filtered::of(table, Some(files)).await?;
    Ok(NewInput { provider, has_data: true, offset })
}

/// The rows a Delta table outside the pipeline (`` STREAM(delta.`path`) ``) committed after
/// `last`: the files its newest snapshot has that the one at `last`'s version had not. Data
/// removed since (a rewrite) ends the stream, as Delta's streaming source does by default.
pub(crate) async fn delta_path_increment(
    ctx: &SessionContext,
    f: &FileSource,
    root: &Path,
    last: Option<&SourceOffset>,
    upto: Option<&SourceOffset>,
) -> Result<NewInput> {
    let path = resolve_project_path(&f.path, root);
    let url = url::Url::from_directory_path(&path)
        .map_err(|_| NativeError::Execution(format!("bad delta path `{}`", path.display())))?;
    let last_version = match last {
        Some(SourceOffset::Table { version, .. }) => *version,
        Some(SourceOffset::Files { .. }) => {
            return Err(NativeError::Storage(format!("checkpoint of `{}` is not a table offset", f.path)))
        }
        None => -1,
    };
    let mut table = deltalake::open_table(url.clone())
        .await
        .map_err(|e| NativeError::Execution(format!("streaming source `delta.`{}``: {e}", f.path)))?;
    if let Some(SourceOffset::Table { version, .. }) = upto {
        // A batch redone reads up to the version it recorded.
        if *version < 0 {
            let empty = MemTable::try_new(Arc::new(Schema::empty()), vec![vec![]])?;
            return Ok(NewInput { provider: Arc::new(empty), has_data: false, offset: last.cloned() });
        }
        if table.version().is_some_and(|v| (v as i64) > *version) {
            table = deltalake::open_table_with_version(url.clone(), *version as u64).await?;
        }
    }
    table.update_datafusion_session(&ctx.state())?;
    let now = table.version().map_or(-1, |v| v as i64);
    let table_id = Some(table.snapshot()?.metadata().id().to_string());
    if let Some(SourceOffset::Table { table_id: Some(before), .. }) = last {
        if Some(before) != table_id.as_ref() {
            return Err(NativeError::Execution(format!(
                "streaming source `delta.`{}`` is another table than the one this stream read (it was replaced); full-refresh the streaming table",
                f.path
            )));
        }
    }
    let files_now = active_files(&table)?;
    let new: Vec<String> = match last_version {
        v if v >= 0 && v < now => {
            let before = active_files(&deltalake::open_table_with_version(url, v as u64).await?)?;
            if !before.is_subset(&files_now) {
                return Err(NativeError::Execution(format!(
                    "streaming source `delta.`{}`` removed data since it was last read (a rewrite or a delete); a stream reads only appended rows: full-refresh the streaming table to read it again",
                    f.path
                )));
            }
            files_now.difference(&before).cloned().collect()
        }
        v if v >= 0 => Vec::new(),
        _ => files_now.into_iter().collect(),
    };
    files_of(&table, new, Some(SourceOffset::Table { version: now, table_id })).await
}

/// What the commits after a version did to a source table's data.
enum Commits {
    /// Only added files (paths decoded as the snapshot lists them).
    Added(BTreeSet<String>),
    /// Removed data: the table was rewritten, and what the stream read before is not a prefix.
    Rewritten,
    /// A commit file is missing or unreadable.
    Unknown,
}

/// The files that commits `after + 1 ..= now` of the table at `table_key` added, read from the
/// commit files themselves: an incremental batch then reads one small file per new commit instead
/// of replaying the whole log a second time at the old version. Changes that leave the data as it
/// was (`dataChange: false`, e.g. a compaction) are skipped, as Delta's streaming source does.
async fn commits_since(storage: &Storage, table_key: &str, after: i64, now: i64) -> Result<Commits> {
    let mut added = BTreeSet::new();
    for version in after + 1..=now {
        let Some(bytes) = storage.get(&format!("{table_key}/_delta_log/{version:020}.json")).await? else {
            return Ok(Commits::Unknown);
        };
        for line in String::from_utf8_lossy(&bytes).lines().filter(|l| !l.trim().is_empty()) {
            let Ok(action) = serde_json::from_str::<serde_json::Value>(line) else { return Ok(Commits::Unknown) };
            let changes_data = |a: &serde_json::Value| a.get("dataChange").and_then(|d| d.as_bool()).unwrap_or(true);
            if let Some(add) = action.get("add").filter(|a| changes_data(a)) {
                let Some(path) = add.get("path").and_then(|p| p.as_str()) else { return Ok(Commits::Unknown) };
                added.insert(percent_encoding::percent_decode_str(path).decode_utf8_lossy().into_owned());
            }
            if action.get("remove").is_some_and(changes_data) {
                return Ok(Commits::Rewritten);
            }
        }
    }
    Ok(Commits::Added(added))
}

/// The Delta table id (`metaData.id` of its first commit, which never changes).
pub(crate) async fn table_id(storage: &Storage, table_key: &str) -> Option<String> {
    let first = storage.get(&format!("{table_key}/_delta_log/00000000000000000000.json")).await.ok()??;
    String::from_utf8_lossy(&first).lines().find_map(|l| {
        let v: serde_json::Value = serde_json::from_str(l).ok()?;
        v.get("metaData")?.get("id")?.as_str().map(str::to_string)
    })
}

fn active_files(table: &DeltaTable) -> Result<BTreeSet<String>> {
    Ok(table.snapshot()?.log_data().into_iter().map(|f| f.path().to_string()).collect())
}

/// How a stream's schema is inferred from its first files (DLT's `cloud_files` options).
#[derive(Debug, Default)]
pub(crate) struct Inference {
    /// Every column a string (Auto Loader's default for JSON and CSV): values keep their text,
    /// a nested JSON value its JSON text.
    pub strings: bool,
    /// Columns whose type is given (`cloudFiles.schemaHints`), added if the files lack them.
    pub hints: Option<Schema>,
    /// CSV without a header line: its columns are named by position, `_c0`, `_c1`, … as Spark
    /// names them.
    pub positional: bool,
}

impl Inference {
    pub(crate) fn of(f: &FileSource) -> Result<Self> {
        let strings = f.options.get("infercolumntypes").is_some_and(|v| v.eq_ignore_ascii_case("false"));
        let hints = match f.options.get("schemahints") {
            None => None,
            Some(_) if f.format == "parquet" => {
                return Err(NativeError::Execution(format!(
                    "`cloudFiles.schemaHints` on parquet files under `{}`: parquet files carry their types; cast the columns in the query instead",
                    f.path
                )))
            }
            Some(ddl) => Some(thund_sql::parse_ddl_schema(ddl).map_err(|e| {
                NativeError::Execution(format!("`cloudFiles.schemaHints` of `{}`: {e}", f.path))
            })?),
        };
        let header = f.options.get("header").is_some_and(|v| v.eq_ignore_ascii_case("true"));
        Ok(Inference { strings, hints, positional: f.format == "csv" && !header })
    }

    /// The inferred schema made what the options say.
    pub(crate) fn apply(&self, inferred: Schema) -> Schema {
        let mut fields: Vec<Field> = inferred
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let name = if self.positional { format!("_c{i}") } else { f.name().clone() };
                match self.strings {
                    true => Field::new(name, DataType::Utf8, true),
                    false => f.as_ref().clone().with_name(name),
                }
            })
            .collect();
        for hint in self.hints.iter().flat_map(|h| h.fields()) {
            match fields.iter_mut().find(|f| f.name().eq_ignore_ascii_case(hint.name())) {
                Some(f) => *f = Field::new(f.name(), hint.data_type().clone(), true),
                None => fields.push(Field::new(hint.name(), hint.data_type().clone(), true)),
            }
        }
        Schema::new(fields)
    }
}

fn file_format(f: &FileSource) -> Result<Arc<dyn FileFormat>> {
    Ok(match f.format.as_str() {
        "json" => Arc::new(JsonFormat::default()),
        "csv" => {
            let header = f.options.get("header").is_some_and(|v| v.eq_ignore_ascii_case("true"));
            Arc::new(CsvFormat::default().with_has_header(header))
        }
        "parquet" => Arc::new(ParquetFormat::default()),
        other => {
            return Err(NativeError::Execution(format!(
                "streaming reads of `{other}` files are not supported (json, csv and parquet are)"
            )))
        }
    })
}

/// The files under a file source that no earlier batch processed.
pub(crate) async fn files_increment(
    ctx: &SessionContext,
    f: &FileSource,
    root: &Path,
    last: Option<&SourceOffset>,
    upto: Option<&SourceOffset>,
) -> Result<NewInput> {
    let path = resolve_project_path(&f.path, root);
    // A path with wildcards lists its folder and keeps the files the pattern reads.
    let glob = crate::engine::files::path_glob(&path);
    let dir = glob.as_ref().map_or(path, |(base, _)| base.clone());
    let (mut processed, mut schema) = match last {
        Some(SourceOffset::Files { processed, schema }) => (processed.clone(), schema.clone()),
        Some(SourceOffset::Table { .. }) => {
            return Err(NativeError::Storage(format!("checkpoint of `{}` is not a file offset", f.path)))
        }
        None => (BTreeSet::new(), None),
    };
    if !dir.is_dir() {
        return Err(NativeError::Execution(format!("streaming source folder `{}` does not exist", dir.display())));
    }
    // A declared schema (`schema => 'a INT, …'`, pyspark's `.schema(…)`) is the stream's, from its
    // first batch on: its columns, in its order, of its types, whatever the files hold.
    if schema.is_none() {
        if let Some(ddl) = f.options.get("schema") {
            let declared = thund_sql::parse_ddl_schema(ddl)
                .map_err(|e| NativeError::Execution(format!("the schema of `{}`: {e}", f.path)))?;
            schema = Some(Arc::new(declared));
        }
    }
    // A batch redone reads the files it recorded, not files that arrived since.
    let recorded = match upto {
        Some(SourceOffset::Files { processed, .. }) => Some(processed),
        _ => None,
    };
    let new: Vec<String> = list_files(&dir)?
        .into_iter()
        .filter(|p| glob.as_ref().is_none_or(|(_, pattern)| crate::engine::files::glob_reads(pattern, p)))
        .filter(|p| !processed.contains(p) && recorded.is_none_or(|r| r.contains(p)))
        .collect();
    let format = file_format(f)?;
    let rescue = f.options.get("rescueddatacolumn").filter(|c| !c.is_empty());
    // Only JSON records can fail to fit: a CSV or Parquet stream's rescued-data column (Auto
    // Loader gives every format one) is NULL in every row it reads; a row that would not fit
    // fails the batch with the reader's error instead.
    let null_rescue = rescue.filter(|_| f.format != "json");
    let rescue = rescue.filter(|_| f.format == "json");
    if new.is_empty() {
        let schema = schema.clone().unwrap_or_else(|| Arc::new(Schema::empty()));
        let read_schema = match rescue {
            Some(column) => crate::streaming::rescue::with_rescue_column(&schema, column),
            None => schema.clone(),
        };
        let read_schema = match null_rescue {
            Some(column) => crate::streaming::rescue::with_rescue_column(&read_schema, column),
            None => read_schema,
        };
        let empty = MemTable::try_new(read_schema, vec![vec![]])?;
        let offset = Some(SourceOffset::Files { processed, schema: Some(schema) });
        return Ok(NewInput { provider: Arc::new(empty), has_data: false, offset });
    }
    let inference = Inference::of(f)?;
    if let Some(column) = rescue {
        let multiline = crate::engine::json::multiline(&f.options);
        let (provider, fixed) =
            crate::streaming::rescue::json_with_rescue(&dir, &new, schema.take(), column, &inference, multiline)?;
        processed.extend(new);
        let offset = Some(SourceOffset::Files { processed, schema: Some(fixed) });
        return Ok(NewInput { provider, has_data: true, offset });
    }
    let urls: Vec<ListingTableUrl> = new
        .iter()
        .map(|p| ListingTableUrl::parse(dir.join(p).to_string_lossy()))
        .collect::<std::result::Result<_, _>>()?;
    let options = ListingOptions::new(format).with_file_extension("");
    let state = ctx.state();
    // JSON files Spark reads as arrays or multi-line values: their records, read here.
    let multiline = crate::engine::json::multiline(&f.options);
    let paths: Vec<std::path::PathBuf> = new.iter().map(|p| dir.join(p)).collect();
    let records = match f.format == "json" && crate::engine::json::needs_records(&paths, multiline)? {
        true => Some(crate::engine::json::read(&paths, multiline, None)?),
        false => None,
    };
    let inferred = if let Some((_, inferred)) = &records {
        Arc::new(inference.apply(inferred.as_ref().clone()))
    } else {
        let mut schemas = Vec::new();
        for u in &urls {
            schemas.push(options.infer_schema(&state, u).await?);
        }
        let merged = Schema::try_merge(schemas.iter().map(|s| s.as_ref().clone()))
            .map_err(|e| NativeError::Execution(format!("files under `{}` disagree on their schema: {e}", f.path)))?;
        // Spark infers JSON fields sorted by name.
        let mut fields: Vec<_> = merged.fields().iter().cloned().collect();
        if f.format == "json" {
            fields.sort_by(|a, b| a.name().cmp(b.name()));
        }
        Arc::new(inference.apply(Schema::new(fields)))
    };
    let fixed = match schema.take() {
        None => inferred,
        Some(declared) if f.options.contains_key("schema") => declared,
        Some(fixed) => {
            let added: Vec<&str> = inferred
                .fields()
                .iter()
                .filter(|n| fixed.field_with_name(n.name()).is_err())
                .map(|n| n.name().as_str())
                .collect();
            let evolve = f.options.get("schemaevolutionmode").map(|m| m.to_ascii_lowercase());
            if !added.is_empty() && evolve.as_deref() != Some("none") {
                return Err(NativeError::Execution(format!(
                    "new column(s) {} in files under `{}` that the stream's schema (fixed on its first batch) does not have; \
                     full-refresh the table to take them, or set `schemaEvolutionMode => 'none'` to ignore them",
                    added.join(", "),
                    f.path
                )));
            }
            fixed
        }
    };
    let provider: Arc<dyn TableProvider> = match records {
        Some((records, _)) => Arc::new(crate::engine::json::table(&records, Arc::clone(&fixed))?),
        None => {
            let config = ListingTableConfig::new_with_multi_paths(urls)
                .with_listing_options(options)
                .with_schema(Arc::clone(&fixed));
            Arc::new(ListingTable::try_new(config)?)
        }
    };
    let provider = match null_rescue {
        Some(column) => {
            let nulls = datafusion::prelude::lit(datafusion::scalar::ScalarValue::Utf8(None));
            ctx.read_table(provider)?.with_column(column, nulls)?.into_view()
        }
        None => provider,
    };
    processed.extend(new);
    Ok(NewInput { provider, has_data: true, offset: Some(SourceOffset::Files { processed, schema: Some(fixed) }) })
}

/// The new input of one streaming read of a query.
pub(crate) struct Increment {
    /// The read's index in the query's reads.
    pub read: usize,
    /// A provider over only the new rows (empty when there are none).
    pub provider: Arc<dyn TableProvider>,
    /// Whether there are new rows at all.
    pub has_data: bool,
    /// The offsets after this batch, by checkpoint key: one for a source, one per source for a
    /// streaming view (each of its reads is a source of the flow).
    pub offsets: Vec<(String, SourceOffset)>,
    /// The expectation checks of the streaming views read through, which count the rows the
    /// batch takes from them.
    pub checked_views: Vec<Arc<Checker>>,
}

/// The increment of every streaming read of a query, in the order the query names them. A
/// `STREAM(v)` of a streaming view is the view's query over the new input of its own streams:
/// the view is inlined into each flow that streams it, and each of its sources keeps its offset
/// in that flow's checkpoint, under the view's name.
pub(crate) async fn increments(
    ctx: &SessionContext,
    p: &Pipeline,
    storage: &Storage,
    reads: &[Read],
    state: &Checkpoint,
    redo: Option<&BTreeMap<String, SourceOffset>>,
) -> Result<Vec<Increment>> {
    increments_under(ctx, p, storage, reads, state, redo, String::new()).await
}

/// [`increments`] with checkpoint keys under `prefix` (the views streamed through).
fn increments_under<'a>(
    ctx: &'a SessionContext,
    p: &'a Pipeline,
    storage: &'a Storage,
    reads: &'a [Read],
    state: &'a Checkpoint,
    redo: Option<&'a BTreeMap<String, SourceOffset>>,
    prefix: String,
) -> BoxFuture<'a, Result<Vec<Increment>>> {
    Box::pin(async move {
        let mut out = Vec::new();
        for (read, r) in reads.iter().enumerate().filter(|(_, r)| r.is_streaming()) {
            if let Some(view) = streaming_view(p, r) {
                out.push(view_increment(ctx, p, storage, read, view, state, redo, &prefix).await?);
                continue;
            }
            let key = format!("{prefix}{}", source_key(r));
            let last = state.sources.get(&key);
            // A batch redone reads up to what it recorded; a source it recorded nothing for had
            // nothing new then, so it reads nothing new now.
            let nothing = match (r, last) {
                (_, Some(last)) => last.clone(),
                (Read::Dataset { .. }, None) => SourceOffset::Table { version: -1, table_id: None },
                (Read::Files(f), None) if f.format == "delta" => SourceOffset::Table { version: -1, table_id: None },
                (Read::Files(_), None) => SourceOffset::Files { processed: BTreeSet::new(), schema: None },
            };
            let upto = redo.map(|r| r.get(&key).unwrap_or(&nothing));
            let input = match r {
                Read::Dataset { name, .. } => table_increment(ctx, storage, name, last, upto).await?,
                Read::Files(f) if f.format == "delta" => delta_path_increment(ctx, f, &p.root, last, upto).await?,
                Read::Files(f) => files_increment(ctx, f, &p.root, last, upto).await?,
            };
            let offsets = input.offset.map(|o| vec![(key, o)]).unwrap_or_default();
            out.push(Increment {
                read,
                provider: input.provider,
                has_data: input.has_data,
                offsets,
                checked_views: vec![],
            });
        }
        Ok(out)
    })
}

/// The streaming view that `r` streams, with its query, if it streams one.
fn streaming_view<'p>(p: &'p Pipeline, r: &Read) -> Option<(&'p Dataset, &'p Query)> {
    let Read::Dataset { name, streaming: true, .. } = r else { return None };
    let d = p.datasets.iter().find(|d| &d.name == name && d.kind.is_view())?;
    let f = p.flows_into(&d.name).next()?;
    f.query().is_streaming().then(|| (d, f.query()))
}

/// The new rows of streaming view `view` (read `read` of the flow's query): its query over the
/// new input of each of its streams, checked against the view's expectations (as DLT checks a
/// view's rows in each flow that reads them).
#[allow(clippy::too_many_arguments)]
async fn view_increment(
    ctx: &SessionContext,
    p: &Pipeline,
    storage: &Storage,
    read: usize,
    (view, query): (&Dataset, &Query),
    state: &Checkpoint,
    redo: Option<&BTreeMap<String, SourceOffset>>,
    prefix: &str,
) -> Result<Increment> {
    let name = &view.name;
    let inner = increments_under(ctx, p, storage, &query.reads, state, redo, format!("{prefix}view:{name}/")).await?;
    let has_data = inner.iter().any(|i| i.has_data);
    let offsets: Vec<(String, SourceOffset)> = inner.iter().flat_map(|i| i.offsets.iter().cloned()).collect();
    let mut checked_views: Vec<Arc<Checker>> = inner.iter().flat_map(|i| i.checked_views.iter().cloned()).collect();
    if !has_data {
        // Nothing to plan the view over (an unborn source has no schema yet); nothing is read.
        let empty = MemTable::try_new(Arc::new(Schema::empty()), vec![vec![]])?;
        return Ok(Increment { read, provider: Arc::new(empty), has_data, offsets, checked_views });
    }
    let mut streams = StreamTables::new();
    for i in inner {
        let table = stream_table_name("__thund_view_stream");
        ctx.register_table(table.as_str(), i.provider)?;
        streams.insert(i.read, table);
    }
    let planned = plan_query_with_streams(ctx, query, &p.root, &streams).await;
    for t in streams.values() {
        let _ = ctx.deregister_table(t.as_str());
    }
    let planned = planned?;
    let provider: Arc<dyn TableProvider> = match view.expectations.is_empty() {
        true => Arc::new(ViewTable::new(planned, None)),
        false => {
            let checker = Arc::new(Checker::new(ctx, view, &planned)?);
            let checked = checker.wrap(ctx, planned).await?;
            checked_views.push(checker);
            checked
        }
    };
    Ok(Increment { read, provider, has_data, offsets, checked_views })
}
