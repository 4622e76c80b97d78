//! # thund-native — Þund's embedded backend
//!
//! Runs a pipeline in-process on Apache DataFusion and stores its tables as Delta Lake tables
//! (delta-rs) that any Delta reader (Spark, DuckDB, Polars, python `deltalake`) can open. No
//! JVM, no server: a run starts in milliseconds.
//!
//! ```text
//!  ir::Pipeline ─check/validate/plan─▶ Plan (stages, selection)
//!        │
//!        ▼  thread + Tokio runtime (run.rs)
//!  for each stage, datasets concurrently (buffer_unordered):
//!     query ─engine::plan_query─▶ LogicalPlan   (sqlparser AST → DataFusion planner,
//!        │                                      datafusion-spark functions, file sources)
//!        ├─ view:              registered as a DataFusion view (inlined into readers)
//!        ├─ materialized view: unchanged inputs → IDLE (freshness.rs); an aggregate of an
//!        │                     append-only table → merge only new rows (incremental.rs);
//!        │                     else conform (declared schema, Delta types)
//!        │                     → one Overwrite commit (streams the plan; a writer per
//!        │                       partition, write.rs)
//!        └─ streaming table:   only new input (stream.rs checkpoints) → one Append commit
//!                              carrying the batch number, exactly once across crashes
//!  events ─▶ channel (RunHandle::poll_events) + <storage>/events/<run>.jsonl
//! ```
//!
//! Atomicity: a materialized view is replaced by a single Delta commit, so a reader sees the old
//! or the new version and a failed flow leaves the previous version current. A failed flow does
//! not stop independent ones; its downstream is SKIPPED. Storage layout: [`storage`].
//!
//! What the backend cannot run yet (event time, CDC) is
//! refused by `ExecBackend::check` before anything runs — see [`NativeBackend`]'s capabilities.
//!
//! ```no_run
//! use knut_thund::backend::{ExecBackend, RunHandle};
//! let pipeline = knut_thund::frontend::load(std::path::Path::new("my_project")).unwrap();
//! let mut run = thund_native::NativeBackend::new().run(&pipeline).unwrap();
//! while let Some(events) = run.poll_events() {
//!     for e in events { println!("{}", e.message); }
//! }
//! let summary = run.finish().unwrap();
//! assert!(!summary.failed());
//! ```
#![warn(missing_docs)]

pub mod engine;
pub mod error;
pub mod expect;
pub mod freshness;
pub mod incremental;
pub mod query;
pub mod rescue;
pub mod run;
pub mod sink;
pub mod storage;
pub mod stream;
pub mod table;
pub mod types;
pub mod write;

pub use engine::EngineOptions;
pub use error::NativeError;
pub use query::{query, QueryResult};
pub use run::{NativeBackend, NativeOptions, NativeRun};
pub use storage::Storage;
