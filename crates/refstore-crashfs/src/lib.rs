//! refstore-crashfs: a test tool, not part of refstore. An in-memory FUSE
//! filesystem that models a power loss, for checking that what refstore
//! acknowledges survives one on a real kernel's FUSE mount.
//!
//! Every file and directory has two states: what is durable and what is
//! only cached (see [`model`] for the exact, pessimistic rules). `write`,
//! `create`, `rename`, `link`, `unlink` change the cached state; the
//! kernel's `FUSE_FSYNC` (from `fsync`/`fdatasync`) makes a file's data
//! durable and `FUSE_FSYNCDIR` a directory's entries. [`CrashFs::crash`]
//! throws away everything else ([`CrashFs::crash_with`] can keep the names
//! and lose only unflushed data, as a journaling filesystem would).
//!
//! Nothing else is a flush, because the kernel forwards nothing else: it
//! sends no request for `syncfs(2)` or `sync(2)` to an ordinary FUSE daemon
//! (only virtiofs has `FUSE_SYNCFS`), so a program relying on `syncfs` here
//! loses its writes, exactly as it would on sshfs, s3fs, GlusterFS or any
//! other FUSE-mounted storage. The daemon counts the flush requests it gets
//! ([`Stats`]) so a test can check that on the running kernel.
//!
//! `statfs` on the mount reports `f_type` FUSE (the kernel fills it in).
//!
//! Mounting needs `/dev/fuse` and root (the mount is made with `mount(2)`;
//! other users need `fusermount3`). The `refstore-crashfs` binary mounts one
//! from a shell; tests use [`CrashFs`] in process.

pub mod daemon;
pub mod model;
mod mount;

pub use daemon::Stats;
pub use model::CrashMode;
pub use mount::{fuse_available, fuse_or_explicit_skip, CrashFs, ALLOW_NO_FUSE, DEV_FUSE};

/// The `f_type` `statfs(2)` reports for every FUSE filesystem.
pub const FUSE_SUPER_MAGIC: i64 = 0x6573_5546;
