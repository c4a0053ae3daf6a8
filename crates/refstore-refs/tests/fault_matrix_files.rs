//! Fault injection into the files backend: every operation of a ref
//! transaction (1 and 10 refs, creations, updates, deletions of loose and
//! packed refs, an update through HEAD, HEAD pointed at another branch)
//! and of `pack-refs` fails in turn with EIO, and with ENOSPC where space
//! is consumed, under the `fsync`, `batch` and `none` flush methods. See
//! `refstore_testsupport::faults` for the rules
//! every faulted run is held to; on top of them, a transaction that failed
//! halfway leaves exactly the refs whose updates came before the failure
//! new, each with its reflog to match, and takes back its reflog lines
//! without ever cutting a line another writer appended.
//!
//! Non-atomic batches (git's `update-ref --batch-updates`: the 10-ref mix,
//! an update through HEAD and one update rejected for its old value) run
//! under the same faults and methods: a fault either fails the batch as it
//! fails an atomic transaction, or makes the update it hit rejected with a
//! reason naming the OS error, and then the store reads exactly as the
//! batch without the rejected updates would leave it, reflogs included.
//!
//! The `batch` method's concurrent-`fdatasync` flush point runs a
//! representative part of the matrix too: an fsync failure of any one of
//! the files flushed together fails the transaction as cleanly.
//!
//! Then "crash, restart, write again": after a crash at every point of a
//! transaction, the next writer finds git's situation: a stale `<ref>.lock`
//! makes updates of that ref fail with git's "Unable to create
//! '...lock': File exists" message, and nothing else breaks.

mod support;

use refstore_fs::flush::{BatchMechanism, FlushMethod};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::{Op, Vfs};
use refstore_refs::files::pack::PackOptions;
use refstore_refs::files::FilesBackend;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::faults::{self, Case, Faulted, Tally, METHODS};
use support::values::{before_after, commit_options as options, id, name, update, SIGNATURE};

const GIT_DIR: &str = "/repo/.git";

fn backend(fs: &SimFs) -> FilesBackend {
    FilesBackend::new(
        Arc::new(fs.clone()),
        GIT_DIR.into(),
        GIT_DIR.into(),
        ObjectFormat::Sha1,
    )
}

fn main_ref() -> RefName {
    RefName::new("refs/heads/main").unwrap()
}

fn write(fs: &SimFs, path: &str, content: &[u8]) {
    let path = Path::new(GIT_DIR).join(path);
    fs.create_dir_all(path.parent().unwrap()).unwrap();
    fs.create_exclusive(&path)
        .unwrap()
        .write_all(content)
        .unwrap();
}

fn log_line(old: &ObjectId, new: &ObjectId) -> String {
    format!("{old} {new} {SIGNATURE}\tsetup\n")
}

/// A repository with HEAD on a loose `main` (both with reflogs), a packed
/// tag, the existing refs of the 10-ref transaction (with reflogs), and a
/// packed `refs/heads/packed-only` with a reflog.
fn setup() -> SimFs {
    let fs = SimFs::new();
    let zero = ObjectFormat::Sha1.null_id();
    write(&fs, "HEAD", b"ref: refs/heads/main\n");
    write(&fs, "refs/heads/main", format!("{}\n", id(7)).as_bytes());
    write(&fs, "logs/HEAD", log_line(&zero, &id(7)).as_bytes());
    write(
        &fs,
        "logs/refs/heads/main",
        log_line(&zero, &id(7)).as_bytes(),
    );
    fs.create_dir_all(&Path::new(GIT_DIR).join("refs/tags"))
        .unwrap();
    let mut packed = vec![
        (RefName::new("refs/tags/v1").unwrap(), id(8), None),
        (RefName::new("refs/heads/packed-only").unwrap(), id(9), None),
    ];
    write(
        &fs,
        "logs/refs/heads/packed-only",
        log_line(&zero, &id(9)).as_bytes(),
    );
    for i in 0..10 {
        if let (Some(old), _) = before_after(i) {
            if i % 2 == 0 {
                packed.push((name(i), old, None));
            } else {
                write(&fs, &name(i).to_string(), format!("{old}\n").as_bytes());
            }
            let log = format!("logs/{}", name(i));
            write(&fs, &log, log_line(&zero, &old).as_bytes());
        }
    }
    packed.sort_by(|a, b| a.0.cmp(&b.0));
    write(
        &fs,
        "packed-refs",
        &refstore_refs::files::packed::write(packed),
    );
    fs.sync_all();
    fs
}

fn commit(fs: &SimFs, updates: Vec<Update>, flush: FlushMethod) -> Result<(), String> {
    commit_with(fs, updates, false, (flush, BatchMechanism::default())).map(|_| ())
}

/// Commits `updates` (as a non-atomic batch if `batch`); returns the
/// rejected updates as (ref, message).
fn commit_with(
    fs: &SimFs,
    updates: Vec<Update>,
    batch: bool,
    (flush, mechanism): (FlushMethod, BatchMechanism),
) -> Result<Vec<(String, String)>, String> {
    let tx = Transaction {
        updates,
        batch,
        message: Some("fault matrix".into()),
        ..Transaction::default()
    };
    let outcome = backend(fs)
        .with_batch_mechanism(mechanism)
        .commit(&tx, &options(flush))
        .map_err(|e| e.to_string())?;
    Ok(outcome
        .rejected
        .iter()
        .map(|r| (r.name.to_string(), r.to_string()))
        .collect())
}

/// The transactions of the matrix, by name.
fn transactions() -> Vec<(&'static str, Vec<Update>)> {
    let head = RefName::new("HEAD").unwrap();
    vec![
        (
            "create 1",
            vec![update(
                RefName::new("refs/heads/topic/new").unwrap(),
                None,
                Some(id(11)),
            )],
        ),
        ("update 1", vec![update(name(1), Some(id(2)), Some(id(12)))]),
        ("delete 1 loose", vec![update(name(5), Some(id(6)), None)]),
        (
            "delete 1 packed",
            vec![update(
                RefName::new("refs/heads/packed-only").unwrap(),
                Some(id(9)),
                None,
            )],
        ),
        (
            "10 refs",
            (0..10)
                .map(|i| {
                    let (old, new) = before_after(i);
                    update(name(i), old, new)
                })
                .collect(),
        ),
        (
            "update through HEAD",
            vec![update(head.clone(), Some(id(7)), Some(id(13)))],
        ),
        (
            "point HEAD at another branch",
            vec![Update {
                name: head,
                change: Change::Set(Target::Symbolic(name(1))),
                expected: Expected::Value(Target::Symbolic(main_ref())),
                no_deref: true,
            }],
        ),
    ]
}

/// The non-atomic batch of the matrix: the 10-ref mix, an update through
/// HEAD, and an update of a packed tag expecting a value it does not have
/// (rejected in every run).
fn batch_updates() -> Vec<Update> {
    let mut updates: Vec<Update> = (0..10)
        .map(|i| {
            let (old, new) = before_after(i);
            update(name(i), old, new)
        })
        .collect();
    updates.push(update(
        RefName::new("HEAD").unwrap(),
        Some(id(7)),
        Some(id(13)),
    ));
    updates.push(update(
        RefName::new("refs/tags/v1").unwrap(),
        Some(id(3)),
        Some(id(14)),
    ));
    updates
}

/// Runs every fault of the batch under `method`: a run that rejects the
/// faulted update must leave the store as the batch without its rejected
/// updates leaves a fresh copy of the repository.
fn batch_matrix(label: &str, method: (FlushMethod, BatchMechanism)) -> Tally {
    let rejections = RefCell::new(Vec::new());
    let workload = |fs: &SimFs| {
        rejections.borrow_mut().clear();
        let rejected = commit_with(fs, batch_updates(), true, method)?;
        *rejections.borrow_mut() = rejected;
        Ok(())
    };
    let rule = |run: &Faulted<'_>| {
        // HEAD's update is made (and rejected) as its branch's.
        let target = |u: &Update| match u.name.as_bytes() {
            b"HEAD" => main_ref().to_string(),
            _ => u.name.to_string(),
        };
        let kept: Vec<Update> = batch_updates()
            .into_iter()
            .filter(|u| !run.rejected.iter().any(|(name, _)| *name == target(u)))
            .collect();
        let fresh = setup();
        commit_with(&fresh, kept, true, method)?;
        let wanted = state(&fresh)?;
        if run.state_now != wanted {
            return Err(format!(
                "the batch rejected {:?} but the store reads\n{}\ninstead of\n{wanted}",
                run.rejected, run.state_now
            ));
        }
        Ok(())
    };
    faults::run_batch(
        &Case {
            label: label.to_owned(),
            setup: &setup,
            workload: &workload,
            state: &state,
            partial: Some(&refs_old_or_new_with_their_logs),
            absorbed: None,
            next: &next_write,
        },
        &faults::Batch {
            rejections: &|| rejections.borrow().clone(),
            rule: &rule,
        },
    )
}

/// Refs (HEAD resolved) and reflogs, one per line; an error if
/// `refs verify` finds anything.
fn state(fs: &SimFs) -> Result<String, String> {
    let store = backend(fs);
    let findings = store.verify().map_err(|e| e.to_string())?;
    if let Some(finding) = findings.first() {
        return Err(format!("refs verify: {finding}"));
    }
    let listing = store.list(b"").map_err(|e| e.to_string())?;
    if let Some(broken) = listing.broken.first() {
        return Err(format!("broken ref {broken}"));
    }
    let mut lines = BTreeMap::new();
    for r in listing.refs {
        lines.insert(r.name.to_string(), format!("{:?}", r.target));
    }
    let head = store
        .resolve(&RefName::new("HEAD").unwrap())
        .map_err(|e| e.to_string())?;
    lines.insert("HEAD".into(), format!("{head:?}"));
    let logs = Path::new(GIT_DIR).join("logs");
    for (path, content) in fs.files() {
        if let Ok(rel) = path.strip_prefix(&logs) {
            lines.insert(
                format!("log:{}", rel.display()),
                String::from_utf8_lossy(&content).replace('\n', "|"),
            );
        }
    }
    Ok(lines
        .into_iter()
        .map(|(k, v)| format!("{k}\t{v}\n"))
        .collect())
}

fn parse_state(state: &str) -> BTreeMap<&str, &str> {
    state
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .collect()
}

/// The operation that makes the update of `name` take effect in the
/// fault-free run: the rename of its lock, the removal of its loose file,
/// or (for a deleted ref that was only packed) the rename of
/// `packed-refs.new` onto `packed-refs`.
fn takes_effect_at(run: &Faulted<'_>, name: &str, deleted: bool) -> Option<usize> {
    let path = Path::new(GIT_DIR).join(name);
    let lock = Path::new(GIT_DIR).join(format!("{name}.lock"));
    let loose_before = run.before.contains_key(&path);
    let packed_only = deleted && !loose_before;
    run.trace.iter().position(|(op, p)| match op {
        Op::Rename => *p == lock || (packed_only && p.ends_with("packed-refs.new")),
        Op::Unlink => loose_before && *p == path,
        _ => false,
    })
}

/// A transaction that failed after its first visible change, as git's
/// does: the refs whose updates took effect before the failed operation
/// (in the fault-free run's order) are new, the others old (all are new if
/// only removing a lock or reflog failed); every file old
/// or new; each ref's reflog matching the ref (new lines only for a ref
/// that took its new value; a deleted ref may keep its old reflog, as git's
/// does when removing it fails).
fn refs_old_or_new_with_their_logs(run: &Faulted<'_>) -> Result<(), String> {
    faults::files_old_or_new(run)?;
    let (before, after, now) = (
        parse_state(run.state_before),
        parse_state(run.state_after),
        parse_state(run.state_now),
    );
    // Removing a lock or a deleted ref's reflog is cleanup: when it fails
    // the remaining updates are still made, and the failure reported.
    let fault_path = run.fault.path.to_string_lossy();
    let cleanup = fault_path.ends_with(".lock") || fault_path.contains("/logs/");
    let stops_the_rest = !(run.fault.op == Op::Unlink && cleanup);
    let changed = after
        .keys()
        .chain(before.keys())
        .filter(|k| !k.starts_with("log:") && **k != "HEAD" && before.get(*k) != after.get(*k));
    for name in changed {
        let effect = takes_effect_at(run, name, !after.contains_key(name))
            .ok_or_else(|| format!("{name} changes, but no operation of the run changes it"))?;
        let (wanted, when) = if effect < run.fault.index || !stops_the_rest {
            (after.get(name), "after")
        } else {
            (before.get(name), "before")
        };
        if now.get(name) != wanted {
            return Err(format!(
                "{name} reads {:?}, not its value from {when} ({wanted:?}): its update takes effect at operation {effect}",
                now.get(name)
            ));
        }
    }
    for (key, log_now) in now.iter().filter(|(k, _)| k.starts_with("log:")) {
        let ref_name = &key["log:".len()..];
        let (b, a, n) = (before.get(ref_name), after.get(ref_name), now.get(ref_name));
        if b == a || a.is_none() {
            continue;
        }
        let expected = if n == a {
            after.get(key)
        } else {
            before.get(key)
        };
        if expected != Some(log_now) {
            return Err(format!(
                "{ref_name} reads {n:?} but its reflog is {log_now:?}, not {expected:?}"
            ));
        }
    }
    Ok(())
}

/// The write after a faulted run: HEAD's branch and a new ref, without
/// expectations, read back.
fn next_write(fs: &SimFs) -> Result<(), String> {
    let new = RefName::new("refs/heads/after-fault").unwrap();
    let updates = vec![
        Update {
            expected: Expected::Any,
            ..update(main_ref(), None, Some(id(99)))
        },
        Update {
            expected: Expected::Any,
            ..update(new.clone(), None, Some(id(98)))
        },
    ];
    commit(fs, updates, FlushMethod::Fsync)?;
    let store = backend(fs);
    let read = |n: &RefName| store.read(n).map_err(|e| e.to_string());
    match (read(&main_ref())?, read(&new)?) {
        (Some(a), Some(b))
            if a.target == Target::Object(id(99)) && b.target == Target::Object(id(98)) =>
        {
            Ok(())
        }
        other => Err(format!("the next write reads back as {other:?}")),
    }
}

#[test]
fn every_fault_in_a_transaction_fails_cleanly() {
    let mut tally = Tally::default();
    for (label, updates) in transactions() {
        for method in METHODS {
            let workload = |fs: &SimFs| commit(fs, updates.clone(), method);
            tally.add(faults::run(&Case {
                label: format!("files, {label}, {}", method.name()),
                setup: &setup,
                workload: &workload,
                state: &state,
                partial: Some(&refs_old_or_new_with_their_logs),
                absorbed: None,
                next: &next_write,
            }));
        }
    }
    tally.print("files transactions");
    assert!(tally.failed > 500, "{tally:?}");
}

#[test]
fn every_fault_in_a_batch_fails_cleanly_or_rejects_its_update() {
    let mut tally = Tally::default();
    for method in METHODS {
        let label = format!("files, batch of 12, {}", method.name());
        tally.add(batch_matrix(&label, (method, BatchMechanism::default())));
    }
    tally.print("files batch transactions");
    assert!(tally.failed > 100 && tally.rejected > 10, "{tally:?}");
}

/// The 10-ref transaction, the update through HEAD, the batch and
/// `pack-refs` with the `batch` method flushing by concurrent `fdatasync`
/// calls.
#[test]
fn every_fault_with_concurrent_fsync_fails_cleanly() {
    let method = (FlushMethod::Batch, BatchMechanism::ConcurrentFsync);
    // The flush point is several fdatasync calls, not one syncfs.
    let fs = setup();
    fs.start_tracing();
    commit_with(&fs, batch_updates(), true, method).unwrap();
    let ops = fs.traced_ops();
    let fdatasyncs = ops.iter().filter(|(op, _)| *op == Op::Fdatasync).count();
    assert!(fdatasyncs > 10 && !ops.iter().any(|(op, _)| *op == Op::Syncfs));
    let mut tally = Tally::default();
    for (label, updates) in transactions() {
        if !matches!(label, "10 refs" | "update through HEAD") {
            continue;
        }
        let workload = |fs: &SimFs| commit_with(fs, updates.clone(), false, method).map(|_| ());
        tally.add(faults::run(&Case {
            label: format!("files, {label}, batch with concurrent fsync"),
            setup: &setup,
            workload: &workload,
            state: &state,
            partial: Some(&refs_old_or_new_with_their_logs),
            absorbed: None,
            next: &next_write,
        }));
    }
    tally.add(batch_matrix(
        "files, batch of 12, batch with concurrent fsync",
        method,
    ));
    let workload = |fs: &SimFs| pack_refs(fs, method);
    tally.add(faults::run(&Case {
        label: "files, pack-refs --all, batch with concurrent fsync".into(),
        setup: &setup,
        workload: &workload,
        state: &state,
        partial: None,
        absorbed: None,
        next: &next_write,
    }));
    tally.print("files transactions, concurrent fsync");
    assert!(tally.failed > 50, "{tally:?}");
    assert!(
        tally.absorbed_ops.keys().all(|op| op != "Fdatasync"),
        "{tally:?}"
    );
}

/// With more files than a concurrent-fdatasync batch keeps open, the
/// batch flushes groups early, while refs are still being locked: an
/// fdatasync failing in any group fails the transaction before anything
/// changes.
#[test]
fn an_early_flushed_group_failing_fails_cleanly() {
    let updates: Vec<Update> = (0..300)
        .map(|i| {
            update(
                RefName::new(format!("refs/heads/many/{i}")).unwrap(),
                None,
                Some(id(3000 + i)),
            )
        })
        .collect();
    let method = (FlushMethod::Batch, BatchMechanism::ConcurrentFsync);
    let fs = setup();
    fs.start_tracing();
    commit_with(&fs, updates.clone(), false, method).unwrap();
    let fdatasyncs = fs
        .traced_ops()
        .iter()
        .filter(|(op, _)| *op == Op::Fdatasync)
        .count();
    assert!(fdatasyncs >= 300, "{fdatasyncs}");
    for skip in [0, 255, 256, fdatasyncs - 1] {
        let fs = setup();
        let before = faults::files(&fs);
        fs.inject(refstore_fs::sim::Fault {
            skip,
            ..refstore_fs::sim::Fault::first(Op::Fdatasync, refstore_fs::sim::EIO)
        });
        let err = commit_with(&fs, updates.clone(), false, method).unwrap_err();
        assert!(err.contains("os error 5"), "fdatasync {skip}: {err}");
        let now = faults::files(&fs);
        assert!(
            now == before,
            "fdatasync {skip}:\n{}",
            faults::diff(&before, &now)
        );
        next_write(&fs).unwrap();
    }
}

#[test]
fn every_fault_in_pack_refs_fails_cleanly() {
    let mut tally = Tally::default();
    for method in METHODS {
        let workload = |fs: &SimFs| pack_refs(fs, (method, BatchMechanism::default()));
        tally.add(faults::run(&Case {
            label: format!("files, pack-refs --all, {}", method.name()),
            setup: &setup,
            workload: &workload,
            state: &state,
            partial: None,
            absorbed: None,
            next: &next_write,
        }));
    }
    tally.print("files pack-refs");
    assert!(tally.failed > 100, "{tally:?}");
}

/// `pack-refs --all --prune`.
fn pack_refs(fs: &SimFs, (flush, mechanism): (FlushMethod, BatchMechanism)) -> Result<(), String> {
    let options = PackOptions {
        all: true,
        prune: true,
        flush,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
    };
    backend(fs)
        .with_batch_mechanism(mechanism)
        .pack_refs(&options, &|_| None)
        .map(|_| ())
        .map_err(|e| e.to_string())
}

/// After a crash at any point of the 10-ref transaction, the next writer
/// sees stale lock files as git does: updating a ref whose lock was left
/// fails with git's message naming the lock, other refs update, and once
/// the lock is removed the ref updates too.
#[test]
fn a_restarted_writer_meets_stale_locks_as_in_git() {
    let mut crash_states = 0;
    let mut stale_locks = 0;
    for method in [FlushMethod::Fsync, FlushMethod::Batch] {
        let fs = setup();
        fs.start_recording();
        let (_, updates) = transactions()
            .into_iter()
            .find(|(label, _)| *label == "10 refs")
            .unwrap();
        commit(&fs, updates, method).unwrap();
        let options = CrashOptions {
            exhaustive_limit: 16,
            samples: 4,
            seed: 7,
        };
        fs.check_crashes(&options, |crashed| {
            crash_states += 1;
            let fs = &crashed.fs;
            state(fs)?;
            let locks: Vec<_> = fs
                .files()
                .into_keys()
                .filter(|p| p.extension().is_some_and(|e| e == "lock"))
                .collect();
            // Refs no lock blocks update while stale locks are present.
            next_write(fs)?;
            for lock in &locks {
                stale_locks += 1;
                let ref_path = lock.with_extension("");
                let rel = ref_path.strip_prefix(GIT_DIR).unwrap();
                // A stale packed-refs.lock blocks deleting a packed ref.
                let blocked = match rel.to_string_lossy().as_ref() {
                    "packed-refs" => update(RefName::new("refs/tags/v1").unwrap(), None, None),
                    rel => update(RefName::new(rel).unwrap(), None, Some(id(77))),
                };
                let blocked = Update {
                    expected: Expected::Any,
                    ..blocked
                };
                let err = commit(fs, vec![blocked.clone()], method)
                    .expect_err("a stale lock blocks its ref");
                let wanted = format!("Unable to create '{}': File exists.", lock.display());
                if !err.contains(&wanted) {
                    return Err(format!("stale {}: {err}", lock.display()));
                }
                // Removed, as the message asks, the lock no longer blocks.
                fs.unlink(lock).map_err(|e| e.to_string())?;
                commit(fs, vec![blocked], method)?;
            }
            state(fs).map(|_| ())
        })
        .unwrap_or_else(|v| panic!("{}:\n{v}", method.name()));
    }
    println!(
        "crash-restart files: {crash_states} crash states reopened and written to, {stale_locks} stale locks met"
    );
    assert!(stale_locks > 0 && crash_states > 50);
}

/// A filesystem on which another writer appends to HEAD's reflog just
/// before a given rename, as a concurrent update of HEAD's branch through
/// another name may (HEAD's reflog is appended to without HEAD's lock).
#[derive(Debug)]
struct AppendBeforeRename {
    fs: SimFs,
    rename: std::path::PathBuf,
    line: &'static [u8],
}

impl Vfs for AppendBeforeRename {
    fn create_exclusive(&self, p: &Path) -> refstore_fs::Result<Box<dyn refstore_fs::VfsFile>> {
        self.fs.create_exclusive(p)
    }
    fn open_append(&self, p: &Path) -> refstore_fs::Result<Box<dyn refstore_fs::VfsFile>> {
        self.fs.open_append(p)
    }
    fn read(&self, p: &Path) -> refstore_fs::Result<Vec<u8>> {
        self.fs.read(p)
    }
    fn read_link(&self, p: &Path) -> refstore_fs::Result<std::path::PathBuf> {
        self.fs.read_link(p)
    }
    fn rename(&self, from: &Path, to: &Path) -> refstore_fs::Result<()> {
        if from == self.rename {
            let log = Path::new(GIT_DIR).join("logs/HEAD");
            self.fs.open_append(&log)?.write_all(self.line)?;
        }
        self.fs.rename(from, to)
    }
    fn link(&self, from: &Path, to: &Path) -> refstore_fs::Result<()> {
        self.fs.link(from, to)
    }
    fn unlink(&self, p: &Path) -> refstore_fs::Result<()> {
        self.fs.unlink(p)
    }
    fn mkdir(&self, p: &Path) -> refstore_fs::Result<()> {
        self.fs.mkdir(p)
    }
    fn rmdir(&self, p: &Path) -> refstore_fs::Result<()> {
        self.fs.rmdir(p)
    }
    fn read_dir(&self, p: &Path) -> refstore_fs::Result<Vec<refstore_fs::DirEntry>> {
        self.fs.read_dir(p)
    }
    fn stat(&self, p: &Path) -> refstore_fs::Result<refstore_fs::Metadata> {
        self.fs.stat(p)
    }
    fn fsync_dir(&self, p: &Path) -> refstore_fs::Result<()> {
        self.fs.fsync_dir(p)
    }
    fn syncfs(&self, p: &Path) -> refstore_fs::Result<()> {
        self.fs.syncfs(p)
    }
    fn filesystem_type(&self, p: &Path) -> refstore_fs::Result<refstore_fs::FsType> {
        self.fs.filesystem_type(p)
    }
    fn touch(&self, p: &Path) -> refstore_fs::Result<()> {
        self.fs.touch(p)
    }
    fn truncate(&self, p: &Path, len: u64) -> refstore_fs::Result<()> {
        self.fs.truncate(p, len)
    }
}

/// A failed transaction takes back its own reflog lines, but never a line
/// another writer appended after them.
#[test]
fn a_failed_transaction_keeps_reflog_lines_of_other_writers() {
    let fs = setup();
    let head_log = Path::new(GIT_DIR).join("logs/HEAD");
    let main_log = Path::new(GIT_DIR).join("logs/refs/heads/main");
    let (head_before, main_before) = (fs.read(&head_log).unwrap(), fs.read(&main_log).unwrap());
    let other = b"0000000000000000000000000000000000000007 0000000000000000000000000000000000000042 O Ther <o@example.com> 1700000001 +0000\tother\n";
    let main_lock = Path::new(GIT_DIR).join("refs/heads/main.lock");
    fs.inject(refstore_fs::sim::Fault {
        op: Some(Op::Rename),
        path_contains: Some("refs/heads/main.lock".into()),
        skip: 0,
        errno: refstore_fs::sim::EIO,
    });
    let vfs = AppendBeforeRename {
        fs: fs.clone(),
        rename: main_lock,
        line: other,
    };
    let store = FilesBackend::new(
        Arc::new(vfs),
        GIT_DIR.into(),
        GIT_DIR.into(),
        ObjectFormat::Sha1,
    );
    let tx = Transaction {
        updates: vec![update(
            RefName::new("HEAD").unwrap(),
            Some(id(7)),
            Some(id(13)),
        )],
        message: Some("fault matrix".into()),
        ..Transaction::default()
    };
    let err = store
        .commit(&tx, &options(FlushMethod::Fsync))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("main.lock") && err.contains("os error 5"),
        "{err}"
    );
    assert_eq!(
        store.read(&main_ref()).unwrap().unwrap().target,
        Target::Object(id(7))
    );
    // main's own reflog is as before; HEAD's keeps the other writer's line,
    // which follows this transaction's, so both stay.
    assert_eq!(fs.read(&main_log).unwrap(), main_before);
    let head_now = fs.read(&head_log).unwrap();
    assert!(head_now.starts_with(&head_before) && head_now.ends_with(other));
    let ours = &head_now[head_before.len()..head_now.len() - other.len()];
    let wanted = format!("{} {} {SIGNATURE}\tfault matrix\n", id(7), id(13));
    assert_eq!(String::from_utf8_lossy(ours), wanted);
}
