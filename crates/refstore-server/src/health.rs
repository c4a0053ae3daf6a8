//! Whether this process should be sent new requests, as `GET /healthz`
//! answers it to a load balancer: `starting` while it is not ready yet (a
//! cluster node still catching up, for example), `ok` once it is, and
//! `draining` from the moment it was told to stop, so that the balancer
//! sends new clients elsewhere while the requests in flight finish.

use std::sync::{Arc, Mutex};

/// One state of [`Health`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HealthState {
    /// Not ready for requests yet; the text says why.
    Starting(String),
    /// Ready.
    Ready,
    /// Told to stop: finishing what is in flight. Never left.
    Draining,
}

/// The process's health, shared by whoever changes it and the listener
/// that reports it. Clones share one state.
#[derive(Debug, Clone)]
pub struct Health {
    state: Arc<Mutex<HealthState>>,
}

impl Default for Health {
    fn default() -> Self {
        Health::ready()
    }
}

impl Health {
    /// A process ready from the start.
    pub fn ready() -> Health {
        Health::with(HealthState::Ready)
    }

    /// A process not ready until [`Health::set_ready`], for `reason`.
    pub fn starting(reason: impl Into<String>) -> Health {
        Health::with(HealthState::Starting(reason.into()))
    }

    fn with(state: HealthState) -> Health {
        Health {
            state: Arc::new(Mutex::new(state)),
        }
    }

    /// The current state.
    pub fn state(&self) -> HealthState {
        self.lock().clone()
    }

    /// Whether a load balancer should send new requests here.
    pub fn is_ready(&self) -> bool {
        *self.lock() == HealthState::Ready
    }

    /// Not ready, for `reason` (progress of a catch-up, say); ignored once
    /// draining.
    pub fn set_starting(&self, reason: impl Into<String>) {
        let mut state = self.lock();
        if *state != HealthState::Draining {
            *state = HealthState::Starting(reason.into());
        }
    }

    /// Ready; ignored once draining.
    pub fn set_ready(&self) {
        let mut state = self.lock();
        if *state != HealthState::Draining {
            *state = HealthState::Ready;
        }
    }

    /// Told to stop: reports `draining` from now on.
    pub fn begin_draining(&self) {
        *self.lock() = HealthState::Draining;
    }

    /// What `/healthz` answers: whether it is `200 OK` (else `503`), and the
    /// body's one line.
    pub fn report(&self) -> (bool, String) {
        match &*self.lock() {
            HealthState::Ready => (true, "ok\n".to_owned()),
            HealthState::Starting(reason) => (false, format!("starting: {reason}\n")),
            HealthState::Draining => (false, "draining\n".to_owned()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HealthState> {
        // A panic while holding this lock cannot leave the state half
        // written (it is one assignment), so a poisoned lock is still good.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starting_becomes_ready_and_draining_is_never_left() {
        let health = Health::starting("catching up 3 repositories");
        let seen_by_listener = health.clone();
        assert_eq!(
            seen_by_listener.report(),
            (false, "starting: catching up 3 repositories\n".to_owned())
        );
        health.set_ready();
        assert!(seen_by_listener.is_ready());
        assert_eq!(seen_by_listener.report(), (true, "ok\n".to_owned()));
        health.begin_draining();
        health.set_ready();
        health.set_starting("again");
        assert_eq!(seen_by_listener.state(), HealthState::Draining);
        assert_eq!(seen_by_listener.report(), (false, "draining\n".to_owned()));
    }
}
