//! Helpers shared by the integration tests of refstore-refs.
#![allow(dead_code)]

pub mod faults;
pub mod git;
pub mod interleave;
pub mod jgit;
pub mod scenario;
