//! # knut-thund — the core of Þund
//!
//! Þund runs declarative data pipelines written in the Spark Declarative Pipelines (SDP) SQL
//! dialect. This crate turns a project folder into a checked, planned pipeline and defines the
//! contract every execution backend implements. It holds no engine: it builds in seconds, and
//! the DataFusion backend (`thund-native`) plugs in from outside. The Spark Connect backend
//! ([`spark::SparkBackend`], feature `spark`) is a thin adaptor over `knut-pipelines`: lower with
//! [`ir::Pipeline::to_sdp`], define, start, fold the server's event sentences into [`backend::RunEvent`]s.
//!
//! ```text
//!  spark-pipeline.yml + *.sql
//!        │ frontend::load         (spec discovery, ${key} substitution, statements, reads)
//!        ▼
//!  ir::Pipeline                    (closed enums: datasets, flows, expectations, event time)
//!        │ validate()             (every problem at once, file:line + hint)
//!        │ plan::plan(selection)  (topological stages, --refresh / --full-refresh)
//!        ├── to_sdp() ──▶ knut_pipelines::DataflowGraph ──▶ spark::SparkBackend (feature `spark`)
//!        ▼
//!  backend::ExecBackend::check()  (refuse what the backend lacks, all gaps at once)
//!        │ run_with()
//!        ▼
//!  RunHandle ─poll_events()─▶ RunEvent { element, phase: RunPhase, message, details }
//! ```
//!
//! Principal types: [`ir::Pipeline`], [`backend::ExecBackend`], [`backend::Capabilities`],
//! [`error::ThundError`], [`plan::Plan`]. Checks that prove something works are recorded with
//! [`functional_status`] and shown by `thund doctor`.
//!
//! ```
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("spark-pipeline.yml"),
//!     "name: demo\nlibraries:\n  - glob:\n      include: '*.sql'\n").unwrap();
//! std::fs::write(dir.path().join("a.sql"),
//!     "CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;\nCREATE MATERIALIZED VIEW b AS SELECT x FROM a;").unwrap();
//! let p = knut_thund::frontend::load(dir.path()).unwrap();
//! p.validate().unwrap();
//! let plan = knut_thund::plan::plan(&p, &Default::default()).unwrap();
//! assert_eq!(plan.stages.len(), 2);
//! assert_eq!(p.to_sdp().flows.len(), 2);
//! ```
#![warn(missing_docs)]

pub mod backend;
pub mod error;
pub mod frontend;
pub mod ir;
pub mod plan;
pub mod render;
pub mod sdp;
#[cfg(feature = "spark")]
pub mod spark;
pub mod spec;
pub mod status;
pub mod validate;

pub use status::functional_status;
