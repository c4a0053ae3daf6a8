//! Helpers shared by the integration tests of refstore-refs: what is
//! specific to ref stores here, the rest from refstore-testsupport.
#![allow(dead_code, unused_imports)] // each test binary uses a different part

pub use refstore_testsupport::{faults, jgit};

pub mod git;
pub mod interleave;
pub mod scenario;
pub mod values;
