//! # thund-native — Þund's embedded backend
//!
//! Runs a pipeline in-process on Apache DataFusion and stores its tables as Delta Lake tables
//! (delta-rs) that any Delta reader (Spark, DuckDB, Polars, python `deltalake`) can open. No
//! JVM, no server: a run starts in milliseconds. Spark SQL's semantics on DataFusion — its
//! functions, types, names and refusals — are the crate `thund-sql`; this crate is what a
//! pipeline backend is around them.
//!
//! ```text
//!  PreparedRun (validated, planned, checked by knut-thund)
//!        │ backend: storage, run lock, event log; a thread + Tokio runtime
//!        ▼
//!  run: stages in order, the datasets of a stage concurrently; each flow (a flow::FlowJob) to
//!       its concern:
//!     ├─ views:      registered in the session (inlined into readers; checked where read)
//!     ├─ refresh/:   materialized view — unchanged inputs → IDLE (freshness); an aggregate of
//!     │              an append-only table → merge only new rows (incremental); else recompute
//!     │              → one Overwrite commit (delta::table, delta::write: a Parquet writer per
//!     │              partition)
//!     └─ streaming/: streaming table / sink — only new input (sources) → one Append commit
//!                    carrying the batch number, exactly once across crashes (checkpoint)
//!  queries: the front-end's AST ─engine→ file sources and STREAM reads replaced by registered
//!           tables ─thund_sql::plan_query→ a DataFusion LogicalPlan with Spark's semantics in
//!           the pipeline's SQL modes, or a refusal at the query's line
//!  expectations (expect): checked in the same pass as the write
//!  events ─▶ RunHandle channel + event_log (<storage>/event_log, a Delta table)
//!  every key under the storage root comes from delta::storage::Storage
//! ```
//!
//! Atomicity: a materialized view is replaced by a single Delta commit, so a reader sees the old
//! or the new version and a failed flow leaves the previous version current. A failed flow does
//! not stop independent ones; its downstream is SKIPPED.
//!
//! The public surface is small: [`NativeBackend`] (an `ExecBackend`), [`query`] for `thund
//! query`, and [`event_log`] (written for runs of any backend; read by `thund events`, `thund
//! query` and `thund ui`). What the backend cannot run is refused by `knut_thund::prepare` from
//! [`NativeBackend`]'s capabilities before anything runs.
//!
//! ```no_run
//! use knut_thund::backend::ExecBackend;
//! let pipeline = knut_thund::frontend::load(std::path::Path::new("my_project")).unwrap();
//! let mut run = thund_native::NativeBackend::new().run(&pipeline).unwrap();
//! while let Some(events) = run.poll_events() {
//!     for e in events { println!("{}", e.message); }
//! }
//! let summary = run.finish().unwrap();
//! assert!(!summary.failed());
//! ```
#![warn(missing_docs)]

mod backend;
mod delta;
mod engine;
mod error;
pub mod event_log;
mod expect;
mod failpoint;
mod flow;
mod query;
mod refresh;
mod run;
mod streaming;
mod views;

pub use backend::{lock_run, HeldRunLock, NativeBackend, NativeOptions, BACKEND_NAME};
pub use datafusion::parquet;
pub use engine::memory::{default_memory_limit, machine_memory, DEFAULT_SHARE_PERCENT};
pub use engine::preflight::preflight;
pub use engine::EngineOptions;
pub use error::NativeError;
pub use query::{query, table_summary, QueryResult};
pub use thund_sql::{is_variant, spark_simple_string, spark_type_name, variant_json, SPARK_FUNCTIONS};
