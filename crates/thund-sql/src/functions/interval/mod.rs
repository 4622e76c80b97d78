//! Spark's ANSI intervals: literals, arithmetic, aggregates and `make_ym_interval`/`make_interval`.

pub(crate) mod aggregates;
pub(crate) mod arithmetic;
pub(crate) mod literals;
pub(crate) mod make;
