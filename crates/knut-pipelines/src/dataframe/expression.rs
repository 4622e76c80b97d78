//! Spark Connect expressions as Spark SQL text.

use crate::proto::spark::connect as pb;
use crate::registration::{data_type_sql, quote_identifier};

use super::{refuse, Result, Scope, Untranslatable};
use crate::civil_date;

/// A column name as pyspark's `col()` takes it (`a`, `t.a`, `` `a.b` ``) as a quoted identifier.
pub(super) fn identifier(unparsed: &str) -> Result<String> {
    Ok(identifier_parts(unparsed)?.iter().map(|p| quote_identifier(p)).collect::<Vec<_>>().join("."))
}

/// The parts of a column name as pyspark's `col()` takes it, unquoted.
pub(super) fn identifier_parts(unparsed: &str) -> Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut part = String::new();
    let mut chars = unparsed.chars().peekable();
    let mut quoted = false;
    while let Some(c) = chars.next() {
        match c {
            '`' if quoted && chars.peek() == Some(&'`') => {
                chars.next();
                part.push('`');
            }
            '`' => quoted = !quoted,
            '.' if !quoted => parts.push(std::mem::take(&mut part)),
            c => part.push(c),
        }
    }
    parts.push(part);
    if quoted || parts.iter().any(String::is_empty) {
        return refuse(format!("the column name `{unparsed}`"));
    }
    Ok(parts)
}

/// A Spark SQL string literal: backslashes and quotes escaped, as Spark's parser unescapes them.
pub(super) fn string_literal(s: &str) -> String {
    format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"))
}

/// An expression as a select-list item: a SQL expression string (`selectExpr`) stays as written,
/// so its own `AS` alias works.
pub(super) fn select_item(e: &pb::Expression, scope: &Scope) -> Result<String> {
    match &e.expr_type {
        Some(pb::expression::ExprType::ExpressionString(s)) => Ok(s.expression.clone()),
        _ => expr(e, scope),
    }
}

pub(super) fn sort_order(o: &pb::expression::SortOrder, scope: &Scope) -> Result<String> {
    use pb::expression::sort_order::{NullOrdering, SortDirection};
    let child = o.child.as_deref().ok_or_else(|| Untranslatable("a sort order without expression".into()))?;
    let direction = match SortDirection::try_from(o.direction) {
        Ok(SortDirection::Descending) => " DESC",
        _ => " ASC",
    };
    let nulls = match NullOrdering::try_from(o.null_ordering) {
        Ok(NullOrdering::SortNullsFirst) => " NULLS FIRST",
        Ok(NullOrdering::SortNullsLast) => " NULLS LAST",
        _ => "",
    };
    Ok(format!("{}{direction}{nulls}", expr(child, scope)?))
}

/// Operators pyspark's `Column` sends as functions, with their SQL infix form.
const INFIX: &[(&str, &str)] = &[
    ("+", "+"),
    ("-", "-"),
    ("*", "*"),
    ("/", "/"),
    ("%", "%"),
    ("==", "="),
    ("!=", "!="),
    ("<", "<"),
    ("<=", "<="),
    (">", ">"),
    (">=", ">="),
    ("<=>", "<=>"),
    ("and", "AND"),
    ("or", "OR"),
    ("&", "&"),
    ("|", "|"),
    ("^", "^"),
    ("like", "LIKE"),
    ("ilike", "ILIKE"),
    ("rlike", "RLIKE"),
];

pub(super) fn expr(e: &pb::Expression, scope: &Scope) -> Result<String> {
    use pb::expression::ExprType;
    let Some(kind) = &e.expr_type else { return refuse("an empty expression") };
    Ok(match kind {
        ExprType::Literal(l) => literal(l)?,
        ExprType::UnresolvedAttribute(a) => {
            let name = identifier(&a.unparsed_identifier)?;
            if a.is_metadata_column == Some(true) {
                return refuse("a metadata column");
            }
            match a.plan_id.and_then(|id| scope.iter().find(|(i, _)| *i == id)) {
                Some((_, alias)) => format!("{alias}.{name}"),
                None => name,
            }
        }
        ExprType::UnresolvedStar(s) => {
            let target = match s.plan_id.and_then(|id| scope.iter().find(|(i, _)| *i == id)) {
                Some((_, alias)) => format!("{alias}."),
                None => match s.unparsed_target.as_deref() {
                    Some(t) => format!("{}.", identifier(t.strip_suffix(".*").unwrap_or(t))?),
                    None => String::new(),
                },
            };
            format!("{target}*")
        }
        ExprType::ExpressionString(s) => format!("({})", s.expression),
        ExprType::Alias(a) => {
            let [name] = a.name.as_slice() else { return refuse("an alias of several names") };
            if a.metadata.is_some() {
                return refuse("an alias with metadata");
            }
            let inner = a.expr.as_deref().ok_or_else(|| Untranslatable("an alias of nothing".into()))?;
            format!("{} AS {}", expr(inner, scope)?, quote_identifier(name))
        }
        ExprType::Cast(c) => {
            use pb::expression::cast::{CastToType, EvalMode};
            let inner = c.expr.as_deref().ok_or_else(|| Untranslatable("a cast of nothing".into()))?;
            let to = match &c.cast_to_type {
                Some(CastToType::Type(t)) => data_type_sql(t).map_err(Untranslatable)?,
                Some(CastToType::TypeStr(s)) => s.clone(),
                None => return refuse("a cast to no type"),
            };
            let f = if EvalMode::try_from(c.eval_mode) == Ok(EvalMode::Try) { "TRY_CAST" } else { "CAST" };
            format!("{f}({} AS {to})", expr(inner, scope)?)
        }
        ExprType::SortOrder(o) => sort_order(o, scope)?,
        ExprType::UnresolvedFunction(f) => function(f, scope)?,
        ExprType::Window(w) => window(w, scope)?,
        ExprType::UnresolvedExtractValue(x) => {
            let child = x.child.as_deref().ok_or_else(|| Untranslatable("an extraction from nothing".into()))?;
            let key = x.extraction.as_deref().ok_or_else(|| Untranslatable("an extraction of nothing".into()))?;
            let child = expr(child, scope)?;
            match &key.expr_type {
                Some(ExprType::Literal(pb::expression::Literal {
                    literal_type: Some(pb::expression::literal::LiteralType::String(s)),
                })) => format!("{child}.{}", quote_identifier(s)),
                _ => format!("{child}[{}]", expr(key, scope)?),
            }
        }
        ExprType::LambdaFunction(l) => {
            let body = l.function.as_deref().ok_or_else(|| Untranslatable("a lambda without body".into()))?;
            let args: Vec<String> = l.arguments.iter().map(lambda_variable).collect();
            format!("({}) -> {}", args.join(", "), expr(body, scope)?)
        }
        ExprType::UnresolvedNamedLambdaVariable(v) => lambda_variable(v),
    })
}

fn lambda_variable(v: &pb::expression::UnresolvedNamedLambdaVariable) -> String {
    v.name_parts.iter().map(|p| quote_identifier(p)).collect::<Vec<_>>().join(".")
}

fn function(f: &pb::expression::UnresolvedFunction, scope: &Scope) -> Result<String> {
    if f.is_user_defined_function {
        return refuse(format!("the user-defined function `{}`", f.function_name));
    }
    let args = f.arguments.iter().map(|a| expr(a, scope)).collect::<Result<Vec<_>>>()?;
    let name = f.function_name.as_str();
    if let Some((_, op)) = INFIX.iter().find(|(n, _)| *n == name) {
        if let [a, b] = args.as_slice() {
            return Ok(format!("({a} {op} {b})"));
        }
    }
    Ok(match (name, args.as_slice()) {
        ("not", [a]) => format!("(NOT {a})"),
        ("negative", [a]) => format!("(- {a})"),
        ("isNull", [a]) => format!("({a} IS NULL)"),
        ("isNotNull", [a]) => format!("({a} IS NOT NULL)"),
        ("in", [a, rest @ ..]) if !rest.is_empty() => format!("({a} IN ({}))", rest.join(", ")),
        ("when", _) => {
            let mut s = String::from("CASE");
            for pair in args.chunks(2) {
                match pair {
                    [c, v] => s.push_str(&format!(" WHEN {c} THEN {v}")),
                    [otherwise] => s.push_str(&format!(" ELSE {otherwise}")),
                    // `chunks(2)` gives no other shape.
                    _ => {}
                }
            }
            s.push_str(" END");
            s
        }
        _ => {
            if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return refuse(format!("the operator `{name}`"));
            }
            let distinct = if f.is_distinct { "DISTINCT " } else { "" };
            format!("{name}({distinct}{})", args.join(", "))
        }
    })
}

fn window(w: &pb::expression::Window, scope: &Scope) -> Result<String> {
    use pb::expression::window::window_frame::{frame_boundary::Boundary, FrameType};
    let f = w.window_function.as_deref().ok_or_else(|| Untranslatable("a window without function".into()))?;
    let mut spec = Vec::new();
    if !w.partition_spec.is_empty() {
        let keys = w.partition_spec.iter().map(|e| expr(e, scope)).collect::<Result<Vec<_>>>()?;
        spec.push(format!("PARTITION BY {}", keys.join(", ")));
    }
    if !w.order_spec.is_empty() {
        let keys = w.order_spec.iter().map(|o| sort_order(o, scope)).collect::<Result<Vec<_>>>()?;
        spec.push(format!("ORDER BY {}", keys.join(", ")));
    }
    if let Some(frame) = &w.frame_spec {
        let kind = match FrameType::try_from(frame.frame_type) {
            Ok(FrameType::Row) => "ROWS",
            Ok(FrameType::Range) => "RANGE",
            _ => return refuse("a window frame of unknown type"),
        };
        let bound =
            |b: &Option<Box<pb::expression::window::window_frame::FrameBoundary>>, lower: bool| -> Result<String> {
                match b.as_ref().and_then(|b| b.boundary.as_ref()) {
                    Some(Boundary::CurrentRow(true)) => Ok("CURRENT ROW".into()),
                    Some(Boundary::Unbounded(true)) => {
                        Ok(if lower { "UNBOUNDED PRECEDING" } else { "UNBOUNDED FOLLOWING" }.into())
                    }
                    Some(Boundary::Value(v)) => {
                        let n = integer_literal(v)
                            .ok_or_else(|| Untranslatable("a window bound that is not a number".into()))?;
                        Ok(match n {
                            0 => "CURRENT ROW".into(),
                            n if n < 0 => format!("{} PRECEDING", n.unsigned_abs()),
                            n => format!("{n} FOLLOWING"),
                        })
                    }
                    _ => refuse("a window frame without bounds"),
                }
            };
        spec.push(format!("{kind} BETWEEN {} AND {}", bound(&frame.lower, true)?, bound(&frame.upper, false)?));
    }
    Ok(format!("{} OVER ({})", expr(f, scope)?, spec.join(" ")))
}

fn integer_literal(e: &pb::Expression) -> Option<i64> {
    use pb::expression::literal::LiteralType;
    match &e.expr_type {
        Some(pb::expression::ExprType::Literal(l)) => match l.literal_type {
            Some(LiteralType::Integer(n)) => Some(i64::from(n)),
            Some(LiteralType::Long(n)) => Some(n),
            _ => None,
        },
        _ => None,
    }
}

fn literal(l: &pb::expression::Literal) -> Result<String> {
    use pb::expression::literal::LiteralType;
    let Some(v) = &l.literal_type else { return refuse("an empty literal") };
    Ok(match v {
        LiteralType::Null(t) => match t.kind {
            None | Some(pb::data_type::Kind::Null(_)) => "NULL".into(),
            _ => format!("CAST(NULL AS {})", data_type_sql(t).map_err(Untranslatable)?),
        },
        LiteralType::Binary(b) => format!("X'{}'", b.iter().map(|x| format!("{x:02X}")).collect::<String>()),
        LiteralType::Boolean(b) => if *b { "TRUE" } else { "FALSE" }.into(),
        LiteralType::Byte(n) => format!("CAST({n} AS TINYINT)"),
        LiteralType::Short(n) => format!("CAST({n} AS SMALLINT)"),
        LiteralType::Integer(n) => n.to_string(),
        LiteralType::Long(n) => format!("CAST({n} AS BIGINT)"),
        LiteralType::Float(x) => format!("CAST('{x}' AS FLOAT)"),
        LiteralType::Double(x) if x.is_finite() => format!("CAST('{x:e}' AS DOUBLE)"),
        LiteralType::Double(x) => format!(
            "CAST('{}' AS DOUBLE)",
            if x.is_nan() {
                "NaN"
            } else if *x > 0.0 {
                "Infinity"
            } else {
                "-Infinity"
            }
        ),
        LiteralType::Decimal(d) => match (d.precision, d.scale) {
            (Some(p), Some(s)) => format!("CAST('{}' AS DECIMAL({p},{s}))", d.value),
            _ => format!("{}BD", d.value),
        },
        LiteralType::String(s) => string_literal(s),
        LiteralType::Date(days) => format!("DATE'{}'", civil_date(i64::from(*days))),
        // An instant: microseconds since the epoch, written in UTC with its offset, so that
        // the session's time zone does not move it.
        LiteralType::Timestamp(micros) => {
            let (seconds, fraction) = (micros.div_euclid(1_000_000), micros.rem_euclid(1_000_000));
            let (days, second) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
            format!(
                "TIMESTAMP'{} {:02}:{:02}:{:02}.{fraction:06}+00:00'",
                civil_date(days),
                second / 3600,
                second / 60 % 60,
                second % 60
            )
        }
        LiteralType::TimestampNtz(_) => {
            return refuse("a TIMESTAMP_NTZ literal (write it as a string cast to TIMESTAMP)")
        }
    })
}
