//! Running a server, git's or refstore's, on one request: the same
//! arguments, environment and standard input for both. git's is its
//! executable; refstore's is the protocol crate's upload-pack or
//! receive-pack called in this process, the repository opened as the
//! `refstore` commands open it.

use crate::stdio;
use refstore_protocol::ProtocolVersion;
use refstore_testsupport::{isolate, run_with_input};
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
    match server {
        Server::Git(git) => run_git(git, home, how, repo, input),
        Server::Refstore => run_refstore(how, repo, input),
    }
}

fn run_git(git: &Path, home: &Path, how: Invocation, repo: &Path, input: &[u8]) -> Answer {
    let mut cmd = Command::new(git);
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

fn run_refstore(how: Invocation, repo: &Path, input: &[u8]) -> Answer {
    let git_protocol = format!("version={}", how.version);
    let served = stdio::How {
        stateless_rpc: how.stateless_rpc,
        advertise_refs: how.advertise_refs,
        version: ProtocolVersion::from_git_protocol(Some(&git_protocol)),
    };
    let mut stdout = Vec::new();
    let result = match how.service {
        "upload-pack" => stdio::upload_pack(repo, served, &mut &input[..], &mut stdout),
        "receive-pack" => stdio::receive_pack(repo, served, &mut &input[..], &mut stdout),
        other => panic!("no service {other}"),
    };
    Answer {
        stdout,
        stderr: result
            .as_ref()
            .err()
            .map(|e| format!("fatal: {e}"))
            .unwrap_or_default(),
        success: result.is_ok(),
    }
}
