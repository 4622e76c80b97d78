//! Spark's aggregate functions DataFusion lacks or answers otherwise, with the DataSketches ones.

pub(crate) mod approx_percentile;
pub(crate) mod bitmaps;
pub(crate) mod collect_set;
pub(crate) mod mode;
pub(crate) mod moments;
pub(crate) mod percentiles;
pub(crate) mod sketches;
pub(crate) mod sum;
