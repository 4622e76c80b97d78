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
use crate::delta::storage::Storage;
use crate::error::{NativeError, Result};

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
    let ctx = session(table, None).await?;
    events_where(&ctx, None).await
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
    Ok(Some(crate::delta::filtered::filtered(table.table_provider().await?)))
}

/// What a reader needs first of a long log, read without decoding every event: the runs, each
/// run's `update_progress` events, and every event of the runs a dataset last took part in (so
/// each dataset's last state and the runs' states fold from a few thousand events, not from a
/// million). [`LogReader`] then follows the log from the version it was read at.
pub struct Overview {
    /// Events in the log at that version.
    pub events: u64,
    /// Every run, oldest first: its id, backend and first event's time (RFC 3339).
    pub runs: Vec<(String, String, String)>,
    /// Ordered by time: every `update_progress` event, and every event of the runs in `detailed`.
    pub read: Vec<LoggedEvent>,
    /// The runs whose events are all in `read`: the last run each dataset took part in, the last
    /// run each completed in, the runs without an end, and the last run.
    pub detailed: std::collections::BTreeSet<String>,
}

/// Follows a pipeline's log commit by commit: the first read is an [`Overview`], each later one
/// reads only the files committed since.
pub struct LogReader {
    storage: Storage,
    table: Option<DeltaTable>,
    files: std::collections::HashSet<String>,
}

/// What [`LogReader::poll`] found.
pub enum Polled {
    /// No event committed since the last read.
    Unchanged,
    /// The events committed since the last read, ordered by time.
    Appended(Vec<LoggedEvent>),
    /// The log was rewritten (compacted) or created: read it anew with [`LogReader::overview`].
    Rewritten,
}

impl LogReader {
    /// A reader of `p`'s log that has read nothing yet.
    pub fn new(p: &Pipeline) -> Result<Self> {
        Ok(LogReader { storage: Storage::of(p)?, table: None, files: Default::default() })
    }

    /// The log as it is now, summarized; later polls read from here.
    pub async fn overview(&mut self) -> Result<Overview> {
        self.table = open_log(&self.storage).await?;
        self.files.clear();
        let Some(table) = &self.table else {
            return Ok(Overview { events: 0, runs: Vec::new(), read: Vec::new(), detailed: Default::default() });
        };
        self.files = files_of(table)?;
        overview(table).await
    }

    /// What was committed since the last read.
    pub async fn poll(&mut self) -> Result<Polled> {
        let Some(mut table) = self.table.clone() else {
            return Ok(if self.storage.is_table(&self.storage.event_log_key()).await? {
                Polled::Rewritten
            } else {
                Polled::Unchanged
            });
        };
        let before = table.version();
        table.update_incremental(None).await?;
        if table.version() == before {
            return Ok(Polled::Unchanged);
        }
        let files = files_of(&table)?;
        if !self.files.iter().all(|f| files.contains(f)) {
            return Ok(Polled::Rewritten);
        }
        let new: Vec<String> = files.iter().filter(|f| !self.files.contains(*f)).cloned().collect();
        // A commit may add no file (a vacuum's): no event came with it.
        let events = if new.is_empty() { None } else { Some(read_files(&table, new).await?) };
        self.files = files;
        self.table = Some(table);
        Ok(events.map_or(Polled::Unchanged, Polled::Appended))
    }
}

fn files_of(table: &DeltaTable) -> Result<std::collections::HashSet<String>> {
    Ok(table.snapshot()?.log_data().iter().map(|f| f.path().to_string()).collect())
}

/// A session with the log's table registered as `event_log` (only `paths` of it, if given).
async fn session(table: &DeltaTable, paths: Option<Vec<String>>) -> Result<datafusion::prelude::SessionContext> {
    let ctx = datafusion::prelude::SessionContext::new();
    table.update_datafusion_session(&ctx.state())?;
    let provider = match paths {
        Some(paths) => crate::delta::filtered::filtered(table.table_provider().with_file_paths(paths).await?),
        None => crate::delta::filtered::filtered(table.table_provider().await?),
    };
    ctx.register_table("event_log", provider)?;
    Ok(ctx)
}

/// The events of the files `paths` of `table`, ordered by time.
async fn read_files(table: &DeltaTable, paths: Vec<String>) -> Result<Vec<LoggedEvent>> {
    let ctx = session(table, Some(paths)).await?;
    events_where(&ctx, None).await
}

/// Expressions over the log's columns (built, not parsed: SQL text is the front end's).
mod x {
    pub(super) use datafusion::functions::core::expr_fn::get_field;
    pub(super) use datafusion::functions_aggregate::expr_fn::{count, last_value, min};
    pub(super) use datafusion::functions_aggregate::first_last::last_value_udaf;
    pub(super) use datafusion::logical_expr::{col, lit, when, Expr, ExprFunctionExt};

    /// `origin.<field>`.
    pub(super) fn origin(field: &str) -> Expr {
        get_field(col("origin"), field)
    }

    /// Whether the JSON text of `details` holds `"<key>":"<value>"` for one of `values`.
    pub(super) fn details_say(key: &str, values: &[&str]) -> Expr {
        let each = values.iter().map(|v| col("details").like(lit(format!("%\"{key}\":\"{v}\"%"))));
        each.reduce(Expr::or).unwrap_or(lit(false))
    }
}

/// The events of the log (registered as `event_log` in `ctx`) that `filter` keeps (all when
/// `None`), ordered by time, then run and sequence.
async fn events_where(ctx: &datafusion::prelude::SessionContext, filter: Option<x::Expr>) -> Result<Vec<LoggedEvent>> {
    let mut out = Vec::new();
    for b in ordered(ctx, filter).await?.collect().await? {
        out.extend(from_batch(&b)?);
    }
    Ok(out)
}

async fn ordered(
    ctx: &datafusion::prelude::SessionContext,
    filter: Option<x::Expr>,
) -> Result<datafusion::prelude::DataFrame> {
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
    let mut df = ctx.table("event_log").await?.select_columns(&columns)?;
    if let Some(f) = filter {
        df = df.filter(f)?;
    }
    Ok(df.sort(vec![
        x::col("timestamp").sort(true, false),
        x::origin("update_id").sort(true, false),
        x::col("sequence").sort(true, false),
    ])?)
}

/// The text column `i` of `b`.
fn text_column(b: &RecordBatch, i: usize) -> Result<StringArray> {
    use arrow::array::AsArray;
    Ok(arrow::compute::cast(b.column(i), &DataType::Utf8)?.as_string::<i32>().clone())
}

async fn overview(table: &DeltaTable) -> Result<Overview> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int64Type, TimestampMicrosecondType};
    use x::ExprFunctionExt;
    let ctx = session(table, None).await?;
    let log = ctx.table("event_log").await?;
    // A run without an end is under way (or was killed and no run has come since): read whole.
    let ended = x::col("event_type")
        .eq(x::lit("update_progress"))
        .and(x::details_say("state", &["COMPLETED", "FAILED", "STOPPED", "CANCELED"]));
    let runs_df = log.clone().aggregate(
        vec![x::origin("update_id").alias("run")],
        vec![
            x::min(x::origin("backend")).alias("backend"),
            x::min(x::col("timestamp")).alias("started"),
            x::count(x::lit(1)).alias("n"),
            x::count(x::when(ended, x::lit(1)).end()?).alias("ends"),
        ],
    )?;
    let mut runs = Vec::new();
    let mut events = 0u64;
    let mut detailed = std::collections::BTreeSet::new();
    for b in runs_df.collect().await? {
        let (run, backend) = (text_column(&b, 0)?, text_column(&b, 1)?);
        let started = b.column(2).as_primitive::<TimestampMicrosecondType>();
        let (n, ends) = (b.column(3).as_primitive::<Int64Type>(), b.column(4).as_primitive::<Int64Type>());
        for i in 0..b.num_rows() {
            events += n.value(i).max(0) as u64;
            runs.push((started.value(i), run.value(i).to_string(), backend.value(i).to_string()));
            if ends.value(i) == 0 {
                detailed.insert(run.value(i).to_string());
            }
        }
    }
    runs.sort();
    detailed.extend(runs.last().map(|r| r.1.clone()));
    // Each dataset's last run (the run of its latest flow progress: its state), and the run of
    // its last completed flow (its last refresh, rows and expectations).
    let by_time = || vec![x::col("timestamp").sort(true, false)];
    let last_df = log
        .filter(x::col("event_type").eq(x::lit("flow_progress")).and(x::origin("dataset_name").is_not_null()))?
        .aggregate(
            vec![x::origin("dataset_name").alias("dataset")],
            vec![
                x::last_value(x::origin("update_id"), by_time()).alias("last"),
                // Built whole: `filter` on a built aggregate would drop its ORDER BY.
                x::last_value_udaf()
                    .call(vec![x::origin("update_id")])
                    .order_by(by_time())
                    .filter(x::details_say("status", &["COMPLETED"]))
                    .build()?
                    .alias("completed"),
            ],
        )?;
    for b in last_df.collect().await? {
        for column in 1..3 {
            let run = text_column(&b, column)?;
            detailed.extend((0..b.num_rows()).filter(|i| !run.is_null(*i)).map(|i| run.value(i).to_string()));
        }
    }
    let named = detailed.iter().map(|r| x::lit(r.clone())).collect();
    let wanted = x::col("event_type").eq(x::lit("update_progress")).or(x::origin("update_id").in_list(named, false));
    let read = events_where(&ctx, Some(wanted)).await?;
    let runs = runs.into_iter().map(|(t, id, backend)| (id, backend, rfc3339_micros(t))).collect();
    Ok(Overview { events, runs, read, detailed })
}

/// The runs of the log registered in `ctx`, in the order they started (the latest first if
/// `latest_first`), at most `limit`.
async fn started_runs(
    ctx: &datafusion::prelude::SessionContext,
    latest_first: bool,
    limit: Option<usize>,
) -> Result<Vec<String>> {
    let df = ctx
        .table("event_log")
        .await?
        .aggregate(vec![x::origin("update_id").alias("run")], vec![x::min(x::col("timestamp")).alias("started")])?
        .sort(vec![x::col("started").sort(!latest_first, false), x::col("run").sort(!latest_first, false)])?
        .limit(0, limit)?;
    let mut out = Vec::new();
    for b in df.collect().await? {
        out.extend(text_column(&b, 0)?.iter().flatten().map(str::to_string));
    }
    Ok(out)
}

/// Every run of `p`, in the order they started.
pub async fn runs(p: &Pipeline) -> Result<Vec<String>> {
    let Some(table) = open_log(&Storage::of(p)?).await? else { return Ok(Vec::new()) };
    started_runs(&session(&table, None).await?, false, None).await
}

/// The id and events (ordered by time) of the run `id` of `p`, or of the run that started last
/// when `id` is `None`; `None` if there is no such run. The log is opened once, and only that
/// run's events are decoded.
pub async fn read_run(p: &Pipeline, id: Option<&str>) -> Result<Option<(String, Vec<LoggedEvent>)>> {
    let Some(table) = open_log(&Storage::of(p)?).await? else { return Ok(None) };
    let ctx = session(&table, None).await?;
    let id = match id {
        Some(id) => id.to_string(),
        None => match started_runs(&ctx, true, Some(1)).await?.into_iter().next() {
            Some(last) => last,
            None => return Ok(None),
        },
    };
    let events = events_where(&ctx, Some(x::origin("update_id").eq(x::lit(id.clone())))).await?;
    Ok((!events.is_empty()).then_some((id, events)))
}

/// Calls `f` with every event of `p`'s log in order of time, as they are read (one batch decoded
/// at a time), until `f` returns false.
pub async fn read_each(p: &Pipeline, mut f: impl FnMut(LoggedEvent) -> bool) -> Result<()> {
    use futures::StreamExt;
    let Some(table) = open_log(&Storage::of(p)?).await? else { return Ok(()) };
    let ctx = session(&table, None).await?;
    let mut stream = ordered(&ctx, None).await?.execute_stream().await?;
    while let Some(batch) = stream.next().await {
        for e in from_batch(&batch?)? {
            if !f(e) {
                return Ok(());
            }
        }
    }
    Ok(())
}
