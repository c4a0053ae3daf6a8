//! The only layer of refstore that touches the filesystem.
//!
//! Every byte refstore stores goes through the [`Vfs`] trait. Production code
//! uses [`RealFs`]; tests use `SimFs`, an in-memory filesystem that records
//! every operation and can enumerate what the disk may hold after a crash at
//! any point. Keeping all I/O behind one object-safe trait is what makes crash
//! simulation and fault injection possible for the layers above.
//!
//! Besides the trait this crate owns the two mechanisms that decide
//! durability: lockfiles (git's `<path>.lock` protocol) and flush batches
//! (the `core.fsyncMethod` methods `none`, `fsync`, `writeout-only` and
//! `batch`).
#![deny(missing_docs, unsafe_code)]

mod vfs;

pub use vfs::{DirEntry, Error, FileKind, Metadata, Op, Result, Vfs, VfsFile};
