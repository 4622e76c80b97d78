//! The registry: every Spark function this crate adds to DataFusion's and `datafusion-spark`'s,
//! grouped by Spark's own categories (a folder each, as Spark's function reference and
//! `datafusion-spark` group them). Each category declares its functions once, in its
//! `FUNCTIONS` table (`crate::declare`): how a call runs (DataFusion's builtin, the category's
//! UDF, Spark's spelling as other calls, or a refusal), its rewrite on the parse, its rewrite
//! once planned. The registry gathers the tables for the analysis rules ([`lookup`]) and
//! registers each category's UDFs ([`register`]).
//!
//! A category's modules depend on the leaf helpers (`crate::columnar`, `crate::types`,
//! `crate::syntax`, `crate::declare`) and on other categories' kernels, never on this registry.

pub(crate) mod aggregate;
pub(crate) mod binary;
pub(crate) mod cast;
pub(crate) mod collection;
pub(crate) mod conditional;
pub(crate) mod datetime;
pub(crate) mod decimal;
pub(crate) mod generator;
pub(crate) mod hash;
pub(crate) mod higher_order;
pub(crate) mod interval;
pub(crate) mod json_csv;
pub(crate) mod math;
pub(crate) mod misc;
pub(crate) mod regexp;
pub(crate) mod string;
pub(crate) mod variant;
pub(crate) mod window;
pub(crate) mod xml;

use std::collections::HashMap;
use std::sync::OnceLock;

use datafusion::prelude::SessionContext;

use crate::declare::Function;

/// Every category's table, in the order the categories register.
const CATEGORIES: [&[Function]; 19] = [
    json_csv::FUNCTIONS,
    misc::FUNCTIONS,
    collection::FUNCTIONS,
    regexp::FUNCTIONS,
    higher_order::FUNCTIONS,
    datetime::FUNCTIONS,
    aggregate::FUNCTIONS,
    math::FUNCTIONS,
    hash::FUNCTIONS,
    binary::FUNCTIONS,
    string::FUNCTIONS,
    variant::FUNCTIONS,
    xml::FUNCTIONS,
    generator::FUNCTIONS,
    interval::FUNCTIONS,
    cast::FUNCTIONS,
    conditional::FUNCTIONS,
    window::FUNCTIONS,
    decimal::FUNCTIONS,
];

/// Registers every category's functions with `ctx`, for a session in `catalog.database`.
pub(crate) fn register(ctx: &SessionContext, catalog: &str, database: &str) {
    json_csv::register(ctx);
    misc::register(ctx, catalog, database);
    collection::register(ctx);
    regexp::register(ctx);
    higher_order::register(ctx);
    datetime::register(ctx);
    aggregate::register(ctx);
    math::register(ctx);
    hash::register(ctx);
    binary::register(ctx);
    string::register(ctx);
    variant::register(ctx);
    xml::register(ctx);
    generator::register(ctx);
    // Last: it wraps functions registered before it for interval arguments.
    interval::register(ctx);
}

/// Every declared function.
pub(crate) fn all() -> impl Iterator<Item = &'static Function> {
    CATEGORIES.iter().flat_map(|table| table.iter())
}

/// The declaration of the function called `name` (lower case), if a category has one.
pub(crate) fn lookup(name: &str) -> Option<&'static Function> {
    static BY_NAME: OnceLock<HashMap<&'static str, &'static Function>> = OnceLock::new();
    BY_NAME.get_or_init(|| all().map(|f| (f.name, f)).collect()).get(name).copied()
}

#[cfg(test)]
mod tests;
