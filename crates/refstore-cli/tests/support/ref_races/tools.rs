//! The programs that play the parts of a race: the packer and the writer
//! ([`Tool`]), the readers listing every ref ([`Reader`]), and the git of
//! 2.45 or later that races on reftable where one is named.

use super::sessions::Sessions;
use crate::support::{isolate, run_isolated, stderr, stdout};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::OnceLock;

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
    pub(super) fn program(self) -> &'static str {
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

    pub(super) fn name(self) -> String {
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
    pub(super) fn list(
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

pub(super) fn command(tool: Tool, home: &Path, cwd: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new(tool.program()), home)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

pub(super) fn ok(tool: Tool, home: &Path, cwd: &Path, args: &[&str], input: &str) -> String {
    let out = run_isolated(tool.program(), home, cwd, args, input.as_bytes());
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        tool.name(),
        stderr(&out)
    );
    stdout(&out).trim().to_owned()
}
