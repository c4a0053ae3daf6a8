//! The repositories every served repository of the suite is copied from,
//! made by the machine's git: `main` five commits deep, `topic` a commit
//! behind it, the annotated tag `v1` further back, and
//! `refs/extra/next`, one commit past `main`, which a bare clone leaves
//! behind and the suite pushes in later as "new commits on the server".
//! One in SHA-1 and one in SHA-256.

use crate::support::git_ok;
use std::path::{Path, PathBuf};

pub struct Fixtures {
    pub sha1: PathBuf,
    pub sha256: PathBuf,
}

impl Fixtures {
    pub fn make(home: &Path) -> Fixtures {
        Fixtures {
            sha1: make(home, "seed-sha1", "sha1"),
            sha256: make(home, "seed-sha256", "sha256"),
        }
    }
}

fn make(home: &Path, name: &str, format: &str) -> PathBuf {
    let dir = home.join(name);
    let object_format = format!("--object-format={format}");
    git_ok(
        home,
        home,
        &["init", "-q", "-b", "main", &object_format, name],
    );
    for i in 0..5 {
        let file = format!("file-{i}");
        std::fs::write(dir.join(&file), format!("{name} {i}\n")).unwrap();
        git_ok(home, &dir, &["add", &file]);
        git_ok(home, &dir, &["commit", "-q", "-m", &file]);
    }
    git_ok(home, &dir, &["branch", "topic", "HEAD~1"]);
    git_ok(home, &dir, &["tag", "-a", "-m", "release", "v1", "HEAD~3"]);
    let tree = git_ok(home, &dir, &["rev-parse", "HEAD^{tree}"]);
    let next = git_ok(
        home,
        &dir,
        &["commit-tree", tree.trim(), "-p", "HEAD", "-m", "next"],
    );
    git_ok(home, &dir, &["update-ref", "refs/extra/next", next.trim()]);
    dir
}
