//! What differs between kinds of streaming flow: the one trait the exactly-once protocol
//! (`streaming::run`) calls, and what a batch sees of its run while it calls it.
//!
//! A kind is told the recovered checkpoint and the one its batch will commit (`next`, already one
//! batch on), and does three things: it plans the rows the batch takes in (`plan`: reading only
//! the new input, advancing `next`'s offsets), prepares what must exist before the intent is
//! written (`stage`: a windowed flow's open windows, an AUTO CDC flow's evaluated changes), and
//! writes them to the target in one commit carrying the batch's transaction (`write`). Recovery,
//! expectations, the intent and the checkpoint commit are the protocol's, the same for every
//! kind.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use datafusion::logical_expr::LogicalPlan;
use deltalake::kernel::Transaction;

use super::checkpoint::{Checkpoint, KindState, SourceOffset};
use super::sources::Increment;
use super::target::Target;
use crate::error::Result;
use crate::expect::Checker;
use crate::flow::{FlowEffect, FlowJob};

/// What a batch sees of its run while a kind plans and writes it.
pub(crate) struct Batch<'a, 'j> {
    /// The flow's work: its session, storage, pipeline, target dataset and flow.
    pub job: &'a FlowJob<'j>,
    /// Where the rows go, and the table as it was when the batch started.
    pub target: &'a Target,
    /// The recovered checkpoint: what earlier batches did.
    pub state: &'a Checkpoint,
    /// Whether a crash left an intent: only then can a batch find parts of itself already
    /// written (an AUTO CDC history append).
    pub after_crash: bool,
    /// The input of a batch that failed before its commit, which this batch redoes: each
    /// source is read up to the offset recorded there, not to its newest input.
    pub redo: Option<&'a BTreeMap<String, SourceOffset>>,
    /// The expectation checks of the streaming views the batch reads through (filled by `plan`),
    /// whose counts the batch reports with its own.
    pub checked_views: Mutex<Vec<Arc<Checker>>>,
}

impl Batch<'_, '_> {
    /// Keeps the expectation checks of the streaming views `input` reads through.
    pub(crate) fn take_checks(&self, input: &Increment) {
        if let Ok(mut checks) = self.checked_views.lock() {
            checks.extend(input.checked_views.iter().cloned());
        }
    }

    /// The application transaction that the batch's commit carries.
    pub(crate) fn transaction(&self, next: &Checkpoint) -> Transaction {
        Transaction::new(&self.target.app, next.batch)
    }
}

/// One kind of streaming flow: append, once, windowed aggregation, AUTO CDC. Where the rows go
/// (a streaming table, a Delta sink, a file sink) is the [`Target`]'s concern, not the kind's.
pub(crate) trait BatchKind {
    /// What `stage` hands to `write`.
    type Staged;

    /// The state this kind keeps before its first batch; it also says which kind a stored
    /// checkpoint must belong to.
    fn initial_state(&self) -> KindState;

    /// The rows this batch takes in, planned against the recovered checkpoint (`next` takes the
    /// new offsets and state); `None` when there is nothing to do (the flow is IDLE).
    async fn plan(&mut self, batch: &Batch<'_, '_>, next: &mut Checkpoint) -> Result<Option<LogicalPlan>>;

    /// What must be in place before the intent is written, from the rows with the dataset's
    /// expectations applied; `next` takes what the batch learns from them.
    async fn stage(&mut self, batch: &Batch<'_, '_>, rows: LogicalPlan, next: &mut Checkpoint) -> Result<Self::Staged>;

    /// Writes the batch to the target in one commit carrying [`Batch::transaction`]; the rows
    /// written.
    async fn write(&mut self, batch: &Batch<'_, '_>, staged: Self::Staged, next: &Checkpoint) -> Result<u64>;

    /// After the checkpoint's commit: clean-up, and what the batch did.
    async fn committed(&mut self, batch: &Batch<'_, '_>, next: &Checkpoint, rows: u64) -> Result<FlowEffect> {
        let _ = (batch, next);
        Ok(FlowEffect::Rows(rows))
    }
}
