//! Running explorations of ref stores: the acts of each actor (transactions,
//! reads, listings, housekeeping, a death), a scenario of actors on one
//! repository, and the judging of every run's history (and of the history
//! cut at crash points) by the checker of [`super::interleave`].
//!
//! `REFSTORE_EXPLORE_SCALE=<n>` multiplies the number of random schedules
//! (and the bounded explorations' limits) for longer runs.

use super::interleave::{
    before_crash, checker, commit_options, final_reads, initial_writes, open, repository, targets,
    transaction, Format, History, Swap,
};
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::explore::{explore, Actor, ActorFn, Explored, Outcome, Run, Strategy};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_refs::backend::Backend;
use refstore_refs::files::pack::PackOptions;
use refstore_refs::value::{Target, TargetView};
use refstore_refs::{ObjectId, RefName};
pub use refstore_testsupport::explore::{bounded, random};
use std::io::Write;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

/// A compare-and-swap of each named ref: expected value to new value.
pub type Updates = Vec<(RefName, Option<ObjectId>, Option<ObjectId>)>;

/// What one actor does, in order.
#[derive(Debug, Clone)]
pub enum Act {
    /// One atomic transaction.
    Transaction(Updates),
    /// One atomic transaction of symbolic refs themselves: each from the
    /// ref it must point to (`None`: absent) to its new one (`None`:
    /// deleted).
    Symrefs(Vec<(RefName, Option<RefName>, Option<RefName>)>),
    /// A read of each ref, one after the other.
    Read(Vec<RefName>),
    /// A listing of `refs/` (`list`).
    List,
    /// A listing of `refs/` as advertisements make it (`visit`).
    Visit,
    /// `pack-refs --all` (files), or a full compaction (reftable).
    Pack,
    /// The actor is killed once it has made this many more filesystem
    /// operations (its later acts fail, leaving what it had begun).
    DieAfter(u64),
}

/// A configuration to explore.
#[derive(Debug, Clone)]
pub struct Scenario {
    pub format: Format,
    pub loose: Vec<(RefName, ObjectId)>,
    pub packed: Vec<(RefName, ObjectId)>,
    /// Each actor's acts.
    pub actors: Vec<Vec<Act>>,
    /// Check the history cut at crash points too.
    pub crashes: bool,
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
                Act::Symrefs(updates) => updates.iter().map(|(n, _, _)| n.clone()).collect(),
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
        Run { fs: sim, actors }
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
        let store = open(Arc::new(outcome.fs.clone()), self.format);
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
            .fs
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

/// One atomic transaction of compare-and-swaps, recorded.
fn swap(swaps: &[Swap], actor: &Actor, store: &dyn Backend, sim: &SimFs, history: &History) {
    let call = history.call(actor, sim);
    let answer = store
        .commit(&transaction(swaps), &commit_options())
        .map(|_| ());
    history.transaction(actor, sim, call, swaps, &answer);
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
        Act::Transaction(updates) => swap(&targets(updates), actor, store, sim, history),
        Act::Symrefs(updates) => {
            let symbolic = |to: &Option<RefName>| to.clone().map(Target::Symbolic);
            let swaps: Vec<Swap> = updates
                .iter()
                .map(|(name, old, new)| (name.clone(), symbolic(old), symbolic(new)))
                .collect();
            swap(&swaps, actor, store, sim, history);
        }
        Act::DieAfter(ops) => actor.die_after(*ops),
        // A killed actor's reads fail and answer no one.
        Act::Read(_) | Act::List | Act::Visit if actor.killed() => {}
        Act::Read(read) => {
            for name in read {
                let call = history.call(actor, sim);
                let value = match store.read(name) {
                    Ok(value) => value.map(|r| r.target),
                    Err(_) if actor.killed() => return,
                    Err(e) => panic!("reading {name}: {e}"),
                };
                history.reads(actor, sim, call, [(name.clone(), value)]);
            }
        }
        Act::List => {
            let call = history.call(actor, sim);
            let listing = match store.list(b"refs/") {
                Ok(listing) => listing,
                Err(_) if actor.killed() => return,
                Err(e) => panic!("listing: {e}"),
            };
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
                    .map(|r| r.target.clone());
                (name.clone(), value)
            });
            history.reads(actor, sim, call, seen.collect::<Vec<_>>());
        }
        Act::Visit => {
            let call = history.call(actor, sim);
            let mut shown = Vec::new();
            let visited = store.visit(b"refs/", &mut |view| {
                shown.push((
                    view.name.to_vec(),
                    match view.target {
                        TargetView::Object(id) => Target::Object(id),
                        TargetView::Symbolic(to) => Target::Symbolic(to.clone()),
                    },
                ));
                ControlFlow::Continue(())
            });
            match visited {
                Ok(()) => {}
                Err(_) if actor.killed() => return,
                Err(e) => panic!("visiting: {e}"),
            }
            assert!(
                shown.windows(2).all(|w| w[0].0 < w[1].0),
                "visited out of order: {shown:?}"
            );
            let seen = names.iter().map(|name| {
                let value = shown
                    .iter()
                    .find(|(n, _)| n == name.as_bytes())
                    .map(|(_, target)| target.clone());
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

/// Explores `scenario` with `strategy`; panics with the schedule and the
/// history of the first run that fails.
pub fn exploration(label: &str, scenario: &Scenario, strategy: Strategy) -> Explored {
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
            // Straight to the process's standard error, which the test
            // harness does not capture: CI's log reports every exploration.
            let _ = writeln!(
                std::io::stderr(),
                "explored {label}: {} schedules ({}), {} turns, {} histories checked, {} crash states",
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

pub fn files(
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
