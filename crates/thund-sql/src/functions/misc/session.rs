//! Spark's functions about the session: `current_catalog()`, `current_database()` (and its
//! other name `current_schema()`), and `current_user()` (`user()`, `session_user()`).
//!
//! The catalog and database are the pipeline's defaults (its spec's `catalog` and `database`,
//! else Spark's `spark_catalog` and `default`), where its unqualified names resolve. The user is
//! the one running the engine, as Spark's is the one running its server (Java's `user.name`):
//! `$USER`, else the name `/etc/passwd` gives the process's user id.

use arrow::datatypes::DataType;
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility};
use datafusion::prelude::SessionContext;

pub(crate) fn register(ctx: &SessionContext, catalog: &str, database: &str) {
    let user = user_name();
    for (name, value) in [
        ("current_catalog", catalog.to_string()),
        ("current_database", database.to_string()),
        ("current_schema", database.to_string()),
        ("current_user", user.clone()),
        ("user", user.clone()),
        ("session_user", user),
    ] {
        ctx.register_udf(ScalarUDF::from(SessionValue {
            name,
            value,
            signature: Signature::nullary(Volatility::Stable),
        }));
    }
}

/// The name of the user running this process, looked up once (every session registers it).
fn user_name() -> String {
    static NAME: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    NAME.get_or_init(look_up_user_name).clone()
}

fn look_up_user_name() -> String {
    if let Some(user) = std::env::var("USER").ok().filter(|u| !u.is_empty()) {
        return user;
    }
    let uid = std::fs::read_to_string("/proc/self/status").ok().and_then(|status| {
        status
            .lines()
            .find_map(|l| l.strip_prefix("Uid:").and_then(|ids| ids.split_whitespace().next().map(str::to_string)))
    });
    let from_passwd = uid.and_then(|uid| {
        let passwd = std::fs::read_to_string("/etc/passwd").ok()?;
        passwd.lines().find_map(|l| {
            let fields: Vec<&str> = l.split(':').collect();
            (fields.len() > 2 && fields[2] == uid).then(|| fields[0].to_string())
        })
    });
    from_passwd.unwrap_or_else(|| "unknown".into())
}

/// A function answering one value for the whole session.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SessionValue {
    name: &'static str,
    value: String,
    signature: Signature,
}

impl ScalarUDFImpl for SessionValue {
    fn name(&self) -> &str {
        self.name
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, _: ScalarFunctionArgs) -> Result<ColumnarValue> {
        Ok(ColumnarValue::Scalar(ScalarValue::Utf8(Some(self.value.clone()))))
    }
}
