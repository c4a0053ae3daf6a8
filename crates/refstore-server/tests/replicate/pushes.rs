//! A push is acknowledged once `object_copies` nodes hold its pack, and
//! refused with every ref unchanged when too few can; concurrent pushes
//! through every node, with few workers each, all reach a quorum.

use crate::support::*;
use crate::{clone_and_fsck, commit, packs, push, set_main, Cluster, Repair};
use std::net::TcpListener;
use std::time::Duration;

#[test]
fn a_push_is_acknowledged_once_a_peer_holds_its_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    let nodes: Vec<Served> = (1..=3).map(|i| cluster.start(i, Repair::Off)).collect();
    let work = home.join("work");
    let id = commit(home, &work, "a");
    let o = push(home, &work, &nodes[0]);
    assert!(o.status.success(), "{}", stderr(&o));

    // Looked at as soon as git has the acknowledgement: a peer holds the
    // pack already.
    let holders: Vec<usize> = (2..=3)
        .filter(|&i| !packs(&cluster.repo(i)).is_empty())
        .collect();
    // Small as the push is, it is kept as a pack, the unit nodes exchange.
    let pushed = packs(&cluster.repo(1));
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    let holder = holders
        .into_iter()
        .find(|&i| packs(&cluster.repo(i)) == pushed)
        .expect("no peer held the pushed pack when the push was acknowledged");
    let idx = cluster
        .repo(holder)
        .join(format!("objects/pack/{}.idx", pushed[0]));
    git_ok(home, home, &["verify-pack", idx.to_str().unwrap()]);

    set_main(&cluster.repo(holder), &id);
    let cloned = clone_and_fsck(home, &nodes[holder - 1], &home.join("clone"), "2");
    assert_eq!(cloned, id);
}

#[test]
fn without_enough_peers_a_push_is_refused_and_refs_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let mut cluster = Cluster::new(home, 3, 2);
    cluster.timeout = Duration::from_secs(1);
    let n1 = cluster.start(1, Repair::Off);
    // n2 takes connections and never answers; n3 is down.
    let hung = TcpListener::bind(("127.0.0.1", cluster.port(2))).unwrap();
    let work = home.join("work");
    let id = commit(home, &work, "a");
    let o = push(home, &work, &n1);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("cluster: objects reached 1 of 2 nodes; push refused"),
        "{err}"
    );
    assert!(err.contains("[remote rejected]"), "{err}");
    let refs = git_ok(home, home, &["ls-remote", &n1.url("r.git")]);
    assert_eq!(refs, "");
    assert!(!cluster.repo(1).join("refs/heads/main").exists());

    // Once n2 answers, the same push goes through.
    drop(hung);
    let n2 = cluster.start(2, Repair::Off);
    let o = push(home, &work, &n1);
    assert!(o.status.success(), "{}", stderr(&o));
    let refs = git_ok(home, home, &["ls-remote", &n1.url("r.git")]);
    assert_eq!(refs, format!("{id}\tHEAD\n{id}\trefs/heads/main\n"));
    let pushed = packs(&cluster.repo(1));
    assert!(!pushed.is_empty());
    assert_eq!(packs(&cluster.repo(2)), pushed);
    drop(n2);
}

#[test]
fn concurrent_pushes_through_every_node_each_reach_a_quorum() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    // Two workers each: pushes waiting for their peers hold every turn
    // while the peers' replication requests must still be served.
    let nodes: Vec<Served> = (1..=3)
        .map(|i| cluster.start_with(i, Repair::Off, 2))
        .collect();
    let pushes: Vec<(usize, String)> = (0..9)
        .map(|i| {
            let work = home.join(format!("work{i}"));
            (i % 3, commit(home, &work, &format!("f{i}")))
        })
        .collect();
    std::thread::scope(|scope| {
        for (i, (node, _)) in pushes.iter().enumerate() {
            let (nodes, work) = (&nodes, home.join(format!("work{i}")));
            scope.spawn(move || {
                let url = nodes[*node].url_as("alice", "pw", "r.git");
                let refspec = format!("main:refs/heads/b{i}");
                let o = git_net(home, &work, &["push", &url, &refspec]);
                assert!(o.status.success(), "push {i}: {}", stderr(&o));
            });
        }
    });
    for (i, (_, id)) in pushes.iter().enumerate() {
        let holders = (1..=3)
            .filter(|&n| {
                let repo = cluster.repo(n);
                git(
                    home,
                    &repo,
                    &["cat-file", "-e", &format!("{id}^{{commit}}")],
                )
                .status
                .success()
            })
            .count();
        assert!(holders >= 2, "push {i} is on {holders} node(s)");
    }
}
