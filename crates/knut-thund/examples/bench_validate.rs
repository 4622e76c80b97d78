//! Front-end benchmark: load + validate + plan generated projects of 100, 1,000 and 10,000
//! datasets, median of 5 runs each.
//!
//!     cargo run --release -p knut-thund --example bench_validate [-- 100 1000 10000]
//!
//! Each project is a bronze/silver/gold chain per ten datasets, spread over 10 files, with
//! joins, aggregates and CTEs so the parser and the reference walk do real work.

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use std::fmt::Write as _;
use std::time::{Duration, Instant};

fn generate(dir: &std::path::Path, n: usize) {
    std::fs::write(dir.join("spark-pipeline.yml"), "name: bench\nlibraries:\n  - glob:\n      include: sql/**\n")
        .unwrap();
    std::fs::create_dir_all(dir.join("sql")).unwrap();
    let mut files = vec![String::new(); 10];
    for i in 0..n {
        let sql = &mut files[i % 10];
        let _ = match i % 3 {
            0 => writeln!(sql, "CREATE MATERIALIZED VIEW d{i} COMMENT 'seed' AS SELECT * FROM VALUES (1, 'a', 2.5), (2, 'b', 3.5) AS t(id, name, amount);"),
            1 => writeln!(sql, "CREATE TEMPORARY VIEW d{i} AS WITH base AS (SELECT id, upper(name) AS name, amount FROM d{p} WHERE amount > 0) SELECT * FROM base;", p = i - 1),
            _ => writeln!(
                sql,
                "CREATE MATERIALIZED VIEW d{i} AS SELECT a.id, count(*) AS n, sum(a.amount) AS total, max(b.name) AS name\n  FROM d{p} a LEFT JOIN d{q} b ON a.id = b.id GROUP BY a.id;",
                p = i - 1,
                q = i - 2
            ),
        };
    }
    for (k, text) in files.iter().enumerate() {
        std::fs::write(dir.join(format!("sql/f{k:02}.sql")), text).unwrap();
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.is_empty() { vec![100, 1_000, 10_000] } else { sizes };
    println!("{:>8}  {:>12}  {:>12}", "datasets", "median", "per dataset");
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        generate(dir.path(), n);
        let mut times: Vec<Duration> = (0..5)
            .map(|_| {
                let t = Instant::now();
                let p = knut_thund::frontend::load(dir.path()).unwrap();
                p.validate().unwrap();
                knut_thund::plan::plan(&p, &Default::default()).unwrap();
                p.to_sdp().unwrap();
                t.elapsed()
            })
            .collect();
        times.sort();
        let m = times[2];
        println!("{n:>8}  {:>10.1}ms  {:>10.1}µs", m.as_secs_f64() * 1e3, m.as_secs_f64() * 1e6 / n as f64);
    }
}
