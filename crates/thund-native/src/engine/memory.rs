//! The engine's memory pool under a limit, and the limit a run gets when none is set.
//!
//! Operators that can spill (aggregates, sorts) share the limit fairly and spill beyond their
//! share; one that cannot (a hash join's build side) fails with DataFusion's "Resources
//! exhausted" naming the largest consumers, never by the kernel's OOM killer.
//!
//! One operator is kept out of the limit: `RepartitionExec`, which moves batches between the
//! partitions of a plan. In DataFusion 55 it spills a batch it cannot reserve memory for, and that
//! spill path can deadlock — the query neither returns nor fails (apache/datafusion#24883, fixed
//! after 55). Its buffers are bounded without the pool: its channels stop taking batches once
//! every one of them holds data, so they hold about a batch per partition while the consumers
//! keep up. Keeping its reservations out of the pool means it never takes that path, and plans
//! under a limit stay as parallel as without one (on more than two cores: on two, plans are not
//! repartitioned at all, see `engine::context`); what it holds is counted in the pool's
//! `reserved` all the same.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use datafusion::common::Result;
use datafusion::execution::memory_pool::{
    FairSpillPool, MemoryConsumer, MemoryLimit, MemoryPool, MemoryReservation, TrackConsumersPool,
};

/// The share of the machine's memory a run may use when no limit is set: DuckDB's default
/// (80%), leaving room for what the pool does not count (the batches between operators, the
/// Parquet writers' buffers, the allocator's slack).
pub const DEFAULT_SHARE_PERCENT: u64 = 80;

/// The pool of an engine limited to `limit` bytes.
pub(crate) fn limited_pool(limit: usize) -> Arc<dyn MemoryPool> {
    // A fair pool: each spilling operator (one per partition) may use its share before it must
    // spill. With the default greedy pool, one partition's aggregate could take the whole pool
    // and the other's fail with "Resources exhausted" instead of spilling. Tracking names the
    // largest consumers when even spilling cannot make room.
    let pool = TrackConsumersPool::new(FairSpillPool::new(limit), NonZeroUsize::MIN.saturating_add(4));
    Arc::new(ExemptRepartition { inner: pool, exempt: AtomicUsize::new(0) })
}

/// The memory of this machine (or of its container, where a cgroup limits it), in bytes; `None`
/// where it cannot be read.
pub fn machine_memory() -> Option<u64> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.trim_start_matches("MemTotal:").trim().trim_end_matches("kB").trim().parse().ok()?;
        Some(kib * 1024)
    })?;
    // cgroup v2 says `max` where nothing limits the group; v1 says a number far above the
    // machine's memory.
    let cgroup = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
        .iter()
        .find_map(|path| std::fs::read_to_string(path).ok().and_then(|m| m.trim().parse::<u64>().ok()));
    Some(cgroup.map_or(total, |c| c.min(total)))
}

/// The limit of a run that sets none: [`DEFAULT_SHARE_PERCENT`] of [`machine_memory`].
pub fn default_memory_limit() -> Option<usize> {
    machine_memory().and_then(|m| usize::try_from(m / 100 * DEFAULT_SHARE_PERCENT).ok())
}

/// A pool that grants every `RepartitionExec` reservation outside `inner` (see the module doc).
struct ExemptRepartition<P> {
    inner: P,
    /// Bytes held by the exempt reservations.
    exempt: AtomicUsize,
}

fn exempt(consumer: &MemoryConsumer) -> bool {
    // DataFusion names a repartition's reservations `RepartitionExec[<partition>]` and
    // `RepartitionExec[Merge <partition>]`.
    consumer.name().starts_with("RepartitionExec[")
}

impl<P: MemoryPool> MemoryPool for ExemptRepartition<P> {
    fn name(&self) -> &str {
        "thund"
    }

    fn register(&self, consumer: &MemoryConsumer) {
        if !exempt(consumer) {
            self.inner.register(consumer);
        }
    }

    fn unregister(&self, consumer: &MemoryConsumer) {
        if !exempt(consumer) {
            self.inner.unregister(consumer);
        }
    }

    fn grow(&self, reservation: &MemoryReservation, additional: usize) {
        if exempt(reservation.consumer()) {
            self.exempt.fetch_add(additional, Ordering::Relaxed);
        } else {
            self.inner.grow(reservation, additional);
        }
    }

    fn shrink(&self, reservation: &MemoryReservation, shrink: usize) {
        if exempt(reservation.consumer()) {
            self.exempt.fetch_sub(shrink, Ordering::Relaxed);
        } else {
            self.inner.shrink(reservation, shrink);
        }
    }

    fn try_grow(&self, reservation: &MemoryReservation, additional: usize) -> Result<()> {
        if exempt(reservation.consumer()) {
            self.exempt.fetch_add(additional, Ordering::Relaxed);
            return Ok(());
        }
        self.inner.try_grow(reservation, additional)
    }

    fn reserved(&self) -> usize {
        self.inner.reserved() + self.exempt.load(Ordering::Relaxed)
    }

    fn memory_limit(&self) -> MemoryLimit {
        self.inner.memory_limit()
    }
}

impl<P: MemoryPool> fmt::Debug for ExemptRepartition<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExemptRepartition").field("inner", &self.inner).finish_non_exhaustive()
    }
}

impl<P: MemoryPool> fmt::Display for ExemptRepartition<P> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (repartition buffers outside the limit: {} bytes)",
            self.inner,
            self.exempt.load(Ordering::Relaxed)
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringViewArray};
    use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
    use datafusion::datasource::MemTable;
    use datafusion::physical_plan::repartition::RepartitionExec;
    use datafusion::physical_plan::{collect, ExecutionPlan};

    use super::*;
    use crate::engine::{new_context, EngineOptions};

    #[test]
    fn a_repartitions_reservations_are_outside_the_limit() {
        let pool = limited_pool(1000);
        let repartition = MemoryConsumer::new("RepartitionExec[0]").with_can_spill(true).register(&pool);
        let aggregate = MemoryConsumer::new("GroupedHashAggregateStream[0]").with_can_spill(true).register(&pool);
        repartition.try_grow(10_000).expect("a repartition's buffers are not refused");
        assert!(aggregate.try_grow(10_000).is_err(), "an aggregate beyond the limit must spill");
        aggregate.try_grow(400).expect("an aggregate within the limit");
        assert_eq!(pool.reserved(), 10_400, "both are counted");
        drop(repartition);
        assert_eq!(pool.reserved(), 400);
        drop(aggregate);
        assert_eq!(pool.reserved(), 0);
    }

    /// The query of apache/datafusion#24883 (a grouped `count(DISTINCT)` of strings over several
    /// partitions, small batches, a limit far too small): in DataFusion 55 its RepartitionExec
    /// spills and can hang. Here it completes, repartitioned (four partitions: on fewer, plans
    /// are not repartitioned at all), without a repartition spilling.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn a_repartitioned_count_distinct_under_a_small_limit_completes() {
        let v: Vec<i64> = (1..=40_000).collect();
        let g: ArrayRef = Arc::new(Int64Array::from_iter_values(v.iter().map(|v| v % 13)));
        let ids: ArrayRef = Arc::new(StringViewArray::from_iter(
            v.iter().map(|v| (v % 29 != 0).then(|| format!("trace-{:032}", v % 337))),
        ));
        let batch = RecordBatch::try_from_iter([("g", g), ("trace_id", ids)]).unwrap();
        let batches: Vec<RecordBatch> =
            (0..batch.num_rows()).step_by(64).map(|i| batch.slice(i, 64.min(batch.num_rows() - i))).collect();
        let halves: Vec<Vec<RecordBatch>> =
            batches.chunks(batches.len().div_ceil(2)).map(<[RecordBatch]>::to_vec).collect();
        for attempt in 0..8 {
            let opts = EngineOptions { memory_limit: Some(4 << 20), target_partitions: 4 };
            let ctx = new_context("c", "d", &opts).unwrap();
            ctx.state_ref().write().config_mut().options_mut().execution.batch_size =
                datafusion::common::config::ConfigNonZeroUsize::try_new(64).unwrap();
            ctx.register_table("t", Arc::new(MemTable::try_new(batch.schema(), halves.clone()).unwrap())).unwrap();
            let df = ctx.sql("SELECT g, count(DISTINCT trace_id) AS n FROM t GROUP BY g").await.unwrap();
            let plan = df.create_physical_plan().await.unwrap();
            let run = collect(Arc::clone(&plan), ctx.task_ctx());
            let out = match tokio::time::timeout(Duration::from_secs(30), run).await {
                Ok(out) => out.unwrap(),
                Err(_) => panic!("attempt {attempt}: the query hangs"),
            };
            assert_eq!(out.iter().map(RecordBatch::num_rows).sum::<usize>(), 13, "attempt {attempt}");
            let (repartitions, spills) = repartition_spills(&plan);
            assert!(repartitions > 0, "the plan is repartitioned under a limit:\n{plan:?}");
            assert_eq!(spills, 0, "attempt {attempt}: a repartition spilled");
        }
    }

    /// The RepartitionExecs of `plan`, and how often they spilled.
    fn repartition_spills(plan: &Arc<dyn ExecutionPlan>) -> (usize, usize) {
        let (mut found, mut spills) = (0, 0);
        plan.apply(|node| {
            if node.is::<RepartitionExec>() {
                found += 1;
                spills += node.metrics().and_then(|m| m.spill_count()).unwrap_or(0);
            }
            Ok(TreeNodeRecursion::Continue)
        })
        .unwrap();
        (found, spills)
    }
}
