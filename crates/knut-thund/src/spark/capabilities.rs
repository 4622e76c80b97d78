//! What the Spark Connect backend can run, per server line, from `knut_pipelines::versions` (the
//! per-version facts, kept as data).

use knut_pipelines::versions::{facts_for, SERVER_FACTS};

use crate::backend::{Capabilities, TableFormats};
use crate::ir::{Feature, OutputMode};

/// Name of the Spark Connect backend.
pub const BACKEND_NAME: &str = "spark-connect-sdp";

/// Table formats whose tables Spark appends to from several flows and MERGEs into. Spark's
/// default, parquet, is not one of them.
const TRANSACTIONAL_FORMATS: [&str; 2] = ["delta", "iceberg"];

/// What the backend can run on a server of `version` (e.g. `4.1.4`). `None` for servers without
/// the pipelines service (before 4.1).
pub fn capabilities(version: &str) -> Option<Capabilities> {
    let facts = facts_for(version)?;
    let mut caps = Capabilities::none(format!("{BACKEND_NAME} (Spark {version})")).with([
        Feature::Batch,
        Feature::Streaming,
        // `WATERMARK … DELAY OF` with `window(…)` in append mode: every line since 4.1 runs it, and
        // `conformance/event-time` checks its tables against the native backend's.
        Feature::EventTime,
        // Open-source SDP has no expectations (`facts.expectations` is false on every line):
        // `to_sdp` enforces them in the flow's query instead (`DROP ROW` filters, `FAIL UPDATE`
        // raises), without pass and fail counts.
        Feature::Expectations,
        // Measured on 4.1.4 and 4.3.0: a streaming table's `pipelines.outputMode` is ignored and its flow
        // runs in append mode (an aggregation without watermark fails as append would).
        Feature::OutputMode(OutputMode::Append),
        Feature::FileSources,
        // Spark keeps both sides in state and matches rows across batches.
        Feature::StreamJoins,
        // The view's query is one more relation of the reading flow's streaming query.
        Feature::StatefulStreamingViews,
        // The relation a Python query function built is sent as it is.
        Feature::DataFrames,
        // The server applies every setting itself.
        Feature::SqlConf,
    ]);
    // What depends on the server's line (`knut_pipelines::versions`).
    for (has, feature) in [
        (facts.auto_cdc, Feature::Cdc),
        (facts.auto_cdc_history, Feature::CdcHistory),
        (facts.sink_output, Feature::Sinks),
        (facts.sql_graph_elements, Feature::PersistentViews),
        (facts.once_flows, Feature::OnceFlows),
    ] {
        if has {
            caps = caps.with([feature]);
        }
    }
    // Not listed: `rescuedDataColumn` and `cloudFiles.schemaHints`, Databricks reader options
    // that open-source Spark's readers ignore silently (probed on every line by
    // `thund-cli/tests/spark.rs`), so the same project would drop or fail records instead; and
    // AUTO CDC's `IGNORE NULL UPDATES` and `APPLY AS TRUNCATE WHEN`: the 4.3.0 server builds its
    // change arguments from keys, sequence, SCD type, column and history selections and deletes
    // only (its `PipelinesHandler.buildAutoCdcFlow`), so both would be dropped without an error.
    // The 4.2 and 4.3 protocols carry null-update column lists (fields the client does not send,
    // listed in `knut-pipelines`' protocol drift test); whether a server applies them cannot be
    // run here, as no table format with MERGE installs with pyspark.
    caps.transactional_tables = TableFormats::Only(TRANSACTIONAL_FORMATS.map(String::from).to_vec());
    Some(caps)
}

/// What a server of any targeted line could run (the newest line's facts): the check a pipeline
/// gets before a server is contacted. Whatever this refuses, no server can run.
pub fn any_version() -> Capabilities {
    let newest = SERVER_FACTS.last().map(|f| format!("{}.0", f.line)).unwrap_or_default();
    let caps = capabilities(&newest).unwrap_or_else(|| Capabilities::none(BACKEND_NAME));
    Capabilities { name: BACKEND_NAME.into(), ..caps }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_differ_where_the_facts_do() {
        let (c41, c42, c43) =
            (capabilities("4.1.4").unwrap(), capabilities("4.2.1").unwrap(), capabilities("4.3.0").unwrap());
        assert!(!c41.has(&Feature::Cdc) && c42.has(&Feature::Cdc) && c43.has(&Feature::Cdc));
        assert!(!c42.has(&Feature::CdcHistory) && c43.has(&Feature::CdcHistory));
        assert!(c41.has(&Feature::Expectations) && c43.has(&Feature::Expectations), "lowered into the flow's query");
        assert!(capabilities("3.5.1").is_none());
        assert_eq!(any_version(), Capabilities { name: BACKEND_NAME.into(), ..c43 });
    }
}
