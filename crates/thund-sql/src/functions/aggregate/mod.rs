//! Spark's aggregate functions DataFusion lacks or answers otherwise: `percentile_approx` on
//! Spark's Greenwald–Khanna summary (`approx_percentile`), the exact percentiles
//! (`percentiles`), `mode`, the variances, standard deviations, `skewness` and `kurtosis` in
//! Spark's formulas (`moments`), the bitmap aggregates
//! (`bitmaps`), `collect_set` in Spark's order (`collect_set`), the ANSI `sum` of BIGINTs
//! (`sum`), the `sum` of wide DECIMALs whose overflow is NULL or an error (`decimal_sum`) and
//! their `avg` (`decimal_avg`), `min` /
//! `max` of floating point in Spark's order (`extremes`), `sum` and `avg` of floating point
//! with Spark's one NaN (`float_totals`), the DataSketches functions
//! (`sketches`), and the spellings of DataFusion's own (`spellings`, with `grouping_id` from the
//! query's GROUP BY).

mod answered;
mod approx_distinct;
pub(crate) mod approx_percentile;
pub(crate) mod bitmaps;
pub(crate) mod collect_set;
pub(crate) mod decimal_avg;
pub(crate) mod decimal_sum;
pub(crate) mod extremes;
pub(crate) mod filtered;
pub(crate) mod float_totals;
pub(crate) mod mode;
pub(crate) mod moments;
pub(crate) mod nullable;
pub(crate) mod percentiles;
pub(crate) mod sketches;
pub(crate) mod spellings;
pub(crate) mod sum;

use crate::declare::Function;

/// Registers the category's functions with `ctx`.
pub(crate) fn register(ctx: &datafusion::prelude::SessionContext) {
    mode::register(ctx);
    moments::register(ctx);
    bitmaps::register(ctx);
    sketches::register(ctx);
    percentiles::register(ctx);
    approx_percentile::register(ctx);
    collect_set::register(ctx);
    approx_distinct::register(ctx);
}

/// Spark's aggregate functions, as they run here.
pub(crate) const FUNCTIONS: &[Function] = &[
    // `count(DISTINCT a, b)`: DataFusion's DISTINCT takes one argument.
    Function::builtin("count").parse(spellings::distinct_tuples),
    Function::udf("approx_count_distinct"),
    Function::udf("percentile_approx"),
    Function::udf("approx_percentile"),
    Function::udf("percentile"),
    Function::udf("percentile_disc"),
    // `mode() WITHIN GROUP (ORDER BY x)` is `mode(x, true, ascending)`.
    Function::udf("mode").parse(spellings::mode_within_group),
    Function::udf("var_pop"),
    Function::udf("var_samp"),
    Function::udf("stddev_pop"),
    Function::udf("stddev_samp"),
    Function::udf("stddev"),
    Function::udf("skewness"),
    Function::udf("kurtosis"),
    Function::udf("bitmap_construct_agg"),
    Function::udf("bitmap_or_agg"),
    Function::udf("bitmap_and_agg"),
    // In the order Spark's hash set gives its elements (`collect_set`).
    Function::builtin("collect_set").templates(&[(1, "__thund_spark_set_order(collect_set(__a1))")]),
    Function::udf("__thund_spark_set_order"),
    // Spark's `grouping` is a TINYINT; `grouping_id` is filled in from the GROUP BY
    // (`spellings::fill_grouping_id`, a rule on the query).
    Function::builtin("grouping").templates(&[(1, "CAST(grouping(__a1) AS TINYINT)")]),
    Function::spelled("grouping_id", &[]),
    Function::spelled("count_if", &[(1, "count(CASE WHEN __a1 THEN 1 END)")]),
    Function::spelled("every", &[(1, "bool_and(__a1)")]),
    Function::spelled("some", &[(1, "bool_or(__a1)")]),
    Function::spelled("any", &[(1, "bool_or(__a1)")]),
    Function::spelled("std", &[(1, "stddev_samp(__a1)")]),
    Function::spelled("variance", &[(1, "var_samp(__a1)")]),
    // NULL-skipping when a second argument says so (`IGNORE NULLS`).
    Function::spelled("first", &[(1, "first_value(__a1)")]).parse(spellings::ignore_nulls),
    Function::spelled("last", &[(1, "last_value(__a1)")]).parse(spellings::ignore_nulls),
    Function::builtin("first_value").parse(spellings::ignore_nulls),
    Function::builtin("last_value").parse(spellings::ignore_nulls),
    // Spark's is the group's first value, NULL included (DataFusion's skips NULLs).
    Function::builtin("any_value").parse(spellings::any_value),
    // The value at the greatest (least) ordering value; rows whose ordering value is NULL never
    // count, so a group of only those gives NULL, as Spark's.
    Function::spelled(
        "max_by",
        &[(2, "first_value(CASE WHEN __a2 IS NOT NULL THEN __a1 END ORDER BY __a2 DESC NULLS LAST)")],
    ),
    Function::spelled(
        "min_by",
        &[(2, "first_value(CASE WHEN __a2 IS NOT NULL THEN __a1 END ORDER BY __a2 ASC NULLS LAST)")],
    ),
    Function::spelled("listagg", &[]).parse(spellings::listagg),
    Function::builtin("string_agg").parse(spellings::listagg),
    Function::udf("hll_sketch_agg"),
    Function::udf("hll_sketch_estimate"),
    Function::udf("hll_union"),
    Function::udf("hll_union_agg"),
    Function::udf("kll_sketch_agg_bigint"),
    Function::udf("kll_sketch_agg_double"),
    Function::udf("kll_sketch_agg_float"),
    Function::udf("kll_merge_agg_bigint"),
    Function::udf("kll_merge_agg_double"),
    Function::udf("kll_merge_agg_float"),
    Function::udf("kll_sketch_get_n_bigint"),
    Function::udf("kll_sketch_get_n_double"),
    Function::udf("kll_sketch_get_n_float"),
    Function::udf("kll_sketch_get_quantile_bigint"),
    Function::udf("kll_sketch_get_quantile_double"),
    Function::udf("kll_sketch_get_quantile_float"),
    Function::udf("kll_sketch_get_rank_bigint"),
    Function::udf("kll_sketch_get_rank_double"),
    Function::udf("kll_sketch_get_rank_float"),
    Function::udf("kll_sketch_merge_bigint"),
    Function::udf("kll_sketch_merge_double"),
    Function::udf("kll_sketch_merge_float"),
    Function::udf("kll_sketch_to_string_bigint"),
    Function::udf("kll_sketch_to_string_double"),
    Function::udf("kll_sketch_to_string_float"),
    Function::udf("theta_sketch_agg"),
    Function::udf("theta_sketch_estimate"),
    Function::udf("theta_union"),
    Function::udf("theta_union_agg"),
    Function::udf("theta_intersection"),
    Function::udf("theta_intersection_agg"),
    Function::udf("theta_difference"),
];
