//! What a Delta table gained and lost between two of its versions, read from its log: the rows
//! live at the later version and not at the earlier one (inserted), and the other way round
//! (deleted). An update is a delete of the old row and an insert of the new.
//!
//! Each data file of either version is compared by its live row positions: a file only the later
//! version lists inserts its live rows; one only the earlier lists deletes its live rows; one
//! whose deletion vector grew deletes the positions the new vector adds. Only those positions
//! are decoded (`keyscan::read_rows`), so a batch that marks a few rows deleted costs those rows.
//! A rewrite that moves rows to a new file (a copy-on-write update, a compaction) shows them as
//! deleted and inserted; such pairs cancel, so what is returned is the net change as a multiset.
//!
//! What cannot be read exactly is an error, for the caller to recompute instead: a data file of
//! the earlier version that is gone (vacuumed), a schema that changed between the versions, a
//! partitioned table (its partition values are not in its files).
//!
//! A run keeps the changes it knows ([`Known`], held by its `Storage`): the change a flow wrote
//! (a row-based refresh knows the rows it took out and put in) and each change read from a log.
//! Every view downstream of a table then reads its change from memory, not from the table's files
//! once per view — a change spread over every file of a large table costs as much to decode as
//! a scan of the columns it touches.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::filter_record_batch;
use arrow::datatypes::SchemaRef;
use arrow::row::{RowConverter, SortField};
use deltalake::DeltaTable;
use roaring::RoaringTreemap;

use crate::delta::keyscan::{files, read_rows, Listed, Opened};
use crate::error::{NativeError, Result};

/// The net change of a table between two versions.
#[derive(Clone)]
pub(crate) struct Changes {
    /// The rows' schema (the table's at both versions).
    pub schema: SchemaRef,
    /// Rows live at the later version and not at the earlier.
    pub inserted: Vec<RecordBatch>,
    /// Rows live at the earlier version and not at the later.
    pub deleted: Vec<RecordBatch>,
    /// Rows decoded to find them (before pairs cancelled): what reading the change cost.
    pub rows_read: u64,
}

impl Changes {
    /// Rows deleted.
    pub(crate) fn deleted_rows(&self) -> u64 {
        self.deleted.iter().map(|b| b.num_rows() as u64).sum()
    }
}

/// The table's live rows, from its log (each file's row count less its deletion vector's); a
/// file without a row count counts none, which makes reading its changes look costly.
pub(crate) fn live_rows(table: &DeltaTable) -> Result<u64> {
    Ok(files(table)?
        .iter()
        .map(|f| f.records().unwrap_or(0).saturating_sub(f.vector().map_or(0, |v| v.cardinality.max(0) as u64)))
        .sum())
}

/// The changes of tables a run wrote or read, by table key, table id (a table created again
/// starts its versions anew) and the two versions. Bounded: past [`KNOWN_BYTES`] a change is
/// not kept, and is read from the log when asked for.
#[derive(Default)]
pub(crate) struct Known {
    changes: HashMap<(String, String, i64, i64), Arc<Changes>>,
    bytes: usize,
}

impl std::fmt::Debug for Known {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} changes known ({} bytes)", self.changes.len(), self.bytes)
    }
}

/// How much memory a run's known changes may hold.
const KNOWN_BYTES: usize = 512 << 20;

impl Known {
    /// The change of the table `key` (of id `id`) from version `from` to `to`, if known.
    pub(crate) fn get(&self, key: &str, id: &str, from: i64, to: i64) -> Option<Arc<Changes>> {
        self.changes.get(&(key.to_string(), id.to_string(), from, to)).cloned()
    }

    /// Keeps `changes` as the change of the table `key` (of id `id`) from `from` to `to`.
    pub(crate) fn insert(&mut self, key: &str, id: &str, from: i64, to: i64, changes: Arc<Changes>) {
        let size: usize = changes.inserted.iter().chain(&changes.deleted).map(RecordBatch::get_array_memory_size).sum();
        if self.bytes + size <= KNOWN_BYTES {
            self.bytes += size;
            self.changes.insert((key.to_string(), id.to_string(), from, to), changes);
        }
    }
}

/// The schema a table's rows are read as, refusing what its files alone cannot give.
pub(crate) async fn schema_of(table: &DeltaTable) -> Result<SchemaRef> {
    let snapshot = table.snapshot()?;
    if !snapshot.metadata().partition_columns().is_empty() {
        return Err(NativeError::Storage("a partitioned table's changes are not read from its files".into()));
    }
    Ok(table.table_provider().await?.schema())
}

/// The net change of the table from version `from` to version `to` (both opened at those
/// versions, `from` the earlier).
pub(crate) async fn between(from: &DeltaTable, to: &DeltaTable) -> Result<Changes> {
    // Columns by name and type; either version's rows may hold NULLs where the other's schema
    // says none.
    let (schema, before) = (schema_of(to).await?, schema_of(from).await?);
    let shape =
        |s: &SchemaRef| s.fields().iter().map(|f| (f.name().clone(), f.data_type().clone())).collect::<Vec<_>>();
    if shape(&before) != shape(&schema) {
        return Err(NativeError::Storage("the table's schema changed between the versions".into()));
    }
    let schema: SchemaRef = Arc::new(arrow::datatypes::Schema::new(
        schema.fields().iter().map(|f| f.as_ref().clone().with_nullable(true)).collect::<Vec<_>>(),
    ));
    let store = to.log_store().object_store(None);
    let old: BTreeMap<String, Listed> = files(from)?.into_iter().map(|f| (f.path.clone(), f)).collect();
    let new: BTreeMap<String, Listed> = files(to)?.into_iter().map(|f| (f.path.clone(), f)).collect();
    let mut inserted = Vec::new();
    let mut deleted = Vec::new();
    let mut rows_read = 0;
    let paths: std::collections::BTreeSet<&String> = old.keys().chain(new.keys()).collect();
    for path in paths {
        let (was, is) = (old.get(path), new.get(path));
        if let (Some(a), Some(b)) = (was, is) {
            if a.vector() == b.vector() {
                continue; // untouched
            }
        }
        let listed = is.or(was).ok_or_else(|| NativeError::Storage(format!("no file `{path}`")))?;
        let opened = Opened::of(Arc::clone(&store), listed).await.map_err(|e| {
            NativeError::Storage(format!("data file `{path}` of the earlier version cannot be read (vacuumed?): {e}"))
        })?;
        let rows = opened.rows();
        let (live_before, live_after) = (live(was, rows, store.as_ref()).await?, live(is, rows, store.as_ref()).await?);
        let gone = &live_before - &live_after;
        let came = &live_after - &live_before;
        for (positions, out) in [(gone, &mut deleted), (came, &mut inserted)] {
            if !positions.is_empty() {
                rows_read += positions.len();
                out.push(read_rows(to, listed, Some(&opened), &positions, &schema).await?);
            }
        }
    }
    let (inserted, deleted) = cancel(&schema, inserted, deleted)?;
    Ok(Changes { schema, inserted, deleted, rows_read })
}

/// The live row positions of `file` (of `rows` rows) in a version that lists it (none if not).
async fn live(file: Option<&Listed>, rows: u64, store: &dyn object_store::ObjectStore) -> Result<RoaringTreemap> {
    let Some(file) = file else { return Ok(RoaringTreemap::new()) };
    let mut all = RoaringTreemap::new();
    all.insert_range(0..rows);
    Ok(all - file.deleted(store).await?)
}

/// `inserted` and `deleted` without the rows both hold (as many times as both hold them): a row
/// moved to another file is no change.
fn cancel(
    schema: &SchemaRef,
    inserted: Vec<RecordBatch>,
    deleted: Vec<RecordBatch>,
) -> Result<(Vec<RecordBatch>, Vec<RecordBatch>)> {
    if inserted.is_empty() || deleted.is_empty() {
        return Ok((inserted, deleted));
    }
    let converter = RowConverter::new(schema.fields().iter().map(|f| SortField::new(f.data_type().clone())).collect())?;
    let encode = |batches: &[RecordBatch]| -> Result<Vec<arrow::row::Rows>> {
        batches.iter().map(|b| Ok(converter.convert_columns(b.columns())?)).collect()
    };
    let (ins_rows, del_rows) = (encode(&inserted)?, encode(&deleted)?);
    let mut deletable: HashMap<&[u8], usize> = HashMap::new();
    for rows in &del_rows {
        for r in rows.iter() {
            *deletable.entry(r.data()).or_default() += 1;
        }
    }
    // Each inserted row that matches a deleted one takes it: both are dropped.
    let mut matched: HashMap<&[u8], usize> = HashMap::new();
    let keep_inserted: Vec<BooleanArray> = ins_rows
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| match deletable.get_mut(r.data()) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        *matched.entry(r.data()).or_default() += 1;
                        Some(false)
                    }
                    _ => Some(true),
                })
                .collect()
        })
        .collect();
    let keep_deleted: Vec<BooleanArray> = del_rows
        .iter()
        .map(|rows| {
            rows.iter()
                .map(|r| match matched.get_mut(r.data()) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        Some(false)
                    }
                    _ => Some(true),
                })
                .collect()
        })
        .collect();
    let kept = |batches: Vec<RecordBatch>, keep: Vec<BooleanArray>| -> Result<Vec<RecordBatch>> {
        batches
            .iter()
            .zip(&keep)
            .map(|(b, k)| Ok(filter_record_batch(b, k)?))
            .filter(|b: &Result<RecordBatch>| b.as_ref().map_or(true, |b| b.num_rows() > 0))
            .collect()
    };
    Ok((kept(inserted, keep_inserted)?, kept(deleted, keep_deleted)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use knut_thund::backend::{ExecBackend, RunOptions};

    /// A small seeded generator: the same rounds for a seed, every time.
    struct Lcg(u64);

    impl Lcg {
        fn below(&mut self, n: u64) -> u64 {
            self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    fn run(dir: &std::path::Path) {
        let p = knut_thund::frontend::load(dir).unwrap_or_else(|e| panic!("{e}"));
        let mut run = crate::NativeBackend::new().run_with(&p, &RunOptions::default()).unwrap();
        while run.poll_events().is_some() {}
        let s = run.finish().unwrap();
        assert!(!s.failed(), "{s:?}");
    }

    /// Every row of `batches`, as text, sorted: a multiset to compare.
    fn bag(batches: &[RecordBatch]) -> Vec<String> {
        let mut out = Vec::new();
        for b in batches {
            let opts = arrow::util::display::FormatOptions::default().with_null("NULL");
            let cols: Vec<_> = b
                .columns()
                .iter()
                .map(|c| arrow::util::display::ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
                .collect();
            for r in 0..b.num_rows() {
                out.push(cols.iter().map(|c| c.value(r).to_string()).collect::<Vec<_>>().join(","));
            }
        }
        out.sort();
        out
    }

    /// `a` less `b`, as multisets (both sorted).
    fn minus(a: &[String], b: &[String]) -> Vec<String> {
        let mut left: HashMap<&String, usize> = HashMap::new();
        for x in b {
            *left.entry(x).or_default() += 1;
        }
        a.iter()
            .filter(|x| match left.get_mut(x) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .cloned()
            .collect()
    }

    async fn rows_at(url: &url::Url, version: u64) -> (DeltaTable, Vec<String>) {
        let table = deltalake::open_table_with_version(url.clone(), version).await.unwrap();
        let ctx = datafusion::prelude::SessionContext::new();
        table.update_datafusion_session(&ctx.state()).unwrap();
        let provider = crate::delta::filtered::filtered(table.table_provider().await.unwrap());
        let rows = bag(&ctx.read_table(provider).unwrap().collect().await.unwrap());
        (table, rows)
    }

    /// Random upserts and deletes through AUTO CDC (rows marked deleted by deletion vectors, or
    /// their files rewritten), and the aggregate over them that is rewritten each time: after
    /// every run, the change read between the two versions is exactly the multiset difference
    /// of their full contents (read independently, through a table scan).
    #[test]
    fn the_change_between_two_versions_is_the_difference_of_their_rows() {
        for (seed, vectors) in [(1u64, true), (2, false), (3, true)] {
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            std::fs::create_dir_all(root.join("feed")).unwrap();
            std::fs::write(
                root.join("spark-pipeline.yml"),
                "name: c\nstorage: store\nlibraries:\n  - glob:\n      include: '*.sql'\n",
            )
            .unwrap();
            std::fs::write(
                root.join("p.sql"),
                format!(
                    "CREATE STREAMING TABLE target TBLPROPERTIES ('delta.enableDeletionVectors' = '{vectors}');\n\
                     CREATE FLOW f AS AUTO CDC INTO target FROM STREAM read_files('feed', format => 'json', \
                     schema => 'k BIGINT, v BIGINT, seq BIGINT, op STRING') KEYS (k) APPLY AS DELETE WHEN op = 'D' \
                     SEQUENCE BY seq COLUMNS * EXCEPT (op, seq);\n\
                     CREATE MATERIALIZED VIEW totals AS SELECT k % 3 AS g, count(*) AS n, sum(v) AS s FROM target GROUP BY k % 3;\n"
                ),
            )
            .unwrap();
            let mut rng = Lcg(seed);
            let mut seq = 0;
            let rt = tokio::runtime::Runtime::new().unwrap();
            let mut versions: BTreeMap<&str, u64> = BTreeMap::new();
            for round in 0..6 {
                let mut feed = String::new();
                let changes = if round == 0 { 40 } else { 1 + rng.below(8) };
                for _ in 0..changes {
                    seq += 1;
                    let (k, v) = (rng.below(40), rng.below(100));
                    let op = if round > 0 && rng.below(3) == 0 { "D" } else { "U" };
                    feed.push_str(&format!("{{\"k\": {k}, \"v\": {v}, \"seq\": {seq}, \"op\": \"{op}\"}}\n"));
                }
                std::fs::write(root.join(format!("feed/{round}.json")), feed).unwrap();
                run(root);
                for table in ["target", "totals"] {
                    let url =
                        url::Url::from_directory_path(root.join(format!("store/tables/spark_catalog/default/{table}")))
                            .unwrap();
                    let latest = rt.block_on(deltalake::open_table(url.clone())).unwrap().version().unwrap() as u64;
                    if let Some(&earlier) = versions.get(table) {
                        let (before, old_rows) = rt.block_on(rows_at(&url, earlier));
                        let (after, new_rows) = rt.block_on(rows_at(&url, latest));
                        let c = rt.block_on(between(&before, &after)).unwrap();
                        let at = format!("seed {seed}, round {round}, {table} v{earlier}..v{latest}");
                        assert_eq!(bag(&c.deleted), minus(&old_rows, &new_rows), "deleted: {at}");
                        assert_eq!(bag(&c.inserted), minus(&new_rows, &old_rows), "inserted: {at}");
                        if vectors && table == "target" {
                            // Marked rows, the batch's new file and the few files folded into it
                            // are decoded: less than the table.
                            let whole = old_rows.len() as u64;
                            assert!(
                                c.rows_read < whole,
                                "{at}: read {} rows of {whole} for {changes} changes",
                                c.rows_read
                            );
                        }
                    }
                    versions.insert(table, latest);
                }
            }
        }
    }
}
