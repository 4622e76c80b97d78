//! `typeof(x)`, and the VOID-as-DOUBLE marker `resolution` puts around `sum`'s arguments.

use arrow::array::Array;
use arrow::datatypes::DataType;
use datafusion::common::{plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

/// Registers `typeof` and the VOID-as-DOUBLE marker.
pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(TypeOf { signature: Signature::any(1, Volatility::Immutable) }));
    ctx.register_udf(ScalarUDF::from(VoidAsDouble { signature: Signature::any(1, Volatility::Immutable) }));
}

/// The name of [`VoidAsDouble`].
pub(crate) const VOID_AS_DOUBLE: &str = "__thund_void_as_double";

/// `__thund_void_as_double(x)`: `x`, or a DOUBLE NULL where `x` is of type VOID (`resolution`
/// puts it around the arguments of `sum` when one is VOID: Spark's sum of VOID is a DOUBLE).
#[derive(Debug, PartialEq, Eq, Hash)]
struct VoidAsDouble {
    signature: Signature,
}

impl ScalarUDFImpl for VoidAsDouble {
    fn name(&self) -> &str {
        VOID_AS_DOUBLE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(match &args[0] {
            DataType::Null => DataType::Float64,
            other => other.clone(),
        })
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let Some(value) = args.args.into_iter().next() else {
            return datafusion::common::exec_err!("{VOID_AS_DOUBLE} takes one argument");
        };
        Ok(match value {
            ColumnarValue::Scalar(s) if s.data_type() == DataType::Null => {
                ColumnarValue::Scalar(datafusion::common::ScalarValue::Float64(None))
            }
            ColumnarValue::Array(a) if a.data_type() == &DataType::Null => {
                ColumnarValue::Array(arrow::array::new_null_array(&DataType::Float64, a.len()))
            }
            other => other,
        })
    }
}

/// `typeof(x)`: the argument's type as Spark writes it (`int`, `array<struct<q:int>>`).
#[derive(Debug, PartialEq, Eq, Hash)]
struct TypeOf {
    signature: Signature,
}

impl ScalarUDFImpl for TypeOf {
    fn name(&self) -> &str {
        "typeof"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        // An interval's type names its fields (`interval day to hour`), which its Arrow type
        // does not keep (a literal's is answered in the parse, `interval::literals`).
        if args.first().is_some_and(crate::functions::interval::arithmetic::is_interval) {
            return plan_err!("typeof of an interval runs on the Spark backend (its fields are not kept here)");
        }
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let name = crate::types::spark_simple_string(args.arg_fields[0].data_type());
        Ok(ColumnarValue::Scalar(datafusion::common::ScalarValue::Utf8(Some(name))))
    }
}
