//! Spark's `window(ts, length [, slide [, start]])` in a batch query's GROUP BY, and
//! `window_time(window)`.
//!
//! Spark groups each row into every time window that holds its event time (one for a tumbling
//! window, `length / slide` for a hopping one) and names the grouping column `window`, a struct
//! of `start` and `end`. Here a SELECT grouping by `window(…)` gets one more lateral view, which
//! joins each row with the windows holding it:
//!
//! `SELECT a, window.start, count(*) FROM t GROUP BY a, window(b, '5 minutes')` →
//! `SELECT a, window.start, count(*) FROM t LATERAL VIEW explode(__thund_time_windows(b, …)) AS
//! window GROUP BY a, window`
//!
//! and `lateral` plans the view as any other. A row whose event time is NULL falls in no window,
//! as on Spark. The windows of a row are Spark's (`knut_thund::event_time::Window::time_windows`,
//! which streaming flows use too). Session windows, which merge across rows, run on the Spark
//! backend in a batch query.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, ListBuilder, StructBuilder, TimestampMicrosecondBuilder};
use arrow::datatypes::{DataType, Field, Fields, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;
use knut_thund::event_time::{window_call, Window, WindowKind};
use knut_thund::ir::SourceLocation;
use sqlparser::ast::{Expr, GroupByExpr, Ident, LateralView, ObjectName, Select, Value, VisitMut, VisitorMut};

/// The function giving a row's windows, as a list of `{start, end}`.
const TIME_WINDOWS: &str = "__thund_time_windows";

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(TimeWindows { signature: Signature::user_defined(Volatility::Immutable) }));
}

/// The analysis rule: [`rewrite`].
pub(crate) fn rewrite_rule(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    rewrite(query)
}

/// Rewrites every SELECT of `query` that groups by `window(…)` (see the module).
pub(crate) fn rewrite(query: &mut sqlparser::ast::Query) -> std::result::Result<(), String> {
    struct Selects(Option<String>);
    impl VisitorMut for Selects {
        type Break = ();
        fn pre_visit_select(&mut self, select: &mut Select) -> std::ops::ControlFlow<()> {
            match rewrite_select(select) {
                Ok(()) => std::ops::ControlFlow::Continue(()),
                Err(e) => {
                    self.0 = Some(e);
                    std::ops::ControlFlow::Break(())
                }
            }
        }
    }
    let mut selects = Selects(None);
    let _ = query.visit(&mut selects);
    selects.0.map_or(Ok(()), Err)
}

fn rewrite_select(select: &mut Select) -> std::result::Result<(), String> {
    let GroupByExpr::Expressions(keys, _) = &mut select.group_by else { return Ok(()) };
    let nowhere = |_: &Ident| SourceLocation::new("<query>", 1, 1);
    let mut found: Option<(Expr, Window)> = None;
    for key in keys.iter_mut() {
        let Expr::Function(f) = key else { continue };
        let Some(parsed) = window_call(f, &nowhere) else { continue };
        let window = parsed.map_err(|d| d.message)?;
        if found.is_some() {
            return Err("a query may group by one window".into());
        }
        found = Some((key.clone(), window));
        *key = Expr::Identifier(Ident::new("window"));
    }
    let Some((call, window)) = found else { return Ok(()) };
    let WindowKind::Time { length, slide, start } = window.kind else {
        return Err("session_window(…) in a batch query runs on the Spark backend".into());
    };
    let Expr::Function(f) = &call else { return Ok(()) };
    let sqlparser::ast::FunctionArguments::List(list) = &f.args else { return Ok(()) };
    let Some(sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(ts))) = list.args.first()
    else {
        return Ok(());
    };
    // The same call elsewhere in the SELECT reads the grouping column.
    let _ = sqlparser::ast::visit_expressions_mut(&mut select.projection, |e| {
        if *e == call {
            *e = Expr::Identifier(Ident::new("window"));
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    let number = |n: i64| Expr::value(Value::Number(n.to_string(), false));
    let windows = crate::syntax::function(TIME_WINDOWS, vec![ts.clone(), number(length), number(slide), number(start)]);
    select.lateral_views.push(LateralView {
        lateral_view: crate::syntax::function("explode", vec![windows]),
        lateral_view_name: ObjectName::from(vec![Ident::new("__thund_windows")]),
        lateral_col_alias: vec![Ident::new("window")],
        outer: false,
    });
    Ok(())
}

/// Spark's `struct<start, end>` of a window over timestamps of type `t`.
fn window_type(t: &DataType) -> DataType {
    let field = |n: &str| Field::new(n, t.clone(), true);
    DataType::Struct(Fields::from(vec![field("start"), field("end")]))
}

/// `__thund_time_windows(ts, length, slide, start)`: the windows holding each row's `ts`
/// (lengths in microseconds), oldest first.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimeWindows {
    signature: Signature,
}

impl ScalarUDFImpl for TimeWindows {
    fn name(&self) -> &str {
        TIME_WINDOWS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    /// A string or a date is cast to a TIMESTAMP, as Spark casts the argument of `window`.
    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        let [ts, rest @ ..] = args else { return plan_err!("window(…) takes an event-time column") };
        let ts = match ts {
            DataType::Timestamp(_, zone) => DataType::Timestamp(TimeUnit::Microsecond, zone.clone()),
            DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Date32 | DataType::Null => {
                DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
            }
            other => return plan_err!("window(…) groups by a TIMESTAMP, not {other}"),
        };
        Ok(std::iter::once(ts).chain(rest.iter().map(|_| DataType::Int64)).collect())
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(DataType::List(Arc::new(Field::new("element", window_type(&args[0]), true))))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let arrays: Vec<ArrayRef> = args.args.iter().map(|a| a.to_array(n)).collect::<Result<_>>()?;
        let [ts, length, slide, start] = arrays.as_slice() else { return exec_err!("window(…): four arguments") };
        let (length, slide, start) = (
            length.as_primitive::<arrow::datatypes::Int64Type>().value(0),
            slide.as_primitive::<arrow::datatypes::Int64Type>().value(0),
            start.as_primitive::<arrow::datatypes::Int64Type>().value(0),
        );
        let DataType::Timestamp(_, zone) = ts.data_type() else {
            return exec_err!("window(…) over {}", ts.data_type());
        };
        let ts = ts.as_primitive::<TimestampMicrosecondType>();
        let DataType::Struct(fields) = window_type(ts.data_type()) else {
            return exec_err!("internal error: window(…)'s type is not a struct");
        };
        let bound = || TimestampMicrosecondBuilder::new().with_timezone_opt(zone.clone());
        let entries = StructBuilder::new(fields.clone(), vec![Box::new(bound()), Box::new(bound())]);
        let mut out = ListBuilder::new(entries).with_field(Field::new("element", DataType::Struct(fields), true));
        for i in 0..ts.len() {
            if ts.is_valid(i) {
                for (s, e) in Window::time_windows(length, slide, start, ts.value(i)) {
                    let entry = out.values();
                    for (field, bound) in [(0, s), (1, e)] {
                        match entry.field_builder::<TimestampMicrosecondBuilder>(field) {
                            Some(b) => b.append_value(bound),
                            None => return exec_err!("internal error: window(…)'s bounds are not timestamps"),
                        }
                    }
                    entry.append(true);
                }
            }
            out.append(true);
        }
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}
