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
//! `REFSTORE_EXPLORE_SCALE=<n>` multiplies the number of random schedules
//! (and the bounded explorations' limits) for longer runs.

mod support;

use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::explore::{explore, Actor, ActorFn, Explored, Outcome, Run, Strategy};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_refs::backend::Backend;
use refstore_refs::files::pack::PackOptions;
use refstore_refs::value::TargetView;
use refstore_refs::{ObjectId, RefName};
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;
use support::interleave::{
    before_crash, branch, checker, commit_options, final_reads, id, initial_writes, open,
    repository, transaction, Event, Format, History,
};

/// A compare-and-swap of each named ref: expected value to new value.
type Updates = Vec<(RefName, Option<ObjectId>, Option<ObjectId>)>;

/// What one actor does, in order.
#[derive(Debug, Clone)]
enum Act {
    /// One atomic transaction.
    Transaction(Updates),
    /// A read of each ref, one after the other.
    Read(Vec<RefName>),
    /// A listing of `refs/` (`list`).
    List,
    /// A listing of `refs/` as advertisements make it (`visit`).
    Visit,
    /// `pack-refs --all` (files), or a full compaction (reftable).
    Pack,
}

/// A configuration to explore.
#[derive(Debug, Clone)]
struct Scenario {
    format: Format,
    loose: Vec<(RefName, ObjectId)>,
    packed: Vec<(RefName, ObjectId)>,
    /// Each actor's acts.
    actors: Vec<Vec<Act>>,
    /// Check the history cut at crash points too.
    crashes: bool,
}

impl Scenario {
    /// Every ref the scenario is about: listings read each of them.
    fn names(&self) -> Vec<RefName> {
        let mut names: Vec<RefName> = self
            .loose
            .iter()
            .chain(&self.packed)
            .map(|(n, _)| n.clone())
            .chain(self.actors.iter().flatten().flat_map(|act| match act {
                Act::Transaction(updates) => updates.iter().map(|(n, _, _)| n.clone()).collect(),
                Act::Read(names) => names.clone(),
                _ => Vec::new(),
            }))
            .collect();
        names.sort();
        names.dedup();
        names
    }

    fn run(&self, history: &Arc<History>) -> Run {
        let sim = repository(self.format, &self.loose, &self.packed);
        let names = Arc::new(self.names());
        let actors = self
            .actors
            .iter()
            .map(|acts| {
                let acts = acts.clone();
                let sim = sim.clone();
                let history = history.clone();
                let names = names.clone();
                let format = self.format;
                let body: ActorFn = Box::new(move |actor: &Actor| {
                    let store = open(actor.vfs(), format);
                    for act in &acts {
                        perform(act, actor, &*store, &sim, &history, &names);
                    }
                });
                body
            })
            .collect();
        Run { sim, actors }
    }

    /// Judges a finished run: its history with the final values, and (if
    /// asked) the history cut at every crash point with the values read
    /// back after the crash.
    fn check(
        &self,
        outcome: &Outcome,
        history: &History,
        counts: &mut Counts,
    ) -> Result<(), String> {
        // Where both hold a ref, the loose file is its value.
        let mut initial: Vec<(RefName, ObjectId)> = self.loose.clone();
        for (name, value) in &self.packed {
            if !initial.iter().any(|(n, _)| n == name) {
                initial.push((name.clone(), *value));
            }
        }
        let mut events = initial_writes(&initial, usize::MAX >> 2);
        events.extend(history.events());
        let end = events.iter().map(|e| e.ret).max().unwrap_or(0) + 1;
        let names = self.names();
        let store = open(Arc::new(outcome.sim.clone()), self.format);
        let mut full = events.clone();
        full.extend(final_reads(&*store, &names, usize::MAX >> 1, end)?);
        listing_agrees(&*store, &names)?;
        counts.histories += 1;
        checker().check(&full)?;
        if !self.crashes {
            return Ok(());
        }
        let options = CrashOptions {
            exhaustive_limit: 16,
            samples: 4,
            seed: outcome.schedule.len() as u64,
        };
        let report = outcome
            .sim
            .check_crashes(&options, |crashed| {
                let store = open(crashed.vfs(), self.format);
                let mut cut = before_crash(&events, crashed.point);
                cut.extend(final_reads(&*store, &names, usize::MAX >> 1, end)?);
                checker()
                    .check(&cut)
                    .map_err(|e| format!("after a crash at point {}: {e}", crashed.point))
            })
            .map_err(|v| v.to_string())?;
        counts.crash_states += report.states;
        Ok(())
    }
}

/// A final listing shows exactly the refs the final reads found.
fn listing_agrees(store: &dyn Backend, names: &[RefName]) -> Result<(), String> {
    let listing = store.list(b"refs/").map_err(|e| e.to_string())?;
    for name in names {
        let listed = listing
            .refs
            .iter()
            .find(|r| r.name == *name)
            .map(|r| r.target.clone());
        let read = store
            .read(name)
            .map_err(|e| e.to_string())?
            .map(|r| r.target);
        if listed != read {
            return Err(format!(
                "at the end {name} is listed as {listed:?} but reads {read:?}"
            ));
        }
    }
    Ok(())
}

fn perform(
    act: &Act,
    actor: &Actor,
    store: &dyn Backend,
    sim: &SimFs,
    history: &History,
    names: &[RefName],
) {
    match act {
        Act::Transaction(updates) => {
            let call = history.call(actor, sim);
            let answer = store
                .commit(&transaction(updates), &commit_options())
                .map(|_| ());
            history.transaction(actor, sim, call, updates, &answer);
        }
        Act::Read(read) => {
            for name in read {
                let call = history.call(actor, sim);
                let value = store
                    .read(name)
                    .unwrap_or_else(|e| panic!("reading {name}: {e}"))
                    .and_then(|r| r.target.object_id().copied());
                history.reads(actor, sim, call, [(name.clone(), value)]);
            }
        }
        Act::List => {
            let call = history.call(actor, sim);
            let listing = store
                .list(b"refs/")
                .unwrap_or_else(|e| panic!("listing: {e}"));
            assert!(
                listing.broken.is_empty(),
                "broken refs listed: {:?}",
                listing.broken
            );
            let seen = names.iter().map(|name| {
                let value = listing
                    .refs
                    .iter()
                    .find(|r| r.name == *name)
                    .and_then(|r| r.target.object_id().copied());
                (name.clone(), value)
            });
            history.reads(actor, sim, call, seen.collect::<Vec<_>>());
        }
        Act::Visit => {
            let call = history.call(actor, sim);
            let mut shown = Vec::new();
            store
                .visit(b"refs/", &mut |view| {
                    if let TargetView::Object(id) = view.target {
                        shown.push((view.name.to_vec(), id));
                    }
                    ControlFlow::Continue(())
                })
                .unwrap_or_else(|e| panic!("visiting: {e}"));
            assert!(
                shown.windows(2).all(|w| w[0].0 < w[1].0),
                "visited out of order: {shown:?}"
            );
            let seen = names.iter().map(|name| {
                let value = shown
                    .iter()
                    .find(|(n, _)| n == name.as_bytes())
                    .map(|(_, id)| *id);
                (name.clone(), value)
            });
            history.reads(actor, sim, call, seen.collect::<Vec<_>>());
        }
        Act::Pack => {
            // Housekeeping changes no value; a lock held by a writer makes
            // it give up, as git's does.
            if let Some(files) = store.as_files() {
                let options = PackOptions {
                    all: true,
                    prune: true,
                    flush: FlushMethod::Batch,
                    lock_timeout: Duration::from_millis(100),
                    packed_refs_timeout: Duration::from_millis(1000),
                };
                let _ = files.pack_refs(&options, &|_| None);
            } else if let Some(reftable) = store.as_reftable() {
                let _ = reftable.compact_all(FlushMethod::Batch);
            }
        }
    }
}

/// What the explorations covered, for the report.
#[derive(Debug, Default)]
struct Counts {
    histories: usize,
    crash_states: usize,
}

/// The multiplier of schedule budgets (`REFSTORE_EXPLORE_SCALE`).
fn scale() -> usize {
    std::env::var("REFSTORE_EXPLORE_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1)
}

/// Explores `scenario` with `strategy`; panics with the schedule and the
/// history of the first run that fails.
fn exploration(label: &str, scenario: &Scenario, strategy: Strategy) -> Explored {
    let mut counts = Counts::default();
    let history = std::cell::RefCell::new(Arc::new(History::default()));
    let result = explore(
        &strategy,
        || {
            let fresh = Arc::new(History::default());
            *history.borrow_mut() = fresh.clone();
            scenario.run(&fresh)
        },
        |outcome| scenario.check(outcome, &history.borrow(), &mut counts),
    );
    match result {
        Ok(explored) => {
            println!(
                "{label}: {} schedules ({}), {} turns, {} histories checked, {} crash states",
                explored.schedules,
                match (&strategy, explored.exhausted) {
                    (Strategy::Bounded { .. }, true) => "every schedule within the bound",
                    (Strategy::Bounded { .. }, false) => "the first ones within the bound",
                    _ => "seeded random schedules",
                },
                explored.turns,
                counts.histories,
                counts.crash_states,
            );
            explored
        }
        Err(found) => panic!("{label}: {found}"),
    }
}

fn bounded(preemptions: u32, limit: usize) -> Strategy {
    Strategy::Bounded {
        preemptions,
        limit: limit * scale(),
    }
}

fn random(seed: u64, count: usize, depth: usize) -> Strategy {
    Strategy::Random {
        seed,
        count: count * scale(),
        depth,
    }
}

fn files(
    loose: &[(RefName, ObjectId)],
    packed: &[(RefName, ObjectId)],
    actors: Vec<Vec<Act>>,
) -> Scenario {
    Scenario {
        format: Format::Files,
        loose: loose.to_vec(),
        packed: packed.to_vec(),
        actors,
        crashes: false,
    }
}

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
