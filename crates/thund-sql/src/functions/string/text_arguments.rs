//! Spark's implicit casts of a string function's arguments to text: on Spark `upper(1)` is
//! `1`, `substr(12345, 2, 2)` is `23`, `trim(DATE'2024-01-02')` is `2024-01-02` and
//! `length(1e20)` is 6 (the DOUBLE is written `1.0E20`), where DataFusion's string functions
//! refuse a number, a BOOLEAN, a DATE or a TIMESTAMP.
//!
//! The types are not known on the parse, so there each argument Spark reads as a STRING (the
//! positions, per function, were read off Spark 4.1.4) is wrapped in `__thund_text(x)`. Once the
//! query is planned, `fidelity` replaces each wrapper by its argument when that is text or bytes
//! already (so a filter on a string column still reaches the scan as it was written), and by
//! a cast to STRING otherwise, which `casts::SparkText` gives Spark's text. Functions whose DataFusion form coerces its
//! arguments itself (`concat`, `lpad`, `translate`, …) are not wrapped: the casts that type
//! coercion adds are given Spark's text by `casts::SparkText`.

use arrow::array::ArrayRef;
use arrow::datatypes::DataType;
use datafusion::common::{DFSchema, Result, ScalarValue};
use datafusion::logical_expr::{
    cast, ColumnarValue, Expr, ExprSchemable, ScalarFunctionArgs, ScalarUDFImpl, Signature, Volatility,
};
use sqlparser::ast::{Expr as SqlExpr, FunctionArg, FunctionArgExpr, FunctionArguments, Value};

/// The wrapper's name: not a Spark function, so no query can name it.
const NAME: &str = "__thund_text";

/// Spark's string functions whose DataFusion forms refuse other types, with the positions of
/// the arguments Spark casts to text (DataFusion's names too, where a template renamed one).
const STRING_ARGUMENTS: &[(&str, &[usize])] = &[
    ("upper", &[0]),
    ("lower", &[0]),
    ("ucase", &[0]),
    ("lcase", &[0]),
    ("initcap", &[0]),
    ("ascii", &[0]),
    ("octet_length", &[0]),
    ("bit_length", &[0]),
    ("unhex", &[0]),
    ("encode", &[0]),
    ("url_encode", &[0]),
    ("url_decode", &[0]),
    ("substr", &[0]),
    ("substring", &[0]),
    ("repeat", &[0]),
    ("trim", &[0, 1]),
    ("btrim", &[0, 1]),
    ("ltrim", &[0, 1]),
    ("rtrim", &[0, 1]),
    ("instr", &[0, 1]),
    ("strpos", &[0, 1]),
    ("locate", &[0, 1]),
    ("position", &[0, 1]),
    ("replace", &[0, 1, 2]),
    ("split", &[0, 1]),
    ("split_part", &[0, 1]),
    ("levenshtein", &[0, 1]),
    ("startswith", &[0, 1]),
    ("endswith", &[0, 1]),
    ("contains", &[0, 1]),
    ("regexp_extract", &[0, 1]),
    ("regexp_extract_all", &[0, 1]),
    ("regexp_like", &[0, 1]),
    ("rlike", &[0, 1]),
    ("regexp", &[0, 1]),
    ("regexp_substr", &[0, 1]),
    ("quote", &[0]),
];

/// The analysis rule: [`wrap_string_arguments`].
pub(crate) fn wrap_rule(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    wrap_string_arguments(query);
    Ok(())
}

/// Wraps each argument of `query` that Spark reads as text, where it is not text already on the
/// parse (a string literal or NULL).
pub(crate) fn wrap_string_arguments(query: &mut sqlparser::ast::Query) {
    let _ = sqlparser::ast::visit_expressions_mut(query, |e| {
        match e {
            SqlExpr::Function(f) => {
                let name = f.name.to_string().to_ascii_lowercase();
                let Some((_, positions)) = STRING_ARGUMENTS.iter().find(|(n, _)| *n == name) else {
                    return std::ops::ControlFlow::<()>::Continue(());
                };
                if let FunctionArguments::List(list) = &mut f.args {
                    for (i, arg) in list.args.iter_mut().enumerate() {
                        if let (true, FunctionArg::Unnamed(FunctionArgExpr::Expr(x))) = (positions.contains(&i), arg) {
                            wrap(x);
                        }
                    }
                }
            }
            SqlExpr::Like { expr, pattern, .. }
            | SqlExpr::ILike { expr, pattern, .. }
            | SqlExpr::RLike { expr, pattern, .. } => {
                wrap(expr);
                wrap(pattern);
            }
            SqlExpr::Trim { expr, trim_what, .. } => {
                wrap(expr);
                if let Some(what) = trim_what {
                    wrap(what);
                }
            }
            SqlExpr::Substring { expr, .. } => wrap(expr),
            SqlExpr::Position { expr, r#in } => {
                wrap(expr);
                wrap(r#in);
            }
            _ => {}
        }
        std::ops::ControlFlow::Continue(())
    });
}

fn wrap(x: &mut SqlExpr) {
    let text = |v: &Value| {
        matches!(
            v,
            Value::SingleQuotedString(_) | Value::DoubleQuotedString(_) | Value::EscapedStringLiteral(_) | Value::Null
        )
    };
    if matches!(x, SqlExpr::Value(v) if text(&v.value)) {
        return;
    }
    let inner = std::mem::replace(x, SqlExpr::Value(Value::Null.into()));
    *x = crate::syntax::function(NAME, vec![inner]);
}

/// Whether Spark casts a value of this type to text for a string function (DataFusion's does
/// not take it as it is).
fn cast_to_text(t: &DataType) -> bool {
    t.is_numeric() || matches!(t, DataType::Boolean | DataType::Date32 | DataType::Date64 | DataType::Timestamp(..))
}

/// The planned form of a wrapper (`e`, in a node whose inputs have `schema`): its argument, or
/// its cast to STRING (given Spark's text by `casts::SparkText`). `None` for any other
/// expression, or where the argument's type is not known here (in a lambda's body), which
/// leaves the wrapper to do the cast as it runs.
pub(crate) fn unwrap(e: &Expr, schema: &DFSchema) -> Option<Expr> {
    let Expr::ScalarFunction(f) = e else { return None };
    let [arg] = f.args.as_slice() else { return None };
    if f.func.name() != NAME {
        return None;
    }
    let t = arg.get_type(schema).ok()?;
    if !cast_to_text(&t) {
        return Some(arg.clone());
    }
    Some(cast(arg.clone(), DataType::Utf8))
}

/// The arguments of `format_string(format, …)` (or `printf`) as Spark formats them: Java's
/// `Formatter` writes a floating-point argument of `%s` as `Double.toString` does, so such an
/// argument is cast to STRING (given Spark's text by `casts::SparkText`). A DECIMAL is refused (DataFusion's formats its unscaled
/// digits, Java's `%f` refuses it), as is floating point where the format is not a literal.
pub(crate) fn format_arguments(name: &str, mut args: Vec<Expr>, schema: &DFSchema) -> Result<Vec<Expr>> {
    let refused = |why: &str| {
        datafusion::error::DataFusionError::Plan(format!(
            "`{name}` answers differently here than on Spark ({why}): it runs on the Spark backend"
        ))
    };
    let types: Vec<Option<DataType>> = args.iter().map(|a| a.get_type(schema).ok()).collect();
    if types.iter().skip(1).flatten().any(|t| matches!(t, DataType::Decimal128(..) | DataType::Decimal256(..))) {
        return Err(refused("of a DECIMAL"));
    }
    if !types.iter().skip(1).flatten().any(DataType::is_floating) {
        return Ok(args);
    }
    let Some(conversions) = args.first().and_then(literal_text).and_then(|f| conversions(&f)) else {
        return Err(refused("of floating point, with a format that is not a plain literal"));
    };
    for (i, conversion) in conversions.into_iter().enumerate() {
        let (Some(arg), Some(Some(t))) = (args.get(i + 1), types.get(i + 1)) else { continue };
        if t.is_floating() && matches!(conversion, 's' | 'S') {
            args[i + 1] = cast(arg.clone(), DataType::Utf8);
        }
    }
    Ok(args)
}

fn literal_text(e: &Expr) -> Option<String> {
    match e {
        Expr::Literal(ScalarValue::Utf8(s) | ScalarValue::Utf8View(s) | ScalarValue::LargeUtf8(s), _) => s.clone(),
        _ => None,
    }
}

/// The conversion letter of each argument a Java format string takes, in order; `None` for one
/// that names its arguments by index (`%1$s`) or by `<`.
fn conversions(format: &str) -> Option<Vec<char>> {
    let mut out = Vec::new();
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            continue;
        }
        let mut spec = String::new();
        while let Some(&n) = chars.peek() {
            chars.next();
            if n.is_ascii_alphabetic() || n == '%' {
                // `%tY`: a date-time conversion has its suffix letter after `t`.
                if matches!(n, 't' | 'T') {
                    chars.next();
                }
                if spec.contains('$') || spec.contains('<') {
                    return None;
                }
                if !matches!(n, '%' | 'n') {
                    out.push(n);
                }
                break;
            }
            spec.push(n);
        }
    }
    Some(out)
}

/// The wrapper, where `fidelity` could not replace it: the same casts, as it runs.
#[derive(Debug, PartialEq, Eq, Hash)]
pub(crate) struct TextArgument {
    signature: Signature,
}

impl TextArgument {
    pub(crate) fn new() -> Self {
        TextArgument { signature: Signature::any(1, Volatility::Immutable) }
    }
}

impl ScalarUDFImpl for TextArgument {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(if cast_to_text(&args[0]) { DataType::Utf8 } else { args[0].clone() })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let value = &args.args[0];
        if !cast_to_text(&value.data_type()) {
            return Ok(value.clone());
        }
        let scalar = matches!(value, ColumnarValue::Scalar(_));
        let text: ArrayRef = crate::functions::cast::as_text(&value.to_array(args.number_rows)?)?;
        Ok(if scalar {
            ColumnarValue::Scalar(ScalarValue::try_from_array(&text, 0)?)
        } else {
            ColumnarValue::Array(text)
        })
    }
}

/// Registers the wrapper.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    ctx.register_udf(datafusion::logical_expr::ScalarUDF::from(TextArgument::new()));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wrapped(sql: &str) -> String {
        let dialect = sqlparser::dialect::GenericDialect {};
        let mut statements = sqlparser::parser::Parser::parse_sql(&dialect, sql).unwrap();
        let sqlparser::ast::Statement::Query(q) = &mut statements[0] else { panic!("not a query") };
        wrap_string_arguments(q);
        q.to_string()
    }

    #[test]
    fn only_the_arguments_spark_reads_as_text_are_wrapped() {
        assert_eq!(
            wrapped("SELECT upper(x), repeat(x, 2), lpad(x, 3, '0'), upper('a'), x LIKE '1%' FROM t"),
            "SELECT upper(__thund_text(x)), repeat(__thund_text(x), 2), lpad(x, 3, '0'), upper('a'), \
             __thund_text(x) LIKE '1%' FROM t"
        );
        assert_eq!(wrapped("SELECT trim(5), substr(1, 2)"), "SELECT TRIM(__thund_text(5)), SUBSTR(__thund_text(1), 2)");
    }

    #[test]
    fn a_formats_conversions_are_read_in_order() {
        assert_eq!(conversions("%5s|%-8.2f %% %n %tY %,d"), Some(vec!['s', 'f', 't', 'd']));
        assert_eq!(conversions("%1$s %s"), None);
        assert_eq!(conversions("no conversions"), Some(vec![]));
    }
}
