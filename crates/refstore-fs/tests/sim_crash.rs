//! SimFs shows both sides of the crash model: replacing a file without the
//! right flushes can lose it or leave garbage after a crash, and with them
//! it cannot.

use refstore_fs::sim::{CrashOptions, Fault, SimFs, ENOSPC};
use refstore_fs::{Op, Vfs};
use std::path::Path;

const REF: &str = "/repo/refs/heads/main";
const LOCK: &str = "/repo/refs/heads/main.lock";
const OLD: &[u8] = b"1111111111111111111111111111111111111111\n";
const NEW: &[u8] = b"2222222222222222222222222222222222222222\n";

#[derive(Clone, Copy)]
struct Flushes {
    file: bool,
    dir: bool,
    syncfs: bool,
}

/// A repository with `REF` = OLD, durable, then the replacement of `REF` by
/// NEW through a lock file, recorded, acknowledged at the end.
fn replace(flushes: Flushes) -> SimFs {
    replace_on(SimFs::new(), flushes)
}

/// [`replace`] on a given (empty) filesystem.
fn replace_on(sim: SimFs, flushes: Flushes) -> SimFs {
    sim.create_dir_all(Path::new("/repo/refs/heads")).unwrap();
    sim.create_exclusive(Path::new(REF))
        .unwrap()
        .write_all(OLD)
        .unwrap();
    sim.sync_all();
    sim.start_recording();

    let mut lock = sim.create_exclusive(Path::new(LOCK)).unwrap();
    lock.write_all(NEW).unwrap();
    if flushes.file {
        lock.fsync().unwrap();
    }
    drop(lock);
    sim.rename(Path::new(LOCK), Path::new(REF)).unwrap();
    if flushes.dir {
        sim.fsync_dir(Path::new("/repo/refs/heads")).unwrap();
    }
    if flushes.syncfs {
        sim.syncfs(Path::new("/repo")).unwrap();
    }
    sim.acknowledge("main updated");
    sim
}

/// The ref reads as its old or new value; after the acknowledgement, as new.
fn old_or_new(sim: &SimFs) -> Result<refstore_fs::sim::CrashReport, String> {
    sim.check_crashes(&CrashOptions::default(), |crashed| {
        let content = crashed
            .fs
            .read(Path::new(REF))
            .map_err(|e| format!("ref unreadable: {e}"))?;
        let acknowledged = !crashed.acknowledged.is_empty();
        match content.as_slice() {
            c if c == NEW => Ok(()),
            c if c == OLD && !acknowledged => Ok(()),
            c if c == OLD => Err("acknowledged update lost: ref has its old value".into()),
            c => Err(format!(
                "ref holds garbage: {:?}",
                String::from_utf8_lossy(c)
            )),
        }
    })
    .map_err(|v| v.to_string())
}

#[test]
fn unflushed_write_and_rename_can_leave_the_ref_missing_or_garbage() {
    let sim = replace(Flushes {
        file: false,
        dir: false,
        syncfs: false,
    });
    let violation = old_or_new(&sim).expect_err("no flushes must be able to lose data");
    // The report names the operations and the state that broke the invariant.
    assert!(
        violation.contains("rename /repo/refs/heads/main.lock"),
        "{violation}"
    );
    assert!(
        violation.contains("entry /repo/refs/heads/main"),
        "{violation}"
    );

    // Among the states: the renamed name persisted but its data did not.
    let mut empty = false;
    let mut zero_filled = false;
    sim.check_crashes(&CrashOptions::default(), |crashed| {
        let content = crashed.fs.read(Path::new(REF)).unwrap();
        empty |= content.is_empty();
        zero_filled |= !content.is_empty() && content.iter().all(|&b| b == 0);
        Ok(())
    })
    .unwrap();
    assert!(empty, "a crash state with an empty ref exists");
    assert!(zero_filled, "a crash state with a zero-filled ref exists");
}

#[test]
fn an_unflushed_new_file_can_vanish() {
    let sim = SimFs::new();
    sim.mkdir(Path::new("/repo")).unwrap();
    sim.sync_all();
    sim.start_recording();
    let mut f = sim.create_exclusive(Path::new("/repo/new")).unwrap();
    f.write_all(NEW).unwrap();
    f.fsync().unwrap();
    sim.acknowledge("created");
    let violation = sim
        .check_crashes(&CrashOptions::default(), |crashed| {
            match crashed.fs.read(Path::new("/repo/new")) {
                Err(e) if e.is_not_found() && !crashed.acknowledged.is_empty() => {
                    Err("acknowledged file missing".into())
                }
                _ => Ok(()),
            }
        })
        .unwrap_err();
    assert_eq!(violation.message, "acknowledged file missing");
    assert_eq!(violation.point, 3);
}

#[test]
fn file_fsync_then_rename_then_directory_fsync_is_safe() {
    let sim = replace(Flushes {
        file: true,
        dir: true,
        syncfs: false,
    });
    let report = old_or_new(&sim).unwrap();
    assert_eq!(
        report.points, 6,
        "create, write, fsync, rename, dir fsync + start"
    );
    assert!(report.states > report.points, "{report:?}");
}

#[test]
fn syncfs_after_the_rename_is_safe_with_a_file_flush_first() {
    let sim = replace(Flushes {
        file: true,
        dir: false,
        syncfs: true,
    });
    old_or_new(&sim).unwrap();
}

#[test]
fn directory_fsync_without_file_fsync_can_leave_garbage() {
    let sim = replace(Flushes {
        file: false,
        dir: true,
        syncfs: false,
    });
    let violation = old_or_new(&sim).unwrap_err();
    assert!(violation.contains("garbage"), "{violation}");
}

#[test]
fn file_fsync_without_directory_fsync_can_lose_the_acknowledged_rename() {
    let sim = replace(Flushes {
        file: true,
        dir: false,
        syncfs: false,
    });
    let violation = old_or_new(&sim).unwrap_err();
    assert!(
        violation.contains("acknowledged update lost"),
        "{violation}"
    );
}

#[test]
fn an_injected_enospc_fails_the_write_and_changes_nothing() {
    let sim = SimFs::new();
    sim.create_dir_all(Path::new("/repo")).unwrap();
    sim.create_exclusive(Path::new("/repo/a"))
        .unwrap()
        .write_all(OLD)
        .unwrap();
    sim.inject(Fault::first(Op::Write, ENOSPC));
    let mut f = sim.create_exclusive(Path::new("/repo/b")).unwrap();
    let err = f.write_all(NEW).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(ENOSPC));
    assert_eq!(err.op, Op::Write);
    assert!(err.to_string().contains("/repo/b"), "{err}");
    assert_eq!(sim.read(Path::new("/repo/a")).unwrap(), OLD);
    assert_eq!(sim.read(Path::new("/repo/b")).unwrap(), b"");
    // The fault fires once; the next write succeeds.
    f.write_all(NEW).unwrap();
    assert_eq!(sim.read(Path::new("/repo/b")).unwrap(), NEW);
}

#[test]
fn faults_can_target_the_nth_operation_and_fsync() {
    let sim = SimFs::new();
    let before = sim.op_count();
    sim.inject(Fault::nth_op(1, ENOSPC));
    sim.mkdir(Path::new("/a")).unwrap();
    assert!(sim.mkdir(Path::new("/b")).is_err());
    sim.mkdir(Path::new("/b")).unwrap();
    assert_eq!(sim.op_count() - before, 3);
    sim.inject(Fault::first(Op::Fsync, refstore_fs::sim::EIO));
    let mut f = sim.create_exclusive(Path::new("/a/f")).unwrap();
    assert_eq!(
        f.fsync().unwrap_err().raw_os_error(),
        Some(refstore_fs::sim::EIO)
    );
}

#[test]
fn posix_semantics_of_the_live_view() {
    let sim = SimFs::new();
    assert!(sim
        .create_exclusive(Path::new("/missing/f"))
        .err()
        .unwrap()
        .is_not_found());
    sim.create_dir_all(Path::new("/d/e")).unwrap();
    assert!(sim.mkdir(Path::new("/d")).unwrap_err().is_already_exists());
    sim.create_exclusive(Path::new("/d/f")).unwrap();
    assert!(sim
        .create_exclusive(Path::new("/d/f"))
        .err()
        .unwrap()
        .is_already_exists());
    assert!(sim
        .link(Path::new("/d/f"), Path::new("/d/f"))
        .unwrap_err()
        .is_already_exists());
    sim.link(Path::new("/d/f"), Path::new("/d/g")).unwrap();
    sim.open_append(Path::new("/d/g"))
        .unwrap()
        .write_all(b"x")
        .unwrap();
    assert_eq!(sim.read(Path::new("/d/f")).unwrap(), b"x", "hard link");
    assert_eq!(
        sim.rmdir(Path::new("/d")).unwrap_err().raw_os_error(),
        Some(39)
    );
    assert_eq!(
        sim.unlink(Path::new("/d/e")).unwrap_err().raw_os_error(),
        Some(21)
    );
    assert_eq!(
        sim.read_dir(Path::new("/d/f")).unwrap_err().raw_os_error(),
        Some(20)
    );
    let t0 = sim.stat(Path::new("/d/f")).unwrap().modified;
    sim.touch(Path::new("/d/f")).unwrap();
    assert!(sim.stat(Path::new("/d/f")).unwrap().modified > t0);
    sim.rename(Path::new("relative/../d/./g"), Path::new("/d/h"))
        .unwrap();
    let mut names: Vec<_> = sim
        .read_dir(Path::new("/d"))
        .unwrap()
        .into_iter()
        .map(|e| e.name.into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["e", "f", "h"]);
}

#[test]
fn tracing_lists_each_operation_a_fault_can_be_placed_at() {
    let sim = SimFs::new();
    sim.create_dir_all(Path::new("/repo")).unwrap();
    sim.start_tracing();
    let mut f = sim.create_exclusive(Path::new("/repo/log")).unwrap();
    f.write_all(b"one\ntwo\n").unwrap();
    f.fsync().unwrap();
    sim.truncate(Path::new("/repo/log"), 4).unwrap();
    let ops: Vec<Op> = sim.traced_ops().into_iter().map(|(op, _)| op).collect();
    assert_eq!(
        ops,
        [Op::CreateExclusive, Op::Write, Op::Fsync, Op::Truncate]
    );
    assert_eq!(sim.read(Path::new("/repo/log")).unwrap(), b"one\n");
    // The third operation from here (a truncate) fails, as the trace says.
    sim.inject(Fault::nth_op(2, ENOSPC));
    sim.start_tracing();
    sim.read(Path::new("/repo/log")).unwrap();
    sim.stat(Path::new("/repo/log")).unwrap();
    let err = sim.truncate(Path::new("/repo/log"), 0).unwrap_err();
    assert_eq!(err.op, Op::Truncate);
    assert_eq!(sim.traced_ops()[2], (Op::Truncate, "/repo/log".into()));
    assert_eq!(sim.read(Path::new("/repo/log")).unwrap(), b"one\n");
}

#[test]
fn on_fuse_syncfs_flushes_nothing_and_fsync_still_does() {
    let fuse = SimFs::fuse();
    assert_eq!(
        fuse.filesystem_type(Path::new("/")).unwrap(),
        refstore_fs::FsType::FUSE
    );
    assert_eq!(
        SimFs::new().filesystem_type(Path::new("/")).unwrap(),
        refstore_fs::FsType::EXT4
    );
    // The file flushed before its rename, the directory left to syncfs.
    let syncfs_for_dir = Flushes {
        file: true,
        dir: false,
        syncfs: true,
    };
    old_or_new(&replace_on(SimFs::new(), syncfs_for_dir)).expect("syncfs flushes on ext4");
    let violation = old_or_new(&replace_on(SimFs::fuse(), syncfs_for_dir))
        .expect_err("syncfs on FUSE must be able to lose the update");
    assert!(
        violation.contains("syncfs (flushes nothing on FUSE)"),
        "{violation}"
    );
    let per_file = Flushes {
        file: true,
        dir: true,
        syncfs: false,
    };
    old_or_new(&replace_on(SimFs::fuse(), per_file)).expect("fsync flushes on FUSE");
    // Crash states of a FUSE filesystem are FUSE filesystems.
    let sim = replace_on(SimFs::fuse(), per_file);
    sim.check_crashes(&CrashOptions::default(), |crashed| {
        match crashed.fs.filesystem_type(Path::new("/")) {
            Ok(refstore_fs::FsType::FUSE) => Ok(()),
            other => Err(format!("crashed filesystem reports {other:?}")),
        }
    })
    .unwrap();
}
