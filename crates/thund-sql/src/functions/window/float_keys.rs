//! Spark's order of floating point, for the keys of ORDER BY and windows: every NaN is one
//! value, greater than any other, and `-0.0` equals `0.0` (Spark's `SQLOrderingUtil`).
//! DataFusion orders by IEEE's total order, where a NaN with its sign bit set (what `-x`, `%`
//! or `∞ - ∞` may give) comes before every number and `-0.0` before `0.0`. A floating-point key
//! is read through [`float_key`], which gives the one NaN and `0.0` for them.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{DataType, Float32Type, Float64Type};
use datafusion::common::tree_node::Transformed;
use datafusion::common::{DFSchema, Result};
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    ColumnarValue, Expr, ExprSchemable, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Volatility,
};

/// `x` read as Spark orders it when it is floating point (and not already so read); `None`
/// otherwise.
pub(crate) fn float_key(x: &Expr, schema: &DFSchema) -> Option<Expr> {
    if !x.get_type(schema).is_ok_and(|t| t.is_floating()) {
        return None;
    }
    if matches!(x, Expr::ScalarFunction(f) if f.name() == NAME) {
        return None;
    }
    let func = Arc::new(ScalarUDF::from(FloatKey { signature: Signature::any(1, Volatility::Immutable) }));
    Some(Expr::ScalarFunction(ScalarFunction { func, args: vec![x.clone()] }))
}

/// A sort's floating-point keys read as Spark orders them.
pub(crate) fn sort_keys(node: LogicalPlan) -> Result<Transformed<LogicalPlan>> {
    let LogicalPlan::Sort(mut sort) = node else { return Ok(Transformed::no(node)) };
    let schema = std::sync::Arc::clone(sort.input.schema());
    let mut changed = false;
    for key in sort.expr.iter_mut() {
        if let Some(k) = float_key(&key.expr, &schema) {
            key.expr = k;
            changed = true;
        }
    }
    Ok(Transformed::new_transformed(LogicalPlan::Sort(sort), changed))
}

const NAME: &str = "spark_float_key";

#[derive(Debug, PartialEq, Eq, Hash)]
struct FloatKey {
    signature: Signature,
}

impl ScalarUDFImpl for FloatKey {
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
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let values = args.args[0].to_array(args.number_rows)?;
        let out: ArrayRef = match values.data_type() {
            DataType::Float64 => Arc::new(values.as_primitive::<Float64Type>().unary::<_, Float64Type>(|v| {
                if v.is_nan() {
                    f64::NAN
                } else {
                    v + 0.0
                }
            })),
            DataType::Float32 => Arc::new(values.as_primitive::<Float32Type>().unary::<_, Float32Type>(|v| {
                if v.is_nan() {
                    f32::NAN
                } else {
                    v + 0.0
                }
            })),
            _ => values,
        };
        crate::columnar::columnar(out, scalar)
    }
}
