//! What a push may cost to take in, from the repository's configuration:
//! `core.bigFileThreshold` (as git reads it: a size with an optional `k`,
//! `m` or `g` suffix; 512 MiB by default), above which objects are
//! streamed, and `refstore.maxPushInflated` (git has no such key), the most
//! a push's objects may inflate to in total: 4 GiB by default, `0` for no
//! bound. `refstore serve --max-push-inflated` sets the latter.

use crate::Repository;
use refstore_odb::{big_file_threshold, IngestLimits};

/// The default of `refstore.maxPushInflated`: 4 GiB.
pub const DEFAULT_MAX_PUSH_INFLATED: u64 = 4 << 30;

/// The configuration key of the bound on what a push inflates to.
pub const MAX_PUSH_INFLATED_KEY: &str = "refstore.maxPushInflated";

/// The limits of a push into `repo`.
pub(crate) fn ingest_limits(repo: &Repository) -> Result<IngestLimits, String> {
    let big_file_threshold = big_file_threshold(&repo.config)?;
    let max_inflated = match repo
        .config
        .int(MAX_PUSH_INFLATED_KEY)
        .map_err(|e| e.to_string())?
    {
        None => Some(DEFAULT_MAX_PUSH_INFLATED),
        Some(0) => None,
        Some(max) => Some(u64::try_from(max).map_err(|_| {
            format!("bad numeric config value '{max}' for '{MAX_PUSH_INFLATED_KEY}'")
        })?),
    };
    Ok(IngestLimits {
        big_file_threshold,
        max_inflated,
    })
}
