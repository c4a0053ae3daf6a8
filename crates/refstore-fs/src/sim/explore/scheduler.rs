//! Handing the one turn between actor threads: every actor runs on a thread
//! of its own, but only the actor whose turn it is runs; the others wait at
//! their next filesystem operation until the controller gives them the
//! turn. So a run is a sequence of turns, fixed by the controller's choices.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// Where an actor waits for its turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// Before its first operation.
    Start,
    /// Before a filesystem operation.
    Op,
    /// Waiting to retry (a lock is held by someone else): taking the turn
    /// away from an actor here is no preemption, since it asked to wait.
    Pause,
}

/// An actor's state as the controller sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    /// Running, or not yet at its first point.
    Running,
    /// Waiting for its turn at a point.
    Waiting(Point),
    /// Returned (or panicked).
    Done,
}

#[derive(Debug)]
struct State {
    statuses: Vec<Status>,
    /// The actor whose turn it is, if any.
    turn: Option<usize>,
    /// Turns given so far: the run's logical clock.
    turns: u64,
}

/// The turn and the actors waiting for it.
#[derive(Debug)]
pub(crate) struct Scheduler {
    state: Mutex<State>,
    changed: Condvar,
}

/// How long the controller waits for an actor to reach its next point
/// before it calls the run stuck: an actor blocked on something other than
/// the turn (a mutex held across a filesystem operation by another actor).
const STUCK: Duration = Duration::from_secs(60);

impl Scheduler {
    pub(crate) fn new(actors: usize) -> Self {
        Scheduler {
            state: Mutex::new(State {
                statuses: vec![Status::Running; actors],
                turn: None,
                turns: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Called by `actor` at a point: gives the turn back and waits until the
    /// controller hands it to this actor again.
    pub(crate) fn wait_turn(&self, actor: usize, point: Point) {
        let mut state = self.lock();
        state.statuses[actor] = Status::Waiting(point);
        state.turn = None;
        self.changed.notify_all();
        while state.turn != Some(actor) {
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
        }
        state.statuses[actor] = Status::Running;
    }

    /// Called by `actor` when it is done: gives the turn back for good.
    pub(crate) fn finish(&self, actor: usize) {
        let mut state = self.lock();
        state.statuses[actor] = Status::Done;
        if state.turn == Some(actor) {
            state.turn = None;
        }
        self.changed.notify_all();
    }

    /// Turns given so far.
    pub(crate) fn turns(&self) -> u64 {
        self.lock().turns
    }

    /// For the controller: waits until no actor runs, then returns the
    /// actors waiting for a turn and where (empty once all are done).
    pub(crate) fn settle(&self) -> Vec<(usize, Point)> {
        let mut state = self.lock();
        loop {
            let running = state.statuses.contains(&Status::Running);
            if !running && state.turn.is_none() {
                break;
            }
            let (next, timeout) = self
                .changed
                .wait_timeout(state, STUCK)
                .unwrap_or_else(|e| e.into_inner());
            state = next;
            if timeout.timed_out() {
                panic!(
                    "an actor ran for {} s without reaching a filesystem operation: \
                     it is blocked on something other than its turn ({:?})",
                    STUCK.as_secs(),
                    state.statuses
                );
            }
        }
        state
            .statuses
            .iter()
            .enumerate()
            .filter_map(|(i, s)| match s {
                Status::Waiting(point) => Some((i, *point)),
                _ => None,
            })
            .collect()
    }

    /// For the controller: gives the turn to `actor`.
    pub(crate) fn give(&self, actor: usize) {
        let mut state = self.lock();
        state.turn = Some(actor);
        state.turns += 1;
        self.changed.notify_all();
    }
}
