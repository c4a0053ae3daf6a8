//! Crash simulation of reftable-backend transactions: with `fsync` and
//! `batch` a transaction is all-or-nothing after a crash at any point, and
//! present once acknowledged, also when auto-compaction rewrites the stack
//! right after it; with `none` the harness finds a state that breaks this.

use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::reftable::{ReftableBackend, ReftableOptions, Stack};
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const DIR: &str = "/repo/.git/reftable";

fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn backend(vfs: Arc<dyn Vfs>) -> ReftableBackend {
    ReftableBackend::new(
        vfs,
        Path::new("/repo/.git"),
        ObjectFormat::Sha1,
        ReftableOptions::new(ObjectFormat::Sha1),
    )
}

fn name(i: usize) -> RefName {
    RefName::new(format!("refs/heads/group{}/branch{i}", i % 4)).unwrap()
}

/// Ref `i` before and after the recorded transaction: refs divisible by 3
/// are created, by 3 plus 1 updated, by 3 plus 2 deleted.
fn before_after(i: usize) -> (Option<ObjectId>, Option<ObjectId>) {
    match i % 3 {
        0 => (None, Some(id(1000 + i as u32))),
        1 => (Some(id(i as u32 + 1)), Some(id(2000 + i as u32))),
        _ => (Some(id(i as u32 + 1)), None),
    }
}

fn commit_options(flush: FlushMethod) -> CommitOptions {
    CommitOptions {
        flush,
        lock_timeout: Duration::ZERO,
        packed_refs_timeout: Duration::ZERO,
        log_updates: LogRefUpdates::Branches,
        signature: "C O Mitter <c@example.com> 1700000000 +0000".into(),
    }
}

fn transaction(
    refs: usize,
    phase: impl Fn(usize) -> (Option<ObjectId>, Option<ObjectId>),
) -> Transaction {
    Transaction {
        updates: (0..refs)
            .filter_map(|i| {
                let (old, new) = phase(i);
                (old.is_some() || new.is_some()).then(|| Update {
                    name: name(i),
                    change: new.map_or(Change::Delete, |n| Change::Set(Target::Object(n))),
                    expected: old.map_or(Expected::Absent, |o| Expected::Value(Target::Object(o))),
                    no_deref: false,
                })
            })
            .collect(),
        message: Some("crash test".into()),
        ..Transaction::default()
    }
}

fn run(refs: usize, method: FlushMethod, options: &CrashOptions) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let store = backend(vfs.clone());
    // The existing refs, in one transaction of its own.
    let setup = transaction(refs, |i| (None, before_after(i).0));
    store
        .commit(&setup, &commit_options(FlushMethod::Fsync))
        .unwrap();
    sim.sync_all();
    sim.start_recording();

    let tx = transaction(refs, before_after);
    store
        .commit(&tx, &commit_options(method))
        .map_err(|e| e.to_string())?;
    sim.acknowledge("transaction");
    // Two tables of similar size: auto-compaction merged them, inside the
    // recorded window.
    let stack = Stack::open(vfs, DIR).unwrap();
    assert_eq!(stack.names().len(), 1, "auto-compaction ran");

    let report = sim
        .check_crashes(options, |crashed| {
            let store = backend(crashed.vfs());
            let acknowledged = !crashed.acknowledged.is_empty();
            let mut phases = Vec::new();
            for i in 0..refs {
                let value = store
                    .read(&name(i))
                    .map_err(|e| format!("{} unreadable: {e}", name(i)))?
                    .map(|r| *r.target.object_id().expect("direct ref"));
                let (old, new) = before_after(i);
                match (value == old, value == new) {
                    (_, true) => phases.push(true),
                    (true, false) => phases.push(false),
                    (false, false) => {
                        return Err(format!(
                            "{} reads {value:?}; old {old:?}, new {new:?}",
                            name(i)
                        ))
                    }
                }
            }
            let all_new = phases.iter().all(|&p| p);
            if !all_new && phases.iter().any(|&p| p) {
                return Err(format!("a torn transaction: {phases:?}"));
            }
            if acknowledged && !all_new {
                return Err("the acknowledged transaction reads old values".into());
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn transactions_and_compaction_survive_every_crash() {
    for (refs, options) in [
        (3, CrashOptions::default()),
        (
            60,
            CrashOptions {
                exhaustive_limit: 32,
                samples: 8,
                seed: 3,
            },
        ),
    ] {
        for method in [FlushMethod::Fsync, FlushMethod::Batch] {
            let states = run(refs, method, &options)
                .unwrap_or_else(|v| panic!("{refs} refs, {method:?}:\n{v}"));
            assert!(
                states > 10,
                "{refs} refs, {method:?}: only {states} crash states"
            );
        }
    }
}

#[test]
fn no_flushing_can_lose_the_transaction() {
    let violation = run(3, FlushMethod::None, &CrashOptions::default()).unwrap_err();
    assert!(
        violation.contains("reads") || violation.contains("unreadable"),
        "{violation}"
    );
}
