//! Crash simulation of reftable-backend transactions: with `fsync` and
//! `batch` a transaction is all-or-nothing after a crash at any point, and
//! present once acknowledged, also when auto-compaction rewrites the stack
//! right after it; with `none` the harness finds a state that breaks this.

mod support;

use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_refs::reftable::{ReftableBackend, ReftableOptions, Stack};
use refstore_refs::ObjectFormat;
use std::path::Path;
use std::sync::Arc;
use support::values::{before_after, commit_options, name, numbered_transaction};

const DIR: &str = "/repo/.git/reftable";

fn backend(vfs: Arc<dyn Vfs>) -> ReftableBackend {
    ReftableBackend::new(
        vfs,
        Path::new("/repo/.git"),
        ObjectFormat::Sha1,
        ReftableOptions::new(ObjectFormat::Sha1),
    )
}

fn run(refs: usize, method: FlushMethod, options: &CrashOptions) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new(DIR)).unwrap();
    let store = backend(vfs.clone());
    // The existing refs, in one transaction of its own.
    let setup = numbered_transaction(refs, |i| (None, before_after(i).0));
    store
        .commit(&setup, &commit_options(FlushMethod::Fsync))
        .unwrap();
    sim.sync_all();
    sim.start_recording();

    let tx = numbered_transaction(refs, before_after);
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
