//! Durability on a real FUSE mount, where `syncfs(2)` flushes nothing.
//!
//! Each case mounts the crash-model filesystem of `refstore-crashfs` (data
//! and names are durable only once the kernel forwarded an `fsync`,
//! `fdatasync` or directory `fsync` for them), creates a repository on it,
//! makes that starting state durable, then runs the three workloads with
//! the configuration under test:
//!
//! 1. 100 refs created in one `update-ref --stdin` transaction;
//! 2. 30 refs created by one `update-ref` process each;
//! 3. 20 refs deleted that are packed (files: after `pack-refs --all`, so
//!    the deletions rewrite `packed-refs`; reftable: 20 of the refs above
//!    and of the starting state).
//!
//! Then the filesystem crashes, once in each crash mode (names and data
//! as of their last flush; or every name kept and data as of its last
//! flush, as a journaling filesystem would leave it), and every
//! acknowledged update must be there
//! (read by refstore, checked by `refs verify`, and in the files format by
//! git's own `for-each-ref` and `fsck`) — or, for the configurations that
//! do not flush on this filesystem, must visibly be lost, so that the check
//! is shown to catch a loss.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::{Command, Output};

use refstore_crashfs::{fuse_or_explicit_skip, CrashFs, CrashMode};
use support::*;

const BATCH: usize = 100;
const SINGLES: usize = 30;
/// Refs of the starting state (durable before the workloads run).
const OLD: usize = 50;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Format {
    Files,
    Reftable,
}

/// A repository on a mounted crash-model filesystem.
struct Bench {
    /// Unmounted before `_tmp` is removed (fields drop in order).
    fs: CrashFs,
    home: PathBuf,
    repo: PathBuf,
    format: Format,
    /// `-c` settings of the configuration under test.
    settings: Vec<String>,
    _tmp: tempfile::TempDir,
}

impl Bench {
    /// `None` (after saying so loudly) only where FUSE cannot be mounted and
    /// skipping was asked for ([`fuse_or_explicit_skip`]).
    fn new(format: Format, settings: &[&str]) -> Option<Bench> {
        if !fuse_or_explicit_skip("the durability checks on FUSE") {
            return None;
        }
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let mnt = tmp.path().join("mnt");
        std::fs::create_dir(&home).unwrap();
        std::fs::create_dir(&mnt).unwrap();
        let fs = CrashFs::mount(&mnt).expect("mounting the FUSE crash-model filesystem");
        let repo = fs.path().join("repo.git");
        let settings = settings
            .iter()
            .flat_map(|s| ["-c".to_owned(), (*s).to_owned()])
            .collect();
        Some(Bench {
            fs,
            home,
            repo,
            format,
            settings,
            _tmp: tmp,
        })
    }

    fn refstore_cmd(&self, settings: &[String], args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, &self.home)
            .arg("--git-dir")
            .arg(&self.repo)
            .args(settings)
            .args(args)
            .current_dir(&self.home);
        cmd
    }

    /// Runs refstore with the configuration under test.
    fn run(&self, args: &[&str], input: Option<&str>) -> Output {
        self.run_with(&self.settings, args, input)
    }

    /// Runs refstore with the default configuration.
    fn run_default(&self, args: &[&str], input: Option<&str>) -> Output {
        self.run_with(&[], args, input)
    }

    fn run_with(&self, settings: &[String], args: &[&str], input: Option<&str>) -> Output {
        let mut cmd = self.refstore_cmd(settings, args);
        match input {
            Some(input) => run_with_input(&mut cmd, input.as_bytes()),
            None => cmd.output().unwrap(),
        }
    }

    fn ok(&self, out: Output, what: &str) -> String {
        assert!(out.status.success(), "{what}: {}", stderr(&out));
        stdout(&out)
    }

    fn git(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new("git");
        isolate(&mut cmd, &self.home)
            .arg("--git-dir")
            .arg(&self.repo)
            .args(args)
            .current_dir(&self.home)
            .output()
            .expect("cannot run git: install git (scripts/install-deps does)")
    }

    /// The repository, two commits and the starting refs, made durable.
    /// Returns the two commits.
    fn set_up(&self) -> (String, String) {
        let mut init = vec!["init", "-q", "--bare"];
        if self.format == Format::Reftable {
            init.push("--ref-format=reftable");
        }
        let repo = self.repo.to_str().unwrap();
        init.push(repo);
        let out = isolate(
            &mut Command::new(env!("CARGO_BIN_EXE_refstore")),
            &self.home,
        )
        .args(&init)
        .current_dir(&self.home)
        .output()
        .unwrap();
        self.ok(out, "init");
        let hash = |kind: &str, body: &str| {
            let out = self.run_default(&["hash-object", "-t", kind, "-w", "--stdin"], Some(body));
            self.ok(out, "hash-object").trim().to_owned()
        };
        let tree = hash("tree", "");
        let commit = |msg: &str| {
            let body = format!(
                "tree {tree}\nauthor A <a@example.com> 1700000000 +0000\n\
                 committer C <c@example.com> 1700000000 +0000\n\n{msg}\n"
            );
            hash("commit", &body)
        };
        let (a, b) = (commit("a"), commit("b"));
        let mut old = format!("create refs/heads/main {a}\n");
        for i in 0..OLD {
            old += &format!("create refs/tags/old/{i:02} {a}\n");
        }
        let out = self.run_default(&["update-ref", "--stdin"], Some(&old));
        self.ok(out, "starting refs");
        if self.format == Format::Files {
            let out = self.run_default(&["pack-refs", "--all"], None);
            self.ok(out, "pack-refs of the starting refs");
        }
        // The starting state is not under test: it is durable, as if the
        // repository had existed long before.
        self.fs.checkpoint();
        (a, b)
    }

    /// The three workloads, each update acknowledged (exit 0). Returns the
    /// acknowledged refs: name to id.
    fn workloads(&self, a: &str, b: &str) -> BTreeMap<String, String> {
        let mut expected: BTreeMap<String, String> = BTreeMap::new();
        expected.insert("refs/heads/main".into(), a.into());
        for i in 0..OLD {
            expected.insert(format!("refs/tags/old/{i:02}"), a.into());
        }

        let mut batch = String::new();
        for i in 0..BATCH {
            batch += &format!("create refs/heads/batch/{i:03} {a}\n");
            expected.insert(format!("refs/heads/batch/{i:03}"), a.into());
        }
        let out = self.run(&["update-ref", "--stdin"], Some(&batch));
        self.ok(out, "the 100-ref transaction");

        for i in 0..SINGLES {
            let name = format!("refs/heads/single/{i:02}");
            let out = self.run(&["update-ref", &name, b], None);
            self.ok(out, "a single-ref update-ref");
            expected.insert(name, b.into());
        }

        if self.format == Format::Files {
            let out = self.run(&["pack-refs", "--all"], None);
            self.ok(out, "pack-refs --all");
        }
        let mut deletes = String::new();
        for i in 0..10 {
            let old = format!("refs/tags/old/{i:02}");
            let new = format!("refs/heads/batch/{i:03}");
            deletes += &format!("delete {old} {a}\ndelete {new} {a}\n");
            expected.remove(&old);
            expected.remove(&new);
        }
        let out = self.run(&["update-ref", "--stdin"], Some(&deletes));
        self.ok(out, "deleting 20 packed refs");
        expected
    }

    /// Refs as refstore reads them (with the configuration under test: a
    /// key it does not know must not change what it reads).
    fn refs(&self) -> Result<BTreeMap<String, String>, String> {
        let out = self.run(&["for-each-ref", "--format=%(objectname) %(refname)"], None);
        if !out.status.success() {
            return Err(stderr(&out));
        }
        Ok(parse_listing(&stdout(&out)))
    }
}

fn parse_listing(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .map(|l| {
            let (id, name) = l.split_once(' ').unwrap();
            (name.to_owned(), id.to_owned())
        })
        .collect()
}

/// The refs a listing does not show as expected (missing, at another
/// value, or deleted and back), each with what is wrong.
fn lost(
    expected: &BTreeMap<String, String>,
    found: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let mut lost = Vec::new();
    for (name, id) in expected {
        match found.get(name) {
            Some(got) if got == id => {}
            Some(got) => lost.push((name.clone(), format!("{got} instead of {id}"))),
            None => lost.push((name.clone(), "missing".to_owned())),
        }
    }
    for name in found.keys().filter(|n| !expected.contains_key(*n)) {
        lost.push((name.clone(), "deleted, but back".to_owned()));
    }
    lost
}

/// Runs the workloads under `settings`, crashes, and returns what was lost
/// (empty: everything acknowledged survived). Checks the store before the
/// crash, and after it when nothing was lost.
fn crash_after_workloads(
    format: Format,
    settings: &[&str],
    mode: CrashMode,
) -> Option<Vec<(String, String)>> {
    let mut bench = Bench::new(format, settings)?;
    let (a, b) = bench.set_up();
    let before = bench.fs.stats();
    let expected = bench.workloads(&a, &b);
    let after = bench.fs.stats();
    let updated: BTreeSet<String> = (0..BATCH)
        .map(|i| format!("refs/heads/batch/{i:03}"))
        .chain((0..SINGLES).map(|i| format!("refs/heads/single/{i:02}")))
        .chain((0..10).map(|i| format!("refs/tags/old/{i:02}")))
        .collect();
    // What the workloads asked the filesystem to make durable.
    let requests = format!(
        "fsync {}, fdatasync {}, fsyncdir {}",
        after.fsync - before.fsync,
        after.fdatasync - before.fdatasync,
        after.fsyncdir - before.fsyncdir
    );
    assert_eq!(expected.len(), 1 + OLD + BATCH + SINGLES - 20);
    assert_eq!(
        bench.refs().expect("for-each-ref before the crash"),
        expected,
        "before the crash, refstore reads what it acknowledged"
    );

    bench
        .fs
        .crash_with(mode)
        .expect("remounting after the crash");

    let found = match bench.refs() {
        Ok(found) => found,
        Err(e) => {
            return Some(vec![(
                "*".to_owned(),
                format!("for-each-ref fails after the crash in {mode:?} ({requests}): {e}"),
            )])
        }
    };
    let lost = lost(&expected, &found);
    let updates = lost
        .iter()
        .filter(|(name, _)| updated.contains(name))
        .count();
    eprintln!(
        "{format:?} {settings:?} {mode:?}: {updates} of the {} refs the workloads changed are \
         not as acknowledged, nor {} refs that were durable before; the workloads sent \
         {requests}",
        updated.len(),
        lost.len() - updates,
    );
    if lost.is_empty() {
        check_store(&bench, &found);
    } else {
        // Not asserted: what `refs verify` makes of the damage.
        let out = bench.run(&["refs", "verify"], None);
        eprintln!(
            "{format:?} {settings:?} {mode:?}: refs verify after the loss: {} {}",
            out.status,
            stderr(&out).lines().next().unwrap_or("")
        );
    }
    Some(lost)
}

/// A store that kept everything must also be whole: `refs verify`, and in
/// the files format git reading the same directory.
fn check_store(bench: &Bench, found: &BTreeMap<String, String>) {
    let out = bench.run(&["refs", "verify"], None);
    assert!(out.status.success(), "refs verify: {}", stderr(&out));
    if bench.format == Format::Files {
        let out = bench.git(&["for-each-ref", "--format=%(objectname) %(refname)"]);
        assert!(out.status.success(), "git for-each-ref: {}", stderr(&out));
        assert_eq!(
            &parse_listing(&stdout(&out)),
            found,
            "git reads the same refs"
        );
        let out = bench.git(&["fsck", "--no-dangling"]);
        assert!(
            out.status.success(),
            "git fsck: {}{}",
            stdout(&out),
            stderr(&out)
        );
    }
}

const MODES: [CrashMode; 2] = [CrashMode::Pessimistic, CrashMode::NamesKept];

fn assert_survives(format: Format, settings: &[&str]) {
    for mode in MODES {
        if let Some(lost) = crash_after_workloads(format, settings, mode) {
            assert!(
                lost.is_empty(),
                "{format:?} with {settings:?}, crash {mode:?}: {} refs not as acknowledged \
                 after a crash on FUSE, e.g. {:?}",
                lost.len(),
                &lost[..lost.len().min(5)]
            );
        }
    }
}

fn assert_loses(format: Format, settings: &[&str]) {
    for mode in MODES {
        if let Some(lost) = crash_after_workloads(format, settings, mode) {
            assert!(
                !lost.is_empty(),
                "{format:?} with {settings:?} flushes nothing on FUSE, yet the crash \
                 ({mode:?}) lost nothing: the crash model is not working"
            );
        }
    }
}

// Without flushes the crash must lose updates: otherwise this test could
// not tell a durable store from any other.

#[test]
fn files_without_flushes_loses_updates() {
    assert_loses(Format::Files, &["core.fsync=none"]);
}

#[test]
fn reftable_without_flushes_loses_updates() {
    assert_loses(Format::Reftable, &["core.fsync=none"]);
}

// `syncfs` reaches no FUSE daemon: forcing it is as good as no flush.

#[test]
fn files_with_syncfs_loses_updates() {
    assert_loses(Format::Files, &["refstore.batchFlush=syncfs"]);
}

#[test]
fn reftable_with_syncfs_loses_updates() {
    assert_loses(Format::Reftable, &["refstore.batchFlush=syncfs"]);
}

// Flushing file by file reaches the daemon.

#[test]
fn files_with_fsync_keeps_every_update() {
    assert_survives(Format::Files, &["core.fsyncMethod=fsync"]);
}

#[test]
fn reftable_with_fsync_keeps_every_update() {
    assert_survives(Format::Reftable, &["core.fsyncMethod=fsync"]);
}

#[test]
fn files_with_batched_fdatasync_keeps_every_update() {
    assert_survives(Format::Files, &["refstore.batchFlush=fdatasync"]);
}

#[test]
fn reftable_with_batched_fdatasync_keeps_every_update() {
    assert_survives(Format::Reftable, &["refstore.batchFlush=fdatasync"]);
}

// The default must be durable on FUSE too.

#[test]
fn files_by_default_keeps_every_update() {
    assert_survives(Format::Files, &[]);
}

#[test]
fn reftable_by_default_keeps_every_update() {
    assert_survives(Format::Reftable, &[]);
}
