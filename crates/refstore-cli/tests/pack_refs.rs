//! `refstore pack-refs` leaves a repository exactly as `git pack-refs`
//! does: the same `packed-refs` bytes (peeled lines of annotated and nested
//! tags included) and the same loose files, for each option, starting from
//! the same copies; git reads the result and `git fsck` accepts it.

mod support;
use std::path::Path;
use std::process::Command;
use support::*;

fn loose_files(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.join(".git/refs")];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().display().to_string());
        }
    }
    out.sort();
    out
}

fn copy(from: &Path, to: &Path) {
    let status = Command::new("cp")
        .arg("-a")
        .arg(from)
        .arg(to)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn leaves_the_repository_as_git_does() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    git_ok(home, dir, &["init", "-q", "-b", "main", "seed"]);
    let seed = dir.join("seed");
    let git = |args: &[&str]| git_ok(home, &seed, args);
    git(&["commit", "-q", "--allow-empty", "-m", "one"]);
    git(&["branch", "a/b/c"]);
    git(&["tag", "-a", "-m", "t", "v1"]);
    git(&["pack-refs"]);
    git(&["commit", "-q", "--allow-empty", "-m", "two"]);
    git(&["branch", "x/y"]);
    git(&["tag", "light"]);
    git(&["tag", "-a", "-m", "t2", "v2"]);
    Work::at(home, &seed).nested_tag("deep/v3", "v2");
    git(&["symbolic-ref", "refs/heads/sym", "refs/heads/main"]);
    git(&["update-ref", "refs/bisect/bad", "HEAD"]);
    // A packed ref that is also loose with a newer value.
    git(&["update-ref", "refs/heads/a/b/c", "HEAD"]);

    let steps: &[&[&str]] = &[&[], &["--no-prune"], &["--all", "--no-prune"], &["--all"]];
    for (i, args) in steps.iter().enumerate() {
        let (ours, theirs) = (dir.join(format!("ours{i}")), dir.join(format!("theirs{i}")));
        copy(&seed, &ours);
        copy(&seed, &theirs);
        // Each step runs after the previous ones, on both copies alike.
        for earlier in &steps[..i] {
            for copy in [&ours, &theirs] {
                let full: Vec<&str> = ["pack-refs"]
                    .iter()
                    .chain(earlier.iter())
                    .copied()
                    .collect();
                git_ok(home, copy, &full);
            }
        }
        let full: Vec<&str> = ["pack-refs"].iter().chain(args.iter()).copied().collect();
        let out = refstore(home, &ours, &full);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        git_ok(home, &theirs, &full);
        assert_eq!(
            std::fs::read_to_string(ours.join(".git/packed-refs")).unwrap(),
            std::fs::read_to_string(theirs.join(".git/packed-refs")).unwrap(),
            "{args:?}"
        );
        assert_eq!(loose_files(&ours), loose_files(&theirs), "{args:?}");
        assert_eq!(
            git_ok(home, &ours, &["for-each-ref"]),
            git_ok(home, &theirs, &["for-each-ref"])
        );
        git_ok(home, &ours, &["fsck", "--no-progress"]);
    }
}

#[test]
fn a_held_packed_refs_lock_is_a_clear_error_and_changes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let (home, dir) = (tmp.path(), tmp.path());
    git_ok(home, dir, &["init", "-q", "-b", "main", "r"]);
    let repo = dir.join("r");
    git_ok(home, &repo, &["commit", "-q", "--allow-empty", "-m", "one"]);
    std::fs::write(repo.join(".git/packed-refs.lock"), "").unwrap();
    let before = loose_files(&repo);
    let out = refstore(
        home,
        &repo,
        &["-c", "core.packedRefsTimeout=0", "pack-refs", "--all"],
    );
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("packed-refs.lock"),
        "{}",
        stderr(&out)
    );
    assert!(stderr(&out).contains("File exists"), "{}", stderr(&out));
    assert_eq!(loose_files(&repo), before);
    assert!(!repo.join(".git/packed-refs").exists());
}
