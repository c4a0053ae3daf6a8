//! The only layer of refstore that touches the filesystem.
//!
//! Every byte refstore stores goes through the [`Vfs`] trait. Production code
//! uses [`real::RealFs`]; tests use [`sim::SimFs`], an in-memory filesystem
//! that records every operation and can enumerate what the disk may hold
//! after a crash at any point. Keeping all I/O behind one object-safe trait is
//! what makes crash simulation and fault injection possible for the layers
//! above.
//!
//! Besides the trait this crate owns the mechanisms that decide durability
//! (lockfiles with git's `<path>.lock` protocol, and flush batches for the
//! `core.fsyncMethod` methods `none`, `fsync`, `writeout-only` and `batch`),
//! and the two things every command needs before it can touch a repository:
//! finding it ([`discover`]) and reading its configuration ([`config`]).
#![deny(missing_docs, unsafe_code)]

pub mod config;
pub mod discover;
pub mod flush;
pub mod lock;
pub mod real;
pub mod sim;
mod vfs;

pub use vfs::{DirEntry, Error, FileKind, Metadata, Op, Result, Vfs, VfsFile};
