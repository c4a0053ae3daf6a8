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
//! writes the metadata needed to find the data. The correct mechanisms were
//! measured with `bench/src/bin/flush_mechanism.rs` (a transaction of N
//! 41-byte files: create, stage, flush point, rename, directory flush point;
//! medians, ext4 on a virtio disk, 2 cores). On a quiet machine (9 rounds):
//!
//! | files | no flush | fsync each file | batch: concurrent fdatasync | batch: one syncfs |
//! |---:|---:|---:|---:|---:|
//! | 1 | 0.02 ms | 0.52 ms | 0.60 ms | 0.45 ms |
//! | 10 | 0.23 ms | 3.31 ms | 1.71 ms | 0.87 ms |
//! | 100 | 2.85 ms | 33.70 ms | 12.48 ms | 4.81 ms |
//! | 1000 | 23.63 ms | 422.67 ms | 121.34 ms | 58.43 ms |
//!
//! The same machine shared with other builds (load average 3.4 to 4.5, so
//! other processes' dirty data waits on the same filesystem), three runs
//! (`bench/run flush-mechanism`, 5 and 7 rounds), with io_uring submitting
//! all `fdatasync` calls as one batch as a third way (medians of the three
//! runs, the quietest first):
//!
//! | files | no flush | fsync each file | concurrent fdatasync (threads) | one syncfs | io_uring fdatasync |
//! |---:|---:|---:|---:|---:|---:|
//! | 1 | 0.02–0.03 ms | 0.62 / 3.9 / 7.7 ms | 0.53 / 5.2 / 7.9 ms | 0.77 / 10.7 / 12.4 ms | 0.69 / 3.5 / 8.0 ms |
//! | 10 | 0.25–0.43 ms | 3.3 / 44 / 40 ms | 2.9 / 3.4 / 4.9 ms | 1.0 / 12.4 / 9.7 ms | 1.7 / 4.3 / 6.9 ms |
//! | 100 | 4.3–13.6 ms | 41 / 401 / 360 ms | 8.5 / 25.2 / 27.6 ms | 8.3 / 16.1 / 23.7 ms | 22.1 / 27.8 / 20.6 ms |
//! | 1000 | 40–71 ms | 356 / 3620 / 1452 ms | 134 / 267 / 90 ms | 69 / 124 / 80 ms | 170 / 278 / 139 ms |
//!
//! One `syncfs` is the fastest from 100 files up in every run, and at every
//! size on a quiet machine; io_uring does not beat threads (the kernel runs each
//! `fsync` request on a worker thread of its own, much as refstore's
//! threads do), so refstore does not use it. But `syncfs` is a flush only
//! where the filesystem makes it one: on FUSE it sends the daemon no flush
//! request at all, so acknowledged updates would be lost. The default
//! [`flush::BatchMechanism::Auto`] therefore asks `statfs` for the
//! filesystem's type when a batch first flushes (about 2 µs, not cached)
//! and uses `syncfs` on ext2/ext3/ext4, XFS, Btrfs and F2FS (and on
//! tmpfs/ramfs, where nothing is durable anyway), concurrent `fdatasync`
//! everywhere else ([`flush::BatchMechanism::for_filesystem`]), whatever
//! the transaction's size. A one-ref update flushes two files (the ref and
//! its reflog) and two directories; the second table of
//! `bench/run flush-mechanism` measures that shape (per update, medians of
//! 5 rounds of 100 updates; the second row with a loop rewriting a 64 MiB
//! file through the page cache beside it, and a build running):
//!
//! | | syncfs | concurrent fdatasync | one by one | write-back, then one by one | fsync each file |
//! |---|---:|---:|---:|---:|---:|
//! | quiet | 0.44 ms | 0.68 ms | 0.63 ms | 0.56 ms | 0.72 ms |
//! | beside other writers | 0.70 ms | 3.78 ms | 1.34 ms | 1.05 ms | 1.77 ms |
//!
//! A `syncfs` still writes back whatever else is dirty on the filesystem
//! (the 1- and 10-file rows of the busy table above), so hosts with heavy unrelated write traffic may
//! prefer `refstore.batchFlush=fdatasync`
//! ([`flush::BatchMechanism::ConcurrentFsync`]), which flushes only the
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
pub mod discover;
pub mod flush;
pub mod interpose;
pub mod kill_at;
pub mod lock;
mod mapped;
pub mod observe;
pub mod real;
pub mod resident;
pub mod sim;
pub mod stale;
pub mod temp;
mod vfs;

pub use mapped::Mapped;
pub use vfs::{DirEntry, Error, FileKind, FsType, Metadata, Op, RecordLock, Result, Vfs, VfsFile};
