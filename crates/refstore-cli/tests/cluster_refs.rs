//! `refstore serve --cluster` with plain git: a push through one node is
//! seen through every other node at once, racing pushes through different
//! nodes have exactly one winner, and etcd losing members stops pushes
//! (with a clear message) but not reads.

mod cluster;
mod support;

use cluster::TestCluster;
use std::time::{Duration, Instant};
use support::{git_ok, stderr, stdout};

#[test]
fn a_push_through_one_node_is_seen_through_the_others_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCluster::start(tmp.path(), 1, 3);
    let first = c.rev("main");
    for i in 0..3 {
        assert_eq!(c.remote_ref(i, "refs/heads/main"), Some(first.clone()));
        assert_eq!(c.remote_ref(i, "HEAD"), Some(first.clone()));
    }

    git_ok(
        &c.home,
        &c.work,
        &["commit", "-q", "--allow-empty", "-m", "second"],
    );
    git_ok(&c.home, &c.work, &["tag", "-a", "-m", "v1", "v1"]);
    let second = c.rev("main");
    c.share_objects(&["main", "v1"]);
    let o = c.git(&[
        "push",
        &c.nodes[0].url(),
        "main",
        "v1",
        "main:refs/heads/topic",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Right after the acknowledgement, every other node shows the push,
    // to several clients at once.
    let tag = c.rev("v1");
    std::thread::scope(|s| {
        let mut readers = Vec::new();
        for i in 1..3 {
            let c = &c;
            let (second, tag) = (second.clone(), tag.clone());
            readers.push(s.spawn(move || {
                let refs = c.ls_remote(i);
                let get = |n: &str| {
                    refs.iter()
                        .find(|(name, _)| name == n)
                        .map(|(_, id)| id.clone())
                };
                assert_eq!(get("refs/heads/main"), Some(second.clone()));
                assert_eq!(get("refs/heads/topic"), Some(second.clone()));
                assert_eq!(get("refs/tags/v1"), Some(tag));
                assert_eq!(get("refs/tags/v1^{}"), Some(second.clone()));
            }));
            readers.push(s.spawn(move || {
                let dest = c.home.join(format!("clone-{i}"));
                let o = c.git(&["clone", "-q", &c.nodes[i].url(), dest.to_str().unwrap()]);
                assert!(o.status.success(), "{}", stderr(&o));
                let head = git_ok(&c.home, &dest, &["rev-parse", "HEAD"]);
                assert_eq!(head.trim(), c.rev("main"));
            }));
        }
        for r in readers {
            r.join().unwrap();
        }
    });

    // The node that received the push stored its objects as one pack,
    // the unit nodes copy, not as loose objects.
    let objects = c.nodes[0].root.join("repo.git/objects");
    let packs: Vec<_> = std::fs::read_dir(objects.join("pack"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.path().extension().is_some_and(|x| x == "pack"))
        .collect();
    assert_eq!(packs.len(), 1);
    let loose = std::fs::read_dir(&objects)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().len() == 2)
        .count();
    assert_eq!(loose, 0);

    // A deletion through a third node is seen through the first.
    let o = c.git(&["push", &c.nodes[2].url(), ":refs/heads/topic"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c.remote_ref(0, "refs/heads/topic"), None);

    // An atomic push with one ref the transaction refuses (it would be a
    // directory of an existing ref) changes nothing anywhere.
    let o = c.git(&[
        "push",
        "--atomic",
        &c.nodes[1].url(),
        "main:refs/heads/other",
        "main:refs/heads/main/sub",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("[remote rejected]"), "{}", stderr(&o));
    for i in 0..3 {
        assert_eq!(c.remote_ref(i, "refs/heads/other"), None);
        assert_eq!(c.remote_ref(i, "refs/heads/main"), Some(second.clone()));
    }
}

#[test]
fn racing_pushes_through_different_nodes_have_one_winner() {
    let tmp = tempfile::tempdir().unwrap();
    let c = TestCluster::start(tmp.path(), 1, 3);
    let mut current = c.rev("main");
    for round in 0..20 {
        let tree = c.rev(&format!("{current}^{{tree}}"));
        let candidates: Vec<String> = (0..3)
            .map(|n| c.commit_tree(&tree, &current, &format!("round {round} node {n}")))
            .collect();
        let refs: Vec<&str> = candidates.iter().map(String::as_str).collect();
        c.share_objects(&refs);
        let pushed: Vec<bool> = std::thread::scope(|s| {
            let racers: Vec<_> = candidates
                .iter()
                .enumerate()
                .map(|(n, commit)| {
                    let c = &c;
                    s.spawn(move || {
                        let refspec = format!("{commit}:refs/heads/main");
                        c.git(&["push", &c.nodes[n].url(), &refspec])
                            .status
                            .success()
                    })
                })
                .collect();
            racers.into_iter().map(|r| r.join().unwrap()).collect()
        });
        let winners: Vec<usize> = (0..3).filter(|&n| pushed[n]).collect();
        assert_eq!(winners.len(), 1, "round {round}: {pushed:?}");
        current = candidates[winners[0]].clone();
        for i in 0..3 {
            assert_eq!(c.remote_ref(i, "refs/heads/main"), Some(current.clone()));
        }
    }
}

#[test]
fn pushes_and_reads_stop_without_an_etcd_quorum_and_resume() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = TestCluster::start(tmp.path(), 3, 2);
    let commit = |c: &TestCluster, message: &str| {
        git_ok(
            &c.home,
            &c.work,
            &["commit", "-q", "--allow-empty", "-m", message],
        );
        c.share_objects(&["main"]);
        c.rev("main")
    };

    let one = commit(&c, "one");
    let o = c.git(&["push", &c.nodes[0].url(), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));

    // One member of three down: pushes go on.
    c.etcd.kill_member(0);
    let two = commit(&c, "two");
    let o = c.git(&["push", &c.nodes[1].url(), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(c.remote_ref(0, "refs/heads/main"), Some(two.clone()));
    assert_ne!(one, two);

    // Two down: refused, with a clear message, within seconds.
    c.etcd.kill_member(1);
    let three = commit(&c, "three");
    let started = Instant::now();
    let o = c.git(&["push", &c.nodes[0].url(), "main"]);
    let took = started.elapsed();
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("cluster: etcd has no quorum or cannot be reached"),
        "{err}"
    );
    assert!(err.contains("push refused"), "{err}");
    assert!(took < Duration::from_secs(10), "refused after {took:?}");

    // Reads are refused too, through both nodes, rather than answered
    // from a copy that may miss acknowledged pushes.
    for i in 0..2 {
        let o = c.git(&["ls-remote", &c.nodes[i].url()]);
        assert!(!o.status.success(), "{}", stdout(&o));
        assert!(
            stderr(&o).contains("cluster: etcd has no quorum or cannot be reached"),
            "{}",
            stderr(&o)
        );
    }
    let dest = c.home.join("clone-during-outage");
    let o = c.git(&["clone", "-q", &c.nodes[1].url(), dest.to_str().unwrap()]);
    assert!(!o.status.success());

    // The members come back: pushes go on, nothing done by hand.
    c.etcd.start_member(0);
    c.etcd.start_member(1);
    c.etcd.wait_healthy();
    let mut attempts = 0;
    loop {
        let o = c.git(&["push", &c.nodes[0].url(), "main"]);
        if o.status.success() {
            break;
        }
        attempts += 1;
        assert!(attempts < 50, "{}", stderr(&o));
        std::thread::sleep(Duration::from_millis(200));
    }
    for i in 0..2 {
        assert_eq!(c.remote_ref(i, "refs/heads/main"), Some(three.clone()));
    }
    let o = c.import();
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("etcd already holds refs of 'repo.git'; give --force"),
        "{}",
        stderr(&o)
    );
}
