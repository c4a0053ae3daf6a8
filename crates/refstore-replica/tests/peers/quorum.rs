//! A push's packs are sent to the peers until `object_copies` nodes, this
//! one included, hold them: generated clusters of peers that serve, are
//! down or never answer, and the push is acknowledged exactly when enough
//! serve, the refusal saying how many nodes held the objects. A peer that
//! names another pack than the one sent does not count, nor does a push
//! whose pack is not here.

use crate::peer::{Behaviour, Peer};
use crate::{bare, open, pack_into, packs_of, replica};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use refstore_testsupport::fixtures::Work;
use refstore_testsupport::git_ok;
use std::path::Path;
use std::time::Duration;

/// What a generated peer does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Up,
    Down,
    Hung,
}

/// A work repository with a commit, and `this/r.git` holding its objects
/// as one pack: the pack's name.
fn pushed(home: &Path) -> (Work, String) {
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n");
    let this = home.join("this/r.git");
    bare(home, &this);
    let pack = pack_into(&work, &this, &["main"], 6);
    (work, pack)
}

#[test]
fn a_push_is_acknowledged_exactly_when_object_copies_nodes_hold_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (_, pack) = pushed(home);
    let this = open(&home.join("this/r.git"));
    let states = proptest::collection::vec(
        prop_oneof![3 => Just(State::Up), 2 => Just(State::Down), 1 => Just(State::Hung)],
        1..=4,
    );
    let cluster = states.prop_flat_map(|states| {
        let n = states.len() + 1;
        (Just(states), 1..=n)
    });
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 12;
    }
    let cases = std::cell::Cell::new(0);
    TestRunner::new(config)
        .run(&cluster, |(states, copies)| {
            let case = cases.get() + 1;
            cases.set(case);
            let peers: Vec<(State, Option<Peer>, String)> = states
                .iter()
                .enumerate()
                .map(|(i, &state)| {
                    let root = home.join(format!("case{case}/p{i}"));
                    bare(home, &root.join("r.git"));
                    match state {
                        State::Down => (state, None, crate::down()),
                        _ => {
                            let behaviour = match state {
                                State::Up => Behaviour::Serves,
                                _ => Behaviour::Hangs,
                            };
                            let peer = Peer::start(&root, crate::SECRET, behaviour);
                            let url = peer.url();
                            (state, Some(peer), url)
                        }
                    }
                })
                .collect();
            let others: Vec<(String, String)> = peers
                .iter()
                .enumerate()
                .map(|(i, (_, _, url))| (format!("p{i}"), url.clone()))
                .collect();
            // Long enough for a peer that serves on a loaded machine; a
            // peer that hangs costs this much.
            let replica = replica(&others, copies, Duration::from_secs(5));
            let result = replica.replicate(&this, "r.git", std::slice::from_ref(&pack));

            let up = states.iter().filter(|s| **s == State::Up).count();
            let held = peers
                .iter()
                .filter(|(_, peer, _)| {
                    peer.as_ref()
                        .is_some_and(|p| packs_of(&p.root.join("r.git")).contains(&pack))
                })
                .count();
            let wanted = copies - 1;
            match result {
                Ok(()) if up >= wanted && held >= wanted => {}
                Err(message)
                    if up < wanted
                        && message
                            == format!(
                                "cluster: objects reached {} of {copies} nodes; push refused",
                                1 + up
                            ) => {}
                other => {
                    return Err(TestCaseError::fail(format!(
                        "{states:?}, {copies} copies: {other:?} with {held} peers holding the pack"
                    )))
                }
            }
            if copies == 1 && held > 0 {
                return Err(TestCaseError::fail("one copy asked, the pack was sent"));
            }
            Ok(())
        })
        .unwrap();
}

#[test]
fn a_stored_pack_verifies_and_a_misnamed_one_does_not_count() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (_, pack) = pushed(home);
    let this = open(&home.join("this/r.git"));
    let root = home.join("p1");
    bare(home, &root.join("r.git"));
    let peer = Peer::start(&root, crate::SECRET, Behaviour::Serves);
    let others = [("p1".to_owned(), peer.url())];
    let replica = replica(&others, 2, Duration::from_secs(10));
    replica
        .replicate(&this, "r.git", std::slice::from_ref(&pack))
        .unwrap();
    let idx = root.join(format!("r.git/objects/pack/{pack}.idx"));
    git_ok(home, home, &["verify-pack", idx.to_str().unwrap()]);
    // Sent again: stored once.
    replica
        .replicate(&this, "r.git", std::slice::from_ref(&pack))
        .unwrap();
    assert_eq!(packs_of(&root.join("r.git")), std::slice::from_ref(&pack));

    peer.behave(Behaviour::Misnames);
    assert_eq!(
        replica.replicate(&this, "r.git", std::slice::from_ref(&pack)),
        Err("cluster: objects reached 1 of 2 nodes; push refused".to_owned())
    );
    // A pack that is not here cannot be sent at all.
    peer.behave(Behaviour::Serves);
    let missing = format!("pack-{}", "0".repeat(40));
    assert_eq!(
        replica.replicate(&this, "r.git", &[missing]),
        Err("cluster: objects reached 0 of 2 nodes; push refused".to_owned())
    );
}
