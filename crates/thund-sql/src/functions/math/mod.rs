//! Spark's math functions: its arithmetic in both modes, `conv`, rounding to decimal places.

pub(crate) mod arithmetic;
pub(crate) mod conv;
pub(crate) mod rounding;
