//! Raw DataFusion: the same statements Þund runs, on a plain `SessionContext` with no pipeline
//! framework, no Delta and no Spark function layer — the floor for our engine choice.
//!
//!     cargo run --release -p thund-native --example raw_datafusion -- STATEMENTS.json OUT_DIR [--explain] [--set KEY=VALUE]…
//!
//! `STATEMENTS.json` is `{"sources": {"name": "path.parquet", …}, "datasets": [["name", "SQL"], …]}`.
//! Every source is registered as a Parquet table; each dataset is written to
//! `OUT_DIR/<name>.parquet` (one file, as DuckDB's `COPY` writes) and then registered, so later
//! statements read the written file, as a pipeline's downstream datasets read their upstream.
//! `--explain` prints each physical plan before running it; `--set datafusion.x.y=v` changes a
//! session setting (by default the session is DataFusion's default, untuned).

#![allow(clippy::unwrap_used, clippy::expect_used, unreachable_pub)]

use datafusion::dataframe::DataFrameWriteOptions;
use datafusion::prelude::{ParquetReadOptions, SessionContext};

#[derive(serde::Deserialize)]
struct Statements {
    sources: std::collections::BTreeMap<String, String>,
    datasets: Vec<(String, String)>,
}

#[tokio::main]
async fn main() -> datafusion::error::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(spec), Some(out)) = (args.first(), args.get(1)) else {
        eprintln!("usage: raw_datafusion STATEMENTS.json OUT_DIR [--explain] [--set KEY=VALUE]…");
        std::process::exit(2);
    };
    let explain = args.iter().any(|a| a == "--explain");
    let text = std::fs::read_to_string(spec)?;
    let stmts: Statements =
        serde_json::from_str(&text).map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
    let mut config = datafusion::prelude::SessionConfig::new();
    for pair in args.windows(2).filter(|w| w[0] == "--set").map(|w| &w[1]) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        config.options_mut().set(key, value)?;
    }
    let ctx = SessionContext::new_with_config(config);
    for (name, path) in &stmts.sources {
        ctx.register_parquet(name, path, ParquetReadOptions::default()).await?;
    }
    std::fs::create_dir_all(out)?;
    for (name, sql) in &stmts.datasets {
        let path = format!("{out}/{name}.parquet");
        let df = ctx.sql(sql).await?;
        if explain {
            let plan = df.clone().create_physical_plan().await?;
            println!("-- {name}\n{}", datafusion::physical_plan::displayable(plan.as_ref()).indent(true));
        }
        df.write_parquet(&path, DataFrameWriteOptions::new().with_single_file_output(true), None).await?;
        ctx.register_parquet(name, &path, ParquetReadOptions::default()).await?;
    }
    Ok(())
}
