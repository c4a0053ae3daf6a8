//! Mounting the filesystem on a directory, crashing it, and unmounting it
//! when the handle goes away (also while a failing test unwinds).

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fuser::{BackgroundSession, Config, MountOption};

use crate::daemon::{Daemon, Shared, Stats};
use crate::model::CrashMode;

/// The device the kernel's FUSE module serves; without it nothing mounts.
pub const DEV_FUSE: &str = "/dev/fuse";

/// Whether this machine can mount a FUSE filesystem at all (the device
/// exists). Mounting also needs privilege (root here; `fusermount3` for
/// other users), which [`CrashFs::mount`] reports as an error.
pub fn fuse_available() -> bool {
    Path::new(DEV_FUSE).exists()
}

/// The variable that lets tests that need FUSE skip where it is missing.
pub const ALLOW_NO_FUSE: &str = "REFSTORE_TEST_ALLOW_NO_FUSE";

/// Whether a test that needs FUSE can run: `true` where it can; where it
/// cannot, `false` (saying loudly what did not run) only if the variable
/// [`ALLOW_NO_FUSE`] is set to `1`, and a panic otherwise, so that a
/// machine without `/dev/fuse` fails the suite instead of passing checks
/// it never made. `what` names the checks, for the message.
pub fn fuse_or_explicit_skip(what: &str) -> bool {
    if fuse_available() {
        return true;
    }
    if std::env::var(ALLOW_NO_FUSE).as_deref() == Ok("1") {
        eprintln!(
            "\n*** SKIPPED ({ALLOW_NO_FUSE}=1): {DEV_FUSE} does not exist, so no FUSE \
             filesystem can be mounted here; {what} did NOT run ***\n"
        );
        return false;
    }
    panic!(
        "{DEV_FUSE} does not exist, so {what} cannot run: load the fuse module \
         (modprobe fuse) or run where /dev/fuse exists, or set {ALLOW_NO_FUSE}=1 \
         to skip these checks on purpose"
    );
}

/// A mounted crash-model filesystem.
///
/// Dropping it unmounts (lazily, so a process still inside cannot keep the
/// mount alive).
pub struct CrashFs {
    dir: PathBuf,
    shared: Arc<Shared>,
    session: Option<BackgroundSession>,
}

impl CrashFs {
    /// Mounts an empty filesystem on `dir` (an existing empty directory).
    pub fn mount(dir: impl Into<PathBuf>) -> io::Result<CrashFs> {
        let dir = dir.into().canonicalize()?;
        let shared = Arc::new(Shared::default());
        let session = Some(start(&dir, &shared)?);
        Ok(CrashFs {
            dir,
            shared,
            session,
        })
    }

    /// Where the filesystem is mounted.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The requests the daemon has received since it was first mounted.
    pub fn stats(&self) -> Stats {
        self.shared.stats()
    }

    /// Makes everything written so far durable, as a clean shutdown would:
    /// the state a test starts from.
    pub fn checkpoint(&self) {
        self.shared.checkpoint();
    }

    /// A power loss now: everything not durable is thrown away, and the
    /// filesystem is unmounted and mounted again so that the kernel's caches
    /// of the old state go too. Processes must not be working in the
    /// filesystem meanwhile (requests from the old mount fail with EIO).
    pub fn crash(&mut self) -> io::Result<()> {
        self.crash_with(CrashMode::Pessimistic)
    }

    /// [`crash`](Self::crash), keeping what `mode` says of the names.
    pub fn crash_with(&mut self, mode: CrashMode) -> io::Result<()> {
        self.shared.crash(mode);
        self.unmount_session();
        self.session = Some(start(&self.dir, &self.shared)?);
        Ok(())
    }

    /// Unmounts now, reporting a failure (drop does the same, silently).
    pub fn unmount(mut self) -> io::Result<()> {
        let Some(session) = self.session.take() else {
            return Ok(());
        };
        let detached = detach(&self.dir);
        drop(session);
        detached
    }

    fn unmount_session(&mut self) {
        let Some(session) = self.session.take() else {
            return;
        };
        // A lazy unmount succeeds even while a process (or a handle the
        // test still holds) is inside; those see the old generation's EIO.
        // fuser's own unmount is not lazy and would leave the mount behind
        // with EBUSY. After this, its attempt finds nothing mounted.
        if let Err(e) = detach(&self.dir) {
            eprintln!("refstore-crashfs: unmounting {}: {e}", self.dir.display());
        }
        drop(session);
    }
}

impl Drop for CrashFs {
    fn drop(&mut self) {
        self.unmount_session();
    }
}

fn start(dir: &Path, shared: &Arc<Shared>) -> io::Result<BackgroundSession> {
    let mut config = Config::default();
    config.mount_options = vec![
        MountOption::FSName("refstore-crashfs".into()),
        MountOption::Subtype("refstore-crashfs".into()),
        MountOption::RW,
        MountOption::NoAtime,
    ];
    fuser::spawn_mount(Daemon::new(shared.clone()), dir, &config)
}

/// `umount2(dir, MNT_DETACH)`.
fn detach(dir: &Path) -> io::Result<()> {
    rustix::mount::unmount(dir, rustix::mount::UnmountFlags::DETACH).map_err(io::Error::from)
}
