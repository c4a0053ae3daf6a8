//! A deterministic concurrency explorer: several actors (processes: a
//! transaction, a listing, a `pack-refs`, a push, a fetch, housekeeping)
//! work on one filesystem, and the explorer decides how their filesystem
//! operations interleave, one schedule after another.
//!
//! Each actor runs on a thread of its own against a [`Vfs`] that waits for
//! the actor's turn before every operation, so exactly one actor runs at a
//! time and a run is fixed by its schedule: the list of actors given each
//! turn. The explorer can run
//!
//! - every schedule with at most a few preemptions ([`Strategy::Bounded`]),
//!   depth first, as CHESS does;
//! - random schedules, each from a seed ([`Strategy::Random`], PCT);
//! - one recorded schedule again ([`Strategy::Replay`]), to reproduce what
//!   an exploration found.
//!
//! Waiting to retry (a lock held by another actor) is a point like any
//! other, in virtual time: [`Vfs::now`] advances by what the actor waited,
//! so lock timeouts expire after as many retries as they would in real
//! time, whatever the schedule. Schedules are fair to the waiting: an actor
//! that waited gets its next turn only after another actor took one (when
//! one can), so no schedule lets it spin to its timeout while the holder
//! of its lock is never run. POSIX record locks belong to the actor that
//! set them, as to a process.
//!
//! # The shared filesystem
//!
//! Usually a [`SimFs`]: then after each run the check can also enumerate
//! every crash state of the run ([`SimFs::check_crashes`]), so a crash at
//! any point of any interleaving is covered.
//!
//! Any other [`Vfs`] can be the base ([`Run::fs`]), typically
//! [`crate::real::RealFs`] on a fresh directory per schedule, for actors
//! that read through something other than the [`Vfs`] (objects, read with
//! gitoxide straight from the operating system). What such an actor reads
//! that way happens within its turn, between two of its [`Vfs`]
//! operations, while every other actor waits: so those reads are atomic
//! here, and interleavings are explored at the granularity of the
//! actors' [`Vfs`] operations only. A race that needs another actor to
//! act between two reads made outside the [`Vfs`] (say, between listing a
//! directory and opening a file it named) is found only where a [`Vfs`]
//! operation separates the two. Crash states need the [`SimFs`]; a real
//! base has none. Listings through the scheduled [`Vfs`] are sorted by
//! name, whatever the base's order, so that a schedule replays the same
//! run; what the base itself decides (file times, what an actor reads
//! outside the [`Vfs`]) is the caller's to keep reproducible.
//!
//! An actor's filesystem operations must all come from its own thread
//! (the turn belongs to the actor, not to a thread of it).

mod scheduled;
mod scheduler;
mod strategy;

use super::SimFs;
use crate::vfs::Vfs;
use scheduled::{Life, RecordLocks, ScheduledFs};
pub use scheduler::Point;
use scheduler::Scheduler;
use std::collections::BTreeSet;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use strategy::{Bounded, Chooser, Pct, Replay};

/// One actor's handle on a run.
pub struct Actor {
    id: usize,
    vfs: Arc<ScheduledFs>,
}

impl Actor {
    /// The actor's number (its place in [`Run::actors`]).
    pub fn id(&self) -> usize {
        self.id
    }

    /// The filesystem as this actor sees it: every operation waits for the
    /// actor's turn.
    pub fn vfs(&self) -> Arc<dyn Vfs> {
        self.vfs.clone()
    }

    /// The run's logical clock: turns given so far. Read while the actor
    /// has its turn, it orders the actor's events against everyone's.
    pub fn clock(&self) -> u64 {
        self.vfs.scheduler.turns()
    }

    /// Kills the actor once it has made `ops` more filesystem operations,
    /// as a process can be killed at any point: from then on every
    /// operation fails without reaching the filesystem (nothing the actor
    /// would clean up on its way out is cleaned up) and its record locks
    /// are gone.
    pub fn die_after(&self, ops: u64) {
        self.vfs.life.die_after(ops);
    }

    /// Whether the actor was killed ([`die_after`](Self::die_after)).
    pub fn killed(&self) -> bool {
        self.vfs.life.dead()
    }
}

/// What one actor does in a run.
pub type ActorFn = Box<dyn FnOnce(&Actor) + Send>;

/// A run to explore: the filesystem it starts from and its actors.
pub struct Run<F = SimFs> {
    /// The filesystem the actors share, as it is before they start.
    pub fs: F,
    /// The actors.
    pub actors: Vec<ActorFn>,
}

/// How schedules are chosen.
#[derive(Debug, Clone)]
pub enum Strategy {
    /// Every schedule with at most `preemptions` preemptions, depth first,
    /// up to `limit` schedules.
    Bounded {
        /// The most preemptions in one schedule.
        preemptions: u32,
        /// The most schedules to run.
        limit: usize,
    },
    /// `count` random schedules (PCT of the given depth), with seeds
    /// `seed`, `seed + 1`, ...
    Random {
        /// The first seed.
        seed: u64,
        /// Schedules to run.
        count: usize,
        /// Ordering constraints a bug may need (PCT's `d`).
        depth: usize,
    },
    /// One recorded schedule.
    Replay(Vec<usize>),
}

/// A finished run, for the caller's check.
pub struct Outcome<F = SimFs> {
    /// The filesystem as the actors left it.
    pub fs: F,
    /// Whose turn each turn was.
    pub schedule: Vec<usize>,
}

/// What an exploration covered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Explored {
    /// Schedules run and checked.
    pub schedules: usize,
    /// Whether every schedule of the strategy was run (bounded exploration
    /// within its limit).
    pub exhausted: bool,
    /// Turns in all runs.
    pub turns: u64,
}

/// A schedule whose run failed its check, or in which an actor panicked.
#[derive(Debug, Clone)]
pub struct Found {
    /// The schedule, to replay with [`Strategy::Replay`].
    pub schedule: Vec<usize>,
    /// Its seed, for a random schedule.
    pub seed: Option<u64>,
    /// Schedules run before it, itself included.
    pub after: usize,
    /// What went wrong.
    pub message: String,
}

impl fmt::Display for Found {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.message)?;
        write!(f, "found after {} schedules", self.after)?;
        if let Some(seed) = self.seed {
            write!(f, " (random schedule of seed {seed})")?;
        }
        writeln!(f)?;
        writeln!(
            f,
            "schedule (actor of each turn; replay with Strategy::Replay):"
        )?;
        writeln!(f, "  {:?}", self.schedule)
    }
}

impl std::error::Error for Found {}

/// Runs the actors of `setup()` under every schedule `strategy` gives,
/// checking each finished run with `check`, until a check fails or an
/// actor panics.
pub fn explore<F: Vfs + Clone + 'static>(
    strategy: &Strategy,
    mut setup: impl FnMut() -> Run<F>,
    mut check: impl FnMut(&Outcome<F>) -> Result<(), String>,
) -> Result<Explored, Found> {
    let mut explored = Explored {
        schedules: 0,
        exhausted: false,
        turns: 0,
    };
    let mut judge =
        |run: Run<F>, chooser: &mut dyn Chooser, seed: Option<u64>, explored: &mut Explored| {
            let (outcome, panics) = run_once(run, chooser);
            explored.schedules += 1;
            explored.turns += outcome.schedule.len() as u64;
            let failure = match panics.first() {
                Some((actor, message)) => Some(format!("actor {actor} panicked: {message}")),
                None => check(&outcome).err(),
            };
            match failure {
                Some(message) => Err(Found {
                    schedule: outcome.schedule,
                    seed,
                    after: explored.schedules,
                    message,
                }),
                None => Ok(outcome.schedule.len()),
            }
        };
    match strategy {
        Strategy::Bounded { preemptions, limit } => {
            let mut dfs = Bounded::new(*preemptions);
            loop {
                judge(setup(), &mut dfs, None, &mut explored)?;
                if !dfs.advance() {
                    explored.exhausted = true;
                    break;
                }
                if explored.schedules >= *limit {
                    break;
                }
            }
        }
        Strategy::Random { seed, count, depth } => {
            // PCT places its change points among the turns of a run: the
            // length of the previous run is the estimate.
            let mut turns = 64;
            for i in 0..*count as u64 {
                let seed = seed.wrapping_add(i);
                let run = setup();
                let mut pct = Pct::new(seed, run.actors.len(), turns, *depth);
                turns = judge(run, &mut pct, Some(seed), &mut explored)? as u64;
            }
            explored.exhausted = true;
        }
        Strategy::Replay(schedule) => {
            let mut replay = Replay {
                schedule: schedule.clone(),
                turn: 0,
            };
            judge(setup(), &mut replay, None, &mut explored)?;
            explored.exhausted = true;
        }
    }
    Ok(explored)
}

/// Runs the actors of `run` to the end, `chooser` giving the turns.
/// Returns the outcome and the actors that panicked, with their message.
fn run_once<F: Vfs + Clone + 'static>(
    run: Run<F>,
    chooser: &mut dyn Chooser,
) -> (Outcome<F>, Vec<(usize, String)>) {
    let Run { fs, actors } = run;
    let base: Arc<dyn Vfs> = Arc::new(fs.clone());
    // Each run's actors play processes of their own, distinct from those of
    // every other run (tests explore in parallel in one test process).
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let first_process = (1 << 40) + (RUNS.fetch_add(1, Ordering::Relaxed) << 12);
    let scheduler = Arc::new(Scheduler::new(actors.len()));
    let record_locks = Arc::new(RecordLocks::default());
    let epoch = Instant::now();
    let panics = Arc::new(Mutex::new(Vec::new()));
    let threads: Vec<_> = actors
        .into_iter()
        .enumerate()
        .map(|(id, body)| {
            let actor = Actor {
                id,
                vfs: Arc::new(ScheduledFs {
                    base: base.clone(),
                    scheduler: scheduler.clone(),
                    actor: id,
                    process: first_process + id as u64,
                    record_locks: record_locks.clone(),
                    epoch,
                    waited: Mutex::new(Duration::ZERO),
                    life: Arc::new(Life::default()),
                }),
            };
            let scheduler = scheduler.clone();
            let panics = panics.clone();
            std::thread::Builder::new()
                .name(format!("actor-{id}"))
                .spawn(move || {
                    scheduler.wait_turn(id, Point::Start);
                    let result = catch_unwind(AssertUnwindSafe(|| body(&actor)));
                    let process = actor.vfs.process;
                    drop(actor);
                    crate::stale::process_ended(process);
                    if let Err(payload) = result {
                        let message = payload
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_else(|| "(no message)".into());
                        panics
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push((id, message));
                    }
                    scheduler.finish(id);
                })
                .expect("spawn an actor thread")
        })
        .collect();
    let mut schedule = Vec::new();
    let mut last: Option<usize> = None;
    // Actors that asked to wait and have not seen anyone else move since:
    // they only spin, so they get no turn while another actor can go on
    // (fairness, as CHESS assumes of a thread that yields).
    let mut spinning = BTreeSet::new();
    loop {
        let waiting = scheduler.settle();
        if waiting.is_empty() {
            break;
        }
        if let Some(last) = last {
            if waiting.contains(&(last, Point::Pause)) {
                spinning.insert(last);
            }
        }
        let eligible: Vec<(usize, Point)> = waiting
            .iter()
            .copied()
            .filter(|(a, _)| !spinning.contains(a))
            .collect();
        let eligible = if eligible.is_empty() {
            waiting
        } else {
            eligible
        };
        let next = chooser.choose(&eligible, last);
        spinning.retain(|&a| a == next);
        schedule.push(next);
        last = Some(next);
        scheduler.give(next);
    }
    for thread in threads {
        let _ = thread.join();
    }
    let panics = std::mem::take(&mut *panics.lock().unwrap_or_else(|e| e.into_inner()));
    (Outcome { fs, schedule }, panics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// Two actors increment a counter file by reading it and writing it
    /// back without a lock: some interleaving loses an increment, and the
    /// explorer finds it within one preemption.
    fn counter_run() -> Run {
        let sim = SimFs::new();
        sim.create_dir_all(Path::new("/c")).unwrap();
        let mut f = sim.create_exclusive(Path::new("/c/n")).unwrap();
        f.write_all(b"0").unwrap();
        drop(f);
        let increment: fn(&Actor) = |actor| {
            let vfs = actor.vfs();
            let n: u32 = String::from_utf8(vfs.read(Path::new("/c/n")).unwrap())
                .unwrap()
                .parse()
                .unwrap();
            let tmp = format!("/c/n.{}", actor.id());
            let mut f = vfs.create_exclusive(Path::new(&tmp)).unwrap();
            f.write_all((n + 1).to_string().as_bytes()).unwrap();
            drop(f);
            vfs.rename(Path::new(&tmp), Path::new("/c/n")).unwrap();
        };
        Run {
            fs: sim,
            actors: vec![Box::new(increment), Box::new(increment)],
        }
    }

    fn both_counted(outcome: &Outcome) -> Result<(), String> {
        match outcome.fs.files().get(Path::new("/c/n")).map(Vec::as_slice) {
            Some(b"2") => Ok(()),
            other => Err(format!("counter reads {other:?}")),
        }
    }

    #[test]
    fn a_lost_update_is_found_and_replays() {
        let none = explore(
            &Strategy::Bounded {
                preemptions: 0,
                limit: 100,
            },
            counter_run,
            both_counted,
        )
        .expect("without preemption each increment runs alone");
        assert!(none.exhausted);
        assert_eq!(none.schedules, 2);

        let found = explore(
            &Strategy::Bounded {
                preemptions: 1,
                limit: 100,
            },
            counter_run,
            both_counted,
        )
        .expect_err("one preemption between read and rename loses an increment");
        assert!(found.message.contains("counter reads"), "{found}");

        let again = explore(
            &Strategy::Replay(found.schedule.clone()),
            counter_run,
            both_counted,
        )
        .expect_err("the schedule replays the same run");
        assert_eq!(again.message, found.message);

        let random = explore(
            &Strategy::Random {
                seed: 1,
                count: 200,
                depth: 2,
            },
            counter_run,
            both_counted,
        )
        .expect_err("random schedules find it too");
        assert!(random.seed.is_some());
    }

    /// The same lost update with the operating system's filesystem as the
    /// base, the counter read outside the [`Vfs`] (as objects are read
    /// through gitoxide): that read happens within the actor's turn, and
    /// the operations after it are still interleaved, so the lost update
    /// is found, and its schedule replays on a fresh directory.
    #[test]
    fn a_lost_update_on_a_real_directory_is_found_and_replays() {
        let dirs = std::cell::RefCell::new(Vec::new());
        let run = || {
            let dir = tempfile::tempdir().unwrap();
            let counter = dir.path().join("n");
            std::fs::write(&counter, b"0").unwrap();
            let increment = |counter: std::path::PathBuf| -> ActorFn {
                Box::new(move |actor: &Actor| {
                    let n: u32 = std::fs::read_to_string(&counter).unwrap().parse().unwrap();
                    let tmp = counter.with_extension(actor.id().to_string());
                    let vfs = actor.vfs();
                    let mut f = vfs.create_exclusive(&tmp).unwrap();
                    f.write_all((n + 1).to_string().as_bytes()).unwrap();
                    drop(f);
                    vfs.rename(&tmp, &counter).unwrap();
                })
            };
            let actors = vec![increment(counter.clone()), increment(counter)];
            dirs.borrow_mut().push(dir);
            Run {
                fs: crate::real::RealFs::new(),
                actors,
            }
        };
        let counted = |_: &Outcome<crate::real::RealFs>| {
            let dirs = dirs.borrow();
            let dir = dirs.last().unwrap().path();
            match std::fs::read_to_string(dir.join("n")).unwrap().as_str() {
                "2" => Ok(()),
                other => Err(format!("counter reads {other}")),
            }
        };
        let found = explore(
            &Strategy::Bounded {
                preemptions: 1,
                limit: 100,
            },
            run,
            counted,
        )
        .expect_err("one preemption between read and rename loses an increment");
        let again = explore(&Strategy::Replay(found.schedule.clone()), run, counted)
            .expect_err("the schedule replays the same run");
        assert_eq!(again.message, found.message);
    }

    #[test]
    fn a_held_lock_waits_in_virtual_time() {
        // Two actors each take a lock file, hold it for an operation and
        // give it up, retrying with a 10 s timeout in virtual time: however
        // the turns fall, each gets the lock once the other gives it up,
        // long before 10 s of waiting, and no one sleeps for real.
        let run = || {
            let sim = SimFs::new();
            sim.create_dir_all(Path::new("/l")).unwrap();
            let take: fn(&Actor) = |actor| {
                let vfs = actor.vfs();
                let lock = crate::lock::LockFile::acquire(&vfs, "/l/x", Duration::from_secs(10))
                    .expect("the lock is given up before 10 s of virtual time");
                vfs.stat(Path::new("/l")).unwrap();
                lock.rollback().unwrap();
            };
            Run {
                fs: sim,
                actors: vec![Box::new(take), Box::new(take)],
            }
        };
        let explored = explore(
            &Strategy::Bounded {
                preemptions: 2,
                limit: 1000,
            },
            run,
            |_| Ok(()),
        )
        .unwrap();
        assert!(explored.exhausted);
        assert!(explored.schedules > 2, "{explored:?}");
    }
}
