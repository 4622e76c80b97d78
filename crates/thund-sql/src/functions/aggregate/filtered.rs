//! A grouped accumulator that keeps only the rows its `FILTER (WHERE …)` keeps before they
//! reach the accumulator it wraps. DataFusion hands a grouped accumulator the filter to apply
//! itself, and `datafusion-spark`'s `avg` ignores it (`avg(x) FILTER (WHERE b > 0) … GROUP BY`
//! averaged every row); wrapped, every row the filter does not keep (false or NULL) is given as
//! NULL, so the one inside is never given a filter.

use arrow::array::{Array, ArrayRef, BooleanArray};
use arrow::compute::{nullif, prep_null_mask_filter};
use datafusion::common::Result;
use datafusion::logical_expr::{EmitTo, GroupsAccumulator};

/// `inner`, given only the rows its filter keeps.
pub(crate) struct Filtered {
    pub(crate) inner: Box<dyn GroupsAccumulator>,
}

impl Filtered {
    /// `values` with NULL in every row `keep` does not keep (false or NULL). The rows stay, so
    /// every group the inner accumulator is told of is still in the batch; the wrapped
    /// aggregates (`sum`, `avg`, the percentiles) skip NULLs, so a group none of whose rows is
    /// kept is NULL, as on Spark (removed rows gave 0 for a `sum`).
    fn kept(values: &[ArrayRef], keep: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        let Some(keep) = keep else { return Ok(values.to_vec()) };
        let keep = if keep.null_count() > 0 { prep_null_mask_filter(keep) } else { keep.clone() };
        let dropped = arrow::compute::not(&keep)?;
        Ok(values.iter().map(|v| nullif(v, &dropped)).collect::<std::result::Result<Vec<_>, _>>()?)
    }
}

impl GroupsAccumulator for Filtered {
    fn update_batch(
        &mut self,
        values: &[ArrayRef],
        group_indices: &[usize],
        opt_filter: Option<&BooleanArray>,
        total_num_groups: usize,
    ) -> Result<()> {
        let values = Self::kept(values, opt_filter)?;
        self.inner.update_batch(&values, group_indices, None, total_num_groups)
    }

    fn evaluate(&mut self, emit_to: EmitTo) -> Result<ArrayRef> {
        self.inner.evaluate(emit_to)
    }

    fn state(&mut self, emit_to: EmitTo) -> Result<Vec<ArrayRef>> {
        self.inner.state(emit_to)
    }

    fn merge_batch(&mut self, values: &[ArrayRef], group_indices: &[usize], total_num_groups: usize) -> Result<()> {
        self.inner.merge_batch(values, group_indices, total_num_groups)
    }

    fn convert_to_state(&self, values: &[ArrayRef], opt_filter: Option<&BooleanArray>) -> Result<Vec<ArrayRef>> {
        self.inner.convert_to_state(&Self::kept(values, opt_filter)?, None)
    }

    fn size(&self) -> usize {
        self.inner.size()
    }
}
