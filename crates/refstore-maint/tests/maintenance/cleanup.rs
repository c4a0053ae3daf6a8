//! Cleanup after crashes: what dead processes left is removed, what live
//! ones use is kept; git's maintenance and gc locks are respected, and
//! git's maintenance respects refstore's.

use super::*;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// Holds a record lock on byte 0 of the file it is given, for reading, as
/// a refstore writer holds the repository's holder file.
const HOLDER: &str = "import fcntl, sys
held = open(sys.argv[1], 'rb')
fcntl.lockf(held, fcntl.LOCK_SH, 1, 0)
print('ready', flush=True)
sys.stdin.read()
";

/// Stands for a `git gc` running on this host: a live process.
const GC: &str = "import sys
print('ready', flush=True)
sys.stdin.read()
";

/// A process standing for another program, ended when dropped (a
/// failing test's too).
struct StandIn(Child);

impl StandIn {
    /// `python3 -c <program> <arg>`, once it has said it is ready.
    fn start(program: &str, arg: &Path) -> StandIn {
        let mut child = Command::new("python3")
            .arg("-c")
            .arg(program)
            .arg(arg)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs");
        let mut line = String::new();
        let stdout = child.stdout.take().unwrap();
        let stand_in = StandIn(child);
        std::io::BufReader::new(stdout)
            .read_line(&mut line)
            .unwrap();
        assert_eq!(line, "ready\n", "the stand-in did not start");
        stand_in
    }

    fn pid(&self) -> u32 {
        self.0.id()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn cleanup_removes_crash_leftovers_and_nothing_live() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 3);
    let pack_dir = srv.join("objects/pack");
    let hour = Duration::from_secs(2 * 3600);
    let packs = pack_names(&srv, "pack");
    let a_pack = packs[0].replace(".pack", "");
    let live_keep = pack_dir.join(packs[1].replace(".pack", ".keep"));
    let write = |path: &Path, content: &str, old: bool| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, content).unwrap();
        if old {
            age(path, hour);
        }
    };
    // Left by crashed processes.
    for name in ["tmp_pack_Ab12", "tmp_idx_Ab12", "tmp_rev_Ab12"] {
        write(&pack_dir.join(name), "partial", true);
    }
    write(&srv.join("objects/ab/tmp_obj_x1"), "partial", true);
    let quarantine = srv.join("objects/tmp_objdir-incoming-q1");
    write(&quarantine.join("pack/tmp_pack_q"), "partial", true);
    age(&quarantine.join("pack"), hour);
    age(&quarantine, hour);
    write(
        &pack_dir.join(format!("{a_pack}.keep")),
        "receive-pack 2147483000 on refstore\n",
        false,
    );
    write(
        &pack_dir.join("pack-1111111111111111111111111111111111111111.keep"),
        "receive-pack 2147483001 on refstore\n",
        false,
    );
    write(
        &pack_dir.join("pack-2222222222222222222222222222222222222222.pack"),
        "PACK",
        true,
    );
    write(&srv.join("refs/heads/main.lock"), "0000\n", true);
    write(&srv.join("packed-refs.lock"), "", true);
    // In use: fresh temporary files, a live receive-pack's .keep, a fresh
    // lock, a fresh quarantine.
    write(&pack_dir.join("tmp_pack_fresh"), "writing", false);
    write(
        &live_keep,
        &format!("receive-pack {} on refstore\n", std::process::id()),
        false,
    );
    write(&srv.join("refs/heads/fresh.lock"), "0000\n", false);
    write(
        &srv.join("objects/tmp_objdir-incoming-q2/pack/tmp_pack_x"),
        "x",
        false,
    );

    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(!counted.lines().any(|l| l == "garbage: 0"), "{counted}");
    let out = maintenance(&srv, &[], &[Task::Cleanup]);
    assert!(out.contains("removed 4 temporary files, 1 quarantine directories, 2 .keep files, 1 pack files without index, 2 stale locks"), "{out}");

    for gone in [
        pack_dir.join("tmp_pack_Ab12"),
        pack_dir.join("tmp_idx_Ab12"),
        pack_dir.join("tmp_rev_Ab12"),
        srv.join("objects/ab/tmp_obj_x1"),
        quarantine.clone(),
        pack_dir.join(format!("{a_pack}.keep")),
        pack_dir.join("pack-1111111111111111111111111111111111111111.keep"),
        pack_dir.join("pack-2222222222222222222222222222222222222222.pack"),
        srv.join("refs/heads/main.lock"),
        srv.join("packed-refs.lock"),
    ] {
        assert!(!gone.exists(), "{} left", gone.display());
    }
    for kept in [
        pack_dir.join("tmp_pack_fresh"),
        live_keep.clone(),
        srv.join("refs/heads/fresh.lock"),
        srv.join("objects/tmp_objdir-incoming-q2"),
    ] {
        assert!(kept.exists(), "{} removed", kept.display());
    }
    // Nothing else was touched: the pack the dead .keep protected is
    // still there, and git finds the repository sound.
    assert!(pack_dir.join(format!("{a_pack}.pack")).exists());
    git_ok(home, &srv, &["fsck", "--strict", "--no-dangling"]);
    std::fs::remove_file(pack_dir.join("tmp_pack_fresh")).unwrap();
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.lines().any(|l| l == "garbage: 0"), "{counted}");
}

#[test]
fn an_old_lock_with_a_live_refstore_holder_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 1);
    let lock = srv.join("refs/heads/main.lock");
    std::fs::write(&lock, "0000\n").unwrap();
    age(&lock, Duration::from_secs(3600));
    // A live refstore writer elsewhere: another process holds a read lock
    // on the repository's holder file (a record lock, as refstore takes
    // it: the process holds it, so housekeeping in this process could not
    // see one of its own).
    let holders = srv.join("refstore-lock-holders/holders");
    std::fs::create_dir_all(holders.parent().unwrap()).unwrap();
    std::fs::write(&holders, "").unwrap();
    let holder = StandIn::start(HOLDER, &holders);
    maintenance(&srv, &[], &[Task::Cleanup]);
    assert!(lock.exists(), "a lock with a live holder was removed");
    drop(holder);
    maintenance(&srv, &[], &[Task::Cleanup]);
    assert!(!lock.exists(), "a stale lock was kept");
}

#[test]
fn git_maintenance_lock_and_gc_pid_are_respected() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 4);
    let packs = pack_names(&srv, "pack");
    let lock = srv.join("objects/maintenance.lock");
    let every_task = Options::default();
    // git's lock is empty: held by a git maintenance, however old.
    std::fs::write(&lock, "").unwrap();
    let skipped = try_maintenance(&srv, &[], &every_task);
    assert_eq!(skipped, None, "ran despite git's maintenance lock");
    assert_eq!(pack_names(&srv, "pack"), packs);
    assert_eq!(std::fs::read(&lock).unwrap(), b"", "git's lock was touched");
    assert!(!srv.join("gc.pid").exists());
    std::fs::remove_file(&lock).unwrap();

    // A gc running on this host (a process of this test stands for it).
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let gc = StandIn::start(GC, Path::new("-"));
    let gc_pid = format!("{} {}", gc.pid(), host.trim());
    std::fs::write(srv.join("gc.pid"), &gc_pid).unwrap();
    let skipped = try_maintenance(&srv, &[], &every_task);
    assert_eq!(skipped, None, "ran while a gc runs");
    assert_eq!(pack_names(&srv, "pack"), packs);
    // The gc's file is left as it was, and the maintenance lock released.
    assert_eq!(std::fs::read_to_string(srv.join("gc.pid")).unwrap(), gc_pid);
    assert!(!lock.exists());
    drop(gc);
    std::fs::remove_file(srv.join("gc.pid")).unwrap();

    // git's maintenance skips while a live refstore (this process) holds
    // the lock.
    std::fs::write(
        &lock,
        format!(
            "refstore maintenance {} on {}\n",
            std::process::id(),
            host.trim()
        ),
    )
    .unwrap();
    // (It says so only on a terminal; its gc would have repacked.)
    git_ok(home, &srv, &["maintenance", "run", "--task=gc"]);
    assert_eq!(pack_names(&srv, "pack"), packs);
    let held = std::fs::read(&lock).unwrap();
    let skipped = try_maintenance(&srv, &[], &every_task);
    assert_eq!(skipped, None, "ran despite a live refstore's lock");
    assert_eq!(std::fs::read(&lock).unwrap(), held);

    // A lock left by a refstore that is gone is taken over.
    std::fs::write(
        &lock,
        format!("refstore maintenance 2147483000 on {}\n", host.trim()),
    )
    .unwrap();
    maintenance(&srv, &["refstore.redundantPackExpire=now"], &[]);
    assert_ne!(pack_names(&srv, "pack"), packs);
    assert!(!lock.exists() && !srv.join("gc.pid").exists());
    // git's own gc runs afterwards and agrees with the result.
    git_ok(home, &srv, &["commit-graph", "verify"]);
    assert_git_accepts(home, &srv);
    git_ok(home, &srv, &["gc", "-q"]);
    git_ok(home, &srv, &["fsck", "--strict"]);
}
