//! The keys a scan looks for, and how a row's key is looked up among them: encoded with arrow's
//! row format, or for a single integer key as a number behind a small Bloom filter.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::DataType;
use arrow::row::{RowConverter, SortField};

use crate::error::Result;

/// The keys a scan looks for, each known by its row in the batch they came from.
pub(crate) struct Wanted {
    types: Vec<DataType>,
    pub(super) ids: Ids,
}

/// A wanted key's id by its value. One integer column (the usual key) is looked up as a number:
/// every row of a table is looked up, and encoding each into bytes first doubles the scan.
pub(super) enum Ids {
    Integer(IntegerIds),
    Encoded(RowConverter, HashMap<Box<[u8]>, u32, foldhash::fast::RandomState>),
}

/// Integer keys: a Bloom filter in front of the map. Almost every row of a table is not wanted,
/// and the filter (16 bits per wanted key, small enough to stay in the core's cache) turns all
/// but about 1% of them away before the map, whose lookups miss the cache. Each key sets three
/// bits of one 64-bit word, so a row costs one load; a single bit per key let 6% through.
pub(super) struct IntegerIds {
    pub(super) ids: HashMap<i64, u32, foldhash::fast::RandomState>,
    null: Option<u32>,
    filter: Vec<u64>,
    shift: u32,
    /// The wanted values in order: which pages' `[min, max]` may hold one.
    sorted: Vec<i64>,
}

impl IntegerIds {
    fn new(values: &arrow::array::Int64Array) -> IntegerIds {
        let mut ids = HashMap::with_capacity_and_hasher(values.len(), Default::default());
        let mut null = None;
        for (i, v) in values.iter().enumerate() {
            match v {
                Some(v) => {
                    ids.entry(v).or_insert(i as u32);
                }
                None => {
                    null.get_or_insert(i as u32);
                }
            }
        }
        let words = (ids.len() * 16 / 64).next_power_of_two();
        // A shift by 64 overflows: one word takes no bits of the hash.
        let shift = 64 - words.trailing_zeros().max(1);
        let mut filter = vec![0u64; words];
        for v in ids.keys() {
            let (w, bits) = Self::bits(*v, shift, words);
            filter[w] |= bits;
        }
        let mut sorted: Vec<i64> = ids.keys().copied().collect();
        sorted.sort_unstable();
        IntegerIds { ids, null, filter, shift, sorted }
    }

    /// Fibonacci hashing: the top bits of the product pick the word (spreading consecutive keys
    /// apart), three groups of its middle bits the key's bits in it.
    #[inline]
    fn bits(v: i64, shift: u32, words: usize) -> (usize, u64) {
        let h = (v as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let word = (h >> shift) as usize & (words - 1);
        (word, 1 << ((h >> 20) & 63) | 1 << ((h >> 26) & 63) | 1 << ((h >> 32) & 63))
    }

    #[inline]
    pub(super) fn may_hold(&self, v: i64) -> bool {
        let (w, bits) = Self::bits(v, self.shift, self.filter.len());
        self.filter[w] & bits == bits
    }

    fn get(&self, v: i64) -> Option<u32> {
        match self.may_hold(v) {
            false => None,
            true => self.ids.get(&v).copied(),
        }
    }
}

/// Whether a key column of this type is looked up as an `i64`: the cast is exact (all but
/// `UInt64`).
fn integer(t: &DataType) -> bool {
    t.is_integer() && *t != DataType::UInt64
}

impl Wanted {
    /// The distinct rows of `keys` (their columns in key order); a key's id is its first row.
    pub(crate) fn new(keys: &[ArrayRef]) -> Result<Wanted> {
        let types: Vec<DataType> = keys.iter().map(|k| k.data_type().clone()).collect();
        let ids = match keys {
            [k] if integer(k.data_type()) => {
                let values = arrow::compute::cast(k, &DataType::Int64)?;
                Ids::Integer(IntegerIds::new(values.as_primitive::<arrow::datatypes::Int64Type>()))
            }
            _ => {
                let converter = RowConverter::new(types.iter().map(|t| SortField::new(t.clone())).collect())?;
                let rows = converter.convert_columns(keys)?;
                let mut ids = HashMap::with_capacity_and_hasher(rows.num_rows(), Default::default());
                for (i, r) in rows.iter().enumerate() {
                    ids.entry(r.as_ref().into()).or_insert(i as u32);
                }
                Ids::Encoded(converter, ids)
            }
        };
        Ok(Wanted { types, ids })
    }

    /// Whether a page whose key column's values lie in `[min, max]` may hold a wanted key;
    /// `None` when pages cannot be told apart by their bounds (keys of several columns or not
    /// integers, or NULL wanted, which bounds do not cover).
    pub(super) fn may_hold(&self) -> Option<impl Fn(i64, i64) -> bool + '_> {
        match &self.ids {
            Ids::Integer(ids) if ids.null.is_none() => Some(move |min: i64, max: i64| {
                let from = ids.sorted.partition_point(|v| *v < min);
                ids.sorted.get(from).is_some_and(|v| *v <= max)
            }),
            _ => None,
        }
    }

    /// The id of each row of `keys` (columns in key order): `None` for a key not wanted.
    pub(crate) fn ids_of(&self, keys: &[ArrayRef]) -> Result<Vec<Option<u32>>> {
        let mut ids = vec![None; keys.first().map_or(0, |k| k.len())];
        self.find(keys, |row, id| ids[row] = Some(id))?;
        Ok(ids)
    }

    /// Calls `found(row, id)` for each row of `keys` (columns in key order) holding a wanted
    /// key, in row order.
    pub(crate) fn find(&self, keys: &[ArrayRef], mut found: impl FnMut(usize, u32)) -> Result<()> {
        let cast = keys
            .iter()
            .zip(&self.types)
            .map(|(k, t)| if k.data_type() == t { Ok(Arc::clone(k)) } else { Ok(arrow::compute::cast(k, t)?) })
            .collect::<Result<Vec<_>>>()?;
        match &self.ids {
            Ids::Integer(ids) => {
                let values = arrow::compute::cast(&cast[0], &DataType::Int64)?;
                let values = values.as_primitive::<arrow::datatypes::Int64Type>();
                match (ids.null, values.null_count()) {
                    (Some(null), 1..) => {
                        for row in 0..values.len() {
                            match values.is_null(row) {
                                true => found(row, null),
                                false => ids.get(values.value(row)).into_iter().for_each(|id| found(row, id)),
                            }
                        }
                    }
                    // A NULL row's value is whatever the buffer holds: it is checked when it hits.
                    _ => {
                        // The filter first, 64 rows at a time and without branches (its loads
                        // overlap); then the map, for the few rows it lets through.
                        for (chunk, values64) in values.values().chunks(64).enumerate() {
                            let mut hits = 0u64;
                            for (j, v) in values64.iter().enumerate() {
                                hits |= (ids.may_hold(*v) as u64) << j;
                            }
                            while hits != 0 {
                                let row = chunk * 64 + hits.trailing_zeros() as usize;
                                hits &= hits - 1;
                                if let Some(id) = ids.ids.get(&values.value(row)) {
                                    if values.is_valid(row) {
                                        found(row, *id);
                                    }
                                }
                            }
                        }
                    }
                }
            }
            Ids::Encoded(converter, ids) => {
                let rows = converter.convert_columns(&cast)?;
                for (row, r) in rows.iter().enumerate() {
                    if let Some(id) = ids.get(r.as_ref()) {
                        found(row, *id);
                    }
                }
            }
        }
        Ok(())
    }
}
