//! # knut-thund — the core of Þund
//!
//! Þund runs declarative data pipelines written in the Spark Declarative Pipelines (SDP) SQL
//! dialect and Python API. This crate turns a project folder into a checked, planned run and defines the
//! contract every execution backend implements. It holds no engine: it builds in seconds, and
//! the DataFusion backend (`thund-native`) plugs in from outside. The Spark Connect backend lives
//! here as one wing ([`spark`]): its capabilities per server line and the lowering to an SDP
//! dataflow graph need no network; the live backend ([`spark::SparkBackend`]) sits behind the
//! `spark` feature.
//!
//! ```text
//!  spark-pipeline.yml + *.sql + *.py
//!        │ frontend::load        (spec, ${key} substitution, statements; each query parsed once:
//!        │                        normalized text, AST, reads with byte spans, event time; *.py
//!        ▼                        imported by the user's pyspark, each definition as a statement)
//!  ir::Pipeline                   (closed enums: datasets, flows, expectations, event time)
//!        │ prepare::prepare_for  (validate + plan(selection) + Capabilities::check, every problem
//!        ▼                        at once; then ExecBackend::connect, and the check again if
//!  prepare::PreparedRun           the backend's capabilities narrowed)
//!        │ ExecBackend::start    (native: thund-native │ spark: to_sdp() → define → run)
//!        ▼
//!  Box<dyn RunHandle> ─poll_events()─▶ RunEvent { element, phase: RunPhase, message, details }
//!                     (also to the run's EventLog, if one is attached)
//! ```
//!
//! Principal types: [`ir::Pipeline`], [`prepare::PreparedRun`], [`backend::ExecBackend`],
//! [`backend::Capabilities`], [`error::ThundError`], [`plan::Plan`]. Checks that prove something
//! works are recorded with [`functional_status`] and shown by `thund doctor`.
//!
//! ```
//! use knut_thund::backend::{Capabilities, RunOptions};
//! let dir = tempfile::tempdir().unwrap();
//! std::fs::write(dir.path().join("spark-pipeline.yml"),
//!     "name: demo\nlibraries:\n  - glob:\n      include: '*.sql'\n").unwrap();
//! std::fs::write(dir.path().join("a.sql"),
//!     "CREATE MATERIALIZED VIEW a AS SELECT 1 AS x;\nCREATE MATERIALIZED VIEW b AS SELECT x FROM a;").unwrap();
//! let p = knut_thund::frontend::load(dir.path()).unwrap();
//! let caps = Capabilities::none("example").with([knut_thund::ir::Feature::Batch]);
//! let run = knut_thund::prepare::prepare(&p, &RunOptions::default(), &caps).unwrap();
//! assert_eq!(run.plan.stages.len(), 2);
//! assert_eq!(p.to_sdp().unwrap().flows.len(), 2);
//! ```
#![warn(missing_docs)]

pub mod backend;
pub mod error;
pub mod event_time;
pub mod frontend;
pub mod ir;
pub mod plan;
pub mod prepare;
pub mod render;
pub mod spark;
pub mod spec;
pub mod sql_conf;
pub mod status;
pub mod unit_test;
pub mod validate;

pub use status::functional_status;
