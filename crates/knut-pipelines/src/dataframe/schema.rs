//! A reader's `.schema(…)` as DDL: pyspark sends a `StructType` as its JSON form.

use super::{refuse, Result, Untranslatable};
use crate::registration::quote_identifier;

/// A reader's schema as DDL: pyspark sends a `StructType` as its JSON form, a string as written.
pub(super) fn schema_ddl(schema: &str) -> Result<String> {
    if !schema.trim_start().starts_with('{') {
        return Ok(schema.to_string());
    }
    let json: serde_json::Value =
        serde_json::from_str(schema).map_err(|e| Untranslatable(format!("a schema that is not a StructType: {e}")))?;
    if json["type"] != "struct" {
        return refuse("a schema that is not a StructType");
    }
    // A table's columns are `name TYPE`; a STRUCT's fields `name: TYPE`.
    Ok(json_fields(&json["fields"], " ")?.join(", "))
}

fn json_fields(fields: &serde_json::Value, sep: &str) -> Result<Vec<String>> {
    fields
        .as_array()
        .into_iter()
        .flatten()
        .map(|f| {
            let name = f["name"].as_str().ok_or_else(|| Untranslatable("a schema field without name".into()))?;
            let not_null = if f["nullable"] == serde_json::Value::Bool(false) { " NOT NULL" } else { "" };
            Ok(format!("{}{sep}{}{not_null}", quote_identifier(name), json_type(&f["type"])?))
        })
        .collect()
}

/// A type in Spark's JSON schema form (`"long"`, `{"type": "array", …}`) as a Spark SQL type.
fn json_type(t: &serde_json::Value) -> Result<String> {
    use serde_json::Value;
    Ok(match t {
        Value::String(name) => match name.as_str() {
            "long" => "BIGINT".into(),
            "integer" => "INT".into(),
            "short" => "SMALLINT".into(),
            "byte" => "TINYINT".into(),
            "string" | "boolean" | "double" | "float" | "date" | "timestamp" | "timestamp_ntz" | "binary" => {
                name.to_ascii_uppercase()
            }
            "null" | "void" => "VOID".into(),
            d if d.starts_with("decimal(") => d.to_ascii_uppercase(),
            other => return refuse(format!("the schema type `{other}`")),
        },
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("array") => format!("ARRAY<{}>", json_type(&t["elementType"])?),
            Some("map") => format!("MAP<{}, {}>", json_type(&t["keyType"])?, json_type(&t["valueType"])?),
            Some("struct") => format!("STRUCT<{}>", json_fields(&t["fields"], ": ")?.join(", ")),
            _ => return refuse(format!("the schema type `{t}`")),
        },
        _ => return refuse(format!("the schema type `{t}`")),
    })
}
