//! The stores and packs a process shares across requests
//! ([`refstore_odb::shared`]) are what opening anew would find: over
//! generated sequences of packs stored and deleted, multi-pack-indexes
//! written and removed, and repacks, each followed by readers, what is
//! shared lists the same packs as [`Packs::open`] and its store finds
//! every object the packs hold. Unchanged directories are shared; a
//! directory modified within [`shared::RACY`] is not.

mod support;

use proptest::prelude::*;
use refstore_hash::{ObjectFormat, ObjectId};
use refstore_odb::{shared, Packs};
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use support::{run, run_with_input};

#[derive(Clone, Debug)]
enum Change {
    /// A pack of this many new blobs.
    Store(usize),
    /// Deletes the pack at this position of the sorted listing.
    Delete(usize),
    WriteMultiPackIndex,
    RemoveMultiPackIndex,
    /// Everything into one pack, the others deleted.
    Repack,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        3 => (1usize..4).prop_map(Change::Store),
        2 => (0usize..8).prop_map(Change::Delete),
        1 => Just(Change::WriteMultiPackIndex),
        1 => Just(Change::RemoveMultiPackIndex),
        1 => Just(Change::Repack),
    ]
}

struct Repo {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    blobs: usize,
    /// Back in time the pack directory is set after each change, moving
    /// further each time, so that its signature can be trusted.
    aged: u64,
}

impl Repo {
    fn new() -> Repo {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo.git");
        std::fs::create_dir(&dir).unwrap();
        run(&dir, &["init", "-q", "--bare", "."]);
        Repo {
            _tmp: tmp,
            dir,
            blobs: 0,
            aged: 0,
        }
    }

    fn objects(&self) -> PathBuf {
        self.dir.join("objects")
    }

    fn pack_dir(&self) -> PathBuf {
        self.objects().join("pack")
    }

    fn idx_files(&self) -> Vec<PathBuf> {
        let mut found: Vec<PathBuf> = std::fs::read_dir(self.pack_dir())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "idx"))
            .collect();
        found.sort();
        found
    }

    fn apply(&mut self, change: &Change) {
        match change {
            Change::Store(n) => {
                let mut ids = String::new();
                for _ in 0..*n {
                    self.blobs += 1;
                    let content = format!("blob {}\n", self.blobs);
                    let id = run_with_input(
                        &self.dir,
                        &["hash-object", "-w", "--stdin"],
                        content.as_bytes(),
                    );
                    ids.push_str(std::str::from_utf8(&id).unwrap());
                }
                run_with_input(
                    &self.dir,
                    &["pack-objects", "-q", "objects/pack/pack"],
                    ids.as_bytes(),
                );
                run(&self.dir, &["prune-packed"]);
            }
            Change::Delete(at) => {
                let idx = self.idx_files();
                if let Some(idx) = idx.get(at % idx.len().max(1)) {
                    for ext in ["idx", "pack", "rev"] {
                        let _ = std::fs::remove_file(idx.with_extension(ext));
                    }
                }
            }
            Change::WriteMultiPackIndex => {
                if !self.idx_files().is_empty() {
                    run(&self.dir, &["multi-pack-index", "write"]);
                }
            }
            Change::RemoveMultiPackIndex => {
                let _ = std::fs::remove_file(self.pack_dir().join("multi-pack-index"));
            }
            Change::Repack => {
                run(&self.dir, &["repack", "-a", "-d", "-q"]);
            }
        }
    }

    /// Sets the pack directory's modification time back, as it is once
    /// the directory was left alone for a while.
    fn age(&mut self) {
        self.aged += 1;
        let then = SystemTime::now() - Duration::from_secs(3600 + self.aged);
        std::fs::File::open(self.pack_dir())
            .unwrap()
            .set_modified(then)
            .unwrap();
    }

    /// Every object the packs hold, read with git.
    fn packed_objects(&self) -> BTreeSet<ObjectId> {
        let mut all = BTreeSet::new();
        for idx in self.idx_files() {
            let listing = run_with_input(&self.dir, &["show-index"], &std::fs::read(&idx).unwrap());
            for line in std::str::from_utf8(&listing).unwrap().lines() {
                let hex = line.split_whitespace().nth(1).unwrap();
                all.insert(ObjectId::from_hex(hex.as_bytes()).unwrap());
            }
        }
        all
    }
}

fn listed(packs: &Packs) -> BTreeSet<PathBuf> {
    (0..packs.len() as u32)
        .map(|i| packs.pack_path(i).to_owned())
        .collect()
}

/// What is shared matches what opening anew finds, after every change.
fn check_matches_fresh(repo: &Repo) {
    let format = ObjectFormat::Sha1;
    let shared_packs = shared::shared_packs(&repo.objects(), format).unwrap();
    let fresh = Packs::open(&repo.objects(), format).unwrap();
    assert_eq!(
        listed(&shared_packs),
        listed(&fresh),
        "shared packs differ from the directory's"
    );
    let store = shared::shared_store(&repo.objects(), format).unwrap();
    let odb = refstore_odb::Odb::on_store(store, &repo.objects(), format);
    for id in repo.packed_objects() {
        assert!(
            odb.contains(&id),
            "{id} is in a pack but the shared store does not find it"
        );
        assert!(
            shared_packs.locate(&id).is_some(),
            "{id} is not located in the shared packs"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(24)
    ))]

    #[test]
    fn shared_packs_and_stores_are_what_opening_anew_finds(
        changes in prop::collection::vec((change(), any::<bool>()), 1..12)
    ) {
        let mut repo = Repo::new();
        repo.apply(&Change::Store(2));
        repo.age();
        check_matches_fresh(&repo);
        for (change, aged) in &changes {
            repo.apply(change);
            if *aged {
                repo.age();
            }
            check_matches_fresh(&repo);
            // And again, now likely from what the first reader kept.
            check_matches_fresh(&repo);
        }
    }
}

#[test]
fn an_unchanged_directory_is_shared_and_a_changed_one_is_opened_anew() {
    let format = ObjectFormat::Sha1;
    let mut repo = Repo::new();
    repo.apply(&Change::Store(2));
    repo.age();
    let first = shared::shared_packs(&repo.objects(), format).unwrap();
    let again = shared::shared_packs(&repo.objects(), format).unwrap();
    assert!(
        Arc::ptr_eq(&first, &again),
        "an unchanged directory's packs are opened again"
    );
    let store = shared::shared_store(&repo.objects(), format).unwrap();
    let store_again = shared::shared_store(&repo.objects(), format).unwrap();
    assert!(
        Arc::ptr_eq(&store, &store_again),
        "an unchanged directory's store is opened again"
    );

    repo.apply(&Change::Store(1));
    repo.age();
    let after = shared::shared_packs(&repo.objects(), format).unwrap();
    assert!(!Arc::ptr_eq(&first, &after));
    assert_eq!(after.len(), 2);

    shared::forget(&repo.objects());
    let forgotten = shared::shared_packs(&repo.objects(), format).unwrap();
    assert!(
        !Arc::ptr_eq(&after, &forgotten),
        "forget keeps what it was told to drop"
    );
}

#[test]
fn a_directory_changed_within_the_racy_interval_is_not_shared() {
    let format = ObjectFormat::Sha1;
    let mut repo = Repo::new();
    repo.apply(&Change::Store(1));
    // Just modified: a change within the same timestamp tick would leave
    // the signature as it is, so nothing is kept.
    let first = shared::shared_packs(&repo.objects(), format).unwrap();
    let again = shared::shared_packs(&repo.objects(), format).unwrap();
    assert!(!Arc::ptr_eq(&first, &again));
}

#[test]
fn a_database_with_alternates_is_not_shared() {
    let format = ObjectFormat::Sha1;
    let mut base = Repo::new();
    base.apply(&Change::Store(1));
    let mut repo = Repo::new();
    repo.apply(&Change::Store(1));
    std::fs::write(
        repo.objects().join("info/alternates"),
        format!("{}\n", base.objects().display()),
    )
    .unwrap();
    base.age();
    repo.age();
    let first = shared::shared_packs(&repo.objects(), format).unwrap();
    let again = shared::shared_packs(&repo.objects(), format).unwrap();
    assert!(!Arc::ptr_eq(&first, &again));
    assert_eq!(first.len(), 2, "the alternate's pack is listed");
}
