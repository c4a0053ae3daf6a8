//! A writer killed between taking its lock and renaming it does not leave
//! the store unwritable: once the lock is older than `refstore.staleLockAge`
//! and its holder is gone, the next writer removes it with a warning and
//! succeeds. A lock whose holder is alive is never removed, however old.
//!
//! The killed writer is a real `refstore update-ref --stdin` stopped with
//! SIGKILL after `prepare: ok` (its locks taken, nothing renamed); ages are
//! made by setting the lock file's modification time back, not by waiting.

mod support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime};

/// The writer's acknowledgements, read as they come.
type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;
use support::{git, git_ok, isolate, refstore, stderr, stdout};

#[derive(Clone, Copy, Debug)]
enum Format {
    Files,
    Reftable,
}

struct Repo {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    dir: PathBuf,
    format: Format,
    commits: Vec<String>,
}

impl Repo {
    fn new(format: Format) -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_owned();
        let mut init = vec!["init", "-q", "-b", "main"];
        if let Format::Reftable = format {
            init.push("--ref-format=reftable");
        }
        init.push("r");
        let out = refstore(&home, &home, &init);
        assert!(out.status.success(), "{}", stderr(&out));
        let dir = home.join("r");
        let tree = run(
            &home,
            &dir,
            &["hash-object", "-t", "tree", "-w", "--stdin"],
            "",
        );
        let commits = (1..=4)
            .map(|n| {
                let body = format!(
                    "tree {}\nauthor A <a@example.com> {n} +0000\ncommitter C <c@example.com> {n} +0000\n\nc{n}\n",
                    tree.trim()
                );
                run(&home, &dir, &["hash-object", "-t", "commit", "-w", "--stdin"], &body)
                    .trim()
                    .to_owned()
            })
            .collect::<Vec<_>>();
        let out = refstore(&home, &dir, &["update-ref", "refs/heads/main", &commits[0]]);
        assert!(out.status.success(), "{}", stderr(&out));
        Repo {
            _tmp: tmp,
            home,
            dir,
            format,
            commits,
        }
    }

    /// The lock a transaction on `refs/heads/main` holds.
    fn lock_path(&self) -> PathBuf {
        match self.format {
            Format::Files => self.dir.join(".git/refs/heads/main.lock"),
            Format::Reftable => self.dir.join(".git/reftable/tables.list.lock"),
        }
    }

    /// A writer that has locked `refs/heads/main` for `new` and waits.
    fn prepared_writer(&self, new: &str) -> (Child, ChildStdin, Lines) {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, &self.home)
            .args(["update-ref", "--stdin"])
            .current_dir(&self.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut stdin = child.stdin.take().unwrap();
        write!(stdin, "start\nupdate refs/heads/main {new}\nprepare\n").unwrap();
        stdin.flush().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        for expected in ["start: ok", "prepare: ok"] {
            assert_eq!(lines.next().unwrap().unwrap(), expected);
        }
        assert!(self.lock_path().exists(), "prepared without a lock file");
        (child, stdin, lines)
    }

    fn main(&self) -> String {
        let out = refstore(&self.home, &self.dir, &["rev-parse", "refs/heads/main"]);
        if out.status.success() {
            return stdout(&out).trim().to_owned();
        }
        let out = refstore(
            &self.home,
            &self.dir,
            &["for-each-ref", "--format=%(objectname)", "refs/heads/main"],
        );
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out).trim().to_owned()
    }

    fn update(&self, age: &str, new: &str) -> std::process::Output {
        let setting = format!("refstore.staleLockAge={age}");
        refstore(
            &self.home,
            &self.dir,
            &["-c", &setting, "update-ref", "refs/heads/main", new],
        )
    }

    fn check_intact(&self) {
        let verify = refstore(&self.home, &self.dir, &["refs", "verify"]);
        assert!(verify.status.success(), "{}", stderr(&verify));
        if let Format::Files = self.format {
            assert_eq!(
                git_ok(&self.home, &self.dir, &["rev-parse", "refs/heads/main"]).trim(),
                self.main()
            );
            let fsck = git(&self.home, &self.dir, &["fsck", "--no-dangling"]);
            assert!(fsck.status.success(), "{}", stderr(&fsck));
        }
    }
}

fn run(home: &Path, dir: &Path, args: &[&str], input: &str) -> String {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home).args(args).current_dir(dir);
    let out = support::run_with_input(&mut cmd, input.as_bytes());
    assert!(out.status.success(), "{args:?}: {}", stderr(&out));
    stdout(&out)
}

fn age_by(path: &Path, by: Duration) {
    let file = std::fs::File::options().write(true).open(path).unwrap();
    file.set_modified(SystemTime::now() - by).unwrap();
}

fn killed_writer_leaves_a_recoverable_lock(format: Format) {
    let repo = Repo::new(format);
    let (mut writer, _stdin, _lines) = repo.prepared_writer(&repo.commits[1]);
    writer.kill().unwrap();
    writer.wait().unwrap();
    let lock = repo.lock_path();
    assert!(lock.exists(), "{format:?}: the killed writer left no lock");

    // Young, or with recovery turned off: git's refusal, lock kept.
    for age in ["3600", "-1"] {
        let out = repo.update(age, &repo.commits[2]);
        assert_eq!(out.status.code(), Some(128), "{format:?} {age}");
        assert!(
            stderr(&out).contains(&format!(
                "Unable to create '{}': File exists.",
                lock.display()
            )),
            "{format:?}: {}",
            stderr(&out)
        );
        assert!(lock.exists());
        assert_eq!(repo.main(), repo.commits[0]);
    }

    // Old enough and its holder gone: removed, and the update goes through.
    age_by(&lock, Duration::from_secs(7200));
    let out = repo.update("60", &repo.commits[2]);
    assert!(out.status.success(), "{format:?}: {}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("warning: removed stale lock '{}'", lock.display())),
        "{format:?}: {}",
        stderr(&out)
    );
    assert!(!lock.exists());
    assert_eq!(repo.main(), repo.commits[2]);
    repo.check_intact();
    // Nothing of the recovery stays behind but the repository's holder file.
    let left: Vec<_> = std::fs::read_dir(repo.dir.join(".git/refstore-lock-holders"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(left, ["holders"], "{format:?}");
}

fn live_holder_keeps_its_lock(format: Format) {
    let repo = Repo::new(format);
    let (mut writer, mut stdin, mut lines) = repo.prepared_writer(&repo.commits[1]);
    let lock = repo.lock_path();
    age_by(&lock, Duration::from_secs(7200));
    let out = repo.update("0", &repo.commits[2]);
    assert_eq!(out.status.code(), Some(128), "{format:?}: {}", stderr(&out));
    assert!(
        stderr(&out).contains("File exists."),
        "{format:?}: {}",
        stderr(&out)
    );
    assert!(
        lock.exists(),
        "{format:?}: a live holder's lock was removed"
    );
    // The holder commits what it prepared.
    stdin.write_all(b"commit\n").unwrap();
    drop(stdin);
    assert_eq!(lines.next().unwrap().unwrap(), "commit: ok");
    let status = writer.wait().unwrap();
    assert!(status.success());
    assert_eq!(repo.main(), repo.commits[1]);
    repo.check_intact();
}

/// A writer that holds a lock of its own in the repository still recovers
/// one a dead process left: deleting a packed ref locks the ref, then
/// `packed-refs`.
#[test]
fn a_writer_holding_its_own_lock_recovers_a_stale_one() {
    let repo = Repo::new(Format::Files);
    let out = refstore(
        &repo.home,
        &repo.dir,
        &["update-ref", "refs/heads/gone", &repo.commits[1]],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    git_ok(&repo.home, &repo.dir, &["pack-refs", "--all"]);
    let lock = repo.dir.join(".git/packed-refs.lock");
    std::fs::write(&lock, "").unwrap();
    age_by(&lock, Duration::from_secs(7200));
    let out = refstore(
        &repo.home,
        &repo.dir,
        &[
            "-c",
            "refstore.staleLockAge=60",
            "update-ref",
            "-d",
            "refs/heads/gone",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&format!("warning: removed stale lock '{}'", lock.display())),
        "{}",
        stderr(&out)
    );
    assert!(!lock.exists());
    let gone = refstore(
        &repo.home,
        &repo.dir,
        &["rev-parse", "--verify", "-q", "refs/heads/gone"],
    );
    assert!(!gone.status.success(), "{}", stdout(&gone));
    assert_eq!(repo.main(), repo.commits[0]);
    repo.check_intact();
}

/// Another process holding a read lock on the holder file is a live refstore
/// writer: its repository's old locks are kept. One holding the write lock
/// is a recoverer at work: a writer waits for it, then fails naming the
/// holder file, and changes nothing.
#[test]
fn other_processes_on_the_holder_file_are_respected() {
    let repo = Repo::new(Format::Files);
    let holders = repo.dir.join(".git/refstore-lock-holders/holders");
    let vfs = refstore_fs::real::RealFs::new();
    let mut holder = refstore_fs::Vfs::open_existing(&vfs, &holders).unwrap();
    let lock = repo.lock_path();
    std::fs::write(&lock, "").unwrap();
    age_by(&lock, Duration::from_secs(7200));

    assert!(holder.record_lock(refstore_fs::RecordLock::Read).unwrap());
    let out = repo.update("60", &repo.commits[1]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(stderr(&out).contains("File exists."), "{}", stderr(&out));
    assert!(lock.exists(), "a live holder's lock was removed");

    std::fs::remove_file(&lock).unwrap();
    assert!(holder.record_lock(refstore_fs::RecordLock::Write).unwrap());
    let out = repo.update("60", &repo.commits[1]);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(&holders.display().to_string()),
        "{}",
        stderr(&out)
    );
    assert_eq!(repo.main(), repo.commits[0]);

    drop(holder);
    let out = repo.update("60", &repo.commits[1]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(repo.main(), repo.commits[1]);
    repo.check_intact();
}

#[test]
fn files_killed_writer_lock_is_recovered() {
    killed_writer_leaves_a_recoverable_lock(Format::Files);
}

#[test]
fn reftable_killed_writer_lock_is_recovered() {
    killed_writer_leaves_a_recoverable_lock(Format::Reftable);
}

#[test]
fn files_live_holder_keeps_its_lock() {
    live_holder_keeps_its_lock(Format::Files);
}

#[test]
fn reftable_live_holder_keeps_its_lock() {
    live_holder_keeps_its_lock(Format::Reftable);
}
