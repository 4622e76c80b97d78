//! What an AUTO CDC flow's clauses mean for a change feed of a given schema ([`Shape`]), and the
//! columns its history keeps beside the target's.

use std::sync::Arc;

use arrow::datatypes::{Field, Schema, SchemaRef};
use knut_thund::ir::{AutoCdc, ColumnSelection, Flow, ScdType};

use crate::error::{NativeError, Result};

/// Columns of the history beside the target's.
pub(crate) const SEQ: &str = "__thund_seq";
pub(crate) const OP: &str = "__thund_op";
pub(crate) const BATCH: &str = "__thund_batch";
/// When the change was applied (ms since the epoch): tombstones expire by it.
pub(crate) const AT: &str = "__thund_at";
/// SCD type 2's validity columns, named as DLT names them.
pub(super) const START_AT: &str = "__START_AT";
pub(super) const END_AT: &str = "__END_AT";

/// An operation of a change.
pub(crate) const UPSERT: &str = "U";
pub(crate) const DELETE: &str = "D";
pub(crate) const TRUNCATE: &str = "T";

/// What the flow's clauses mean for a change feed of a given schema.
#[derive(Clone)]
pub(crate) struct Shape {
    /// The target's data columns (the `COLUMNS` selection of the feed), in the feed's order.
    pub columns: Vec<String>,
    /// Indices of the key columns in `columns`.
    pub keys: Vec<usize>,
    /// Indices (in `columns`) whose change opens a new SCD 2 version.
    pub tracked: Vec<usize>,
    pub scd: ScdType,
    pub ignore_nulls: bool,
}

impl Shape {
    /// Resolves the clauses against the feed's columns; unknown columns are an error at the
    /// flow's location, every one named at once.
    pub(super) fn of(f: &Flow, cdc: &AutoCdc, feed: &Schema) -> Result<Shape> {
        let all: Vec<String> = feed.fields().iter().map(|f| f.name().clone()).collect();
        let find = |n: &str| all.iter().find(|c| c.eq_ignore_ascii_case(n)).cloned();
        let mut unknown = Vec::new();
        let mut check = |what: &str, names: &[String]| {
            for n in names {
                if find(n).is_none() {
                    unknown.push(format!("`{n}` ({what})"));
                }
            }
        };
        check("KEYS", &cdc.keys);
        let selected: Vec<String> = match &cdc.columns {
            ColumnSelection::All => all.clone(),
            ColumnSelection::Include(v) => {
                check("COLUMNS", v);
                all.iter().filter(|c| v.iter().any(|x| x.eq_ignore_ascii_case(c))).cloned().collect()
            }
            ColumnSelection::Except(v) => {
                check("COLUMNS * EXCEPT", v);
                all.iter().filter(|c| !v.iter().any(|x| x.eq_ignore_ascii_case(c))).cloned().collect()
            }
        };
        let tracked_names: Vec<String> = match &cdc.track_history {
            None | Some(ColumnSelection::All) => selected.clone(),
            Some(ColumnSelection::Include(v)) => {
                check("TRACK HISTORY ON", v);
                v.iter().filter_map(|n| find(n)).collect()
            }
            Some(ColumnSelection::Except(v)) => {
                check("TRACK HISTORY ON * EXCEPT", v);
                selected.iter().filter(|c| !v.iter().any(|x| x.eq_ignore_ascii_case(c))).cloned().collect()
            }
        };
        let err = |message: String| NativeError::Plan { location: f.location.to_string(), message };
        if !unknown.is_empty() {
            return Err(err(format!(
                "AUTO CDC flow `{}` names columns its change feed does not have: {} (the feed has: {})",
                f.name,
                unknown.join(", "),
                all.join(", ")
            )));
        }
        let index = |n: &String| selected.iter().position(|c| c.eq_ignore_ascii_case(n));
        let keys: Vec<usize> = cdc.keys.iter().filter_map(index).collect();
        if keys.len() != cdc.keys.len() {
            return Err(err(format!("AUTO CDC flow `{}`: every key must be one of the target's COLUMNS", f.name)));
        }
        for reserved in [START_AT, END_AT] {
            if cdc.scd_type == ScdType::Type2 && selected.iter().any(|c| c.eq_ignore_ascii_case(reserved)) {
                return Err(err(format!(
                    "AUTO CDC flow `{}`: the change feed has a column `{reserved}`, which SCD TYPE 2 adds itself; leave it out with COLUMNS * EXCEPT ({reserved})",
                    f.name
                )));
            }
        }
        // Neither the keys nor the sequence column (which every change moves) open a version.
        let sequence = cdc.sequence_by.as_ref().and_then(|e| e.column()).and_then(|s| index(&s.to_string()));
        let tracked =
            tracked_names.iter().filter_map(index).filter(|i| !keys.contains(i) && Some(*i) != sequence).collect();
        Ok(Shape { columns: selected, keys, tracked, scd: cdc.scd_type, ignore_nulls: cdc.ignore_null_updates })
    }

    /// The target's schema: the data columns (types from the history) and, for SCD 2, the
    /// validity columns of the sequence's type.
    pub(super) fn target_schema(&self, history: &Schema) -> Result<SchemaRef> {
        let mut fields: Vec<Field> = Vec::new();
        for c in &self.columns {
            fields.push(history.field_with_name(c)?.as_ref().clone().with_nullable(true));
        }
        if self.scd == ScdType::Type2 {
            let seq = history.field_with_name(SEQ)?.data_type().clone();
            fields.push(Field::new(START_AT, seq.clone(), true));
            fields.push(Field::new(END_AT, seq, true));
        }
        Ok(Arc::new(Schema::new(fields)))
    }
}
