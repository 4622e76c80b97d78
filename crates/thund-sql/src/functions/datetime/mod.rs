//! Spark's datetime functions: patterns, `make_timestamp`, text read as a timestamp, and `window`.

pub(crate) mod make_timestamp;
pub(crate) mod patterns;
pub(crate) mod timestamp_text;
pub(crate) mod windows;
