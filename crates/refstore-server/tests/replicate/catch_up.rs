//! A node that was down catches up: when a fetch (protocol v0 or v2)
//! wants what it missed, and by its repair at startup; and a pack left on
//! fewer than `object_copies` nodes is sent by its holder's repair to a
//! node lacking it.

use crate::support::*;
use crate::{clone_and_fsck, commit, commit_text, packs, push, set_main, Cluster, Repair};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Waits until `done` holds; fails after a minute, saying `what`.
fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_node_that_was_down_catches_up_on_fetch_and_by_repair() {
    catch_up("2");
}

#[test]
fn a_node_that_was_down_catches_up_on_a_protocol_v0_fetch() {
    catch_up("0");
}

/// A node down during a push catches up when a fetch in protocol
/// `version` wants what it missed; down during another, it catches up by
/// its repair at startup.
fn catch_up(version: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    let n1 = cluster.start(1, Repair::Off);
    let n2 = cluster.start(2, Repair::Off);
    let work = home.join("work");
    let lines: Vec<String> = (0..2000).map(|i| format!("line {i}\n")).collect();
    let first = commit_text(home, &work, "big", &lines.concat());
    let o = push(home, &work, &n1);
    assert!(o.status.success(), "{}", stderr(&o));

    // n3 was down; a fetch that wants the pushed commit makes it fetch
    // the pack from a peer before it answers.
    let n3 = cluster.start(3, Repair::Off);
    assert!(packs(&cluster.repo(3)).is_empty());
    set_main(&cluster.repo(3), &first);
    let c1 = home.join("c1");
    assert_eq!(clone_and_fsck(home, &n3, &c1, version), first);
    let packs_before = packs(&cluster.repo(1));
    assert_eq!(packs(&cluster.repo(3)), packs_before);
    n3.stop();

    // Down again for a second push, a thin pack (a delta against the
    // first version of the file) that n2 completes before it replicates
    // it; n3's repair at startup brings it up to date before any fetch.
    let mut changed = lines;
    changed[1000] = "changed\n".to_owned();
    let second = commit_text(home, &work, "big", &changed.concat());
    let o = push(home, &work, &n2);
    assert!(o.status.success(), "{}", stderr(&o));
    let n3 = cluster.start(3, Repair::Every(60));
    wait_until("n3's first repair pass never ended", || {
        n3.repairs.load(Ordering::SeqCst) > 0
    });
    let expected = packs(&cluster.repo(2));
    assert_eq!(expected.len(), 2);
    assert_eq!(packs(&cluster.repo(3)), expected);
    // The replicated pack holds the delta's base, added by completion.
    let base = git_ok(home, &work, &["rev-parse", &format!("{first}:big")]);
    let new_pack = expected.iter().find(|p| !packs_before.contains(p)).unwrap();
    let idx = cluster.repo(3).join(format!("objects/pack/{new_pack}.idx"));
    let listed = git_ok(home, home, &["verify-pack", "-v", idx.to_str().unwrap()]);
    assert!(listed.contains(base.trim()), "{listed}");
    set_main(&cluster.repo(3), &second);
    assert_eq!(clone_and_fsck(home, &n3, &home.join("c2"), "2"), second);
    drop(n1);
}

#[test]
fn the_repair_restores_object_copies_when_a_holder_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    // n1 repairs every second; n2 and n3 never do, so a copy reaching n3
    // can only be n1's repair sending it.
    let n1 = cluster.start(1, Repair::Every(1));
    let n2 = cluster.start(2, Repair::Off);
    let work = home.join("work");
    let id = commit(home, &work, "a");
    let o = push(home, &work, &n1);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(packs(&cluster.repo(2)), packs(&cluster.repo(1)));

    // n2, the pack's second copy, is lost; n3 comes up without it.
    n2.stop();
    let n3 = cluster.start(3, Repair::Off);
    wait_until("n1's repair did not copy the pack to n3", || {
        git(home, &cluster.repo(3), &["cat-file", "-e", &id])
            .status
            .success()
    });
    assert_eq!(packs(&cluster.repo(3)), packs(&cluster.repo(1)));
    // n1 counts the copy it restored.
    let replica = n1.options.replication.clone().unwrap();
    wait_until("n1 never counted the copy it restored", || {
        replica.copies.packs_copied.load(Ordering::SeqCst) >= 1
    });
    drop(n3);
}
