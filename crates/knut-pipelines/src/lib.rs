//! # knut-pipelines — Spark Declarative Pipelines dataflow graphs and their Spark Connect client
//!
//! Spark Declarative Pipelines (SDP) runs a pipeline in four protocol steps over Spark Connect:
//! `CreateDataflowGraph`, one `DefineOutput` per dataset, one `DefineFlow` per flow, and
//! `StartRun`, whose server stream carries the run's events. This crate holds the model of that
//! graph ([`DataflowGraph`]): the wire-independent shape of what is sent, plus the checks that a
//! server would otherwise only report half-way through a run ([`DataflowGraph::validate`]).
//!
//! ```text
//!   knut_thund::ir::Pipeline ──to_sdp()──▶ DataflowGraph ──validate()──▶ PipelinesClient (feature `spark`)
//!                                            ├─ outputs: Output { name, OutputType, … }      define_graph: CreateDataflowGraph,
//!                                            ├─ flows:   Flow { name, target, FlowDetails }    DefineOutput*, DefineFlow*,
//!                                            └─ sql_elements (persistent views)             DefineSqlGraphElements*
//!                                                                                         start_run ─▶ PipelineEventSink
//!                                                                                         sql ─▶ Arrow RecordBatches
//! ```
//!
//! The model deliberately mirrors the protocol's names (`OutputType::Table` is what the IR calls a
//! streaming table; a persistent view has no output type and travels as SQL graph elements), so
//! the gRPC conversion (`convert.rs`) is a field-by-field copy.
//!
//! The live client ([`PipelinesClient`], feature `spark`) speaks our own subset of the Spark
//! Connect protocol (`proto/*.proto`, compiled by protox at build time — no system `protoc`;
//! generated code stays in [`proto`]). The subset is checked field by field against the pyspark
//! wheel of every targeted Spark version by `tests/proto_drift.rs`. Connection strings follow
//! Spark's `sc://host:port/;token=…;use_ssl=true;user_id=…;session_id=…`; a token implies TLS
//! (rustls) and is never shown in errors or logs. Server failures become [`ClientError::Server`]
//! with Spark's error class and SQLSTATE taken from the status details. Without the feature,
//! lowering and validation need no network and no protobuf.
//!
//! The same feature serves the other side of the protocol for Python definition files:
//! [`registration::Loopback`] is a Spark Connect server on 127.0.0.1 that pyspark's pipeline code
//! registers a project's Python datasets with (a flow's DataFrame arrives as a serialized
//! relation, [`Relation::Connect`], sent to Spark unchanged), and [`dataframe::relation_sql`]
//! translates such a relation to one Spark SQL query for the embedded engine, refusing what it
//! does not translate.
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
#[cfg(feature = "spark")]
pub mod dataframe;
mod graph;
#[cfg(feature = "spark")]
pub mod proto;
#[cfg(feature = "spark")]
pub mod registration;
pub mod versions;

#[cfg(feature = "spark")]
pub use client::{
    ClientError, ClientOptions, ConnectUrl, PipelineEvent, PipelineEventSink, PipelineRun, PipelinesClient,
    ServerError, DEFAULT_PORT,
};

/// A Spark Connect URL as typed, with the value of every `token=` parameter (in any case)
/// replaced: what errors, logs and `Debug` show of a URL.
pub fn redact_url(url: &str) -> String {
    url.split(';')
        .map(|part| match part.split_once('=') {
            Some((k, _)) if k.trim().eq_ignore_ascii_case("token") => format!("{k}=<redacted>"),
            _ => part.to_string(),
        })
        .collect::<Vec<_>>()
        .join(";")
}

pub use graph::{
    AutoCdcDetails, DataflowGraph, Flow, FlowDetails, GraphError, Output, OutputType, Relation, ScdType, SinkDetails,
    SourceCodeLocation, SqlGraphElements, TableDetails,
};

/// Days since 1970-01-01 as `YYYY-MM-DD` (proleptic Gregorian, as Spark's DATE), by Howard
/// Hinnant's days-to-civil algorithm.
pub fn civil_date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod redact_tests {
    #[test]
    fn tokens_are_redacted_in_any_case() {
        assert_eq!(super::redact_url("sc://h:1/;Token=s3cret;user_id=a"), "sc://h:1/;Token=<redacted>;user_id=a");
        assert_eq!(super::redact_url("sc://h:1/;token=s3cret"), "sc://h:1/;token=<redacted>");
        assert_eq!(super::redact_url("sc://h:1"), "sc://h:1");
    }
}
