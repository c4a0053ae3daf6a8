//! Interleavings with stale-lock recovery on (`refstore.staleLockAge`): a
//! writer killed at any point of its transaction leaves its lock files,
//! and the writers racing with it remove them and go on. Recovery must only
//! ever remove the lock of a process that is gone: a lock taken away from a
//! live writer would let two writers win compare-and-swaps of one ref.
//!
//! Every lock file on the simulated filesystem is older than the minimum
//! age, so only the holder file's record locks stand between a recoverer
//! and a live writer's lock: the explorer plays each actor as a process of
//! its own, with its own record locks, dropped when it is killed.
//!
//! A test binary of its own: the recovery policy is registered for the
//! process, and would apply to every other exploration of the same
//! repository path.

mod support;

use refstore_refs::RefName;
use std::path::Path;
use std::time::Duration;
use support::interleave::{branch, id, Format, GIT_DIR};
use support::scenario::{bounded, exploration, random, Act, Scenario};

fn recovering() {
    refstore_fs::stale::recover_stale_locks(Path::new(GIT_DIR), Duration::from_secs(60));
}

/// Actor 0 updates `a` and `b` and is killed after `ops` operations;
/// actors 1 and 2 race it and each other with compare-and-swaps of `a`
/// expecting the same old value, and actor 3 deletes `b` and reads.
fn killed_writer(format: Format, ops: u64) -> Scenario {
    let a: RefName = branch("a");
    let b: RefName = branch("b");
    Scenario {
        format,
        loose: vec![(a.clone(), id(1)), (b.clone(), id(2))],
        packed: Vec::new(),
        actors: vec![
            vec![
                Act::DieAfter(ops),
                Act::Transaction(vec![
                    (a.clone(), Some(id(1)), Some(id(9))),
                    (b.clone(), Some(id(2)), Some(id(8))),
                ]),
            ],
            vec![Act::Transaction(vec![(
                a.clone(),
                Some(id(1)),
                Some(id(10)),
            )])],
            vec![Act::Transaction(vec![(
                a.clone(),
                Some(id(1)),
                Some(id(20)),
            )])],
            vec![
                Act::Transaction(vec![(b.clone(), Some(id(2)), None)]),
                Act::Read(vec![a.clone(), b.clone()]),
            ],
        ],
        crashes: false,
    }
}

#[test]
fn a_killed_writer_s_locks_are_recovered_and_no_live_lock_is_taken() {
    recovering();
    for format in [
        Format::Files,
        Format::Reftable {
            auto_compaction: true,
        },
    ] {
        // Killed at each of its first operations: before, while and after
        // it takes its locks.
        for ops in 0..24 {
            let scenario = killed_writer(format, ops);
            let label = format!("{format:?}, writer killed after {ops} operations");
            exploration(&format!("{label} (bounded)"), &scenario, bounded(1, 150));
            exploration(
                &format!("{label} (random)"),
                &scenario,
                random(ops * 1000, 40, 3),
            );
        }
    }
}

#[test]
fn recovery_racing_pack_refs_and_listings() {
    recovering();
    let names: Vec<RefName> = ["a", "b", "c"].iter().map(|s| branch(s)).collect();
    let refs: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), id(i as u32 + 1)))
        .collect();
    for ops in [3, 6, 9, 12] {
        let scenario = Scenario {
            format: Format::Files,
            loose: refs.clone(),
            packed: Vec::new(),
            actors: vec![
                vec![
                    Act::DieAfter(ops),
                    Act::Transaction(vec![(names[0].clone(), Some(id(1)), None)]),
                ],
                vec![Act::Pack, Act::List],
                vec![Act::Transaction(vec![(
                    names[0].clone(),
                    Some(id(1)),
                    None,
                )])],
                vec![
                    Act::Visit,
                    Act::Transaction(vec![(names[1].clone(), Some(id(2)), None)]),
                ],
            ],
            crashes: false,
        };
        exploration(
            &format!("recovery vs pack-refs, writer killed after {ops} (random)"),
            &scenario,
            random(ops, 150, 3),
        );
    }
}
