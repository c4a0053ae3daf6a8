//! JGit's long-lived sessions, shared by the threads of a race.

use super::plan::setup;
use super::tools::Format;
use crate::support::jgit::{self, Session};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

/// Idle JGit sessions shared by the threads of a race: an operation takes
/// one (starting one if none is idle) and gives it back, so a race starts
/// as many JVMs as it runs JGit operations at once, and each only once.
pub struct Sessions {
    /// The HOME of the sessions, with JGit's user configuration.
    home: PathBuf,
    idle: Mutex<Vec<Session>>,
    /// Writes and compactions that took JGit more than one attempt.
    pub(super) retried: AtomicUsize,
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
    pub(super) fn new(home: &Path) -> Sessions {
        let home = home.join("jgit-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join(".gitconfig"), JGIT_CONFIG).unwrap();
        Sessions {
            home,
            idle: Mutex::new(Vec::new()),
            retried: AtomicUsize::new(0),
        }
    }

    pub(super) fn with<T>(&self, operation: impl FnOnce(&mut Session) -> T) -> T {
        let idle = self.idle.lock().unwrap().pop();
        let mut session = idle.unwrap_or_else(|| Session::start(&self.home));
        let result = operation(&mut session);
        self.idle.lock().unwrap().push(session);
        result
    }

    /// Counts a write or compaction that took `session` more than one
    /// attempt.
    pub(super) fn note_attempts(&self, session: &Session) {
        if session.attempts() > 1 {
            self.retried.fetch_add(1, Ordering::SeqCst);
        }
    }

    /// Starts `count` sessions at once and has each read, compact and
    /// write a repository of the race's shape, so that neither the JVM's
    /// start-up nor its loading of JGit's classes falls inside a round.
    pub(super) fn warm_up(&self, count: usize, format: Format) {
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
