//! Drives the JGit interop program (`interop/jgit`), an implementation of
//! both ref formats independent of refstore and of the machine's git.
//!
//! The program is built with Maven the first time a test process needs it
//! (JGit and its dependencies come from Maven Central); later calls reuse
//! the build.

use crate::process::run_with_input;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

fn project_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../interop/jgit")
}

/// Builds the interop program once per test process and returns its classpath.
pub fn classpath() -> &'static str {
    static CLASSPATH: OnceLock<String> = OnceLock::new();
    CLASSPATH.get_or_init(|| {
        let dir = project_dir();
        let out = Command::new("mvn")
            .args(["-q", "-B", "-Dstyle.color=never", "package"])
            .current_dir(&dir)
            .output()
            .expect("cannot run mvn: install Maven and a JDK (scripts/install-deps does)");
        assert!(
            out.status.success(),
            "building interop/jgit with Maven failed:\n{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let target = dir.join("target");
        format!(
            "{}:{}/*",
            target.join("jgit-refs-1.0.jar").display(),
            target.join("lib").display()
        )
    })
}

/// A `java` command that runs `class` of the interop program (the class
/// name without its package).
pub fn java(class: &str) -> Command {
    let mut cmd = Command::new("java");
    cmd.arg("-cp")
        .arg(classpath())
        .arg(format!("refstore.interop.{class}"));
    cmd
}

/// Runs `JGitRefs <args>` with `stdin`, returning stdout; panics with JGit's
/// stderr if it fails.
pub fn run(args: &[&str], stdin: &str) -> String {
    let out = run_with_input(java("JGitRefs").args(args), stdin.as_bytes());
    assert!(
        out.status.success(),
        "JGitRefs {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("JGitRefs prints UTF-8")
}

/// JGit's view of every ref and reflog entry of the repository at `git_dir`
/// (see the format in `JGitRefs.java`).
pub fn dump(git_dir: &Path) -> String {
    run(&["dump", git_dir.to_str().unwrap()], "")
}

/// A long-lived `JGitSession` process (see `JGitSession.java`): requests on
/// its stdin, answers on its stdout, so that a test doing many operations
/// through JGit pays the JVM's start-up once. Dropping it ends the process.
pub struct Session {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: std::io::BufReader<std::process::ChildStdout>,
    attempts: u32,
}

/// What JGit answered to a batch of ref updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BatchOutcome {
    /// Every ref updated.
    Applied,
    /// Every attempt failed to take `tables.list.lock` or found the stack
    /// changed under it: nothing was written. (For a batch of one ref JGit
    /// answers a mismatched old value the same way.)
    LockFailed,
    /// Refused for another reason: the first refused ref, its result and
    /// message.
    Rejected(String),
    /// JGit failed (an exception, or an I/O error JGit reports as a failed
    /// batch whatever it wrote); the outcome is unknown.
    Error(String),
}

impl Session {
    /// Starts a session (building the interop program first if need be),
    /// with `home` as HOME and no system configuration, as the tests run
    /// git.
    pub fn start(home: &Path) -> Session {
        let mut cmd = Command::new("java");
        // Java takes the user's home from the password database, not HOME.
        cmd.arg(format!("-Duser.home={}", home.display()))
            .args(["-XX:+UseSerialGC", "-Xmx512m", "-cp"])
            .arg(classpath())
            .arg("refstore.interop.JGitSession")
            .env("HOME", home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        let mut child = cmd
            .spawn()
            .expect("cannot run java: install a JDK (scripts/install-deps does)");
        let stdin = child.stdin.take();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        Session {
            child,
            stdin,
            stdout,
            attempts: 0,
        }
    }

    /// Sends `request` (whole lines) and returns the lines of the answer,
    /// without the dot that ends it.
    pub fn request(&mut self, request: &str) -> Vec<String> {
        use std::io::{BufRead, Write};
        let stdin = self.stdin.as_mut().unwrap();
        stdin.write_all(request.as_bytes()).unwrap();
        stdin.flush().unwrap();
        let mut lines = Vec::new();
        loop {
            let mut line = String::new();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "JGitSession ended mid-answer to {request:?}");
            let line = line.trim_end_matches('\n');
            if line == "." {
                return lines;
            }
            lines.push(line.to_owned());
        }
    }

    /// Applies `transaction` (git `update-ref --stdin` lines: create,
    /// update, delete, each with the value expected before) to the
    /// repository at `git_dir` as one atomic batch, retrying while JGit
    /// reports only lock contention (for up to a second).
    pub fn apply(&mut self, git_dir: &Path, transaction: &str) -> BatchOutcome {
        let mut request = format!("apply {}\n{transaction}", git_dir.display());
        if !request.ends_with('\n') {
            request.push('\n');
        }
        request.push_str("end\n");
        let answer = self.request(&request);
        let last = answer.last().map_or("", String::as_str);
        self.note_attempts(last);
        let mut words = last.splitn(3, ' ');
        match (words.next(), words.next(), words.next()) {
            (Some("applied"), _, _) => BatchOutcome::Applied,
            (Some("lock-failed"), _, _) => BatchOutcome::LockFailed,
            (Some("rejected"), _, Some(why)) => BatchOutcome::Rejected(why.to_owned()),
            _ => BatchOutcome::Error(last.strip_prefix("error ").unwrap_or(last).to_owned()),
        }
    }

    /// Compacts the reftable stack at `git_dir` into one table, retrying
    /// while the lock is held or the stack changes (for up to a second):
    /// whether it compacted, or JGit's error.
    pub fn compact(&mut self, git_dir: &Path) -> Result<bool, String> {
        let answer = self.request(&format!("compact {}\n", git_dir.display()));
        self.note_attempts(answer.last().map_or("", String::as_str));
        match answer.last().map(|l| l.split(' ').next().unwrap_or("")) {
            Some("compacted") => Ok(true),
            Some("not-compacted") => Ok(false),
            _ => Err(answer.join("\n")),
        }
    }

    /// How many attempts the last [`apply`](Self::apply) or
    /// [`compact`](Self::compact) made (more than one: JGit found the lock
    /// held or the stack changed, and tried again); 0 after an error.
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    fn note_attempts(&mut self, verdict: &str) {
        self.attempts = verdict
            .split(' ')
            .nth(1)
            .and_then(|n| n.parse().ok())
            .unwrap_or(0);
    }

    /// Every ref below `refs/` of the repository at `git_dir` as JGit reads
    /// it: name to id.
    pub fn list(
        &mut self,
        git_dir: &Path,
    ) -> Result<std::collections::BTreeMap<String, String>, String> {
        let answer = self.request(&format!("list {}\n", git_dir.display()));
        answer
            .iter()
            .map(|line| match line.split(' ').collect::<Vec<_>>()[..] {
                ["ref", id, name] => Ok((name.to_owned(), id.to_owned())),
                _ => Err(answer.join("\n")),
            })
            .collect()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        // The end of its input ends the session.
        drop(self.stdin.take());
        if self.child.wait().is_err() {
            let _ = self.child.kill();
        }
    }
}
