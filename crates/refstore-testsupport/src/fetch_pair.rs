//! Differential fetching: a source repository with dated commits, cloned
//! and fetched from by the real git client through refstore's upload-pack
//! and through git's own, and the two clients' states compared. How
//! refstore's upload-pack is reached is the caller's: the `refstore`
//! executable, or a [`crate::relay::Relay`] to the test process.

use crate::fixtures::Sandbox;
use crate::git::{git, git_ok, Git};
use crate::process::stderr;
use std::path::{Path, PathBuf};
use std::process::Output;

/// The committer time of the `n`th commit of a source.
pub fn time_of(n: u32) -> i64 {
    1_600_000_000 + i64::from(n) * 86_400
}

/// What a clone holds, compared between the two servers' clients.
#[derive(Debug, PartialEq, Eq)]
pub struct State {
    pub commits: Vec<String>,
    pub objects: Vec<String>,
    pub shallow: Vec<String>,
    /// `<oid> <name>` of every ref.
    pub refs: Vec<String>,
}

/// A home and the repositories beside it (through `Deref`), and a source.
pub struct Fixture {
    sandbox: Sandbox,
    /// A non-bare repository, `main` checked out.
    pub source: PathBuf,
    commits: std::cell::Cell<u32>,
    /// The command git runs as refstore's upload-pack.
    upload_pack: String,
}

impl std::ops::Deref for Fixture {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl Fixture {
    /// A source repository with no commit yet, served by refstore through
    /// `upload_pack`, the command git runs (`--upload-pack=<command>`).
    pub fn empty(upload_pack: &str) -> Fixture {
        let sandbox = Sandbox::new();
        Fixture {
            source: sandbox.init("source").path,
            sandbox,
            commits: std::cell::Cell::new(0),
            upload_pack: upload_pack.to_owned(),
        }
    }

    pub fn git(&self, cwd: &Path, args: &[&str]) -> String {
        git_ok(&self.home, cwd, args)
    }

    /// Runs git with the committer and author dates of the next commit,
    /// moved `back` days into the past (before its parents' when `back` is
    /// large enough: clocks are skewed).
    fn git_dated(&self, args: &[&str], back: u32) {
        let n = self.commits.get() + 1;
        self.commits.set(n);
        let date = format!("@{} +0000", time_of(n) - i64::from(back) * 86_400);
        Git::new(&self.home, &self.source).dated(&date).ok(args);
    }

    /// How many commits the source has been given.
    pub fn commit_count(&self) -> u32 {
        self.commits.get()
    }

    pub fn commit(&self, name: &str) {
        self.commit_skewed(name, 0);
    }

    /// A commit on the checked-out branch, dated `back` days early.
    pub fn commit_skewed(&self, name: &str, back: u32) {
        // A shared file that every commit changes, and one of its own.
        let shared = self.source.join("shared.txt");
        let mut text = std::fs::read_to_string(&shared).unwrap_or_default();
        text.push_str(&format!("{name}\n"));
        std::fs::write(&shared, text).unwrap();
        std::fs::create_dir_all(self.source.join("dir")).unwrap();
        std::fs::write(self.source.join("dir").join(name), name.repeat(100)).unwrap();
        self.git(&self.source, &["add", "-A"]);
        self.git_dated(&["commit", "-q", "-m", name], back);
    }

    /// A commit on the checked-out branch that brings back objects of
    /// older commits at other paths and other times: the whole of `dir/`
    /// again as `copy/` (its tree and blobs, met before under `dir/`), and
    /// `shared.txt` as the first commit wrote it (so later commits write
    /// its older versions again). A client that is given less than it
    /// lacks shows it in `git fsck`.
    pub fn commit_reusing(&self, name: &str, back: u32) {
        let copy = self.source.join("copy");
        if copy.exists() {
            self.git(&self.source, &["rm", "-rq", "copy"]);
        }
        let dir = self.source.join("dir");
        if dir.exists() {
            std::fs::create_dir_all(&copy).unwrap();
            for entry in std::fs::read_dir(&dir).unwrap() {
                let entry = entry.unwrap();
                std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
            }
        }
        std::fs::write(self.source.join("shared.txt"), "c0\n").unwrap();
        self.git(&self.source, &["add", "-A"]);
        let message = format!("{name} reusing");
        self.git_dated(&["commit", "-q", "--allow-empty", "-m", &message], back);
    }

    /// Merges `branch` into the checked-out branch with a merge commit.
    pub fn merge(&self, branch: &str) {
        let out = git(
            &self.home,
            &self.source,
            &["merge", "-q", "--no-ff", "--no-commit", branch],
        );
        // shared.txt conflicts: keep both sides' lines.
        if !out.status.success() {
            let text = std::fs::read_to_string(self.source.join("shared.txt")).unwrap();
            let text: String = text
                .lines()
                .filter(|l| {
                    !l.starts_with("<<<<<<<")
                        && !l.starts_with("=======")
                        && !l.starts_with(">>>>>>>")
                })
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(self.source.join("shared.txt"), text).unwrap();
            self.git(&self.source, &["add", "-A"]);
        }
        self.git_dated(&["commit", "-q", "-m", &format!("merge {branch}")], 0);
    }

    pub fn url(&self) -> String {
        format!("file://{}", self.source.display())
    }

    /// Runs a git command that talks to the source through refstore's
    /// upload-pack or git's own, in protocol `version`.
    pub fn remote(&self, cwd: &Path, version: &str, refstore: bool, args: &[&str]) -> Output {
        let mut full = vec!["-c".to_owned(), format!("protocol.version={version}")];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        if refstore {
            args.insert(1, format!("--upload-pack={}", self.upload_pack));
        }
        full.extend(args.iter().cloned());
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        git(&self.home, cwd, &full)
    }

    /// [`Fixture::remote`], failing the test if the command fails.
    pub fn remote_ok(&self, cwd: &Path, version: &str, refstore: bool, args: &[&str]) {
        let out = self.remote(cwd, version, refstore, args);
        assert!(
            out.status.success(),
            "git {args:?} (refstore: {refstore}, v{version}): {}",
            stderr(&out)
        );
    }

    /// The directories `<name>-ours-v<version>` and `<name>-theirs-v<version>`.
    pub fn clone_dirs(&self, name: &str, version: &str) -> (PathBuf, PathBuf) {
        (
            self.root.join(format!("{name}-ours-v{version}")),
            self.root.join(format!("{name}-theirs-v{version}")),
        )
    }

    /// Clones with `options` through refstore and through git into
    /// [`Fixture::clone_dirs`]; the outcome of each.
    pub fn try_clone_both(&self, name: &str, version: &str, options: &[&str]) -> (Output, Output) {
        let (ours, theirs) = self.clone_dirs(name, version);
        let url = self.url();
        let clone = |dir: &Path, refstore: bool| {
            let mut args = vec!["clone", "-q"];
            args.extend_from_slice(options);
            args.push(&url);
            args.push(dir.to_str().unwrap());
            self.remote(&self.root, version, refstore, &args)
        };
        (clone(&ours, true), clone(&theirs, false))
    }

    /// Clones with `options` through refstore and through git, into
    /// [`Fixture::clone_dirs`].
    pub fn clone_both(&self, name: &str, version: &str, options: &[&str]) -> (PathBuf, PathBuf) {
        let (ours, theirs) = self.try_clone_both(name, version, options);
        for (out, refstore) in [(ours, true), (theirs, false)] {
            assert!(
                out.status.success(),
                "clone {options:?} (refstore: {refstore}, v{version}): {}",
                stderr(&out)
            );
        }
        self.clone_dirs(name, version)
    }

    /// Runs `args` in both clones, each against its server.
    pub fn both(&self, ours: &Path, theirs: &Path, version: &str, args: &[&str]) {
        self.remote_ok(ours, version, true, args);
        self.remote_ok(theirs, version, false, args);
    }

    /// The commits, objects, shallow boundary and refs of a clone.
    pub fn state(&self, repo: &Path) -> State {
        let sorted = |text: String| {
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        let shallow = std::fs::read_to_string(repo.join(".git/shallow")).unwrap_or_default();
        State {
            commits: sorted(self.git(repo, &["rev-list", "--all"])),
            objects: sorted(self.git(repo, &["rev-list", "--all", "--objects"])),
            shallow: sorted(shallow),
            refs: sorted(self.git(repo, &["for-each-ref", "--format=%(objectname) %(refname)"])),
        }
    }

    /// Requires the same state in both clones, a complete `ours` and a
    /// shallow boundary of `shallow` commits.
    pub fn assert_same(&self, ours: &Path, theirs: &Path, what: &str, shallow: Option<usize>) {
        let state = self.state(ours);
        assert_eq!(state, self.state(theirs), "{what}");
        if let Some(n) = shallow {
            assert_eq!(state.shallow.len(), n, "{what}: {:?}", state.shallow);
        }
        let out = git(&self.home, ours, &["fsck", "--strict", "--no-dangling"]);
        assert!(out.status.success(), "{what}: fsck: {}", stderr(&out));
        assert!(
            stderr(&out).trim().is_empty(),
            "{what}: fsck: {}",
            stderr(&out)
        );
    }
}
