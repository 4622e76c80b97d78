//! A DataFusion session with Spark SQL's semantics: Spark's settings on the session's config,
//! `datafusion-spark`'s functions over DataFusion's defaults, ours over both (`functions`), the
//! planners and rules that give Spark's answers, and the modes of `modes`.
//!
//! A backend builds its session in three steps, adding what is its own between them (its query
//! planner, its memory pool, its catalogs): [`spark_config`] → [`spark_state_builder`] →
//! [`spark_context`].

use std::sync::Arc;

use datafusion::execution::runtime_env::RuntimeEnv;
use datafusion::execution::{SessionState, SessionStateBuilder};
use datafusion::prelude::{SessionConfig, SessionContext};
use datafusion_spark::SessionStateBuilderSpark;

use crate::modes::SqlModes;

/// `config` with Spark's settings and `modes`.
pub fn spark_config(mut config: SessionConfig, modes: SqlModes) -> SessionConfig {
    modes.write(config.options_mut());
    let options = config.options_mut();
    // Spark sorts NULL first in ascending order and last in descending order (DataFusion: the
    // other way around, as Postgres).
    options.sql_parser.default_null_ordering = "nulls_min".to_string();
    // Spark's session time zone here is UTC; timestamps are instants shown in UTC.
    options.execution.time_zone = Some("UTC".to_string());
    // Spark's `1.50` is a DECIMAL(3,2), not a DOUBLE (`1.5e3` is one: see `analysis::spellings`).
    options.sql_parser.parse_float_as_decimal = true;
    // Spark keeps a subquery's ORDER BY: a LIMIT above it takes the first rows in that order,
    // and the rows come out in it (DataFusion drops a subquery's sort that has no LIMIT).
    options.sql_parser.enable_subquery_sort_elimination = false;
    config
}

/// A session state builder over `config` (made by [`spark_config`]) with DataFusion's default
/// features, `datafusion-spark`'s, and Spark's planners and rules.
pub fn spark_state_builder(config: SessionConfig, runtime: Arc<RuntimeEnv>) -> SessionStateBuilder {
    let ansi = SqlModes::of(config.options()).ansi;
    let mut builder = SessionStateBuilder::new()
        .with_config(config)
        .with_runtime_env(runtime)
        .with_default_features()
        .with_spark_features()
        .with_optimizer_rules(crate::analysis::global_filters::optimizer_rules())
        .with_physical_optimizer_rules(crate::physical::physical_optimizer_rules())
        // PIVOT and UNPIVOT, which DataFusion's planner does not read.
        .with_relation_planners(vec![Arc::new(crate::analysis::pivots::PivotPlanner)]);
    for rule in crate::analysis::session_analyzer_rules() {
        builder = builder.with_analyzer_rule(rule);
    }
    // Spark's interval operators, before the built-in planners (whose `EXTRACT` refuses them),
    // and the DECIMAL products DataFusion cannot type; before them, Spark's casts of a text
    // operand.
    let planners = builder.expr_planners().get_or_insert_with(Vec::new);
    planners.insert(0, Arc::new(crate::functions::interval::arithmetic::IntervalPlanner { ansi }));
    planners.insert(0, Arc::new(crate::functions::math::decimals::DecimalProductPlanner { ansi }));
    planners.insert(0, Arc::new(crate::analysis::text_operands::TextOperandPlanner { ansi }));
    builder
}

/// A context over `state` (built from [`spark_state_builder`]) with Spark's functions, for a
/// session whose current catalog and database are the config's defaults.
pub fn spark_context(state: SessionState) -> SessionContext {
    let catalog = state.config().options().catalog.default_catalog.clone();
    let database = state.config().options().catalog.default_schema.clone();
    let ctx = SessionContext::new_with_state(state);
    crate::functions::register(&ctx, &catalog, &database);
    ctx
}

/// A Spark session in `spark_catalog.default` with `modes`, for tests.
#[cfg(test)]
pub(crate) fn test_context(modes: SqlModes) -> SessionContext {
    let config = SessionConfig::new()
        .with_default_catalog_and_schema("spark_catalog", "default")
        .with_create_default_catalog_and_schema(true);
    let state = spark_state_builder(spark_config(config, modes), Arc::new(RuntimeEnv::default())).build();
    spark_context(state)
}
