//! DataFusion's own accumulators with their answers made Spark's. Some of Spark's aggregates
//! add up exactly as DataFusion's do and differ only in what they answer at the end (`sum` /
//! `avg` of floating point give one NaN). Rather than copy DataFusion's accumulators, these wrap them — their updates, partial
//! states, merges, retractions and group accumulators unchanged — and pass each answer through
//! an [`Answer`].

use std::fmt::Debug;

use arrow::array::{ArrayRef, BooleanArray};
use datafusion::common::{Result, ScalarValue};
use datafusion::logical_expr::{Accumulator, EmitTo, GroupsAccumulator};

/// How an aggregate's answers become Spark's.
pub(crate) trait Answer: Debug + Send + Sync + 'static {
    /// Spark's answers for DataFusion's `answers` (one per group).
    fn array(&self, answers: &ArrayRef) -> Result<ArrayRef>;

    /// Spark's answer for DataFusion's one `answer`.
    fn scalar(&self, answer: ScalarValue) -> Result<ScalarValue> {
        ScalarValue::try_from_array(&self.array(&answer.to_array()?)?, 0)
    }
}

/// `inner` answering through `answer`.
pub(crate) fn answered(inner: Box<dyn Accumulator>, answer: impl Answer) -> Box<dyn Accumulator> {
    Box::new(Answered { inner, answer })
}

/// The group accumulator `inner` answering through `answer`.
pub(crate) fn answered_groups(inner: Box<dyn GroupsAccumulator>, answer: impl Answer) -> Box<dyn GroupsAccumulator> {
    Box::new(AnsweredGroups { inner, answer })
}

#[derive(Debug)]
struct Answered<A> {
    inner: Box<dyn Accumulator>,
    answer: A,
}

impl<A: Answer> Accumulator for Answered<A> {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.update_batch(values)
    }

    fn retract_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        self.inner.retract_batch(values)
    }

    fn supports_retract_batch(&self) -> bool {
        self.inner.supports_retract_batch()
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        self.inner.merge_batch(states)
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        self.inner.state()
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        let answer = self.inner.evaluate()?;
        self.answer.scalar(answer)
    }

    fn size(&self) -> usize {
        size_of_val(self) + self.inner.size()
    }
}

struct AnsweredGroups<A> {
    inner: Box<dyn GroupsAccumulator>,
    answer: A,
}

impl<A: Answer> GroupsAccumulator for AnsweredGroups<A> {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        groups: &[usize],
        filter: Option<&BooleanArray>,
        total: usize,
    ) -> Result<()> {
        self.inner.update_batch(values, groups, filter, total)
    }

    fn merge_batch(&mut self, states: &[ArrayRef], groups: &[usize], total: usize) -> Result<()> {
        self.inner.merge_batch(states, groups, total)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        let answers = self.inner.evaluate(emit_to)?;
        self.answer.array(&answers)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn convert_to_state(&self, values: &[ArrayRef], filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(values, filter)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}
