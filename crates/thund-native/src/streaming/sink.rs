//! Sinks: flows append their new rows to files (parquet, csv, json) or a Delta table at the
//! sink's `path`.
//!
//! A file sink batch is written to `<path>/_thund_staging/<flow>-<batch>/`, its files renamed to
//! `<path>/<flow>-b<batch>-<n>.<ext>`, and only then marked done by
//! `<path>/_thund_commits/<flow>-<batch>` (names starting with `_` are ignored by Spark, DuckDB
//! and Þund's own readers). The marker is the batch's commit: a restart that finds an intent
//! without its marker deletes whatever files of that batch were renamed and recomputes it, so
//! every row reaches the sink exactly once. A Delta sink uses the table's application
//! transactions, as streaming tables do.

use std::path::{Path, PathBuf};

use datafusion::dataframe::{DataFrame, DataFrameWriteOptions};
use datafusion::logical_expr::LogicalPlan;
use datafusion::prelude::SessionContext;
use knut_thund::ir::{Dataset, QualifiedName};

use crate::delta::storage::{encode_component, resolve_project_path};
use crate::error::{NativeError, Result};

/// Where a sink writes and in what format.
pub(crate) struct FileSink {
    /// The folder.
    pub path: PathBuf,
    /// `parquet`, `csv`, `json` or `delta`.
    pub format: String,
}

impl FileSink {
    /// The sink of dataset `d` (`USING format OPTIONS (path '…')`; relative paths are relative to
    /// the project root).
    pub(crate) fn of(d: &Dataset, root: &Path) -> Result<Self> {
        let spec = d.sink.as_ref().ok_or_else(|| NativeError::Execution(format!("`{}` is not a sink", d.name)))?;
        let format = spec.format.to_ascii_lowercase();
        if !["parquet", "csv", "json", "delta"].contains(&format.as_str()) {
            return Err(NativeError::Plan {
                location: d.location.to_string(),
                message: format!("sink `{}`: format `{format}` is not supported (parquet, csv, json, delta)", d.name),
            });
        }
        let raw = spec.options.get("path").ok_or_else(|| NativeError::Plan {
            location: d.location.to_string(),
            message: format!("sink `{}` has no `path` option", d.name),
        })?;
        if let Some((scheme, _)) = raw.split_once("://").filter(|(scheme, _)| !scheme.eq_ignore_ascii_case("file")) {
            // Joined to the project as a path, `s3://b/x` would become a local folder `s3:`.
            return Err(NativeError::Plan {
                location: d.location.to_string(),
                message: format!(
                    "sink `{}`: path `{raw}` is a {scheme}:// URL; the native backend writes sinks to local folders \
                     (a path or a file:// URL)",
                    d.name
                ),
            });
        }
        Ok(FileSink { path: resolve_project_path(raw, root), format })
    }

    fn marker(&self, flow: &QualifiedName, batch: i64) -> PathBuf {
        self.path.join("_thund_commits").join(format!("{}-{batch}", encode_component(&flow.to_string())))
    }

    fn prefix(flow: &QualifiedName, batch: i64) -> String {
        format!("{}-b{batch:06}-", encode_component(&flow.to_string()))
    }

    /// The last batch of `flow` whose files are all in place.
    pub(crate) fn committed_batch(&self, flow: &QualifiedName, pending: Option<i64>) -> Option<i64> {
        let b = pending?;
        self.marker(flow, b).exists().then_some(b)
    }

    /// Removes the files of a batch that was not marked done (a crash between rename and marker).
    pub(crate) fn discard(&self, flow: &QualifiedName, batch: i64) -> Result<()> {
        let prefix = Self::prefix(flow, batch);
        if let Ok(entries) = std::fs::read_dir(&self.path) {
            for e in entries.flatten() {
                if e.file_name().to_string_lossy().starts_with(&prefix) {
                    std::fs::remove_file(e.path()).map_err(|x| NativeError::io(&e.path(), x))?;
                }
            }
        }
        let staging = self.staging(flow, batch);
        if staging.exists() {
            std::fs::remove_dir_all(&staging).map_err(|e| NativeError::io(&staging, e))?;
        }
        Ok(())
    }

    fn staging(&self, flow: &QualifiedName, batch: i64) -> PathBuf {
        self.path.join("_thund_staging").join(format!("{}-{batch}", encode_component(&flow.to_string())))
    }

    /// Writes one batch of rows as files and marks it done; returns the rows written.
    pub(crate) async fn write(
        &self,
        ctx: &SessionContext,
        plan: LogicalPlan,
        flow: &QualifiedName,
        batch: i64,
    ) -> Result<u64> {
        self.discard(flow, batch)?;
        let staging = self.staging(flow, batch);
        std::fs::create_dir_all(&staging).map_err(|e| NativeError::io(&staging, e))?;
        let dir = format!("{}/", staging.display());
        let df = DataFrame::new(ctx.state(), plan);
        let options = DataFrameWriteOptions::new();
        let counts = match self.format.as_str() {
            "parquet" => df.write_parquet(&dir, options, None).await?,
            "csv" => {
                let csv = datafusion::common::config::CsvOptions::default().with_has_header(true);
                df.write_csv(&dir, options, Some(csv)).await?
            }
            _ => df.write_json(&dir, options, None).await?,
        };
        let rows: u64 = counts
            .iter()
            .filter_map(|b| {
                b.column(0)
                    .as_any()
                    .downcast_ref::<arrow::array::UInt64Array>()
                    .map(|a| a.iter().flatten().sum::<u64>())
            })
            .sum();
        let mut files: Vec<PathBuf> = std::fs::read_dir(&staging)
            .map_err(|e| NativeError::io(&staging, e))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file())
            .collect();
        files.sort();
        let prefix = Self::prefix(flow, batch);
        for (n, f) in files.iter().enumerate() {
            let target = self.path.join(format!("{prefix}{n}.{}", self.format));
            std::fs::rename(f, &target).map_err(|e| NativeError::io(&target, e))?;
        }
        let _ = std::fs::remove_dir_all(&staging);
        crate::failpoint::hit("sink-after-rename", flow)?;
        let marker = self.marker(flow, batch);
        if let Some(dir) = marker.parent() {
            std::fs::create_dir_all(dir).map_err(|e| NativeError::io(dir, e))?;
        }
        std::fs::write(&marker, rows.to_string()).map_err(|e| NativeError::io(&marker, e))?;
        Ok(rows)
    }
}
