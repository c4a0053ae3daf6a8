//! Durability on a filesystem whose `syncfs` flushes nothing (FUSE, modelled
//! by `SimFs::fuse`): the ref store is opened from configuration text as a
//! command opens it, runs the three workloads of a user's day (100 refs
//! created in one transaction, 30 single-ref updates, 20 deletions of
//! packed refs) in both formats, and every crash state after every
//! operation is reopened and checked.
//!
//! With the default configuration (`batch`, flush mechanism chosen per
//! filesystem) every acknowledged update survives. With `core.fsync=none`,
//! and with `refstore.batchFlush=syncfs` forced on FUSE, the harness finds
//! an acknowledged update lost: the checks can fail.

use refstore_fs::config::{Component, Config, LogRefUpdates, RefStorage};
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_refs::backend::{self, Location};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::reftable::ReftableOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{Backend, ObjectFormat, ObjectId, RefName};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

const GIT_DIR: &str = "/repo/.git";

/// The default: `core.fsyncMethod` unset (batch), `refstore.batchFlush`
/// unset (auto).
const DEFAULT: &str = "";
const NO_FLUSH: &str = "[core]\n\tfsync = none\n";
const FORCED_SYNCFS: &str = "[refstore]\n\tbatchFlush = syncfs\n";
const FORCED_FDATASYNC: &str = "[refstore]\n\tbatchFlush = fdatasync\n";

fn id(n: usize) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn name(kind: &str, i: usize) -> RefName {
    RefName::new(format!("refs/heads/{kind}/r{i}")).unwrap()
}

/// One ref change: name, value before, value after.
type Change3 = (RefName, Option<ObjectId>, Option<ObjectId>);

/// A workload: refs that exist before it (and whether they are packed, in
/// the files format), then transactions that each touch refs no other
/// transaction touches.
struct Workload {
    existing: Vec<(RefName, ObjectId, bool)>,
    transactions: Vec<Vec<Change3>>,
}

fn create_100() -> Workload {
    Workload {
        existing: Vec::new(),
        transactions: vec![(0..100)
            .map(|i| (name("new", i), None, Some(id(1000 + i))))
            .collect()],
    }
}

fn update_30() -> Workload {
    Workload {
        existing: (0..30).map(|i| (name("up", i), id(1 + i), false)).collect(),
        transactions: (0..30)
            .map(|i| vec![(name("up", i), Some(id(1 + i)), Some(id(2000 + i)))])
            .collect(),
    }
}

/// 40 packed refs; 20 of them are deleted one by one, the other 20 must
/// keep their values through every rewrite of `packed-refs`.
fn delete_20_packed() -> Workload {
    Workload {
        existing: (0..40)
            .map(|i| (name("packed", i), id(1 + i), true))
            .collect(),
        transactions: (0..20)
            .map(|i| vec![(name("packed", 2 * i), Some(id(1 + 2 * i)), None)])
            .collect(),
    }
}

fn transaction(changes: &[Change3]) -> Transaction {
    Transaction {
        updates: changes
            .iter()
            .map(|(name, old, new)| Update {
                name: name.clone(),
                change: new.map_or(Change::Delete, |n| Change::Set(Target::Object(n))),
                expected: old.map_or(Expected::Absent, |o| Expected::Value(Target::Object(o))),
                no_deref: false,
            })
            .collect(),
        message: Some("durability".into()),
        ..Transaction::default()
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

/// The ref store as a command opens it: from the repository's
/// configuration (`config` is the text of its config file).
fn open(vfs: Arc<dyn Vfs>, storage: RefStorage, config: &str) -> (Arc<dyn Backend>, FlushMethod) {
    let mut config = Config::from_local_bytes(config.as_bytes()).unwrap();
    let settings = config.settings().unwrap();
    let location = Location {
        git_dir: GIT_DIR.into(),
        common_dir: GIT_DIR.into(),
        object_format: ObjectFormat::Sha1,
        storage,
    };
    let reftable = ReftableOptions::from_settings(&settings.reftable, ObjectFormat::Sha1);
    let store =
        backend::open_with(vfs, &location, reftable, settings.fsync.batch_mechanism()).unwrap();
    (store, settings.fsync.method_for(Component::Reference))
}

/// Runs `workload` on a FUSE `SimFs` with the store configured by
/// `config`, then checks every crash state: each ref reads its old or new
/// value, its new value once its transaction was acknowledged, refs no
/// transaction touches keep their values, and (reftable) a transaction is
/// all-or-nothing. Returns the number of crash states checked.
fn run(storage: RefStorage, workload: &Workload, config: &str) -> Result<usize, String> {
    let sim = SimFs::fuse();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(&Path::new(GIT_DIR).join("refs/heads"))
        .unwrap();
    sim.create_exclusive(&Path::new(GIT_DIR).join("HEAD"))
        .unwrap()
        .write_all(b"ref: refs/heads/main\n")
        .unwrap();
    match storage {
        RefStorage::Files => {
            let mut packed: Vec<_> = workload
                .existing
                .iter()
                .filter(|(_, _, packed)| *packed)
                .map(|(name, id, _)| (name.clone(), *id, None))
                .collect();
            packed.sort_by(|a, b| a.0.cmp(&b.0));
            sim.create_exclusive(&Path::new(GIT_DIR).join("packed-refs"))
                .unwrap()
                .write_all(&refstore_refs::files::packed::write(packed))
                .unwrap();
            for (name, id, _) in workload.existing.iter().filter(|(_, _, p)| !p) {
                let path = Path::new(GIT_DIR).join(name.to_string());
                sim.create_dir_all(path.parent().unwrap()).unwrap();
                sim.create_exclusive(&path)
                    .unwrap()
                    .write_all(format!("{id}\n").as_bytes())
                    .unwrap();
            }
        }
        RefStorage::Reftable => {
            sim.create_dir_all(&Path::new(GIT_DIR).join("reftable"))
                .unwrap();
            let (store, _) = open(vfs.clone(), storage, DEFAULT);
            let setup: Vec<Change3> = workload
                .existing
                .iter()
                .map(|(name, id, _)| (name.clone(), None, Some(*id)))
                .collect();
            if !setup.is_empty() {
                store
                    .commit(&transaction(&setup), &commit_options(FlushMethod::Fsync))
                    .unwrap();
            }
        }
    }
    sim.sync_all();
    sim.start_recording();

    let (store, flush) = open(vfs, storage, config);
    for (k, changes) in workload.transactions.iter().enumerate() {
        store
            .commit(&transaction(changes), &commit_options(flush))
            .map_err(|e| format!("transaction {k}: {e}"))?;
        sim.acknowledge(format!("tx{k}"));
    }

    let untouched: Vec<(RefName, ObjectId)> = workload
        .existing
        .iter()
        .filter(|(name, _, _)| {
            !workload
                .transactions
                .iter()
                .flatten()
                .any(|(n, _, _)| n == name)
        })
        .map(|(name, id, _)| (name.clone(), *id))
        .collect();
    // A few hundred crash points per workload: few states at each keeps the
    // test at seconds while every point is still visited.
    let options = CrashOptions {
        exhaustive_limit: 8,
        samples: 2,
        seed: 14,
    };
    let report = sim
        .check_crashes(&options, |crashed| {
            let (store, _) = open(crashed.vfs(), storage, DEFAULT);
            let read = |name: &RefName| {
                store
                    .read(name)
                    .map_err(|e| format!("{name} unreadable: {e}"))
                    .map(|r| r.and_then(|r| r.target.object_id().copied()))
            };
            for (k, changes) in workload.transactions.iter().enumerate() {
                let acknowledged = crashed.acknowledged.contains(&format!("tx{k}"));
                let mut applied = Vec::new();
                for (name, old, new) in changes {
                    let value = read(name)?;
                    if value != *new && (acknowledged || value != *old) {
                        return Err(format!(
                            "{name} reads {value:?}; old {old:?}, new {new:?}, transaction {k} acknowledged: {acknowledged}"
                        ));
                    }
                    applied.push(value == *new);
                }
                let all_or_nothing = applied.iter().all(|&a| a) || !applied.iter().any(|&a| a);
                if storage == RefStorage::Reftable && !all_or_nothing {
                    return Err(format!("transaction {k} is torn: {applied:?}"));
                }
            }
            for (name, id) in &untouched {
                let value = read(name)?;
                if value != Some(*id) {
                    return Err(format!("{name}, touched by no transaction, reads {value:?}"));
                }
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

fn workloads() -> [(&'static str, Workload); 3] {
    [
        ("100 refs created in one transaction", create_100()),
        ("30 single-ref updates", update_30()),
        ("20 deletions of packed refs", delete_20_packed()),
    ]
}

fn every_acknowledged_update_survives(storage: RefStorage) {
    for (label, workload) in workloads() {
        let states = run(storage, &workload, DEFAULT)
            .unwrap_or_else(|v| panic!("{storage:?}, {label}, default configuration:\n{v}"));
        // A reftable transaction is a handful of operations (one table, one
        // tables.list), a files one several per ref.
        assert!(
            states > 20,
            "{storage:?}, {label}: only {states} crash states"
        );
    }
}

fn the_harness_finds_the_loss(storage: RefStorage, config: &str) {
    for (label, workload) in workloads() {
        let violation = run(storage, &workload, config)
            .err()
            .unwrap_or_else(|| panic!("{storage:?}, {label}, {config:?}: no loss found"));
        assert!(
            violation.contains("acknowledged: true")
                || violation.contains("touched by no transaction")
                || violation.contains("unreadable"),
            "{storage:?}, {label}, {config:?}: {violation}"
        );
    }
}

#[test]
fn files_default_keeps_every_acknowledged_update_on_fuse() {
    every_acknowledged_update_survives(RefStorage::Files);
}

#[test]
fn reftable_default_keeps_every_acknowledged_update_on_fuse() {
    every_acknowledged_update_survives(RefStorage::Reftable);
}

#[test]
fn files_without_flushes_lose_updates_on_fuse() {
    the_harness_finds_the_loss(RefStorage::Files, NO_FLUSH);
}

#[test]
fn reftable_without_flushes_loses_updates_on_fuse() {
    the_harness_finds_the_loss(RefStorage::Reftable, NO_FLUSH);
}

#[test]
fn files_with_syncfs_forced_lose_updates_on_fuse() {
    the_harness_finds_the_loss(RefStorage::Files, FORCED_SYNCFS);
}

#[test]
fn reftable_with_syncfs_forced_loses_updates_on_fuse() {
    the_harness_finds_the_loss(RefStorage::Reftable, FORCED_SYNCFS);
}

#[test]
fn fdatasync_chosen_by_configuration_keeps_every_update_on_fuse() {
    for storage in [RefStorage::Files, RefStorage::Reftable] {
        run(storage, &update_30(), FORCED_FDATASYNC)
            .unwrap_or_else(|v| panic!("{storage:?}, refstore.batchFlush=fdatasync:\n{v}"));
    }
}
