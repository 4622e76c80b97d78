//! The event log as a Delta table: its schema, events as Arrow batches and back, and reading it.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray, TimestampMicrosecondArray};
use arrow::datatypes::{DataType, Field, Fields, Schema, SchemaRef, TimeUnit};
use deltalake::DeltaTable;
use knut_thund::backend::rfc3339;
use knut_thund::ir::Pipeline;
use serde_json::Value;

use super::{LoggedEvent, Origin};
use crate::error::{NativeError, Result};
use crate::storage::Storage;

/// The Arrow schema of the table.
pub fn schema() -> SchemaRef {
    let text = |name: &str, nullable: bool| Field::new(name, DataType::Utf8, nullable);
    Arc::new(Schema::new(vec![
        text("id", false),
        Field::new("sequence", DataType::Int64, false),
        Field::new("origin", DataType::Struct(origin_fields()), false),
        Field::new("timestamp", DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())), false),
        text("message", false),
        text("level", false),
        text("maturity_level", false),
        text("error", true),
        text("details", false),
        text("event_type", false),
    ]))
}

pub(super) fn origin_fields() -> Fields {
    Fields::from(vec![
        Field::new("pipeline_name", DataType::Utf8, false),
        Field::new("update_id", DataType::Utf8, false),
        Field::new("backend", DataType::Utf8, false),
        Field::new("dataset_name", DataType::Utf8, true),
        Field::new("flow_name", DataType::Utf8, true),
        Field::new("source_code_location", DataType::Utf8, true),
    ])
}

pub(super) fn to_batch(rows: &[LoggedEvent]) -> Result<RecordBatch> {
    let strings = |f: &dyn Fn(&LoggedEvent) -> Option<String>| -> ArrayRef {
        Arc::new(rows.iter().map(f).collect::<StringArray>())
    };
    let origin = StructArray::try_new(
        origin_fields(),
        vec![
            strings(&|e| Some(e.origin.pipeline_name.clone())),
            strings(&|e| Some(e.origin.update_id.clone())),
            strings(&|e| Some(e.origin.backend.clone())),
            strings(&|e| e.origin.dataset_name.clone()),
            strings(&|e| e.origin.flow_name.clone()),
            strings(&|e| e.origin.source_code_location.clone()),
        ],
        None,
    )?;
    let micros: TimestampMicrosecondArray = rows.iter().map(|e| micros(&e.timestamp)).collect::<Vec<_>>().into();
    let columns: Vec<ArrayRef> = vec![
        strings(&|e| Some(e.id.clone())),
        Arc::new(rows.iter().map(|e| e.sequence).collect::<Int64Array>()),
        Arc::new(origin),
        Arc::new(micros.with_timezone("UTC")),
        strings(&|e| Some(e.message.clone())),
        strings(&|e| Some(e.level.clone())),
        strings(&|e| Some(e.maturity_level.clone())),
        strings(&|e| e.error.clone()),
        strings(&|e| Some(e.details.to_string())),
        strings(&|e| Some(e.event_type.clone())),
    ];
    Ok(RecordBatch::try_new(schema(), columns)?)
}

/// Microseconds since the epoch of a time [`rfc3339`] formatted (UTC, `…Z`); 0 if it is not one.
pub fn micros(t: &str) -> i64 {
    let num = |r: std::ops::Range<usize>| t.get(r).and_then(|s| s.parse::<i64>().ok());
    let parsed = (|| {
        let (y, m, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
        let (hh, mm, ss) = (num(11..13)?, num(14..16)?, num(17..19)?);
        let frac = t.get(20..t.len().checked_sub(1)?).unwrap_or("");
        let micros = format!("{frac:0<6}").get(..6)?.parse::<i64>().ok()?;
        // Days from civil (Howard Hinnant's algorithm), the inverse of `rfc3339`'s.
        let y = if m <= 2 { y - 1 } else { y };
        let era = y.div_euclid(400);
        let yoe = y - era * 400;
        let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        let days = era * 146_097 + doe - 719_468;
        Some(((days * 86_400 + hh * 3600 + mm * 60 + ss) * 1_000_000) + micros)
    })();
    parsed.unwrap_or(0)
}

/// Every event of `table`, ordered by time, then run and sequence.
pub(super) async fn read_table(table: &DeltaTable) -> Result<Vec<LoggedEvent>> {
    let ctx = datafusion::prelude::SessionContext::new();
    table.update_datafusion_session(&ctx.state())?;
    ctx.register_table("event_log", table.table_provider().await?)?;
    use datafusion::functions::core::expr_fn::get_field;
    use datafusion::prelude::col;
    let columns = [
        "id",
        "sequence",
        "origin",
        "timestamp",
        "message",
        "level",
        "maturity_level",
        "error",
        "details",
        "event_type",
    ];
    let df = ctx.table("event_log").await?.select_columns(&columns)?.sort(vec![
        col("timestamp").sort(true, false),
        get_field(col("origin"), "update_id").sort(true, false),
        col("sequence").sort(true, false),
    ])?;
    let batches = df.collect().await?;
    let mut out = Vec::new();
    for b in &batches {
        out.extend(from_batch(b)?);
    }
    Ok(out)
}

pub(super) fn from_batch(b: &RecordBatch) -> Result<Vec<LoggedEvent>> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int64Type, TimestampMicrosecondType};
    // The scan may hand back other string types (views) than the table was written with.
    let target = schema();
    let columns = target
        .fields()
        .iter()
        .map(|f| {
            let c = b
                .column_by_name(f.name())
                .ok_or_else(|| NativeError::Execution(format!("the event log has no column `{}`", f.name())))?;
            Ok(arrow::compute::cast(c, f.data_type())?)
        })
        .collect::<Result<Vec<ArrayRef>>>()?;
    let b = &RecordBatch::try_new(target, columns)?;
    let text = |name: &str| -> Result<&StringArray> {
        b.column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| NativeError::Execution(format!("the event log has no text column `{name}`")))
    };
    let get = |a: &StringArray, i: usize| (!a.is_null(i)).then(|| a.value(i).to_string());
    let origin = b
        .column_by_name("origin")
        .map(|c| c.as_struct())
        .ok_or_else(|| NativeError::Execution("the event log has no `origin`".into()))?;
    let ofield = |name: &str| -> Result<&StringArray> {
        origin
            .column_by_name(name)
            .and_then(|c| c.as_any().downcast_ref::<StringArray>())
            .ok_or_else(|| NativeError::Execution(format!("the event log's origin has no `{name}`")))
    };
    let (id, message, level, maturity, error, details, event_type) = (
        text("id")?,
        text("message")?,
        text("level")?,
        text("maturity_level")?,
        text("error")?,
        text("details")?,
        text("event_type")?,
    );
    let (pipeline, update, backend, dataset, flow, location) = (
        ofield("pipeline_name")?,
        ofield("update_id")?,
        ofield("backend")?,
        ofield("dataset_name")?,
        ofield("flow_name")?,
        ofield("source_code_location")?,
    );
    let sequence = b.column_by_name("sequence").map(|c| c.as_primitive::<Int64Type>());
    let timestamp = b.column_by_name("timestamp").map(|c| c.as_primitive::<TimestampMicrosecondType>());
    let (Some(sequence), Some(timestamp)) = (sequence, timestamp) else {
        return Err(NativeError::Execution("the event log has no `sequence` or `timestamp`".into()));
    };
    Ok((0..b.num_rows())
        .map(|i| LoggedEvent {
            id: id.value(i).into(),
            sequence: sequence.value(i),
            origin: Origin {
                pipeline_name: pipeline.value(i).into(),
                update_id: update.value(i).into(),
                backend: backend.value(i).into(),
                dataset_name: get(dataset, i),
                flow_name: get(flow, i),
                source_code_location: get(location, i),
            },
            timestamp: rfc3339_micros(timestamp.value(i)),
            message: message.value(i).into(),
            level: level.value(i).into(),
            maturity_level: maturity.value(i).into(),
            error: get(error, i),
            details: serde_json::from_str(details.value(i)).unwrap_or(Value::Null),
            event_type: event_type.value(i).into(),
        })
        .collect())
}

/// RFC 3339 with microseconds (`2026-11-30T01:20:03.123456Z`), as the table stores times.
pub(super) fn rfc3339_micros(micros: i64) -> String {
    let t = UNIX_EPOCH + Duration::from_micros(micros.max(0) as u64);
    let millis = rfc3339(t);
    format!("{}{:03}Z", millis.trim_end_matches('Z'), micros.rem_euclid(1000))
}

/// Every event of `p`'s log, ordered by time (none if nothing has been logged yet).
pub async fn read(p: &Pipeline) -> Result<Vec<LoggedEvent>> {
    match open_log(&Storage::of(p)?).await? {
        Some(table) => read_table(&table).await,
        None => Ok(Vec::new()),
    }
}

/// The log's table; `None` before its first commit.
pub(super) async fn open_log(storage: &Storage) -> Result<Option<DeltaTable>> {
    if !storage.is_table(&storage.event_log_key()).await? {
        return Ok(None);
    }
    Ok(Some(deltalake::open_table(storage.event_log_url()).await?))
}

/// The log's latest Delta version (`-1` before the first event): it changes exactly when events
/// were added or compacted, so a reader polling the log rereads it only then.
pub async fn version(p: &Pipeline) -> Result<i64> {
    let storage = Storage::of(p)?;
    storage.delta_version(&storage.event_log_key()).await
}

/// Where the event log of `p` is, for messages.
pub fn location(p: &Pipeline) -> Result<String> {
    let storage = Storage::of(p)?;
    Ok(storage.display(&storage.event_log_key()))
}

/// The event log's table, registered with `ctx` as `event_log` in `p`'s database when it exists
/// (for `thund query`).
pub(crate) async fn provider(
    ctx: &datafusion::prelude::SessionContext,
    storage: &Storage,
) -> Result<Option<Arc<dyn datafusion::catalog::TableProvider>>> {
    let Some(table) = open_log(storage).await? else { return Ok(None) };
    table.update_datafusion_session(&ctx.state())?;
    Ok(Some(table.table_provider().await?))
}
