//! Spark lowering benchmark: load + validate + lower a generated 500-dataset project
//! (`to_sdp`), then define the graph on a live Spark Connect server (CreateDataflowGraph,
//! DefineOutput and DefineFlow per dataset) and start a server-side dry run that resolves every
//! flow. Median of 3.
//!
//!     scripts/spark-server.sh start   # prints sc://127.0.0.1:PORT
//!     THUND_SPARK_REMOTE=sc://127.0.0.1:PORT cargo run --release -p knut-thund --features spark \
//!         --example bench_spark_define [-- 500] [--json]
//!
//! With `--json`, the last line is the result as one JSON object (bench/scale.py reads it).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use knut_pipelines::{PipelineEvent, PipelineRun, PipelinesClient};

fn generate(dir: &std::path::Path, n: usize) {
    std::fs::write(dir.join("spark-pipeline.yml"), "name: bench\nlibraries:\n  - glob:\n      include: sql/**\n")
        .unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    let mut sql = String::new();
    for i in 0..n {
        let _ = match i % 2 {
            0 => writeln!(sql, "CREATE MATERIALIZED VIEW d{i} AS SELECT * FROM VALUES (1, 'a', 2.5), (2, 'b', 3.5) AS t(id, name, amount);"),
            _ => writeln!(
                sql,
                "CREATE MATERIALIZED VIEW d{i} AS SELECT id, count(*) AS n, sum(amount) AS total FROM d{p} GROUP BY id;",
                p = i - 1
            ),
        };
    }
    std::fs::write(dir.join("sql/all.sql"), sql).unwrap();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(500);
    let json = std::env::args().any(|a| a == "--json");
    let url = std::env::var("THUND_SPARK_REMOTE").expect("set THUND_SPARK_REMOTE to a running server's sc:// URL");
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let dir = tempfile::tempdir().unwrap();
    generate(dir.path(), n);
    let (mut lower, mut define, mut dry) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..3 {
        let t = Instant::now();
        let p = knut_thund::frontend::load(dir.path()).unwrap();
        p.validate().unwrap();
        let g = p.to_sdp().unwrap();
        lower.push(t.elapsed());
        rt.block_on(async {
            let mut c = PipelinesClient::connect(&url).await.unwrap();
            let t = Instant::now();
            let id = c.define_graph(&g).await.unwrap();
            define.push(t.elapsed());
            let t = Instant::now();
            let run = PipelineRun {
                graph_id: id.clone(),
                dry: true,
                storage: Some(format!("file://{}", dir.path().join("storage").display())),
                ..Default::default()
            };
            let mut events = 0usize;
            c.start_run(&run, &mut |_: PipelineEvent| events += 1).await.unwrap();
            dry.push(t.elapsed());
            c.drop_graph(&id).await.unwrap();
            c.close().await.unwrap();
        });
    }
    let (l, d, r) = (median(lower), median(define), median(dry));
    println!("{n} datasets: load+validate+lower {:.1} ms; define on server {:.1} ms ({:.2} ms per dataset); server dry run {:.1} ms",
        l.as_secs_f64() * 1e3, d.as_secs_f64() * 1e3, d.as_secs_f64() * 1e3 / n as f64, r.as_secs_f64() * 1e3);
    if json {
        println!(
            "{{\"datasets\": {n}, \"lower_ms\": {:.3}, \"define_ms\": {:.3}, \"dry_run_ms\": {:.3}}}",
            l.as_secs_f64() * 1e3,
            d.as_secs_f64() * 1e3,
            r.as_secs_f64() * 1e3
        );
    }
}
