//! Schedule budgets for the concurrency explorer (`refstore_fs::sim::explore`):
//! every exploration's budget is multiplied by `REFSTORE_EXPLORE_SCALE`, so
//! that a longer run explores more without a change to any test.

use refstore_fs::sim::explore::Strategy;

/// The multiplier of schedule budgets (`REFSTORE_EXPLORE_SCALE`, 1 when
/// unset).
pub fn scale() -> usize {
    std::env::var("REFSTORE_EXPLORE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Every schedule with at most `preemptions` preemptions, up to `limit`
/// schedules (scaled).
pub fn bounded(preemptions: u32, limit: usize) -> Strategy {
    Strategy::Bounded {
        preemptions,
        limit: limit * scale(),
    }
}

/// `count` random schedules (scaled) from `seed`, `depth` steps deep at
/// most.
pub fn random(seed: u64, count: usize, depth: usize) -> Strategy {
    Strategy::Random {
        seed,
        count: count * scale(),
        depth,
    }
}
