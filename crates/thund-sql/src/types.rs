//! Spark SQL types as Arrow types, and the Arrow types Delta can store.
//!
//! Spark's `TIMESTAMP` is an instant shown in the session time zone; Þund's session zone is UTC,
//! so it maps to `Timestamp(µs, "UTC")` — exactly Delta's `timestamp`. `TIMESTAMP_NTZ` maps to
//! `Timestamp(µs, None)`.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Fields, Schema, TimeUnit};

/// Delta's (and Spark's) timestamp type.
pub fn spark_timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
}

/// Parses a Spark SQL type name (`DECIMAL(10,2)`, `BIGINT`, `ARRAY<STRING>`, …).
pub fn parse_type(text: &str) -> Result<DataType, String> {
    let t = text.trim();
    let upper = t.to_ascii_uppercase();
    let (base, args) = match upper.find(['(', '<']) {
        Some(i) => (upper[..i].trim(), Some(t[i..].trim())),
        None => (upper.as_str(), None),
    };
    let simple = match base {
        "BOOLEAN" | "BOOL" => Some(DataType::Boolean),
        "TINYINT" | "BYTE" => Some(DataType::Int8),
        "SMALLINT" | "SHORT" => Some(DataType::Int16),
        "INT" | "INTEGER" => Some(DataType::Int32),
        "BIGINT" | "LONG" => Some(DataType::Int64),
        "FLOAT" | "REAL" => Some(DataType::Float32),
        "DOUBLE" => Some(DataType::Float64),
        "STRING" | "VARCHAR" | "CHAR" => Some(DataType::Utf8),
        "BINARY" => Some(DataType::Binary),
        "DATE" => Some(DataType::Date32),
        "TIMESTAMP" | "TIMESTAMP_LTZ" => Some(spark_timestamp()),
        "TIMESTAMP_NTZ" => Some(DataType::Timestamp(TimeUnit::Microsecond, None)),
        _ => None,
    };
    if let Some(dt) = simple {
        return Ok(dt);
    }
    let inner = |a: Option<&str>, open: char, close: char| -> Result<String, String> {
        let a = a.ok_or_else(|| format!("`{t}` needs type arguments"))?;
        a.strip_prefix(open)
            .and_then(|s| s.strip_suffix(close))
            .map(str::to_string)
            .ok_or_else(|| format!("cannot read type `{t}`"))
    };
    match base {
        "DECIMAL" | "DEC" | "NUMERIC" => {
            let (p, s) = match args {
                None => (10, 0),
                Some(_) => {
                    let a = inner(args, '(', ')')?;
                    let mut it = a.split(',').map(|x| x.trim().parse::<u8>());
                    let p = it.next().and_then(Result::ok).ok_or_else(|| format!("bad precision in `{t}`"))?;
                    let s = match it.next() {
                        Some(Ok(s)) => s as i8,
                        Some(Err(_)) => return Err(format!("bad scale in `{t}`")),
                        None => 0,
                    };
                    (p, s)
                }
            };
            if p == 0 || p > 38 || s as u8 > p {
                return Err(format!("`{t}`: precision must be 1..=38 and scale at most the precision"));
            }
            Ok(DataType::Decimal128(p, s))
        }
        "ARRAY" => Ok(DataType::List(Arc::new(Field::new("element", parse_type(&inner(args, '<', '>')?)?, true)))),
        "MAP" => {
            let a = inner(args, '<', '>')?;
            let parts = split_top_level(&a);
            let [k, v] = parts.as_slice() else {
                return Err(format!("`{t}` needs MAP<key, value>"));
            };
            let entries = Field::new(
                "key_value",
                DataType::Struct(Fields::from(vec![
                    Field::new("key", parse_type(k)?, false),
                    Field::new("value", parse_type(v)?, true),
                ])),
                false,
            );
            Ok(DataType::Map(Arc::new(entries), false))
        }
        "STRUCT" => {
            let a = inner(args, '<', '>')?;
            let mut fields = Vec::new();
            for f in split_top_level(&a) {
                let (name, ty) = f.split_once([':', ' ']).ok_or_else(|| format!("bad field `{f}` in `{t}`"))?;
                fields.push(Field::new(name.trim().trim_matches('`'), parse_type(ty.trim_start_matches(':'))?, true));
            }
            Ok(DataType::Struct(Fields::from(fields)))
        }
        _ => Err(format!("unknown type `{t}`")),
    }
}

fn split_top_level(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth = 0;
    let mut cur = String::new();
    for c in s.chars() {
        match c {
            '<' | '(' => depth += 1,
            '>' | ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(cur.trim().to_string());
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// Parses a DDL schema string (`a INT, b STRING NOT NULL`).
pub fn parse_ddl_schema(ddl: &str) -> Result<Schema, String> {
    let mut fields = Vec::new();
    for col in split_top_level(ddl) {
        let col = col.trim();
        let (name, rest) = col.split_once(char::is_whitespace).ok_or_else(|| format!("column `{col}` has no type"))?;
        let rest = rest.trim();
        let upper = rest.to_ascii_uppercase();
        let (ty, nullable) = match upper.find(" NOT NULL") {
            Some(i) => (&rest[..i], false),
            None => (rest, true),
        };
        let ty = ty.split(" COMMENT ").next().unwrap_or(ty);
        fields.push(Field::new(name.trim_matches('`'), parse_type(ty)?, nullable));
    }
    Ok(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_spark_types() {
        assert_eq!(parse_type("decimal(10, 2)").unwrap(), DataType::Decimal128(10, 2));
        assert_eq!(parse_type("BIGINT").unwrap(), DataType::Int64);
        assert_eq!(parse_type("timestamp").unwrap(), spark_timestamp());
        assert!(matches!(parse_type("ARRAY<STRING>").unwrap(), DataType::List(_)));
        assert!(matches!(parse_type("STRUCT<a: INT, b: STRING>").unwrap(), DataType::Struct(f) if f.len() == 2));
        assert!(parse_type("WIBBLE").unwrap_err().contains("unknown type"));
    }

    #[test]
    fn parses_ddl_schemas() {
        let s = parse_ddl_schema("at STRING, reading_id BIGINT NOT NULL, amount DECIMAL(10,2) COMMENT 'x'").unwrap();
        assert_eq!(s.fields().len(), 3);
        assert!(!s.field(1).is_nullable());
        assert_eq!(s.field(2).data_type(), &DataType::Decimal128(10, 2));
    }
}

/// The Spark SQL name of an Arrow type as the native backend stores it (`BIGINT`,
/// `DECIMAL(10,2)`, `ARRAY<STRING>`, `STRUCT<a: INT>`): how schemas are shown to users, who wrote
/// Spark SQL. Types with no Spark counterpart keep Arrow's name.
pub fn spark_type_name(dt: &DataType) -> String {
    match dt {
        t if crate::functions::variant::is_variant(t) => "VARIANT".into(),
        DataType::Null => "VOID".into(),
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 => "TINYINT".into(),
        DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INT".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::Float32 => "FLOAT".into(),
        DataType::Float64 => "DOUBLE".into(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "STRING".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView | DataType::FixedSizeBinary(_) => {
            "BINARY".into()
        }
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP_NTZ".into(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("DECIMAL({p},{s})"),
        DataType::List(f) | DataType::LargeList(f) | DataType::ListView(f) | DataType::FixedSizeList(f, _) => {
            format!("ARRAY<{}>", spark_type_name(f.data_type()))
        }
        DataType::Struct(fields) => format!(
            "STRUCT<{}>",
            fields
                .iter()
                .map(|f| format!("{}: {}", f.name(), spark_type_name(f.data_type())))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                format!("MAP<{}, {}>", spark_type_name(kv[0].data_type()), spark_type_name(kv[1].data_type()))
            }
            other => other.to_string(),
        },
        DataType::Dictionary(_, value) => spark_type_name(value),
        other => other.to_string(),
    }
}

/// An Arrow type as Spark's `DataType.simpleString` writes it (`int`, `decimal(10,2)`,
/// `array<struct<q:int>>`, `map<string,int>`): what `typeof` answers.
pub fn spark_simple_string(dt: &DataType) -> String {
    match dt {
        t if crate::functions::variant::is_variant(t) => "variant".into(),
        DataType::List(f) | DataType::LargeList(f) | DataType::ListView(f) | DataType::FixedSizeList(f, _) => {
            format!("array<{}>", spark_simple_string(f.data_type()))
        }
        DataType::Struct(fields) => format!(
            "struct<{}>",
            fields
                .iter()
                .map(|f| format!("{}:{}", f.name(), spark_simple_string(f.data_type())))
                .collect::<Vec<_>>()
                .join(",")
        ),
        DataType::Map(entries, _) => match entries.data_type() {
            DataType::Struct(kv) if kv.len() == 2 => {
                format!("map<{},{}>", spark_simple_string(kv[0].data_type()), spark_simple_string(kv[1].data_type()))
            }
            other => other.to_string(),
        },
        DataType::Dictionary(_, value) => spark_simple_string(value),
        // A timestamp without a zone is Spark's TIMESTAMP_NTZ (as `spark_type_name` has it).
        DataType::Timestamp(_, None) => "timestamp_ntz".into(),
        DataType::Timestamp(..) => "timestamp".into(),
        other => spark_type_name(other).to_ascii_lowercase(),
    }
}

#[cfg(test)]
mod name_tests {
    use super::*;

    #[test]
    fn spark_names_round_trip_through_parse_type() {
        for name in ["BIGINT", "STRING", "DECIMAL(10,2)", "DATE", "TIMESTAMP", "ARRAY<STRING>", "DOUBLE", "BOOLEAN"] {
            assert_eq!(spark_type_name(&parse_type(name).unwrap()), name);
        }
        assert_eq!(spark_type_name(&DataType::Utf8View), "STRING");
    }
}

/// Spark's datetime type names in a parsed query, as DataFusion's planner is to read them:
/// `TIMESTAMP` (an instant, shown in the session zone) as `TIMESTAMP(6) WITH TIME ZONE` (the
/// session zone is UTC), and `TIMESTAMP_NTZ` as `TIMESTAMP(6)`. (DataFusion reads `TIMESTAMP`
/// as a nanosecond timestamp without a zone, and has no `TIMESTAMP_NTZ`.) Casts and typed
/// literals (`TIMESTAMP '2024-01-01 10:00:00'`) are where a query names them.
pub(crate) fn datetime_types_rule(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    refuse_time_type(query)?;
    spark_datetime_types(query);
    Ok(())
}

/// Spark's refusal of the TIME type: Spark 4.1, 4.2 and 4.3 (measured) have the type's functions
/// but fail a query that computes or returns a TIME (`spark.sql.timeType.enabled` is off), where
/// DataFusion answers —
/// `TIME '09:00'`, `CAST(x AS TIME)`, `to_time(…)`, `hour(TIME '09:00')`. Spark does take a TIME
/// literal written straight into `make_timestamp` (and its forms), which this engine answers as
/// Spark does; every other TIME literal is refused (Spark's answers for one in an inline table
/// depend on how its column is used).
fn refuse_time_type(query: &sqlparser::ast::Query) -> Result<(), String> {
    use sqlparser::ast::{DataType as SqlType, Expr, FunctionArg, FunctionArgExpr, FunctionArguments};
    const TIME_FUNCTIONS: [&str; 7] =
        ["current_time", "make_time", "time_trunc", "to_time", "try_to_time", "time_diff", "time"];
    const TAKING_TIME: [&str; 6] = [
        "make_timestamp",
        "make_timestamp_ltz",
        "make_timestamp_ntz",
        "try_make_timestamp",
        "try_make_timestamp_ltz",
        "try_make_timestamp_ntz",
    ];
    // The TIME literals written as an argument of `make_timestamp`: a call is visited before its
    // arguments, and nothing moves while the tree is read.
    let mut allowed: std::collections::HashSet<*const Expr> = std::collections::HashSet::new();
    let found = sqlparser::ast::visit_expressions(query, |e| match e {
        Expr::Cast { data_type: SqlType::Time(..), .. } => std::ops::ControlFlow::Break(()),
        Expr::TypedString(t) if matches!(t.data_type, SqlType::Time(..)) && !allowed.contains(&(e as *const Expr)) => {
            std::ops::ControlFlow::Break(())
        }
        Expr::Function(f) if f.name.0.len() == 1 => {
            let name = crate::syntax::name_of(f);
            if TIME_FUNCTIONS.contains(&name.as_str()) {
                return std::ops::ControlFlow::Break(());
            }
            if let (true, FunctionArguments::List(list)) = (TAKING_TIME.contains(&name.as_str()), &f.args) {
                for a in &list.args {
                    if let FunctionArg::Unnamed(FunctionArgExpr::Expr(arg)) = a {
                        allowed.insert(arg as *const Expr);
                    }
                }
            }
            std::ops::ControlFlow::Continue(())
        }
        _ => std::ops::ControlFlow::Continue(()),
    });
    match found {
        std::ops::ControlFlow::Break(()) => Err(TIME_UNSUPPORTED.into()),
        std::ops::ControlFlow::Continue(()) => Ok(()),
    }
}

/// Spark's error for any TIME value (4.1 to 4.3).
pub(crate) const TIME_UNSUPPORTED: &str = "[UNSUPPORTED_TIME_TYPE] The data type TIME is not supported";

/// [`datetime_types_rule`]'s rewrite.
pub(crate) fn spark_datetime_types(ast: &mut sqlparser::ast::Query) {
    use sqlparser::ast::{DataType as SqlType, Expr, TimezoneInfo};
    let _ = sqlparser::ast::visit_expressions_mut(ast, |e| {
        let data_type = match e {
            Expr::Cast { data_type, .. } => data_type,
            Expr::TypedString(t) => &mut t.data_type,
            _ => return std::ops::ControlFlow::<()>::Continue(()),
        };
        match data_type {
            SqlType::Timestamp(None, TimezoneInfo::None) => {
                *data_type = SqlType::Timestamp(Some(6), TimezoneInfo::WithTimeZone);
            }
            SqlType::TimestampNtz(None) => *data_type = SqlType::Timestamp(Some(6), TimezoneInfo::None),
            _ => {}
        }
        std::ops::ControlFlow::Continue(())
    });
}

/// In ANSI mode, Spark's common type of text and a number (or a BOOLEAN) is the number (the
/// text is cast to it, and fails if it is not one); DataFusion's is text. Refused where `types`
/// mix the two (`what` names the expression: `CASE`, `UNION`, `coalesce`, …).
pub(crate) fn text_and_number(what: &str, types: impl Iterator<Item = DataType>) -> datafusion::error::Result<()> {
    let types: Vec<DataType> = types.collect();
    if types.iter().any(|t| t.is_string()) && types.iter().any(|t| t.is_numeric() || t == &DataType::Boolean) {
        return Err(crate::declare::refused(
            what,
            "in ANSI mode Spark casts the text to the number's type; cast one side explicitly",
        ));
    }
    Ok(())
}
