//! Reading a Delta table's data files directly: the live rows holding given keys, and then the
//! columns of chosen rows (AUTO CDC's batches; a table's changes between versions).
//!
//! An AUTO CDC batch touches a few keys spread over every file of its target and of its
//! history. Scanning such a table through DataFusion and joining it with the keys decodes every
//! column of every row. Here a [`scan`] decodes only the key columns (and a few small ones the
//! caller asks for), finds the positions of the wanted keys' rows, and only then does
//! [`read_rows`] decode the other columns, for those positions alone (a parquet row selection,
//! which skips the pages holding none of them). Files are scanned in parallel, each in its own
//! task, and a large file in parts (position ranges, one per core, each decoding only its own
//! pages through the page index); a file's footer and page index are read once ([`Opened`]) and
//! handed from its scan to the read of its rows. For a single integer key, the pages whose
//! bounds hold no wanted key are not decoded at all: the replay writes its rows in key order,
//! so keys near each other live in few pages. Rows a file's deletion vector already deletes
//! are never found: a scan sees the table as a reader does.
//!
//! Keys compare as `IS NOT DISTINCT FROM`: they are encoded with arrow's row format, where NULL
//! is a value like any other; a single integer key is looked up as a number, behind a small bit
//! filter that turns away most rows before the hash map.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, BooleanArray, BooleanBufferBuilder, RecordBatch, UInt32Array};
use arrow::compute::{concat, take};
use arrow::datatypes::{DataType, SchemaRef};
use bytes::Bytes;
use datafusion::parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, RowSelection, RowSelector};
use datafusion::parquet::arrow::async_reader::{
    AsyncFileReader, ParquetRecordBatchStream, ParquetRecordBatchStreamBuilder,
};
use datafusion::parquet::arrow::ProjectionMask;
use datafusion::parquet::errors::Result as ParquetResult;
use datafusion::parquet::file::metadata::{PageIndexPolicy, ParquetMetaData, ParquetMetaDataReader};
use deltalake::kernel::DeletionVectorDescriptor;
use deltalake::DeltaTable;
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt, TryStreamExt};
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use roaring::RoaringTreemap;

use crate::error::{NativeError, Result};

mod wanted;
pub(crate) use wanted::Wanted;

/// How many files are scanned at once.
const READ_AHEAD: usize = 4;
/// Rows decoded at a time: the per-batch work (encoding keys, looking them up) is then small.
const BATCH_ROWS: usize = 64 * 1024;
/// The fewest rows of a file read in a task of their own: fewer cost more to start than to read.
const MIN_PART: u64 = 128 * 1024;

/// A data file as the table's log lists it.
#[derive(Clone)]
pub(crate) struct Listed {
    /// Its path, as the log writes it (relative to the table).
    pub path: String,
    location: Path,
    size: u64,
    vector: Option<DeletionVectorDescriptor>,
    records: Option<usize>,
}

impl Listed {
    /// Its size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// Its physical row count, if the log records it.
    pub(crate) fn records(&self) -> Option<u64> {
        self.records.map(|r| r as u64)
    }

    /// Its deletion vector, if it has one.
    pub(crate) fn vector(&self) -> Option<&DeletionVectorDescriptor> {
        self.vector.as_ref()
    }

    /// The positions its deletion vector deletes.
    pub(crate) async fn deleted(&self, store: &dyn ObjectStore) -> Result<RoaringTreemap> {
        match &self.vector {
            Some(v) => super::deletion::read(store, v).await,
            None => Ok(RoaringTreemap::new()),
        }
    }

    /// A file known by its path alone.
    #[cfg(test)]
    pub(crate) fn named(path: &str) -> Listed {
        Listed { path: path.into(), location: Path::from(path), size: 0, vector: None, records: None }
    }
}

/// The table's data files.
pub(crate) fn files(table: &DeltaTable) -> Result<Vec<Listed>> {
    Ok(table
        .snapshot()?
        .log_data()
        .into_iter()
        .map(|f| Listed {
            path: f.path().to_string(),
            location: f.object_store_path(),
            size: f.size() as u64,
            vector: f.deletion_vector_descriptor(),
            records: f.num_records(),
        })
        .collect())
}

/// A data file read through the object store, its size known from the log (no request for it).
#[derive(Clone)]
struct FileReader {
    store: Arc<dyn ObjectStore>,
    path: Path,
    size: u64,
}

impl AsyncFileReader for FileReader {
    fn get_bytes(&mut self, range: std::ops::Range<u64>) -> BoxFuture<'_, ParquetResult<Bytes>> {
        async move {
            self.store
                .get_range(&self.path, range)
                .await
                .map_err(|e| datafusion::parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_byte_ranges(&mut self, ranges: Vec<std::ops::Range<u64>>) -> BoxFuture<'_, ParquetResult<Vec<Bytes>>> {
        async move {
            self.store
                .get_ranges(&self.path, &ranges)
                .await
                .map_err(|e| datafusion::parquet::errors::ParquetError::External(Box::new(e)))
        }
        .boxed()
    }

    fn get_metadata<'a>(
        &'a mut self,
        options: Option<&'a ArrowReaderOptions>,
    ) -> BoxFuture<'a, ParquetResult<Arc<ParquetMetaData>>> {
        async move {
            let size = self.size;
            let metadata =
                ParquetMetaDataReader::new().with_arrow_reader_options(options).load_and_finish(self, size).await?;
            Ok(Arc::new(metadata))
        }
        .boxed()
    }
}

/// Rows a scan keeps besides the wanted keys' (given a batch's `extra` columns, which of its
/// rows), e.g. every truncation in an AUTO CDC history, whatever its key.
pub(crate) type Also = Arc<dyn Fn(&[ArrayRef]) -> Result<BooleanArray> + Send + Sync>;

/// What a scan found in one file.
pub(crate) struct Scanned {
    pub file: Listed,
    /// The rows the file's deletion vector already deletes.
    pub deleted: RoaringTreemap,
    /// The file's physical row count.
    pub rows: u64,
    /// The live rows found, in file order: their positions, and the wanted key each holds
    /// (`None`: kept by [`Also`] only).
    pub positions: Vec<u64>,
    pub keys: Vec<Option<u32>>,
    /// Those rows' `extra` columns, in the order asked for.
    pub extra: Vec<ArrayRef>,
    /// The file as the scan opened it, for reading its rows.
    pub opened: Opened,
}

/// Every file of `table` with a live row whose key (the columns `key_names`) is wanted, or which
/// `also` keeps. Decodes only the key columns and `extra`.
pub(crate) async fn scan(
    table: &DeltaTable,
    wanted: &Arc<Wanted>,
    key_names: &[String],
    extra: &[String],
    also: Option<Also>,
) -> Result<Vec<Scanned>> {
    let store = table.log_store().object_store(None);
    let columns: Arc<Vec<String>> = Arc::new(key_names.iter().chain(extra).cloned().collect());
    let keys = key_names.len();
    let scans = files(table)?.into_iter().map(|file| {
        let (store, wanted, columns, also) =
            (Arc::clone(&store), Arc::clone(wanted), Arc::clone(&columns), also.clone());
        tokio::spawn(async move { scan_file(store, file, wanted, columns, keys, also).await })
    });
    futures::stream::iter(scans)
        .buffered(READ_AHEAD)
        .map(|joined| joined.map_err(|e| NativeError::Execution(format!("a scan task failed: {e}")))?)
        .try_filter(|s| std::future::ready(!s.positions.is_empty()))
        .try_collect()
        .await
}

/// A file opened for reading: its footer and page index, read once for its scan and again for
/// the rows read after it.
#[derive(Clone)]
pub(crate) struct Opened {
    reader: FileReader,
    metadata: ArrowReaderMetadata,
}

impl Opened {
    /// The file's footer and page index, read once.
    pub(crate) async fn of(store: Arc<dyn ObjectStore>, file: &Listed) -> Result<Opened> {
        let mut reader = FileReader { store, path: file.location.clone(), size: file.size };
        // The page index lets a part of a file skip the pages before and after it.
        let options = ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional);
        let metadata = ArrowReaderMetadata::load_async(&mut reader, options).await.map_err(failed(&file.location))?;
        Ok(Opened { reader, metadata })
    }

    /// Its physical row count.
    pub(crate) fn rows(&self) -> u64 {
        self.metadata.metadata().file_metadata().num_rows().max(0) as u64
    }

    /// The position ranges of the pages whose bounds in the key column `key` may hold a wanted
    /// key (`None`: every page may, or the file has no page index to tell). A file the table's
    /// writer sorted by key, as a replay writes it, has narrow pages: a batch whose keys are
    /// near each other (recent customers, say) reads few of them.
    fn pages_holding(&self, key: &str, wanted: &Wanted) -> Option<Vec<Range<u64>>> {
        use datafusion::parquet::file::page_index::column_index::ColumnIndexMetaData as Bounds;
        let may_hold = wanted.may_hold()?;
        let metadata = self.metadata.metadata();
        let (bounds, locations) = (metadata.column_index()?, metadata.offset_index()?);
        let leaf = metadata.file_metadata().schema_descr().columns().iter().position(|c| c.path().parts() == [key])?;
        // An unsigned column's bounds are its values' bits as signed numbers, ordered unsigned.
        let unsigned = matches!(
            self.metadata.schema().field_with_name(key).ok()?.data_type(),
            DataType::UInt8 | DataType::UInt16 | DataType::UInt32
        );
        let mut ranges: Vec<Range<u64>> = Vec::new();
        let mut start = 0u64;
        for (g, group) in metadata.row_groups().iter().enumerate() {
            let rows = group.num_rows().max(0) as u64;
            let pages = locations.get(g)?.get(leaf)?.page_locations();
            let page_bounds = |p: usize| -> Option<(i64, i64)> {
                match bounds.get(g)?.get(leaf)? {
                    Bounds::INT32(i) if unsigned => {
                        Some((i64::from(*i.min_value(p)? as u32), i64::from(*i.max_value(p)? as u32)))
                    }
                    Bounds::INT32(i) => Some((i64::from(*i.min_value(p)?), i64::from(*i.max_value(p)?))),
                    Bounds::INT64(i) => Some((*i.min_value(p)?, *i.max_value(p)?)),
                    _ => None,
                }
            };
            for (p, page) in pages.iter().enumerate() {
                let from = start + page.first_row_index.max(0) as u64;
                let to = pages.get(p + 1).map_or(start + rows, |next| start + next.first_row_index.max(0) as u64);
                // A page without bounds (or of another type) is read.
                if page_bounds(p).is_none_or(|(min, max)| may_hold(min, max)) {
                    match ranges.last_mut() {
                        Some(last) if last.end == from => last.end = to,
                        _ => ranges.push(from..to),
                    }
                }
            }
            start += rows;
        }
        Some(ranges)
    }

    /// The file's positions `part`, of which `pick` picks some, as a stream of the columns
    /// `columns`: only the row groups the part overlaps are opened, and in them only the pages
    /// holding a picked row are decoded.
    fn stream(
        &self,
        part: &Range<u64>,
        pick: Pick<'_>,
        columns: &[usize],
    ) -> Result<ParquetRecordBatchStream<FileReader>> {
        let groups = self.metadata.metadata().row_groups();
        let (mut picked, mut first, mut at) = (Vec::new(), None, 0u64);
        for (i, g) in groups.iter().enumerate() {
            let end = at + g.num_rows().max(0) as u64;
            if at < part.end && end > part.start {
                picked.push(i);
                first.get_or_insert(at);
            }
            at = end;
        }
        let first = first.unwrap_or(part.start);
        let last = first + picked.iter().map(|g| groups[*g].num_rows().max(0) as u64).sum::<u64>();
        let selection = match pick {
            Pick::Ranges(ranges) => {
                let mut selectors = Vec::with_capacity(ranges.len() * 2 + 1);
                let mut at = first;
                for r in ranges {
                    let r = r.start.max(part.start).max(at)..r.end.min(part.end).min(last);
                    if r.start < r.end {
                        selectors.push(RowSelector::skip((r.start - at) as usize));
                        selectors.push(RowSelector::select((r.end - r.start) as usize));
                        at = r.end;
                    }
                }
                selectors.push(RowSelector::skip((last - at) as usize));
                RowSelection::from(selectors)
            }
            Pick::Positions(positions) => {
                let mut selected = BooleanBufferBuilder::new((last - first) as usize);
                selected.append_n((last - first) as usize, false);
                for p in within(positions, part.start..part.end.min(last)) {
                    selected.set_bit((p - first) as usize, true);
                }
                RowSelection::from_filters(&[BooleanArray::new(selected.finish(), None)])
            }
        };
        let builder = ParquetRecordBatchStreamBuilder::new_with_metadata(self.reader.clone(), self.metadata.clone());
        let mask = ProjectionMask::roots(builder.parquet_schema(), columns.iter().copied());
        builder
            .with_projection(mask)
            .with_row_groups(picked)
            .with_row_selection(selection)
            .with_batch_size(BATCH_ROWS)
            .build()
            .map_err(failed(&self.reader.path))
    }
}

/// Which rows of a file a read decodes.
#[derive(Clone, Copy)]
pub(crate) enum Pick<'a> {
    /// The rows of these position ranges (in order, not overlapping).
    Ranges(&'a [Range<u64>]),
    /// The rows at these positions.
    Positions(&'a RoaringTreemap),
}

/// `ranges` (in order, not overlapping) cut to `part`, empty ones left out.
fn clip(ranges: &[Range<u64>], part: &Range<u64>) -> Vec<Range<u64>> {
    ranges.iter().map(|r| r.start.max(part.start)..r.end.min(part.end)).filter(|r| r.start < r.end).collect()
}

/// The positions in `range`, in order.
fn within(positions: &RoaringTreemap, range: Range<u64>) -> impl Iterator<Item = u64> + '_ {
    positions.iter().skip_while(move |p| *p < range.start).take_while(move |p| *p < range.end)
}

fn failed(location: &Path) -> impl Fn(datafusion::parquet::errors::ParquetError) -> NativeError + '_ {
    move |e| NativeError::Storage(format!("{location}: {e}"))
}

/// Position ranges of a file of `rows` rows, read each in its own task: one per core, none
/// smaller than `MIN_PART` rows (a small file is read whole).
fn parts(rows: u64) -> Vec<Range<u64>> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    split(rows, rows.div_ceil(cores).max(MIN_PART))
}

/// `0..rows` in ranges of `size` rows (the last may be shorter); one empty range for no rows.
fn split(rows: u64, size: u64) -> Vec<Range<u64>> {
    (0..rows.div_ceil(size).max(1)).map(|i| i * size..((i + 1) * size).min(rows)).collect()
}

async fn scan_file(
    store: Arc<dyn ObjectStore>,
    file: Listed,
    wanted: Arc<Wanted>,
    columns: Arc<Vec<String>>,
    keys: usize,
    also: Option<Also>,
) -> Result<Scanned> {
    let deleted = file.deleted(store.as_ref()).await?;
    let opened = Opened::of(store, &file).await?;
    let file_schema = Arc::clone(opened.metadata.schema());
    let mut indices = Vec::with_capacity(columns.len());
    for c in columns.iter() {
        let i = file_schema
            .index_of(c)
            .map_err(|_| NativeError::Storage(format!("data file `{}` has no column `{c}`", file.location)))?;
        indices.push(i);
    }
    let deleted = Arc::new(deleted);
    // Pages that cannot hold a wanted key are skipped, unless rows are kept for more than their
    // key (`also`). One key column only: its bounds say all there is to say.
    let pages = match (&also, &columns[..keys]) {
        (None, [key]) => opened.pages_holding(key, &wanted),
        _ => None,
    };
    let every = [Range { start: 0, end: opened.rows() }];
    let pages = pages.as_deref().unwrap_or(&every);
    let mut tasks = Vec::new();
    for part in parts(opened.rows()) {
        let ranges = clip(pages, &part);
        if ranges.is_empty() {
            continue;
        }
        let stream = opened.stream(&part, Pick::Ranges(&ranges), &indices)?;
        let (wanted, columns, also, deleted) =
            (Arc::clone(&wanted), Arc::clone(&columns), also.clone(), Arc::clone(&deleted));
        let location = file.location.clone();
        // Decoding keys is the work: the parts of a file spread over the cores.
        tasks.push(tokio::spawn(async move {
            scan_part(stream, ranges, &wanted, &columns, keys, also.as_ref(), &deleted, &location).await
        }));
    }
    let (mut positions, mut ids, mut picked) = (Vec::new(), Vec::new(), Vec::new());
    for task in tasks {
        let found = task.await.map_err(|e| NativeError::Execution(format!("a scan task failed: {e}")))??;
        positions.extend(found.positions);
        ids.extend(found.keys);
        picked.extend(found.extra);
    }
    let extra = (0..columns.len() - keys)
        .map(|c| {
            let parts: Vec<&dyn Array> = picked.iter().map(|p| p[c].as_ref()).collect();
            match parts.is_empty() {
                true => Ok(arrow::array::new_empty_array(&DataType::Null)),
                false => Ok(concat(&parts)?),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    let rows = file.records.map_or(opened.rows(), |r| r as u64);
    let deleted = Arc::unwrap_or_clone(deleted);
    Ok(Scanned { file, deleted, rows, positions, keys: ids, extra, opened })
}

/// What one part of a file holds: positions, key ids and `extra` columns per decoded batch.
struct Found {
    positions: Vec<u64>,
    keys: Vec<Option<u32>>,
    extra: Vec<Vec<ArrayRef>>,
}

#[allow(clippy::too_many_arguments)]
async fn scan_part(
    mut stream: ParquetRecordBatchStream<FileReader>,
    ranges: Vec<Range<u64>>,
    wanted: &Wanted,
    columns: &[String],
    keys: usize,
    also: Option<&Also>,
    deleted: &RoaringTreemap,
    location: &Path,
) -> Result<Found> {
    let mut out = Found { positions: Vec::new(), keys: Vec::new(), extra: Vec::new() };
    // The stream's rows, one after another, are the positions of `ranges`.
    let (mut range, mut range_start, mut seen) = (0usize, 0u64, 0u64);
    let mut position_of = |row: u64| {
        while row - range_start >= ranges[range].end - ranges[range].start {
            range_start += ranges[range].end - ranges[range].start;
            range += 1;
        }
        ranges[range].start + (row - range_start)
    };
    while let Some(batch) = stream.next().await {
        let batch = batch.map_err(failed(location))?;
        // The projection keeps the file's column order; take them in the order asked for.
        let named = columns
            .iter()
            .map(|c| batch.column_by_name(c).cloned().ok_or_else(|| NativeError::Storage(format!("no column `{c}`"))))
            .collect::<Result<Vec<_>>>()?;
        let extra = &named[keys..];
        // The rows holding a wanted key, and then those `also` keeps, merged in row order.
        let mut found: Vec<(u32, Option<u32>)> = Vec::new();
        wanted.find(&named[..keys], |row, id| found.push((row as u32, Some(id))))?;
        if let Some(keep) = also {
            let kept = keep(extra)?;
            let before = found.len();
            found.extend(kept.iter().enumerate().filter(|(_, k)| *k == Some(true)).map(|(row, _)| (row as u32, None)));
            if found.len() > before {
                found.sort_unstable_by_key(|(row, id)| (*row, id.is_none()));
                found.dedup_by_key(|(row, _)| *row);
            }
        }
        let mut rows = Vec::new();
        for (row, id) in found {
            let position = position_of(seen + row as u64);
            // Most rows are not wanted: the vector is asked about the few that are.
            if !deleted.contains(position) {
                out.positions.push(position);
                out.keys.push(id);
                rows.push(row);
            }
        }
        if !rows.is_empty() && !extra.is_empty() {
            let rows = UInt32Array::from(rows);
            out.extra
                .push(extra.iter().map(|c| take(c.as_ref(), &rows, None)).collect::<std::result::Result<Vec<_>, _>>()?);
        }
        seen += batch.num_rows() as u64;
    }
    Ok(out)
}

/// The rows of `file` at `positions`, as `schema` (its columns by name, cast to its types; a
/// column the file lacks is NULL), in file order. Decodes only the pages holding them, the parts
/// of the file each in a task of its own (the flow calling this shares its thread with the
/// other flows of its stage). `opened` is the file as its scan opened it, if it was.
pub(crate) async fn read_rows(
    table: &DeltaTable,
    file: &Listed,
    opened: Option<&Opened>,
    positions: &RoaringTreemap,
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let opened = match opened {
        Some(o) => o.clone(),
        None => Opened::of(table.log_store().object_store(None), file).await?,
    };
    let file_schema = Arc::clone(opened.metadata.schema());
    let present: Vec<usize> = schema.fields().iter().filter_map(|f| file_schema.index_of(f.name()).ok()).collect();
    let positions = Arc::new(positions.clone());
    let mut tasks = Vec::new();
    for part in parts(opened.rows()) {
        if within(&positions, part.clone()).next().is_none() {
            continue;
        }
        let stream = opened.stream(&part, Pick::Positions(&positions), &present)?;
        let location = file.location.clone();
        tasks.push(tokio::spawn(
            async move { stream.try_collect::<Vec<RecordBatch>>().await.map_err(failed(&location)) },
        ));
    }
    let mut batches = Vec::new();
    for task in tasks {
        batches.extend(task.await.map_err(|e| NativeError::Execution(format!("a read task failed: {e}")))??);
    }
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let columns = schema
        .fields()
        .iter()
        .map(|f| {
            let parts: Vec<ArrayRef> = batches.iter().filter_map(|b| b.column_by_name(f.name()).cloned()).collect();
            let column = match parts.len() {
                0 => return Ok(new_null_array(f.data_type(), rows)),
                1 => Arc::clone(&parts[0]),
                _ => concat(&parts.iter().map(|p| p.as_ref()).collect::<Vec<_>>())?,
            };
            match column.data_type() == f.data_type() {
                true => Ok(column),
                false => Ok(arrow::compute::cast(&column, f.data_type())?),
            }
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(RecordBatch::try_new_with_options(
        Arc::clone(schema),
        columns,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)),
    )?)
}

#[cfg(test)]
mod tests;
