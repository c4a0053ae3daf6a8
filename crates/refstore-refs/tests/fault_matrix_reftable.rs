//! Fault injection into the reftable backend: every operation of a
//! transaction (creating or deleting 1 ref, changing 10, an
//! update through HEAD, HEAD pointed at another branch) and of a full
//! compaction fails in turn with EIO, and with ENOSPC where space is
//! consumed, under the `fsync`, `batch` and `none` flush methods. See
//! `refstore_testsupport::faults` for the rules every faulted run is held to; on top
//! of them a transaction is all-or-nothing: the stack reads as before or as
//! after, whatever failed.
//!
//! Non-atomic batches (git's `update-ref --batch-updates`: the 10-ref mix,
//! an update through HEAD and one update rejected for its old value) are
//! held to the same rules, or, where a fault makes an update rejected
//! instead, to reading exactly as the batch without the rejected updates.
//!
//! The `batch` method's concurrent-`fdatasync` flush point runs a
//! representative part of the matrix too: an fsync failure of any one of
//! the files flushed together fails the transaction as cleanly.
//!
//! Then "crash, restart, write again": after a crash at every point of a
//! transaction and its compaction, a stale `tables.list.lock` makes the
//! next write fail with git's "Unable to create '...lock': File exists"
//! message until it is removed; tables no `tables.list` names are removed
//! by the next compaction without touching listed ones, and writes go on.

mod support;

use refstore_fs::flush::{BatchMechanism, FlushMethod};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::{Op, Vfs};
use refstore_refs::reftable::{ReftableBackend, ReftableOptions, Stack};
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, RefName};
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use support::faults::{self, Case, Faulted, Tally, METHODS};
use support::values::{before_after, commit_options as options, id, name, update as set};

const DIR: &str = "/repo/.git/reftable";

fn backend(fs: &SimFs) -> ReftableBackend {
    backend_compacting(fs, true)
}

fn backend_compacting(fs: &SimFs, auto_compaction: bool) -> ReftableBackend {
    let mut options = ReftableOptions::new(ObjectFormat::Sha1);
    options.lock_timeout = Duration::ZERO;
    options.auto_compaction = auto_compaction;
    ReftableBackend::new(
        Arc::new(fs.clone()),
        Path::new("/repo/.git"),
        ObjectFormat::Sha1,
        options,
    )
}

fn refname(name: &str) -> RefName {
    RefName::new(name).unwrap()
}

fn commit(fs: &SimFs, updates: Vec<Update>, flush: FlushMethod) -> Result<(), String> {
    commit_with(&backend(fs), updates, flush)
}

fn commit_with(
    store: &ReftableBackend,
    updates: Vec<Update>,
    flush: FlushMethod,
) -> Result<(), String> {
    commit_batch(store, updates, false, flush).map(|_| ())
}

/// Commits `updates` (as a non-atomic batch if `batch`); returns the
/// rejected updates as (ref, message).
fn commit_batch(
    store: &ReftableBackend,
    updates: Vec<Update>,
    batch: bool,
    flush: FlushMethod,
) -> Result<Vec<(String, String)>, String> {
    let tx = Transaction {
        updates,
        batch,
        message: Some("fault matrix".into()),
        ..Transaction::default()
    };
    let outcome = store
        .commit(&tx, &options(flush))
        .map_err(|e| e.to_string())?;
    Ok(outcome
        .rejected
        .iter()
        .map(|r| (r.name.to_string(), r.to_string()))
        .collect())
}

/// A store whose `batch` flush points use `mechanism`.
fn backend_with(fs: &SimFs, auto_compaction: bool, mechanism: BatchMechanism) -> ReftableBackend {
    let store = backend_compacting(fs, auto_compaction);
    let mut options = *store.options();
    options.batch_mechanism = mechanism;
    ReftableBackend::new(
        Arc::new(fs.clone()),
        Path::new("/repo/.git"),
        ObjectFormat::Sha1,
        options,
    )
}

/// A stack of two tables: a large one with HEAD on `main`, 40 filler
/// branches and the existing refs of the 10-ref transaction, and a small
/// one on top.
fn setup() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(Path::new(DIR)).unwrap();
    let mut base = vec![
        Update {
            name: refname("HEAD"),
            change: Change::Set(Target::Symbolic(refname("refs/heads/main"))),
            expected: Expected::Any,
            no_deref: true,
        },
        set(refname("refs/heads/main"), None, Some(id(7))),
        set(refname("refs/tags/v1"), None, Some(id(8))),
    ];
    base.extend((0..40).map(|i| {
        set(
            refname(&format!("refs/heads/filler/{i}")),
            None,
            Some(id(500 + i)),
        )
    }));
    base.extend((0..10).filter_map(|i| before_after(i).0.map(|old| set(name(i), None, Some(old)))));
    commit(&fs, base, FlushMethod::None).unwrap();
    commit(
        &fs,
        vec![set(refname("refs/heads/extra"), None, Some(id(9)))],
        FlushMethod::None,
    )
    .unwrap();
    fs.sync_all();
    fs
}

/// [`setup`] with three more small tables, written without compaction.
fn setup_layered() -> SimFs {
    let fs = setup();
    let store = backend_compacting(&fs, false);
    for i in 0..3 {
        let update = set(
            refname(&format!("refs/tags/layer{i}")),
            None,
            Some(id(600 + i)),
        );
        commit_with(&store, vec![update], FlushMethod::None).unwrap();
    }
    fs.sync_all();
    fs
}

/// Every ref record and log record the stack holds, one per line; an
/// error if `refs verify` finds anything.
fn state(fs: &SimFs) -> Result<String, String> {
    let findings = backend(fs).verify().map_err(|e| e.to_string())?;
    if let Some(finding) = findings.first() {
        return Err(format!("refs verify: {finding}"));
    }
    let stack = Stack::open(Arc::new(fs.clone()), DIR).map_err(|e| e.to_string())?;
    let merged = stack.merged();
    let mut out = String::new();
    for record in merged.refs().map_err(|e| e.to_string())? {
        let record = record.map_err(|e| e.to_string())?;
        out.push_str(&format!(
            "{} {:?}\n",
            String::from_utf8_lossy(&record.name),
            record.value
        ));
    }
    for record in merged.logs().map_err(|e| e.to_string())? {
        let record = record.map_err(|e| e.to_string())?;
        out.push_str(&format!(
            "log {} {} {:?}\n",
            String::from_utf8_lossy(&record.name),
            record.update_index,
            record.value
        ));
    }
    Ok(out)
}

/// The tables of the stack's directory that `tables.list` does not name.
fn orphans(fs: &SimFs) -> Result<Vec<String>, String> {
    let stack = Stack::open(Arc::new(fs.clone()), DIR).map_err(|e| e.to_string())?;
    let entries = fs.read_dir(Path::new(DIR)).map_err(|e| e.to_string())?;
    Ok(entries
        .into_iter()
        .map(|e| e.name.to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".ref") && !stack.names().contains(n))
        .collect())
}

/// A compaction that failed after its transaction succeeded leaves no
/// table behind, except old tables it could not remove, or kept because
/// the new `tables.list` could not be made durable (a crash could still
/// bring the old one back).
fn no_orphans_but_kept_ones(run: &Faulted<'_>) -> Result<(), String> {
    let orphans = orphans(run.fs)?;
    let kept = matches!(
        run.fault.op,
        Op::Unlink | Op::Fsync | Op::Fdatasync | Op::FsyncDir | Op::Syncfs
    );
    if orphans.is_empty() || kept {
        Ok(())
    } else {
        Err(format!("unlisted tables were left: {orphans:?}"))
    }
}

fn next_write(fs: &SimFs) -> Result<(), String> {
    let updates = vec![
        Update {
            expected: Expected::Any,
            ..set(refname("refs/heads/main"), None, Some(id(99)))
        },
        Update {
            expected: Expected::Any,
            ..set(refname("refs/heads/after-fault"), None, Some(id(98)))
        },
    ];
    commit(fs, updates, FlushMethod::Fsync)?;
    let store = backend(fs);
    let read = |n: &str| store.read(&refname(n)).map_err(|e| e.to_string());
    match (read("refs/heads/main")?, read("refs/heads/after-fault")?) {
        (Some(a), Some(b))
            if a.target == Target::Object(id(99)) && b.target == Target::Object(id(98)) =>
        {
            Ok(())
        }
        other => Err(format!("the next write reads back as {other:?}")),
    }
}

/// The transactions of the matrix: label, updates, and whether
/// auto-compaction runs after them (all but the first then compact, the
/// stack being small).
fn transactions() -> Vec<(&'static str, Vec<Update>, bool)> {
    vec![
        (
            "create 1 without compaction",
            vec![set(refname("refs/heads/topic/new"), None, Some(id(11)))],
            false,
        ),
        ("delete 1", vec![set(name(5), Some(id(6)), None)], true),
        (
            "10 refs with auto-compaction",
            (0..10)
                .map(|i| {
                    let (old, new) = before_after(i);
                    set(name(i), old, new)
                })
                .collect(),
            true,
        ),
        (
            "update through HEAD",
            vec![set(refname("HEAD"), Some(id(7)), Some(id(13)))],
            true,
        ),
        (
            "point HEAD at another branch",
            vec![Update {
                name: refname("HEAD"),
                change: Change::Set(Target::Symbolic(refname("refs/heads/extra"))),
                expected: Expected::Value(Target::Symbolic(refname("refs/heads/main"))),
                no_deref: true,
            }],
            true,
        ),
    ]
}

/// The non-atomic batch of the matrix: the 10-ref mix, an update through
/// HEAD, and an update of a tag expecting a value it does not have
/// (rejected in every run).
fn batch_updates() -> Vec<Update> {
    let mut updates: Vec<Update> = (0..10)
        .map(|i| {
            let (old, new) = before_after(i);
            set(name(i), old, new)
        })
        .collect();
    updates.push(set(refname("HEAD"), Some(id(7)), Some(id(13))));
    updates.push(set(refname("refs/tags/v1"), Some(id(3)), Some(id(14))));
    updates
}

/// Runs every fault of the batch (with auto-compaction) under `method`: a
/// run that rejects the faulted update must leave the stack as the batch
/// without its rejected updates leaves a fresh copy of the repository.
fn batch_matrix(label: &str, (flush, mechanism): (FlushMethod, BatchMechanism)) -> Tally {
    let rejections = RefCell::new(Vec::new());
    let workload = |fs: &SimFs| {
        rejections.borrow_mut().clear();
        let store = backend_with(fs, true, mechanism);
        let rejected = commit_batch(&store, batch_updates(), true, flush)?;
        *rejections.borrow_mut() = rejected;
        Ok(())
    };
    let rule = |run: &Faulted<'_>| {
        // HEAD's update is made (and rejected) as its branch's.
        let target = |u: &Update| match u.name.as_bytes() {
            b"HEAD" => "refs/heads/main".to_owned(),
            _ => u.name.to_string(),
        };
        let kept: Vec<Update> = batch_updates()
            .into_iter()
            .filter(|u| !run.rejected.iter().any(|(name, _)| *name == target(u)))
            .collect();
        let fresh = setup();
        commit_batch(&backend_with(&fresh, true, mechanism), kept, true, flush)?;
        let wanted = state(&fresh)?;
        if run.state_now != wanted {
            return Err(format!(
                "the batch rejected {:?} but the stack reads\n{}\ninstead of\n{wanted}",
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
            partial: Some(&faults::state_old_or_new),
            absorbed: Some(&no_orphans_but_kept_ones),
            next: &next_write,
        },
        &faults::Batch {
            rejections: &|| rejections.borrow().clone(),
            rule: &rule,
        },
    )
}

fn tables(fs: &SimFs) -> usize {
    Stack::open(Arc::new(fs.clone()), DIR)
        .unwrap()
        .names()
        .len()
}

#[test]
fn every_fault_in_a_transaction_leaves_all_or_nothing() {
    let mut tally = Tally::default();
    for (label, updates, auto_compaction) in transactions() {
        let fs = setup();
        let before = tables(&fs);
        let store = backend_compacting(&fs, auto_compaction);
        commit_with(&store, updates.clone(), FlushMethod::Fsync).unwrap();
        match auto_compaction {
            true => assert!(tables(&fs) <= before, "{label}: compacted"),
            false => assert_eq!(tables(&fs), before + 1, "{label}: one more table"),
        }
        for method in METHODS {
            let workload = |fs: &SimFs| {
                let store = backend_compacting(fs, auto_compaction);
                commit_with(&store, updates.clone(), method)
            };
            tally.add(faults::run(&Case {
                label: format!("reftable, {label}, {}", method.name()),
                setup: &setup,
                workload: &workload,
                state: &state,
                partial: Some(&faults::state_old_or_new),
                absorbed: Some(&no_orphans_but_kept_ones),
                next: &next_write,
            }));
        }
    }
    tally.print("reftable transactions");
    assert!(tally.failed > 150, "{tally:?}");
}

#[test]
fn every_fault_in_a_batch_leaves_all_or_nothing() {
    let mut tally = Tally::default();
    for method in METHODS {
        let label = format!("reftable, batch of 12, {}", method.name());
        tally.add(batch_matrix(&label, (method, BatchMechanism::default())));
    }
    tally.print("reftable batch transactions");
    assert!(tally.failed > 50, "{tally:?}");
}

/// The 10-ref transaction, the update through HEAD (both with
/// auto-compaction) and the batch with the `batch` method flushing by
/// concurrent `fdatasync` calls.
#[test]
fn every_fault_with_concurrent_fsync_leaves_all_or_nothing() {
    let mechanism = BatchMechanism::ConcurrentFsync;
    // The flush points are fdatasync calls (the table and tables.list.lock
    // together), not one syncfs.
    let fs = setup();
    fs.start_tracing();
    commit_batch(
        &backend_with(&fs, true, mechanism),
        batch_updates(),
        true,
        FlushMethod::Batch,
    )
    .unwrap();
    let ops = fs.traced_ops();
    let fdatasyncs = ops.iter().filter(|(op, _)| *op == Op::Fdatasync).count();
    assert!(fdatasyncs >= 2 && !ops.iter().any(|(op, _)| *op == Op::Syncfs));
    // The transaction's own fdatasync failing fails it (the matrix's
    // absorbed fdatasync faults are the compaction's, after it).
    for skip in 0..2 {
        let fs = setup();
        let before = state(&fs).unwrap();
        fs.inject(refstore_fs::sim::Fault {
            skip,
            ..refstore_fs::sim::Fault::first(Op::Fdatasync, refstore_fs::sim::EIO)
        });
        let store = backend_with(&fs, true, mechanism);
        let err = commit_batch(&store, batch_updates(), true, FlushMethod::Batch).unwrap_err();
        assert!(err.contains("os error 5"), "{err}");
        assert_eq!(state(&fs).unwrap(), before);
    }
    let mut tally = Tally::default();
    for (label, updates, auto_compaction) in transactions() {
        if !matches!(
            label,
            "10 refs with auto-compaction" | "update through HEAD"
        ) {
            continue;
        }
        let workload = |fs: &SimFs| {
            let store = backend_with(fs, auto_compaction, mechanism);
            commit_with(&store, updates.clone(), FlushMethod::Batch)
        };
        tally.add(faults::run(&Case {
            label: format!("reftable, {label}, batch with concurrent fsync"),
            setup: &setup,
            workload: &workload,
            state: &state,
            partial: Some(&faults::state_old_or_new),
            absorbed: Some(&no_orphans_but_kept_ones),
            next: &next_write,
        }));
    }
    tally.add(batch_matrix(
        "reftable, batch of 12, batch with concurrent fsync",
        (FlushMethod::Batch, mechanism),
    ));
    tally.print("reftable transactions, concurrent fsync");
    assert!(tally.failed > 30, "{tally:?}");
}

#[test]
fn every_fault_in_a_full_compaction_fails_cleanly() {
    let mut tally = Tally::default();
    for method in METHODS {
        let workload = |fs: &SimFs| {
            backend(fs).compact_all(method).map_err(|e| e.to_string())?;
            let stack = Stack::open(Arc::new(fs.clone()), DIR).map_err(|e| e.to_string())?;
            match stack.names().len() {
                1 => Ok(()),
                n => Err(format!("{n} tables after a full compaction")),
            }
        };
        tally.add(faults::run(&Case {
            label: format!("reftable, full compaction, {}", method.name()),
            setup: &setup_layered,
            workload: &workload,
            state: &state,
            partial: Some(&faults::state_old_or_new),
            absorbed: Some(&no_orphans_but_kept_ones),
            next: &next_write,
        }));
    }
    tally.print("reftable compaction");
    assert!(tables(&setup_layered()) > 3);
    assert!(tally.failed > 30, "{tally:?}");
}

/// After a crash at any point of the 10-ref transaction and its
/// auto-compaction, the next writer copes as git's does.
#[test]
fn a_restarted_writer_meets_stale_locks_and_orphaned_tables_as_in_git() {
    let mut crash_states = 0;
    let mut stale_locks = 0;
    let mut orphans_removed = 0;
    for method in [FlushMethod::Fsync, FlushMethod::Batch] {
        let fs = setup();
        fs.start_recording();
        let (_, updates, _) = transactions()
            .into_iter()
            .find(|(label, _, _)| label.starts_with("10 refs"))
            .unwrap();
        commit(&fs, updates, method).unwrap();
        let options = CrashOptions {
            exhaustive_limit: 16,
            samples: 4,
            seed: 11,
        };
        fs.check_crashes(&options, |crashed| {
            crash_states += 1;
            let fs = &crashed.fs;
            let lock = Path::new(DIR).join("tables.list.lock");
            if fs.exists(&lock) {
                stale_locks += 1;
                let err = next_write(fs).expect_err("a stale tables.list.lock blocks writes");
                let wanted = format!("Unable to create '{}': File exists.", lock.display());
                if !err.contains(&wanted) {
                    return Err(format!("with a stale lock: {err}"));
                }
                fs.unlink(&lock).map_err(|e| e.to_string())?;
            }
            // Tables the crashed writer left unlisted go with the next
            // compaction (the next write's or a full one); what the stack
            // reads stays.
            orphans_removed += orphans(fs)?.len();
            next_write(fs)?;
            let listed = state(fs)?;
            backend(fs).compact_all(method).map_err(|e| e.to_string())?;
            if !orphans(fs)?.is_empty() {
                return Err("unlisted tables remain after a full compaction".into());
            }
            if state(fs)? != listed {
                return Err("the full compaction changed what the stack reads".into());
            }
            next_write(fs)
        })
        .unwrap_or_else(|v| panic!("{}:\n{v}", method.name()));
    }
    println!(
        "crash-restart reftable: {crash_states} crash states reopened and written to, {stale_locks} stale tables.list.lock met, {orphans_removed} orphaned tables removed"
    );
    assert!(stale_locks > 0 && orphans_removed > 0 && crash_states > 50);
}
