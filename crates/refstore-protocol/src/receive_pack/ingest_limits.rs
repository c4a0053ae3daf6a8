//! What a push may cost to take in, from the repository's configuration:
//! `core.bigFileThreshold` (as git reads it: a size with an optional `k`,
//! `m` or `g` suffix; 512 MiB by default), above which objects are
//! streamed, and `refstore.maxPushInflated` ([`crate::limits`]), the most
//! a push's objects may inflate to in total.

use crate::limits::Limits;
use crate::Repository;
use refstore_odb::{big_file_threshold, IngestLimits};

/// The limits of a push into `repo`.
pub(crate) fn ingest_limits(repo: &Repository, limits: &Limits) -> Result<IngestLimits, String> {
    Ok(IngestLimits {
        big_file_threshold: big_file_threshold(&repo.config)?,
        max_inflated: limits.max_push_inflated,
    })
}
