//! What the server's integration tests share: the server run in the
//! test's own process on a free port ([`serve`]), what it logs and what
//! the storage layers report to it ([`alone`]), clients speaking to it
//! ([`clients`]), TLS certificates and SSH keys ([`keys`]), and the
//! repositories several tests read ([`repos`]).
//!
//! Each test binary includes it with `#[path = "../support/mod.rs"]`.
#![allow(dead_code, unused_imports)] // each test binary uses a different part

pub mod alone;
pub mod clients;
pub mod keys;
pub mod repos;
pub mod serve;

pub use clients::*;
pub use refstore_testsupport::fixtures::{self, bare_clone, Work};
pub use refstore_testsupport::pkt_line;
pub use refstore_testsupport::prometheus;
pub use refstore_testsupport::{git, git_ok, isolate, run_with_input, stderr, stdout, Git};
pub use serve::{Serve, Served};

/// `len` bytes that do not compress, the same on every run.
pub fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed;
    (0..len)
        .map(|_| {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 56) as u8
        })
        .collect()
}
