//! What each Spark Connect server line supports, as data rather than scattered `if`s.
//!
//! Facts come from the protocol of each target wheel and from runs against real servers, and
//! each is probed on every line by a test: the protocol ones by `tests/proto_drift` (against the
//! wheel), the others by `thund-cli/tests/spark.rs` (`every_server_line_…`, against the server).
//! A fact that no longer holds fails its probe. Add a row when a new Spark line is targeted.

use serde::Serialize;

/// Pipeline features of one Spark minor line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ServerFacts {
    /// `major.minor`.
    pub line: &'static str,
    /// `DefineFlow.auto_cdc_flow_details` exists (4.2+; 4.2.1 defines an SCD type 1 flow and
    /// fails its run only on the parquet target's missing MERGE, measured). The target table
    /// format must also support MERGE; the default (parquet) does not.
    pub auto_cdc: bool,
    /// AUTO CDC keeps history: `SCDType.SCD_TYPE_2` and the history column lists exist (4.3+).
    pub auto_cdc_history: bool,
    /// `OutputType.SINK` exists (already in 4.1; a parquet sink fed by a streaming flow runs on
    /// 4.1.4, measured by `thund-cli/tests/spark.rs`).
    pub sink_output: bool,
    /// `DefineSqlGraphElements` exists, so persistent `CREATE VIEW` can be sent as SQL (runs on
    /// 4.1.4, measured).
    pub sql_graph_elements: bool,
    /// The server runs `DefineFlow.once` flows. The field exists since 4.1, but both 4.1.4 and
    /// 4.3.0 reject it (`DEFINE_FLOW_ONCE_OPTION_NOT_SUPPORTED`, measured).
    pub once_flows: bool,
    /// Expectations (`CONSTRAINT … EXPECT`): the OSS parser rejects them on every line.
    pub expectations: bool,
}

/// Every targeted line, oldest first.
pub const SERVER_FACTS: &[ServerFacts] = &[
    ServerFacts {
        line: "4.1",
        auto_cdc: false,
        auto_cdc_history: false,
        sink_output: true,
        sql_graph_elements: true,
        once_flows: false,
        expectations: false,
    },
    ServerFacts {
        line: "4.2",
        auto_cdc: true,
        auto_cdc_history: false,
        sink_output: true,
        sql_graph_elements: true,
        once_flows: false,
        expectations: false,
    },
    ServerFacts {
        line: "4.3",
        auto_cdc: true,
        auto_cdc_history: true,
        sink_output: true,
        sql_graph_elements: true,
        once_flows: false,
        expectations: false,
    },
];

/// The facts for a server version such as `4.1.4`; `None` for lines older than 4.1, which have
/// no pipelines service. Newer unknown lines get the newest known facts.
pub fn facts_for(version: &str) -> Option<&'static ServerFacts> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    if (major, minor) < (4, 1) {
        return None;
    }
    let line = format!("{major}.{minor}");
    SERVER_FACTS.iter().find(|f| f.line == line).or(SERVER_FACTS.last())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_up_lines() {
        assert_eq!(facts_for("4.1.4").unwrap().line, "4.1");
        assert!(facts_for("4.3.0").unwrap().auto_cdc_history && !facts_for("4.2.1").unwrap().auto_cdc_history);
        assert_eq!(facts_for("5.0.0").unwrap().line, "4.3");
        assert!(facts_for("3.5.1").is_none());
    }
}
