//! Pushes from shallow clones into `refstore receive-pack`, against git
//! 2.39's receive-pack: accepted where the pushed history connects in the
//! receiving repository, refused per ref (`shallow update not allowed`)
//! where it would need new shallow commits, with nothing left behind.

mod support;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use support::{git, git_ok, stderr, stdout};

fn refstore_receive_pack() -> String {
    format!(
        "--receive-pack={} receive-pack",
        env!("CARGO_BIN_EXE_refstore")
    )
}

/// Files below `dir`.
fn files(dir: &Path) -> BTreeSet<PathBuf> {
    let mut found = BTreeSet::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path.clone());
            }
            found.insert(path.strip_prefix(dir).unwrap().to_owned());
        }
    }
    found
}

/// Pushes from `work` into `target` (through refstore if `ours`): exit
/// code, porcelain summary and refs.
fn push(
    home: &Path,
    work: &Path,
    target: &Path,
    args: &[&str],
    ours: bool,
) -> (Option<i32>, String, String) {
    let url = format!("file://{}", target.display());
    let receive_pack = refstore_receive_pack();
    let mut all = vec!["push", "--porcelain"];
    if ours {
        all.push(&receive_pack);
    }
    all.push(&url);
    all.extend_from_slice(args);
    let out = git(home, work, &all);
    assert!(!stderr(&out).contains("remote: error"), "{}", stderr(&out));
    (
        out.status.code(),
        stdout(&out).replace(&url, "<url>"),
        git_ok(home, target, &["for-each-ref"]),
    )
}

#[test]
fn pushes_from_a_shallow_clone() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "-b", "main", "full"]);
    let full = home.join("full");
    for i in 0..3 {
        std::fs::write(full.join("file"), format!("{i}\n")).unwrap();
        git_ok(home, &full, &["add", "file"]);
        git_ok(home, &full, &["commit", "-q", "-m", &format!("c{i}")]);
    }
    let full_url = format!("file://{}", full.display());
    git_ok(
        home,
        home,
        &["clone", "-q", "--depth", "1", &full_url, "shallow"],
    );
    let shallow = home.join("shallow");
    std::fs::write(shallow.join("file"), "new\n").unwrap();
    git_ok(home, &shallow, &["commit", "-q", "-am", "new"]);
    for target in ["ours", "theirs"] {
        // A repository with the whole history: the push connects.
        git_ok(
            home,
            home,
            &["clone", "-q", "--bare", "full", &format!("{target}.git")],
        );
        // An empty one: the pushed history ends at the shallow commit.
        git_ok(
            home,
            home,
            &["init", "-q", "--bare", &format!("{target}-empty.git")],
        );
    }
    let complete = [home.join("ours.git"), home.join("theirs.git")];
    let ours = push(home, &shallow, &complete[0], &["HEAD:refs/heads/new"], true);
    let theirs = push(
        home,
        &shallow,
        &complete[1],
        &["HEAD:refs/heads/new"],
        false,
    );
    assert_eq!(ours, theirs);
    assert_eq!(ours.0, Some(0), "{ours:?}");
    git_ok(home, &complete[0], &["fsck", "--no-progress"]);

    let empty = [home.join("ours-empty.git"), home.join("theirs-empty.git")];
    let before = files(&empty[0].join("objects"));
    let args = ["HEAD:refs/heads/new", "HEAD:refs/heads/other"];
    let ours = push(home, &shallow, &empty[0], &args, true);
    let theirs = push(home, &shallow, &empty[1], &args, false);
    assert_eq!(ours, theirs);
    assert!(
        ours.1
            .contains("[remote rejected] (shallow update not allowed)"),
        "{ours:?}"
    );
    assert_eq!(files(&empty[0].join("objects")), before);
}
