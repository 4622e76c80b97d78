//! Spark's `pmod(a, n)` for a floating-point divisor: datafusion-spark's `pmod` tells a zero
//! divisor by Arrow's equality, which orders floating point totally, so `-0.0` was not zero
//! (`pmod(5.0D, -0.0D)` was NaN where Spark answers NULL), and in ANSI mode a floating-point
//! zero gave NaN where Spark fails with `REMAINDER_BY_ZERO`. This wraps that function: a zero
//! divisor of either sign is NULL without ANSI mode, and fails a row whose dividend is not NULL
//! in it, as Spark's; every other divisor goes to the wrapped function unchanged.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef};
use arrow::datatypes::DataType;
use datafusion::common::{exec_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    let inner = datafusion_spark::function::math::pmod();
    let signature = inner.signature().clone();
    ctx.register_udf(ScalarUDF::from(Pmod { inner, signature }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Pmod {
    inner: Arc<ScalarUDF>,
    signature: Signature,
}

impl ScalarUDFImpl for Pmod {
    fn name(&self) -> &str {
        "pmod"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.inner().coerce_types(args)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn invoke_with_args(&self, mut args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if args.args.len() == 2 && args.args[1].data_type().is_floating() {
            let rows = args.number_rows;
            let dividend = args.args[0].to_array(rows)?;
            let divisor = args.args[1].to_array(rows)?;
            let zero = super::arithmetic::zeros(&divisor)?;
            if args.config_options.execution.enable_ansi_mode {
                let fails = (0..rows).any(|i| zero.is_valid(i) && zero.value(i) && dividend.is_valid(i));
                if fails {
                    return exec_err!(
                        "[REMAINDER_BY_ZERO] remainder by zero: {}",
                        crate::modes::ansi_hint(Some("try_mod"))
                    );
                }
            }
            let nulled: ArrayRef = arrow::compute::nullif(&divisor, &zero)?;
            args.args[1] = ColumnarValue::Array(nulled);
            // Rows of NULL divisors answer NULL; the wrapped function sees no zero.
        }
        self.inner.invoke_with_args(args)
    }
}
