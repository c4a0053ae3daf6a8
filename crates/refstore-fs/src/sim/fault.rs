//! Fault injection: make a chosen operation fail with a chosen error.

use crate::vfs::Op;

/// A rule that makes one future operation fail.
///
/// The `skip + 1`-th operation matching `op` and `path_contains` fails with
/// `errno` (for example 28, `ENOSPC`, or 5, `EIO`), once; the operation has
/// no effect. Count operations with [`super::SimFs::op_count`] to place a
/// fault at every operation of a workload in turn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// Only operations of this kind count (any kind if `None`).
    pub op: Option<Op>,
    /// Only operations on a path containing this text count.
    pub path_contains: Option<String>,
    /// How many matching operations succeed before the one that fails.
    pub skip: usize,
    /// The OS error number to fail with.
    pub errno: i32,
}

impl Fault {
    /// Fails the `n`-th operation of any kind (0-based) with `errno`.
    pub fn nth_op(n: usize, errno: i32) -> Self {
        Fault {
            op: None,
            path_contains: None,
            skip: n,
            errno,
        }
    }

    /// Fails the first operation of kind `op` with `errno`.
    pub fn first(op: Op, errno: i32) -> Self {
        Fault {
            op: Some(op),
            path_contains: None,
            skip: 0,
            errno,
        }
    }

    /// Returns true if this operation must fail (and counts it).
    pub(crate) fn trips(&mut self, op: Op, path: &std::path::Path) -> bool {
        if self.op.is_some_and(|o| o != op) {
            return false;
        }
        if let Some(part) = &self.path_contains {
            if !path.to_string_lossy().contains(part.as_str()) {
                return false;
            }
        }
        if self.skip == 0 {
            return true;
        }
        self.skip -= 1;
        false
    }
}
