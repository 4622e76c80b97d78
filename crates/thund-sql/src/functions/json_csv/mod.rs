//! Spark's JSON and CSV functions, and values written as their writers write them.

pub(crate) mod csv;
pub(crate) mod get_json_object;
pub(crate) mod json;
pub(crate) mod value_text;
