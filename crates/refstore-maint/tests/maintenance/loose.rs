//! Loose objects: packed (versions of files as deltas) and their loose
//! copies removed; old unreachable ones pruned, nothing else.

use super::*;

#[test]
fn loose_objects_are_packed_and_removed() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 2);
    for i in 0..30 {
        let hash = ["hash-object", "-w", "--stdin"];
        write_object(home, &srv, &hash, &format!("loose {i}\n"));
    }
    let before = all_objects(home, &srv);
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.starts_with("count: 30\n"), "{counted}");
    maintenance(&srv, &[], &[Task::LooseObjects, Task::IncrementalRepack]);
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.starts_with("count: 0\n"), "{counted}");
    assert_eq!(all_objects(home, &srv), before);
    assert_git_accepts(home, &srv);
}

#[test]
fn loose_versions_of_files_are_packed_as_deltas() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "--bare", "srv.git"]);
    git_ok(home, home, &["init", "-q", "work"]);
    let srv = home.join("srv.git");
    let work = home.join("work");
    // Small pushes, stored loose (receive.unpackLimit): two files growing
    // by a line a commit, as source files do.
    let mut lines: Vec<String> = (0..100).map(|n| format!("line {n} of the file")).collect();
    // Files that do not change make the root trees worth a delta.
    for n in 0..10 {
        std::fs::write(work.join(format!("static{n}")), format!("{n}\n")).unwrap();
    }
    for i in 0..20 {
        lines.push(format!("added by commit {i}"));
        std::fs::write(work.join("a.txt"), lines.join("\n")).unwrap();
        std::fs::write(work.join("b.txt"), lines.join("\n").to_uppercase()).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", &format!("c{i}")]);
        git_ok(
            home,
            &work,
            &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
        );
    }
    let counted = git_ok(home, &srv, &["count-objects", "-v"]);
    assert!(counted.starts_with("count: 90\n"), "{counted}");
    let before = all_objects(home, &srv);
    maintenance(&srv, &[], &[Task::LooseObjects]);
    let index = srv.join("objects/pack").join(&pack_names(&srv, "idx")[0]);
    let verified = git_ok(home, &srv, &["verify-pack", "-v", index.to_str().unwrap()]);
    // `<id> <type> <size> <size in pack> <offset> <depth> <base>` for deltas.
    let deltas: Vec<&str> = verified
        .lines()
        .filter(|l| l.split_whitespace().count() == 7)
        .collect();
    let blob_deltas = deltas.iter().filter(|l| l.contains(" blob ")).count();
    let tree_deltas = deltas.iter().filter(|l| l.contains(" tree ")).count();
    assert!(blob_deltas >= 36, "{verified}");
    assert!(tree_deltas >= 15, "{verified}");
    let pack = std::fs::metadata(index.with_extension("pack"))
        .unwrap()
        .len();
    assert!(pack < 12_000, "pack of {pack} bytes: {verified}");
    assert_eq!(all_objects(home, &srv), before);
    git_ok(home, &srv, &["fsck", "--strict", "--no-dangling"]);
}

#[test]
fn old_unreachable_loose_objects_are_pruned_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, _) = pushed_repo(home, 2);
    let three_weeks = Duration::from_secs(21 * 86_400);
    let hash = ["hash-object", "-w", "--stdin"];
    // Old but reachable: a blob in a tree in a commit a ref points to.
    let blob = write_object(home, &srv, &hash, "reachable\n");
    let tree = write_object(
        home,
        &srv,
        &["mktree"],
        &format!("100644 blob {blob}\tfile\n"),
    );
    let commit = write_object(home, &srv, &["commit-tree", &tree, "-m", "extra"], "");
    git_ok(home, &srv, &["update-ref", "refs/heads/extra", &commit]);
    // Old and unreachable; fresh and unreachable.
    let garbage = write_object(home, &srv, &hash, "garbage\n");
    let fresh = write_object(home, &srv, &hash, "fresh\n");
    for id in [&blob, &tree, &commit, &garbage] {
        age(&loose_path(&srv, id), three_weeks);
    }
    let out = maintenance(&srv, &[], &[Task::LooseObjects]);
    assert!(out.contains("pruned 1 unreachable"), "{out}");
    let exists = |id: &str| git(home, &srv, &["cat-file", "-e", id]).status.success();
    assert!(!exists(&garbage));
    for id in [&blob, &tree, &commit, &fresh] {
        assert!(exists(id), "{id} lost");
        assert!(!loose_path(&srv, id).exists(), "{id} still loose");
    }
    git_ok(home, &srv, &["fsck", "--strict", "--no-dangling"]);
    // gc.pruneExpire=never keeps everything.
    let kept = write_object(home, &srv, &hash, "kept\n");
    age(&loose_path(&srv, &kept), three_weeks);
    maintenance(&srv, &["gc.pruneExpire=never"], &[Task::LooseObjects]);
    assert!(exists(&kept));
}
