//! Helpers shared by the benchmark programs in `bench/src/bin/`.
//!
//! The benchmark runner is `bench/run`; it builds these programs in release
//! mode and compares refstore with the machine's git in the same run.
#![deny(missing_docs)]

/// Median of a set of measurements (sorts in place; panics on empty input).
pub fn median(samples: &mut [f64]) -> f64 {
    assert!(!samples.is_empty(), "median of no samples");
    samples.sort_by(|a, b| a.total_cmp(b));
    let mid = samples.len() / 2;
    if samples.len() % 2 == 0 {
        (samples[mid - 1] + samples[mid]) / 2.0
    } else {
        samples[mid]
    }
}
