//! Signals, and how the server stops on them.
//!
//! SIGTERM and SIGINT set a flag; [`drain_on`] turns it into the phases of
//! a graceful stop. At the first signal the process reports itself
//! draining ([`Health::begin_draining`], which `/healthz` answers) at
//! once, and goes on accepting and serving requests for the drain period,
//! so that a load balancer's health checks notice and send new clients
//! elsewhere before anything is refused; then the transports stop
//! accepting and the requests in flight finish before the process exits.
//! A second signal during the drain period ends it at once, as an
//! operator pressing Ctrl-C twice expects. SIGHUP sets another flag, which
//! asks for configuration files to be read again.

use crate::health::Health;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the draining thread looks at the signal flag.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

/// A flag that SIGTERM or SIGINT sets.
pub fn on_signals() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        signal_hook::flag::register(signal, flag.clone())?;
    }
    Ok(flag)
}

/// A flag that SIGHUP sets (whoever reloads clears it).
pub fn on_hangup() -> std::io::Result<Arc<AtomicBool>> {
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register(signal_hook::consts::SIGHUP, flag.clone())?;
    Ok(flag)
}

/// Watches `signalled` (from [`on_signals`]) on a thread of its own: at
/// its first setting `health` turns draining, and `drain` later (or at
/// once, when the flag is set again meanwhile) the flag returned is set,
/// on which the transports stop accepting connections and finish what is
/// in flight. A zero `drain` stops accepting at once.
pub fn drain_on(
    signalled: Arc<AtomicBool>,
    health: Health,
    drain: Duration,
) -> std::io::Result<Arc<AtomicBool>> {
    let stop_accepting = Arc::new(AtomicBool::new(false));
    let stop = stop_accepting.clone();
    std::thread::Builder::new()
        .name("refstore-drain".into())
        .spawn(move || {
            // Cleared when seen, so that a second signal shows.
            while !signalled.swap(false, Ordering::Relaxed) {
                std::thread::sleep(SIGNAL_POLL);
            }
            health.begin_draining();
            if !drain.is_zero() {
                tracing::info!(
                    drain_s = drain.as_secs_f64(),
                    "draining: /healthz answers draining; still serving until the drain time \
                     is over (a second SIGTERM or SIGINT ends it)"
                );
                let deadline = Instant::now() + drain;
                while Instant::now() < deadline {
                    if signalled.load(Ordering::Relaxed) {
                        tracing::info!("signalled again: draining cut short");
                        break;
                    }
                    std::thread::sleep(SIGNAL_POLL.min(deadline - Instant::now()));
                }
            }
            tracing::info!("stopping: no new connections; finishing the requests in flight");
            stop.store(true, Ordering::Relaxed);
        })?;
    Ok(stop_accepting)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::HealthState;

    /// Waits up to ten seconds for `done`.
    fn eventually(what: &str, done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting until {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    #[test]
    fn a_signal_drains_at_once_and_stops_accepting_after_the_drain_time() {
        let signalled = Arc::new(AtomicBool::new(false));
        let health = Health::ready();
        let drain = Duration::from_millis(400);
        let stop = drain_on(signalled.clone(), health.clone(), drain).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(health.is_ready());
        assert!(!stop.load(Ordering::Relaxed));

        let signal = Instant::now();
        signalled.store(true, Ordering::Relaxed);
        eventually("draining", || health.state() == HealthState::Draining);
        assert!(
            !stop.load(Ordering::Relaxed),
            "stopped accepting when draining began"
        );
        eventually("accepting stops", || stop.load(Ordering::Relaxed));
        assert!(signal.elapsed() >= drain, "{:?}", signal.elapsed());
    }

    #[test]
    fn a_second_signal_ends_the_drain_time() {
        let signalled = Arc::new(AtomicBool::new(false));
        let health = Health::ready();
        let stop = drain_on(signalled.clone(), health.clone(), Duration::from_secs(3600)).unwrap();
        signalled.store(true, Ordering::Relaxed);
        eventually("draining", || health.state() == HealthState::Draining);
        // The first signal has been seen (and cleared) once draining shows.
        std::thread::sleep(Duration::from_millis(100));
        assert!(!stop.load(Ordering::Relaxed));
        signalled.store(true, Ordering::Relaxed);
        eventually("accepting stops", || stop.load(Ordering::Relaxed));
    }

    #[test]
    fn no_drain_time_stops_accepting_at_the_signal() {
        let signalled = Arc::new(AtomicBool::new(true));
        let health = Health::starting("catching up");
        let stop = drain_on(signalled, health.clone(), Duration::ZERO).unwrap();
        eventually("accepting stops", || stop.load(Ordering::Relaxed));
        assert_eq!(health.state(), HealthState::Draining);
    }
}
