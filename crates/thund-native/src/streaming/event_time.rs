//! Stateful aggregation in streaming flows — windows over event time, watermarks and the three
//! output modes — with Spark Structured Streaming's results.
//!
//! A flow whose query aggregates a `STREAM` source runs each batch in three steps:
//!
//! ```text
//!  new rows ──expand──▶ one row per (row, window it falls in), + __thund_window_start/_end
//!            ──drop───▶ rows whose window ended at or before the watermark (counted: late)
//!  state ∪ kept rows ──split at the new watermark──▶ rows the query reads │ rows kept as state
//!  the user's query, `window(…)` read from the two columns ──▶ the table, by output mode:
//!     append    the windows the new watermark closed, each written once, final
//!     update    the groups this batch changed, replacing their rows (one overwrite commit)
//!     complete  every group (one overwrite commit); nothing is dropped or evicted
//!  kept rows ──▶ the next state, written before the batch commits (`checkpoint` has the protocol)
//! ```
//!
//! State is the input rows of groups that can still change, not partial aggregates: every
//! aggregate Spark allows (`avg`, `min`, …) then comes out exact by running the user's own query
//! over them. With a watermark the state is bounded (a window's rows leave it when it closes);
//! an update or complete aggregation without one keeps every row, as Spark keeps every group.
//! Session windows are found again each batch from the state's raw rows, since sessions merge.
//! The watermark follows Spark (`knut_thund::event_time`): largest event time seen minus the
//! delay, in milliseconds, advanced after the batch — and, as Spark's no-data batch does, the
//! windows it closes are written in the same run.

use std::io::Cursor;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, RecordBatch, TimestampMicrosecondArray, UInt32Array};
use arrow::compute::{cast, filter_record_batch, take};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use arrow::row::{RowConverter, SortField};
use knut_thund::event_time::{shape, Window, WindowKind, MICROS_PER_MILLI};
use knut_thund::ir::{OutputMode, Query, SourceLocation};
use sqlparser::ast::{Expr, GroupByExpr, Ident, Query as AstQuery, SelectItem, SetExpr, VisitMut, VisitorMut};

use crate::delta::storage::Storage;
use crate::error::{NativeError, Result};

/// The column holding each row's window start in the rows the user's query sees.
pub(crate) const WINDOW_START: &str = "__thund_window_start";
/// The column holding each row's window end.
pub(crate) const WINDOW_END: &str = "__thund_window_end";

/// The stateful work of a streaming flow's aggregation: its windows, its watermark, and what its
/// output mode writes each batch.
#[derive(Debug, Clone)]
pub(crate) struct Windowed {
    /// The index of the aggregated `STREAM` read in the query's reads.
    pub read: usize,
    /// The event-time column (of the watermark, or of the window without one).
    pub column: String,
    /// The watermark delay, in milliseconds (Spark's precision); `None` without a watermark.
    pub delay_ms: Option<i64>,
    /// The windows rows are grouped in; `None` for an aggregation by plain columns.
    pub window: Option<Window>,
    /// What each batch writes: `append` the windows it closes, `update` the groups it changed,
    /// `complete` every group.
    pub mode: OutputMode,
    /// For a session window, the source columns that the query also groups by: sessions are
    /// per value of these.
    pub keys: Vec<String>,
    /// Where the watermark (or the window) is declared.
    pub location: SourceLocation,
}

impl Windowed {
    /// The stateful work of `q` written in `mode`: `None` for a query that does not aggregate (a
    /// watermark on a stateless query changes nothing, as in Spark).
    pub(super) fn of(q: &Query, mode: OutputMode) -> Result<Option<Windowed>> {
        let plan_err =
            |location: &SourceLocation, message: String| NativeError::Plan { location: location.to_string(), message };
        let shape = shape(q).map_err(|d| {
            let first = d.into_iter().next().map(|d| d.message).unwrap_or_default();
            plan_err(&q.location, first)
        })?;
        let Some(aggregation) = shape.aggregation else { return Ok(None) };
        let et = q.event_time.as_ref();
        match (et, &shape.window) {
            (Some(et), Some(w)) if !et.column.eq_ignore_ascii_case(&w.column) => {
                return Err(plan_err(
                    &w.location,
                    format!("the window is on `{}` but the watermark on `{}`", w.column, et.column),
                ))
            }
            (Some(et), None) => {
                return Err(plan_err(
                    &aggregation,
                    format!(
                        "the native backend aggregates over event time by window: group by `window({}, '<length>')`",
                        et.column
                    ),
                ))
            }
            (None, _) if mode == OutputMode::Append => {
                // Validation refuses it first, with Spark's words.
                return Err(plan_err(&aggregation, "a streaming aggregation in append mode needs a watermark".into()));
            }
            _ => {}
        }
        let window = shape.window;
        let keys = match &window {
            Some(w @ Window { kind: WindowKind::Session { .. }, .. }) => {
                if mode == OutputMode::Update {
                    return Err(plan_err(
                        &w.location,
                        "session windows in update mode are not supported by the native backend (a merged session \
                         replaces rows written before under other keys); use append or complete"
                            .into(),
                    ));
                }
                session_keys(q, w.function()).map_err(|m| plan_err(&w.location, m))?
            }
            _ => Vec::new(),
        };
        let delay_ms = match et {
            Some(et) => Some(et.delay_micros().map_err(|d| plan_err(&et.location, d.message))? / MICROS_PER_MILLI),
            None => None,
        };
        let streams: Vec<usize> = (0..q.reads.len()).filter(|i| q.reads[*i].is_streaming()).collect();
        let read = match et {
            // The watermark follows the read it is written after.
            Some(et) => streams
                .iter()
                .copied()
                .filter(|i| q.reads[*i].span().end <= et.span.start)
                .max_by_key(|i| q.reads[*i].span().end)
                .ok_or_else(|| plan_err(&et.location, "WATERMARK must follow a STREAM source".into()))?,
            None => match streams.as_slice() {
                [one] => *one,
                _ => {
                    return Err(plan_err(
                        &aggregation,
                        "a streaming aggregation reads exactly one STREAM source".into(),
                    ))
                }
            },
        };
        let (column, location) = match (et, &window) {
            (Some(et), _) => (et.column.clone(), et.location.clone()),
            (None, Some(w)) => (w.column.clone(), w.location.clone()),
            (None, None) => (String::new(), aggregation),
        };
        Ok(Some(Windowed { read, column, delay_ms, window, mode, keys, location }))
    }

    /// What every windowed batch starts from.
    fn batch(&self, source: &Schema, watermark: i64) -> Result<Batch> {
        let (column, tz) = self.event_time_column(source)?;
        Ok(Batch {
            column,
            micros: DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
            tz,
            schema: self.expanded_schema(source)?,
            late_before: if self.evicts() { watermark * MICROS_PER_MILLI } else { i64::MIN },
        })
    }

    /// Whether late rows are dropped and closed windows leave the state: with a watermark, in
    /// append and update mode (complete mode keeps every group, as in Spark).
    fn evicts(&self) -> bool {
        self.delay_ms.is_some() && self.mode != OutputMode::Complete
    }

    /// The watermark after a batch whose largest event time was `max_ms`.
    fn advance(&self, watermark: i64, max_ms: Option<i64>) -> i64 {
        match (self.delay_ms, max_ms) {
            (Some(delay), Some(m)) => watermark.max(m - delay),
            _ => watermark,
        }
    }

    /// What the query reads and the state keeps, by output mode, from all rows and which of them
    /// are in windows the watermark closed.
    fn split(
        &self,
        rows: &RecordBatch,
        closed: &BooleanArray,
        state: &RecordBatch,
    ) -> Result<(RecordBatch, RecordBatch)> {
        let open = arrow::compute::not(closed)?;
        Ok(match self.mode {
            OutputMode::Append => (filter_record_batch(rows, closed)?, filter_record_batch(state, &open)?),
            OutputMode::Update => (rows.clone(), filter_record_batch(state, &open)?),
            OutputMode::Complete => (rows.clone(), state.clone()),
        })
    }

    /// The schema of expanded rows: the source's columns and the window's start and end.
    pub(super) fn expanded_schema(&self, source: &Schema) -> Result<SchemaRef> {
        let (_, tz) = self.event_time_column(source)?;
        let ts = DataType::Timestamp(TimeUnit::Microsecond, tz);
        let mut fields: Vec<Field> = source.fields().iter().map(|f| f.as_ref().clone()).collect();
        fields.push(Field::new(WINDOW_START, ts.clone(), false));
        fields.push(Field::new(WINDOW_END, ts, false));
        Ok(Arc::new(Schema::new(fields)))
    }

    fn event_time_column(&self, source: &Schema) -> Result<(usize, Option<Arc<str>>)> {
        let (i, f) =
            source.fields().iter().enumerate().find(|(_, f)| f.name().eq_ignore_ascii_case(&self.column)).ok_or_else(
                || NativeError::Plan {
                    location: self.location.to_string(),
                    message: format!("the watermark column `{}` is not a column of its source", self.column),
                },
            )?;
        match f.data_type() {
            DataType::Timestamp(_, tz) => Ok((i, tz.clone())),
            // Spark's words.
            other => Err(NativeError::Plan {
                location: self.location.to_string(),
                message: format!(
                    "event time must be defined on a window or a timestamp, but `{}` is of type {}",
                    self.column,
                    thund_sql::spark_simple_string(other)
                ),
            }),
        }
    }

    /// One batch: `new` rows of the source, the `state` left by the last batch and the
    /// `watermark` it left (milliseconds; 0 before the first batch, as in Spark).
    pub(super) fn step(
        &self,
        source: &Schema,
        new: &[RecordBatch],
        state: Vec<RecordBatch>,
        watermark: i64,
    ) -> Result<Step> {
        match self.window.as_ref().map(|w| w.kind) {
            Some(WindowKind::Time { length, slide, start }) => {
                self.time_step((length, slide, start), source, new, state, watermark)
            }
            Some(WindowKind::Session { gap }) => self.session_step(gap, source, new, state, watermark),
            None => {
                // Groups of plain columns: every row stays, and every group is read again.
                let schema: SchemaRef = Arc::new(source.clone());
                let mut rows = state.into_iter().map(|b| conform_state(&schema, b)).collect::<Result<Vec<_>>>()?;
                rows.extend(new.iter().cloned());
                let all = arrow::compute::concat_batches(&schema, &rows)?;
                let fresh = new.to_vec();
                Ok(Step {
                    state_schema: Arc::clone(&schema),
                    schema,
                    closing: vec![all.clone()],
                    open: vec![all],
                    fresh,
                    watermark,
                    dropped: 0,
                })
            }
        }
    }

    /// A batch of time windows. The state is expanded rows (one per row and open window).
    fn time_step(
        &self,
        (length, slide, start): (i64, i64, i64),
        source: &Schema,
        new: &[RecordBatch],
        state: Vec<RecordBatch>,
        watermark: i64,
    ) -> Result<Step> {
        let Batch { column, tz, micros, schema, late_before } = self.batch(source, watermark)?;
        let mut max_ms: Option<i64> = None;
        let mut dropped = 0u64;
        let mut rows = state;
        let mut fresh = Vec::new();
        for batch in new {
            let ts = timestamps(batch.column(column), &micros)?;
            let (mut indices, mut starts, mut ends) = (Vec::new(), Vec::new(), Vec::new());
            for (i, t) in ts.iter().enumerate() {
                let Some(t) = t else { continue }; // no event time: no window (Spark filters it)
                max_ms = Some(later(max_ms, t));
                for (s, e) in Window::time_windows(length, slide, start, t) {
                    if e <= late_before {
                        dropped += 1;
                        continue;
                    }
                    indices.push(i as u32);
                    starts.push(s);
                    ends.push(e);
                }
            }
            let indices = UInt32Array::from(indices);
            let mut columns: Vec<ArrayRef> = batch
                .columns()
                .iter()
                .map(|c| take(c.as_ref(), &indices, None))
                .collect::<std::result::Result<_, _>>()?;
            columns.push(Arc::new(TimestampMicrosecondArray::from(starts).with_timezone_opt(tz.clone())));
            columns.push(Arc::new(TimestampMicrosecondArray::from(ends).with_timezone_opt(tz.clone())));
            let expanded = RecordBatch::try_new(Arc::clone(&schema), columns)?;
            fresh.push(expanded.clone());
            rows.push(expanded);
        }
        let watermark = self.advance(watermark, max_ms);
        let closes_at = if self.evicts() { watermark * MICROS_PER_MILLI } else { i64::MIN };
        let (mut closing, mut open) = (Vec::new(), Vec::new());
        let end_column = schema.index_of(WINDOW_END)?;
        for batch in rows {
            let batch = conform_state(&schema, batch)?;
            let ends = cast(batch.column(end_column), &DataType::Int64)?;
            let ends = ends
                .as_any()
                .downcast_ref::<arrow::array::Int64Array>()
                .ok_or_else(|| NativeError::Execution("internal error: window ends are not timestamps".into()))?;
            let closed: BooleanArray = ends.iter().map(|e| Some(e.is_some_and(|e| e <= closes_at))).collect();
            let (read, kept) = self.split(&batch, &closed, &batch)?;
            closing.push(read);
            open.push(kept);
        }
        closing.retain(|b| b.num_rows() > 0);
        open.retain(|b| b.num_rows() > 0);
        let state_schema = Arc::clone(&schema);
        Ok(Step { schema, state_schema, closing, open, fresh, watermark, dropped })
    }

    /// A batch of session windows. Sessions of one key merge as rows arrive, so the state is the
    /// raw rows of open sessions, and sessions are found again each batch from them and the new
    /// rows: sorted by key and time, a row joins the session before it if it comes no later than
    /// that session's end (its last row plus the gap).
    fn session_step(
        &self,
        gap: i64,
        source: &Schema,
        new: &[RecordBatch],
        state: Vec<RecordBatch>,
        watermark: i64,
    ) -> Result<Step> {
        let Batch { column, tz, micros, schema, late_before } = self.batch(source, watermark)?;
        let raw: SchemaRef = Arc::new(source.clone());
        let mut max_ms: Option<i64> = None;
        let mut dropped = 0u64;
        let mut rows = state.into_iter().map(|b| conform_state(&raw, b)).collect::<Result<Vec<_>>>()?;
        for batch in new {
            let ts = timestamps(batch.column(column), &micros)?;
            let keep: BooleanArray = ts
                .iter()
                .map(|t| {
                    let Some(t) = t else { return Some(false) };
                    max_ms = Some(later(max_ms, t));
                    // A row is late when the session it alone would open has already ended.
                    let late = t.saturating_add(gap) <= late_before;
                    dropped += u64::from(late);
                    Some(!late)
                })
                .collect();
            rows.push(filter_record_batch(batch, &keep)?);
        }
        let watermark = self.advance(watermark, max_ms);
        let closes_at = if self.evicts() { watermark * MICROS_PER_MILLI } else { i64::MIN };
        let all = arrow::compute::concat_batches(&raw, &rows)?;
        let n = all.num_rows();
        let key_columns = self
            .keys
            .iter()
            .map(|k| {
                source.fields().iter().position(|f| f.name().eq_ignore_ascii_case(k)).ok_or_else(|| NativeError::Plan {
                    location: self.location.to_string(),
                    message: format!("`{k}`, grouped by with a session window, is not a column of the STREAM source"),
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let converter = RowConverter::new(
            key_columns.iter().map(|i| SortField::new(source.field(*i).data_type().clone())).collect(),
        )?;
        let keys =
            converter.convert_columns(&key_columns.iter().map(|i| Arc::clone(all.column(*i))).collect::<Vec<_>>())?;
        let ts = timestamps(all.column(column), &micros)?;
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_by(|a, b| keys.row(*a).cmp(&keys.row(*b)).then(ts.value(*a).cmp(&ts.value(*b))));
        let (mut starts, mut ends) = (vec![0i64; n], vec![0i64; n]);
        let mut i = 0;
        while i < n {
            let first = order[i];
            let mut end = ts.value(first) + gap;
            let mut j = i + 1;
            // A row exactly a gap after the session's last row still joins it (measured on Spark
            // 4.1.4: rows at 00:04 and 00:09 with a 5-minute gap share a session).
            while j < n && keys.row(order[j]) == keys.row(first) && ts.value(order[j]) <= end {
                end = end.max(ts.value(order[j]) + gap);
                j += 1;
            }
            for &row in &order[i..j] {
                starts[row] = ts.value(first);
                ends[row] = end;
            }
            i = j;
        }
        let closed: BooleanArray = ends.iter().map(|e| Some(*e <= closes_at)).collect();
        let mut columns = all.columns().to_vec();
        columns.push(Arc::new(TimestampMicrosecondArray::from(starts).with_timezone_opt(tz.clone())));
        columns.push(Arc::new(TimestampMicrosecondArray::from(ends).with_timezone_opt(tz)));
        let expanded = RecordBatch::try_new(Arc::clone(&schema), columns)?;
        let (closing, open) = self.split(&expanded, &closed, &all)?;
        // Update mode is refused for sessions (`of`), so no batch needs only the changed sessions.
        Ok(Step {
            schema,
            state_schema: raw,
            closing: vec![closing],
            open: vec![open],
            fresh: Vec::new(),
            watermark,
            dropped,
        })
    }

    /// The user's query reading the window from the expanded rows: `GROUP BY window(ts, …)`
    /// groups by the two window columns, and `window.start`, `window.end`, `window` read them.
    pub(super) fn rewrite(&self, q: &Query) -> Result<Query> {
        let mut ast: AstQuery = q
            .ast
            .get()
            .cloned()
            .ok_or_else(|| NativeError::Execution(format!("internal error: {} was not parsed", q.location)))?;
        let Some(window) = &self.window else { return Ok(q.clone()) };
        let function = window.function();
        if let SetExpr::Select(select) = ast.body.as_mut() {
            if let GroupByExpr::Expressions(exprs, _) = &mut select.group_by {
                let mut out = Vec::with_capacity(exprs.len() + 1);
                for e in exprs.drain(..) {
                    if is_call(&e, function) {
                        out.push(Expr::Identifier(Ident::new(WINDOW_START)));
                        out.push(Expr::Identifier(Ident::new(WINDOW_END)));
                    } else {
                        out.push(e);
                    }
                }
                *exprs = out;
            }
            // Unaliased, `window.start` is named `start` and `window` `window`, as in Spark.
            for item in &mut select.projection {
                if let SelectItem::UnnamedExpr(e) = item {
                    if let Some(name) = window_reference(e, function) {
                        *item = SelectItem::ExprWithAlias { expr: e.clone(), alias: Ident::new(name) };
                    }
                }
            }
        }
        let _ = ast.visit(&mut WindowReferences { function });
        let mut rewritten = q.clone();
        rewritten.ast = knut_thund::ir::ParsedQuery::new(ast);
        Ok(rewritten)
    }
}

/// What a windowed batch works with.
struct Batch {
    /// The event-time column's index in the source.
    column: usize,
    /// Its time zone, which the window columns keep.
    tz: Option<Arc<str>>,
    /// Its type in microseconds.
    micros: DataType,
    /// The source's columns and the window's.
    schema: SchemaRef,
    /// Rows whose window ends at or before this (microseconds) are late.
    late_before: i64,
}

/// The largest event time seen, with `t` (microseconds): Spark keeps milliseconds, truncating.
fn later(max_ms: Option<i64>, t: i64) -> i64 {
    max_ms.map_or(t / MICROS_PER_MILLI, |m| m.max(t / MICROS_PER_MILLI))
}

/// What one batch of a windowed flow reads and leaves.
pub(crate) struct Step {
    /// The expanded rows' schema.
    pub schema: SchemaRef,
    /// The schema of the rows kept in state.
    pub state_schema: SchemaRef,
    /// Rows of the windows this batch closes: the user's query runs over them.
    pub closing: Vec<RecordBatch>,
    /// Rows of windows still open: the next batch's state.
    pub open: Vec<RecordBatch>,
    /// This batch's own rows (expanded, late ones dropped): in update mode, which groups changed.
    pub fresh: Vec<RecordBatch>,
    /// The watermark after this batch, in milliseconds.
    pub watermark: i64,
    /// Rows (one per window a row fell in) dropped because their window had already closed.
    pub dropped: u64,
}

/// A state batch read back with the schema of this run's rows (names and types are checked).
fn conform_state(schema: &SchemaRef, batch: RecordBatch) -> Result<RecordBatch> {
    if batch.schema() == *schema {
        return Ok(batch);
    }
    let same = batch.schema().fields().len() == schema.fields().len()
        && batch
            .schema()
            .fields()
            .iter()
            .zip(schema.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if !same {
        return Err(NativeError::Execution(
            "the streaming source's columns changed while windows were open; full-refresh the table".into(),
        ));
    }
    Ok(RecordBatch::try_new(Arc::clone(schema), batch.columns().to_vec())?)
}

fn is_call(e: &Expr, function: &str) -> bool {
    matches!(e, Expr::Function(f) if f.name.0.last().and_then(|p| p.as_ident()).is_some_and(|i| i.value.eq_ignore_ascii_case(function)))
}

/// The name Spark gives an unaliased reference to the window: `start` / `end` for its fields,
/// the function's name for the whole struct.
fn window_reference(e: &Expr, function: &str) -> Option<String> {
    match e {
        Expr::CompoundIdentifier(ids) if ids.len() == 2 && ids[0].value.eq_ignore_ascii_case(function) => {
            Some(ids[1].value.to_ascii_lowercase())
        }
        Expr::Identifier(i) if i.value.eq_ignore_ascii_case(function) && i.quote_style.is_none() => {
            Some(function.to_string())
        }
        _ if is_call(e, function) => Some(function.to_string()),
        _ => None,
    }
}

/// `named_struct('start', __thund_window_start, 'end', __thund_window_end)`: the window as the
/// struct Spark's `window(…)` returns.
fn window_struct() -> Expr {
    use sqlparser::ast::{
        Function, FunctionArg, FunctionArgExpr, FunctionArgumentList, FunctionArguments, ObjectName, Value,
    };
    let arg = |e: Expr| FunctionArg::Unnamed(FunctionArgExpr::Expr(e));
    let name = |n: &str| arg(Expr::value(Value::SingleQuotedString(n.to_string())));
    let column = |n: &str| arg(Expr::Identifier(Ident::new(n)));
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new("named_struct")]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: vec![name("start"), column(WINDOW_START), name("end"), column(WINDOW_END)],
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// Rewrites every reference to the window into the window columns.
struct WindowReferences {
    function: &'static str,
}

impl VisitorMut for WindowReferences {
    type Break = ();

    fn post_visit_expr(&mut self, e: &mut Expr) -> ControlFlow<()> {
        let column = |name: &str| Expr::Identifier(Ident::new(name));
        let replacement = match e {
            Expr::CompoundIdentifier(ids) if ids.len() == 2 && ids[0].value.eq_ignore_ascii_case(self.function) => {
                match ids[1].value.to_ascii_lowercase().as_str() {
                    "start" => Some(column(WINDOW_START)),
                    "end" => Some(column(WINDOW_END)),
                    _ => None,
                }
            }
            _ if window_reference(e, self.function).is_some_and(|n| n == self.function) => Some(window_struct()),
            _ => None,
        };
        if let Some(r) = replacement {
            *e = r;
        }
        ControlFlow::Continue(())
    }
}

/// Reads a windowed flow's state (Arrow IPC); nothing when there is none.
pub(crate) async fn load_state(storage: &Storage, key: Option<&str>) -> Result<Vec<RecordBatch>> {
    let Some(key) = key else { return Ok(Vec::new()) };
    let Some(bytes) = storage.get(key).await? else {
        return Err(NativeError::Storage(format!(
            "{}: the state of open windows is missing; full-refresh the table",
            storage.display(key)
        )));
    };
    let reader = StreamReader::try_new(Cursor::new(bytes), None)?;
    Ok(reader.collect::<std::result::Result<Vec<_>, _>>()?)
}

/// Writes a windowed flow's state whole.
pub(crate) async fn save_state(
    storage: &Storage,
    key: &str,
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<()> {
    let mut bytes = Vec::new();
    {
        let mut w = StreamWriter::try_new(&mut bytes, schema)?;
        w.write(&compact(schema, batches)?)?;
        w.finish()?;
    }
    storage.put(key, bytes).await
}

/// The open rows as one batch that owns only its own data. Rows kept by `take` or a filter still
/// point into the whole string buffers of the batch they came from; written as they are, a state
/// of a few thousand rows carried every earlier batch's strings and grew with each run.
fn compact(schema: &SchemaRef, batches: &[RecordBatch]) -> Result<RecordBatch> {
    let all = arrow::compute::concat_batches(schema, batches)?;
    let columns: Vec<ArrayRef> = all
        .columns()
        .iter()
        .map(|c| -> ArrayRef {
            match c.data_type() {
                DataType::Utf8View => Arc::new(c.as_string_view().gc()),
                DataType::BinaryView => Arc::new(c.as_binary_view().gc()),
                _ => Arc::clone(c),
            }
        })
        .collect();
    Ok(RecordBatch::try_new(Arc::clone(schema), columns)?)
}

/// An event-time column as microseconds.
fn timestamps(column: &ArrayRef, micros: &DataType) -> Result<TimestampMicrosecondArray> {
    let cast = cast(column, micros)?;
    cast.as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .cloned()
        .ok_or_else(|| NativeError::Execution("internal error: event time did not cast to microseconds".into()))
}

/// The columns a query groups by besides its session window.
fn session_keys(q: &Query, function: &str) -> std::result::Result<Vec<String>, String> {
    let Some(SetExpr::Select(select)) = q.ast.get().map(|a| a.body.as_ref()) else { return Ok(Vec::new()) };
    let GroupByExpr::Expressions(exprs, _) = &select.group_by else { return Ok(Vec::new()) };
    let mut keys = Vec::new();
    for e in exprs.iter().filter(|e| !is_call(e, function)) {
        match e {
            Expr::Identifier(i) => keys.push(i.value.clone()),
            Expr::CompoundIdentifier(ids) => keys.extend(ids.last().map(|i| i.value.clone())),
            other => {
                return Err(format!(
                    "the native backend groups sessions by source columns; `{other}` is an expression (compute it in an upstream table)"
                ))
            }
        }
    }
    Ok(keys)
}
