//! Explorations of object operations racing each other
//! (`refstore_fs::sim::explore` on the real filesystem): each schedule
//! runs on a fresh copy of a template repository, its actors doing
//! [`actors::Act`]s through the library on the explorer's filesystem, and
//! is judged by [`oracle::judge`] with the machine's git.
//!
//! Objects are read with gitoxide straight from the operating system, so
//! the explorer interleaves the actors at their filesystem operations
//! through the `Vfs` (links, renames, removals, lock files, directory
//! listings, stats, reads of refs and of loose objects by housekeeping);
//! what an actor reads through gitoxide between two of those happens
//! within its turn. Schedules replay: listings are sorted, the template's
//! old objects are a month old while `gc.pruneExpire` is two weeks (so
//! prune's judgements do not depend on when a run happens), and each act
//! opens its repository, object database included, afresh.
//!
//! `REFSTORE_EXPLORE_SCALE=<n>` multiplies the schedule budgets.

pub mod actors;
pub mod oracle;
pub mod repos;

use actors::{Act, Answer};
use refstore_fs::real::RealFs;
use refstore_fs::sim::explore::{explore, Actor, ActorFn, Explored, Run, Strategy};
pub use refstore_testsupport::explore::{bounded, random};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// A repository to start every schedule from, and the acts of each actor.
pub struct Scenario {
    /// Holds the template repository (`<dir>/r.git`).
    pub template: tempfile::TempDir,
    /// Each actor's acts, in order.
    pub actors: Vec<Vec<Act>>,
}

/// One schedule's repository and what its actors were told.
struct Schedule {
    dir: tempfile::TempDir,
    answers: Vec<Arc<Mutex<Vec<Answer>>>>,
}

/// What the explorations of a scenario saw, for assertions that it does
/// what it is meant to (the judged runs did race).
pub struct Seen {
    /// Per schedule, the repository's packs at the end and the answers.
    pub runs: Vec<(Vec<String>, Vec<Answer>)>,
}

impl Scenario {
    fn git_dir(dir: &Path) -> PathBuf {
        dir.join("r.git")
    }

    fn run(&self, current: &RefCell<Option<Schedule>>) -> Run<RealFs> {
        let dir = repos::scratch();
        let copy = dir.path().join("repo");
        repos::copy_tree(self.template.path(), &copy);
        let git_dir = Self::git_dir(&copy);
        let mut answers = Vec::new();
        let actors = self
            .actors
            .iter()
            .map(|acts| {
                let told = Arc::new(Mutex::new(Vec::new()));
                answers.push(told.clone());
                let (acts, git_dir) = (acts.clone(), git_dir.clone());
                let body: ActorFn = Box::new(move |actor: &Actor| {
                    for act in &acts {
                        let answer = actors::perform(act, actor.vfs(), &git_dir);
                        told.lock().unwrap().push(answer);
                    }
                });
                body
            })
            .collect();
        *current.borrow_mut() = Some(Schedule { dir, answers });
        Run {
            fs: RealFs::new(),
            actors,
        }
    }

    /// Explores with `strategy`; panics with the schedule of the first run
    /// that fails. Returns what the runs left, for the caller's assertions
    /// that the scenario did race.
    pub fn explore(&self, label: &str, strategy: Strategy) -> Seen {
        let initial = {
            let (ok, out, err) = repos::git_with(
                &Self::git_dir(self.template.path()),
                &["for-each-ref", "--format=%(refname) %(objectname)"],
                b"",
            );
            assert!(ok, "{err}");
            String::from_utf8(out)
                .unwrap()
                .lines()
                .filter_map(|l| l.split_once(' '))
                .map(|(n, id)| (n.to_owned(), id.to_owned()))
                .collect::<BTreeMap<_, _>>()
        };
        let current: RefCell<Option<Schedule>> = RefCell::new(None);
        let mut seen = Seen { runs: Vec::new() };
        let acts: Vec<&Act> = self.actors.iter().flatten().collect();
        let check = |seen: &mut Seen| -> Result<(), String> {
            let schedule = current.borrow_mut().take().expect("a run was set up");
            let git_dir = Self::git_dir(&schedule.dir.path().join("repo"));
            let answers: Vec<Answer> = schedule
                .answers
                .iter()
                .flat_map(|a| a.lock().unwrap().clone())
                .collect();
            oracle::judge(&git_dir, &initial, &acts, &answers)?;
            seen.runs.push((packs(&git_dir), answers));
            Ok(())
        };
        let result = explore(&strategy, || self.run(&current), |_| check(&mut seen));
        let found = match result {
            Ok(explored) => {
                report(label, &strategy, &explored);
                return seen;
            }
            Err(found) => found,
        };
        // What the runs leave to the base filesystem (file times, the
        // order gitoxide reads in) is kept reproducible by hand: the
        // failing schedule is run again to show that it was.
        let replay = Strategy::Replay(found.schedule.clone());
        let again = explore(&replay, || self.run(&current), |_| check(&mut seen));
        let replayed = match again {
            Err(again) if again.message == found.message => "replays the same violation".into(),
            Err(again) => format!("replays another violation:\n{}", again.message),
            Ok(_) => "does not replay: the run depends on more than its schedule".into(),
        };
        panic!("{label}: {found}the schedule {replayed}");
    }
}

/// Straight to the process's standard error, which the test harness does
/// not capture: CI's log reports every exploration.
fn report(label: &str, strategy: &Strategy, explored: &Explored) {
    let _ = writeln!(
        std::io::stderr(),
        "explored {label}: {} schedules ({}), {} turns",
        explored.schedules,
        match (strategy, explored.exhausted) {
            (Strategy::Bounded { .. }, true) => "every schedule within the bound",
            (Strategy::Bounded { .. }, false) => "the first ones within the bound",
            _ => "seeded random schedules",
        },
        explored.turns,
    );
}

/// The packs (`pack-<hex>`) with an index in the repository at `git_dir`.
fn packs(git_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(git_dir.join("objects/pack"))
        .map(|entries| {
            entries
                .filter_map(|e| {
                    let name = e.unwrap().file_name().to_string_lossy().into_owned();
                    name.strip_suffix(".idx").map(str::to_owned)
                })
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}
