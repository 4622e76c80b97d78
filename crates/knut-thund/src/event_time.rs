//! Event time: what a streaming query's `WATERMARK` and its `window(…)` / `session_window(…)`
//! grouping mean, read once from the query's parse for every consumer — validation (the errors
//! Spark raises, with file:line, before anything runs) and the native engine (which runs them).
//!
//! Spark Structured Streaming's rules, which both backends follow (checked against Spark 4.1.4 by
//! `conformance/event-time`):
//! - the watermark is the largest event time seen so far minus the delay, in milliseconds; it is
//!   computed after a batch and used from the next one (Spark's extra no-data batch uses it within
//!   the same run);
//! - a time window is `[start, end)`: windows start at multiples of the slide after the epoch
//!   (plus the optional start offset), and a row at exactly `end` belongs to the next window;
//! - in append mode a window's row is written once, final, when the watermark reaches its end,
//!   and an input row whose window has already ended (`end <= watermark`) is dropped — a row
//!   older than the watermark still counts if its window is open.

use std::ops::ControlFlow;

use sqlparser::ast::{
    Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, GroupByExpr, Ident, Query as AstQuery, SetExpr,
    TableFactor, Value, Visit, Visitor,
};

use crate::error::Diagnostic;
use crate::ir::query::{ident_offset, name_parts, LineIndex, QueryFacts};
use crate::ir::{EventTime, Query, SourceLocation};

/// Microseconds per millisecond: Spark keeps the watermark in milliseconds.
pub const MICROS_PER_MILLI: i64 = 1_000;

const UNITS: [(&str, i64); 7] = [
    ("microsecond", 1),
    ("millisecond", 1_000),
    ("second", 1_000_000),
    ("minute", 60_000_000),
    ("hour", 3_600_000_000),
    ("day", 86_400_000_000),
    ("week", 604_800_000_000),
];

/// An interval as Spark writes it in windows and watermark delays — `10 minutes`,
/// `1 hour 30 minutes`, `'5' MINUTE`, `interval 2 seconds` — in microseconds. Months and years
/// have no fixed length and are refused, as Spark refuses them for windows.
pub(crate) fn interval_micros(text: &str) -> Result<i64, String> {
    let cleaned = text.replace(['\'', '"'], " ");
    let mut words = cleaned.split_whitespace().peekable();
    if words.peek().is_some_and(|w| w.eq_ignore_ascii_case("interval")) {
        words.next();
    }
    let mut total: i64 = 0;
    let mut any = false;
    while let Some(number) = words.next() {
        let n: i64 =
            number.parse().map_err(|_| format!("`{number}` in interval `{}` is not a whole number", text.trim()))?;
        let Some(unit) = words.next() else {
            return Err(format!("interval `{}` has a number without a unit", text.trim()));
        };
        let singular = unit.to_ascii_lowercase();
        let singular = singular.strip_suffix('s').unwrap_or(&singular);
        let Some((_, micros)) = UNITS.iter().find(|(u, _)| *u == singular) else {
            return Err(format!(
                "unknown interval unit `{unit}` in `{}`; use weeks, days, hours, minutes, seconds, milliseconds or microseconds",
                text.trim()
            ));
        };
        total = n
            .checked_mul(*micros)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(|| format!("interval `{}` is too long", text.trim()))?;
        any = true;
    }
    if !any {
        return Err(format!("`{}` is not an interval", text.trim()));
    }
    Ok(total)
}

impl EventTime {
    /// The delay in microseconds.
    pub fn delay_micros(&self) -> Result<i64, Diagnostic> {
        interval_micros(&self.delay).map_err(|e| Diagnostic::at(&self.location, e))
    }
}

/// Which windows a row falls in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowKind {
    /// `window(ts, length [, slide [, start]])`: tumbling when `slide == length`, hopping when
    /// shorter. All in microseconds.
    Time {
        /// Window length.
        length: i64,
        /// Distance between window starts.
        slide: i64,
        /// Offset of window starts from the epoch.
        start: i64,
    },
    /// `session_window(ts, gap)`: a window per burst of rows no further apart than `gap`.
    Session {
        /// The gap that closes a session, in microseconds.
        gap: i64,
    },
}

/// A `window(…)` or `session_window(…)` grouping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window {
    /// The windows.
    pub kind: WindowKind,
    /// The event-time column it windows.
    pub column: String,
    /// Where the call is.
    pub location: SourceLocation,
}

impl Window {
    /// The function's name, which is also the name of its result column (`window.start`).
    pub fn function(&self) -> &'static str {
        match self.kind {
            WindowKind::Time { .. } => "window",
            WindowKind::Session { .. } => "session_window",
        }
    }

    /// The time windows holding a row at `ts` (microseconds), as `(start, end)`, oldest first.
    /// Spark's formula: the last window starting at or before `ts`, then one slide back at a
    /// time while the window still holds `ts`.
    pub fn time_windows(length: i64, slide: i64, start: i64, ts: i64) -> impl Iterator<Item = (i64, i64)> {
        let last_start = ts - (ts - start).rem_euclid(slide);
        let count = (length + slide - 1) / slide;
        (0..count)
            .rev()
            .map(move |k| last_start - k * slide)
            .filter(move |s| *s <= ts && ts < s + length)
            .map(move |s| (s, s + length))
    }
}

/// The event-time shape of a query's top-level `SELECT`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Shape {
    /// Where the `SELECT` aggregates (its `GROUP BY`, or its first aggregate function), if it does.
    pub aggregation: Option<SourceLocation>,
    /// The first `DISTINCT` aggregate, if any.
    pub distinct_aggregate: Option<SourceLocation>,
    /// The window the `SELECT` groups by, if any.
    pub window: Option<Window>,
}

/// Aggregate functions whose presence makes a `SELECT` without `GROUP BY` an aggregation.
const AGGREGATES: [&str; 22] = [
    "count",
    "sum",
    "avg",
    "mean",
    "min",
    "max",
    "first",
    "last",
    "first_value",
    "last_value",
    "any_value",
    "collect_list",
    "collect_set",
    "count_if",
    "approx_count_distinct",
    "stddev",
    "stddev_pop",
    "stddev_samp",
    "variance",
    "var_pop",
    "var_samp",
    "bool_and",
];

/// The event-time shape of `q`: its aggregation and its window, with every malformed window
/// reported (unknown units, a slide longer than the window, …).
pub fn shape(q: &Query) -> Result<Shape, Vec<Diagnostic>> {
    q.facts.shape.clone()
}

/// The positions in the top-level `SELECT` list of the items that aggregate nothing: the group's
/// key columns of the result, by which an update-mode batch replaces the groups it changed.
pub fn key_columns(q: &Query) -> Vec<usize> {
    q.facts.key_columns.clone()
}

/// Where `q` joins two streams, if it does: a `FROM` (of any `SELECT` in it) with more than one
/// streaming source, counting a subquery as streaming when it reads a stream. Unions of streams
/// are not joins: each branch reads its own stream.
pub(crate) fn stream_stream_join(q: &Query) -> Option<SourceLocation> {
    q.facts.stream_join.clone()
}

/// Reads from `q`'s parse what the functions above answer; the front-end calls it once per query.
pub(crate) fn facts(q: &Query) -> QueryFacts {
    let Some(ast) = q.ast.get() else { return QueryFacts::default() };
    QueryFacts { shape: read_shape(q, ast), stream_join: read_stream_join(q, ast), key_columns: read_key_columns(ast) }
}

fn read_shape(q: &Query, ast: &AstQuery) -> Result<Shape, Vec<Diagnostic>> {
    let mut shape = Shape::default();
    let SetExpr::Select(select) = ast.body.as_ref() else { return Ok(shape) };
    let at = |ident: &Ident| location_in(q, ident);
    let mut errors = Vec::new();
    if let GroupByExpr::Expressions(exprs, _) = &select.group_by {
        if let Some(first) = exprs.first() {
            shape.aggregation = Some(first_ident(first).map(at).unwrap_or_else(|| q.location.clone()));
        }
        for e in exprs {
            let Expr::Function(f) = e else { continue };
            match window_call(f, &at) {
                Some(Ok(w)) if shape.window.is_none() => shape.window = Some(w),
                Some(Ok(w)) => errors.push(Diagnostic::at(&w.location, "a query may group by only one window")),
                Some(Err(d)) => errors.push(d),
                None => {}
            }
        }
    }
    let mut calls = AggregateCalls::default();
    for item in &select.projection {
        let _ = item.visit(&mut calls);
    }
    if let Some(having) = &select.having {
        let _ = having.visit(&mut calls);
    }
    if shape.aggregation.is_none() {
        shape.aggregation = calls.first.as_ref().map(at);
    }
    shape.distinct_aggregate = calls.distinct.as_ref().map(at);
    match errors.is_empty() {
        true => Ok(shape),
        false => Err(errors),
    }
}

/// Where `ident` of `q`'s parse is in its file. Lines are exact (normalizing a query keeps its
/// lines); columns on the query's first line are shifted by where the query starts.
fn location_in(q: &Query, ident: &Ident) -> SourceLocation {
    let (line, column) = (ident.span.start.line as u32, ident.span.start.column as u32);
    if line == 0 {
        return q.location.clone();
    }
    let column = if line == 1 { q.location.column + column - 1 } else { column };
    SourceLocation::new(&q.location.file, q.location.line + line - 1, column)
}

fn first_ident(e: &Expr) -> Option<&Ident> {
    match e {
        Expr::Identifier(i) => Some(i),
        Expr::CompoundIdentifier(ids) => ids.first(),
        Expr::Function(f) => f.name.0.first().and_then(|p| p.as_ident()),
        Expr::Nested(e) | Expr::Cast { expr: e, .. } => first_ident(e),
        _ => None,
    }
}

/// `window(…)` / `session_window(…)`, parsed; `None` for any other function.
pub fn window_call(f: &Function, at: &dyn Fn(&Ident) -> SourceLocation) -> Option<Result<Window, Diagnostic>> {
    let ident = f.name.0.last()?.as_ident()?;
    let name = ident.value.to_ascii_lowercase();
    if name != "window" && name != "session_window" {
        return None;
    }
    let location = at(ident);
    let fail = |message: String| Some(Err(Diagnostic::at(&location, message)));
    let args: Vec<&Expr> = match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    };
    let column = match args.first() {
        Some(Expr::Identifier(i)) => i.value.clone(),
        Some(Expr::CompoundIdentifier(ids)) => ids.last().map(|i| i.value.clone()).unwrap_or_default(),
        _ => return fail(format!("`{name}(…)` takes an event-time column first, e.g. `{name}(ts, '10 minutes')`")),
    };
    let mut durations = Vec::new();
    for a in &args[1..] {
        match interval_arg(a).map(|t| interval_micros(&t)) {
            Some(Ok(v)) => durations.push(v),
            Some(Err(e)) => return fail(e),
            None => return fail(format!("`{name}(…)` takes durations as strings, e.g. '10 minutes', not `{a}`")),
        }
    }
    let kind = match (name.as_str(), durations.as_slice()) {
        ("session_window", [gap]) if *gap > 0 => WindowKind::Session { gap: *gap },
        ("session_window", [_]) => return fail("the gap of a session window must be positive".into()),
        ("window", [length, rest @ ..]) if rest.len() <= 2 => {
            let slide = rest.first().copied().unwrap_or(*length);
            let start = rest.get(1).copied().unwrap_or(0);
            if *length <= 0 || slide <= 0 {
                return fail("the window duration and slide duration must be greater than 0".into());
            }
            if slide > *length {
                // Spark's own words.
                return fail(format!(
                    "the slide duration ({}) must be less than or equal to the windowDuration ({})",
                    describe(slide),
                    describe(*length)
                ));
            }
            if start.abs() >= slide {
                return fail(format!(
                    "the absolute value of the start time ({}) must be less than the slideDuration ({})",
                    describe(start),
                    describe(slide)
                ));
            }
            WindowKind::Time { length: *length, slide, start }
        }
        ("session_window", _) => return fail("`session_window(ts, gap)` takes a column and a gap".into()),
        _ => return fail("`window(ts, length [, slide [, start]])` takes a column and one to three durations".into()),
    };
    Some(Ok(Window { kind, column, location }))
}

/// The text of a duration argument: `'10 minutes'` or `INTERVAL 10 MINUTES`.
fn interval_arg(e: &Expr) -> Option<String> {
    match e {
        Expr::Value(v) => match &v.value {
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => Some(s.clone()),
            _ => None,
        },
        Expr::Interval(_) => Some(e.to_string()),
        _ => None,
    }
}

/// A duration as Spark prints it in its messages.
fn describe(micros: i64) -> String {
    for (unit, size) in UNITS.iter().rev() {
        if micros != 0 && micros % size == 0 {
            let n = micros / size;
            return format!("{n} {unit}{}", if n.abs() == 1 { "" } else { "s" });
        }
    }
    format!("{micros} microseconds")
}

/// The aggregate calls of a `SELECT` list (not window functions, not inside subqueries' own
/// aggregations — close enough for the check it feeds).
#[derive(Default)]
struct AggregateCalls {
    first: Option<Ident>,
    distinct: Option<Ident>,
}

impl Visitor for AggregateCalls {
    type Break = ();

    fn pre_visit_expr(&mut self, e: &Expr) -> ControlFlow<()> {
        let Expr::Function(f) = e else { return ControlFlow::Continue(()) };
        if f.over.is_some() {
            return ControlFlow::Continue(());
        }
        let Some(ident) = f.name.0.last().and_then(|p| p.as_ident()) else { return ControlFlow::Continue(()) };
        if !AGGREGATES.contains(&ident.value.to_ascii_lowercase().as_str()) {
            return ControlFlow::Continue(());
        }
        self.first.get_or_insert_with(|| ident.clone());
        if let FunctionArguments::List(list) = &f.args {
            if list.duplicate_treatment == Some(sqlparser::ast::DuplicateTreatment::Distinct) {
                self.distinct.get_or_insert_with(|| ident.clone());
            }
        }
        ControlFlow::Continue(())
    }
}

fn read_key_columns(ast: &AstQuery) -> Vec<usize> {
    let SetExpr::Select(select) = ast.body.as_ref() else { return Vec::new() };
    (0..select.projection.len())
        .filter(|i| {
            let mut calls = AggregateCalls::default();
            let _ = select.projection[*i].visit(&mut calls);
            calls.first.is_none()
        })
        .collect()
}

fn read_stream_join(q: &Query, ast: &AstQuery) -> Option<SourceLocation> {
    let mut finder = StreamJoins { q, lines: LineIndex::new(&q.normalized), found: None };
    let _ = ast.visit(&mut finder);
    finder.found
}

struct StreamJoins<'a> {
    q: &'a Query,
    lines: LineIndex<'a>,
    found: Option<SourceLocation>,
}

impl StreamJoins<'_> {
    /// Where the streaming source of `factor` is, if it has one.
    fn streaming(&self, factor: &TableFactor) -> Option<SourceLocation> {
        match factor {
            TableFactor::Table { name, .. } => {
                let first = *name_parts(name)?.first()?;
                let read = self.q.read_at(ident_offset(&self.lines, first))?;
                self.q.reads[read].is_streaming().then(|| location_in(self.q, first))
            }
            TableFactor::Derived { subquery, .. } => {
                let mut inner = StreamFactors { outer: self, first: None };
                let _ = subquery.visit(&mut inner);
                inner.first
            }
            TableFactor::NestedJoin { table_with_joins, .. } => std::iter::once(&table_with_joins.relation)
                .chain(table_with_joins.joins.iter().map(|j| &j.relation))
                .find_map(|f| self.streaming(f)),
            _ => None,
        }
    }
}

impl Visitor for StreamJoins<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &AstQuery) -> ControlFlow<()> {
        let SetExpr::Select(select) = query.body.as_ref() else { return ControlFlow::Continue(()) };
        let streams: Vec<SourceLocation> = select
            .from
            .iter()
            .flat_map(|t| std::iter::once(&t.relation).chain(t.joins.iter().map(|j| &j.relation)))
            .filter_map(|f| self.streaming(f))
            .collect();
        if let Some(second) = streams.get(1) {
            self.found = Some(second.clone());
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    }
}

/// The first streaming table factor anywhere in a subquery.
struct StreamFactors<'a, 'b> {
    outer: &'a StreamJoins<'b>,
    first: Option<SourceLocation>,
}

impl Visitor for StreamFactors<'_, '_> {
    type Break = ();

    fn pre_visit_table_factor(&mut self, factor: &TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { .. } = factor {
            if let Some(at) = self.outer.streaming(factor) {
                self.first = Some(at);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn intervals_read_as_spark_writes_them() {
        assert_eq!(interval_micros("10 minutes"), Ok(600_000_000));
        assert_eq!(interval_micros("'5' MINUTE"), Ok(300_000_000));
        assert_eq!(interval_micros("1 hour 30 minutes"), Ok(5_400_000_000));
        assert_eq!(interval_micros("interval 2 seconds"), Ok(2_000_000));
        let e = interval_micros("5 fortnights").unwrap_err();
        assert!(e.contains("unknown interval unit `fortnights`"), "{e}");
        assert!(interval_micros("1 month").is_err());
        assert!(interval_micros("minutes").is_err());
    }

    #[test]
    fn rows_fall_in_the_windows_that_hold_them() {
        const MIN: i64 = 60_000_000;
        let w = |ts: i64, len: i64, slide: i64| Window::time_windows(len, slide, 0, ts).collect::<Vec<_>>();
        assert_eq!(w(13 * MIN, 10 * MIN, 10 * MIN), vec![(10 * MIN, 20 * MIN)]);
        // A row at a window's end is in the next window.
        assert_eq!(w(20 * MIN, 10 * MIN, 10 * MIN), vec![(20 * MIN, 30 * MIN)]);
        assert_eq!(w(13 * MIN, 20 * MIN, 10 * MIN), vec![(0, 20 * MIN), (10 * MIN, 30 * MIN)]);
        assert_eq!(w(-1, 10 * MIN, 10 * MIN), vec![(-10 * MIN, 0)]);
    }
}
