//! Spark functions that DataFusion has under another name or as another expression, rewritten
//! on the parse from a template: `lcase(x)` is `lower(x)`, `isnull(x)` is `x IS NULL`,
//! `max_by(x, y)` is the first `x` ordered by `y` descending, … Each template was checked
//! against Spark's own examples by `thund-cli/tests/spark_functions.rs` (a template that gives
//! another answer than Spark's fails that test), so a call either gets Spark's answer or stays
//! a missing function, refused before the run. Rewrites that need more than a template (the
//! date parts as `date_part`, `grouping_id` from the query's GROUP BY, …) follow the table.
//!
//! A template is SQL whose `__a1`, `__a2`, … stand for the call's arguments, parsed once by the
//! front-end (`frontend::parse_expression`); the arguments are substituted as parsed expressions, never as text, so their
//! literals are not read twice.

use std::ops::ControlFlow;
use std::sync::OnceLock;

use sqlparser::ast::{
    BinaryOperator, CastKind, DataType as SqlType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident,
    ObjectName, Value, VisitMut, VisitorMut,
};

/// `(Spark's name, argument count, what it is in DataFusion)`.
const TEMPLATES: &[(&str, usize, &str)] = &[
    // Spark's empty map; DataFusion's `map` needs entries.
    ("map", 0, "map_from_arrays(array(), array())"),
    // Spark's average of numbers is a DOUBLE that does not overflow; `try_` adds nothing to it.
    // Spark's casts written as functions.
    ("date", 1, "CAST(__a1 AS DATE)"),
    ("timestamp", 1, "CAST(__a1 AS TIMESTAMP)"),
    ("double", 1, "CAST(__a1 AS DOUBLE)"),
    ("float", 1, "CAST(__a1 AS FLOAT)"),
    ("int", 1, "CAST(__a1 AS INT)"),
    ("bigint", 1, "CAST(__a1 AS BIGINT)"),
    ("smallint", 1, "CAST(__a1 AS SMALLINT)"),
    ("tinyint", 1, "CAST(__a1 AS TINYINT)"),
    ("boolean", 1, "CAST(__a1 AS BOOLEAN)"),
    ("string", 1, "CAST(__a1 AS STRING)"),
    ("lcase", 1, "lower(__a1)"),
    ("ucase", 1, "upper(__a1)"),
    ("isnull", 1, "(__a1 IS NULL)"),
    ("isnotnull", 1, "(__a1 IS NOT NULL)"),
    ("equal_null", 2, "(__a1 IS NOT DISTINCT FROM __a2)"),
    ("nullifzero", 1, "nullif(__a1, 0)"),
    ("zeroifnull", 1, "coalesce(__a1, 0)"),
    ("like", 2, "(__a1 LIKE __a2)"),
    ("ilike", 2, "(__a1 ILIKE __a2)"),
    ("rlike", 2, "regexp_like(__a1, __a2)"),
    ("regexp", 2, "regexp_like(__a1, __a2)"),
    ("space", 1, "repeat(' ', __a1)"),
    ("sign", 1, "CAST(signum(__a1) AS DOUBLE)"),
    ("signum", 1, "CAST(signum(__a1) AS DOUBLE)"),
    ("e", 0, "exp(CAST(1 AS DOUBLE))"),
    // Rounding up (down) to a number of decimal places (`rounding`; see `rewrite_ceil_floor`).
    ("ceil", 2, "ceil_at(__a1, __a2)"),
    ("ceiling", 2, "ceil_at(__a1, __a2)"),
    ("floor", 2, "floor_at(__a1, __a2)"),
    // Spark's `grouping` is a TINYINT (`grouping_id`: `engine::fill_grouping_id`).
    ("grouping", 1, "CAST(grouping(__a1) AS TINYINT)"),
    // Spark's aggregate spellings.
    ("count_if", 1, "count(CASE WHEN __a1 THEN 1 END)"),
    ("every", 1, "bool_and(__a1)"),
    ("some", 1, "bool_or(__a1)"),
    ("any", 1, "bool_or(__a1)"),
    ("std", 1, "stddev_samp(__a1)"),
    ("variance", 1, "var_samp(__a1)"),
    ("first", 1, "first_value(__a1)"),
    // In the order Spark's hash set gives its elements (`set_order`).
    ("collect_set", 1, "__thund_spark_set_order(collect_set(__a1))"),
    ("last", 1, "last_value(__a1)"),
    // The value at the greatest (least) ordering value; rows whose ordering value is NULL never
    // count, so a group of only those gives NULL, as Spark's.
    ("max_by", 2, "first_value(CASE WHEN __a2 IS NOT NULL THEN __a1 END ORDER BY __a2 DESC NULLS LAST)"),
    ("min_by", 2, "first_value(CASE WHEN __a2 IS NOT NULL THEN __a1 END ORDER BY __a2 ASC NULLS LAST)"),
    // Date and time parts Spark takes from a string too (cast as Spark casts it implicitly).
    ("hour", 1, "CAST(date_part('hour', CAST(__a1 AS TIMESTAMP)) AS INT)"),
    ("minute", 1, "CAST(date_part('minute', CAST(__a1 AS TIMESTAMP)) AS INT)"),
    // 0 = Monday; the session's `dow` is Spark's, 1 = Sunday.
    ("weekday", 1, "CAST((date_part('dow', CAST(__a1 AS DATE)) + 5) % 7 AS INT)"),
    // Spark's date functions take a DATE, to which it casts a string or a timestamp (in ANSI
    // mode a string that is no date fails, without it it is NULL: the cast's rules); a literal
    // count of days or months is an INT (see `rewrite_call`).
    ("date_add", 2, "date_add(CAST(__a1 AS DATE), __a2)"),
    ("dateadd", 2, "date_add(CAST(__a1 AS DATE), __a2)"),
    ("date_sub", 2, "date_sub(CAST(__a1 AS DATE), __a2)"),
    ("add_months", 2, "add_months(CAST(__a1 AS DATE), __a2)"),
    ("last_day", 1, "last_day(CAST(__a1 AS DATE))"),
    ("next_day", 2, "next_day(CAST(__a1 AS DATE), __a2)"),
    ("monthname", 1, "monthname(CAST(__a1 AS DATE))"),
    ("months_between", 2, "months_between(CAST(__a1 AS TIMESTAMP), CAST(__a2 AS TIMESTAMP))"),
    ("months_between", 3, "months_between(CAST(__a1 AS TIMESTAMP), CAST(__a2 AS TIMESTAMP), __a3)"),
    ("dayname", 1, "date_format(CAST(__a1 AS DATE), 'EEE')"),
    // Strings: the first match, NULL where there is none (`regexp_extract` gives '').
    ("regexp_substr", 2, "CASE WHEN regexp_like(__a1, __a2) THEN regexp_extract(__a1, __a2, 0) END"),
    // The distance, or -1 above the threshold (NULL for a NULL threshold).
    (
        "levenshtein",
        3,
        "CASE WHEN levenshtein(__a1, __a2) > __a3 THEN -1 WHEN __a3 IS NOT NULL THEN levenshtein(__a1, __a2) END",
    ),
    // Collections: `get` is a subscript (which counts from 0, as the plan's subscripts are
    // made to), NULL outside the array in either mode (a subscript outside it fails in ANSI
    // mode, so it is not taken there; `size` of NULL is -1 here).
    ("get", 2, "CASE WHEN __a2 < 0 OR __a2 >= size(__a1) THEN NULL ELSE __a1[__a2] END"),
    ("array_size", 1, "CAST(array_length(__a1) AS INT)"),
    ("map_contains_key", 2, "array_has(map_keys(__a1), __a2)"),
    // Spark's `array_prepend(array, element)` takes DataFusion's arguments the other way; a NULL
    // array gives NULL.
    ("array_prepend", 2, "CASE WHEN __a1 IS NULL THEN NULL ELSE array_prepend(__a2, __a1) END"),
    ("sort_array", 1, "array_sort(__a1, 'ASC', 'NULLS FIRST')"),
    // With a comparator it is a higher-order function (`lambdas`), under its own name.
    ("array_sort", 2, "array_sort_by(__a1, __a2)"),
    // Ascending puts NULL first, descending last.
    (
        "sort_array",
        2,
        "CASE WHEN __a2 THEN array_sort(__a1, 'ASC', 'NULLS FIRST') ELSE array_sort(__a1, 'DESC', 'NULLS LAST') END",
    ),
    // The position of the first match at or after a position.
    ("locate", 3, LOCATE_FROM),
    ("position", 3, LOCATE_FROM),
    ("positive", 1, "(+__a1)"),
    // The session's zone is UTC: a TIMESTAMP (an instant) is its local time there.
    ("to_timestamp_ltz", 1, "to_timestamp(__a1)"),
    ("to_timestamp_ltz", 2, "to_timestamp(__a1, __a2)"),
    ("to_timestamp_ntz", 1, "CAST(to_timestamp(__a1) AS TIMESTAMP_NTZ)"),
    ("to_timestamp_ntz", 2, "CAST(to_timestamp(__a1, __a2) AS TIMESTAMP_NTZ)"),
    ("rint", 1, "rint(CAST(__a1 AS DOUBLE))"),
    // datafusion-spark's `make_interval` gives NULL where the fields overflow, which is Spark's
    ("second", 1, "second(CAST(__a1 AS TIMESTAMP))"),
    // The last instant of a window (`time_windows`).
    ("window_time", 1, "get_field(__a1, 'end') - INTERVAL '0.000001' SECOND"),
];

/// `locate(substr, str, pos)`: 0 before position 1 or for a NULL position; an empty string is
/// found at 1 (as Java's `indexOf` finds it at 0).
const LOCATE_FROM: &str = "CAST(CASE WHEN __a3 IS NULL THEN 0 WHEN __a1 IS NULL OR __a2 IS NULL THEN NULL \
     WHEN __a3 < 1 THEN 0 WHEN __a1 = '' THEN 1 WHEN strpos(substring(__a2, __a3), __a1) = 0 THEN 0 \
     ELSE strpos(substring(__a2, __a3), __a1) + __a3 - 1 END AS INT)";

/// The templates, parsed.
fn parsed() -> &'static [(&'static str, usize, Expr)] {
    static PARSED: OnceLock<Vec<(&'static str, usize, Expr)>> = OnceLock::new();
    PARSED.get_or_init(|| {
        TEMPLATES
            .iter()
            // A template that does not parse (a defect the unit test below finds) is left out:
            // its function stays missing, refused before the run.
            .filter_map(|(name, arity, sql)| {
                let ast = knut_thund::frontend::parse_expression(sql).ok()?.ast?;
                Some((*name, *arity, ast.as_ref().clone()))
            })
            .collect()
    })
}

/// `expr` as DataFusion spells it, if it is a call of a function with a template.
pub(crate) fn rewrite_call(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    if f.over.is_some() || f.filter.is_some() || !f.within_group.is_empty() {
        return None;
    }
    let name = f.name.to_string().to_ascii_lowercase();
    let args: Vec<Expr> = match &f.args {
        FunctionArguments::None => Vec::new(),
        FunctionArguments::List(list) if list.duplicate_treatment.is_none() && list.clauses.is_empty() => list
            .args
            .iter()
            .map(|a| match a {
                FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                _ => None,
            })
            .collect::<Option<_>>()?,
        _ => return None,
    };
    let (_, _, template) = parsed().iter().find(|(n, arity, _)| *n == name && *arity == args.len())?;
    let mut args = args;
    if matches!(name.as_str(), "date_add" | "dateadd" | "date_sub" | "add_months") {
        // The planner reads `1` as a BIGINT, which these functions do not take; Spark's is an INT.
        args[1] = int_literal(&args[1]).unwrap_or_else(|| args[1].clone());
    }
    let mut out = template.clone();
    let _ = out.visit(&mut Substitute { args: &args });
    Some(out)
}

/// An integer literal that fits an INT, cast to one (`-2147483648` too, though its digits
/// alone do not fit).
pub(crate) fn int_literal(e: &Expr) -> Option<Expr> {
    let number = |e: &Expr| match e {
        Expr::Value(v) => match &v.value {
            sqlparser::ast::Value::Number(n, false) => Some(n.clone()),
            _ => None,
        },
        _ => None,
    };
    let digits = match e {
        Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Minus, expr } => format!("-{}", number(expr)?),
        e => number(e)?,
    };
    digits.parse::<i32>().ok()?;
    Some(Expr::Cast {
        kind: sqlparser::ast::CastKind::Cast,
        expr: Box::new(e.clone()),
        data_type: sqlparser::ast::DataType::Int(None),
        array: false,
        format: None,
    })
}

/// Functions whose fields Spark takes as INTs: their integer literals typed so (the planner
/// reads `2024` as a BIGINT, which they refuse, as Spark refuses a BIGINT column in ANSI mode).
const INT_FIELDS: [&str; 8] = [
    "factorial",
    "array_insert",
    "make_timestamp",
    "make_timestamp_ltz",
    "make_timestamp_ntz",
    "try_make_timestamp",
    "try_make_timestamp_ltz",
    "try_make_timestamp_ntz",
];

/// A call of an `INT_FIELDS` function with its integer literals cast to INT.
pub(crate) fn rewrite_int_fields(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    if !INT_FIELDS.contains(&name.as_str()) {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let mut list = list.clone();
    let mut changed = false;
    for arg in list.args.iter_mut().take(5) {
        if let FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) = arg {
            if let Some(int) = int_literal(e) {
                *e = int;
                changed = true;
            }
        }
    }
    let mut call = f.clone();
    call.args = FunctionArguments::List(list);
    changed.then_some(Expr::Function(call))
}

/// Spark's operators DataFusion's SQL lacks, as the functions computing them (`datafusion-spark`'s
/// and `arithmetic`'s): `!x` is `NOT x`, `~x` `bitwise_not(x)`, `a << b` `shiftleft(a, b)`,
/// `a >> b` `shiftright`, `a >>> b` `shiftrightunsigned`, and `a DIV b` `div(a, b)` (integer
/// division, a BIGINT).
pub(crate) fn rewrite_operator(expr: &Expr) -> Option<Expr> {
    use sqlparser::ast::{BinaryOperator, UnaryOperator};
    match expr {
        Expr::UnaryOp { op: UnaryOperator::BangNot, expr } => {
            Some(Expr::UnaryOp { op: UnaryOperator::Not, expr: expr.clone() })
        }
        Expr::UnaryOp { op: UnaryOperator::BitwiseNot, expr } => Some(function("bitwise_not", vec![*expr.clone()])),
        Expr::BinaryOp { left, op, right } => {
            let name = match op {
                BinaryOperator::PGBitwiseShiftLeft => "shiftleft",
                BinaryOperator::PGBitwiseShiftRight => "shiftright",
                BinaryOperator::Custom(s) if s == ">>>" => "shiftrightunsigned",
                BinaryOperator::MyIntegerDivide => "div",
                _ => return None,
            };
            Some(function(name, vec![*left.clone(), *right.clone()]))
        }
        _ => None,
    }
}

/// `-1L` where `1L` was already made `CAST(1 AS BIGINT)`: the negative number cast, so the
/// least BIGINT, `-9223372036854775808L`, whose digits alone do not fit, is read as one.
pub(crate) fn rewrite_negative_bigint(expr: &Expr) -> Option<Expr> {
    let Expr::UnaryOp { op: sqlparser::ast::UnaryOperator::Minus, expr } = expr else { return None };
    let Expr::Cast { expr: inner, data_type: sqlparser::ast::DataType::BigInt(None), .. } = expr.as_ref() else {
        return None;
    };
    let Expr::Value(v) = inner.as_ref() else { return None };
    let sqlparser::ast::Value::Number(n, false) = &v.value else { return None };
    let mut cast = expr.as_ref().clone();
    if let Expr::Cast { expr, .. } = &mut cast {
        **expr = Expr::value(sqlparser::ast::Value::Number(format!("-{n}"), false));
    }
    Some(cast)
}

/// `x LIKE 'p' ESCAPE 'e'` (`ILIKE`) with a literal pattern: the pattern with `e` escapes
/// written as backslash ones, the only escape DataFusion's LIKE takes (a backslash that `e`
/// does not escape is written escaped). An escape before anything but `%`, `_` or itself is
/// Spark's error; it is left to fail.
pub(crate) fn rewrite_like_escape(expr: &Expr) -> Option<Expr> {
    use sqlparser::ast::Value;
    let (Expr::Like { escape_char: Some(e), pattern, .. } | Expr::ILike { escape_char: Some(e), pattern, .. }) = expr
    else {
        return None;
    };
    let (Value::SingleQuotedString(e) | Value::DoubleQuotedString(e)) = &e.value else { return None };
    let mut e = e.chars();
    let (Some(escape), None) = (e.next(), e.next()) else { return None };
    let Expr::Value(p) = pattern.as_ref() else { return None };
    let (Value::SingleQuotedString(p) | Value::DoubleQuotedString(p)) = &p.value else { return None };
    // A character matched as itself, escaped where DataFusion's LIKE would read it otherwise.
    let literal = |out: &mut String, c: char| {
        if matches!(c, '%' | '_' | '\\') {
            out.push('\\');
        }
        out.push(c);
    };
    let mut out = String::new();
    let mut chars = p.chars();
    while let Some(c) = chars.next() {
        if c != escape {
            if c == '\\' {
                literal(&mut out, c);
            } else {
                out.push(c);
            }
            continue;
        }
        match chars.next() {
            Some(n) if matches!(n, '%' | '_') || n == escape => literal(&mut out, n),
            _ => return None,
        }
    }
    let mut rewritten = expr.clone();
    if let Expr::Like { escape_char, pattern, .. } | Expr::ILike { escape_char, pattern, .. } = &mut rewritten {
        *escape_char = None;
        **pattern = Expr::value(Value::SingleQuotedString(out));
    }
    Some(rewritten)
}

/// `first(x, true)` (`last`, `first_value`, `last_value`, `any_value`): the function skipping
/// NULLs (`IGNORE NULLS`); with `false`, the function of one argument. Only a literal says
/// which; any other second argument is left to fail.
pub(crate) fn rewrite_ignore_nulls(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    let target = match name.as_str() {
        "first" | "first_value" | "any_value" => "first_value",
        "last" | "last_value" => "last_value",
        _ => return None,
    };
    let FunctionArguments::List(list) = &f.args else { return None };
    let [value, FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(flag)))] = list.args.as_slice() else {
        return None;
    };
    let ignore = match flag.value {
        sqlparser::ast::Value::Boolean(b) => b,
        _ => return None,
    };
    let mut call = f.clone();
    let mut list = list.clone();
    list.args = vec![value.clone()];
    call.args = FunctionArguments::List(list);
    // `any_value(x)` keeps the group's first value, NULL or not (see `engine::rewrite_any_value`).
    call.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(target)]);
    if ignore {
        call.null_treatment = Some(sqlparser::ast::NullTreatment::IgnoreNulls);
    }
    Some(Expr::Function(call))
}

/// `rank(x) OVER (…)` (`dense_rank`, `percent_rank`): Spark ranks by the window's ORDER BY and
/// ignores the arguments, which DataFusion's functions do not take.
pub(crate) fn rewrite_rank_arguments(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    let FunctionArguments::List(list) = &f.args else { return None };
    if f.over.is_none() || list.args.is_empty() || !matches!(name.as_str(), "rank" | "dense_rank" | "percent_rank") {
        return None;
    }
    let mut call = f.clone();
    let mut list = list.clone();
    list.args.clear();
    call.args = FunctionArguments::List(list);
    Some(Expr::Function(call))
}

/// `ceil(x, d)` and `floor(x, d)` where the parser reads them as CEIL and FLOOR with a scale
/// (else they are calls, rewritten by their templates), as the functions `rounding` has for
/// them: `ceil_at(x, d)`, `floor_at(x, d)`.
pub(crate) fn rewrite_ceil_floor(expr: &Expr) -> Option<Expr> {
    let (name, value, scale) = match expr {
        Expr::Ceil { expr, field: sqlparser::ast::CeilFloorKind::Scale(scale) } => ("ceil_at", expr, scale),
        Expr::Floor { expr, field: sqlparser::ast::CeilFloorKind::Scale(scale) } => ("floor_at", expr, scale),
        _ => return None,
    };
    Some(function(name, vec![value.as_ref().clone(), Expr::Value(scale.clone())]))
}

/// `assert_true(x)` → `assert_true(x, '\'<x>\' is not true!')`: Spark's message names the
/// expression as its SQL (`'(1 < 0)' is not true!`), which the function itself cannot see.
pub(crate) fn rewrite_assert_true(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("assert_true") || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let [x] = unnamed_args(list)?[..] else { return None };
    let text = crate::analysis::names::sql(x).unwrap_or_else(|| x.to_string());
    let message = Expr::value(sqlparser::ast::Value::SingleQuotedString(format!("'{text}' is not true!")));
    let mut call = f.clone();
    let mut args = list.clone();
    args.args.push(FunctionArg::Unnamed(FunctionArgExpr::Expr(message)));
    call.args = FunctionArguments::List(args);
    Some(Expr::Function(call))
}

/// A call's arguments when each is a plain expression (none named, none `*`).
fn unnamed_args(list: &sqlparser::ast::FunctionArgumentList) -> Option<Vec<&Expr>> {
    list.args
        .iter()
        .map(|a| match a {
            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
            _ => None,
        })
        .collect()
}

/// `decode(x, s1, r1, s2, r2, …[, default])`: the first `r` whose `s` is `x` (NULL matching
/// NULL), as a CASE. (`decode(binary, charset)` is another function, left alone.)
pub(crate) fn rewrite_decode(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let FunctionArguments::List(list) = &f.args else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("decode") || list.args.len() < 3 || f.over.is_some() {
        return None;
    }
    let args = unnamed_args(list)?;
    let (subject, rest) = args.split_first()?;
    let conditions = rest
        .chunks_exact(2)
        .map(|pair| sqlparser::ast::CaseWhen {
            condition: Expr::IsNotDistinctFrom(Box::new((*subject).clone()), Box::new(pair[0].clone())),
            result: pair[1].clone(),
        })
        .collect();
    Some(Expr::Case {
        case_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        end_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
        operand: None,
        conditions,
        else_result: (rest.len() % 2 == 1).then(|| Box::new(rest[rest.len() - 1].clone())),
    })
}

/// Puts the call's arguments where the template names them.
struct Substitute<'a> {
    args: &'a [Expr],
}

impl VisitorMut for Substitute<'_> {
    type Break = ();

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        if let Expr::Identifier(id) = expr {
            if let Some(i) = id.value.strip_prefix("__a").and_then(|n| n.parse::<usize>().ok()) {
                if let Some(arg) = self.args.get(i - 1) {
                    *expr = arg.clone();
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// Spark date-part functions DataFusion lacks, as `(name, date_part field, offset)`. (The
/// session's `date_part` is Spark's: its `dow` counts 1 = Sunday, as `dayofweek` does.)
const DATE_PART_FUNCTIONS: [(&str, &str, i32); 9] = [
    ("year", "year", 0),
    ("month", "month", 0),
    ("day", "day", 0),
    ("dayofmonth", "day", 0),
    ("quarter", "quarter", 0),
    ("dayofyear", "doy", 0),
    ("weekofyear", "week", 0),
    ("dayofweek", "dow", 0),
    ("yearofweek", "isoyear", 0),
];

/// `year(x)` → `CAST(date_part('year', x) AS INT)` (and the other date parts above), built from
/// the call's own node.
pub(crate) fn rewrite_date_part(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    let (_, field, offset) = DATE_PART_FUNCTIONS.iter().find(|(n, _, _)| *n == name)?;
    let FunctionArguments::List(list) = &f.args else { return None };
    let [arg @ FunctionArg::Unnamed(FunctionArgExpr::Expr(_))] = list.args.as_slice() else { return None };
    let mut call = f.clone();
    call.name = ObjectName::from(vec![Ident::new("date_part")]);
    let mut args = list.clone();
    // Spark takes a string too, cast to a date as Spark casts it implicitly (a timestamp's
    // date is its date in the session's time zone, UTC).
    let FunctionArg::Unnamed(FunctionArgExpr::Expr(inner)) = arg else { return None };
    let as_date = Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(inner.clone()),
        data_type: SqlType::Date,
        array: false,
        format: None,
    };
    args.args = vec![
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(Value::SingleQuotedString(field.to_string())))),
        FunctionArg::Unnamed(FunctionArgExpr::Expr(as_date)),
    ];
    call.args = FunctionArguments::List(args);
    let mut part = Expr::Function(call);
    if *offset != 0 {
        part = Expr::BinaryOp {
            left: Box::new(part),
            op: BinaryOperator::Plus,
            right: Box::new(Expr::value(Value::Number(offset.to_string(), false))),
        };
    }
    Some(Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(part),
        data_type: SqlType::Int(None),
        array: false,
        format: None,
    })
}

/// `grouping_id()` and `grouping_id(a, b, …)` → `CAST(grouping(a, b, …) AS BIGINT)`: the same
/// bits (the first column's the most significant) as Spark's BIGINT. Spark's form without
/// arguments stands for every grouping column, in the order the GROUP BY first names them, and
/// Spark takes arguments only when they are exactly those columns: other arguments are left
/// to be refused as a function this engine lacks (Spark fails on them too).
pub(crate) fn fill_grouping_id(query: &mut sqlparser::ast::Query) {
    let sqlparser::ast::SetExpr::Select(select) = query.body.as_mut() else { return };
    let sqlparser::ast::GroupByExpr::Expressions(exprs, _) = &select.group_by else { return };
    let mut columns: Vec<Expr> = Vec::new();
    for e in exprs {
        let sets: Vec<&Expr> = match e {
            Expr::Cube(sets) | Expr::Rollup(sets) | Expr::GroupingSets(sets) => sets.iter().flatten().collect(),
            e => vec![e],
        };
        for e in sets {
            if !columns.contains(e) {
                columns.push(e.clone());
            }
        }
    }
    if columns.is_empty() {
        return;
    }
    let fill = |e: &mut Expr| {
        if let Expr::Function(f) = e {
            let empty = match &f.args {
                FunctionArguments::None => true,
                FunctionArguments::List(l) => l.args.is_empty(),
                FunctionArguments::Subquery(_) => false,
            };
            let matching = match &f.args {
                FunctionArguments::List(l) => {
                    l.args.len() == columns.len()
                        && l.args.iter().zip(&columns).all(|(a, c)| {
                            matches!(a, sqlparser::ast::FunctionArg::Unnamed(sqlparser::ast::FunctionArgExpr::Expr(x)) if x == c)
                        })
                }
                _ => false,
            };
            if (empty || matching) && f.name.to_string().eq_ignore_ascii_case("grouping_id") {
                *e = Expr::Cast {
                    kind: CastKind::Cast,
                    expr: Box::new(crate::analysis::calls::function("grouping", columns.clone())),
                    data_type: SqlType::BigInt(None),
                    array: false,
                    format: None,
                };
            }
        }
        ControlFlow::<()>::Continue(())
    };
    let _ = sqlparser::ast::visit_expressions_mut(&mut select.projection, fill);
    let _ = sqlparser::ast::visit_expressions_mut(&mut select.having, fill);
    let _ = sqlparser::ast::visit_expressions_mut(&mut query.order_by, fill);
}

/// The call `name(args…)`, as the parser would read it.
pub(crate) fn function(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(sqlparser::ast::Function {
        name: sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
            duplicate_treatment: None,
            args: args.into_iter().map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a))).collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

/// `mode() WITHIN GROUP (ORDER BY x [ASC | DESC])` → `mode(x, true, ascending)`: the most
/// frequent value, the least (greatest) of tied ones (`modes`).
pub(crate) fn rewrite_mode(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("mode") || f.over.is_some() || f.within_group.len() != 1 {
        return None;
    }
    match &f.args {
        FunctionArguments::None => {}
        FunctionArguments::List(list) if list.args.is_empty() && list.clauses.is_empty() => {}
        _ => return None,
    }
    let order = &f.within_group[0];
    let ascending = order.options.asc.unwrap_or(true);
    let flag = |b: bool| Expr::value(sqlparser::ast::Value::Boolean(b));
    let mut call = f.clone();
    call.within_group = Vec::new();
    call.args = FunctionArguments::List(sqlparser::ast::FunctionArgumentList {
        duplicate_treatment: None,
        args: [order.expr.clone(), flag(true), flag(ascending)]
            .into_iter()
            .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
            .collect(),
        clauses: Vec::new(),
    });
    Some(Expr::Function(call))
}

/// `listagg(x[, delimiter]) [WITHIN GROUP (ORDER BY …)]` (and its other name `string_agg`) →
/// `string_agg(x, delimiter ORDER BY …)`: Spark's default delimiter is none (`''`) and its
/// order is given in `WITHIN GROUP`, DataFusion's in the argument list. DISTINCT is kept.
pub(crate) fn rewrite_listagg(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    if !matches!(name.as_str(), "listagg" | "string_agg") || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    if !list.clauses.is_empty() || !(1..=2).contains(&list.args.len()) {
        return None;
    }
    let mut call = f.clone();
    let mut args = list.clone();
    let empty = || {
        FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::value(sqlparser::ast::Value::SingleQuotedString(
            String::new(),
        ))))
    };
    match args.args.get(1) {
        None => args.args.push(empty()),
        // A NULL delimiter is none, as in Spark.
        Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(Expr::Value(v)))) if v.value == sqlparser::ast::Value::Null => {
            args.args[1] = empty();
        }
        Some(_) => {}
    }
    if !f.within_group.is_empty() {
        args.clauses.push(sqlparser::ast::FunctionArgumentClause::OrderBy(f.within_group.clone()));
        call.within_group = Vec::new();
    } else if args.duplicate_treatment == Some(sqlparser::ast::DuplicateTreatment::Distinct) {
        // Distinct values come in no order on either engine: in theirs, for one answer always.
        let FunctionArg::Unnamed(FunctionArgExpr::Expr(value)) = &args.args[0] else { return None };
        args.clauses.push(sqlparser::ast::FunctionArgumentClause::OrderBy(vec![sqlparser::ast::OrderByExpr {
            expr: value.clone(),
            options: sqlparser::ast::OrderByOptions { asc: None, nulls_first: None },
            with_fill: None,
        }]));
    }
    call.name = sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::new("string_agg")]);
    call.args = FunctionArguments::List(args);
    Some(Expr::Function(call))
}

/// `json_tuple(json, 'a', 'b', …)` → `inline(array(named_struct('c0', get_json_object(json,
/// '$.a'), 'c1', …)))`: one row of the fields' values as text, in columns named `c0`, `c1`, … as
/// Spark names them (a LATERAL VIEW's `AS` names them otherwise), NULLs for a NULL or malformed
/// document. Only field names that are plain words are taken (another name stays refused).
/// The functions whose last argument may be a map of options.
const WITH_OPTIONS: [&str; 6] = ["from_json", "to_json", "schema_of_json", "from_csv", "to_csv", "schema_of_csv"];

/// `from_json(text, schema, map('k', 'v', …))` → `from_json(text, schema, 'k', 'v', …)`: a map
/// of literal options is passed as literals, so that the function reads (and refuses) its
/// options when it is planned.
pub(crate) fn rewrite_options(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    let name = f.name.to_string().to_ascii_lowercase();
    if !WITH_OPTIONS.contains(&name.as_str()) || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let args = unnamed_args(list)?;
    let (Expr::Function(options), before) = args.split_last()? else { return None };
    if !options.name.to_string().eq_ignore_ascii_case("map") {
        return None;
    }
    let FunctionArguments::List(entries) = &options.args else { return None };
    let entries = unnamed_args(entries)?;
    let literal = |e: &Expr| matches!(e, Expr::Value(v) if matches!(v.value, Value::SingleQuotedString(_)));
    if !entries.iter().all(|e| literal(e)) {
        return None;
    }
    let mut flat: Vec<Expr> = before.iter().map(|e| (*e).clone()).collect();
    flat.extend(entries.into_iter().cloned());
    Some(function(&name, flat))
}

pub(crate) fn rewrite_json_tuple(expr: &Expr) -> Option<Expr> {
    let Expr::Function(f) = expr else { return None };
    if !f.name.to_string().eq_ignore_ascii_case("json_tuple") || f.over.is_some() {
        return None;
    }
    let FunctionArguments::List(list) = &f.args else { return None };
    let args = unnamed_args(list)?;
    let (json, fields) = args.split_first()?;
    if fields.is_empty() || !list.clauses.is_empty() {
        return None;
    }
    let mut named = Vec::with_capacity(2 * fields.len());
    for (i, field) in fields.iter().enumerate() {
        let Expr::Value(v) = field else { return None };
        let sqlparser::ast::Value::SingleQuotedString(name) = &v.value else { return None };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return None;
        }
        let text = |s: String| Expr::value(sqlparser::ast::Value::SingleQuotedString(s));
        named.push(text(format!("c{i}")));
        named.push(function("get_json_object", vec![(*json).clone(), text(format!("$.{name}"))]));
    }
    Some(function("inline", vec![function("array", vec![function("named_struct", named)])]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str) -> String {
        let e = knut_thund::frontend::parse_expression(sql).unwrap().ast.unwrap();
        rewrite_call(&e).map_or_else(|| "unchanged".into(), |e| e.to_string())
    }

    #[test]
    fn every_template_parses_and_arguments_are_substituted_as_parsed() {
        for (name, _, sql) in TEMPLATES {
            assert!(knut_thund::frontend::parse_expression(sql).is_ok_and(|e| e.ast.is_some()), "{name}: {sql}");
        }
        assert_eq!(rewritten("lcase('A''b')"), "lower('A''b')");
        assert_eq!(
            rewritten("max_by(x, y + 1)"),
            "first_value(CASE WHEN y + 1 IS NOT NULL THEN x END ORDER BY y + 1 DESC NULLS LAST)"
        );
        // Another argument count, a named argument, or a window is left alone.
        assert_eq!(rewritten("lcase(a, b)"), "unchanged");
        assert_eq!(rewritten("first(x) OVER (ORDER BY y)"), "unchanged");
    }
}
