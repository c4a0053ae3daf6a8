//! Catching up from peers. Without the cluster's refs, every peer's pack
//! holding an object this node lacks is copied, a peer that is down
//! skipped, and a fetch whose wants are all here asks no peer. With them,
//! only what the refs (or a fetch's wants) reach and the node lacks is
//! copied, following the history through what arrives, never a pack of
//! orphans; and a node that is up to date asks the peers for nothing.

use crate::peer::{Behaviour, Peer};
use crate::{bare, complete, down, open, pack_into, packs_of, replica};
use refstore_protocol::Repository;
use refstore_refs::ObjectId;
use refstore_replica::ClusterTips;
use refstore_testsupport::fixtures::Work;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A history `c1` - `c2` - `c3` on main and an orphan commit beside it,
/// spread over two peers as four packs: `a` holds c1, and c2 without
/// c1's objects; `b` holds c3 without c2's, and the orphan alone.
struct Spread {
    home: PathBuf,
    commits: [String; 3],
    orphan: String,
    a: Peer,
    b: Peer,
    /// The packs of c1, c2, c3 and the orphan.
    packs: [String; 4],
    /// This node's repository, empty.
    this: PathBuf,
}

fn spread(home: &Path) -> Spread {
    let work = Work::init(home, "work");
    let commits = ["c1", "c2", "c3"].map(|name| work.commit_file(name, name).head());
    // The orphan shares nothing with the history.
    work.git(&["checkout", "-q", "--orphan", "side"]);
    work.git(&["rm", "-r", "-q", "-f", "."]);
    let orphan = work.commit_file("orphan", "orphan").head();
    let (a, b) = (home.join("a"), home.join("b"));
    for root in [&a, &b] {
        bare(home, &root.join("r.git"));
    }
    let (a_repo, b_repo) = (a.join("r.git"), b.join("r.git"));
    let not = |id: &String| format!("^{id}");
    let packs = [
        pack_into(&work, &a_repo, &[&commits[0]], 6),
        pack_into(&work, &a_repo, &[&commits[1], &not(&commits[0])], 6),
        pack_into(&work, &b_repo, &[&commits[2], &not(&commits[1])], 6),
        pack_into(&work, &b_repo, &[&orphan], 6),
    ];
    let this = home.join("this/r.git");
    bare(home, &this);
    Spread {
        home: home.to_owned(),
        commits,
        orphan,
        a: Peer::start(&a, crate::SECRET, Behaviour::Serves),
        b: Peer::start(&b, crate::SECRET, Behaviour::Serves),
        packs,
        this,
    }
}

impl Spread {
    /// This node's replication with both peers (and `more`).
    fn replica(&self, more: &[(String, String)]) -> Arc<refstore_replica::Replica> {
        let mut others = vec![
            ("a".to_owned(), self.a.url()),
            ("b".to_owned(), self.b.url()),
        ];
        others.extend(more.iter().cloned());
        Arc::new(replica(&others, 2, Duration::from_secs(30)))
    }

    /// Requests the peers answered so far.
    fn asked(&self) -> usize {
        self.a.requests.load(Ordering::SeqCst) + self.b.requests.load(Ordering::SeqCst)
    }

    fn has(&self, id: &str) -> bool {
        open(&self.this).objects.contains(&id.parse().unwrap())
    }

    fn complete(&self, tip: &str) -> bool {
        complete(&self.home, &self.this, tip)
    }
}

/// The cluster's refs, as a test sets them.
#[derive(Debug, Default)]
struct Tips(Mutex<Vec<ObjectId>>);

impl Tips {
    fn set(&self, ids: &[&str]) {
        *self.0.lock().unwrap() = ids.iter().map(|id| id.parse().unwrap()).collect();
    }
}

impl ClusterTips for Tips {
    fn tips(&self, _repo: &Repository, _name: &str) -> Result<Vec<ObjectId>, String> {
        Ok(self.0.lock().unwrap().clone())
    }

    fn incarnation(&self, _repo: &Repository) -> Option<String> {
        Some("1".to_owned())
    }
}

#[test]
fn without_the_clusters_refs_every_pack_with_something_lacking_is_copied() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spread(tmp.path());
    let replica = s.replica(&[("gone".to_owned(), down())]);

    let added = replica.catch_up(&open(&s.this), "r.git");
    assert_eq!(added, 4);
    let mut expected = s.packs.to_vec();
    expected.sort();
    assert_eq!(packs_of(&s.this), expected);
    assert!(s.complete(&s.commits[2]) && s.complete(&s.orphan));
    // Nothing is lacking any more.
    assert_eq!(replica.catch_up(&open(&s.this), "r.git"), 0);
}

#[test]
fn without_the_clusters_refs_a_fetch_of_what_is_here_asks_no_peer() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spread(tmp.path());
    let work = Work::at(&s.home, &s.home.join("work"));
    pack_into(&work, &s.this, &[&s.commits[0]], 6);
    let replica = s.replica(&[]);

    let first: ObjectId = s.commits[0].parse().unwrap();
    let asked = s.asked();
    let added = replica.complete_wants(&open(&s.this), "r.git", &[first]);
    assert_eq!((added, s.asked()), (0, asked));

    let last: ObjectId = s.commits[2].parse().unwrap();
    let added = replica.complete_wants(&open(&s.this), "r.git", &[last]);
    assert!(added > 0);
    assert!(s.complete(&s.commits[2]));
}

#[test]
fn the_clusters_refs_decide_what_is_copied_and_never_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spread(tmp.path());
    let replica = s.replica(&[]);
    let tips = Arc::new(Tips::default());
    replica.judge_by(tips.clone());

    // The refs reach c2: c1's and c2's packs, nothing of b's.
    tips.set(&[&s.commits[1]]);
    assert_eq!(replica.catch_up(&open(&s.this), "r.git"), 2);
    assert!(s.complete(&s.commits[1]));
    assert!(!s.has(&s.commits[2]) && !s.has(&s.orphan));

    // Up to date: the walk stops where the last one ended, and no peer
    // is asked anything.
    let asked = s.asked();
    assert_eq!(replica.catch_up(&open(&s.this), "r.git"), 0);
    assert_eq!(s.asked(), asked);

    // The refs move to c3: its pack, never the orphan's beside it.
    tips.set(&[&s.commits[2]]);
    assert_eq!(replica.catch_up(&open(&s.this), "r.git"), 1);
    assert!(s.complete(&s.commits[2]));
    assert!(!s.has(&s.orphan));
    let mut expected = s.packs[..3].to_vec();
    expected.sort();
    assert_eq!(packs_of(&s.this), expected);
}

#[test]
fn a_fetch_of_a_commit_here_whose_history_is_not_brings_the_history() {
    let tmp = tempfile::tempdir().unwrap();
    let s = spread(tmp.path());
    // This node missed c1 and c2, and holds c3's pack (a push it took).
    let work = Work::at(&s.home, &s.home.join("work"));
    pack_into(
        &work,
        &s.this,
        &[&s.commits[2], &format!("^{}", s.commits[1])],
        6,
    );
    assert!(s.has(&s.commits[2]) && !s.has(&s.commits[1]));
    let replica = s.replica(&[]);
    replica.judge_by(Arc::new(Tips::default()));

    let want: ObjectId = s.commits[2].parse().unwrap();
    assert_eq!(replica.complete_wants(&open(&s.this), "r.git", &[want]), 2);
    assert!(s.complete(&s.commits[2]));
    assert!(!s.has(&s.orphan));
    // Verified: the same fetch again asks no peer.
    let asked = s.asked();
    assert_eq!(replica.complete_wants(&open(&s.this), "r.git", &[want]), 0);
    assert_eq!(s.asked(), asked);
}
