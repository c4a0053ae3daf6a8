//! A fetch whose objects begin with the first entries of a stored pack
//! (a count with a pack's or a multi-pack index's bitmap lists them so)
//! is sent that stretch of the pack as stored (and the first entries of
//! the packs a multi-pack index numbers after it), the rest written after;
//! a clone of a pack with all of its objects is the stored pack byte for
//! byte. Over random histories: the received packs pass `git index-pack
//! --strict` and `git fsck --strict` and hold exactly what the wants
//! reach; the "pack-reused" progress count is the stretch copied; an
//! entry damaged inside the stretch is never sent (another copy is, or
//! the fetch fails on band 3).

use refstore_fs::flush::FlushMethod;
use refstore_fs::real::RealFs;
use refstore_odb::{LooseWriter, ObjectKind};
use refstore_refs::ObjectFormat;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

mod support;
use support::git;

/// A small deterministic generator, so that a failing seed can be rerun.
struct Random(u64);

impl Random {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) % n
    }
}

/// Commits `commits` random changes in the work tree at `path` (on the
/// branch checked out): files of random sizes under a few directories,
/// edited (deltas), rewritten or added; an annotated tag now and then.
/// `date` is the committer date of the first commit, one minute apart.
fn random_commits(path: &Path, random: &mut Random, commits: usize, date: u64, label: &str) {
    for c in 0..commits {
        for _ in 0..1 + random.below(3) {
            let dir = format!("d{}", random.below(3));
            let file = path.join(&dir).join(format!("f{}.txt", random.below(6)));
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            let mut text = match random.below(4) {
                0 => String::new(),
                _ => std::fs::read_to_string(&file).unwrap_or_default(),
            };
            for line in 0..1 + random.below(200) {
                text.push_str(&format!(
                    "{label} {c} line {line}: {} words that repeat\n",
                    random.below(1000)
                ));
            }
            std::fs::write(&file, text).unwrap();
        }
        git(path, &["add", "-A"]);
        let when = format!("{} +0000", date + 60 * c as u64);
        support::git_with(
            path,
            &["commit", "-q", "-m", &format!("{label} {c}")],
            &[("GIT_COMMITTER_DATE", &when), ("GIT_AUTHOR_DATE", &when)],
            b"",
        );
        if random.below(8) == 0 {
            git(path, &["tag", "-a", &format!("{label}-{c}"), "-m", "a tag"]);
        }
    }
}

/// A work repository with a random history of `commits` commits on
/// `main`, and a bare copy of it (no index, no reflogs: its packs hold
/// exactly what its refs reach).
fn random_repository(seed: u64, commits: usize) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    let bare = dir.path().join("bare.git");
    std::fs::create_dir_all(&work).unwrap();
    git(&work, &["init", "-q", "-b", "main"]);
    random_commits(&work, &mut Random(seed), commits, 1_600_000_000, "main");
    git(
        dir.path(),
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            work.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    (dir, work, bare)
}

/// The answer to a v2 fetch of `wants` from `dir`: the result, the pack
/// (empty when the fetch fails) and the progress text.
fn fetch(dir: &Path, wants: &[String]) -> (Result<(), String>, Vec<u8>, String) {
    fetch_with(dir, wants, &["ofs-delta", "include-tag", "done"])
}

/// [`fetch`], with `options` after the wants.
fn fetch_with(
    dir: &Path,
    wants: &[String],
    options: &[&str],
) -> (Result<(), String>, Vec<u8>, String) {
    let mut arguments: Vec<String> = wants.iter().map(|w| format!("want {w}")).collect();
    arguments.extend(options.iter().map(|o| o.to_string()));
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    support::served_fetch(dir, &arguments)
}

/// `(total, pack-reused)` from git's "Total" progress line.
fn counts(progress: &str) -> (usize, usize) {
    let [total, _, _, _, pack_reused] = support::total_line(progress);
    (total, pack_reused)
}

/// Stores `pack` in a new repository through `git index-pack --strict`,
/// sets `refs` and runs `git fsck --strict`: the ids it holds.
fn received(pack: &[u8], refs: &[(String, String)]) -> BTreeSet<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "--bare"]);
    let pack_file = path.join("objects/pack/received.pack");
    std::fs::write(&pack_file, pack).unwrap();
    git(
        path,
        &["index-pack", "--strict", pack_file.to_str().unwrap()],
    );
    for (name, id) in refs {
        git(path, &["update-ref", name, id]);
    }
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

fn refs(path: &Path) -> Vec<(String, String)> {
    git(path, &["for-each-ref", "--format=%(refname) %(objectname)"])
        .lines()
        .map(|l| {
            let (name, id) = l.split_once(' ').unwrap();
            (name.to_owned(), id.to_owned())
        })
        .collect()
}

fn tips(refs: &[(String, String)]) -> Vec<String> {
    refs.iter().map(|(_, id)| id.clone()).collect()
}

fn reachable(path: &Path, tips: &[String]) -> BTreeSet<String> {
    let mut args = vec!["rev-list", "--objects"];
    args.extend(tips.iter().map(String::as_str));
    git(path, &args)
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

fn files_ending(path: &Path, extension: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(path.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect();
    files.sort();
    files
}

/// The entries of the pack of `index`, in stored order: `(id, offset,
/// size in the pack)`.
fn entries(bare: &Path, index: &Path) -> Vec<(String, usize, usize)> {
    let listing = git(bare, &["verify-pack", "-v", index.to_str().unwrap()]);
    let mut entries: Vec<(String, usize, usize)> = listing
        .lines()
        .filter_map(|l| {
            let fields: Vec<&str> = l.split_whitespace().collect();
            // id type size size-in-pack offset [depth base]
            (fields.len() >= 5 && fields[0].len() == 40).then(|| {
                (
                    fields[0].to_owned(),
                    fields[4].parse().unwrap(),
                    fields[3].parse().unwrap(),
                )
            })
        })
        .collect();
    entries.sort_by_key(|e| e.1);
    entries
}

#[test]
fn a_clone_of_a_bitmapped_pack_is_the_stored_pack_byte_for_byte() {
    for seed in 1..=3 {
        let (_dir, _work, bare) = random_repository(seed, 15 + 10 * seed as usize);
        git(&bare, &["repack", "-adbq"]);
        let refs = refs(&bare);
        let (result, pack, progress) = fetch(&bare, &tips(&refs));
        result.unwrap();
        let stored = std::fs::read(&files_ending(&bare, "pack")[0]).unwrap();
        assert!(pack == stored, "seed {seed}: not the stored pack");
        let expected = reachable(&bare, &tips(&refs));
        assert_eq!(received(&pack, &refs), expected, "seed {seed}");
        assert_eq!(counts(&progress), (expected.len(), expected.len()));
    }
}

/// A client that did not ask for `ofs-delta` cannot read the stored
/// pack's offset deltas: nothing is reused as stored, and every delta
/// names its base by id.
#[test]
fn a_client_without_ofs_delta_gets_no_stored_stretch_and_no_offset_delta() {
    for seed in 1..=3 {
        let (_dir, _work, bare) = random_repository(seed, 20 + 10 * seed as usize);
        git(&bare, &["repack", "-adbq"]);
        let refs = refs(&bare);
        let (result, pack, progress) = fetch_with(&bare, &tips(&refs), &["done"]);
        result.unwrap();
        let expected = reachable(&bare, &tips(&refs));
        assert_eq!(received(&pack, &refs), expected, "seed {seed}");
        assert_eq!(counts(&progress), (expected.len(), 0), "seed {seed}");
        let dir = tempfile::tempdir().unwrap();
        let pack_file = dir.path().join("sent.pack");
        std::fs::write(&pack_file, &pack).unwrap();
        git(dir.path(), &["init", "-q", "--bare"]);
        git(
            dir.path(),
            &["index-pack", "-o", "sent.idx", pack_file.to_str().unwrap()],
        );
        let listed = entries(dir.path(), &dir.path().join("sent.idx"));
        assert_eq!(listed.len(), expected.len(), "seed {seed}");
        let offset_deltas = pack_entry_types(&pack, &listed).filter(|&t| t == 6).count();
        let ref_deltas = pack_entry_types(&pack, &listed).filter(|&t| t == 7).count();
        assert_eq!(offset_deltas, 0, "seed {seed}: offset deltas sent unasked");
        assert!(
            ref_deltas > 0,
            "seed {seed}: the stored deltas were not kept"
        );
    }
}

/// The type of each entry of `pack`, at the offsets `entries` lists.
fn pack_entry_types<'a>(
    pack: &'a [u8],
    entries: &'a [(String, usize, usize)],
) -> impl Iterator<Item = u8> + 'a {
    entries
        .iter()
        .map(|(_, offset, _)| (pack[*offset] >> 4) & 7)
}

#[test]
fn a_bitmapped_pack_is_reused_and_loose_objects_are_written_after_it() {
    for seed in 4..=5 {
        let (_dir, work, bare) = random_repository(seed, 20);
        git(&bare, &["repack", "-adbq"]);
        let packed = entries(&bare, &files_ending(&bare, "idx")[0]).len();
        // Newer history pushed on top: loose objects.
        random_commits(&work, &mut Random(seed + 100), 4, 1_700_000_000, "more");
        git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
        let refs = refs(&bare);
        let (result, pack, progress) = fetch(&bare, &tips(&refs));
        result.unwrap();
        let expected = reachable(&bare, &tips(&refs));
        assert!(expected.len() > packed);
        assert_eq!(received(&pack, &refs), expected, "seed {seed}");
        assert_eq!(counts(&progress), (expected.len(), packed), "{progress}");
    }
}

/// A random repository in two packs (the second of `later` commits) under
/// a multi-pack index with a bitmap, the first pack preferred: the
/// repository and the two packs' indexes, preferred first.
fn two_packs_with_midx(
    seed: u64,
    later: usize,
) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf, PathBuf) {
    let (dir, work, bare) = random_repository(seed, 20);
    git(&bare, &["repack", "-adq"]);
    let first = files_ending(&bare, "idx")[0].clone();
    random_commits(&work, &mut Random(seed + 100), later, 1_700_000_000, "more");
    git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
    // The pushed objects in a second pack.
    git(&bare, &["repack", "-dq"]);
    assert_eq!(files_ending(&bare, "pack").len(), 2);
    let name = first.with_extension("pack");
    git(
        &bare,
        &[
            "multi-pack-index",
            "write",
            "--bitmap",
            &format!(
                "--preferred-pack={}",
                name.file_name().unwrap().to_str().unwrap()
            ),
        ],
    );
    let other = files_ending(&bare, "idx")
        .into_iter()
        .find(|index| *index != first)
        .unwrap();
    (dir, work, bare, first, other)
}

#[test]
fn a_multi_pack_index_bitmap_reuses_its_packs_preferred_first() {
    for seed in 6..=7 {
        let (_dir, work, bare, first, other) = two_packs_with_midx(seed, 6);
        let preferred = entries(&bare, &first).len();
        let second = entries(&bare, &other).len();
        // And loose objects the index does not cover.
        random_commits(&work, &mut Random(seed + 200), 2, 1_800_000_000, "last");
        git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
        let refs = refs(&bare);
        let (result, pack, progress) = fetch(&bare, &tips(&refs));
        result.unwrap();
        let expected = reachable(&bare, &tips(&refs));
        assert!(expected.len() > preferred + second);
        assert_eq!(received(&pack, &refs), expected, "seed {seed}");
        // Both packs copied in one piece each, the loose objects after.
        assert_eq!(
            counts(&progress),
            (expected.len(), preferred + second),
            "{progress}"
        );
    }
}

#[test]
fn a_fetch_of_one_branch_reuses_the_leading_stretch_it_wants() {
    for seed in 8..=9 {
        let (_dir, work, bare) = random_repository(seed, 20);
        // A branch of old commits (stored after main's, which are newer)
        // that the fetch does not want.
        git(&work, &["checkout", "-q", "--orphan", "old"]);
        git(&work, &["rm", "-rfq", "."]);
        random_commits(&work, &mut Random(seed + 100), 5, 1_000_000_000, "old");
        git(&work, &["push", "-q", bare.to_str().unwrap(), "old"]);
        git(&bare, &["repack", "-adbq"]);
        let main = git(&bare, &["rev-parse", "main"]);
        let (result, pack, progress) = fetch(&bare, std::slice::from_ref(&main));
        result.unwrap();
        let refs = vec![("refs/heads/main".to_owned(), main.clone())];
        // include-tag: the tags of main's history come along, added after
        // the count.
        let mut tagged = vec![main];
        for tag in git(&bare, &["tag", "--merged", "main"]).lines() {
            tagged.push(git(&bare, &["rev-parse", tag]));
        }
        let expected = reachable(&bare, &tagged);
        assert_eq!(received(&pack, &refs), expected, "seed {seed}");
        let (total, reused) = counts(&progress);
        assert_eq!(total, expected.len());
        assert!(reused > 0 && reused < total, "{progress}");
    }
}

/// Flips a bit in the middle of the entry of rank `rank` of the pack of
/// `index`; its id.
fn damage_entry(bare: &Path, index: &Path, rank: usize) -> String {
    let (id, offset, size) = entries(bare, index)[rank].clone();
    let pack_file = index.with_extension("pack");
    let mut bytes = std::fs::read(&pack_file).unwrap();
    bytes[offset + size / 2] ^= 0x10;
    let mut permissions = std::fs::metadata(&pack_file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&pack_file, permissions).unwrap();
    std::fs::write(&pack_file, &bytes).unwrap();
    id
}

#[test]
fn an_entry_damaged_inside_the_stretch_is_never_sent() {
    for seed in 10..=13 {
        let (_dir, _work, bare) = random_repository(seed, 20);
        git(&bare, &["repack", "-adbq"]);
        let index = files_ending(&bare, "idx")[0].clone();
        let count = entries(&bare, &index).len();
        let rank = Random(seed).below(count as u64) as usize;
        damaged_then_copied(&bare, &index, rank, rank, seed);
    }
}

/// Damages the entry of rank `rank` in the pack of `index`: with no other
/// copy the fetch of every tip fails on band 3; with a loose copy it is
/// sent whole and complete, the stretch ending before it (`reused`
/// entries copied as stored).
fn damaged_then_copied(bare: &Path, index: &Path, rank: usize, reused: usize, seed: u64) {
    let id = entries(bare, index)[rank].0.clone();
    let kind = git(bare, &["cat-file", "-t", &id]);
    let content = support::git_with(bare, &["cat-file", &kind, &id], &[], b"").stdout;
    damage_entry(bare, index, rank);
    let refs = refs(bare);
    let (result, _, _) = fetch(bare, &tips(&refs));
    let error = result.unwrap_err();
    assert!(error.contains("damaged"), "seed {seed}: {error}");

    write_loose(bare, &kind, &content, &id);
    let (result, pack, progress) = fetch(bare, &tips(&refs));
    result.unwrap();
    let expected = reachable(bare, &tips(&refs));
    assert_eq!(received(&pack, &refs), expected, "seed {seed}");
    assert_eq!(counts(&progress), (expected.len(), reused), "seed {seed}");
}

#[test]
fn a_reused_pack_goes_through_the_pack_cache_unchanged() {
    let (_dir, work, bare) = random_repository(14, 20);
    git(&bare, &["repack", "-adbq"]);
    git(&bare, &["config", "refstore.packCache.enabled", "true"]);
    let stored = std::fs::read(&files_ending(&bare, "pack")[0]).unwrap();
    let refs = refs(&bare);
    // The first fetch writes the entry as it sends the pack, the second
    // is sent the entry.
    for _ in 0..2 {
        let (result, pack, _) = fetch(&bare, &tips(&refs));
        result.unwrap();
        assert!(pack == stored, "not the stored pack");
    }
    assert!(bare.join("refstore-pack-cache").is_dir());
    // A stretch and fresh objects after it: the cached pack is what was
    // sent, and complete.
    random_commits(&work, &mut Random(114), 3, 1_700_000_000, "more");
    git(&work, &["push", "-q", bare.to_str().unwrap(), "main"]);
    let refs = self::refs(&bare);
    let expected = reachable(&bare, &tips(&refs));
    let (result, first, progress) = fetch(&bare, &tips(&refs));
    result.unwrap();
    assert_eq!(counts(&progress), (expected.len(), stored_objects(&stored)));
    let (result, second, _) = fetch(&bare, &tips(&refs));
    result.unwrap();
    assert!(first == second, "the cache changed the pack");
    assert_eq!(received(&second, &refs), expected);
}

/// The number of entries a pack's header gives.
fn stored_objects(pack: &[u8]) -> usize {
    u32::from_be_bytes(pack[8..12].try_into().unwrap()) as usize
}

#[test]
fn an_entry_damaged_in_a_later_pack_of_a_multi_pack_index_is_never_sent() {
    for seed in 15..=16 {
        let (_dir, _work, bare, first, other) = two_packs_with_midx(seed, 8);
        let preferred = entries(&bare, &first).len();
        let listed = entries(&bare, &other);
        let rank = Random(seed).below(listed.len() as u64) as usize;
        damaged_then_copied(&bare, &other, rank, preferred + rank, seed);
    }
}

/// Writes a loose copy of the object `id`, of type `kind`.
fn write_loose(bare: &Path, kind: &str, content: &[u8], id: &str) {
    let kind = match kind {
        "commit" => ObjectKind::Commit,
        "tree" => ObjectKind::Tree,
        "blob" => ObjectKind::Blob,
        _ => ObjectKind::Tag,
    };
    let mut writer = LooseWriter::new(
        Arc::new(RealFs::new()),
        bare.join("objects"),
        ObjectFormat::Sha1,
        FlushMethod::None,
    );
    assert_eq!(writer.write(kind, content).unwrap().to_string(), id);
    writer.commit().unwrap();
}
