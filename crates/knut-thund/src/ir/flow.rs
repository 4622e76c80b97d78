//! Flows and their kinds: what each kind of flow carries, the rules its target and clauses must
//! follow ([`FlowKind::problems`]) and what a backend needs to run it ([`FlowKind::needs`]).
//! A new kind is a variant here; the compiler then points at every place that runs it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::needs::{Feature, Need, TableUse};
use super::{Dataset, DatasetKind, Expression, QualifiedName, Query, SourceLocation};
use crate::error::Diagnostic;

/// A flow: a query whose rows go into a target dataset.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// Fully qualified name; a dataset's implicit flow carries the dataset's name.
    pub name: QualifiedName,
    /// The dataset it writes.
    pub target: QualifiedName,
    /// What it does.
    pub kind: FlowKind,
    /// Whether the flow is the implicit one of `CREATE … AS <query>`.
    pub implicit: bool,
    /// SQL conf from `SET k = v` statements above it in its file.
    pub sql_conf: BTreeMap<String, String>,
    /// Where it is defined.
    pub location: SourceLocation,
}

impl Flow {
    /// The query the flow reads from (an AutoCDC flow's change feed included).
    pub fn query(&self) -> &Query {
        match &self.kind {
            FlowKind::Append { query, .. } | FlowKind::Once { query, .. } => query,
            FlowKind::AutoCdc(cdc) => &cdc.source,
        }
    }

    /// The query the flow reads from, to change.
    pub fn query_mut(&mut self) -> &mut Query {
        match &mut self.kind {
            FlowKind::Append { query, .. } | FlowKind::Once { query, .. } => query,
            FlowKind::AutoCdc(cdc) => &mut cdc.source,
        }
    }
}

/// What a flow does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FlowKind {
    /// Runs on every update: a materialized view's recompute, or new rows appended to a streaming
    /// table or sink.
    Append {
        /// The rows.
        query: Query,
        /// `INSERT INTO t BY NAME`: columns matched by name rather than position.
        by_name: bool,
    },
    /// `INSERT INTO ONCE`: a backfill that runs once, and again only on full refresh.
    Once {
        /// The rows.
        query: Query,
        /// Columns matched by name.
        by_name: bool,
    },
    /// `AUTO CDC INTO`: a change feed applied by key.
    AutoCdc(AutoCdc),
}

impl FlowKind {
    /// A short lower-case name for messages.
    pub fn label(&self) -> &'static str {
        match self {
            FlowKind::Append { .. } => "append",
            FlowKind::Once { .. } => "once",
            FlowKind::AutoCdc(_) => "auto_cdc",
        }
    }

    /// Whether the flow only adds rows to its target: a target only such flows write grows by
    /// what they wrote (an AUTO CDC flow rewrites rows by key).
    pub fn only_appends(&self) -> bool {
        match self {
            FlowKind::Append { .. } | FlowKind::Once { .. } => true,
            FlowKind::AutoCdc(_) => false,
        }
    }

    /// Whether the flow runs on a target's first update and on full refresh only
    /// (`INSERT INTO ONCE`), where other flows run on every update.
    pub fn runs_once(&self) -> bool {
        match self {
            FlowKind::Once { .. } => true,
            FlowKind::Append { .. } | FlowKind::AutoCdc(_) => false,
        }
    }

    /// The change feed's clauses, for a flow that applies one by key (`AUTO CDC INTO`); other
    /// kinds write their query's rows.
    pub fn auto_cdc(&self) -> Option<&AutoCdc> {
        match self {
            FlowKind::AutoCdc(c) => Some(c),
            FlowKind::Append { .. } | FlowKind::Once { .. } => None,
        }
    }

    /// What this kind of flow requires of its target and clauses, beyond the graph rules every
    /// flow follows (`validate`): every problem, at the flow's location.
    pub fn problems(&self, f: &Flow, target: &Dataset) -> Vec<Diagnostic> {
        let at = |m: String| Diagnostic::at(&f.location, m);
        match self {
            FlowKind::Append { .. } => Vec::new(),
            FlowKind::Once { .. } => match target.kind {
                DatasetKind::StreamingTable => Vec::new(),
                DatasetKind::MaterializedView
                | DatasetKind::TemporaryView
                | DatasetKind::PersistentView
                | DatasetKind::Sink => {
                    vec![at(format!("`INSERT INTO ONCE` flow `{}` must write to a streaming table", f.name))]
                }
            },
            FlowKind::AutoCdc(cdc) => {
                let mut problems = Vec::new();
                if target.kind != DatasetKind::StreamingTable {
                    problems.push(at(format!("AUTO CDC flow `{}` must write to a streaming table", f.name)));
                }
                if cdc.sequence_by.is_none() {
                    problems.push(
                        at(format!("AUTO CDC flow `{}` has no `SEQUENCE BY`", f.name))
                            .with_hint("add `SEQUENCE BY <ordering column>` so changes apply in order"),
                    );
                }
                if cdc.scd_type == ScdType::Type1 && cdc.track_history.is_some() {
                    problems
                        .push(at(format!("AUTO CDC flow `{}`: `TRACK HISTORY` needs `STORED AS SCD TYPE 2`", f.name)));
                }
                if cdc.scd_type == ScdType::Type2 && cdc.apply_as_truncate.is_some() {
                    problems.push(
                        at(format!("AUTO CDC flow `{}`: `APPLY AS TRUNCATE WHEN` is only for SCD TYPE 1", f.name))
                            .with_hint("a history table keeps every version; delete keys with `APPLY AS DELETE WHEN`"),
                    );
                }
                if matches!(cdc.columns, ColumnSelection::Include(ref c) if c.is_empty()) {
                    problems.push(Diagnostic::at(&f.location, "AUTO CDC `COLUMNS` is empty"));
                }
                problems
            }
        }
    }

    /// What a backend must support to run this kind of flow into `target`, beyond what its query
    /// and target need. `backend::Capabilities` refuses what a backend lacks.
    pub fn needs(&self, f: &Flow, target: Option<&Dataset>) -> Vec<Need> {
        let need = |feature: Feature, detail: &str| Need::new(feature, &f.name, &f.location, detail);
        match self {
            FlowKind::Append { .. } => Vec::new(),
            FlowKind::Once { .. } => vec![need(Feature::OnceFlows, "INSERT INTO ONCE flow")],
            FlowKind::AutoCdc(c) => {
                let mut needs = vec![need(Feature::Cdc, "AUTO CDC flow")];
                if c.scd_type == ScdType::Type2 || c.track_history.is_some() {
                    needs.push(need(Feature::CdcHistory, "{backend} keeps no history in AUTO CDC (SCD type 2)"));
                }
                // Clauses a server would drop rather than refuse: its results would differ.
                if c.ignore_null_updates {
                    needs.push(need(
                        Feature::CdcIgnoreNullUpdates,
                        "{backend} does not apply a null-update rule to AUTO CDC; the clause would be dropped",
                    ));
                }
                if c.apply_as_truncate.is_some() {
                    needs.push(need(
                        Feature::CdcTruncates,
                        "{backend} does not apply truncates in AUTO CDC; the clause would be dropped",
                    ));
                }
                if let Some(t) = target.filter(|t| t.kind == DatasetKind::StreamingTable) {
                    let format = t.details.format.as_deref().unwrap_or("parquet (the default)");
                    needs.push(Need::new(
                        Feature::TransactionalTable { format: t.details.format.clone(), by: TableUse::Merge },
                        &t.name,
                        &f.location,
                        &format!(
                            "{} is {format}, which has no MERGE on {{backend}}; declare it USING {{formats}}",
                            t.name
                        ),
                    ));
                }
                needs
            }
        }
    }
}

/// `AUTO CDC INTO …`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoCdc {
    /// The change feed (`FROM …`).
    pub source: Query,
    /// `KEYS (…)`.
    pub keys: Vec<String>,
    /// `SEQUENCE BY` expression; `None` is a validation error.
    pub sequence_by: Option<Expression>,
    /// `APPLY AS DELETE WHEN` condition.
    pub apply_as_delete: Option<Expression>,
    /// `APPLY AS TRUNCATE WHEN` condition.
    pub apply_as_truncate: Option<Expression>,
    /// Which columns land in the target.
    pub columns: ColumnSelection,
    /// SCD type 1 (latest only) or 2 (history).
    pub scd_type: ScdType,
    /// `TRACK HISTORY ON` columns.
    pub track_history: Option<ColumnSelection>,
    /// `IGNORE NULL UPDATES`: a NULL in an update keeps the column's current value.
    #[serde(default)]
    pub ignore_null_updates: bool,
}

/// A column list of AutoCDC.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnSelection {
    /// `*`.
    All,
    /// `COLUMNS a, b`.
    Include(Vec<String>),
    /// `COLUMNS * EXCEPT (a, b)`.
    Except(Vec<String>),
}

/// How AutoCDC keeps history.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ScdType {
    /// Latest row per key.
    Type1,
    /// Every version, with validity columns.
    Type2,
}
