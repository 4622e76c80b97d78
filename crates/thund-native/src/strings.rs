//! Spark string functions DataFusion lacks: `mask(text[, upper[, lower[, digit[, other]]]])`,
//! which replaces upper-case letters with `X`, lower-case with `x`, digits with `n` and leaves
//! other characters, each replacement given (one character) or kept (NULL), as in Spark.

use std::sync::Arc;

use arrow::array::{Array, StringArray};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::functions::{columnar, utf8};

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Mask { signature: Signature::variadic_any(Volatility::Immutable) }));
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
