//! What the cluster's tests share: etcd clusters, from refstore-testsupport.

pub use refstore_testsupport::etcd;

use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_refs::files::transaction::CommitOptions;
use std::time::Duration;

/// How the tests commit ref transactions: batched flushes, no waiting for
/// locks, reflogs for branches, a fixed committer.
#[allow(dead_code)] // Not every test commits.
pub fn commit_options() -> CommitOptions {
    CommitOptions {
        flush: FlushMethod::Batch,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Branches,
        signature: "C O Mitter <c@example.com> 1700000000 +0000".into(),
    }
}
