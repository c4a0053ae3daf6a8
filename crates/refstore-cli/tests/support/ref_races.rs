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

use super::jgit::{self, Session};
use super::stress::{Budget, Rng};
use super::{isolate, run_isolated, stderr, stdout};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Names a git executable of 2.45 or later, which reads and writes
/// reftable, for the races of git and refstore on reftable.
pub const GIT_REFTABLE_VARIABLE: &str = "REFSTORE_TEST_GIT_REFTABLE";

/// The git that [`GIT_REFTABLE_VARIABLE`] names, if it is set; panics if
/// it names no git of 2.45 or later (asked for, it must run).
pub fn reftable_git() -> Option<&'static str> {
    static GIT: OnceLock<Option<String>> = OnceLock::new();
    GIT.get_or_init(|| {
        let path = std::env::var(GIT_REFTABLE_VARIABLE).ok()?;
        let out = Command::new(&path)
            .arg("--version")
            .output()
            .unwrap_or_else(|e| panic!("{GIT_REFTABLE_VARIABLE}={path}: cannot run it: {e}"));
        let version = stdout(&out);
        let numbers: Vec<u32> = version
            .trim()
            .trim_start_matches("git version ")
            .split('.')
            .take(2)
            .filter_map(|n| n.parse().ok())
            .collect();
        assert!(
            numbers.as_slice() >= [2, 45].as_slice(),
            "{GIT_REFTABLE_VARIABLE}={path} is {:?}, not a git of 2.45 or later",
            version.trim()
        );
        Some(path)
    })
    .as_deref()
}

/// Refs the writer deletes, updates and creates, and refs nobody
/// changes (half packed before the round, half loose).
const DELETED: usize = 100;
const UPDATED: usize = 100;
const CREATED: usize = 50;
const STABLE: usize = 20;

/// Reader threads; each runs the readers in turn.
const READER_THREADS: usize = 2;

/// Which program plays a part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tool {
    Refstore,
    /// The machine's git.
    Git,
    /// The git [`GIT_REFTABLE_VARIABLE`] names.
    GitReftable,
    /// JGit, through a [`Session`].
    JGit,
}

impl Tool {
    /// The program of a tool run as a command (JGit runs in a session).
    fn program(self) -> &'static str {
        match self {
            Tool::Refstore => env!("CARGO_BIN_EXE_refstore"),
            Tool::Git => "git",
            Tool::GitReftable => {
                reftable_git().unwrap_or_else(|| panic!("{GIT_REFTABLE_VARIABLE} names no git"))
            }
            Tool::JGit => unreachable!("JGit runs in a session, not as a command"),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Tool::Refstore => "refstore",
            Tool::Git => "git",
            Tool::GitReftable => "git-2.45+",
            Tool::JGit => "jgit",
        }
    }
}

/// The ref storage format of the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Files,
    Reftable,
}

/// One way of listing every ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    ShowRef(Tool),
    ForEachRef(Tool),
    /// `git ls-remote` served by `refstore upload-pack`, protocol v0 or v2.
    LsRemote {
        v0: bool,
    },
    /// JGit's `RefDatabase.getRefsByPrefix("refs/")`.
    JGit,
}

impl Reader {
    /// Every reader that can read `format` (git 2.39 reads no reftable;
    /// a git of 2.45 or later does, where one is named).
    pub fn all_for(format: Format) -> Vec<Reader> {
        let mut readers = vec![
            Reader::ShowRef(Tool::Refstore),
            Reader::ForEachRef(Tool::Refstore),
            Reader::LsRemote { v0: false },
            Reader::LsRemote { v0: true },
        ];
        match format {
            Format::Files => {
                readers.extend([Reader::ShowRef(Tool::Git), Reader::ForEachRef(Tool::Git)]);
            }
            Format::Reftable => {
                readers.push(Reader::JGit);
                if reftable_git().is_some() {
                    readers.extend([
                        Reader::ShowRef(Tool::GitReftable),
                        Reader::ForEachRef(Tool::GitReftable),
                    ]);
                }
            }
        }
        readers
    }

    fn name(self) -> String {
        match self {
            Reader::ShowRef(tool) => format!("{} show-ref", tool.name()),
            Reader::ForEachRef(tool) => format!("{} for-each-ref", tool.name()),
            Reader::LsRemote { v0 } => {
                format!("ls-remote v{} via upload-pack", if v0 { 0 } else { 2 })
            }
            Reader::JGit => "jgit getRefsByPrefix".to_owned(),
        }
    }

    /// The refs below `refs/` it lists: name to id.
    fn list(
        self,
        home: &Path,
        repo: &Path,
        jgit: &Sessions,
    ) -> Result<BTreeMap<String, String>, String> {
        let out = match self {
            Reader::JGit => {
                return jgit
                    .with(|session| session.list(repo))
                    .map_err(|e| format!("{} failed: {e}", self.name()));
            }
            Reader::ShowRef(tool) => command(tool, home, repo, &["show-ref"]),
            Reader::ForEachRef(tool) => command(
                tool,
                home,
                repo,
                &["for-each-ref", "--format=%(objectname) %(refname)"],
            ),
            Reader::LsRemote { v0 } => {
                let upload_pack = format!("{} upload-pack", env!("CARGO_BIN_EXE_refstore"));
                let version = format!("protocol.version={}", if v0 { 0 } else { 2 });
                let url = format!("file://{}", repo.display());
                let args = [
                    "-c",
                    &version,
                    "ls-remote",
                    "--upload-pack",
                    &upload_pack,
                    &url,
                ];
                command(Tool::Git, home, home, &args)
            }
        };
        if !out.status.success() {
            return Err(format!("{} failed: {}", self.name(), stderr(&out)));
        }
        Ok(stdout(&out)
            .lines()
            .filter_map(|line| {
                let mut words = line.split_whitespace();
                let (id, name) = (words.next()?, words.next()?);
                name.starts_with("refs/")
                    .then(|| (name.to_owned(), id.to_owned()))
            })
            .collect())
    }
}

fn command(tool: Tool, home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new(tool.program()), home)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn ok(tool: Tool, home: &Path, cwd: &Path, args: &[&str], input: &str) -> String {
    let out = run_isolated(tool.program(), home, cwd, args, input.as_bytes());
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        tool.name(),
        stderr(&out)
    );
    stdout(&out).trim().to_owned()
}

/// One race: who packs, who writes, who reads.
#[derive(Debug, Clone)]
pub struct Race {
    pub format: Format,
    pub packer: Tool,
    pub writer: Tool,
    pub readers: Vec<Reader>,
}

/// What the rounds of a race saw.
#[derive(Debug, Default)]
pub struct Tally {
    pub rounds: usize,
    pub acknowledged: usize,
    pub refused: usize,
    /// Writes refused for a reason other than a lock another process
    /// held: the writer misread a ref only it changes.
    pub false_refusals: usize,
    pub packer_failures: usize,
    /// refstore's packings that failed for another reason than a lock held
    /// by the writer (judged: a racing write is no reason to fail).
    pub packer_errors: usize,
    pub listings: usize,
    /// Rounds in which an acknowledged deletion was undone.
    pub rounds_losing_deletions: usize,
    pub lost_deletions: usize,
    /// Acknowledged updates and creations not found afterwards.
    pub lost_updates: usize,
    /// Rounds in which some listing missed a ref that existed throughout.
    pub rounds_missing_refs: usize,
    pub listings_missing_refs: usize,
    /// Listed or final values nobody wrote.
    pub bad_values: usize,
    pub reader_errors: usize,
    /// git 2.39's listings that stopped at a ref deleted while they ran
    /// (it reads such a ref as broken and fails): git's own behaviour,
    /// counted, not judged.
    pub git_broken_ref_failures: usize,
    /// Writes whose writer did not know whether it wrote (JGit's I/O
    /// errors): neither acknowledged nor judged, and shown.
    pub unknown_outcomes: usize,
    /// JGit's writes and compactions that found the lock held or the stack
    /// changed and tried again: how often JGit met the other process.
    pub jgit_retried: usize,
    /// The first few violations, described.
    pub examples: Vec<String>,
    /// Why the first refused write and the first failed packing failed.
    pub first_refusal: Option<String>,
    pub first_packer_failure: Option<String>,
    /// Why the first write of unknown outcome failed.
    pub first_unknown_outcome: Option<String>,
}

impl Tally {
    pub fn violations(&self) -> usize {
        self.lost_deletions
            + self.false_refusals
            + self.lost_updates
            + self.listings_missing_refs
            + self.bad_values
            + self.reader_errors
            + self.packer_errors
    }

    fn note(&mut self, example: String) {
        if self.examples.len() < 8 {
            self.examples.push(example);
        }
    }

    pub fn report(&self, race: &Race) -> String {
        format!(
            "{:?} packer={} writer={}: {} rounds ({} writes acknowledged, {} refused of which \
             {} not for a lock, {} packer failures), {} listings; acknowledged deletions undone: {} in {} rounds; \
             acknowledged updates lost: {}; listings missing a ref: {} in {} rounds; \
             impossible values: {}; reader failures: {} (and {} of git's listings stopped \
             at a ref deleted meanwhile); writes of unknown outcome: {}; JGit operations \
             retried: {}{}{}{}",
            race.format,
            race.packer.name(),
            race.writer.name(),
            self.rounds,
            self.acknowledged,
            self.refused,
            self.false_refusals,
            self.packer_failures,
            self.listings,
            self.lost_deletions,
            self.rounds_losing_deletions,
            self.lost_updates,
            self.listings_missing_refs,
            self.rounds_missing_refs,
            self.bad_values,
            self.reader_errors,
            self.git_broken_ref_failures,
            self.unknown_outcomes,
            self.jgit_retried,
            self.first_refusal
                .as_ref()
                .map_or(String::new(), |e| format!("; first refusal: {}", e.trim())),
            self.first_packer_failure
                .as_ref()
                .map_or(String::new(), |e| format!("; first packer failure: {}", e.trim())),
            self.first_unknown_outcome
                .as_ref()
                .map_or(String::new(), |e| format!("; first unknown outcome: {}", e.trim())),
        )
    }
}

/// The refs of a round and the two values they take.
struct Plan {
    old: String,
    new: String,
}

impl Plan {
    fn stable(i: usize) -> String {
        format!(
            "refs/heads/stable/{}{i}",
            if i % 2 == 0 { "p" } else { "l" }
        )
    }
    fn deleted(i: usize) -> String {
        format!("refs/heads/gone/{i}")
    }
    fn updated(i: usize) -> String {
        format!("refs/heads/moved/{i}")
    }
    fn created(i: usize) -> String {
        format!("refs/heads/new/{i}")
    }

    /// The writer's transaction.
    fn transaction(&self) -> String {
        let mut input = String::new();
        for i in 0..DELETED {
            input.push_str(&format!("delete {} {}\n", Plan::deleted(i), self.old));
        }
        for i in 0..UPDATED {
            let name = Plan::updated(i);
            input.push_str(&format!("update {name} {} {}\n", self.new, self.old));
        }
        for i in 0..CREATED {
            input.push_str(&format!("create {} {}\n", Plan::created(i), self.new));
        }
        input
    }

    /// True if `name` may have `id` at some time of the round.
    fn value_ok(&self, name: &str, id: &str) -> bool {
        if name.starts_with("refs/heads/new/") {
            id == self.new
        } else if name.starts_with("refs/heads/moved/") {
            id == self.old || id == self.new
        } else {
            id == self.old
        }
    }

    /// Refs that exist from before the round to after it.
    fn throughout() -> impl Iterator<Item = String> {
        (0..STABLE)
            .map(Plan::stable)
            .chain((0..UPDATED).map(Plan::updated))
    }
}

/// Makes the repository of a round: two commits, the stable refs (half
/// packed), and the refs the writer changes, loose or in tables of their
/// own.
fn setup(format: Format, home: &Path, root: &Path) -> (PathBuf, Plan) {
    let repo = root.join("r.git");
    let mut init = vec!["init", "-q", "--bare"];
    if format == Format::Reftable {
        init.push("--ref-format=reftable");
    }
    init.push("r.git");
    ok(Tool::Refstore, home, root, &init, "");
    let tree = ok(
        Tool::Refstore,
        home,
        &repo,
        &["hash-object", "-t", "tree", "-w", "--stdin"],
        "",
    );
    let commit = |n: u32| {
        let body = format!(
            "tree {tree}\nauthor A <a@example.com> {n} +0000\n\
             committer C <c@example.com> {n} +0000\n\nvalue {n}\n"
        );
        ok(
            Tool::Refstore,
            home,
            &repo,
            &["hash-object", "-t", "commit", "-w", "--stdin"],
            &body,
        )
    };
    let plan = Plan {
        old: commit(1),
        new: commit(2),
    };
    let create = |names: &mut dyn Iterator<Item = String>| {
        let input: String = names
            .map(|n| format!("create {n} {}\n", plan.old))
            .collect();
        ok(
            Tool::Refstore,
            home,
            &repo,
            &["update-ref", "--stdin"],
            &input,
        );
    };
    create(&mut (0..STABLE).step_by(2).map(Plan::stable));
    ok(Tool::Refstore, home, &repo, &["pack-refs", "--all"], "");
    create(&mut (1..STABLE).step_by(2).map(Plan::stable));
    // In a few transactions: on reftable, so many tables to compact.
    let changed: Vec<String> = (0..DELETED)
        .map(Plan::deleted)
        .chain((0..UPDATED).map(Plan::updated))
        .collect();
    for chunk in changed.chunks(40) {
        create(&mut chunk.iter().cloned());
    }
    (repo, plan)
}

/// Idle JGit sessions shared by the threads of a race: an operation takes
/// one (starting one if none is idle) and gives it back, so a race starts
/// as many JVMs as it runs JGit operations at once, and each only once.
pub struct Sessions {
    /// The HOME of the sessions, with JGit's user configuration.
    home: PathBuf,
    idle: Mutex<Vec<Session>>,
    /// Writes and compactions that took JGit more than one attempt.
    retried: AtomicUsize,
}

/// JGit's user configuration in the races. JGit (7.8) reads `tables.list`
/// and only then records its stat as the state it read; by default it then
/// trusts that stat to tell whether the list is still what it read. A list
/// another process replaced between the read and the stat is thus taken
/// for the old one, and a compaction that re-checks the list under
/// `tables.list.lock` that way writes a list without the table the other
/// process added: an acknowledged transaction of refstore's undone, the
/// table left unlisted (seen here about once in 200 rounds of JGit
/// compacting while refstore writes). Comparing the names instead
/// (`never`) is exact under the lock.
const JGIT_CONFIG: &str = "[core]\n\ttrustTablesListStat = never\n";

impl Sessions {
    fn new(home: &Path) -> Sessions {
        let home = home.join("jgit-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".gitconfig"), JGIT_CONFIG).unwrap();
        Sessions {
            home,
            idle: Mutex::new(Vec::new()),
            retried: AtomicUsize::new(0),
        }
    }

    fn with<T>(&self, operation: impl FnOnce(&mut Session) -> T) -> T {
        let idle = self.idle.lock().unwrap().pop();
        let mut session = idle.unwrap_or_else(|| Session::start(&self.home));
        let result = operation(&mut session);
        self.idle.lock().unwrap().push(session);
        result
    }

    /// Counts a write or compaction that took `session` more than one
    /// attempt.
    fn note_attempts(&self, session: &Session) {
        if session.attempts() > 1 {
            self.retried.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Starts `count` sessions at once and has each read, compact and
    /// write a repository of the race's shape, so that neither the JVM's
    /// start-up nor its loading of JGit's classes falls inside a round.
    fn warm_up(&self, count: usize, format: Format) {
        let scratch = tempfile::tempdir_in(&self.home).unwrap();
        let (repo, plan) = setup(format, &self.home, scratch.path());
        let sessions: Vec<Session> = std::thread::scope(|scope| {
            let started: Vec<_> = (0..count)
                .map(|_| scope.spawn(|| Session::start(&self.home)))
                .collect();
            started.into_iter().map(|s| s.join().unwrap()).collect()
        });
        for mut session in sessions {
            session
                .list(&repo)
                .expect("JGit lists the scratch repository");
            session.compact(&repo).expect("JGit compacts it");
            self.idle.lock().unwrap().push(session);
        }
        let written = self.with(|session| session.apply(&repo, &plan.transaction()));
        assert_eq!(written, jgit::BatchOutcome::Applied, "JGit writes it");
    }
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

/// True if git failed a listing on a ref the writer deletes, which it
/// found gone after listing its directory (git 2.39 then reads it as a
/// broken ref of the null id, and `show-ref` stops).
fn is_deleted_ref_broken(error: &str) -> bool {
    error.contains("bad ref refs/heads/gone/")
}

/// What one reader thread saw.
#[derive(Default)]
struct ListingsSeen {
    listings: usize,
    missing: usize,
    bad_values: usize,
    errors: usize,
    git_broken_refs: usize,
    examples: Vec<String>,
}

impl ListingsSeen {
    fn check(
        &mut self,
        reader: Reader,
        listing: Result<BTreeMap<String, String>, String>,
        plan: &Plan,
    ) {
        self.listings += 1;
        let listing = match listing {
            Ok(listing) => listing,
            Err(e) if reader == Reader::ShowRef(Tool::Git) && is_deleted_ref_broken(&e) => {
                self.git_broken_refs += 1;
                return;
            }
            Err(e) => {
                self.errors += 1;
                self.example(e);
                return;
            }
        };
        let missing: Vec<String> = Plan::throughout()
            .filter(|n| !listing.contains_key(n))
            .collect();
        if !missing.is_empty() {
            self.missing += 1;
            self.example(format!(
                "{} listed {} refs, missing {} that existed throughout, e.g. {}",
                reader.name(),
                listing.len(),
                missing.len(),
                missing[0]
            ));
        }
        for (name, id) in &listing {
            if !plan.value_ok(name, id) {
                self.bad_values += 1;
                self.example(format!("{} listed {name} at {id}", reader.name()));
            }
        }
    }

    fn example(&mut self, text: String) {
        if self.examples.len() < 4 {
            self.examples.push(text);
        }
    }
}
