//! Errors of planning with Spark's semantics, and Spark's words for the errors Arrow's kernels
//! raise at run time.

use crate::modes::ansi_hint;

/// Why a query cannot be planned with Spark's semantics.
#[derive(Debug, thiserror::Error)]
pub enum SqlError {
    /// The query does not plan, or would answer differently from Spark (a refusal): the message
    /// is for the query's author, who the caller tells where the query is.
    #[error("{0}")]
    Plan(String),
}

/// This crate's results.
pub type Result<T, E = SqlError> = std::result::Result<T, E>;

/// What an Arrow kernel says when a value fails, in the words of Spark's error for it where
/// there is one: the casts and operators Spark's rules cover fail with Spark's own errors
/// before Arrow's are reached, so these are what remains (an overflow inside a built-in
/// function, a cast DataFusion inserted).
pub fn in_sparks_words(text: &str) -> String {
    // The layers an error surfaced through: an analyzer rule's name (`spark_folding_errors` /
    // caused by / …) and DataFusion's kind of error.
    let mut text = text;
    loop {
        let unwrapped = match text.split_once("\ncaused by\n") {
            Some((rule, rest)) if !rule.contains(' ') => rest,
            _ => text.strip_prefix("Execution error: ").unwrap_or(text),
        };
        if unwrapped.len() == text.len() {
            break;
        }
        text = unwrapped;
    }
    if let Some(rest) = text.strip_prefix("Cast error: ") {
        return format!("a value cannot be cast: {rest}");
    }
    if let Some(on) = crate::functions::math::arithmetic::overflowing(&text) {
        return format!("[ARITHMETIC_OVERFLOW] {on} overflows: {}", ansi_hint(Some("the operation's try_ function")));
    }
    // `Compute error: Int32Array overflow on abs(-2147483648)`
    if let Some((_, on)) = text.strip_prefix("Compute error: ").and_then(|t| t.split_once(" overflow on ")) {
        return format!("[ARITHMETIC_OVERFLOW] {on} overflows: {}", ansi_hint(None));
    }
    // `Invalid argument error: 1000.5 is too large to store in a Decimal128 of precision 3. Max is 99.9`
    if let Some((value, rest)) = text
        .strip_prefix("Invalid argument error: ")
        .and_then(|t| t.split_once(" is too large to store in a Decimal128 of precision "))
    {
        let precision = rest.split('.').next().unwrap_or(rest);
        return format!(
            "[NUMERIC_VALUE_OUT_OF_RANGE] {value} cannot be represented with {precision} digits: {}",
            ansi_hint(Some("try_cast"))
        );
    }
    if text.starts_with("Divide by zero error") {
        return format!("[DIVIDE_BY_ZERO] division by zero: {}", ansi_hint(Some("try_divide")));
    }
    text.to_string()
}
