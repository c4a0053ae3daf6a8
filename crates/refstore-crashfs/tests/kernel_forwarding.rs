//! What the running kernel forwards to a FUSE daemon: `fsync`, `fdatasync`
//! and a directory `fsync` arrive as flush requests; `syncfs` arrives as
//! nothing, so it makes nothing durable. This is the premise of the crash
//! model, checked on the real kernel rather than assumed.

use std::fs::{self, File, OpenOptions};
use std::io::Write;

use refstore_crashfs::{fuse_or_explicit_skip, CrashFs, Stats, FUSE_SUPER_MAGIC};

fn mounted() -> Option<(tempfile::TempDir, CrashFs)> {
    if !fuse_or_explicit_skip("the crash-model checks") {
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    let fs = CrashFs::mount(tmp.path()).expect("mounting the FUSE test filesystem");
    Some((tmp, fs))
}

fn delta(before: Stats, after: Stats) -> (u64, u64, u64) {
    (
        after.fsync - before.fsync,
        after.fdatasync - before.fdatasync,
        after.fsyncdir - before.fsyncdir,
    )
}

#[test]
fn syncfs_reaches_no_flush_while_fsync_and_fdatasync_do() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_owned();
    let statfs = rustix::fs::statfs(&root).unwrap();
    assert_eq!(
        statfs.f_type as i64, FUSE_SUPER_MAGIC,
        "the mount reports f_type FUSE"
    );

    fs::create_dir(root.join("d")).unwrap();
    let path = root.join("d/f");
    let mut file = OpenOptions::new()
        .create_new(true)
        .read(true)
        .write(true)
        .open(&path)
        .unwrap();
    file.write_all(b"synced by syncfs only\n").unwrap();
    let dir = File::open(root.join("d")).unwrap();
    let top = File::open(&root).unwrap();

    let before = fs.stats();
    rustix::fs::syncfs(&file).unwrap();
    rustix::fs::syncfs(&dir).unwrap();
    rustix::fs::syncfs(&top).unwrap();
    assert_eq!(
        delta(before, fs.stats()),
        (0, 0, 0),
        "syncfs forwards no flush"
    );
    assert!(before.write > 0, "the write itself reached the daemon");

    // A crash now loses the file, its directory, everything.
    fs.crash().unwrap();
    assert!(!root.join("d").exists(), "syncfs made nothing durable");

    // The same with per-file and per-directory flushes.
    fs::create_dir(root.join("d")).unwrap();
    let mut file = OpenOptions::new()
        .create_new(true)
        .write(true)
        .open(&path)
        .unwrap();
    file.write_all(b"flushed\n").unwrap();
    let before = fs.stats();
    rustix::fs::fdatasync(&file).unwrap();
    assert_eq!(delta(before, fs.stats()), (0, 1, 0), "fdatasync arrives");
    rustix::fs::fsync(&file).unwrap();
    assert_eq!(delta(before, fs.stats()), (1, 1, 0), "fsync arrives");
    rustix::fs::fsync(File::open(root.join("d")).unwrap()).unwrap();
    rustix::fs::fdatasync(File::open(&root).unwrap()).unwrap();
    assert_eq!(
        delta(before, fs.stats()),
        (1, 1, 2),
        "directory fsyncs arrive"
    );
    drop(file);

    fs.crash().unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"flushed\n");
}

#[test]
fn the_model_drops_exactly_what_was_not_flushed() {
    let Some((_tmp, mut fs)) = mounted() else {
        return;
    };
    let root = fs.path().to_owned();
    fs::create_dir(root.join("refs")).unwrap();
    fs::write(root.join("refs/a"), b"old a\n").unwrap();
    fs::write(root.join("refs/b"), b"old b\n").unwrap();
    fs::write(root.join("packed"), b"packed\n").unwrap();
    fs.checkpoint();

    // a: new data flushed and renamed over, directory flushed: survives.
    fs::write(root.join("refs/a.lock"), b"new a\n").unwrap();
    rustix::fs::fdatasync(File::open(root.join("refs/a.lock")).unwrap()).unwrap();
    fs::rename(root.join("refs/a.lock"), root.join("refs/a")).unwrap();
    rustix::fs::fsync(File::open(root.join("refs")).unwrap()).unwrap();
    // b: renamed over without a data flush, directory flushed: the name
    // survives, the data does not.
    fs::write(root.join("refs/b.lock"), b"new b\n").unwrap();
    fs::rename(root.join("refs/b.lock"), root.join("refs/b")).unwrap();
    rustix::fs::fsync(File::open(root.join("refs")).unwrap()).unwrap();
    // packed: unlinked, root never flushed: comes back.
    fs::remove_file(root.join("packed")).unwrap();
    // c: created, never flushed: gone.
    fs::write(root.join("c"), b"c\n").unwrap();

    fs.crash().unwrap();
    assert_eq!(fs::read(root.join("refs/a")).unwrap(), b"new a\n");
    assert_eq!(fs::read(root.join("refs/b")).unwrap(), b"");
    assert_eq!(fs::read(root.join("packed")).unwrap(), b"packed\n");
    assert!(!root.join("c").exists());
    assert!(!root.join("refs/a.lock").exists());
}

#[test]
fn a_panicking_test_leaves_no_mount_behind() {
    if !fuse_or_explicit_skip("the unmount check") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().canonicalize().unwrap();
    let inside = dir.clone();
    let panicked = std::thread::spawn(move || {
        let fs = CrashFs::mount(&inside).unwrap();
        // A handle still open inside the mount must not keep it mounted.
        let _open = File::create(fs.path().join("f")).unwrap();
        panic!("a failing check");
    })
    .join();
    assert!(panicked.is_err());
    let mounts = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        !mounts.contains(dir.to_str().unwrap()),
        "{} is still mounted",
        dir.display()
    );
}
