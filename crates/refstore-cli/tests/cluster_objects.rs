//! A whole cluster, refs in etcd and objects copied between nodes, with
//! plain git: a push acknowledged through one node survives that node's
//! SIGKILL right after the acknowledgement (every other node clones it
//! completely), and the node, restarted, serves what was pushed while it
//! was down; a push through a node that missed the push it builds on is
//! accepted.

mod cluster;
mod support;

use cluster::{Links, Mode, Objects, TestCluster};
use std::path::Path;
use support::{git_ok, stderr};

/// Commits a file of `size` bytes of varied content in the work tree.
fn commit_file(c: &TestCluster, name: &str, size: usize) -> String {
    let content: Vec<u8> = (0..size)
        .map(|i| b"abcdefghijklmnopqrstuvwxyz\n"[(i * 7 + i / 13) % 27])
        .collect();
    std::fs::write(c.work.join(name), content).unwrap();
    git_ok(&c.home, &c.work, &["add", name]);
    git_ok(&c.home, &c.work, &["commit", "-q", "-m", name]);
    c.rev("main")
}

/// Clones `repo.git` through node `i` into `dest`, checks it with
/// `git fsck --strict`, and returns its `main`.
fn clone_checked(c: &TestCluster, i: usize, dest: &Path) -> String {
    let o = c.git(&["clone", "-q", &c.nodes[i].url(), dest.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "clone through {}: {}",
        c.nodes[i].name,
        stderr(&o)
    );
    git_ok(&c.home, dest, &["fsck", "--strict", "--no-dangling"]);
    git_ok(&c.home, dest, &["rev-parse", "main"])
        .trim()
        .to_owned()
}

#[test]
fn an_acknowledged_push_survives_its_node_and_a_restarted_node_catches_up() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = TestCluster::start_with(tmp.path(), 1, 3, Objects::Replicated { copies: 2 });

    // Acknowledged through n1, which dies at once: the objects are on
    // another node already, and every surviving node serves them (the
    // one without a copy fetches it from the one with it).
    let first = commit_file(&c, "a.txt", 200_000);
    let o = c.git(&["push", &c.nodes[0].url(), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    c.kill_node(0);
    for i in 1..3 {
        let dest = c.home.join(format!("after-kill-{i}"));
        assert_eq!(clone_checked(&c, i, &dest), first);
    }

    // Pushed while n1 is down, through n3.
    let second = commit_file(&c, "b.txt", 100_000);
    let o = c.git(&["push", &c.nodes[2].url(), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // n1, restarted, advertises the new tip (from etcd) and serves its
    // objects, which it never received, completely.
    c.start_node(0);
    assert_eq!(c.remote_ref(0, "refs/heads/main"), Some(second.clone()));
    let dest = c.home.join("after-restart");
    assert_eq!(clone_checked(&c, 0, &dest), second);
}

#[test]
fn a_push_is_refused_when_too_few_nodes_can_hold_its_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = TestCluster::start_with(tmp.path(), 1, 2, Objects::Replicated { copies: 2 });
    let before = c.rev("main");
    c.kill_node(1);
    commit_file(&c, "c.txt", 10_000);
    let o = c.git(&["push", &c.nodes[0].url(), "main"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("[remote rejected]"), "{err}");
    assert!(err.contains("objects reached 1 of 2 nodes"), "{err}");
    // etcd, and so every node, still has the old tip.
    assert_eq!(c.remote_ref(0, "refs/heads/main"), Some(before));
}

/// A node cut off from its peers through a push, and back before any
/// repair pass, advertises that push's tip (from etcd) without holding
/// its objects. A
/// push through it that builds on the tip, its pack thin against the
/// tip's objects and its commit a child of the tip, is accepted: the node
/// brings in from its peers what the push's old tips reach before it
/// reads the pack. Every node then serves the result completely.
#[test]
fn a_push_through_a_node_that_missed_the_one_it_builds_on_is_accepted() {
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCluster::start_with(tmp.path(), 1, 3, Objects::Replicated { copies: 2 });
    // Sizes vary per run, so that the deltas against the missed blob do
    // too.
    let seed = std::process::id() as usize;
    let size = 100_000 + seed % 50_000;
    commit_file(&c, "a.txt", size);
    let o = c.git(&["push", &c.nodes[0].url(), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));

    c.cut(1, Links::Peers, Mode::Reset);
    // Each size is larger than the last, so that every commit changes
    // the file.
    let missed_size = size + 1 + seed % 97;
    let missed = commit_file(&c, "a.txt", missed_size);
    let o = c.git(&["push", &c.nodes[0].url(), "main"]);
    c.cut(1, Links::Peers, Mode::Pass);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c.remote_ref(1, "refs/heads/main"), Some(missed.clone()));

    let built_on = commit_file(&c, "a.txt", missed_size + 1 + seed % 89);
    let o = c.git(&["push", &c.nodes[1].url(), "main"]);
    assert!(
        o.status.success(),
        "a push building on one {} missed: {}",
        c.nodes[1].name,
        stderr(&o)
    );
    for i in 0..3 {
        let dest = c.home.join(format!("built-on-{i}"));
        assert_eq!(clone_checked(&c, i, &dest), built_on);
    }
}
