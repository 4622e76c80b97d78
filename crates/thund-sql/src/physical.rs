//! DataFusion's physical optimizer rules, with guards: a rule of DataFusion 55 that answers
//! wrongly for some plans is skipped for those plans, and runs as before on all others.
//!
//! - Lambdas: `ProjectionPushdown` and `FilterPushdown` renumber the columns of an expression
//!   they move through a projection, but not a lambda's variables (`higher_order::holds_lambda`).
//! - Two columns of one name in an operator's output (`t AS a JOIN t AS b`, `SELECT a.v, b.v`):
//!   `FilterPushdown`, in both its phases, finds a pushed filter's column in a child by its name,
//!   so a filter on the second `v` lands on the first. A filter of the nullable side of a RIGHT
//!   JOIN (`WHERE l.v IS NULL`) was pushed into the other side's scan as `v IS NULL`, which pruned
//!   all of its rows: an empty answer. The same reading sends a join's or a `LIMIT`'s dynamic
//!   filter to the wrong column (apache/datafusion#25259 fixes it after 55.2). Without the rule,
//!   the filters the logical optimizer pushed into scans still prune.
//!
//! And two rules of ours. First of all, `OrderBarriers` puts an [`OrderBarrier`] (rows and
//! columns as they are; no ordering, no equivalences, no order kept for its parent) where
//! DataFusion 55 reads an order or a constant the rows do not have:
//! - above an aggregate over grouping sets (`GROUP BY a, b WITH ROLLUP`): it passes on its
//!   input's equivalences, so a column constant below (`SELECT TIMESTAMP'…' AS c0 …`) is taken
//!   for constant above it too, where the rolled-up rows hold NULL; `EnsureRequirements` then
//!   dropped that column from an `ORDER BY … LIMIT` (the two rows kept were the wrong ones), and
//!   the final aggregate read its input as sorted on it;
//! - above an OFFSET without a LIMIT: `EnsureRequirements` pushes the sort of an outer `ORDER
//!   BY` through it (the limit keeps its input's order, and only a limit with a fetch is checked),
//!   so the rows skipped were the first ones of the outer order, not of the inner one.
//!
//! Then, before `EnsureRequirements`: a LIMIT / OFFSET over a projection that
//! drops the sort keys (`SELECT c1 FROM (… ORDER BY c0, c1) OFFSET 2`, where nothing above
//! reads `c0`) is put under that projection, on the sort itself (`LimitsOnTheirOrder`).
//! `EnsureRequirements` removes a sort whose ordering no operator above can see, and a limit
//! asks for none: the rows skipped or kept were then any rows, not the first ones in order.

use std::sync::Arc;

use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::error::Result;
use datafusion::physical_optimizer::PhysicalOptimizerRule;
use datafusion::physical_plan::{ExecutionPlan, ExecutionPlanProperties};

type Rule = Arc<dyn PhysicalOptimizerRule + Send + Sync>;

/// The plans some rules are skipped for.
struct Guard {
    /// The rules (by their names) skipped for such a plan.
    rules: &'static [&'static str],
    /// Whether `plan` is such a plan.
    holds: fn(&Arc<dyn ExecutionPlan>) -> bool,
}

const GUARDS: [Guard; 2] = [
    Guard {
        rules: &["ProjectionPushdown", "FilterPushdown", "FilterPushdown(Post)"],
        holds: crate::functions::higher_order::holds_lambda,
    },
    Guard { rules: &["FilterPushdown", "FilterPushdown(Post)"], holds: names_a_column_twice },
];

/// [`OrderBarriers`], then DataFusion's default physical optimizer rules, each with the guards
/// that name it, and [`LimitsOnTheirOrder`] before `EnsureRequirements`.
pub(crate) fn physical_optimizer_rules() -> Vec<Rule> {
    let mut rules = vec![Arc::new(OrderBarriers) as Rule];
    for rule in datafusion::physical_optimizer::optimizer::PhysicalOptimizer::new().rules {
        if rule.name() == "EnsureRequirements" {
            rules.push(Arc::new(LimitsOnTheirOrder) as Rule);
        }
        let guards: Vec<&'static Guard> = GUARDS.iter().filter(|g| g.rules.contains(&rule.name())).collect();
        rules.push(if guards.is_empty() { rule } else { Arc::new(Guarded { rule, guards }) as Rule });
    }
    rules
}

/// Puts an [`OrderBarrier`] above each aggregate over grouping sets and each OFFSET without a
/// LIMIT (see the module's documentation for why).
#[derive(Debug)]
struct OrderBarriers;

impl PhysicalOptimizerRule for OrderBarriers {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _: &datafusion::config::ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        use datafusion::common::tree_node::Transformed;
        use datafusion::physical_plan::aggregates::AggregateExec;
        use datafusion::physical_plan::limit::GlobalLimitExec;
        plan.transform_up(|node| {
            let grouping_sets = node.downcast_ref::<AggregateExec>().is_some_and(|a| !a.group_expr().is_single());
            let offset_only =
                node.downcast_ref::<GlobalLimitExec>().is_some_and(|l| l.skip() > 0 && l.fetch().is_none());
            Ok(if grouping_sets || offset_only {
                Transformed::yes(Arc::new(OrderBarrier::new(node)) as Arc<dyn ExecutionPlan>)
            } else {
                Transformed::no(node)
            })
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "OrderBarriers"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Its input's rows, as they come, under properties that promise nothing: no ordering, no
/// equivalences or constants, a partitioning of the same count that no requirement is met by,
/// and no order kept for a parent (so no sort is pushed through it).
#[derive(Debug)]
pub(crate) struct OrderBarrier {
    input: Arc<dyn ExecutionPlan>,
    properties: Arc<datafusion::physical_plan::PlanProperties>,
}

impl OrderBarrier {
    fn new(input: Arc<dyn ExecutionPlan>) -> Self {
        use datafusion::physical_expr::EquivalenceProperties;
        use datafusion::physical_plan::{Partitioning, PlanProperties};
        let partitions = input.output_partitioning().partition_count();
        let properties = PlanProperties::new(
            EquivalenceProperties::new(input.schema()),
            Partitioning::UnknownPartitioning(partitions),
            input.pipeline_behavior(),
            input.boundedness(),
        );
        OrderBarrier { input, properties: Arc::new(properties) }
    }
}

impl datafusion::physical_plan::DisplayAs for OrderBarrier {
    fn fmt_as(&self, _: datafusion::physical_plan::DisplayFormatType, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "OrderBarrier")
    }
}

impl ExecutionPlan for OrderBarrier {
    fn name(&self) -> &str {
        "OrderBarrier"
    }

    fn properties(&self) -> &Arc<datafusion::physical_plan::PlanProperties> {
        &self.properties
    }

    fn children(&self) -> Vec<&Arc<dyn ExecutionPlan>> {
        vec![&self.input]
    }

    fn maintains_input_order(&self) -> Vec<bool> {
        vec![false]
    }

    fn benefits_from_input_partitioning(&self) -> Vec<bool> {
        vec![false]
    }

    fn apply_expressions(
        &self,
        _: &mut dyn FnMut(&Arc<dyn datafusion::physical_expr::PhysicalExpr>) -> Result<TreeNodeRecursion>,
    ) -> Result<TreeNodeRecursion> {
        Ok(TreeNodeRecursion::Continue)
    }

    #[allow(deprecated)] // DataFusion 55 still requires it; `replace_children` calls it.
    fn with_new_children(self: Arc<Self>, mut children: Vec<Arc<dyn ExecutionPlan>>) -> Result<Arc<dyn ExecutionPlan>> {
        if children.len() != 1 {
            return datafusion::common::internal_err!("OrderBarrier takes one input, not {}", children.len());
        }
        Ok(Arc::new(OrderBarrier::new(children.swap_remove(0))))
    }

    fn execute(
        &self,
        partition: usize,
        context: Arc<datafusion::execution::TaskContext>,
    ) -> Result<datafusion::execution::SendableRecordBatchStream> {
        self.input.execute(partition, context)
    }
}

/// A limit whose input is a projection that loses (part of) the ordering below it, moved under
/// the projection: `Limit(Projection(Sort))` → `Projection(Limit(Sort))`, the same rows (a
/// projection keeps every row, in order) with the sort in sight of the limit.
#[derive(Debug)]
struct LimitsOnTheirOrder;

impl PhysicalOptimizerRule for LimitsOnTheirOrder {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        _: &datafusion::config::ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        use datafusion::common::tree_node::Transformed;
        use datafusion::physical_plan::limit::{GlobalLimitExec, LocalLimitExec};
        use datafusion::physical_plan::projection::ProjectionExec;
        use datafusion::physical_plan::replace_children_if_necessary;
        plan.transform_up(|node| {
            if !node.is::<GlobalLimitExec>() && !node.is::<LocalLimitExec>() {
                return Ok(Transformed::no(node));
            }
            let input = Arc::clone(node.children()[0]);
            let mut projections = Vec::new();
            let mut below = Arc::clone(&input);
            while let Some(projection) = below.downcast_ref::<ProjectionExec>() {
                let next = Arc::clone(projection.input());
                projections.push(below);
                below = next;
            }
            let length = |p: &Arc<dyn ExecutionPlan>| p.output_ordering().map_or(0, |o| o.len());
            if projections.is_empty() || length(&input) >= length(&below) {
                return Ok(Transformed::no(node));
            }
            let mut top = replace_children_if_necessary(node, vec![below])?;
            for projection in projections.into_iter().rev() {
                top = replace_children_if_necessary(projection, vec![top])?;
            }
            Ok(Transformed::yes(top))
        })
        .map(|t| t.data)
    }

    fn name(&self) -> &str {
        "LimitsOnTheirOrder"
    }

    fn schema_check(&self) -> bool {
        true
    }
}

/// Whether an operator of `plan` has two output columns of one name.
fn names_a_column_twice(plan: &Arc<dyn ExecutionPlan>) -> bool {
    let mut twice = false;
    let _ = plan.apply(|node| {
        let schema = node.schema();
        let fields = schema.fields();
        twice = fields.iter().enumerate().any(|(i, f)| fields[..i].iter().any(|g| g.name() == f.name()));
        Ok(if twice { TreeNodeRecursion::Stop } else { TreeNodeRecursion::Continue })
    });
    twice
}

/// A rule skipped for the plans its guards hold.
struct Guarded {
    rule: Rule,
    guards: Vec<&'static Guard>,
}

impl Guarded {
    fn skips(&self, plan: &Arc<dyn ExecutionPlan>) -> bool {
        self.guards.iter().any(|g| (g.holds)(plan))
    }
}

impl std::fmt::Debug for Guarded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Guarded({})", self.rule.name())
    }
}

impl PhysicalOptimizerRule for Guarded {
    fn optimize(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        config: &datafusion::config::ConfigOptions,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.skips(&plan) {
            return Ok(plan);
        }
        self.rule.optimize(plan, config)
    }

    fn optimize_with_context(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        context: &dyn datafusion::physical_optimizer::PhysicalOptimizerContext,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        if self.skips(&plan) {
            return Ok(plan);
        }
        self.rule.optimize_with_context(plan, context)
    }

    fn name(&self) -> &str {
        self.rule.name()
    }

    fn schema_check(&self) -> bool {
        self.rule.schema_check()
    }
}
