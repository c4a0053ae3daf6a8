//! What marks a cluster node's copy of a repository: a file naming the
//! incarnation of the cluster's repository it is of, written by `serve
//! --cluster` and read by it and by `maintenance`, which refuses such a
//! copy without `--cluster` (its own refs are not the truth).

use std::path::Path;

/// The file in a copy's git directory naming its incarnation.
pub const MARKER: &str = "refstore-cluster-id";

/// The incarnation the copy whose common directory is `dir` carries, if
/// it carries one.
pub fn incarnation(vfs: &dyn refstore_fs::Vfs, dir: &Path) -> Option<String> {
    vfs.read(&dir.join(MARKER))
        .ok()
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
}
