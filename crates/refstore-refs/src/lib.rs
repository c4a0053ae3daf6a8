//! References: names, values, transactions and the two on-disk formats.
//!
//! This crate knows what a Git reference is and how the "files" format
//! (loose refs + `packed-refs`) and the "reftable" format store it. All
//! storage goes through [`refstore_fs::Vfs`], so every backend can be run on
//! the crash-simulating filesystem in tests.
#![deny(missing_docs, unsafe_code)]

pub mod availability;
pub mod backend;
pub mod error;
pub mod files;
pub mod identity;
mod observed;
pub mod peel;
pub mod plan;
pub mod reftable;
pub mod resolve;
pub mod transaction;
pub mod value;

pub use backend::Backend;
pub use error::{CommitError, ReadError};
pub use name::{InvalidName, RefName};
pub use peel::PeelObjects;
pub use refstore_hash::{ObjectFormat, ObjectId, ParseOidError};
/// Reference names and their rules, from their own crate (fsck checks tag
/// names by them too).
pub use refstore_refname as name;
