//! Real processes racing on the refs of one repository: a packer
//! (`pack-refs --all`; on reftable a compaction), a writer (`update-ref
//! --stdin` deleting, updating and creating refs in one transaction) and
//! readers listing every ref while both run, git's and refstore's mixed
//! as the race asks. Each round starts from a fresh repository whose refs
//! the writer is about to change are loose (files) or spread over many
//! tables (reftable), so the packer has them to move as the writer
//! changes them.
//!
//! What must hold, the linearizability of the ref store as seen from the
//! outside:
//!
//! - an acknowledged deletion stays deleted, an acknowledged update or
//!   creation holds (checked when both are done);
//! - every ref that exists throughout a listing is in it, with a value it
//!   had (the stable refs and those the writer only updates exist
//!   throughout the round);
//! - readers never fail.
//!
//! A writer refused for a lock another process held (git's and refstore's
//! lock timeouts; JGit's lock failures, which it retries for a while)
//! acknowledged nothing; it is counted, not judged. Refused for any other
//! reason, it misread a ref nobody else changes: judged. A writer that
//! does not know whether it wrote (JGit answers an I/O error after its
//! table may have been listed as a failed batch) acknowledged nothing
//! either; it is counted and its first message shown. A packer that fails
//! is counted and its first message shown.
//!
//! The other implementations of reftable are JGit, run as long-lived
//! `JGitSession` processes (one JVM start-up per role, not per
//! operation), and, where [`GIT_REFTABLE_VARIABLE`] names one, a git of
//! 2.45 or later (the machine's git 2.39 reads no reftable).

mod plan;
mod sessions;
mod tally;
mod tools;

pub use tally::Tally;
pub use tools::{reftable_git, Format, Reader, Tool, GIT_REFTABLE_VARIABLE};

use super::jgit;
use super::stress::{Budget, Rng};
use super::{run_isolated, stderr};
use plan::{setup, Plan, CREATED, DELETED, UPDATED};
use sessions::Sessions;
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use tally::ListingsSeen;
use tools::command;

/// Reader threads; each runs the readers in turn.
const READER_THREADS: usize = 2;
/// One race: who packs, who writes, who reads.
#[derive(Debug, Clone)]
pub struct Race {
    pub format: Format,
    pub packer: Tool,
    pub writer: Tool,
    pub readers: Vec<Reader>,
}
/// Races `packer` against `writer` on a repository of `format`, with
/// every reader listing, for the budget the environment gives, and fails
/// the test on any violation or if no write was acknowledged.
pub fn race_and_check(format: Format, packer: Tool, writer: Tool) {
    let tmp = tempfile::tempdir().unwrap();
    let race = Race {
        format,
        packer,
        writer,
        readers: Reader::all_for(format),
    };
    let budget = Budget::from_env(10, 20);
    let tally = run(&race, &budget, tmp.path());
    eprintln!("{} (seed {})", tally.report(&race), budget.seed);
    assert!(tally.acknowledged > 0, "no write was acknowledged");
    assert_eq!(
        tally.violations(),
        0,
        "{}\n{}",
        tally.report(&race),
        tally.examples.join("\n")
    );
}

/// Runs the rounds of `race` within `budget`.
pub fn run(race: &Race, budget: &Budget, home: &Path) -> Tally {
    let tally = Mutex::new(Tally::default());
    let sessions = Arc::new(Sessions::new(home));
    let jgit_readers = race.readers.contains(&Reader::JGit);
    let jgit_roles = [race.packer, race.writer]
        .iter()
        .filter(|&&tool| tool == Tool::JGit)
        .count();
    // The outcome of each round is read by JGit too, on reftable.
    let outcome = usize::from(race.format == Format::Reftable);
    let needed = jgit_roles + outcome + if jgit_readers { READER_THREADS } else { 0 };
    if needed > 0 {
        sessions.warm_up(needed, race.format);
    }
    // Only the rounds' operations count.
    sessions.retried.store(0, Ordering::SeqCst);
    let rounds = budget.run(|_, rng| {
        let dir = tempfile::tempdir_in(home).unwrap();
        round(race, rng, home, dir.path(), &sessions, &tally);
    });
    let mut tally = tally.into_inner().unwrap();
    tally.rounds = rounds;
    tally.jgit_retried = sessions.retried.load(Ordering::SeqCst);
    tally
}

/// Packs (files) or compacts (reftable) the refs of `repo`; why not.
fn pack(
    tool: Tool,
    format: Format,
    home: &Path,
    repo: &Path,
    jgit: &Sessions,
) -> Result<(), String> {
    if tool == Tool::JGit {
        let compacted = jgit.with(|session| {
            let compacted = session.compact(repo);
            jgit.note_attempts(session);
            compacted
        });
        return match compacted {
            Ok(true) => Ok(()),
            Ok(false) => Err("JGit found tables.list.lock held or the stack changed \
                              during every attempt for a second"
                .to_owned()),
            Err(e) => Err(e),
        };
    }
    let args: &[&str] = match format {
        Format::Files => &["pack-refs", "--all"],
        Format::Reftable => &["pack-refs"],
    };
    let out = command(tool, home, repo, args);
    if out.status.success() {
        Ok(())
    } else {
        Err(format!("{} ({})", stderr(&out).trim(), out.status))
    }
}

/// What a writer answered.
enum Written {
    Acknowledged,
    /// Refused for a lock another process held: nothing written.
    LockHeld(String),
    /// Refused for another reason.
    Refused(String),
    /// The writer does not know whether it wrote.
    Unknown(String),
}

/// Applies the round's transaction to `repo` as `tool` does.
fn write(tool: Tool, home: &Path, repo: &Path, plan: &Plan, jgit: &Sessions) -> Written {
    if tool == Tool::JGit {
        let applied = jgit.with(|session| {
            let applied = session.apply(repo, &plan.transaction());
            jgit.note_attempts(session);
            applied
        });
        return match applied {
            jgit::BatchOutcome::Applied => Written::Acknowledged,
            jgit::BatchOutcome::LockFailed => Written::LockHeld(
                "JGit found tables.list.lock held or the stack changed \
                 during every attempt for a second"
                    .to_owned(),
            ),
            jgit::BatchOutcome::Rejected(why) => Written::Refused(why),
            jgit::BatchOutcome::Error(why) => Written::Unknown(why),
        };
    }
    let transaction = plan.transaction();
    let args = ["update-ref", "--stdin"];
    let out = run_isolated(tool.program(), home, repo, &args, transaction.as_bytes());
    let why = stderr(&out);
    match () {
        _ if out.status.success() => Written::Acknowledged,
        _ if is_lock_held(&why) => Written::LockHeld(why),
        _ => Written::Refused(why),
    }
}

fn round(
    race: &Race,
    rng: &mut Rng,
    home: &Path,
    root: &Path,
    jgit: &Arc<Sessions>,
    tally: &Mutex<Tally>,
) {
    let (repo, plan) = setup(race.format, home, root);
    let plan = Arc::new(plan);
    let stop = Arc::new(AtomicBool::new(false));
    // Readers list from before the race starts until after it ends.
    let readers: Vec<_> = (0..READER_THREADS)
        .map(|t| {
            let (race, home, repo) = (race.clone(), home.to_owned(), repo.clone());
            let (plan, stop, jgit) = (plan.clone(), stop.clone(), jgit.clone());
            let mut turn = t;
            std::thread::spawn(move || {
                let mut seen = ListingsSeen::default();
                loop {
                    let reader = race.readers[turn % race.readers.len()];
                    turn += 1;
                    seen.check(reader, reader.list(&home, &repo, &jgit), &plan);
                    if stop.load(Ordering::SeqCst) {
                        return seen;
                    }
                }
            })
        })
        .collect();
    // Random head starts, so that packing and writing overlap differently
    // in each race (a jitter of the race under test, not a wait).
    let (packer_delay, writer_delay) = (rng.delay(15), rng.delay(15));
    let packer = {
        let (tool, format, home, repo) = (race.packer, race.format, home.to_owned(), repo.clone());
        let jgit = jgit.clone();
        std::thread::spawn(move || {
            std::thread::sleep(packer_delay);
            pack(tool, format, &home, &repo, &jgit)
        })
    };
    std::thread::sleep(writer_delay);
    let written = write(race.writer, home, &repo, &plan, jgit);
    let packed = packer.join().unwrap();
    stop.store(true, Ordering::SeqCst);
    let seen: Vec<ListingsSeen> = readers.into_iter().map(|r| r.join().unwrap()).collect();

    let mut tally = tally.lock().unwrap();
    if let Err(message) = packed {
        tally.packer_failures += 1;
        if race.packer == Tool::Refstore && !message.contains("File exists") {
            tally.packer_errors += 1;
            tally.note(format!("refstore's packer failed: {}", message.trim()));
        }
        tally.first_packer_failure.get_or_insert(message);
    }
    let mut missing_round = false;
    for s in seen {
        tally.listings += s.listings;
        tally.listings_missing_refs += s.missing;
        tally.bad_values += s.bad_values;
        tally.reader_errors += s.errors;
        tally.git_broken_ref_failures += s.git_broken_refs;
        missing_round |= s.missing > 0;
        for example in s.examples {
            tally.note(example);
        }
    }
    if missing_round {
        tally.rounds_missing_refs += 1;
    }
    // The outcome, read by an independent reader: git on files, JGit on
    // reftable, where refstore must read the same.
    let reader = match race.format {
        Format::Files => Reader::ShowRef(Tool::Git),
        Format::Reftable => Reader::JGit,
    };
    let after = reader
        .list(home, &repo, jgit)
        .expect("the refs are readable");
    if race.format == Format::Reftable {
        let ours = Reader::ShowRef(Tool::Refstore).list(home, &repo, jgit);
        if ours.as_ref() != Ok(&after) {
            tally.bad_values += 1;
            tally.note(format!(
                "afterwards refstore reads {} refs ({:?}), JGit {}",
                ours.as_ref().map_or(0, BTreeMap::len),
                ours.as_ref().err(),
                after.len()
            ));
        }
    }
    for name in Plan::throughout().filter(|n| !n.contains("moved")) {
        if after.get(&name) != Some(&plan.old) {
            tally.bad_values += 1;
            tally.note(format!(
                "stable {name} is {:?} afterwards",
                after.get(&name)
            ));
        }
    }
    match written {
        Written::Acknowledged => tally.acknowledged += 1,
        Written::LockHeld(why) => {
            tally.refused += 1;
            tally.first_refusal.get_or_insert(why);
            return;
        }
        Written::Refused(why) => {
            tally.refused += 1;
            tally.false_refusals += 1;
            tally.note(format!(
                "{} refused the write: {}",
                race.writer.name(),
                why.trim()
            ));
            tally.first_refusal.get_or_insert(why);
            return;
        }
        Written::Unknown(why) => {
            tally.unknown_outcomes += 1;
            tally.first_unknown_outcome.get_or_insert(why);
            return;
        }
    }
    let undone: Vec<String> = (0..DELETED)
        .map(Plan::deleted)
        .filter(|n| after.contains_key(n))
        .collect();
    if !undone.is_empty() {
        tally.rounds_losing_deletions += 1;
        tally.lost_deletions += undone.len();
        tally.note(format!(
            "{} acknowledged deletions undone (packer {}, writer {}), e.g. {}",
            undone.len(),
            race.packer.name(),
            race.writer.name(),
            undone[0]
        ));
    }
    let names = (0..UPDATED)
        .map(Plan::updated)
        .chain((0..CREATED).map(Plan::created));
    for name in names {
        if after.get(&name) != Some(&plan.new) {
            tally.lost_updates += 1;
            tally.note(format!(
                "acknowledged {name} is {:?} afterwards",
                after.get(&name)
            ));
        }
    }
}

/// True if a writer was refused because another process held a lock
/// (git's message, which refstore shares, and that of git's reftable
/// backend): the only reason here, since nobody else changes the refs the
/// writer expects values of.
fn is_lock_held(error: &str) -> bool {
    (error.contains("Unable to create '") && error.contains(".lock'"))
        || error.contains("cannot lock references")
}
