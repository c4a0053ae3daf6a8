//! When an SSH connection has been idle too long: a connection must run a
//! service within `--timeout` of connecting, and within `--timeout` of its
//! last service ending. A client that never authenticates, or that
//! authenticates and then sits there answering keepalives, is dropped so
//! it cannot hold one of `--max-connections` forever. While a service
//! runs, the service's own reads and writes watch the client instead.

use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::Notify;
use tokio::time::Instant;

/// The services of one connection, over time.
#[derive(Debug)]
pub struct Idle {
    limit: Duration,
    state: Mutex<State>,
    changed: Notify,
}

#[derive(Debug)]
struct State {
    running: usize,
    since: Instant,
}

impl Idle {
    /// A connection that has just been accepted.
    pub fn new(limit: Duration) -> Idle {
        Idle {
            limit,
            state: Mutex::new(State {
                running: 0,
                since: Instant::now(),
            }),
            changed: Notify::new(),
        }
    }

    /// A service starts; the connection is busy until the guard drops.
    pub fn busy(self: &Arc<Self>) -> Busy {
        self.lock().running += 1;
        self.changed.notify_waiters();
        Busy(self.clone())
    }

    /// Returns once the connection has been idle for the limit.
    pub async fn expired(&self) {
        loop {
            // Registered before the state is read, so no change is missed.
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let deadline = {
                let state = self.lock();
                (state.running == 0).then(|| state.since + self.limit)
            };
            match deadline {
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = changed => {}
                    }
                }
                None => changed.await,
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A running service of a connection.
#[derive(Debug)]
pub struct Busy(Arc<Idle>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.running -= 1;
        state.since = Instant::now();
        drop(state);
        self.0.changed.notify_waiters();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn expires_only_after_the_limit_without_a_service() {
        let idle = Idle::new(Duration::from_secs(10));
        let start = Instant::now();
        idle.expired().await;
        assert_eq!(start.elapsed(), Duration::from_secs(10));

        let idle = Arc::new(Idle::new(Duration::from_secs(10)));
        let busy_for = {
            let idle = idle.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(5)).await;
                let _busy = idle.busy();
                tokio::time::sleep(Duration::from_secs(30)).await;
            })
        };
        let start = Instant::now();
        idle.expired().await;
        // Busy from 5 s to 35 s, then idle for the 10 s limit.
        assert_eq!(start.elapsed(), Duration::from_secs(45));
        busy_for.await.unwrap();
    }
}
