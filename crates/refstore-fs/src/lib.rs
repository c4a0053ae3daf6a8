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
//!
//! # The `batch` flush point
//!
//! `sync_file_range` alone, git's original batch mechanism, is not a data
//! integrity guarantee on Linux: it neither flushes the device cache nor
//! writes the metadata needed to find the data. Two correct mechanisms were
//! measured with `bench/src/bin/flush_mechanism.rs` (a transaction of N
//! 41-byte files: create, stage, flush point, rename, directory flush point;
//! median of 9 rounds, ext4 on a virtio disk, 2 cores):
//!
//! | files | no flush | fsync each file | batch: concurrent fdatasync | batch: one syncfs |
//! |---:|---:|---:|---:|---:|
//! | 1 | 0.02 ms | 0.52 ms | 0.60 ms | 0.45 ms |
//! | 10 | 0.23 ms | 3.31 ms | 1.71 ms | 0.87 ms |
//! | 100 | 2.85 ms | 33.70 ms | 12.48 ms | 4.81 ms |
//! | 1000 | 23.63 ms | 422.67 ms | 121.34 ms | 58.43 ms |
//!
//! One `syncfs` is the fastest at every size, so it is the default
//! [`flush::BatchMechanism`]. Its cost grows with whatever else is dirty on
//! the same filesystem, so hosts with heavy unrelated write traffic may prefer
//! [`flush::BatchMechanism::ConcurrentFsync`], which flushes only the
//! transaction's own files.
//!
//! # Example
//!
//! Two refs replaced durably with two flush points:
//!
//! ```
//! use refstore_fs::flush::{FlushBatch, FlushMethod};
//! use refstore_fs::lock::{commit_all, LockFile};
//! use refstore_fs::{real::RealFs, Vfs};
//! use std::{sync::Arc, time::Duration};
//!
//! let dir = tempfile::tempdir()?;
//! let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
//! let mut locks = Vec::new();
//! for name in ["main", "topic"] {
//!     let mut lock = LockFile::acquire(&vfs, dir.path().join(name), Duration::from_millis(100))?;
//!     lock.write_all(b"0123456789abcdef0123456789abcdef01234567\n")?;
//!     locks.push(lock);
//! }
//! let mut batch = FlushBatch::new(vfs.clone(), FlushMethod::Batch, dir.path());
//! commit_all(locks, &mut batch)?;
//! assert_eq!(vfs.read(&dir.path().join("topic"))?.len(), 41);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs, unsafe_code)]

pub mod config;
pub mod confine;
pub mod discover;
pub mod flush;
pub mod lock;
mod mapped;
pub mod real;
pub mod sim;
mod vfs;

pub use mapped::Mapped;
pub use vfs::{DirEntry, Error, FileKind, FsType, Metadata, Op, Result, Vfs, VfsFile};
