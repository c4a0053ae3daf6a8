//! What a push may cost to take in, from the repository's configuration:
//! `core.bigFileThreshold` (as git reads it: a size with an optional `k`,
//! `m` or `g` suffix; 512 MiB by default), above which objects are
//! streamed, and `refstore.maxPushInflated` ([`crate::limits`]), the most
//! a push's objects may inflate to in total. `refstore.bigFileThreshold`
//! lowers the threshold for the services (`refstore serve` sets it).

use crate::limits::Limits;
use crate::Repository;
use refstore_odb::{big_file_threshold, IngestLimits};

/// The limits of a push into `repo`.
pub(crate) fn ingest_limits(repo: &Repository, limits: &Limits) -> Result<IngestLimits, String> {
    Ok(IngestLimits {
        big_file_threshold: effective_threshold(big_file_threshold(&repo.config)?, limits),
        max_inflated: limits.max_push_inflated,
    })
}

/// The lower of `core.bigFileThreshold` and the services' own threshold.
pub(crate) fn effective_threshold(core: u64, limits: &Limits) -> u64 {
    limits.big_file_threshold.map_or(core, |own| own.min(core))
}
