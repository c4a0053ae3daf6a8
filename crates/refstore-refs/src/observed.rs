//! Reporting committed ref transactions to the process's observer
//! ([`refstore_fs::observe`]), for the server's commit-latency metrics.
//! Both backends time a transaction from the start of its preparation to
//! the end of its commit (locks, checks, writes, flush points, renames),
//! which is what a client waiting on a push sees.

use crate::transaction::Outcome;
use std::time::Instant;

/// When a transaction's preparation started; nothing at all when no
/// observer is installed, so unobserved processes do not read the clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CommitClock(Option<Instant>);

impl CommitClock {
    /// Starts timing a transaction.
    pub fn start() -> CommitClock {
        CommitClock(refstore_fs::observe::observer().map(|_| Instant::now()))
    }

    /// Reports the transaction committed with `outcome`.
    pub fn committed(self, outcome: &Outcome) {
        if let (Some(start), Some(observer)) = (self.0, refstore_fs::observe::observer()) {
            observer.transaction_committed(outcome.applied, start.elapsed());
        }
    }
}
