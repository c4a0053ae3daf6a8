//! Git's binary deltas, both ways: [`apply_delta`] rebuilds an object from
//! its base and a delta (pack entries of type `OFS_DELTA` and
//! `REF_DELTA`); [`DeltaIndex`] describes a target as a delta from an
//! indexed base (what a fetch's pack and a repack write).
//!
//! A delta is two sizes (base, result) as little-endian base-128 numbers,
//! then instructions: a byte with the high bit set copies a range of the
//! base (its low bits say which offset and size bytes follow), any other
//! non-zero byte inserts that many literal bytes.

mod apply;
mod encode;

pub(crate) use apply::read_size;
pub use apply::{apply_delta, DeltaError};
pub use encode::DeltaIndex;
