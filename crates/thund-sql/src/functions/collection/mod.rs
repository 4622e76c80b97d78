//! Spark's collection functions: arrays and maps.

pub(crate) mod arrays;
pub(crate) mod element_at;
pub(crate) mod maps;
