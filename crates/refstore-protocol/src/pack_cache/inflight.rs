//! An entry being written: how far its producer has got and how it ended,
//! shared with the requests that follow it (read the entry as it grows).

use std::sync::{Condvar, Mutex, MutexGuard};

/// How the writing of an entry stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Still being written.
    Writing,
    /// The whole pack is in the file (published or not).
    Complete,
    /// Abandoned: followers must fail, never take what is there for a pack.
    Failed(String),
}

/// What producer and followers share.
#[derive(Debug)]
pub(crate) struct FillState {
    /// Pack bytes in the file so far.
    pub written: u64,
    pub outcome: Outcome,
    /// Requests reading the entry as it grows.
    pub followers: usize,
}

/// One entry being written.
#[derive(Debug)]
pub(crate) struct Inflight {
    /// The file being written (renamed when published: a follower opens
    /// it before and keeps reading it under its old name).
    pub temp: std::path::PathBuf,
    state: Mutex<FillState>,
    changed: Condvar,
}

impl Inflight {
    pub(crate) fn new(temp: std::path::PathBuf) -> Self {
        Inflight {
            temp,
            state: Mutex::new(FillState {
                written: 0,
                outcome: Outcome::Writing,
                followers: 0,
            }),
            changed: Condvar::new(),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, FillState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Records `n` more bytes written.
    pub(crate) fn advance(&self, n: u64) {
        self.lock().written += n;
        self.changed.notify_all();
    }

    /// Records how the writing ended (the first ending stays).
    pub(crate) fn end(&self, outcome: Outcome) {
        let mut state = self.lock();
        if state.outcome == Outcome::Writing {
            state.outcome = outcome;
        }
        drop(state);
        self.changed.notify_all();
    }

    /// Waits until more than `have` bytes are written or the writing
    /// ended; what is written then and the outcome.
    pub(crate) fn wait_past(&self, have: u64) -> (u64, Outcome) {
        let mut state = self.lock();
        while state.written <= have && state.outcome == Outcome::Writing {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        (state.written, state.outcome.clone())
    }
}
