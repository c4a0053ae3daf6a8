//! upload-pack counts with git's reachability bitmaps (and walks commits
//! through the commit-graph) when the repository has them: the pack holds
//! exactly what is reachable from the wants and not from the common
//! commits, over random histories with objects both inside and outside
//! the bitmapped pack, with pack and multi-pack index bitmaps; a clone is what git's own clone receives and passes
//! `git fsck --strict`; a damaged bitmap or commit-graph is left aside and
//! the objects are walked, so the pack is still right.

use proptest::prelude::*;
use refstore_fs::real::RealFs;
use refstore_protocol::upload_pack::{upload_pack, Options};
use refstore_protocol::{ProtocolVersion, Repository};
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

#[path = "../../refstore-odb/tests/support/history.rs"]
mod history;
mod support;
use support::{git, git_in};

/// The pack a v2 fetch of `wants` with `haves` (and `done`) answers.
fn fetch(dir: &Path, wants: &[String], haves: &[String]) -> Vec<u8> {
    let mut arguments: Vec<String> = wants.iter().map(|w| format!("want {w}")).collect();
    arguments.extend(haves.iter().map(|h| format!("have {h}")));
    arguments.push("done".into());
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let input = support::fetch_request(&arguments);
    let repo = refstore_repo::Repository::open(Arc::new(RealFs::new()), dir, &[])
        .and_then(Repository::serve)
        .unwrap();
    let options = Options {
        stateless_rpc: true,
        advertise_refs: false,
        version: ProtocolVersion::V2,
    };
    let mut response = Vec::new();
    upload_pack(&repo, &options, &mut &input[..], &mut response).unwrap();
    support::v2_pack(&response)
}

/// Indexes `pack` in a new repository (git checks every entry); with
/// `refs` (a complete pack), sets them and runs `git fsck --strict`. The
/// ids it holds.
fn received(pack: &[u8], refs: Option<&[(String, String)]>) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "--bare"]);
    let pack_file = path.join("objects/pack/received.pack");
    std::fs::write(&pack_file, pack).unwrap();
    // --strict also wants every object a sent one names: only for
    // complete packs.
    let strict = if refs.is_some() { "--strict" } else { "-v" };
    git(path, &["index-pack", strict, pack_file.to_str().unwrap()]);
    if let Some(refs) = refs {
        for (name, id) in refs {
            git(path, &["update-ref", name, id]);
        }
        git(path, &["fsck", "--strict", "--no-dangling"]);
    }
    objects_of(path)
}

fn objects_of(path: &Path) -> BTreeSet<String> {
    git(
        path,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    )
    .lines()
    .map(str::to_owned)
    .collect()
}

fn reachable(path: &Path, tips: &[String]) -> BTreeSet<String> {
    if tips.is_empty() {
        return BTreeSet::new();
    }
    let mut args = vec!["rev-list", "--objects"];
    args.extend(tips.iter().map(String::as_str));
    git(path, &args)
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

fn refs(path: &Path) -> Vec<(String, String)> {
    git(path, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .map(|l| {
            let (name, id) = l.split_once(' ').unwrap();
            (name.to_owned(), id.to_owned())
        })
        .collect()
}

fn bitmap_files(path: &Path) -> Vec<std::path::PathBuf> {
    std::fs::read_dir(path.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "bitmap"))
        .collect()
}

fn damage(file: &Path, at: usize) {
    let mut bytes = std::fs::read(file).unwrap();
    let at = at.min(bytes.len() - 1);
    bytes[at] ^= 0x04;
    let mut permissions = std::fs::metadata(file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(file, permissions).unwrap();
    std::fs::write(file, bytes).unwrap();
}

/// A bare repository of the random history `first`, repacked with a
/// bitmap, then `second` (loose objects, or a pack of its own if `midx`);
/// with a commit-graph if
/// `graph`, and a multi-pack index with its bitmap over both packs if
/// `midx`.
fn repository(
    first: &[history::Op],
    second: &[history::Op],
    graph: bool,
    midx: bool,
) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "--bare"]);
    let mut writer = history::Writer::default();
    git_in(path, &["fast-import", "--quiet"], &writer.stream(first));
    git(path, &["repack", "-adbq"]);
    // fast-import leaves small imports loose: a second pack only for the
    // multi-pack index.
    let limit = if midx {
        "fastimport.unpackLimit=1"
    } else {
        "fastimport.unpackLimit=100"
    };
    git_in(
        path,
        &["-c", limit, "fast-import", "--quiet"],
        &writer.stream(second),
    );
    if graph {
        git(path, &["commit-graph", "write", "--reachable"]);
    }
    if midx {
        git(path, &["multi-pack-index", "write", "--bitmap"]);
    }
    assert_eq!(bitmap_files(path).len(), 1 + usize::from(midx));
    dir
}

fn pick(all: &[String], picks: &[prop::sample::Index]) -> Vec<String> {
    let mut chosen: Vec<String> = picks.iter().map(|i| i.get(all).clone()).collect();
    chosen.sort();
    chosen.dedup();
    chosen
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 10, ..ProptestConfig::default() })]

    #[test]
    fn bitmap_counts_exactly_what_the_wants_reach_beyond_the_haves(
        first in prop::collection::vec(history::op(), 1..30),
        second in prop::collection::vec(history::op(), 0..12),
        graph in any::<bool>(),
        midx in any::<bool>(),
        wants in prop::collection::vec(any::<prop::sample::Index>(), 1..4),
        haves in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
    ) {
        let dir = repository(&first, &second, graph, midx);
        let path = dir.path();
        let tips: Vec<String> = refs(path).into_iter().map(|(_, id)| id).collect();
        let commits: Vec<String> =
            git(path, &["rev-list", "--all"]).lines().map(str::to_owned).collect();
        let wants = pick(&tips, &wants);
        let haves = pick(&commits, &haves);

        let sent = received(&fetch(path, &wants, &haves), None);
        let expected: BTreeSet<String> = reachable(path, &wants)
            .difference(&reachable(path, &haves))
            .cloned()
            .collect();
        prop_assert_eq!(&sent, &expected);

        // The walk without the bitmap sends at least as much, and the
        // same when the client has nothing.
        for bitmap in bitmap_files(path) {
            std::fs::remove_file(bitmap).unwrap();
        }
        let walked = received(&fetch(path, &wants, &haves), None);
        prop_assert!(walked.is_superset(&sent));
        prop_assert!(walked.is_subset(&reachable(path, &wants)));
        if haves.is_empty() {
            prop_assert_eq!(&walked, &sent);
        }
    }
}

#[test]
fn a_clone_from_a_bitmapped_repository_is_what_git_sends() {
    let first: Vec<history::Op> = (0..30u8)
        .map(|n| match n % 7 {
            3 => history::Op::Merge {
                into: n % 3,
                from: (n + 1) % 3,
            },
            5 => history::Op::Tag { branch: n % 3 },
            _ => history::Op::Commit {
                branch: n % 3,
                file: n % 6,
                lines: 3 + n,
            },
        })
        .collect();
    let second = [
        history::Op::Commit {
            branch: 1,
            file: 2,
            lines: 50,
        },
        history::Op::Tag { branch: 1 },
    ];
    let dir = repository(&first, &second, true, false);
    let path = dir.path();
    let refs = refs(path);
    let wants: Vec<String> = refs.iter().map(|(_, id)| id.clone()).collect();

    let clone = tempfile::tempdir().unwrap();
    let url = format!("file://{}", path.display());
    git(
        clone.path(),
        &["clone", "-q", "--bare", "--no-local", &url, "theirs.git"],
    );
    let theirs = objects_of(&clone.path().join("theirs.git"));

    let ours = received(&fetch(path, &wants, &[]), Some(&refs));
    assert_eq!(ours, theirs);
    assert_eq!(ours, reachable(path, &wants));
}

#[test]
fn objects_the_client_has_off_the_wanted_history_are_left_out() {
    // Two unrelated histories sharing a file: with the bitmap, what the
    // client has through its commit is left out even though that commit
    // is no ancestor of the want; the walk, which judges by the boundary
    // of the wanted history, sends it.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "--bare"]);
    let shared = "a file both histories hold\n".repeat(20);
    let mut stream = String::new();
    for (branch, other) in [("a", "one"), ("b", "two")] {
        stream.push_str(&format!(
            "commit refs/heads/{branch}\ncommitter C <c@example.com> 1700000000 +0000\n\
             data 2\n{branch}\nM 100644 inline shared.txt\ndata {}\n{shared}\n\
             M 100644 inline {other}.txt\ndata 4\n{other}\n\n",
            shared.len()
        ));
    }
    git_in(path, &["fast-import", "--quiet"], stream.as_bytes());
    git(path, &["repack", "-adbq"]);
    let want = git(path, &["rev-parse", "a"]);
    let have = git(path, &["rev-parse", "b"]);
    let blob = git(path, &["rev-parse", "a:shared.txt"]);

    let (wants, haves) = ([want], [have]);
    let sent = received(&fetch(path, &wants, &haves), None);
    assert!(!sent.contains(&blob));
    assert_eq!(sent.len(), 3, "{sent:?}"); // commit, tree, one.txt

    for bitmap in bitmap_files(path) {
        std::fs::remove_file(bitmap).unwrap();
    }
    let walked = received(&fetch(path, &wants, &haves), None);
    assert!(walked.contains(&blob));
}

#[test]
fn a_damaged_bitmap_or_commit_graph_is_left_aside_and_objects_walked() {
    let first: Vec<history::Op> = (0..20u8)
        .map(|n| history::Op::Commit {
            branch: n % 2,
            file: n % 4,
            lines: 2 + n,
        })
        .collect();
    let dir = repository(&first, &[], true, false);
    let path = dir.path();
    let refs = refs(path);
    let wants: Vec<String> = refs.iter().map(|(_, id)| id.clone()).collect();
    let expected = reachable(path, &wants);
    assert_eq!(received(&fetch(path, &wants, &[]), Some(&refs)), expected);

    let bitmap = bitmap_files(path).pop().unwrap();
    let size = std::fs::metadata(&bitmap).unwrap().len() as usize;
    for at in [40, size / 2, size - 25] {
        damage(&bitmap, at);
        assert_eq!(received(&fetch(path, &wants, &[]), Some(&refs)), expected);
        damage(&bitmap, at);
    }
    // The graph damaged, with the bitmap and without it.
    let graph = path.join("objects/info/commit-graph");
    let size = std::fs::metadata(&graph).unwrap().len() as usize;
    for at in [10, size / 2, size - 3] {
        damage(&graph, at);
        assert_eq!(received(&fetch(path, &wants, &[]), Some(&refs)), expected);
        damage(&bitmap, 40);
        assert_eq!(received(&fetch(path, &wants, &[]), Some(&refs)), expected);
        damage(&bitmap, 40);
        damage(&graph, at);
    }
}
