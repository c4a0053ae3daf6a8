//! Crash simulation of files-backend transactions: with `fsync` and `batch`
//! every ref reads as its old or its new value after a crash at any point,
//! and as its new value once the transaction was acknowledged; with `none`
//! the harness finds a crash state that breaks this.

mod support;

use refstore_fs::config::LogRefUpdates;
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::files::FilesBackend;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, RefName};
use std::path::Path;
use std::sync::Arc;
use support::values::{before_after, commit_options, id, name, numbered_transaction};

fn backend(vfs: Arc<dyn Vfs>) -> FilesBackend {
    FilesBackend::new(
        vfs,
        "/repo/.git".into(),
        "/repo/.git".into(),
        ObjectFormat::Sha1,
    )
}

fn run(refs: usize, method: FlushMethod, options: &CrashOptions) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new("/repo/.git/refs/heads"))
        .unwrap();
    sim.create_exclusive(Path::new("/repo/.git/HEAD"))
        .unwrap()
        .write_all(b"ref: refs/heads/main\n")
        .unwrap();
    // Existing refs: even ones packed, odd ones loose.
    let mut packed = Vec::new();
    for i in 0..refs {
        if let (Some(old), _) = before_after(i) {
            if i % 2 == 0 {
                packed.push((name(i), old, None));
            } else {
                let path = Path::new("/repo/.git").join(name(i).to_string());
                sim.create_dir_all(path.parent().unwrap()).unwrap();
                sim.create_exclusive(&path)
                    .unwrap()
                    .write_all(format!("{old}\n").as_bytes())
                    .unwrap();
            }
        }
    }
    packed.sort_by(|a, b| a.0.cmp(&b.0));
    sim.create_exclusive(Path::new("/repo/.git/packed-refs"))
        .unwrap()
        .write_all(&refstore_refs::files::packed::write(packed))
        .unwrap();
    sim.sync_all();
    sim.start_recording();

    let tx = numbered_transaction(refs, before_after);
    let commit = commit_options(method);
    backend(vfs)
        .commit(&tx, &commit)
        .map_err(|e| e.to_string())?;
    sim.acknowledge("transaction");

    let report = sim
        .check_crashes(options, |crashed| {
            let store = backend(crashed.vfs());
            let acknowledged = !crashed.acknowledged.is_empty();
            for i in 0..refs {
                let value = store
                    .read(&name(i))
                    .map_err(|e| format!("{} unreadable: {e}", name(i)))?
                    .map(|r| *r.target.object_id().expect("direct ref"));
                let (old, new) = before_after(i);
                if value != new && (acknowledged || value != old) {
                    return Err(format!(
                        "{} reads {value:?}; old {old:?}, new {new:?}, acknowledged: {acknowledged}",
                        name(i)
                    ));
                }
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn durable_methods_never_lose_or_tear_a_ref() {
    for (refs, options) in [
        (1, CrashOptions::default()),
        (
            10,
            CrashOptions {
                exhaustive_limit: 64,
                samples: 12,
                seed: 1,
            },
        ),
        (
            100,
            CrashOptions {
                exhaustive_limit: 16,
                samples: 3,
                seed: 2,
            },
        ),
    ] {
        for method in [FlushMethod::Fsync, FlushMethod::Batch] {
            let states = run(refs, method, &options)
                .unwrap_or_else(|v| panic!("{refs} refs, {method:?}:\n{v}"));
            assert!(
                states > refs,
                "{refs} refs, {method:?}: only {states} crash states"
            );
        }
    }
}

#[test]
fn no_flushing_can_lose_or_tear_refs() {
    for refs in [1, 10] {
        let violation = run(refs, FlushMethod::None, &CrashOptions::default()).unwrap_err();
        assert!(
            violation.contains("reads") || violation.contains("unreadable"),
            "{violation}"
        );
    }
}

/// Deletes `refs/heads/both`, which is packed at an older value and loose
/// at a newer one, beside a packed-only ref that stays. The rewrite of
/// `packed-refs` and the removal of the loose file are in different
/// directories; the crash model keeps or loses each unflushed directory
/// entry on its own, as a filesystem that reorders metadata may.
fn run_packed_and_loose_delete(method: FlushMethod) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    let both = RefName::new("refs/heads/both").unwrap();
    let stays = RefName::new("refs/heads/stays").unwrap();
    let (packed_value, loose_value) = (id(1), id(2));
    sim.create_dir_all(Path::new("/repo/.git/refs/heads"))
        .unwrap();
    sim.create_exclusive(Path::new("/repo/.git/HEAD"))
        .unwrap()
        .write_all(b"ref: refs/heads/stays\n")
        .unwrap();
    sim.create_exclusive(Path::new("/repo/.git/packed-refs"))
        .unwrap()
        .write_all(&refstore_refs::files::packed::write(vec![
            (both.clone(), packed_value, None),
            (stays.clone(), id(3), None),
        ]))
        .unwrap();
    sim.create_exclusive(Path::new("/repo/.git/refs/heads/both"))
        .unwrap()
        .write_all(format!("{loose_value}\n").as_bytes())
        .unwrap();
    sim.sync_all();
    sim.start_recording();
    let tx = Transaction {
        updates: vec![Update {
            name: both.clone(),
            change: Change::Delete,
            expected: Expected::Value(Target::Object(loose_value)),
            no_deref: false,
        }],
        ..Transaction::default()
    };
    let commit = CommitOptions {
        log_updates: LogRefUpdates::Never,
        ..commit_options(method)
    };
    backend(vfs)
        .commit(&tx, &commit)
        .map_err(|e| e.to_string())?;
    sim.acknowledge("delete");
    let report = sim
        .check_crashes(&CrashOptions::default(), |crashed| {
            let store = backend(crashed.vfs());
            let read = |name: &RefName| {
                store
                    .read(name)
                    .map_err(|e| format!("{name} unreadable: {e}"))
                    .map(|r| r.map(|r| *r.target.object_id().expect("direct ref")))
            };
            let value = read(&both)?;
            let acknowledged = !crashed.acknowledged.is_empty();
            if value.is_some() && (acknowledged || value != Some(loose_value)) {
                return Err(format!(
                    "refs/heads/both reads {value:?} (loose {loose_value}, packed {packed_value}), acknowledged: {acknowledged}"
                ));
            }
            if read(&stays)? != Some(id(3)) {
                return Err("refs/heads/stays lost".into());
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn deleting_a_packed_and_loose_ref_never_brings_back_the_packed_value() {
    for method in [FlushMethod::Fsync, FlushMethod::Batch] {
        let states =
            run_packed_and_loose_delete(method).unwrap_or_else(|v| panic!("{method:?}:\n{v}"));
        assert!(states > 2, "{method:?}: only {states} crash states");
    }
    // Without flushes the harness finds refs brought back or lost.
    let violation = run_packed_and_loose_delete(FlushMethod::None).unwrap_err();
    assert!(
        violation.contains("reads Some") || violation.contains("lost"),
        "{violation}"
    );
}
