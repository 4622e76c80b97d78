//! # thund-native — Þund's embedded backend
//!
//! Runs a pipeline in-process on Apache DataFusion and stores its tables as Delta Lake tables
//! (delta-rs) that any Delta reader (Spark, DuckDB, Polars, python `deltalake`) can open. No
//! JVM, no server: a run starts in milliseconds.
//!
//! ```text
//!  PreparedRun (validated, planned, checked by knut-thund)
//!        │ backend: storage, run lock, event log; a thread + Tokio runtime
//!        ▼
//!  run: stages in order, the datasets of a stage concurrently; each flow (a flow::FlowJob) to
//!       its concern:
//!     ├─ views:      registered in the session (inlined into readers; checked where read)
//!     ├─ refresh:    materialized view — unchanged inputs → IDLE (freshness); an aggregate of
//!     │              an append-only table → merge only new rows (incremental); else recompute
//!     │              → one Overwrite commit (table, write: a Parquet writer per partition)
//!     └─ streaming:  streaming table / sink — only new input (sources) → one Append commit
//!                    carrying the batch number, exactly once across crashes (checkpoint)
//!  queries: the front-end's AST ─engine::plan_query→ DataFusion LogicalPlan (file sources and
//!           STREAM reads replaced by registered tables, LATERAL VIEWs by generator items (and a
//!           GROUP BY window(…) by one: time_windows), lateral column aliases resolved, a
//!           string function's arguments marked for Spark's cast to text (text_arguments),
//!           datafusion-spark functions, Spark's spellings rewritten by calls, the rest in
//!           functions, regexp, datetime, timestamps, json, arithmetic, sums, modes, rounding and strings,
//!           higher-order functions in lambdas, ANSI intervals in interval_literals,
//!           interval_arithmetic and interval_aggregates, DataSketches in sketches) ─fidelity→ Spark's types and
//!           answers in the pipeline's ANSI mode (the session's; casts, arithmetic, indexes),
//!           generators planned as Unnest steps, or a refusal
//!  events ─▶ RunHandle channel + event_log (<storage>/event_log, a Delta table)
//!  every key under the storage root comes from storage::Storage
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

mod aes;
mod approx_percentile;
mod arithmetic;
mod arrays;
mod backend;
mod binary;
mod bitmaps;
mod calls;
mod casts;
mod conv;
mod csv;
mod datetime;
mod decimals;
mod engine;
mod error;
pub mod event_log;
mod expect;
mod failpoint;
mod fidelity;
mod flow;
mod format_number;
mod freshness;
mod functions;
mod generators;
mod incremental;
mod interval_aggregates;
mod interval_arithmetic;
mod interval_literals;
mod intervals;
mod json;
mod lambdas;
mod lateral;
mod maps;
mod modes;
mod moments;
mod murmur3;
mod names;
mod numbers;
mod percentiles;
mod query;
mod refresh;
mod regexp;
mod resolution;
mod rounding;
mod run;
mod session;
mod set_order;
mod shapes;
mod sketches;
mod storage;
mod streaming;
mod string_literals;
mod strings;
mod sums;
mod table;
mod text_arguments;
mod time_windows;
mod timestamp_text;
mod timestamps;
mod types;
mod value_text;
mod variant;
mod views;
mod write;
mod xpath;

pub use backend::{lock_run, HeldRunLock, NativeBackend, NativeOptions, BACKEND_NAME};
pub use engine::EngineOptions;
pub use error::NativeError;
pub use query::{query, table_summary, QueryResult};
pub use types::spark_type_name;
