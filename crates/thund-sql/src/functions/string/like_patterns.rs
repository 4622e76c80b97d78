//! Spark's rule for a LIKE pattern's escapes: the escape character (`\` unless `ESCAPE` names
//! another) may only precede `_`, `%` or itself, and may not end the pattern. Spark fails the
//! query otherwise (`INVALID_FORMAT.ESC_IN_THE_MIDDLE` / `ESC_AT_THE_END`, in both ANSI modes),
//! where DataFusion reads `\b` as `b` and answers. A constant pattern is checked when the query is
//! planned ([`like_rule`]); any other is wrapped in `__thund_like_pattern(p)`, which passes each
//! row's pattern through unchanged or fails on it, as Spark does per row.

use std::sync::Arc;

use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;
use sqlparser::ast::{Expr as Syntax, Value};

use crate::columnar::utf8;

/// The wrapper's name.
const NAME: &str = "__thund_like_pattern";

/// Spark's error for `pattern` under `escape`, if its escapes break the rule.
pub(crate) fn pattern_error(pattern: &str, escape: char) -> Option<String> {
    let shown = || pattern.replace('\\', "\\\\");
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != escape {
            continue;
        }
        match chars.next() {
            Some(next) if next == '_' || next == '%' || next == escape => {}
            Some(next) => {
                return Some(format!(
                    "[INVALID_FORMAT.ESC_IN_THE_MIDDLE] The format is invalid: '{}'. The escape character is not \
                     allowed to precede '{next}'",
                    shown()
                ))
            }
            None => {
                return Some(format!(
                    "[INVALID_FORMAT.ESC_AT_THE_END] The format is invalid: '{}'. The escape character is not \
                     allowed to end with",
                    shown()
                ))
            }
        }
    }
    None
}

/// Checks each LIKE / ILIKE of `query` written with the default escape: a constant pattern now,
/// any other per row through the wrapper. (Another `ESCAPE` character is refused by DataFusion's
/// planner.)
pub(crate) fn like_rule(query: &mut sqlparser::ast::Query, _: &crate::modes::SqlModes) -> Result<(), String> {
    let mut error = None;
    let _ = sqlparser::ast::visit_expressions_mut(query, |e| {
        let (pattern, escape, any) = match e {
            Syntax::Like { pattern, escape_char, any, .. } | Syntax::ILike { pattern, escape_char, any, .. } => {
                (pattern, escape_char, *any)
            }
            _ => return std::ops::ControlFlow::Continue(()),
        };
        if any || escape.is_some() {
            return std::ops::ControlFlow::Continue(());
        }
        match pattern.as_ref() {
            Syntax::Value(v) => {
                // The literal as written; its value is what Spark's unescaping makes of it.
                if let Value::SingleQuotedString(p) | Value::DoubleQuotedString(p) = &v.value {
                    error = pattern_error(&crate::analysis::string_literals::spark_unescape(p), '\\');
                }
                if error.is_some() {
                    return std::ops::ControlFlow::Break(());
                }
            }
            _ => {
                let inner = std::mem::replace(pattern.as_mut(), Syntax::Value(Value::Null.into()));
                **pattern = crate::syntax::function(NAME, vec![inner]);
            }
        }
        std::ops::ControlFlow::Continue(())
    });
    error.map_or(Ok(()), Err)
}

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(LikePattern { signature: Signature::any(1, Volatility::Immutable) }));
}

/// `__thund_like_pattern(p)`: `p`, or Spark's error for the first row whose pattern breaks the
/// escape rule.
#[derive(Debug, PartialEq, Eq, Hash)]
struct LikePattern {
    signature: Signature,
}

impl ScalarUDFImpl for LikePattern {
    fn name(&self) -> &str {
        NAME
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let input = args.args[0].clone();
        let texts = utf8(&input.to_array(args.number_rows)?)?;
        for p in texts.iter().flatten() {
            if let Some(e) = pattern_error(p, '\\') {
                return exec_err!("{e}");
            }
        }
        Ok(match input {
            ColumnarValue::Array(a) => ColumnarValue::Array(Arc::clone(&a)),
            scalar => scalar,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::pattern_error;

    #[test]
    fn escapes_follow_sparks_rule() {
        assert_eq!(pattern_error("a\\%b\\_c\\\\", '\\'), None);
        assert_eq!(pattern_error("%a_b%", '\\'), None);
        let middle = pattern_error("\\%SystemDrive\\%\\Users%", '\\').unwrap();
        assert!(
            middle.starts_with("[INVALID_FORMAT.ESC_IN_THE_MIDDLE]") && middle.ends_with("precede 'U'"),
            "{middle}"
        );
        assert!(pattern_error("a\\", '\\').unwrap().starts_with("[INVALID_FORMAT.ESC_AT_THE_END]"));
        assert_eq!(pattern_error("a/b", '\\'), None);
        assert!(pattern_error("a/b", '/').is_some());
    }
}
