//! `make_ym_interval([years[, months]])`: Spark's year-month interval, as Arrow's
//! `Interval(YearMonth)` (the type Spark sends it over Arrow in), months counted in an INT.
//!
//! An interval whose months do not fit an INT fails in either mode, as Spark's
//! `INTERVAL_ARITHMETIC_OVERFLOW`; a NULL argument gives NULL. (`make_interval` and
//! `make_dt_interval` are `datafusion-spark`'s; `try_make_interval` is `make_interval`, whose
//! overflow there is NULL. In ANSI mode Spark's `make_interval` fails on it instead, which
//! `overflow_check` makes it do.)

use std::sync::Arc;

use arrow::array::{Array, AsArray, IntervalYearMonthArray};
use arrow::datatypes::{DataType, Int64Type, IntervalUnit};
use datafusion::common::{exec_err, plan_err, Result};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(MakeYmInterval { signature: Signature::variadic_any(Volatility::Immutable) }));
    if let Ok(make_interval) = datafusion::execution::FunctionRegistry::udf(ctx, "make_interval") {
        ctx.register_udf(ScalarUDF::from(TryMakeInterval { inner: make_interval }));
    }
}

/// `try_make_interval`: `make_interval` under its own name, so that ANSI mode's overflow check
/// (`overflow_check`, for `make_interval` only) leaves its NULL.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TryMakeInterval {
    inner: Arc<ScalarUDF>,
}

impl ScalarUDFImpl for TryMakeInterval {
    fn name(&self) -> &str {
        "try_make_interval"
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn coerce_types(&self, arg_types: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(arg_types)
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn return_field_from_args(
        &self,
        args: datafusion::logical_expr::ReturnFieldArgs,
    ) -> Result<arrow::datatypes::FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        self.inner.invoke_with_args(args)
    }
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct MakeYmInterval {
    signature: Signature,
}

impl ScalarUDFImpl for MakeYmInterval {
    fn name(&self) -> &str {
        "make_ym_interval"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        if args.len() > 2 || !args.iter().all(|t| t.is_integer() || t == &DataType::Null) {
            return plan_err!(
                "make_ym_interval of {} runs on the Spark backend (it takes up to two integers here)",
                args.iter().map(crate::types::spark_type_name).collect::<Vec<_>>().join(", ")
            );
        }
        Ok(DataType::Interval(IntervalUnit::YearMonth))
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args.args.iter().all(|a| matches!(a, ColumnarValue::Scalar(_)));
        let n = args.number_rows;
        let fields = args
            .args
            .iter()
            .map(|a| Ok(arrow::compute::cast(&a.to_array(n)?, &DataType::Int64)?.as_primitive::<Int64Type>().clone()))
            .collect::<Result<Vec<_>>>()?;
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            if fields.iter().any(|f| f.is_null(i)) {
                out.push(None);
                continue;
            }
            let field = |k: usize| fields.get(k).map_or(0, |f| f.value(i));
            let months =
                field(0).checked_mul(12).and_then(|m| m.checked_add(field(1))).and_then(|m| i32::try_from(m).ok());
            match months {
                Some(m) => out.push(Some(m)),
                None => {
                    return exec_err!(
                        "[INTERVAL_ARITHMETIC_OVERFLOW] make_ym_interval({}, {}): the months do not fit an INT",
                        field(0),
                        field(1)
                    )
                }
            }
        }
        crate::columnar::columnar(Arc::new(IntervalYearMonthArray::from(out)), scalar)
    }
}

/// `make_interval` in ANSI mode: `call` (datafusion-spark's, NULL where the fields overflow)
/// failing where it is NULL though no argument is, as Spark's `[ARITHMETIC_OVERFLOW]`.
/// (`make_dt_interval`'s overflow fails in either mode on Spark: `function` names the one checked.)
pub(crate) fn overflow_check(
    function: &'static str,
    call: datafusion::logical_expr::Expr,
    args: Vec<datafusion::logical_expr::Expr>,
) -> datafusion::logical_expr::Expr {
    let udf = ScalarUDF::from(OverflowCheck { function, signature: Signature::variadic_any(Volatility::Immutable) });
    datafusion::logical_expr::Expr::ScalarFunction(datafusion::logical_expr::expr::ScalarFunction {
        func: Arc::new(udf),
        args: std::iter::once(call).chain(args).collect(),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct OverflowCheck {
    function: &'static str,
    signature: Signature,
}

impl ScalarUDFImpl for OverflowCheck {
    fn name(&self) -> &str {
        if self.function == "make_interval" {
            "ansi_make_interval"
        } else {
            "checked_make_dt_interval"
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let n = args.number_rows;
        let columns = args.args.iter().map(|a| a.to_array(n)).collect::<Result<Vec<_>>>()?;
        // A NULL argument (an untyped NULL too, whose array has no validity of its own) makes
        // the interval NULL without an overflow.
        let valid = |c: &arrow::array::ArrayRef, i: usize| c.logical_nulls().is_none_or(|nulls| nulls.is_valid(i));
        if (0..n).any(|i| columns[0].is_null(i) && columns[1..].iter().all(|c| valid(c, i))) {
            if self.function == "make_interval" {
                return exec_err!(
                    "[ARITHMETIC_OVERFLOW] make_interval: the interval overflows: {}",
                    crate::modes::ansi_hint(Some("try_make_interval"))
                );
            }
            return exec_err!("[INTERVAL_ARITHMETIC_OVERFLOW] {}: the interval overflows", self.function);
        }
        Ok(args.args[0].clone())
    }
}
