//! The repair: the repositories below a root are found (however deep, not
//! inside another repository, not in hidden directories) and each catches
//! up; a pack whose objects fewer than `object_copies` members hold is
//! sent to members lacking them until enough do, objects being counted
//! wherever a peer holds them (a pack of another name included); what a
//! pass leaves below `object_copies` and what it copied are counted.

use crate::peer::{Behaviour, Peer};
use crate::{bare, down, open, pack_into, packs_of, replica};
use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_testsupport::fixtures::Work;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// A work repository with one commit, and `this/r.git` holding it as a
/// pack: the work repository and the pack's name.
fn held_here(home: &Path) -> (Work, String) {
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n");
    let this = home.join("this/r.git");
    bare(home, &this);
    let pack = pack_into(&work, &this, &["main"], 6);
    (work, pack)
}

/// A peer of one empty `r.git` below `home/<name>`.
fn empty_peer(home: &Path, name: &str) -> Peer {
    let root = home.join(name);
    bare(home, &root.join("r.git"));
    Peer::start(&root, crate::SECRET, Behaviour::Serves)
}

#[test]
fn a_pack_below_object_copies_is_sent_until_enough_members_hold_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (_, pack) = held_here(home);
    let (a, b) = (empty_peer(home, "a"), empty_peer(home, "b"));
    let others = [("a".to_owned(), a.url()), ("b".to_owned(), b.url())];
    let replica = replica(&others, 2, Duration::from_secs(30));
    let this = open(&home.join("this/r.git"));

    let check = replica.restore_copies(&this, "r.git").unwrap();
    assert_eq!(
        (check.found_below, check.copied, check.still_below),
        (1, 1, 0)
    );
    // One member more was enough.
    let holders = [&a, &b]
        .iter()
        .filter(|p| packs_of(&p.root.join("r.git")) == [pack.clone()])
        .count();
    assert_eq!(holders, 1);
    let check = replica.restore_copies(&this, "r.git").unwrap();
    assert_eq!(check.found_below, 0);
}

#[test]
fn members_that_cannot_take_a_copy_leave_the_pack_below_object_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (_, pack) = held_here(home);
    let a = empty_peer(home, "a");
    let others = [("a".to_owned(), a.url()), ("b".to_owned(), down())];
    let replica = replica(&others, 3, Duration::from_secs(30));
    let this = open(&home.join("this/r.git"));

    let check = replica.restore_copies(&this, "r.git").unwrap();
    assert_eq!(
        (check.found_below, check.copied, check.still_below),
        (1, 1, 1)
    );
    assert_eq!(packs_of(&a.root.join("r.git")), [pack]);
}

#[test]
fn objects_held_in_a_pack_of_another_name_count_as_copies() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (work, pack) = held_here(home);
    let root = home.join("a");
    bare(home, &root.join("r.git"));
    // The same objects, packed another way: another name.
    let theirs = pack_into(&work, &root.join("r.git"), &["main"], 0);
    assert_ne!(theirs, pack);
    let a = Peer::start(&root, crate::SECRET, Behaviour::Serves);
    let replica = replica(&[("a".to_owned(), a.url())], 2, Duration::from_secs(30));

    let check = replica
        .restore_copies(&open(&home.join("this/r.git")), "r.git")
        .unwrap();
    assert_eq!((check.found_below, check.copied), (0, 0));
    assert_eq!(packs_of(&root.join("r.git")), [theirs]);
}

#[test]
fn a_repair_pass_catches_every_repository_up_and_counts_what_is_left() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n");
    // The peer holds two repositories; this node has them empty, and
    // things below its root that are not repositories to repair.
    let peer_root = home.join("peer");
    let this_root = home.join("this");
    let names = ["a.git", "team/deep/b.git"];
    let mut packs = Vec::new();
    for name in names {
        bare(home, &peer_root.join(name));
        packs.push(pack_into(&work, &peer_root.join(name), &["main"], 6));
        bare(home, &this_root.join(name));
    }
    bare(home, &this_root.join(".hidden/c.git"));
    bare(home, &this_root.join("a.git/inside.git"));
    bare(home, &this_root.join("1/2/3/4/too-deep.git"));
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
    assert_eq!(
        refstore_replica::repair::repositories(vfs.as_ref(), &this_root),
        names
    );

    let peer = Peer::start(&peer_root, crate::SECRET, Behaviour::Serves);
    let others = [("peer".to_owned(), peer.url()), ("gone".to_owned(), down())];
    let replica = replica(&others, 3, Duration::from_secs(30));
    let mut progress = Vec::new();
    let added = replica.repair_reporting(&vfs, &this_root, &[], &mut |done, total| {
        progress.push((done, total))
    });
    assert_eq!(added, 2);
    assert_eq!(progress, [(0, 2), (1, 2), (2, 2)]);
    for (name, pack) in names.iter().zip(&packs) {
        assert_eq!(packs_of(&this_root.join(name)), std::slice::from_ref(pack));
    }
    // Three copies wanted, two members answer: both packs stay below.
    assert_eq!(replica.copies.below_copies.load(Ordering::SeqCst), 2);
    assert_eq!(replica.copies.packs_copied.load(Ordering::SeqCst), 0);
}
