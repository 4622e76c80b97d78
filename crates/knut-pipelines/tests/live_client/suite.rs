//! The client against real Spark Connect servers, one per Spark line (`scripts/test.sh` starts
//! 4.1.4, 4.2.1 and 4.3.0 and exports their URLs: `thund_testkit::SPARK_LINES`).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::time::{Duration, Instant};

use arrow::array::{Array, Int32Array, Int64Array, StringArray};
use knut_pipelines::{
    ClientError, ClientOptions, DataflowGraph, Flow, FlowDetails, Output, OutputType, PipelineEvent, PipelineRun,
    PipelinesClient, Relation,
};

/// Every line's server, as (line, URL). Missing is a failure, not a skip: a suite that skips
/// its server proves nothing. `THUND_SKIP_SPARK=1` opts out explicitly for quick local loops.
fn servers() -> Option<Vec<(&'static str, String)>> {
    thund_testkit::spark_urls("the live client")
}

fn sql(q: &str) -> FlowDetails {
    FlowDetails::Relation(Relation::Sql { query: q.into() })
}

#[tokio::test]
async fn reports_the_server_version_and_runs_sql() {
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let mut c = PipelinesClient::connect(&url).await.unwrap();
        let v = c.spark_version().await.unwrap();
        assert!(v.starts_with(&format!("{line}.")), "the server of Spark {line} is {v}");
        assert_eq!(c.version(), v);
        let batches =
            c.sql("SELECT id, CAST(id * 2 AS INT) AS twice, CAST(id AS STRING) AS s FROM range(3)").await.unwrap();
        let b = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        assert_eq!(b.num_rows(), 3);
        let ids = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let twice = b.column(1).as_any().downcast_ref::<Int32Array>().unwrap();
        let s = b.column(2).as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!((ids.value(2), twice.value(2), s.value(2)), (2, 4, "2"));
    }
}

#[tokio::test]
async fn maps_server_errors_to_error_class_and_sqlstate() {
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let mut c = PipelinesClient::connect(&url).await.unwrap();
        let err = c.sql("SELECT * FROM no_such_table_anywhere").await.unwrap_err();
        let ClientError::Server(e) = &err else { panic!("{err:?}") };
        assert_eq!(e.error_class.as_deref(), Some("TABLE_OR_VIEW_NOT_FOUND"), "{e:?}");
        assert_eq!(e.sql_state.as_deref(), Some("42P01"), "{e:?}");
        assert!(err.to_string().contains("no_such_table_anywhere"), "Spark {line}: {err}");
    }
}

#[tokio::test]
async fn an_unreachable_server_fails_within_seconds() {
    // A port nothing listens on: bind one, then close it.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let start = Instant::now();
    let opts = ClientOptions { connect_timeout: Duration::from_secs(3), ..Default::default() };
    let err = PipelinesClient::connect_with(&format!("sc://127.0.0.1:{port}"), opts).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert!(matches!(err, ClientError::Transport { .. }), "{err:?}");
    assert!(err.to_string().contains(&format!("127.0.0.1:{port}")), "{err}");
    // A black-holed address times out instead of hanging.
    let start = Instant::now();
    let opts = ClientOptions { connect_timeout: Duration::from_secs(2), ..Default::default() };
    let err = PipelinesClient::connect_with("sc://10.255.255.1:15002", opts).await.unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(5), "{:?}", start.elapsed());
    assert!(matches!(err, ClientError::Timeout { .. } | ClientError::Transport { .. }), "{err:?}");
}

#[tokio::test]
async fn defines_and_runs_a_graph_and_streams_its_events() {
    let Some(servers) = servers() else { return };
    for (line, url) in servers {
        let storage = tempfile::tempdir().unwrap();
        let mut c = PipelinesClient::connect(&url).await.unwrap();
        let db = format!("live_{}_{}", line.replace('.', ""), std::process::id());
        c.sql(&format!("CREATE DATABASE IF NOT EXISTS {db}")).await.unwrap();
        let mut g = DataflowGraph::new("spark_catalog", &db);
        let (src, agg) = (format!("spark_catalog.{db}.src"), format!("spark_catalog.{db}.agg"));
        g.outputs.push(Output::new(&src, OutputType::MaterializedView));
        g.outputs.push(Output::new(&agg, OutputType::MaterializedView));
        g.flows.push(Flow::new(&src, &src, sql("SELECT id, id % 2 AS k FROM range(10)")));
        g.flows.push(Flow::new(&agg, &agg, sql("SELECT k, count(*) AS n FROM src GROUP BY k")));
        g.validate().unwrap();
        let id = c.define_graph(&g).await.unwrap();
        let mut events: Vec<PipelineEvent> = Vec::new();
        let run = PipelineRun {
            graph_id: id.clone(),
            storage: Some(format!("file://{}", storage.path().display())),
            ..Default::default()
        };
        c.start_run(&run, &mut |e: PipelineEvent| events.push(e)).await.unwrap();
        let messages: Vec<&str> = events.iter().map(|e| e.message.as_str()).collect();
        assert!(messages.iter().any(|m| m.contains(&agg) && m.contains("COMPLETED")), "{messages:#?}");
        assert!(messages.last().unwrap().contains("COMPLETED"), "{messages:#?}");
        let batches = c.sql(&format!("SELECT k, n FROM {agg} ORDER BY k")).await.unwrap();
        let b = arrow::compute::concat_batches(&batches[0].schema(), &batches).unwrap();
        let n = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!((n.len(), n.value(0), n.value(1)), (2, 5, 5));
        c.drop_graph(&id).await.unwrap();
    }
}
