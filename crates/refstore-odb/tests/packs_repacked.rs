//! Opening the packs of a repository a repack is changing: the packs a
//! reader listed (from the directory, or from the `multi-pack-index` it
//! read) may be deleted before it opens them, their objects moved into a
//! pack it did not list. [`Packs::open`] looks again, as git re-reads its
//! pack directory, and leaves out a pack that is gone for good.

mod support;

use refstore_hash::{ObjectFormat, ObjectId};
use refstore_odb::Packs;
use std::path::Path;
use support::run;

fn pack_names(pack_dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(pack_dir)
        .unwrap()
        .filter_map(|e| {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            name.strip_suffix(".idx").map(str::to_owned)
        })
        .collect();
    names.sort();
    names
}

/// The state a reader meets when a repack rolled the packs a
/// `multi-pack-index` names into a new pack and deleted them, and the
/// index naming them is the one the reader read: every object is still
/// found, in the new pack.
#[test]
fn packs_a_multi_pack_index_names_but_a_repack_deleted_are_left_out() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, &["init", "-q", "."]);
    for i in 0..2 {
        std::fs::write(dir.join(format!("f{i}")), format!("content {i}\n")).unwrap();
        run(dir, &["add", "."]);
        run(dir, &["commit", "-q", "-m", &format!("c{i}")]);
        run(dir, &["repack", "-q"]);
    }
    let pack_dir = dir.join(".git/objects/pack");
    let old = pack_names(&pack_dir);
    assert_eq!(old.len(), 2);
    run(dir, &["multi-pack-index", "write"]);
    // The repack: one new pack with everything, then the old ones go.
    support::run_with_input(
        dir,
        &["pack-objects", "-q", "--all", ".git/objects/pack/pack"],
        b"",
    );
    for name in &old {
        for ext in ["idx", "pack", "rev"] {
            let _ = std::fs::remove_file(pack_dir.join(format!("{name}.{ext}")));
        }
    }
    assert!(pack_dir.join("multi-pack-index").exists());

    let packs = Packs::open(&dir.join(".git/objects"), ObjectFormat::Sha1)
        .expect("the packs that are there open");
    assert_eq!(packs.len(), 1);
    let all = run(dir, &["rev-list", "--objects", "--all"]);
    for line in all.lines() {
        let id = ObjectId::from_hex(&line.as_bytes()[..40]).unwrap();
        assert!(packs.locate(&id).is_some(), "{id} is not found");
    }
}

/// A store opened on a repository with one pack (a housekeeping run, a
/// long fetch) while pushes add hundreds: an object in the newest pack is
/// still found. gix sizes a store's table of indexes when it opens and
/// cannot grow it; with room for only the packs there were, listing the
/// new ones failed ("too few index slots").
#[test]
fn a_store_opened_before_hundreds_of_pushes_finds_their_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    run(dir, &["init", "-q", "--bare", "."]);
    let commit = |n: usize| {
        let blob = support::run_with_input(
            dir,
            &["hash-object", "-w", "--stdin"],
            format!("{n}\n").as_bytes(),
        );
        let blob = String::from_utf8(blob).unwrap();
        let tree = support::run_with_input(
            dir,
            &["mktree"],
            format!("100644 blob {}\tf\n", blob.trim()).as_bytes(),
        );
        String::from_utf8(tree).unwrap().trim().to_owned()
    };
    let pack_one = |id: &str| {
        support::run_with_input(
            dir,
            &["pack-objects", "-q", "objects/pack/pack"],
            format!("{id}\n").as_bytes(),
        );
    };
    pack_one(&commit(0));
    let odb = refstore_odb::Odb::open(&dir.join("objects"), ObjectFormat::Sha1).unwrap();
    let mut newest = String::new();
    for n in 1..=300 {
        newest = commit(n);
        pack_one(&newest);
    }
    // Loose copies gone: only the packs hold them.
    run(dir, &["prune-packed"]);
    let id = ObjectId::from_hex(newest.as_bytes()).unwrap();
    assert!(odb.contains(&id), "{newest} not found in the 301 packs");
}
