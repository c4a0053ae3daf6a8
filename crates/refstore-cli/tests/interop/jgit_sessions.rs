//! Long-lived JGit driver processes (`JGitClient session`), so that the
//! suite pays the JVM's start-up a few times rather than at every command:
//! a pool, from which each command takes an idle process (or starts one)
//! and gives it back after.

use super::clients::Ran;
use std::ffi::OsString;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Mutex;

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

/// The `java ... JGitClient` command line, and its idle sessions.
pub struct Sessions {
    command: Vec<OsString>,
    idle: Mutex<Vec<Session>>,
}

impl Sessions {
    pub fn new(command: Vec<OsString>) -> Sessions {
        Sessions {
            command,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn start(&self, home: &Path) -> Session {
        let mut cmd = Command::new(&self.command[0]);
        // Java takes the user's home from the password database, not HOME.
        cmd.arg(format!("-Duser.home={}", home.display()));
        let mut child = crate::support::isolate(&mut cmd, home)
            .args(&self.command[1..])
            .arg("session")
            .env("GIT_TERMINAL_PROMPT", "0")
            .current_dir(home)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("cannot run java: install a JDK (scripts/install-deps does)");
        Session {
            stdin: child.stdin.take().unwrap(),
            stdout: BufReader::new(child.stdout.take().unwrap()),
            child,
        }
    }

    /// Runs `args` with the INTEROP_* settings of `env` in a session.
    pub fn run(&self, home: &Path, env: &[(&'static str, OsString)], args: &[String]) -> Ran {
        let taken = self.idle.lock().unwrap().pop();
        let mut session = taken.unwrap_or_else(|| self.start(home));
        let mut words: Vec<String> = env
            .iter()
            .filter(|(k, _)| k.starts_with("INTEROP_"))
            .map(|(k, v)| format!("{k}={}", v.to_string_lossy()))
            .collect();
        words.extend(args.iter().cloned());
        writeln!(session.stdin, "{}", words.join("\t")).expect("JGit session ended");
        session.stdin.flush().unwrap();
        let code = header(&mut session.stdout, "exit");
        let out = block(&mut session.stdout, "out");
        let err = block(&mut session.stdout, "err");
        self.idle.lock().unwrap().push(session);
        Ran {
            code: code as i32,
            out,
            err,
        }
    }
}

/// Reads a line "<name> <number>".
fn header(stdout: &mut BufReader<ChildStdout>, name: &str) -> usize {
    let mut line = String::new();
    stdout.read_line(&mut line).expect("JGit session ended");
    line.trim()
        .strip_prefix(name)
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or_else(|| panic!("JGit session answered {line:?} for {name}"))
}

fn block(stdout: &mut BufReader<ChildStdout>, name: &str) -> String {
    let len = header(stdout, name);
    let mut bytes = vec![0; len];
    stdout.read_exact(&mut bytes).expect("JGit session ended");
    String::from_utf8_lossy(&bytes).into_owned()
}

impl Drop for Sessions {
    fn drop(&mut self) {
        for mut session in self.idle.lock().unwrap().drain(..) {
            let _ = session.child.kill();
            let _ = session.child.wait();
        }
    }
}
