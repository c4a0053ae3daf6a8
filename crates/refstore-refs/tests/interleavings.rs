//! Every interleaving of ref writers, readers and housekeeping on one
//! repository, explored deterministically (`refstore_fs::sim::explore`):
//! transactions that create, update and delete refs, single-ref reads,
//! listings (`list`, and `visit` as advertisements use it), `pack-refs`
//! and reftable compaction, as separate actors whose filesystem operations
//! the explorer interleaves, every schedule with up to two preemptions for
//! small configurations, seeded random (PCT) schedules for larger ones.
//!
//! Each run's history is judged by Porcupine (a register per ref; see
//! `support/interleave.rs`), and so is the history cut at every crash
//! point of chosen runs, with the refs read back from each state the disk
//! may hold after the crash: a crash at any point of an interleaving loses
//! no acknowledged update either.
//!
//! `REFSTORE_EXPLORE_SCALE=<n>` multiplies the schedule budgets.

mod support;

use refstore_refs::RefName;
use support::interleave::{branch, checker, id, Event, Format};
use support::scenario::{bounded, exploration, files, random, Act, Scenario};

#[test]
fn deletions_racing_pack_refs_stay_deleted() {
    // A deletion of a loose ref while `pack-refs --all` packs it: the ref
    // must not come back from `packed-refs`.
    let a = branch("a");
    let b = branch("b");
    let scenario = files(
        &[(a.clone(), id(1)), (b.clone(), id(2))],
        &[],
        vec![
            vec![Act::Transaction(vec![(a.clone(), Some(id(1)), None)])],
            vec![Act::Pack],
            vec![Act::Read(vec![a.clone(), b.clone()])],
        ],
    );
    exploration(
        "deletion vs pack-refs (bounded)",
        &scenario,
        bounded(2, 4000),
    );
    exploration(
        "deletion vs pack-refs (random)",
        &scenario,
        random(1, 400, 3),
    );
}

#[test]
fn listings_racing_pack_refs_miss_no_ref() {
    // Refs that exist throughout are in every listing, while `pack-refs`
    // moves them from their loose files into `packed-refs`.
    let refs: Vec<_> = ["a", "b", "c"]
        .iter()
        .enumerate()
        .map(|(i, s)| (branch(s), id(i as u32 + 1)))
        .collect();
    let list = files(&refs, &[], vec![vec![Act::Pack], vec![Act::List]]);
    exploration("listing vs pack-refs (bounded)", &list, bounded(2, 4000));
    let visit = files(&refs, &[], vec![vec![Act::Pack], vec![Act::Visit]]);
    exploration(
        "advertisement vs pack-refs (bounded)",
        &visit,
        bounded(2, 4000),
    );
    let reads = files(
        &refs,
        &[],
        vec![
            vec![Act::Pack],
            vec![Act::Read(refs.iter().map(|(n, _)| n.clone()).collect())],
        ],
    );
    exploration(
        "single-ref reads vs pack-refs (bounded)",
        &reads,
        bounded(2, 4000),
    );
}

#[test]
fn compare_and_swaps_of_one_ref_have_one_winner() {
    // Two writers expect the same old value of a packed ref while it is
    // packed again; a third creates a ref and deletes another.
    let a = branch("a");
    let c = branch("c");
    let d = branch("d/e");
    let scenario = files(
        &[(c.clone(), id(3))],
        &[(a.clone(), id(1))],
        vec![
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
                Act::Transaction(vec![
                    (d.clone(), None, Some(id(4))),
                    (c.clone(), Some(id(3)), None),
                ]),
                Act::Pack,
            ],
        ],
    );
    exploration(
        "racing compare-and-swaps (bounded)",
        &scenario,
        bounded(1, 3000),
    );
    exploration(
        "racing compare-and-swaps (random)",
        &scenario,
        random(100, 300, 3),
    );
}

#[test]
fn writers_readers_and_housekeeping_at_random() {
    // Four actors and six refs, loose and packed: seeded random schedules.
    let names: Vec<RefName> = ["a", "b", "c", "d", "e", "f/g"]
        .iter()
        .map(|s| branch(s))
        .collect();
    let loose = vec![
        (names[0].clone(), id(1)),
        (names[1].clone(), id(2)),
        (names[2].clone(), id(3)),
    ];
    let packed = vec![(names[2].clone(), id(30)), (names[3].clone(), id(4))];
    let actors = vec![
        vec![
            Act::Transaction(vec![
                (names[0].clone(), Some(id(1)), None),
                (names[4].clone(), None, Some(id(5))),
            ]),
            Act::Transaction(vec![(names[3].clone(), Some(id(4)), Some(id(40)))]),
        ],
        vec![
            Act::Transaction(vec![(names[2].clone(), Some(id(3)), None)]),
            Act::Transaction(vec![
                (names[5].clone(), None, Some(id(6))),
                (names[1].clone(), Some(id(2)), None),
            ]),
        ],
        vec![Act::Pack, Act::List],
        vec![Act::Visit, Act::Read(names.clone()), Act::List],
    ];
    let scenario = files(&loose, &packed, actors);
    exploration(
        "files, four actors (random)",
        &scenario,
        random(1000, 1500, 3),
    );
}

#[test]
fn reftable_transactions_racing_compaction() {
    let names: Vec<RefName> = ["a", "b", "c"].iter().map(|s| branch(s)).collect();
    let refs: Vec<_> = names
        .iter()
        .enumerate()
        .map(|(i, n)| (n.clone(), id(i as u32 + 1)))
        .collect();
    for auto_compaction in [false, true] {
        let scenario = Scenario {
            format: Format::Reftable { auto_compaction },
            loose: refs.clone(),
            packed: Vec::new(),
            actors: vec![
                vec![Act::Transaction(vec![(
                    names[0].clone(),
                    Some(id(1)),
                    None,
                )])],
                vec![Act::Transaction(vec![(
                    names[1].clone(),
                    Some(id(2)),
                    Some(id(20)),
                )])],
                vec![Act::Pack],
                vec![Act::List, Act::Read(names.clone())],
            ],
            crashes: false,
        };
        let label = format!("reftable, auto-compaction {auto_compaction}");
        exploration(&format!("{label} (bounded)"), &scenario, bounded(1, 2000));
        exploration(&format!("{label} (random)"), &scenario, random(7, 500, 3));
    }
}

#[test]
fn a_crash_at_any_point_of_an_interleaving_loses_nothing_acknowledged() {
    let a = branch("a");
    let b = branch("b");
    let c = branch("c");
    for format in [
        Format::Files,
        Format::Reftable {
            auto_compaction: true,
        },
    ] {
        let scenario = Scenario {
            format,
            loose: vec![(a.clone(), id(1)), (b.clone(), id(2))],
            packed: Vec::new(),
            actors: vec![
                vec![Act::Transaction(vec![
                    (a.clone(), Some(id(1)), None),
                    (c.clone(), None, Some(id(3))),
                ])],
                vec![Act::Pack],
                vec![Act::Transaction(vec![(
                    b.clone(),
                    Some(id(2)),
                    Some(id(20)),
                )])],
            ],
            crashes: true,
        };
        exploration(
            &format!("{format:?} with crashes (random)"),
            &scenario,
            random(50, 60, 3),
        );
    }
}

#[test]
fn symbolic_refs_racing_writers_and_housekeeping() {
    // A symbolic ref created, repointed and deleted by compare-and-swaps
    // of its own value, while its targets are packed and listed.
    let main = branch("main");
    let dev = branch("dev");
    let head = RefName::new("refs/remotes/origin/HEAD").unwrap();
    for format in [
        Format::Files,
        Format::Reftable {
            auto_compaction: true,
        },
    ] {
        let scenario = Scenario {
            format,
            loose: vec![(main.clone(), id(1)), (dev.clone(), id(2))],
            packed: Vec::new(),
            actors: vec![
                vec![
                    Act::Symrefs(vec![(head.clone(), None, Some(main.clone()))]),
                    Act::Symrefs(vec![(head.clone(), Some(main.clone()), Some(dev.clone()))]),
                ],
                vec![Act::Symrefs(vec![(head.clone(), Some(main.clone()), None)])],
                vec![Act::Pack, Act::List],
                vec![Act::Visit, Act::Read(vec![head.clone(), main.clone()])],
            ],
            crashes: false,
        };
        exploration(
            &format!("symbolic refs, {format:?} (bounded)"),
            &scenario,
            bounded(1, 600),
        );
        exploration(
            &format!("symbolic refs, {format:?} (random)"),
            &scenario,
            random(300, 200, 3),
        );
    }
}

#[test]
fn the_checker_rejects_a_deletion_that_comes_back() {
    // The oracle can fail: an acknowledged deletion followed by a read of
    // the old value is no linearizable history.
    let event = |kind: &'static str, old: &str, new: &str, value: &str, call, ret| Event {
        client: if kind == "cas" { 0 } else { 1 },
        name: "refs/heads/a".into(),
        kind,
        old: old.into(),
        new: new.into(),
        value: value.into(),
        result: "ok",
        call,
        ret,
        call_change: 0,
        ret_change: 0,
    };
    let one = id(1).to_string();
    let created = event("cas", "", &one, "", 0, 1);
    let deleted_then_back = [
        created.clone(),
        event("cas", &one, "", "", 2, 3),
        event("read", "", "", &one, 4, 5),
    ];
    assert!(checker().check(&deleted_then_back).is_err());
    let concurrent = [
        created,
        event("cas", &one, "", "", 2, 5),
        event("read", "", "", &one, 3, 4),
    ];
    assert!(checker().check(&concurrent).is_ok());
}
