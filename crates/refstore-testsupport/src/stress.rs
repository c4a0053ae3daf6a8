//! Bounds and seeds of the stress tests, which run real processes against
//! each other for a number of rounds: the count and a time budget come
//! from the environment, so a CI run stays short and a longer hunt is one
//! variable away, and a seed makes the delays that place the processes
//! against each other repeatable (the operating system's scheduling is
//! not, so a round is likely but not certain to repeat).

pub use crate::rng::Rng;
use std::time::{Duration, Instant};

/// Rounds per test (`REFSTORE_STRESS_ROUNDS`).
pub const ROUNDS_VARIABLE: &str = "REFSTORE_STRESS_ROUNDS";
/// Seconds a test may spend on its rounds (`REFSTORE_STRESS_SECONDS`).
pub const SECONDS_VARIABLE: &str = "REFSTORE_STRESS_SECONDS";
/// The seed of the delays (`REFSTORE_STRESS_SEED`).
pub const SEED_VARIABLE: &str = "REFSTORE_STRESS_SEED";

/// How many rounds a test runs, for how long at most, and from which
/// seed.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Rounds to run.
    pub rounds: usize,
    /// Rounds stop once this much time has passed (at least one runs).
    pub time: Duration,
    /// The seed.
    pub seed: u64,
}

impl Budget {
    /// `rounds` rounds within `seconds` unless the environment says
    /// otherwise.
    pub fn from_env(rounds: usize, seconds: u64) -> Budget {
        let read = |name: &str| std::env::var(name).ok().and_then(|v| v.trim().parse().ok());
        Budget {
            rounds: read(ROUNDS_VARIABLE).map_or(rounds, |n: u64| n as usize),
            time: Duration::from_secs(read(SECONDS_VARIABLE).unwrap_or(seconds)),
            seed: read(SEED_VARIABLE).unwrap_or(23),
        }
    }

    /// Runs `round` with its number and a generator seeded for it, until
    /// the rounds or the time are used up; returns how many ran.
    pub fn run(&self, mut round: impl FnMut(usize, &mut Rng)) -> usize {
        let start = Instant::now();
        let mut done = 0;
        while done < self.rounds && (done == 0 || start.elapsed() < self.time) {
            let mut rng = Rng::new(self.seed ^ (done as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            round(done, &mut rng);
            done += 1;
        }
        done
    }
}
