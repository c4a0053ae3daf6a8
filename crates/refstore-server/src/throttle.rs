//! Slowing down password guessing: failed logins are counted per client
//! address and per user name, and past a few failures each further
//! attempt must wait for its turn, at intervals that grow with the
//! failures (at least [`MIN_INTERVAL`], so at most 10 guesses a second from
//! one address, up to [`MAX_INTERVAL`]).
//!
//! The count per user catches guesses spread over many addresses; it does
//! not apply to addresses the user logged in from successfully (within
//! [`FORGET`]), so guessing a user's password from one address cannot lock
//! that user out where they work. An attempt whose turn is more than
//! [`MAX_WAIT`] away is refused at once rather than queued, so waiting
//! attempts cannot pile up. Counts are forgotten [`FORGET`] after the last
//! failure.

use crate::per_address::AddressKey;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Failures that cost nothing: mistyped passwords.
pub const FREE_FAILURES: u32 = 5;
/// The interval between attempts after the free failures.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The longest interval between attempts.
pub const MAX_INTERVAL: Duration = Duration::from_secs(5);
/// The longest an attempt waits for its turn; beyond, it is refused.
pub const MAX_WAIT: Duration = Duration::from_secs(10);
/// How long failures (and successful addresses) are remembered.
pub const FORGET: Duration = Duration::from_secs(15 * 60);
/// Entries kept at most; the oldest are dropped beyond, so that made-up
/// user names cannot fill memory.
const MAX_ENTRIES: usize = 100_000;

/// What a login attempt must do before its password is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Check it now.
    Now,
    /// Wait this long, then check it.
    After(Duration),
    /// Refuse it without a check: too many failures.
    Refused,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Address(AddressKey),
    User(String),
}

#[derive(Debug)]
struct Entry {
    failures: u32,
    /// The earliest start of the next attempt.
    next: Instant,
    last_failure: Instant,
}

impl Entry {
    fn interval(&self) -> Duration {
        let doublings = self.failures.saturating_sub(FREE_FAILURES).min(16);
        (MIN_INTERVAL * 2u32.pow(doublings) / 2).clamp(MIN_INTERVAL, MAX_INTERVAL)
    }
}

/// The failed logins of a server.
#[derive(Debug, Default)]
pub struct Throttle {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    entries: HashMap<Key, Entry>,
    /// Addresses each user logged in from, with the time.
    trusted: HashMap<String, HashMap<AddressKey, Instant>>,
}

impl Throttle {
    /// No failures yet.
    pub fn new() -> Throttle {
        Throttle::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The turn of an attempt to log in as `user` from `address`, taken
    /// now: later attempts queue behind it.
    pub fn turn(&self, address: IpAddr, user: &str, now: Instant) -> Turn {
        let address = AddressKey::of(address);
        let mut state = self.lock();
        state.forget(now);
        let trusted = state
            .trusted
            .get(user)
            .is_some_and(|addresses| addresses.contains_key(&address));
        let mut keys = vec![Key::Address(address)];
        if !trusted {
            keys.push(Key::User(user.to_owned()));
        }
        let start = keys
            .iter()
            .filter_map(|key| state.entries.get(key))
            .filter(|e| e.failures >= FREE_FAILURES)
            .map(|e| e.next.max(now))
            .max()
            .unwrap_or(now);
        if start.duration_since(now) > MAX_WAIT {
            return Turn::Refused;
        }
        for key in &keys {
            if let Some(entry) = state.entries.get_mut(key) {
                if entry.failures >= FREE_FAILURES {
                    entry.next = start + entry.interval();
                }
            }
        }
        match start.duration_since(now) {
            wait if wait.is_zero() => Turn::Now,
            wait => Turn::After(wait),
        }
    }

    /// Records a failed attempt.
    pub fn failed(&self, address: IpAddr, user: &str, now: Instant) {
        let address = AddressKey::of(address);
        let mut state = self.lock();
        if state.entries.len() >= MAX_ENTRIES {
            state.drop_oldest();
        }
        for key in [Key::Address(address), Key::User(user.to_owned())] {
            let entry = state.entries.entry(key).or_insert(Entry {
                failures: 0,
                next: now,
                last_failure: now,
            });
            entry.failures = entry.failures.saturating_add(1);
            entry.last_failure = now;
            if entry.failures == FREE_FAILURES {
                entry.next = entry.next.max(now) + entry.interval();
            }
        }
    }

    /// Records a successful login: the address is trusted for the user,
    /// and its own failures are forgiven.
    pub fn succeeded(&self, address: IpAddr, user: &str, now: Instant) {
        let address = AddressKey::of(address);
        let mut state = self.lock();
        state.entries.remove(&Key::Address(address));
        if state.trusted.len() >= MAX_ENTRIES {
            state.trusted.clear();
        }
        state
            .trusted
            .entry(user.to_owned())
            .or_default()
            .insert(address, now);
    }
}

impl State {
    fn forget(&mut self, now: Instant) {
        let fresh = |at: Instant| now.saturating_duration_since(at) < FORGET;
        self.entries.retain(|_, e| fresh(e.last_failure));
        self.trusted.retain(|_, addresses| {
            addresses.retain(|_, at| fresh(*at));
            !addresses.is_empty()
        });
    }

    fn drop_oldest(&mut self) {
        let mut times: Vec<Instant> = self.entries.values().map(|e| e.last_failure).collect();
        times.sort();
        let cut = times[times.len() / 2];
        self.entries.retain(|_, e| e.last_failure > cut);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// Attempts of `user` from `address`, all failing, each started at its
    /// turn; how many were checked within `span`.
    fn guess(
        throttle: &Throttle,
        address: IpAddr,
        user: &str,
        start: Instant,
        span: Duration,
    ) -> u32 {
        let mut now = start;
        let mut checked = 0;
        while now < start + span {
            match throttle.turn(address, user, now) {
                Turn::Now => {}
                Turn::After(wait) => now += wait,
                Turn::Refused => break,
            }
            if now >= start + span {
                break;
            }
            throttle.failed(address, user, now);
            checked += 1;
        }
        checked
    }

    #[test]
    fn guessing_is_held_to_ten_a_second_and_slows_down_further() {
        let throttle = Throttle::new();
        let start = Instant::now();
        let checked = guess(
            &throttle,
            at("10.0.0.1"),
            "alice",
            start,
            Duration::from_secs(1),
        );
        assert!(checked <= FREE_FAILURES + 10, "{checked}");
        assert!(checked > FREE_FAILURES, "{checked}");
        // Further on, the intervals have grown.
        let later = guess(
            &throttle,
            at("10.0.0.1"),
            "bob",
            start + Duration::from_secs(1),
            Duration::from_secs(10),
        );
        assert!(later < 10, "{later}");
    }

    #[test]
    fn a_user_s_own_addresses_are_not_held_up_by_guesses_elsewhere() {
        let throttle = Throttle::new();
        let now = Instant::now();
        throttle.succeeded(at("10.0.0.2"), "alice", now);
        for _ in 0..50 {
            throttle.failed(at("10.0.0.1"), "alice", now);
        }
        assert_eq!(throttle.turn(at("10.0.0.2"), "alice", now), Turn::Now);
        // An address alice never used waits, as the guesser does.
        assert_ne!(throttle.turn(at("10.0.0.3"), "alice", now), Turn::Now);
        assert_ne!(throttle.turn(at("10.0.0.1"), "bob", now), Turn::Now);
        // Once the failures are old, nobody waits.
        let later = now + FORGET + Duration::from_secs(1);
        assert_eq!(throttle.turn(at("10.0.0.1"), "alice", later), Turn::Now);
    }

    #[test]
    fn attempts_far_behind_in_the_queue_are_refused() {
        let throttle = Throttle::new();
        let now = Instant::now();
        for _ in 0..30 {
            throttle.failed(at("10.0.0.1"), "x", now);
        }
        let refused = (0..100)
            .map(|_| throttle.turn(at("10.0.0.1"), "y", now))
            .filter(|t| *t == Turn::Refused)
            .count();
        assert!(refused > 0);
    }
}
