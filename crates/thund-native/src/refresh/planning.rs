//! Which way each refresh of a materialized view goes, and why.
//!
//! A refresh considers its techniques in order — no-op (nothing it reads changed), group
//! aggregate (merge what its input gained and lost into kept per-group state), append-only
//! (append the query's rows over what its inputs gained), row-based (take out the query's rows
//! over what they lost, add those over what they gained) or window partitions (recompute the
//! partitions its input changed), complete recompute —
//! and takes the first that applies and that the view's `REFRESH POLICY` allows: `FULL` always
//! recomputes, `INCREMENTAL STRICT` fails rather than recompute a view that cannot refresh
//! incrementally, `AUTO` and `INCREMENTAL` take the incremental technique whenever it applies
//! (there is no cost rule yet that could prefer a recompute). Every refresh writes what it
//! considered to the event log as DLT's `planning_information` event, each technique with the
//! issues that kept it from applying.

use knut_thund::backend::{IncrementalizationIssue, PlanningInformation, TechniqueInformation};
use knut_thund::ir::RefreshPolicy;

/// A way to refresh a materialized view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Technique {
    /// Nothing the view reads changed: its table stays.
    NoOp,
    /// The rows its input (through joins and unions) gained since the last refresh are aggregated and merged into
    /// per-group state, and those it lost taken back out (see `incremental`).
    GroupAggregate,
    /// The query's rows over what its inputs gained are appended (see `append`).
    AppendOnly,
    /// The query's rows over what its inputs lost are taken out of the view and those over what
    /// they gained added, in one commit (see `rows`).
    RowBased,
    /// The window partitions its one input changed are recomputed (see `window`).
    WindowFunction,
    /// The query runs over all its input and replaces the table.
    CompleteRecompute,
}

impl Technique {
    /// DLT's name for it in `planning_information`.
    pub(crate) fn maintenance_type(self) -> &'static str {
        match self {
            Technique::NoOp => "MAINTENANCE_TYPE_NO_OP",
            Technique::GroupAggregate => "MAINTENANCE_TYPE_GROUP_AGGREGATE",
            Technique::AppendOnly => "MAINTENANCE_TYPE_APPEND_ONLY",
            Technique::RowBased => "MAINTENANCE_TYPE_ROW_BASED",
            Technique::WindowFunction => "MAINTENANCE_TYPE_WINDOW_FUNCTION",
            Technique::CompleteRecompute => "MAINTENANCE_TYPE_COMPLETE_RECOMPUTE",
        }
    }

    /// Whether it refreshes from what changed (not no-op, not a recompute).
    pub(crate) fn is_incremental(self) -> bool {
        matches!(
            self,
            Technique::GroupAggregate | Technique::AppendOnly | Technique::RowBased | Technique::WindowFunction
        )
    }

    /// As the run summary shows it.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Technique::NoOp => "no-op",
            Technique::GroupAggregate => "group aggregate",
            Technique::AppendOnly => "append-only",
            Technique::RowBased => "row-based",
            Technique::WindowFunction => "window partitions",
            Technique::CompleteRecompute => "complete recompute",
        }
    }
}

/// What keeps a view, or one refresh of it, from refreshing incrementally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum IssueType {
    /// The query has an operator no incremental technique here maintains (a full outer join,
    /// `DISTINCT`, a window without the shape its technique needs, …) or lacks the one a
    /// technique needs (a group aggregate).
    OperatorNotIncrementalizable,
    /// An aggregate that partial results cannot be merged for (`count(DISTINCT …)`, a percentile).
    AggregateNotIncrementalizable,
    /// Something other than projections, filters, `UNION ALL` and joins lies under the aggregate.
    AggregateNotTopNode,
    /// A window function without `PARTITION BY`: every row depends on every other.
    WindowWithoutPartitionBy,
    /// A non-deterministic expression (`rand()`, `current_timestamp()`): the view's rows cannot
    /// be known to be unchanged.
    ExpressionNotDeterministic,
    /// An input is files or a view, not a Delta table whose commits say what changed.
    InputNotInDelta,
    /// An input lost or rewrote rows, which appending cannot take back.
    InputNotAppendOnly,
    /// No state from an earlier refresh fits (the first refresh, a changed definition, an input
    /// whose change cannot be read): this refresh builds it from all rows.
    ChangeSetMissing,
    /// Reading what an input gained and lost costs as much as reading it whole.
    ChangeSetTooLarge,
    /// A global aggregate's input lost rows, and an aggregate cannot take them back out exactly
    /// (a minimum, a floating-point sum): its one group is the whole view.
    AggregateNotRetractable,
    /// `thund run --full-refresh` asked for a recompute.
    FullRefreshRequested,
    /// The view's `REFRESH POLICY FULL`.
    RefreshPolicyFull,
}

impl IssueType {
    /// DLT's name for it in `planning_information`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            IssueType::OperatorNotIncrementalizable => "OPERATOR_NOT_INCREMENTALIZABLE",
            IssueType::AggregateNotIncrementalizable => "AGGREGATE_NOT_INCREMENTALIZABLE",
            IssueType::AggregateNotTopNode => "AGGREGATE_NOT_TOP_NODE",
            IssueType::WindowWithoutPartitionBy => "WINDOW_WITHOUT_PARTITION_BY",
            IssueType::ExpressionNotDeterministic => "EXPRESSION_NOT_DETERMINISTIC",
            IssueType::InputNotInDelta => "INPUT_NOT_IN_DELTA",
            IssueType::InputNotAppendOnly => "INPUT_NOT_APPEND_ONLY",
            IssueType::ChangeSetMissing => "CHANGE_SET_MISSING",
            IssueType::ChangeSetTooLarge => "CHANGE_SET_TOO_LARGE",
            IssueType::AggregateNotRetractable => "AGGREGATE_NOT_RETRACTABLE",
            IssueType::FullRefreshRequested => "FULL_REFRESH_REQUESTED",
            IssueType::RefreshPolicyFull => "REFRESH_POLICY_FULL",
        }
    }

    /// Whether the issue is the view's own (its query, inputs or policy), which no later refresh
    /// gets past, rather than this refresh's.
    pub(crate) fn is_static(self) -> bool {
        !matches!(
            self,
            IssueType::ChangeSetMissing
                | IssueType::InputNotAppendOnly
                | IssueType::ChangeSetTooLarge
                | IssueType::AggregateNotRetractable
                | IssueType::FullRefreshRequested
        )
    }
}

/// An issue and what it is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Issue {
    pub kind: IssueType,
    pub detail: String,
}

impl Issue {
    pub(crate) fn new(kind: IssueType, detail: impl Into<String>) -> Self {
        Issue { kind, detail: detail.into() }
    }
}

/// The techniques one refresh considered, as they are decided.
pub(crate) struct Planning {
    policy: RefreshPolicy,
    considered: Vec<(Technique, bool, Vec<Issue>)>,
    chosen: Option<Technique>,
}

impl Planning {
    pub(crate) fn new(policy: RefreshPolicy) -> Self {
        Planning { policy, considered: Vec::new(), chosen: None }
    }

    /// Records `technique` as considered: applicable or not, with the issues found.
    pub(crate) fn consider(&mut self, technique: Technique, applicable: bool, issues: Vec<Issue>) {
        self.considered.retain(|(t, _, _)| *t != technique);
        self.considered.push((technique, applicable, issues));
    }

    /// Chooses `technique` (considered, applicable, unless recorded otherwise).
    pub(crate) fn choose(&mut self, technique: Technique) {
        if !self.considered.iter().any(|(t, _, _)| *t == technique) {
            self.considered.push((technique, true, Vec::new()));
        }
        self.chosen = Some(technique);
    }

    /// The first technique considered that applies.
    pub(crate) fn first_applicable(&self) -> Option<Technique> {
        self.considered.iter().find(|(_, applicable, _)| *applicable).map(|(t, _, _)| *t)
    }

    /// The technique chosen, if any yet.
    pub(crate) fn chosen(&self) -> Option<Technique> {
        self.chosen
    }

    /// The issues that rule out every incremental technique for this view on any refresh: none
    /// if one of them could apply on a later refresh.
    pub(crate) fn static_issues(&self) -> Vec<&Issue> {
        let incremental: Vec<&Vec<Issue>> =
            self.considered.iter().filter(|(t, _, _)| t.is_incremental()).map(|(_, _, issues)| issues).collect();
        if incremental.iter().any(|issues| !issues.iter().any(|i| i.kind.is_static())) {
            return Vec::new();
        }
        let mut all: Vec<&Issue> = incremental.into_iter().flatten().filter(|i| i.kind.is_static()).collect();
        all.dedup();
        all
    }

    /// DLT's `planning_information`.
    pub(crate) fn information(&self) -> PlanningInformation {
        PlanningInformation {
            refresh_policy: self.policy.as_sql().to_string(),
            technique_information: self
                .considered
                .iter()
                .map(|(t, applicable, issues)| TechniqueInformation {
                    maintenance_type: t.maintenance_type().to_string(),
                    is_applicable: *applicable,
                    is_chosen: self.chosen == Some(*t),
                    incrementalization_issues: issues
                        .iter()
                        .map(|i| IncrementalizationIssue {
                            issue_type: i.kind.as_str().to_string(),
                            prevent_incrementalization: !*applicable,
                            detail: i.detail.clone(),
                        })
                        .collect(),
                })
                .collect(),
        }
    }

    /// One line for a person: the technique and, for a recompute, why.
    pub(crate) fn summary(&self) -> String {
        let Some(chosen) = self.chosen else {
            let mut why: Vec<String> = Vec::new();
            for (_, _, issues) in &self.considered {
                for i in issues {
                    let line = format!("{}: {}", i.kind.as_str(), i.detail);
                    if !why.contains(&line) {
                        why.push(line);
                    }
                }
            }
            return format!("cannot refresh incrementally ({})", why.join("; "));
        };
        let mut why: Vec<String> = Vec::new();
        for (_, _, issues) in self.considered.iter().filter(|(t, _, _)| t.is_incremental() && *t != chosen) {
            for i in issues {
                let line = format!("{}: {}", i.kind.as_str(), i.detail);
                if !why.contains(&line) {
                    why.push(line);
                }
            }
        }
        match why.is_empty() || chosen == Technique::NoOp {
            true => chosen.label().to_string(),
            false => format!("{} ({})", chosen.label(), why.join("; ")),
        }
    }
}
