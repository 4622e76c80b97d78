//! # knut-pipelines — Spark Declarative Pipelines dataflow graphs and their Spark Connect client
//!
//! Spark Declarative Pipelines (SDP) runs a pipeline in four protocol steps over Spark Connect:
//! `CreateDataflowGraph`, one `DefineOutput` per dataset, one `DefineFlow` per flow, and
//! `StartRun`, whose server stream carries the run's events. This crate holds the model of that
//! graph ([`DataflowGraph`]): the wire-independent shape of what is sent, plus the checks that a
//! server would otherwise only report half-way through a run ([`DataflowGraph::validate`]).
//!
//! ```text
//!   knut_thund::ir::Pipeline ──to_sdp()──▶ DataflowGraph ──validate()──▶ (gRPC client: not yet built)
//!                                            ├─ outputs: Output { name, OutputType, TableDetails, SinkDetails }
//!                                            ├─ flows:   Flow { name, target, FlowDetails }
//!                                            └─ sql_elements: SqlGraphElements (persistent views)
//! ```
//!
//! The model deliberately mirrors the protocol's names (`OutputType::Table` is what the IR calls a
//! streaming table; a persistent view has no output type and travels as SQL graph elements), so
//! a gRPC conversion is a field-by-field copy. The live Spark Connect client is not part of this
//! crate yet (the `spark` feature is reserved for it); lowering and validation need no network
//! and no protobuf.
//!
//! ```
//! use knut_pipelines::{DataflowGraph, Output, OutputType, Flow, FlowDetails, Relation};
//! let mut g = DataflowGraph::new("spark_catalog", "default");
//! g.outputs.push(Output::new("spark_catalog.default.t", OutputType::MaterializedView));
//! g.flows.push(Flow::new("spark_catalog.default.t", "spark_catalog.default.t",
//!     FlowDetails::Relation(Relation::Sql { query: "SELECT 1 AS x".into() })));
//! assert!(g.validate().is_ok());
//! ```
#![warn(missing_docs)]

#[cfg(feature = "spark")]
mod client;
#[cfg(feature = "spark")]
mod convert;
mod graph;
#[cfg(feature = "spark")]
pub mod proto;
pub mod versions;

#[cfg(feature = "spark")]
pub use client::{
    ClientError, ClientOptions, ConnectUrl, PipelineEvent, PipelineEventSink, PipelineRun, PipelinesClient,
    ServerError, DEFAULT_PORT,
};

pub use graph::{
    AutoCdcDetails, DataflowGraph, Flow, FlowDetails, GraphError, Output, OutputType, Relation, ScdType, SinkDetails,
    SourceCodeLocation, SqlGraphElements, TableDetails,
};
