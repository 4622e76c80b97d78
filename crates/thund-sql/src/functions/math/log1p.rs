//! Spark's `log1p(x)`.

use std::sync::Arc;

use arrow::array::Float64Array;
use arrow::datatypes::DataType;
use datafusion::common::Result;
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

use crate::columnar::{doubles, numeric_argument};

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Log1p { signature: Signature::any(1, Volatility::Immutable) }));
}

/// `log1p(x)`: ln(1 + x), exact for a small `x` (where 1 + x would round it away); NULL at or
/// below -1, as Spark's.
#[derive(Debug, PartialEq, Eq, Hash)]
struct Log1p {
    signature: Signature,
}

impl ScalarUDFImpl for Log1p {
    fn name(&self) -> &str {
        "log1p"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        numeric_argument("log1p", &args[0])?;
        Ok(DataType::Float64)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = matches!(args.args[0], ColumnarValue::Scalar(_));
        let x = doubles(&args.args[0].to_array(1)?)?;
        let out: Float64Array = x.iter().map(|v| v.filter(|v| *v > -1.0).map(f64::ln_1p)).collect();
        crate::columnar::columnar(Arc::new(out), scalar)
    }
}
