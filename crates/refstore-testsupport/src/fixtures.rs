//! Repositories tests start from, made by git: a work repository to commit
//! in ([`Work`]), with branches, light, annotated and nested tags, refs
//! loose or packed, and bare copies of it to serve; [`three_commits`] is
//! the history most serving tests use; [`Sandbox`] is a temporary home
//! with a directory of repositories beside it.

use crate::git::git_ok;
use std::path::{Path, PathBuf};

/// A non-bare repository a test commits in, run by git with HOME at
/// `home`.
pub struct Work {
    /// The tests's home (see [`crate::env::isolate`]).
    pub home: PathBuf,
    /// The repository's work tree.
    pub path: PathBuf,
}

impl Work {
    /// `git init -b main` of `home/<name>`.
    pub fn init(home: &Path, name: &str) -> Work {
        git_ok(home, home, &["init", "-q", "-b", "main", name]);
        Work::at(home, &home.join(name))
    }

    /// The repository git already made at `path`.
    pub fn at(home: &Path, path: &Path) -> Work {
        Work {
            home: home.to_owned(),
            path: path.to_owned(),
        }
    }

    /// `git <args>` in the repository, which must succeed: its output.
    pub fn git(&self, args: &[&str]) -> String {
        git_ok(&self.home, &self.path, args)
    }

    /// Writes `content` to the file `name` and commits it with the message
    /// `name`.
    pub fn commit_file(&self, name: &str, content: impl AsRef<[u8]>) -> &Work {
        let file = self.path.join(name);
        if let Some(dir) = file.parent() {
            std::fs::create_dir_all(dir).unwrap();
        }
        std::fs::write(file, content).unwrap();
        self.git(&["add", name]);
        self.git(&["commit", "-q", "-m", name]);
        self
    }

    /// A commit that changes nothing, with the message `message`.
    pub fn commit_empty(&self, message: &str) -> &Work {
        self.git(&["commit", "-q", "--allow-empty", "-m", message]);
        self
    }

    /// `count` commits, each adding the file `<prefix><n>` holding its
    /// number.
    pub fn commits(&self, prefix: &str, count: usize) -> &Work {
        for n in 0..count {
            self.commit_file(&format!("{prefix}{n}"), format!("{n}\n"));
        }
        self
    }

    /// The id `rev` names.
    pub fn rev(&self, rev: &str) -> String {
        self.git(&["rev-parse", rev]).trim().to_owned()
    }

    /// The id of HEAD.
    pub fn head(&self) -> String {
        self.rev("HEAD")
    }

    /// A branch `name` at `at`.
    pub fn branch(&self, name: &str, at: &str) -> &Work {
        self.git(&["branch", name, at]);
        self
    }

    /// A lightweight tag `name` at `at`.
    pub fn light_tag(&self, name: &str, at: &str) -> &Work {
        self.git(&["tag", name, at]);
        self
    }

    /// An annotated tag `name` of `at` with the message `message`.
    pub fn annotated_tag(&self, name: &str, message: &str, at: &str) -> &Work {
        self.git(&["tag", "-a", "-m", message, name, at]);
        self
    }

    /// An annotated tag `name` of the tag `tag`: a tag of a tag.
    pub fn nested_tag(&self, name: &str, tag: &str) -> &Work {
        let args = ["-c", "advice.nestedTag=false", "tag", "-a", "-m", "nested"];
        self.git(&[&args[..], &[name, tag]].concat());
        self
    }

    /// Moves every ref into `packed-refs` (`git pack-refs --all`); refs
    /// written after stay loose.
    pub fn pack_refs(&self) -> &Work {
        self.git(&["pack-refs", "--all"]);
        self
    }

    /// A bare copy of the repository made by git at `to` (its parent
    /// directories made first), as the repositories a test serves are
    /// made.
    pub fn bare_clone(&self, to: &Path) -> &Work {
        bare_clone(&self.home, &self.path, to);
        self
    }
}

/// A bare copy of the repository at `from` made by git at `to` (its parent
/// directories made first).
pub fn bare_clone(home: &Path, from: &Path, to: &Path) {
    if let Some(parent) = to.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let (from, to) = (from.to_str().unwrap(), to.to_str().unwrap());
    git_ok(home, home, &["clone", "-q", "--bare", from, to]);
}

/// The work repository `home/work` most serving tests start from: commits
/// `a`, `b` and `c` (each adding the file of its name holding its
/// position), the branch `topic` at `b` and the annotated tag `v1` of `a`.
pub fn three_commits(home: &Path) -> Work {
    let work = Work::init(home, "work");
    for (i, name) in ["a", "b", "c"].iter().enumerate() {
        work.commit_file(name, format!("{i}\n"));
    }
    work.branch("topic", "HEAD~1")
        .annotated_tag("v1", "release", "HEAD~2");
    work
}

/// A temporary directory holding a home for git (`home`) and, beside it,
/// a directory for repositories (`root`), so that nothing git writes to
/// its home lands among them. Removed when dropped.
pub struct Sandbox {
    _tmp: tempfile::TempDir,
    /// The home every program runs with.
    pub home: PathBuf,
    /// Where the repositories are.
    pub root: PathBuf,
}

impl Sandbox {
    /// An empty home and an empty `root`.
    pub fn new() -> Sandbox {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = tmp.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        Sandbox {
            _tmp: tmp,
            home,
            root,
        }
    }

    /// `git init -b main` of `root/<name>`.
    pub fn init(&self, name: &str) -> Work {
        git_ok(&self.home, &self.root, &["init", "-q", "-b", "main", name]);
        Work::at(&self.home, &self.root.join(name))
    }
}

impl Default for Sandbox {
    fn default() -> Sandbox {
        Sandbox::new()
    }
}
