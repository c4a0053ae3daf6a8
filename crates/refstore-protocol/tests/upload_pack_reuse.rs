//! Packs sent by upload-pack copy stored pack entries: whole objects and
//! deltas (offset and reference deltas) whose base is sent too, checked
//! against the CRC32 of their `.idx`. The received packs are checked by
//! git (index-pack, verify-pack, fsck --strict); the "Total" progress line
//! shows how many entries were copied.

use refstore_fs::flush::FlushMethod;
use refstore_fs::real::RealFs;
use refstore_odb::{LooseWriter, ObjectKind, Packs, StoredKind};
use refstore_refs::ObjectFormat;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

mod support;
use support::{git, git_in};

/// Commits `count` versions of a few growing files, numbered from `from`.
fn commit_versions(path: &Path, from: usize, count: usize) {
    std::fs::create_dir_all(path.join("src")).unwrap();
    for commit in from..from + count {
        for file in 0..3 {
            let name = path.join(format!("src/file{file}.txt"));
            let mut text = std::fs::read_to_string(&name).unwrap_or_default();
            for line in 0..20 {
                text.push_str(&format!(
                    "commit {commit}, file {file}, line {line}: some text that repeats\n"
                ));
            }
            std::fs::write(&name, text).unwrap();
        }
        git(path, &["add", "-A"]);
        git(path, &["commit", "-q", "-m", &format!("commit {commit}")]);
    }
}

/// The answer to a v2 fetch of `want` from `dir`: the result, the pack
/// (empty when the fetch fails) and the progress text.
fn fetch(dir: &Path, want: &str) -> (Result<(), String>, Vec<u8>, String) {
    support::served_fetch(dir, &[&format!("want {want}"), "done"])
}

/// `(reused, reused deltas)` from git's "Total" line.
fn reuse_counts(progress: &str) -> (usize, usize) {
    let [_, _, reused, reused_deltas, _] = support::total_line(progress);
    (reused, reused_deltas)
}

/// Stores `pack` in a new bare repository with `main` at `tip`, checks it
/// with `git verify-pack` and `git fsck --strict`, and returns the ids it
/// holds.
fn check_received(pack: &[u8], tip: &str) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "--bare"]);
    let pack_file = path.join("objects/pack/received.pack");
    std::fs::write(&pack_file, pack).unwrap();
    git(path, &["index-pack", pack_file.to_str().unwrap()]);
    git(path, &["verify-pack", pack_file.to_str().unwrap()]);
    git(path, &["update-ref", "refs/heads/main", tip]);
    git(path, &["fsck", "--strict", "--no-dangling"]);
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

fn reachable(path: &Path, tip: &str) -> BTreeSet<String> {
    git(path, &["rev-list", "--objects", tip])
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

fn loose_count(path: &Path) -> usize {
    let counts = git(path, &["count-objects", "-v"]);
    counts
        .lines()
        .find_map(|l| l.strip_prefix("count: "))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_clone_copies_stored_offset_and_reference_deltas_and_sends_loose_objects() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    // History in a pack of offset deltas.
    commit_versions(path, 0, 15);
    git(path, &["repack", "-adq"]);
    let first_pack_tip = git(path, &["rev-parse", "main"]);
    // More history in a pack of reference deltas (pack-objects writes
    // them without --delta-base-offset).
    commit_versions(path, 15, 10);
    let objects = git(
        path,
        &[
            "rev-list",
            "--objects",
            "main",
            &format!("^{first_pack_tip}"),
        ],
    );
    git_in(
        path,
        &["pack-objects", "-q", ".git/objects/pack/pack"],
        objects.as_bytes(),
    );
    git(path, &["prune-packed"]);
    // And loose objects on top.
    commit_versions(path, 25, 3);
    let tip = git(path, &["rev-parse", "main"]);
    let loose = loose_count(path);
    assert!(loose > 0);

    // The stored packs hold both kinds of delta.
    let packs = Packs::open(&path.join(".git/objects"), ObjectFormat::Sha1).unwrap();
    assert_eq!(packs.len(), 2);
    let (mut ofs, mut refs) = (0, 0);
    for pack in 0..packs.len() as u32 {
        for position in 0..packs.objects_in(pack) {
            let at = refstore_odb::PackedAt { pack, position };
            let entry = packs.entry(at).unwrap();
            assert!(packs.crc_matches(at, &entry));
            match entry.kind {
                StoredKind::OfsDelta { .. } => ofs += 1,
                StoredKind::RefDelta { .. } => refs += 1,
                StoredKind::Whole(_) => {}
            }
        }
    }
    assert!(
        ofs > 10 && refs > 10,
        "{ofs} offset deltas, {refs} ref deltas"
    );

    let (result, pack, progress) = fetch(path, &tip);
    result.unwrap();
    let expected = reachable(path, &tip);
    assert_eq!(check_received(&pack, &tip), expected);
    // Every packed object is copied, every stored delta as a delta.
    let (reused, reused_deltas) = reuse_counts(&progress);
    assert_eq!(reused, expected.len() - loose, "{progress}");
    assert_eq!(reused_deltas, ofs + refs, "{progress}");
    assert!(progress.contains(&format!(
        "Counting objects: 100% ({0}/{0}), done.",
        expected.len()
    )));

    // A fetch of part of the history: deltas whose base is not sent are
    // compressed afresh, and the pack is still complete.
    let old = git(path, &["rev-parse", "main~20"]);
    let (result, pack, _) = fetch(path, &old);
    result.unwrap();
    assert_eq!(check_received(&pack, &old), reachable(path, &old));
}

/// A repository whose packed blob has a damaged byte in its compressed
/// data; the blob's content and id.
fn damaged_repository() -> (tempfile::TempDir, Vec<u8>, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    let content: Vec<u8> = (0..400)
        .flat_map(|i| format!("line {i} of a file that will be damaged\n").into_bytes())
        .collect();
    std::fs::write(path.join("victim.txt"), &content).unwrap();
    std::fs::write(path.join("other.txt"), "fine\n").unwrap();
    git(path, &["add", "-A"]);
    git(path, &["commit", "-q", "-m", "one"]);
    git(path, &["repack", "-adq"]);
    let blob = git(path, &["rev-parse", "main:victim.txt"]);
    let pack_dir = path.join(".git/objects/pack");
    let index = std::fs::read_dir(&pack_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "idx"))
        .unwrap();
    let listing = git(path, &["verify-pack", "-v", index.to_str().unwrap()]);
    let fields: Vec<&str> = listing
        .lines()
        .find(|l| l.starts_with(&blob))
        .unwrap()
        .split_whitespace()
        .collect();
    // id type size size-in-pack offset
    let (in_pack, offset): (usize, usize) =
        (fields[3].parse().unwrap(), fields[4].parse().unwrap());
    let pack_file = index.with_extension("pack");
    let mut bytes = std::fs::read(&pack_file).unwrap();
    bytes[offset + in_pack / 2] ^= 0x40;
    let mut permissions = std::fs::metadata(&pack_file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&pack_file, permissions).unwrap();
    std::fs::write(&pack_file, &bytes).unwrap();
    (dir, content, blob)
}

#[test]
fn a_damaged_stored_entry_fails_the_fetch_on_band_3_without_another_copy() {
    let (dir, _, blob) = damaged_repository();
    let tip = git(dir.path(), &["rev-parse", "main"]);
    let (result, _, _) = fetch(dir.path(), &tip);
    let error = result.unwrap_err();
    assert!(error.contains(&blob), "{error}");
    assert!(error.contains("damaged"), "{error}");
}

#[test]
fn a_damaged_stored_entry_is_sent_from_a_loose_copy() {
    let (dir, content, blob) = damaged_repository();
    let path = dir.path();
    let mut writer = LooseWriter::new(
        Arc::new(RealFs::new()),
        path.join(".git/objects"),
        ObjectFormat::Sha1,
        FlushMethod::None,
    );
    assert_eq!(
        writer
            .write(ObjectKind::Blob, &content)
            .unwrap()
            .to_string(),
        blob
    );
    writer.commit().unwrap();
    let tip = git(path, &["rev-parse", "main"]);
    let (result, pack, progress) = fetch(path, &tip);
    result.unwrap();
    let expected = reachable(path, &tip);
    assert_eq!(check_received(&pack, &tip), expected);
    // All but the damaged blob were copied.
    assert_eq!(reuse_counts(&progress).0, expected.len() - 1, "{progress}");
}

#[test]
fn a_large_loose_blob_is_sent_streamed_and_whole() {
    // Larger than any delta candidate: it is inflated and compressed again
    // in pieces, never held.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    let content: String = (0..400_000)
        .map(|i| format!("line {i} of a large file\n"))
        .collect();
    assert!(content.len() > 8 << 20);
    std::fs::write(path.join("large.txt"), &content).unwrap();
    git(path, &["add", "-A"]);
    git(path, &["commit", "-q", "-m", "large"]);
    assert_eq!(loose_count(path), 3);
    let tip = git(path, &["rev-parse", "main"]);
    let (result, pack, progress) = fetch(path, &tip);
    result.unwrap();
    assert_eq!(check_received(&pack, &tip), reachable(path, &tip));
    assert_eq!(reuse_counts(&progress), (0, 0), "{progress}");
}
