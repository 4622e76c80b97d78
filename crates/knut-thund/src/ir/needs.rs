//! What a pipeline needs from the backend that runs it. Each element says what it needs, where
//! ([`Need`]): a dataset its kind, expectations and output mode, a flow its kind's features, a
//! query its reads, watermark and joins. `backend::Capabilities` checks the whole list against
//! what a backend has, the same way for every element.

use std::collections::BTreeMap;

use super::{Dataset, DatasetKind, Flow, OutputMode, Pipeline, QualifiedName, Query, Read, SourceLocation};

/// A feature a backend may or may not have: what an element of a pipeline needs, and (but for
/// [`Feature::TransactionalTable`], which depends on the table's format) what a backend's
/// `Capabilities::features` lists.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Feature {
    /// Materialized views, temporary views and batch reads.
    Batch,
    /// Streaming tables and `STREAM` reads.
    Streaming,
    /// Persistent `CREATE VIEW`.
    PersistentViews,
    /// `CREATE SINK`.
    Sinks,
    /// `CONSTRAINT … EXPECT`.
    Expectations,
    /// A streaming dataset's output mode.
    OutputMode(OutputMode),
    /// `INSERT INTO ONCE`.
    OnceFlows,
    /// AUTO CDC flows.
    Cdc,
    /// AUTO CDC into history (`STORED AS SCD TYPE 2`, `TRACK HISTORY ON`).
    CdcHistory,
    /// AUTO CDC's `IGNORE NULL UPDATES`.
    CdcIgnoreNullUpdates,
    /// AUTO CDC's `APPLY AS TRUNCATE WHEN`.
    CdcTruncates,
    /// `WATERMARK … DELAY OF INTERVAL …`.
    EventTime,
    /// A join of two streams.
    StreamJoins,
    /// A streaming view that keeps state across batches (it aggregates, has a watermark or
    /// joins two streams).
    StatefulStreamingViews,
    /// `read_files(…)`, `` fmt.`path` ``.
    FileSources,
    /// `cloudFiles.schemaHints`.
    SchemaHints,
    /// `rescuedDataColumn` outside `cloud_files`.
    RescuedData,
    /// A Spark SQL setting that may change results, applied as on Spark.
    SqlConf,
    /// A Python DataFrame run as pyspark built it: one whose operations have no SQL translation.
    DataFrames,
    /// A streaming table stored transactionally (`format` as declared with `USING`).
    TransactionalTable {
        /// The declared format.
        format: Option<String>,
        /// What needs it.
        by: TableUse,
    },
}

/// What a streaming table is stored transactionally for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TableUse {
    /// Several flows append to it: each one's commits must be kept.
    SeveralFlows,
    /// AUTO CDC merges into it.
    Merge,
}

impl Feature {
    /// The feature's name in a capability gap.
    pub fn name(&self) -> &'static str {
        match self {
            Feature::Batch => "batch",
            Feature::Streaming => "streaming",
            Feature::PersistentViews => "persistent views",
            Feature::Sinks => "sinks",
            Feature::Expectations => "expectations",
            Feature::OutputMode(_) => "output modes",
            Feature::OnceFlows => "once flows",
            Feature::Cdc => "CDC",
            Feature::CdcHistory => "STORED AS SCD TYPE 2",
            Feature::CdcIgnoreNullUpdates => "IGNORE NULL UPDATES",
            Feature::CdcTruncates => "APPLY AS TRUNCATE WHEN",
            Feature::EventTime => "event time",
            Feature::StreamJoins => "stream-stream joins",
            Feature::StatefulStreamingViews => "stateful streaming views",
            Feature::FileSources => "file sources",
            Feature::SchemaHints => "cloudFiles.schemaHints",
            Feature::RescuedData => "rescuedDataColumn",
            Feature::SqlConf => "the setting applied",
            Feature::DataFrames => "Python DataFrame operations",
            Feature::TransactionalTable { by: TableUse::SeveralFlows, .. } => {
                "several flows into one parquet streaming table"
            }
            Feature::TransactionalTable { by: TableUse::Merge, .. } => "AUTO CDC into a table format with MERGE",
        }
    }
}

/// One thing a pipeline needs, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// The feature.
    pub feature: Feature,
    /// The dataset or flow that needs it.
    pub element: String,
    /// Where it is declared.
    pub location: SourceLocation,
    /// What needs it, in words; `{backend}` and `{formats}` stand for the backend's name and the
    /// table formats it stores transactionally.
    pub detail: String,
}

impl Need {
    /// `element` needs `feature` at `location`.
    pub fn new(feature: Feature, element: &dyn std::fmt::Display, location: &SourceLocation, detail: &str) -> Self {
        Need { feature, element: element.to_string(), location: location.clone(), detail: detail.to_string() }
    }
}

impl Dataset {
    /// What a backend needs to hold this dataset: its kind, its expectations, its output mode.
    pub fn needs(&self) -> Vec<Need> {
        let kind = match self.kind {
            DatasetKind::MaterializedView | DatasetKind::TemporaryView => Feature::Batch,
            DatasetKind::StreamingTable => Feature::Streaming,
            DatasetKind::PersistentView => Feature::PersistentViews,
            DatasetKind::Sink => Feature::Sinks,
        };
        let mut needs = vec![Need::new(kind, &self.name, &self.location, &self.kind.to_string())];
        for e in &self.expectations {
            let detail = format!("CONSTRAINT {} EXPECT ({})", e.name, e.predicate);
            needs.push(Need::new(Feature::Expectations, &self.name, &e.location, &detail));
        }
        if let Some(mode) = self.output_mode {
            needs.push(Need::new(
                Feature::OutputMode(mode),
                &self.name,
                &self.location,
                &format!("output mode {mode}"),
            ));
        }
        needs
    }
}

impl Query {
    /// What a backend needs to run this query in flow `f` (defined at `at`): its reads, its
    /// watermark, its joins.
    pub fn needs(&self, f: &QualifiedName, at: &SourceLocation) -> Vec<Need> {
        let mut needs = Vec::new();
        if let Some(reason) = self.dataframe.as_ref().and_then(|d| d.untranslated.as_ref()) {
            needs.push(Need::new(
                Feature::DataFrames,
                f,
                at,
                &format!(
                    "{reason}; the DataFrame runs on a backend that takes it as pyspark built it (--backend spark)"
                ),
            ));
        }
        if let Some(at) = crate::event_time::stream_stream_join(self) {
            needs.push(Need::new(
                Feature::StreamJoins,
                f,
                &at,
                "a join of two STREAM sources; join the stream with a table read in batch, or run it on a backend \
                 that keeps join state",
            ));
        }
        if let Some(et) = &self.event_time {
            needs.push(Need::new(Feature::EventTime, f, &et.location, &et.clause()));
        }
        for r in &self.reads {
            needs.extend(r.needs(f, at));
        }
        needs
    }
}

impl Read {
    /// What a backend needs to read this in flow `f` (defined at `at`).
    pub fn needs(&self, f: &QualifiedName, at: &SourceLocation) -> Vec<Need> {
        match self {
            Read::Dataset { streaming: true, location, name, .. } => {
                vec![Need::new(Feature::Streaming, f, location, &format!("STREAM({name})"))]
            }
            Read::Dataset { streaming: false, .. } => Vec::new(),
            Read::Files(fs) => {
                let mut needs = vec![Need::new(
                    Feature::FileSources,
                    f,
                    &fs.location,
                    &format!("{} files at {}", fs.format, fs.path),
                )];
                if fs.streaming {
                    needs.push(Need::new(
                        Feature::Streaming,
                        f,
                        &fs.location,
                        &format!("STREAM read_files('{}')", fs.path),
                    ));
                }
                if fs.options.contains_key("schemahints") {
                    let detail = format!("{{backend}}'s file readers take no schema hints (reading `{}`)", fs.path);
                    needs.push(Need::new(Feature::SchemaHints, f, &fs.location, &detail));
                }
                // Auto Loader's default `_rescued_data` is lowered as a column that stays NULL
                // because the reader fails on any record that would need rescuing.
                if fs.options.contains_key("rescueddatacolumn") && !fs.rescue_by_default {
                    let detail = format!("{{backend}}'s readers have no rescued-data column (reading `{}`)", fs.path);
                    // At the flow: the option is the flow's choice of reader.
                    needs.push(Need::new(Feature::RescuedData, f, at, &detail));
                }
                needs
            }
        }
    }
}

impl Flow {
    /// What a backend needs to run this flow into `target`: its kind's features and its query's.
    pub fn needs(&self, target: Option<&Dataset>) -> Vec<Need> {
        let mut needs = self.kind.needs(self, target);
        needs.extend(self.query().needs(&self.name, &self.location));
        for (key, value) in &self.sql_conf {
            if let Some(why) = crate::sql_conf::refusal(key, value) {
                needs.push(Need::new(Feature::SqlConf, &format!("{} (SET {key})", self.name), &self.location, &why));
            }
        }
        needs
    }
}

impl Pipeline {
    /// Everything a backend needs to run the pipeline, element by element.
    pub fn needs(&self) -> Vec<Need> {
        let mut needs = Vec::new();
        let by_name: BTreeMap<&QualifiedName, &Dataset> = self.datasets.iter().map(|d| (&d.name, d)).collect();
        let mut flows_into: BTreeMap<&QualifiedName, Vec<&Flow>> = BTreeMap::new();
        for f in &self.flows {
            flows_into.entry(&f.target).or_default().push(f);
        }
        for d in &self.datasets {
            needs.extend(d.needs());
            let flows = flows_into.get(&d.name).map_or(&[][..], Vec::as_slice);
            if d.kind == DatasetKind::StreamingTable && flows.len() > 1 {
                // Measured on Spark 4.1.4: both flows write files, but a parquet table's
                // `_spark_metadata` log keeps one flow's commits, so readers lose the other's rows.
                let format = d.details.format.as_deref().unwrap_or("parquet (the default)");
                for f in flows {
                    let detail = format!(
                        "flow {} is one of {} into it; a {format} table keeps only one flow's commits on {{backend}} \
                         (write one flow with UNION ALL, or declare the table USING {{formats}})",
                        f.name,
                        flows.len()
                    );
                    let feature =
                        Feature::TransactionalTable { format: d.details.format.clone(), by: TableUse::SeveralFlows };
                    needs.push(Need::new(feature, &d.name, &f.location, &detail));
                }
            }
        }
        let modes: Vec<(&str, bool)> = crate::sql_conf::RUN_MODES
            .iter()
            .map(|&(key, default)| (key, crate::sql_conf::bool_setting(&self.configuration, key).unwrap_or(default)))
            .collect();
        for f in &self.flows {
            let target = by_name.get(&f.target).copied();
            needs.extend(f.needs(target));
            // Every query of a run is planned in the pipeline's modes.
            for &(key, mode) in &modes {
                if crate::sql_conf::bool_setting(&f.sql_conf, key).is_some_and(|own| own != mode) {
                    let why = format!(
                        "the native backend plans every flow with the pipeline's `{key}` ({mode}); set it in the \
                         spec's `configuration` instead"
                    );
                    needs.push(Need::new(Feature::SqlConf, &format!("{} (SET {key})", f.name), &f.location, &why));
                }
            }
            if let Some(view) = target.filter(|d| d.kind.is_view() && f.query().is_streaming()) {
                needs.extend(streaming_view_needs(view, f));
            }
        }
        for (key, value) in &self.configuration {
            if let Some(why) = crate::sql_conf::refusal(key, value) {
                needs.push(Need::new(Feature::SqlConf, &key, &crate::sql_conf::spec_location(self, key), &why));
            }
        }
        needs
    }
}

/// What a streaming view needs beyond streaming: a view is inlined into each flow that streams
/// it, batch by batch, so state of its own (groups, a watermark, a join's other side) needs a
/// backend that keeps it. (Its expectations are checked in each flow, on the rows it reads.)
fn streaming_view_needs(view: &Dataset, f: &Flow) -> Vec<Need> {
    let q = f.query();
    let stateful = match (crate::event_time::shape(q), &q.event_time, crate::event_time::stream_stream_join(q)) {
        (Ok(shape), _, _) if shape.aggregation.is_some() => shape.aggregation.map(|at| (at, "aggregates")),
        (_, Some(et), _) => Some((et.location.clone(), "has a watermark")),
        (_, _, Some(at)) => Some((at, "joins two streams")),
        _ => None,
    };
    let mut needs = Vec::new();
    if let Some((at, what)) = stateful {
        let detail = format!(
            "streaming view `{}` {what}; {{backend}} runs streaming views that only filter, project and join tables: \
             move this into the streaming table that reads it",
            view.name
        );
        needs.push(Need::new(Feature::StatefulStreamingViews, &view.name, &at, &detail));
    }
    needs
}
