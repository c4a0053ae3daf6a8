//! Running a server, git's or refstore's, on one request: the same
//! arguments, environment and standard input for both.

use crate::support::isolate;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Which implementation answers.
#[derive(Debug, Clone)]
pub enum Server {
    /// A git executable.
    Git(PathBuf),
    Refstore,
}

/// How one request is served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Invocation {
    /// `upload-pack` or `receive-pack`.
    pub service: &'static str,
    pub stateless_rpc: bool,
    pub advertise_refs: bool,
    /// `GIT_PROTOCOL=version=<n>`, or none for version 0.
    pub version: u8,
}

/// What a server wrote and whether it succeeded.
pub struct Answer {
    pub stdout: Vec<u8>,
    pub stderr: String,
    pub success: bool,
}

pub fn run(server: &Server, home: &Path, how: Invocation, repo: &Path, input: &[u8]) -> Answer {
    let mut cmd = match server {
        Server::Git(git) => Command::new(git),
        Server::Refstore => Command::new(env!("CARGO_BIN_EXE_refstore")),
    };
    isolate(&mut cmd, home).arg(how.service);
    if how.stateless_rpc {
        cmd.arg("--stateless-rpc");
    }
    if how.advertise_refs {
        cmd.arg("--advertise-refs");
    }
    cmd.arg(repo).current_dir(home).env_remove("GIT_PROTOCOL");
    if how.version > 0 {
        cmd.env("GIT_PROTOCOL", format!("version={}", how.version));
    }
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Written from a thread: a server may answer before it has read all of
    // the request, and may stop reading early.
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    Answer {
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        success: out.status.success(),
    }
}
