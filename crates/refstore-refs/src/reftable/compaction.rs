//! Geometric auto-compaction: after each transaction the stack is brought
//! back to tables whose sizes shrink by at least `reftable.geometricFactor`
//! from oldest to newest, so a stack of N updates holds O(log N) tables and
//! each record is rewritten O(log N) times.

use super::backend::ReftableOptions;
use super::reader::Table;
use super::stack::{Stack, StackError};
use refstore_fs::flush::FlushBatch;
use std::ops::Range;

/// Compacts the segment of `stack` that breaks the geometric sequence, if
/// any. Returns whether a compaction happened.
pub fn auto_compact(
    stack: &mut Stack,
    options: &ReftableOptions,
    batch: &mut FlushBatch,
) -> Result<bool, StackError> {
    let factor = u64::from(options.geometric_factor.max(2));
    if segment(&sizes(stack.tables()), factor).is_none() {
        // Decided on the stack as last read, so that the common case takes
        // no lock; the choice is made again under the lock.
        return Ok(false);
    }
    stack.compact(options.write, options.lock_timeout, batch, |tables| {
        segment(&sizes(tables), factor)
    })
}

/// The size of each table's records (the table without header and footer),
/// oldest first.
fn sizes(tables: &[Table]) -> Vec<u64> {
    tables.iter().map(Table::blocks_len).collect()
}

/// The tables to merge so that every table is at least `factor` times the
/// size of the next newer one: from the newest table that is not yet small
/// enough next to its older neighbour, back over every older table that is
/// smaller than `factor` times what the merge has gathered so far.
fn segment(sizes: &[u64], factor: u64) -> Option<Range<usize>> {
    let end = (1..sizes.len())
        .rev()
        .find(|&i| sizes[i - 1] < sizes[i].saturating_mul(factor))?
        + 1;
    let mut start = end - 1;
    let mut gathered = sizes[start];
    for i in (0..end - 1).rev() {
        if sizes[i] < gathered.saturating_mul(factor) {
            start = i;
        }
        gathered += sizes[i];
    }
    Some(start..end)
}

#[cfg(test)]
mod tests {
    use super::segment;

    #[test]
    fn geometric_stacks_are_left_alone() {
        assert_eq!(segment(&[], 2), None);
        assert_eq!(segment(&[100], 2), None);
        assert_eq!(segment(&[400, 200, 100, 50], 2), None);
    }

    #[test]
    fn the_segment_restoring_the_sequence_is_merged() {
        // Two equal tables on top: they merge, and the result (2x) is then
        // too big for the 150 below it, which joins.
        assert_eq!(segment(&[1000, 150, 100, 100], 2), Some(1..4));
        // Equal sizes all the way down merge into one.
        assert_eq!(segment(&[10, 10, 10, 10], 2), Some(0..4));
        // A big base stays.
        assert_eq!(segment(&[10_000, 10, 10], 2), Some(1..3));
        // A larger factor asks more of each step.
        assert_eq!(segment(&[300, 100], 3), None);
        assert_eq!(segment(&[299, 100], 3), Some(0..2));
    }
}
