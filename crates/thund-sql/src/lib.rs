//! # thund-sql — Spark SQL's semantics on Apache DataFusion
//!
//! The answers Spark gives, on DataFusion: its functions (those DataFusion and
//! `datafusion-spark` lack, and those they answer otherwise), its types and casts, its names
//! for unnamed columns, its case-insensitive name resolution, its ANSI mode both ways, and a
//! refusal — an error at the query's line that sends the user to the Spark backend — wherever
//! the answer would still differ. A different answer is a wrong table without an error; a
//! refusal is honest. Everything here is judged by differential tests against a real Spark
//! server (`thund-cli/tests/spark_functions.rs`, Spark's own documented examples, and
//! `spark_queries.rs`, a query corpus in both modes).
//!
//! ```text
//!  SessionConfig ─spark_config(modes)→ ─spark_state_builder→ (+ the backend's planner, pool)
//!                ─spark_context→ SessionContext with every function of `functions` registered
//!
//!  sqlparser AST (parsed once, by knut-thund's front-end; tables registered by the caller)
//!     ─plan_query→ analysis: NATURAL joins' keys (each side planned alone), then QUERY_RULES
//!                  on the tree (literals, predicate operands, time windows, grouping sets,
//!                  named windows, shapes, names, Spark's spellings, lateral views, datetime
//!                  types, text arguments)
//!                  → DataFusion's planner, names resolved ignoring case (resolution)
//!                  → plan rules (fidelity: Spark's types and answers, or a refusal)
//!     ─▶ LogicalPlan, or SqlError::Plan with the reason
//! ```
//!
//! - [`modes`]: the session's Spark SQL modes (`spark.sql.ansi.enabled`,
//!   `spark.sql.parser.escapedStringLiterals`), written into the session once and read back
//!   from it by every rule, function and planner that depends on them.
//! - `analysis`: the ordered, named rules (`analysis::QUERY_RULES`, `analysis::plan_rules`).
//! - `physical`: DataFusion's physical optimizer rules, each skipped for the plans it would
//!   answer wrongly (lambdas; two columns of one name, as a self-join has).
//! - `functions`: the registry and a folder per Spark function category (string, regexp,
//!   datetime, interval, math, decimal, binary, hash, collection, higher-order, generator,
//!   aggregate with the sketches, JSON/CSV, variant, xml, cast, misc). Helpers every category
//!   uses sit below them in `columnar` and `types`, so imports run downhill.
//!
//! This crate depends on DataFusion, `datafusion-spark` and sqlparser, and on `knut-thund` only
//! for the pipeline's settings and Spark's window arithmetic — never on delta-rs, storage or
//! streaming (`tests/layering.rs` fails otherwise).
//!
//! ```
//! use knut_thund::frontend::{analyze_query, NameContext};
//! use knut_thund::ir::SourceLocation;
//!
//! let config = thund_sql::spark_config(datafusion::prelude::SessionConfig::new(), thund_sql::SqlModes::default());
//! let runtime = std::sync::Arc::new(datafusion::execution::runtime_env::RuntimeEnv::default());
//! let ctx = thund_sql::spark_context(thund_sql::spark_state_builder(config, runtime).build());
//! let names = NameContext { catalog: "spark_catalog".into(), database: "default".into(), databricks: false };
//! let query = analyze_query("SELECT 3 / 2 AS q", &SourceLocation::new("q.sql", 1, 1), &names).unwrap();
//! let ast = query.ast.get().cloned().unwrap();
//! let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
//! let plan = rt.block_on(thund_sql::plan_query(&ctx, ast)).unwrap();
//! // Spark's `/` of two integers is a DOUBLE (DataFusion's would be 1, an integer).
//! assert_eq!(plan.schema().field(0).data_type(), &arrow::datatypes::DataType::Float64);
//! ```
#![warn(missing_docs)]

mod analysis;
mod columnar;
mod declare;
mod error;
mod functions;
pub mod modes;
mod physical;
mod plan;
mod session;
mod syntax;
mod types;

pub use error::{in_sparks_words, Result, SqlError};
pub use modes::SqlModes;
pub use plan::{plan_expr, plan_query, unknown_functions, FunctionKnown, SPARK_FUNCTIONS};
pub use session::{spark_config, spark_context, spark_state_builder};
pub use types::{parse_ddl_schema, parse_type, spark_simple_string, spark_timestamp, spark_type_name};

/// The analysis rules' names, in the order they run (`analysis`): those on a query's syntax
/// tree, those on its plan, then those the session's analyzer runs after DataFusion's.
pub fn analysis_rules() -> Vec<String> {
    analysis::rule_names()
}

/// Whether `dt` is a VARIANT (its Arrow form: a struct of `value` and `metadata` binaries).
pub fn is_variant(dt: &arrow::datatypes::DataType) -> bool {
    functions::variant::is_variant(dt)
}

/// Each VARIANT of `a` as its JSON text, as Spark shows it (`to_json(v)`), NULL for NULL.
pub fn variant_json(a: &arrow::array::ArrayRef) -> Result<arrow::array::ArrayRef> {
    functions::variant::json_texts(a).map_err(|e| SqlError::Plan(e.to_string()))
}

/// Whether a VARIANT is anywhere in `dt` (Delta stores it with a table feature the native
/// writer does not write).
pub fn holds_variant(dt: &arrow::datatypes::DataType) -> bool {
    functions::variant::holds_variant(dt)
}
