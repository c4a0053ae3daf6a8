//! Reachability bitmaps and commit-graphs written by git read as git reads
//! them: each stored bitmap is exactly what `git rev-list --objects` lists
//! for its commit, the type bitmaps give each object its type, the
//! commit-graph (one file, or a split chain) gives each commit the tree,
//! parents and time git prints; damaged files are errors, never wrong
//! answers. EWAH encoding round-trips and re-encodes git's own streams
//! byte for byte.

use proptest::prelude::*;
use refstore_fs::real::RealFs;
use refstore_hash::{ObjectFormat, ObjectId};
use refstore_odb::ewah::{self, Bitmap};
use refstore_odb::{BitmapIndex, CommitGraph, ObjectKind, Packs};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

#[path = "support/history.rs"]
mod history;
mod support;

use support::{run, run_with_input};

fn bare_repository(ops: &[history::Op]) -> (tempfile::TempDir, history::Writer) {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &["init", "-q", "--bare"]);
    let mut writer = history::Writer::default();
    run_with_input(dir.path(), &["fast-import", "--quiet"], &writer.stream(ops));
    (dir, writer)
}

fn objects(path: &Path) -> std::path::PathBuf {
    path.join("objects")
}

fn rev_list(path: &Path, args: &[&str]) -> BTreeSet<String> {
    let mut all = vec!["rev-list", "--objects"];
    all.extend_from_slice(args);
    run(path, &all)
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

/// Checks every stored bitmap and the type bitmaps against git; with
/// `all`, that the bitmap numbers every object of the repository.
fn check_bitmaps(path: &Path, all: bool) {
    let packs = Packs::open(&objects(path), ObjectFormat::Sha1).unwrap();
    let index = BitmapIndex::open(&RealFs::new(), &objects(path), &packs)
        .unwrap()
        .expect("git wrote a bitmap");
    let types: BTreeMap<String, String> = run(
        path,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        ],
    )
    .lines()
    .map(|l| {
        let (id, kind) = l.split_once(' ').unwrap();
        (id.to_owned(), kind.to_owned())
    })
    .collect();
    if all {
        assert_eq!(index.objects(), types.len());
    } else {
        assert!(index.objects() <= types.len());
    }
    for bit in 0..index.objects() {
        let id = packs.id(index.at_bit(bit)).to_string();
        let kind = match index.file().kind_at(bit).unwrap() {
            ObjectKind::Commit => "commit",
            ObjectKind::Tree => "tree",
            ObjectKind::Blob => "blob",
            ObjectKind::Tag => "tag",
        };
        assert_eq!(types[&id], kind, "{id}");
    }
    let mut checked = 0;
    for bit in index.commits_with_bitmaps() {
        let commit = packs.id(index.at_bit(bit)).to_string();
        let stored = index.reachable_from(bit).unwrap().unwrap();
        let ids: BTreeSet<String> = stored
            .ones()
            .map(|bit| packs.id(index.at_bit(bit)).to_string())
            .collect();
        assert_eq!(ids, rev_list(path, &[&commit]), "bitmap of {commit}");
        checked += 1;
    }
    assert!(checked > 0);
}

/// Checks every commit the graph holds against `git log`.
fn check_commit_graph(path: &Path) {
    let graph = CommitGraph::open(&RealFs::new(), &objects(path), ObjectFormat::Sha1)
        .unwrap()
        .expect("git wrote a commit-graph");
    let log = run(path, &["log", "--all", "--format=%H %T %ct %P"]);
    let mut seen = 0;
    for line in log.lines() {
        let fields: Vec<&str> = line.split(' ').filter(|f| !f.is_empty()).collect();
        let id = ObjectId::from_hex(fields[0].as_bytes()).unwrap();
        let position = graph.lookup(&id).expect("every commit is in the graph");
        assert_eq!(graph.id(position), id);
        let commit = graph.commit(position).unwrap();
        assert_eq!(commit.tree.to_string(), fields[1]);
        assert_eq!(commit.time.to_string(), fields[2]);
        let parents: Vec<String> = commit
            .parents
            .iter()
            .map(|&p| graph.id(p).to_string())
            .collect();
        assert_eq!(parents, fields[3..].to_vec());
        seen += 1;
    }
    assert_eq!(seen, graph.len() as usize);
    // An id that is no commit is not found.
    let blob = run(path, &["rev-parse", "b0:d0/f0.txt"]);
    let blob = ObjectId::from_hex(blob.as_bytes()).unwrap();
    assert_eq!(graph.lookup(&blob), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn bitmaps_and_commit_graphs_read_as_git_writes_them(
        first in prop::collection::vec(history::op(), 1..40),
        second in prop::collection::vec(history::op(), 1..20),
    ) {
        let (dir, mut writer) = bare_repository(&first);
        let path = dir.path();
        run(path, &["repack", "-adbq"]);
        run(path, &["commit-graph", "write", "--reachable"]);
        check_bitmaps(path, true);
        check_commit_graph(path);
        // More history in a second pack and a layer of a split graph; the
        // bitmap still covers its pack.
        // (fast-import leaves small imports loose, a single object even
        // with `fastimport.unpackLimit=1`: `repack -d` packs what is loose
        // into a second pack and leaves the first alone.)
        let commits_before = run(path, &["rev-list", "--all", "--count"]);
        run_with_input(
            path,
            &["-c", "fastimport.unpackLimit=1", "fast-import", "--quiet"],
            &writer.stream(&second),
        );
        run(path, &["repack", "-dq"]);
        let new_commits = run(path, &["rev-list", "--all", "--count"]) != commits_before;
        run(path, &["commit-graph", "write", "--reachable", "--split=no-merge"]);
        // git adds a layer only when there are commits the graph lacks
        // (the second stream may hold only tags or skipped merges).
        let chain = path.join("objects/info/commit-graphs/commit-graph-chain");
        prop_assert_eq!(chain.exists(), new_commits);
        if new_commits {
            std::fs::remove_file(path.join("objects/info/commit-graph")).ok();
        }
        check_commit_graph(path);
        check_bitmaps(path, second.is_empty());
        // A multi-pack index's bitmap over both packs is read in its
        // pseudo-pack order, in place of the pack's.
        run(path, &["multi-pack-index", "write", "--bitmap"]);
        let midx_bitmaps = std::fs::read_dir(path.join("objects/pack"))
            .unwrap()
            .filter(|e| {
                let name = e.as_ref().unwrap().file_name();
                let name = name.to_str().unwrap();
                name.starts_with("multi-pack-index-") && name.ends_with(".bitmap")
            })
            .count();
        prop_assert_eq!(midx_bitmaps, 1);
        check_bitmaps(path, true);
    }

    #[test]
    fn ewah_streams_roundtrip(
        runs in prop::collection::vec((any::<bool>(), 0usize..300, any::<u64>()), 0..40),
    ) {
        // Runs of clean words and literal words, as bitmaps have.
        let mut bitmap = Bitmap::new();
        let mut bit = 0;
        for (ones, length, literal) in runs {
            if ones {
                for b in bit..bit + length {
                    bitmap.set(b);
                }
                bit += length;
            }  else {
                bit += length;
            }
            for b in 0..64 {
                if literal & (1 << b) != 0 {
                    bitmap.set(bit + b);
                }
            }
            bit += 64;
        }
        let mut bytes = Vec::new();
        ewah::encode(&bitmap, &mut bytes);
        let (decoded, bits, used) = ewah::decode(&bytes).unwrap();
        prop_assert_eq!(used, bytes.len());
        prop_assert_eq!(bits, bitmap.bit_len());
        prop_assert_eq!(decoded.ones().collect::<Vec<_>>(), bitmap.ones().collect::<Vec<_>>());
        let mut again = Vec::new();
        ewah::encode(&decoded, &mut again);
        prop_assert_eq!(again, bytes);
    }
}

/// The bitmap file of the repository's only pack.
fn bitmap_file(path: &Path) -> std::path::PathBuf {
    std::fs::read_dir(path.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "bitmap"))
        .unwrap()
}

fn rewrite(file: &Path, change: impl FnOnce(&mut Vec<u8>)) {
    let mut bytes = std::fs::read(file).unwrap();
    change(&mut bytes);
    let mut permissions = std::fs::metadata(file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(file, permissions).unwrap();
    std::fs::write(file, bytes).unwrap();
}

fn small_history() -> (tempfile::TempDir, Vec<history::Op>) {
    let ops: Vec<history::Op> = (0..12)
        .map(|n| history::Op::Commit {
            branch: n % 2,
            file: n % 5,
            lines: 5 + n,
        })
        .chain([history::Op::Merge { into: 0, from: 1 }])
        .collect();
    let (dir, _) = bare_repository(&ops);
    run(dir.path(), &["repack", "-adbq"]);
    run(dir.path(), &["commit-graph", "write", "--reachable"]);
    (dir, ops)
}

#[test]
fn git_type_bitmaps_reencode_byte_for_byte() {
    let (dir, _) = small_history();
    let bytes = std::fs::read(bitmap_file(dir.path())).unwrap();
    // The four type bitmaps follow the 32-byte header of a SHA-1 bitmap.
    let mut at = 32;
    for _ in 0..4 {
        let (bitmap, _, used) = ewah::decode(&bytes[at..]).unwrap();
        let mut again = Vec::new();
        ewah::encode(&bitmap, &mut again);
        assert_eq!(again, bytes[at..at + used]);
        at += used;
    }
}

#[test]
fn damaged_bitmaps_are_errors() {
    let (dir, _) = small_history();
    let path = dir.path();
    let file = bitmap_file(path);
    let original = std::fs::read(&file).unwrap();
    let open = || {
        let packs = Packs::open(&objects(path), ObjectFormat::Sha1).unwrap();
        BitmapIndex::open(&RealFs::new(), &objects(path), &packs).map(|b| b.is_some())
    };
    assert!(open().unwrap());
    for at in [
        5,
        40,
        original.len() / 2,
        original.len() - 30,
        original.len() - 1,
    ] {
        rewrite(&file, |bytes| {
            bytes.clone_from(&original);
            bytes[at] ^= 0x10;
        });
        let error = open().unwrap_err().to_string();
        assert!(error.contains("bitmap"), "byte {at}: {error}");
    }
    for len in [0, 10, 40, original.len() - 21] {
        rewrite(&file, |bytes| {
            bytes.clone_from(&original);
            bytes.truncate(len);
        });
        assert!(open().is_err(), "cut at {len}");
    }
}

#[test]
fn damaged_commit_graphs_are_errors() {
    let (dir, _) = small_history();
    let path = dir.path();
    let file = path.join("objects/info/commit-graph");
    let original = std::fs::read(&file).unwrap();
    let open = || CommitGraph::open(&RealFs::new(), &objects(path), ObjectFormat::Sha1);
    assert!(open().unwrap().is_some());
    for at in [0, 5, 20, 100, original.len() / 2, original.len() - 1] {
        rewrite(&file, |bytes| {
            bytes.clone_from(&original);
            bytes[at] ^= 0x01;
        });
        let error = open().unwrap_err().to_string();
        assert!(error.contains("commit-graph"), "byte {at}: {error}");
    }
    for len in [0, 7, 100, original.len() - 1] {
        rewrite(&file, |bytes| {
            bytes.clone_from(&original);
            bytes.truncate(len);
        });
        assert!(open().is_err(), "cut at {len}");
    }
    // A SHA-256 repository's graph is not read as SHA-1's.
    rewrite(&file, |bytes| bytes.clone_from(&original));
    assert!(CommitGraph::open(&RealFs::new(), &objects(path), ObjectFormat::Sha256).is_err());
}
