//! Folding small files: each batch adds a small file to its target, and every later batch opens
//! every file, so files of about the same size are rewritten together once enough pile up.

use std::collections::HashSet;
use std::sync::Arc;

use deltalake::DeltaTable;

use crate::error::{NativeError, Result};

/// How many files of about the same size a batch folds together.
const FOLD_AT: usize = 8;

/// The files of `table` a batch rewrites with its own rows, besides those mostly deleted, and
/// `marked` with the untouched ones among them added (their deleted rows as their vectors say).
///
/// Each batch adds a small file, and every later batch opens every file: fed small batches
/// without end, a target's file count would grow without bound (21 batches leave 21 files, 5
/// with folding, in `tests/cdc.rs`). As in size-tiered compaction, files are grouped by size in buckets a factor of 4
/// apart (under 64 KiB, under 256 KiB, …); once a bucket holds [`FOLD_AT`] files, the batch
/// rewrites them (their live rows join its new file, a bucket or two up) in its own commit, so
/// a crash or failure leaves them as they were. A row is rewritten about once per bucket it
/// climbs; files of half the target file size or more are never folded. DLT's
/// `pipelines.autoOptimize.managed = false` turns this off.
pub(super) async fn to_fold(
    table: &DeltaTable,
    mut marked: Vec<crate::delta::deletion::Marked>,
) -> Result<(Vec<crate::delta::deletion::Marked>, HashSet<String>)> {
    use deltalake::table::config::TablePropertiesExt;
    let large = table.snapshot()?.table_config().target_file_size().get() / 2;
    let mut buckets: std::collections::BTreeMap<u32, Vec<crate::delta::keyscan::Listed>> = Default::default();
    for file in crate::delta::keyscan::files(table)? {
        // A file without a row count in the log would have to be opened to be folded.
        if file.size() < large && file.records().is_some() {
            let bucket = (file.size() / (64 * 1024)).checked_ilog(4).map_or(0, |b| b + 1);
            buckets.entry(bucket).or_default().push(file);
        }
    }
    let Some(files) = buckets.into_values().find(|files| files.len() >= FOLD_AT) else {
        return Ok((marked, HashSet::new()));
    };
    let fold: HashSet<String> = files.iter().map(|f| f.path.clone()).collect();
    let touched: HashSet<String> = marked.iter().map(|m| m.file.path.clone()).collect();
    let store = table.log_store().object_store(None);
    let untouched = files.into_iter().filter(|f| !touched.contains(&f.path)).map(|file| {
        let store = Arc::clone(&store);
        async move {
            let deleted = file.deleted(store.as_ref()).await?;
            let records = file.records().unwrap_or(0);
            Ok::<_, NativeError>(crate::delta::deletion::Marked { file, deleted, records })
        }
    });
    marked.extend(futures::future::try_join_all(untouched).await?);
    Ok((marked, fold))
}

/// Whether a target's small files are folded as batches go (DLT's `pipelines.autoOptimize.managed`,
/// on unless a table property turns it off).
pub(super) fn auto_optimized(d: &knut_thund::ir::Dataset) -> Result<bool> {
    match d.details.properties.iter().find(|(k, _)| k.eq_ignore_ascii_case(AUTO_OPTIMIZE)) {
        None => Ok(true),
        Some((k, v)) => match v.trim().to_ascii_lowercase().as_str() {
            "true" => Ok(true),
            "false" => Ok(false),
            _ => Err(NativeError::Plan {
                location: d.location.to_string(),
                message: format!("`{}`: table property `{k}` must be true or false, not `{v}`", d.name),
            }),
        },
    }
}

/// DLT's table property for whether a table is optimized as it is written.
const AUTO_OPTIMIZE: &str = "pipelines.autoOptimize.managed";
