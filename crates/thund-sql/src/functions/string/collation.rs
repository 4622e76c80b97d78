//! Spark's `collation(text)`: the name of its argument's collation. Text here has Spark's
//! default collation only (a `COLLATE` clause is refused), so every text's is that one's name,
//! a NULL's too, as on Spark 4.1 (`SYSTEM.BUILTIN.UTF8_BINARY`); another type fails, as Spark's
//! analysis fails it.

use arrow::datatypes::DataType;
use datafusion::common::{plan_err, Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

/// The name Spark gives its default collation.
const DEFAULT_COLLATION: &str = "SYSTEM.BUILTIN.UTF8_BINARY";

pub(super) fn register(ctx: &SessionContext) {
    ctx.register_udf(ScalarUDF::from(Collation { signature: Signature::any(1, Volatility::Immutable) }));
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct Collation {
    signature: Signature,
}

impl ScalarUDFImpl for Collation {
    fn name(&self) -> &str {
        "collation"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        match &args[0] {
            t if t.is_string() || t == &DataType::Null => Ok(DataType::Utf8),
            // The type is left out: an integer literal is typed INT only after this check runs.
            _ => plan_err!(
                "[DATATYPE_MISMATCH.UNEXPECTED_INPUT_TYPE] collation: the first parameter requires the STRING type"
            ),
        }
    }

    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(DEFAULT_COLLATION.to_string()))))
    }
}

#[cfg(test)]
mod tests {
    use knut_thund::frontend::{analyze_query, NameContext};
    use knut_thund::ir::SourceLocation;

    use crate::modes::SqlModes;

    /// The query's answer as a table, planned as a pipeline's query is (Spark's literal types).
    fn answer(sql: &str) -> Result<String, String> {
        let ctx = crate::session::test_context(SqlModes::default());
        let names = NameContext { catalog: "spark_catalog".into(), database: "default".into(), databricks: false };
        let query = analyze_query(sql, &SourceLocation::new("q.sql", 1, 1), &names).map_err(|e| format!("{e:?}"))?;
        let ast = query.ast.get().cloned().ok_or("no AST")?;
        let rt = tokio::runtime::Builder::new_current_thread().build().map_err(|e| e.to_string())?;
        rt.block_on(async {
            let plan = crate::plan_query(&ctx, ast).await.map_err(|e| e.to_string())?;
            let batches = ctx.execute_logical_plan(plan).await.map_err(|e| e.to_string())?.collect().await;
            let batches = batches.map_err(|e| e.to_string())?;
            Ok(arrow::util::pretty::pretty_format_batches(&batches).map_err(|e| e.to_string())?.to_string())
        })
    }

    #[test]
    fn text_and_null_have_the_default_collation_and_a_number_none() {
        // As Spark 4.1.4 answers.
        let shown =
            answer("SELECT collation('Spark SQL') AS a, collation(NULL) AS n, collation(upper('b')) AS u").unwrap();
        assert_eq!(shown.matches("SYSTEM.BUILTIN.UTF8_BINARY").count(), 3, "{shown}");
        let refused = answer("SELECT collation(1) AS c").unwrap_err();
        assert!(
            refused.contains("UNEXPECTED_INPUT_TYPE] collation: the first parameter requires the STRING type"),
            "{refused}"
        );
    }
}
