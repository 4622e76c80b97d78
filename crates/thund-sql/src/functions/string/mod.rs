//! Spark string functions DataFusion lacks: `mask(text[, upper[, lower[, digit[, other]]]])`,
//! which replaces upper-case letters with `X`, lower-case with `x`, digits with `n` and leaves
//! other characters, each replacement given (one character) or kept (NULL), as in Spark;
//! `quote(text)`, the text in single quotes with its quotes escaped by a backslash; and
//! `assert_true(x[, message])`, NULL when `x` is true and Spark's `[USER_RAISED_EXCEPTION]`
//! otherwise (a NULL `x` too).

mod collation;
pub(crate) mod format_number;
pub(crate) mod like_patterns;
pub(crate) mod number_format;
mod rewrites;
pub(crate) mod text_arguments;

use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::columnar::{columnar, utf8};
use crate::declare::Function;

/// Spark's string functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    Function::udf("mask"),
    Function::udf("quote"),
    // The name of the text's collation: always Spark's default here.
    Function::udf("collation"),
    // Spark's message names the expression as its SQL, which the function itself cannot see.
    Function::udf("assert_true").parse(rewrites::assert_true),
    Function::udf("format_number"),
    Function::udf("to_number"),
    Function::udf("try_to_number"),
    // The marker of a string function's argument read as text (`text_arguments`).
    Function::udf("__thund_text"),
    // A LIKE pattern that is not a constant, checked per row (`like_patterns`).
    Function::udf("__thund_like_pattern"),
    Function::builtin("format_string").plan(rewrites::format_string),
    Function::builtin("printf").plan(rewrites::format_string),
    Function::spelled("lcase", &[(1, "lower(__a1)")]),
    Function::spelled("ucase", &[(1, "upper(__a1)")]),
    Function::builtin("space").templates(&[(1, "repeat(' ', __a1)")]),
    // The distance, or -1 above the threshold (NULL for a NULL threshold).
    Function::builtin("levenshtein").templates(&[(
        3,
        "CASE WHEN levenshtein(__a1, __a2) > __a3 THEN -1 WHEN __a3 IS NOT NULL THEN levenshtein(__a1, __a2) END",
    )]),
    // The position of the first match at or after a position; DataFusion takes `position`'s
    // two arguments the other way (the `POSITION(substr IN str)` syntax is planned right).
    Function::builtin("locate").templates(&[(3, rewrites::LOCATE_FROM)]).parse(rewrites::position),
    Function::builtin("position").templates(&[(3, rewrites::LOCATE_FROM)]).parse(rewrites::position),
    // Of a BINARY: bytes (DataFusion's read the bytes as text).
    Function::builtin("left").plan(rewrites::of_bytes),
    Function::builtin("substr").plan(rewrites::of_bytes),
    Function::builtin("substring").plan(rewrites::of_bytes),
    Function::builtin("lpad").plan(rewrites::of_bytes),
    Function::builtin("rpad").plan(rewrites::of_bytes),
    Function::builtin("overlay").plan(rewrites::of_bytes),
];

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &SessionContext) {
    collation::register(ctx);
    number_format::register(ctx);
    format_number::register(ctx);
    register_text_functions(ctx);
    text_arguments::register(ctx);
    like_patterns::register(ctx);
}

fn register_text_functions(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Mask { signature: Signature::variadic_any(Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(Quote { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(AssertTrue { signature: Signature::variadic_any(Volatility::Volatile) }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Quote {
    signature: Signature,
}

impl ScalarUDFImpl for Quote {
    fn name(&self) -> &str {
        "quote"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let text = utf8(&args.args[0].to_array(args.number_rows)?)?;
        let out: StringArray = text.iter().map(|t| t.map(|t| format!("'{}'", t.replace('\'', "\\'")))).collect();
        columnar(Arc::new(out), scalar)
    }
}

/// `assert_true(x, message)` (the message put in by `calls::rewrite_assert_true` when the
/// query gives none).
#[derive(Debug, PartialEq, Eq, Hash)]
struct AssertTrue {
    signature: Signature,
}

impl ScalarUDFImpl for AssertTrue {
    fn name(&self) -> &str {
        "assert_true"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if args.len() != 2 || !matches!(args[0], DataType::Boolean | DataType::Null) {
            return plan_err!("assert_true takes a BOOLEAN and an optional message");
        }
        Ok(DataType::Null)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let cond = args.args[0].to_array(n)?;
        let message = utf8(&args.args[1].to_array(n)?)?;
        let cond = arrow::compute::cast(&cond, &DataType::Boolean)?;
        let cond = cond.as_any().downcast_ref::<arrow::array::BooleanArray>().cloned();
        for i in 0..n {
            let holds = cond.as_ref().is_some_and(|c| c.is_valid(i) && c.value(i));
            if !holds {
                let m = if message.is_null(i) { "NULL" } else { message.value(i) };
                return exec_err!("[USER_RAISED_EXCEPTION] {m}");
            }
        }
        match args.args[0] {
            ColumnarValue::Scalar(_) => Ok(ColumnarValue::Scalar(datafusion::common::ScalarValue::Null)),
            ColumnarValue::Array(_) => Ok(ColumnarValue::Array(arrow::array::new_null_array(&DataType::Null, n))),
        }
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Mask {
    signature: Signature,
}

/// Spark's replacements when they are not given: upper, lower, digit, other.
const DEFAULTS: [Option<char>; 4] = [Some('X'), Some('x'), Some('n'), None];

impl ScalarUDFImpl for Mask {
    fn name(&self) -> &str {
        "mask"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if !(1..=5).contains(&args.len()) {
            return plan_err!("mask is called as mask(text[, upper[, lower[, digit[, other]]]])");
        }
        // Spark casts nothing to text for `mask`: a number is its error too.
        if !(args[0].is_string() || args[0] == DataType::Null) {
            return plan_err!("mask takes a STRING, not a {}", crate::types::spark_type_name(&args[0]));
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let arrays = args.args.iter().map(|a| a.to_array(n).and_then(|a| utf8(&a))).collect::<Result<Vec<_>>>()?;
        let replacement = |k: usize, row: usize| -> Result<Option<char>> {
            let Some(a) = arrays.get(k + 1) else { return Ok(DEFAULTS[k]) };
            if a.is_null(row) {
                return Ok(None);
            }
            let mut chars = a.value(row).chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => Ok(Some(c)),
                _ => exec_err!("mask's replacements are one character each, not '{}'", a.value(row)),
            }
        };
        let text = &arrays[0];
        let mut out = Vec::with_capacity(n);
        for row in 0..n {
            if text.is_null(row) {
                out.push(None);
                continue;
            }
            let r = [replacement(0, row)?, replacement(1, row)?, replacement(2, row)?, replacement(3, row)?];
            let masked: String = text
                .value(row)
                .chars()
                .map(|c| {
                    let class = if c.is_uppercase() {
                        0
                    } else if c.is_lowercase() {
                        1
                    } else if c.is_ascii_digit() {
                        2
                    } else {
                        3
                    };
                    r[class].unwrap_or(c)
                })
                .collect();
            out.push(Some(masked));
        }
        columnar(Arc::new(StringArray::from(out)), scalar)
    }
}
