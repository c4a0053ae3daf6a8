//! Two processes compete for one lock file: the waiting one either gets the
//! lock when the holder releases it within the timeout, or fails with a
//! message naming the lock file — it never hangs.
//!
//! The holder is this test binary run again with `LOCK_HOLDER` set, so the
//! lock really is held by another OS process.

use refstore_fs::lock::{lock_path_for, LockError, LockFile};
use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn vfs() -> Arc<dyn Vfs> {
    Arc::new(RealFs::new())
}

/// In the child: take the lock, say so on stdout, hold it, release it.
#[test]
fn lock_holder_process() {
    let Ok(spec) = std::env::var("LOCK_HOLDER") else {
        return;
    };
    let (path, millis) = spec.rsplit_once('|').unwrap();
    let mut lock = LockFile::acquire(&vfs(), path, Duration::ZERO).unwrap();
    lock.write_all(b"held\n").unwrap();
    println!("LOCKED");
    // Holding the lock for the time asked is the contention under test.
    std::thread::sleep(Duration::from_millis(millis.parse().unwrap()));
    lock.rollback().unwrap();
}

/// Starts a holder process and returns once it holds the lock.
fn spawn_holder(target: &Path, hold: Duration) -> Child {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "lock_holder_process",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(
            "LOCK_HOLDER",
            format!("{}|{}", target.display(), hold.as_millis()),
        )
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    loop {
        let line = lines
            .next()
            .expect("the holder exited before taking the lock")
            .unwrap();
        if line.contains("LOCKED") {
            break;
        }
    }
    // Keep reading so the holder's test harness can still print its summary.
    std::thread::spawn(move || lines.for_each(drop));
    child
}

#[test]
fn waiter_fails_with_a_clear_message_when_the_holder_keeps_the_lock() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("refs-heads-main");
    let mut holder = spawn_holder(&target, Duration::from_secs(3));
    let start = Instant::now();
    let err = LockFile::acquire(&vfs(), &target, Duration::from_millis(300)).unwrap_err();
    let waited = start.elapsed();
    assert!(matches!(err, LockError::Held { .. }));
    assert!(
        waited >= Duration::from_millis(300),
        "gave up after {waited:?}"
    );
    assert!(waited < Duration::from_secs(3), "waited {waited:?}");
    let expected = format!(
        "Unable to create '{}': File exists.",
        lock_path_for(&target).display()
    );
    assert!(err.to_string().starts_with(&expected), "{err}");
    assert!(holder.wait().unwrap().success());
    assert!(
        !lock_path_for(&target).exists(),
        "the holder released its lock"
    );
}

#[test]
fn waiter_gets_the_lock_when_the_holder_releases_in_time() {
    let tmp = tempfile::tempdir().unwrap();
    let target = tmp.path().join("packed-refs");
    let mut holder = spawn_holder(&target, Duration::from_millis(200));
    let lock = LockFile::acquire(&vfs(), &target, Duration::from_secs(10)).unwrap();
    assert!(lock.lock_path().exists());
    assert!(holder.wait().unwrap().success());
    lock.rollback().unwrap();
}
