//! A bitmapped pack that also holds objects the client does not want
//! (refs deleted or hidden after the repack, the other forks of a
//! network) has its wanted entries sent as stored with the holes closed:
//! offset deltas whose base is sent get the new distance, the others are
//! sent another way. Over random histories repacked with `git repack
//! -adb` (and `-adbf --depth N`), a random subset of their refs then
//! deleted, and random haves: the pack passes `git index-pack --strict`
//! and `git fsck --strict`, holds exactly the objects git's own
//! pack-objects sends, and its "pack-reused" count is what git's rule
//! gives (an entry is reused when it is wanted and is whole or an offset
//! delta against a reused entry), which is also git's own count (in a
//! thin pack, at most that: trees and blobs with a version on the client
//! go as deltas against it). A multi-pack index's packs are reused too.
//! A damaged entry is sent from another copy or fails the fetch.

use proptest::prelude::*;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

#[path = "../../../refstore-odb/tests/support/history.rs"]
mod history;
#[path = "../support/mod.rs"]
mod support;
use support::{git, git_in};

/// How the repository is repacked before refs are deleted.
#[derive(Debug, Clone, Copy)]
enum Repack {
    /// `git repack -adb`.
    Default,
    /// `git repack -adbf --depth N --window 50`: deltas recomputed, chains
    /// of at most N.
    Fresh { depth: u8 },
}

/// A bare repository of the random history `ops`, repacked as `repack`,
/// then with the refs `delete` picks deleted (the pack and its bitmap
/// keep their objects).
fn repository(ops: &[history::Op], repack: Repack, delete: &[bool]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "--bare"]);
    let mut writer = history::Writer::default();
    git_in(path, &["fast-import", "--quiet"], &writer.stream(ops));
    match repack {
        Repack::Default => git(path, &["repack", "-adbq"]),
        Repack::Fresh { depth } => git(
            path,
            &[
                "repack",
                "-adbfq",
                "--window=50",
                &format!("--depth={depth}"),
            ],
        ),
    };
    let refs = refs(path);
    let mut deletions = String::new();
    for (n, (name, _)) in refs.iter().enumerate() {
        // b0 stays: something is always wanted.
        if delete.get(n).copied().unwrap_or(false) && name != "refs/heads/b0" {
            deletions.push_str(&format!("delete {name}\n"));
        }
    }
    git_in(path, &["update-ref", "--stdin"], deletions.as_bytes());
    dir
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

/// The commits reachable from `tips`, oldest first.
fn commits(path: &Path, tips: &[String]) -> Vec<String> {
    let mut args = vec!["rev-list", "--reverse"];
    args.extend(tips.iter().map(String::as_str));
    git(path, &args).lines().map(str::to_owned).collect()
}

/// What a refstore fetch of `wants` with `haves` gave.
struct Fetched {
    pack: Vec<u8>,
    /// The "pack-reused" count of the progress.
    pack_reused: usize,
}

fn fetch(path: &Path, wants: &[String], haves: &[String], thin: bool) -> Result<Fetched, String> {
    let mut arguments: Vec<String> = wants.iter().map(|w| format!("want {w}")).collect();
    arguments.extend(haves.iter().map(|h| format!("have {h}")));
    arguments.push("ofs-delta".into());
    if thin {
        arguments.push("thin-pack".into());
    }
    arguments.push("done".into());
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let (result, pack, progress) = support::served_fetch(path, &arguments);
    result?;
    let [_, _, _, _, pack_reused] = support::total_line(&progress);
    Ok(Fetched { pack, pack_reused })
}

/// A client repository holding what `haves` reach in `server`, fetched
/// from it by git.
fn client(server: &Path, haves: &[String]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "--bare"]);
    if !haves.is_empty() {
        let mut args = vec!["fetch", "-q", server.to_str().unwrap()];
        args.extend(haves.iter().map(String::as_str));
        git(dir.path(), &args);
        for (n, have) in haves.iter().enumerate() {
            // A branch: the copies `received` makes clone branches.
            git(
                dir.path(),
                &["update-ref", &format!("refs/heads/have{n}"), have],
            );
        }
    }
    dir
}

/// Stores `pack` in a copy of `client` with `git index-pack --stdin
/// --fix-thin --strict` (a thin pack completed from the client's
/// objects), points refs at `wants` and runs `git fsck --strict`: the ids
/// the pack holds. It holds each of them once, and none the client has.
fn received(client: &Path, pack: &[u8], wants: &[String]) -> BTreeSet<String> {
    let copy = tempfile::tempdir().unwrap();
    let copy = copy.path().join("client.git");
    git(
        client,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            ".",
            copy.to_str().unwrap(),
        ],
    );
    let before = objects_of(&copy);
    git_in(
        &copy,
        &["index-pack", "--stdin", "--fix-thin", "--strict"],
        pack,
    );
    for (n, want) in wants.iter().enumerate() {
        git(&copy, &["update-ref", &format!("refs/wanted/{n}"), want]);
    }
    git(&copy, &["fsck", "--strict", "--no-dangling"]);
    let sent: BTreeSet<String> = objects_of(&copy).difference(&before).cloned().collect();
    let count = u32::from_be_bytes(pack[8..12].try_into().unwrap()) as usize;
    assert_eq!(count, sent.len(), "objects sent twice or already there");
    sent
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

/// git's own pack for `wants` less `haves` (pack-objects with the bitmap,
/// as upload-pack runs it) and its "pack-reused" count.
fn git_pack(path: &Path, wants: &[String], haves: &[String], thin: bool) -> (Vec<u8>, usize) {
    let mut input = String::new();
    for want in wants {
        input.push_str(&format!("{want}\n"));
    }
    input.push_str("--not\n");
    for have in haves {
        input.push_str(&format!("{have}\n"));
    }
    let mut args = vec![
        "pack-objects",
        "--revs",
        "--stdout",
        "--progress",
        "--delta-base-offset",
    ];
    if thin {
        args.push("--thin");
    }
    let output = support::git_with(path, &args, &[], input.as_bytes());
    assert!(output.status.success(), "git pack-objects failed");
    let progress = String::from_utf8_lossy(&output.stderr).replace('\r', "\n");
    let [_, _, _, _, pack_reused] = support::total_line(&progress);
    (output.stdout, pack_reused)
}

/// One entry of a stored pack, as `git verify-pack -v` lists it.
struct Listed {
    id: String,
    kind: String,
    /// The id of its delta base, if it is a delta.
    base: Option<String>,
}

/// The entries of the only pack of `path`, in stored order.
fn stored_entries(path: &Path) -> Vec<Listed> {
    entries_of(path, &only_file(path, "idx"))
}

/// The entries of the pack of `index`, in stored order.
fn entries_of(path: &Path, index: &Path) -> Vec<Listed> {
    let listing = git(path, &["verify-pack", "-v", index.to_str().unwrap()]);
    let mut entries: Vec<(usize, Listed)> = listing
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            // id type size size-in-pack offset [depth base]
            (f.len() >= 5 && f[0].len() == 40).then(|| {
                let listed = Listed {
                    id: f[0].to_owned(),
                    kind: f[1].to_owned(),
                    base: f.get(6).map(|b| (*b).to_owned()),
                };
                (f[4].parse().unwrap(), listed)
            })
        })
        .collect();
    entries.sort_by_key(|(offset, _)| *offset);
    entries.into_iter().map(|(_, listed)| listed).collect()
}

fn only_file(path: &Path, extension: &str) -> PathBuf {
    let files = files_ending(path, extension);
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

fn files_ending(path: &Path, extension: &str) -> Vec<PathBuf> {
    std::fs::read_dir(path.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == extension))
        .collect()
}

/// git's rule for reusing a pack's entries with holes: in stored order,
/// an entry is reused when it is sent and is whole or a delta against a
/// reused entry (a bitmapped pack's deltas are offset deltas, against an
/// earlier entry). The ids reused among `entries`.
fn reused_ids<'a>(entries: &'a [Listed], sent: &BTreeSet<String>) -> BTreeSet<&'a str> {
    let mut reused = BTreeSet::new();
    for entry in entries {
        let base_reused = entry
            .base
            .as_deref()
            .is_none_or(|base| reused.contains(base));
        if sent.contains(&entry.id) && base_reused {
            reused.insert(entry.id.as_str());
        }
    }
    reused
}

fn repack() -> impl Strategy<Value = Repack> {
    prop_oneof![
        Just(Repack::Default),
        (1u8..60).prop_map(|depth| Repack::Fresh { depth }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn wanted_entries_are_sent_as_stored_with_the_holes_closed(
        ops in prop::collection::vec(history::op(), 10..70),
        repack in repack(),
        delete in prop::collection::vec(any::<bool>(), 0..16),
        have_picks in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        thin in any::<bool>(),
    ) {
        let dir = repository(&ops, repack, &delete);
        let path = dir.path();
        let entries = stored_entries(path);
        let wants: Vec<String> = refs(path).into_iter().map(|(_, id)| id).collect();
        let history = commits(path, &wants);
        let haves: Vec<String> = have_picks.iter().map(|i| i.get(&history).clone()).collect();
        let client = client(path, &haves);

        let fetched = fetch(path, &wants, &haves, thin).unwrap();
        let sent = received(client.path(), &fetched.pack, &wants);
        let (git_pack, git_reused) = git_pack(path, &wants, &haves, thin);
        prop_assert_eq!(&sent, &received(client.path(), &git_pack, &wants));
        let by_rule = reused_ids(&entries, &sent).len();
        if thin && !haves.is_empty() {
            // Trees and blobs with a version on the client are left out,
            // to be sent as deltas against it.
            prop_assert!(fetched.pack_reused <= by_rule, "{} > {}", fetched.pack_reused, by_rule);
        } else {
            prop_assert_eq!(fetched.pack_reused, by_rule);
            prop_assert_eq!(fetched.pack_reused, git_reused);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    /// A multi-pack index's bitmap over two packs, the first preferred,
    /// then refs deleted: the wanted entries of both packs are sent as
    /// stored with the holes closed; at least those of the preferred pack
    /// by git's rule, and at least as many as git's pack-objects reuses.
    #[test]
    fn a_multi_pack_index_has_its_packs_reused_with_holes(
        first in prop::collection::vec(history::op(), 10..50),
        second in prop::collection::vec(history::op(), 5..30),
        delete in prop::collection::vec(any::<bool>(), 0..16),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path();
        git(path, &["init", "-q", "--bare"]);
        let mut writer = history::Writer::default();
        git_in(path, &["fast-import", "--quiet"], &writer.stream(&first));
        git(path, &["repack", "-adbq"]);
        let preferred = only_file(path, "idx");
        git_in(
            path,
            &["-c", "fastimport.unpackLimit=1", "fast-import", "--quiet"],
            &writer.stream(&second),
        );
        let name = preferred.with_extension("pack");
        let name = name.file_name().unwrap().to_str().unwrap();
        git(
            path,
            &["multi-pack-index", "write", "--bitmap", &format!("--preferred-pack={name}")],
        );
        // A second run that made no object writes no pack.
        prop_assume!(files_ending(path, "pack").len() == 2);
        let mut deletions = String::new();
        for ((name, _), &delete) in refs(path).iter().zip(&delete) {
            if delete && name != "refs/heads/b0" {
                deletions.push_str(&format!("delete {name}\n"));
            }
        }
        git_in(path, &["update-ref", "--stdin"], deletions.as_bytes());

        let wants: Vec<String> = refs(path).into_iter().map(|(_, id)| id).collect();
        let empty = client(path, &[]);
        let fetched = fetch(path, &wants, &[], false).unwrap();
        let sent = received(empty.path(), &fetched.pack, &wants);
        let (git_pack, git_reused) = git_pack(path, &wants, &[], false);
        prop_assert_eq!(&sent, &received(empty.path(), &git_pack, &wants));
        let in_preferred = reused_ids(&entries_of(path, &preferred), &sent).len();
        prop_assert!(fetched.pack_reused >= in_preferred, "{} < {}", fetched.pack_reused, in_preferred);
        prop_assert!(fetched.pack_reused >= git_reused, "{} < {}", fetched.pack_reused, git_reused);
    }
}

/// Flips a bit in the middle of the stored entry of `id` in the only pack
/// of `path`.
fn damage(path: &Path, id: &str) {
    let index = only_file(path, "idx");
    let listing = git(path, &["verify-pack", "-v", index.to_str().unwrap()]);
    let (offset, size): (usize, usize) = listing
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.first() == Some(&id)).then(|| (f[4].parse().unwrap(), f[3].parse().unwrap()))
        })
        .unwrap();
    let pack_file = index.with_extension("pack");
    let mut bytes = std::fs::read(&pack_file).unwrap();
    bytes[offset + size / 2] ^= 0x10;
    let mut permissions = std::fs::metadata(&pack_file).unwrap().permissions();
    #[allow(clippy::permissions_set_readonly_false)]
    permissions.set_readonly(false);
    std::fs::set_permissions(&pack_file, permissions).unwrap();
    std::fs::write(&pack_file, &bytes).unwrap();
}

/// Writes a loose copy of the object `id` of `path`, with `content`.
fn write_loose(path: &Path, kind: &str, content: &[u8], id: &str) {
    use refstore_odb::{LooseWriter, ObjectKind};
    let kind = match kind {
        "commit" => ObjectKind::Commit,
        "tree" => ObjectKind::Tree,
        "blob" => ObjectKind::Blob,
        _ => ObjectKind::Tag,
    };
    let mut writer = LooseWriter::new(
        std::sync::Arc::new(refstore_fs::real::RealFs::new()),
        path.join("objects"),
        refstore_refs::ObjectFormat::Sha1,
        refstore_fs::flush::FlushMethod::None,
    );
    assert_eq!(writer.write(kind, content).unwrap().to_string(), id);
    writer.commit().unwrap();
}

/// An entry damaged among those sent: without another copy the fetch
/// fails on band 3 (the entry's own CRC32 check names it damaged; an
/// object read through it, cannot be read). With a loose copy, the pack is complete and the
/// entries sent as stored end before the damaged one if it was one of
/// them; or, where an object sent another way is stored as a delta whose
/// chain passes through the damaged entry (its base is not sent: it is
/// read through the pack), the fetch fails on band 3 naming it. Never a
/// damaged pack; most cases send one.
#[test]
fn a_damaged_entry_is_sent_from_another_copy_or_fails_the_fetch() {
    let sent_packs = std::cell::Cell::new(0);
    let failed = std::cell::Cell::new(0);
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(12);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        ..ProptestConfig::default()
    });
    let strategy = (
        prop::collection::vec(history::op(), 10..50),
        prop::collection::vec(any::<bool>(), 0..16),
        any::<prop::sample::Index>(),
    );
    runner
        .run(&strategy, |(ops, delete, pick)| {
            match damaged_case(&ops, &delete, pick)? {
                true => sent_packs.set(sent_packs.get() + 1),
                false => failed.set(failed.get() + 1),
            }
            Ok(())
        })
        .unwrap();
    assert!(
        sent_packs.get() > failed.get(),
        "{} packs sent, {} fetches failed",
        sent_packs.get(),
        failed.get()
    );
}

/// One case of the test above: true if the fetch with a loose copy sent
/// a pack.
fn damaged_case(
    ops: &[history::Op],
    delete: &[bool],
    pick: prop::sample::Index,
) -> Result<bool, TestCaseError> {
    let dir = repository(ops, Repack::Default, delete);
    let path = dir.path();
    let entries = stored_entries(path);
    let wants: Vec<String> = refs(path).into_iter().map(|(_, id)| id).collect();
    let sent = {
        let empty = client(path, &[]);
        let fetched = fetch(path, &wants, &[], false).unwrap();
        received(empty.path(), &fetched.pack, &wants)
    };
    // Blobs: counting reads no blob, so the damage is met sending.
    let candidates: Vec<&Listed> = entries
        .iter()
        .filter(|e| sent.contains(&e.id) && e.kind == "blob")
        .collect();
    let victim = pick.get(&candidates).id.clone();
    let kind = "blob";
    let content = support::git_with(path, &["cat-file", kind, &victim], &[], b"").stdout;
    damage(path, &victim);

    let error = fetch(path, &wants, &[], false)
        .err()
        .expect("a damaged pack was sent");
    prop_assert!(
        error.contains("damaged") || error.contains("cannot read object"),
        "{}",
        error
    );

    write_loose(path, kind, &content, &victim);
    let fetched = match fetch(path, &wants, &[], false) {
        Ok(fetched) => fetched,
        Err(error) => {
            prop_assert!(error.contains("cannot read object"), "{}", error);
            return Ok(false);
        }
    };
    let empty = client(path, &[]);
    prop_assert_eq!(received(empty.path(), &fetched.pack, &wants), sent.clone());
    // Reused entries before the damaged one, if it was one of them.
    let position = entries.iter().position(|e| e.id == victim).unwrap();
    let expected = if reused_ids(&entries, &sent).contains(victim.as_str()) {
        reused_ids(&entries[..position], &sent).len()
    } else {
        reused_ids(&entries, &sent).len()
    };
    prop_assert_eq!(fetched.pack_reused, expected);
    Ok(true)
}
