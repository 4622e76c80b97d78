//! The registry: every Spark function this crate adds to DataFusion's and `datafusion-spark`'s,
//! grouped by Spark's own categories (a folder each, as Spark's function reference and
//! `datafusion-spark` group them). A category's modules depend on the leaf helpers
//! (`crate::columnar`, `crate::types`) and on other categories' kernels, never on this registry.

pub(crate) mod aggregate;
pub(crate) mod binary;
pub(crate) mod cast;
pub(crate) mod collection;
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
pub(crate) mod xml;

use datafusion::logical_expr::ScalarUDF;
use datafusion::prelude::SessionContext;

/// Registers every category's functions with `ctx`, for a session in `catalog.database`.
pub(crate) fn register(ctx: &SessionContext, catalog: &str, database: &str) {
    json_csv::get_json_object::register(ctx);
    misc::type_of::register(ctx);
    collection::element_at::register(ctx);
    for f in regexp::RegexpFunction::all() {
        ctx.register_udf(ScalarUDF::from(f));
    }
    higher_order::register(ctx);
    datetime::patterns::register(ctx);
    datetime::make_timestamp::register(ctx);
    aggregate::mode::register(ctx);
    aggregate::moments::register(ctx);
    aggregate::bitmaps::register(ctx);
    aggregate::sketches::register(ctx);
    misc::aes::register(ctx);
    math::conv::register(ctx);
    hash::register(ctx);
    interval::make::register(ctx);
    interval::literals::register(ctx);
    aggregate::percentiles::register(ctx);
    aggregate::approx_percentile::register(ctx);
    binary::register(ctx);
    string::number_format::register(ctx);
    string::format_number::register(ctx);
    collection::arrays::register(ctx);
    collection::maps::register(ctx);
    math::rounding::register(ctx);
    string::register(ctx);
    string::text_arguments::register(ctx);
    math::arithmetic::register(ctx);
    json_csv::json::register(ctx);
    json_csv::csv::register(ctx);
    aggregate::collect_set::register(ctx);
    datetime::windows::register(ctx);
    variant::register(ctx);
    xml::register(ctx);
    generator::register(ctx);
    // Last: it wraps functions registered before it.
    interval::arithmetic::register(ctx);
    interval::aggregates::register(ctx);
    generator::range::register(ctx);
    misc::session::register(ctx, catalog, database);
}
