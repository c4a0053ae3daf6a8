//! Running a server, git's or refstore's, on one request: the same
//! arguments, environment and standard input for both.

use crate::support::{isolate, run_with_input};
use std::path::{Path, PathBuf};
use std::process::Command;

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
    let out = run_with_input(&mut cmd, input);
    Answer {
        stdout: out.stdout,
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        success: out.status.success(),
    }
}
