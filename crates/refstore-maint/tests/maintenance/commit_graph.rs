//! The split commit-graph: written, extended and merged as `git
//! commit-graph write --split` does, read alike by git and by refstore's
//! upload-pack.

use super::*;

/// The layers of the commit-graph chain, bottom first.
fn chain(repo: &Path) -> Vec<String> {
    let path = repo.join("objects/info/commit-graphs/commit-graph-chain");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// git reads the commit-graph as it reads the commits themselves.
fn assert_graph_agrees(home: &Path, srv: &Path) {
    git_ok(home, srv, &["commit-graph", "verify"]);
    let log = |graph: &str| {
        git_ok(
            home,
            srv,
            &[
                "-c",
                &format!("core.commitGraph={graph}"),
                "log",
                "--format=%H %P %ct",
                "--topo-order",
                "--all",
            ],
        )
    };
    assert_eq!(log("true"), log("false"));
}

fn push_commits(home: &Path, work: &Path, srv: &Path, n: usize) {
    for i in 0..n {
        // Appended: every commit changes the file.
        let mut grown = std::fs::read_to_string(work.join("grow")).unwrap_or_default();
        grown.push_str(&format!("{i}\n"));
        std::fs::write(work.join("grow"), grown).unwrap();
        git_ok(home, work, &["add", "-A"]);
        git_ok(home, work, &["commit", "-qm", &format!("grow {i}")]);
    }
    git_ok(
        home,
        work,
        &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
    );
}

#[test]
fn commit_graph_chain_is_extended_and_merged_as_git_does() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = pushed_repo(home, 12);
    // An octopus merge needs the EDGE chunk.
    let branch = git_ok(home, &work, &["symbolic-ref", "--short", "HEAD"]);
    let branch = branch.trim();
    let base = git_ok(home, &work, &["rev-parse", "HEAD~2"]);
    for b in ["o1", "o2", "o3"] {
        git_ok(home, &work, &["checkout", "-qb", b, base.trim()]);
        std::fs::write(work.join(b), b).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", b]);
    }
    git_ok(home, &work, &["checkout", "-q", branch]);
    git_ok(home, &work, &["merge", "-q", "--no-edit", "o1", "o2", "o3"]);
    git_ok(
        home,
        &work,
        &["push", "-q", srv.to_str().unwrap(), "HEAD:refs/heads/main"],
    );
    // A single file, as `git commit-graph write` leaves it, gives way to
    // the chain.
    git_ok(home, &srv, &["commit-graph", "write", "--reachable"]);
    let out = maintenance(&srv, &[], &[Task::CommitGraph]);
    assert!(out.contains("a layer of"), "{out}");
    assert!(!srv.join("objects/info/commit-graph").exists());
    assert_eq!(chain(&srv).len(), 1);
    assert_graph_agrees(home, &srv);
    let layer = srv
        .join("objects/info/commit-graphs")
        .join(format!("graph-{}.graph", chain(&srv)[0]));
    let bytes = std::fs::read(&layer).unwrap();
    assert!(bytes.windows(4).any(|w| w == b"GDA2"), "no generation data");

    // Small additions stack up as layers.
    push_commits(home, &work, &srv, 3);
    maintenance(&srv, &[], &[Task::CommitGraph]);
    assert_eq!(chain(&srv).len(), 2);
    assert_graph_agrees(home, &srv);
    push_commits(home, &work, &srv, 1);
    maintenance(&srv, &[], &[Task::CommitGraph]);
    assert_eq!(chain(&srv).len(), 3);
    assert_graph_agrees(home, &srv);
    // Nothing new: the chain stays as it is.
    let before = chain(&srv);
    maintenance(&srv, &[], &[Task::CommitGraph]);
    assert_eq!(chain(&srv), before);

    // A larger addition takes the small layers above it in: 4 new
    // commits merge with the layers of 1 and 3 (each at most twice what
    // is merged so far), not with the base of 20.
    push_commits(home, &work, &srv, 4);
    let out = maintenance(
        &srv,
        &["refstore.redundantPackExpire=now"],
        &[Task::CommitGraph],
    );
    assert!(out.contains("(2 merged into it)"), "{out}");
    let after = chain(&srv);
    assert_eq!(after.len(), 2);
    assert_eq!(after[0], before[0]);
    assert_graph_agrees(home, &srv);
    // The merged layers' files are gone (their expiry is now).
    let files = std::fs::read_dir(srv.join("objects/info/commit-graphs"))
        .unwrap()
        .count();
    assert_eq!(files, 3, "the chain file and two layers");

    // git extends refstore's chain, and refstore git's.
    push_commits(home, &work, &srv, 1);
    git_ok(
        home,
        &srv,
        &["commit-graph", "write", "--split", "--reachable"],
    );
    assert_eq!(chain(&srv).len(), 3);
    assert_graph_agrees(home, &srv);
    push_commits(home, &work, &srv, 1);
    maintenance(&srv, &[], &[Task::CommitGraph]);
    assert_eq!(chain(&srv)[..2], after[..]);
    assert_graph_agrees(home, &srv);

    // refstore's upload-pack reads the chain: a clone through it is
    // complete.
    let clone = home.join("clone.git");
    let o = clone_through_refstore(home, &srv, &clone);
    assert!(o.status.success(), "clone: {}", stderr(&o));
    git_ok(home, &clone, &["fsck", "--no-dangling"]);
}
