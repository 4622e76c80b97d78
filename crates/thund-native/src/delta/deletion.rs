//! Deletion vectors: marking rows of a Delta table's files as deleted without rewriting them.
//!
//! An AUTO CDC batch changes the rows of the keys it touches, and those keys are spread over
//! the target's files: with random keys, 1% of them touch every file. Rewriting each touched
//! file would cost as much as rewriting the table. Instead the batch marks the touched keys'
//! rows deleted in each file (a *deletion vector*: the file's deleted row positions) and adds
//! the keys' new rows as one new file. A file whose rows are mostly deleted is rewritten
//! instead (its live rows join the new file), so the table never carries more dead rows than
//! live ones per file.
//!
//! The format is Delta's (`PROTOCOL.md`, "Deletion Vector Format"), so every Delta reader with
//! the `deletionVectors` feature reads these tables: a vector is a `RoaringBitmapArray` (a
//! 64-bit roaring treemap, little-endian, after the magic number 1681511377). All the vectors of
//! one commit go in one file `deletion_vector_<uuid>.bin` at the table root: a version byte,
//! then per vector its size (big-endian, magic included), the magic and the bitmap, and a
//! big-endian CRC-32 of magic and bitmap. An `add` names its vector by the file's UUID (Z85, 20
//! characters), the offset of the size field, the size and the number of rows deleted.

use std::collections::HashSet;

use arrow::array::RecordBatch;
use arrow::datatypes::SchemaRef;
use bytes::Bytes;
use deltalake::kernel::{DeletionVectorDescriptor, StorageType};
use deltalake::DeltaTable;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt};
use roaring::RoaringTreemap;

use crate::error::{NativeError, Result};

/// The magic number of a `RoaringBitmapArray` in Delta's portable format.
const MAGIC: u32 = 1681511377;
/// Whether `table` takes deletion vectors: the protocol has the feature and the table property
/// enables it.
pub(crate) fn enabled(table: &DeltaTable) -> Result<bool> {
    let snapshot = table.snapshot()?;
    let protocol = serde_json::to_value(snapshot.protocol()).map_err(|e| NativeError::Storage(e.to_string()))?;
    let listed = |key: &str| {
        protocol.get(key).and_then(|v| v.as_array()).is_some_and(|a| a.iter().any(|f| f == "deletionVectors"))
    };
    let on = snapshot
        .metadata()
        .configuration()
        .get("delta.enableDeletionVectors")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    Ok(on && listed("readerFeatures") && listed("writerFeatures"))
}

/// A file of the table some of whose rows a batch deletes.
pub(crate) struct Marked {
    /// The file, as the table lists it.
    pub file: super::keyscan::Listed,
    /// Every deleted row position: its earlier vector and the new positions.
    pub deleted: RoaringTreemap,
    /// Its physical row count.
    pub records: u64,
}

impl Marked {
    /// Whether the file is better rewritten than marked: at least half of its rows are dead.
    pub(crate) fn mostly_deleted(&self) -> bool {
        self.deleted.len() * 2 >= self.records
    }
}

/// The deleted positions a descriptor names.
pub(crate) async fn read(store: &dyn ObjectStore, v: &DeletionVectorDescriptor) -> Result<RoaringTreemap> {
    let bad = |why: &str| NativeError::Storage(format!("deletion vector `{}`: {why}", v.path_or_inline_dv));
    let bytes: Bytes = match v.storage_type {
        StorageType::Inline => {
            Bytes::from(z85::decode(&v.path_or_inline_dv).map_err(|e| bad(&format!("not Z85: {e}")))?)
        }
        StorageType::UuidRelativePath => {
            let path = relative_path(&v.path_or_inline_dv).ok_or_else(|| bad("not a prefix and a Z85 UUID"))?;
            let offset = v.offset.unwrap_or(1).max(0) as u64;
            let size = v.size_in_bytes.max(0) as u64;
            // The size field, then magic and bitmap (`size` bytes); the checksum follows.
            let all = store.get_range(&path, offset..offset + 4 + size).await.map_err(|e| bad(&e.to_string()))?;
            all.slice(4..)
        }
        StorageType::AbsolutePath => return Err(bad("vectors at absolute paths are not read by the native backend")),
    };
    if bytes.len() < 4 || u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) != MAGIC {
        return Err(bad("not a RoaringBitmapArray"));
    }
    RoaringTreemap::deserialize_from(&bytes[4..]).map_err(|e| bad(&e.to_string()))
}

/// `deletion_vector_<uuid>.bin` under the prefix, from `<prefix><Z85 uuid>`.
fn relative_path(encoded: &str) -> Option<Path> {
    let split = encoded.len().checked_sub(20)?;
    let (prefix, id) = encoded.split_at(split);
    let id = uuid::Uuid::from_slice(&z85::decode(id).ok()?).ok()?;
    let name = format!("deletion_vector_{id}.bin");
    Some(if prefix.is_empty() { Path::from(name) } else { Path::from(format!("{prefix}/{name}")) })
}

/// A marked file's path (as the table lists it) and its new vector.
pub(crate) type Described = (String, DeletionVectorDescriptor);

/// Writes the vectors of `marked` into one new file at the table root and returns each file's
/// path with its new descriptor.
pub(crate) async fn write(table: &DeltaTable, marked: &[Marked]) -> Result<Vec<Described>> {
    if marked.is_empty() {
        return Ok(Vec::new());
    }
    let id = uuid::Uuid::new_v4();
    let (file, described) = encode(&id, marked)?;
    let store = table.log_store().object_store(None);
    let path = Path::from(format!("deletion_vector_{id}.bin"));
    store.put(&path, file.into()).await.map_err(|e| NativeError::Storage(format!("{path}: {e}")))?;
    Ok(described)
}

/// The file holding the vectors of `marked`, named by `id`, and each marked file's descriptor.
fn encode(id: &uuid::Uuid, marked: &[Marked]) -> Result<(Vec<u8>, Vec<Described>)> {
    let mut file = vec![1u8];
    let mut out = Vec::with_capacity(marked.len());
    for m in marked {
        let mut bitmap = Vec::with_capacity(m.deleted.serialized_size());
        m.deleted.serialize_into(&mut bitmap).map_err(|e| NativeError::Storage(e.to_string()))?;
        let size = 4 + bitmap.len();
        let offset =
            i32::try_from(file.len()).map_err(|_| NativeError::Storage("deletion vectors over 2 GiB".into()))?;
        file.extend_from_slice(&(size as u32).to_be_bytes());
        let mut crc = crc32fast::Hasher::new();
        crc.update(&MAGIC.to_le_bytes());
        crc.update(&bitmap);
        file.extend_from_slice(&MAGIC.to_le_bytes());
        file.extend_from_slice(&bitmap);
        file.extend_from_slice(&crc.finalize().to_be_bytes());
        out.push((
            m.file.path.clone(),
            DeletionVectorDescriptor {
                storage_type: StorageType::UuidRelativePath,
                path_or_inline_dv: z85::encode(id.as_bytes()),
                offset: Some(offset),
                size_in_bytes: size as i32,
                cardinality: m.deleted.len() as i64,
            },
        ));
    }
    Ok((file, out))
}

/// What marking `marked` takes: the live rows of the files better dropped than marked (as
/// `schema`; they are written again), those files, and the others with their new vectors
/// (written here). What a [`crate::delta::write::Commit::Replace`] takes.
pub(crate) async fn vectors_for(
    table: &DeltaTable,
    marked: Vec<Marked>,
    fold: &HashSet<String>,
    schema: &SchemaRef,
) -> Result<(Vec<RecordBatch>, Vec<String>, Vec<Described>)> {
    let (dropped, marked): (Vec<_>, Vec<_>) =
        marked.into_iter().partition(|m| m.mostly_deleted() || fold.contains(&m.file.path));
    let reads = dropped.iter().filter_map(|m| {
        let mut live = RoaringTreemap::new();
        live.insert_range(0..m.records);
        live -= &m.deleted;
        (!live.is_empty())
            .then_some(async move { super::keyscan::read_rows(table, &m.file, None, &live, schema).await })
    });
    let kept = futures::future::try_join_all(reads).await?;
    let vectors = write(table, &marked).await?;
    Ok((kept, dropped.into_iter().map(|m| m.file.path).collect(), vectors))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn marked(path: &str, rows: &[u64]) -> Marked {
        Marked {
            file: crate::delta::keyscan::Listed::named(path),
            deleted: rows.iter().copied().collect(),
            records: 10_000_000_000,
        }
    }

    #[tokio::test]
    async fn vectors_written_together_read_back_one_by_one() {
        let store: Arc<dyn ObjectStore> = Arc::new(object_store::memory::InMemory::new());
        let id = uuid::Uuid::new_v4();
        let files = [marked("a.parquet", &[0, 7, 4_000_000_000, 9_000_000_000]), marked("b.parquet", &[3])];
        let (file, described) = encode(&id, &files).unwrap();
        store.put(&Path::from(format!("deletion_vector_{id}.bin")), file.into()).await.unwrap();
        assert_eq!(described.len(), 2);
        for (m, (path, v)) in files.iter().zip(&described) {
            assert_eq!(path, &m.file.path);
            assert_eq!(v.cardinality as u64, m.deleted.len());
            assert_eq!(read(store.as_ref(), v).await.unwrap(), m.deleted);
        }
        // A prefix names a folder; an inline vector is the Z85 of magic and bitmap.
        let mut bitmap = MAGIC.to_le_bytes().to_vec();
        files[1].deleted.serialize_into(&mut bitmap).unwrap();
        while !bitmap.len().is_multiple_of(4) {
            bitmap.push(0);
        }
        let inline = DeletionVectorDescriptor {
            storage_type: StorageType::Inline,
            path_or_inline_dv: z85::encode(&bitmap),
            offset: None,
            size_in_bytes: bitmap.len() as i32,
            cardinality: 1,
        };
        assert_eq!(read(store.as_ref(), &inline).await.unwrap(), files[1].deleted);
        assert_eq!(
            relative_path(&format!("ab{}", z85::encode(id.as_bytes()))).unwrap().as_ref(),
            format!("ab/deletion_vector_{id}.bin")
        );
    }
}
