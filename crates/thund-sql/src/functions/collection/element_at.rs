//! `element_at` and `try_element_at` of an array or a map, and subscripts checked against their
//! array in ANSI mode.

use std::sync::Arc;

use arrow::array::Array;
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

/// Registers `element_at` and `try_element_at`.
pub(crate) fn register(ctx: &SessionContext) {
    for name in ["element_at", "try_element_at"] {
        ctx.register_udf(ScalarUDF::from(ElementAt { name, signature: Signature::any(2, Volatility::Immutable) }));
    }
}

/// `index` (counted from 1) checked against `array`'s length: an index outside a (non-NULL)
/// array fails the query, as a subscript does in Spark's ANSI mode.
pub(crate) fn index_within(
    array: datafusion::logical_expr::Expr,
    index: datafusion::logical_expr::Expr,
) -> datafusion::logical_expr::Expr {
    checked_index(array, index, IndexRule::Subscript)
}

/// `element_at(array, index)`'s index (counted from 1, or from the end when negative) checked
/// against `array`: 0 fails the query in either mode, an index outside the array in ANSI mode.
pub(crate) fn element_at_index(
    array: datafusion::logical_expr::Expr,
    index: datafusion::logical_expr::Expr,
    ansi: bool,
) -> datafusion::logical_expr::Expr {
    checked_index(array, index, IndexRule::ElementAt { ansi })
}

/// `element_at` and `try_element_at` of an array or a map, typed here and planned by `fidelity` (DataFusion's
/// `element_at` is `map_extract`, which takes no array, and answers a list of one value).
#[derive(Debug, PartialEq, Eq, Hash)]
struct ElementAt {
    name: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for ElementAt {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            DataType::List(item) | DataType::LargeList(item) | DataType::FixedSizeList(item, _) => {
                Ok(item.data_type().clone())
            }
            DataType::Map(entries, _) => match entries.data_type() {
                DataType::Struct(fields) if fields.len() == 2 => Ok(fields[1].data_type().clone()),
                other => exec_err!("element_at: a map's entries are {other}"),
            },
            DataType::Null => Ok(DataType::Null),
            other => plan_err!("element_at takes an array or a map, not a {}", crate::types::spark_type_name(other)),
        }
    }

    fn invoke_with_args(&self, _args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // Every query's plan goes through `fidelity::spark_semantics`, which replaces the call.
        exec_err!("{} is planned as array_element or map_extract before it runs", self.name)
    }
}

/// How an index is checked against its array.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum IndexRule {
    /// A subscript's, counted from 1 here: it fails outside the array.
    Subscript,
    /// `element_at`'s.
    ElementAt { ansi: bool },
}

fn checked_index(
    array: datafusion::logical_expr::Expr,
    index: datafusion::logical_expr::Expr,
    rule: IndexRule,
) -> datafusion::logical_expr::Expr {
    let udf = ScalarUDF::from(IndexWithin { rule, signature: Signature::any(2, Volatility::Immutable) });
    datafusion::logical_expr::Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction {
        func: Arc::new(udf),
        args: vec![array, index],
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct IndexWithin {
    rule: IndexRule,
    signature: Signature,
}

impl ScalarUDFImpl for IndexWithin {
    fn name(&self) -> &str {
        "index_within"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        use arrow::array::AsArray;
        let n = args.number_rows;
        let (arrays, index) = (args.args[0].to_array(n)?, &args.args[1]);
        let positions = arrow::compute::cast(&index.to_array(n)?, &DataType::Int64)?;
        let positions = positions.as_primitive::<arrow::datatypes::Int64Type>();
        let lengths: Vec<Option<usize>> = match arrays.data_type() {
            DataType::List(_) => arrays.as_list::<i32>().iter().map(|a| a.map(|a| a.len())).collect(),
            DataType::LargeList(_) => arrays.as_list::<i64>().iter().map(|a| a.map(|a| a.len())).collect(),
            DataType::FixedSizeList(_, size) => (0..n).map(|i| arrays.is_valid(i).then_some(*size as usize)).collect(),
            _ => return Ok(index.clone()),
        };
        for (len, at) in lengths.iter().zip(positions.iter()) {
            let (Some(len), Some(at)) = (len, at) else { continue };
            if let IndexRule::ElementAt { ansi } = self.rule {
                if at == 0 {
                    return exec_err!(
                        "[INVALID_INDEX_OF_ZERO] element_at: the index 0 is invalid (the first element has index 1, \
                         the last -1)"
                    );
                }
                if ansi && at.unsigned_abs() > *len as u64 {
                    return exec_err!(
                        "[INVALID_ARRAY_INDEX_IN_ELEMENT_AT] element_at: the index {at} is out of bounds: the array \
                         has {len} elements: {}",
                        crate::modes::ansi_hint(Some("try_element_at"))
                    );
                }
                continue;
            }
            if at < 1 || at as usize > *len {
                return exec_err!(
                    "[INVALID_ARRAY_INDEX] the index {} is out of bounds: the array has {len} elements: {}",
                    at - 1,
                    crate::modes::ansi_hint(Some("get()"))
                );
            }
        }
        Ok(index.clone())
    }
}
