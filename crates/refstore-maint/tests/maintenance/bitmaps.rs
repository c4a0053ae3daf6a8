//! Reachability bitmaps written by the incremental repack, checked with
//! git: git verifies the
//! multi-pack-index, finds a bitmap for every ref tip and compares each
//! with a walk (`rev-list --test-bitmap`), and counts with them exactly
//! what it counts by walking; refstore's own reader, the one upload-pack
//! counts with, opens them and agrees; they follow the packs as pushes
//! come in, also pushes stored loose; `repack.writeBitmaps` decides where
//! they are written, by default in bare repositories only. Over random
//! histories too (several imports, a repack after each).

#[path = "../../../refstore-odb/tests/support/history.rs"]
mod history;

use super::*;
use proptest::prelude::*;
use refstore_odb::{BitmapIndex, Packs};
use refstore_refs::ObjectFormat;
use std::collections::{BTreeMap, BTreeSet, HashMap};

const NOW: &str = "refstore.redundantPackExpire=now";

/// Commits `from..to` in `work`, pushed to `srv` one push each: a growing
/// file, a file per commit in a few directories, a side branch with a
/// merge every fifth commit, an annotated tag every seventh.
fn push_history(home: &Path, work: &Path, srv: &Path, from: usize, to: usize) {
    let url = srv.to_str().unwrap();
    for i in from..to {
        let lines: Vec<String> = (0..200 + i * 10).map(|n| format!("line {n}")).collect();
        std::fs::write(work.join("grows"), lines.join("\n")).unwrap();
        let dir = work.join(format!("d{}", i % 3));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("f{i}")), format!("{i}\n")).unwrap();
        git_ok(home, work, &["add", "-A"]);
        git_ok(home, work, &["commit", "-qm", &format!("c{i}")]);
        if i % 5 == 4 {
            let side = format!("side{i}");
            git_ok(home, work, &["checkout", "-qb", &side, "HEAD~1"]);
            std::fs::write(work.join(&side), "side\n").unwrap();
            git_ok(home, work, &["add", "-A"]);
            git_ok(home, work, &["commit", "-qm", &side]);
            git_ok(home, work, &["checkout", "-q", "main"]);
            git_ok(home, work, &["merge", "-q", "--no-edit", &side]);
        }
        if i % 7 == 6 {
            git_ok(home, work, &["tag", "-a", &format!("v{i}"), "-m", "tag"]);
        }
        git_ok(home, work, &["push", "-q", "--all", url]);
        git_ok(home, work, &["push", "-q", "--tags", url]);
    }
}

/// A bare `srv.git` keeping every push as a pack, and a work repository,
/// both of object format `format`.
fn setup_with(home: &Path, format: &str) -> (PathBuf, PathBuf) {
    let srv = home.join("srv.git");
    let work = home.join("work");
    let format = format!("--object-format={format}");
    git_ok(home, home, &["init", "-q", &format, "--bare", "srv.git"]);
    git_ok(home, &srv, &["config", "receive.unpackLimit", "1"]);
    git_ok(home, home, &["init", "-q", &format, "-b", "main", "work"]);
    (srv, work)
}

fn setup(home: &Path) -> (PathBuf, PathBuf) {
    setup_with(home, "sha1")
}

/// The incremental repack of `repo`, with configuration `config`: its
/// report.
fn repack(repo: &Path, config: &[&str]) -> String {
    maintenance(repo, config, &[Task::IncrementalRepack])
}

/// The `multi-pack-index-*.bitmap` files.
fn bitmap_files(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("multi-pack-index-") && n.ends_with(".bitmap"))
        .collect();
    names.sort();
    names
}

/// The commits the refs point at, tags peeled.
fn tip_commits(home: &Path, repo: &Path) -> BTreeSet<String> {
    git_ok(
        home,
        repo,
        &[
            "for-each-ref",
            "--format=%(objecttype) %(objectname) %(*objectname)",
        ],
    )
    .lines()
    .map(|line| {
        let words: Vec<&str> = line.split(' ').collect();
        match words[0] {
            "tag" => words[2].to_owned(),
            _ => words[1].to_owned(),
        }
    })
    .collect()
}

fn object_ids(listing: &str) -> BTreeSet<String> {
    listing
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_owned())
        .collect()
}

/// The bitmap belongs to the current multi-pack-index, which git
/// verifies; git counts with the bitmaps what its walk counts; each of
/// `tips` has a stored bitmap, and every stored bitmap is what git walks,
/// read by refstore's reader and by git. How many there are.
fn assert_bitmaps_used(home: &Path, repo: &Path, tips: &BTreeSet<String>) -> usize {
    let files = bitmap_files(repo);
    assert_eq!(files.len(), 1, "{files:?}");
    let name = git_ok(home, repo, &["rev-parse", "--show-object-format"]);
    let format = ObjectFormat::from_name(name.trim()).unwrap();
    let hash_len = if format == ObjectFormat::Sha1 { 20 } else { 32 };
    let midx = std::fs::read(repo.join("objects/pack/multi-pack-index")).unwrap();
    let checksum: String = midx[midx.len() - hash_len..]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    assert_eq!(files[0], format!("multi-pack-index-{checksum}.bitmap"));
    git_ok(home, repo, &["multi-pack-index", "verify"]);

    let walked = git_ok(home, repo, &["rev-list", "--objects", "--all"]);
    let counted = git_ok(
        home,
        repo,
        &["rev-list", "--use-bitmap-index", "--objects", "--all"],
    );
    assert_eq!(object_ids(&counted), object_ids(&walked));
    assert_eq!(
        git_ok(
            home,
            repo,
            &["rev-list", "--use-bitmap-index", "--count", "--all"]
        ),
        git_ok(home, repo, &["rev-list", "--count", "--all"]),
    );

    // refstore's reader finds a bitmap for every tip; each stored bitmap
    // is what git walks, and git finds and checks it too.
    let objects = repo.join("objects");
    let packs = Packs::open(&objects, format).unwrap();
    let index = BitmapIndex::open(&RealFs::new(), &objects, &packs)
        .unwrap()
        .expect("refstore finds the bitmap");
    let stored: BTreeSet<String> = index
        .commits_with_bitmaps()
        .into_iter()
        .map(|bit| packs.id(index.at_bit(bit)).to_string())
        .collect();
    assert!(stored.is_superset(tips), "{stored:?} {tips:?}");
    let bits: HashMap<String, usize> = (0..index.objects())
        .map(|bit| (packs.id(index.at_bit(bit)).to_string(), bit))
        .collect();
    for commit in &stored {
        let set = index
            .reachable_from(bits[commit])
            .unwrap()
            .expect("a stored bitmap");
        let walked = object_ids(&git_ok(home, repo, &["rev-list", "--objects", commit]));
        let counted: BTreeSet<String> = set
            .ones()
            .map(|bit| packs.id(index.at_bit(bit)).to_string())
            .collect();
        assert_eq!(counted, walked, "{commit}");

        let o = git(home, repo, &["rev-list", "--test-bitmap", commit]);
        let err = stderr(&o);
        assert!(o.status.success(), "--test-bitmap {commit}: {err}");
        assert!(
            err.contains(&format!("Found bitmap for '{commit}'")),
            "{err}"
        );
        assert!(err.contains("OK!"), "{err}");
    }
    stored.len()
}

/// A clone served by refstore's upload-pack: complete, and the bitmap
/// was not set aside.
fn assert_refstore_clone(home: &Path, srv: &Path, name: &str) {
    let copy = home.join(name);
    let o = clone_through_refstore(home, srv, &copy);
    let err = stderr(&o);
    assert!(o.status.success(), "clone: {err}");
    assert!(!err.contains("bitmap"), "{err}");
    git_ok(home, &copy, &["fsck", "--strict", "--no-dangling"]);
    assert_eq!(tip_commits(home, &copy), tip_commits(home, srv));
}

#[test]
fn bitmaps_follow_the_packs_and_git_counts_with_them() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = setup(home);
    push_history(home, &work, &srv, 0, 16);
    let out = repack(&srv, &[NOW]);
    assert!(out.contains("with bitmaps of"), "{out}");
    let tips = tip_commits(home, &srv);
    assert_bitmaps_used(home, &srv, &tips);
    let first = bitmap_files(&srv).remove(0);
    assert_refstore_clone(home, &srv, "one.git");

    // More pushes: a new multi-pack-index, a new bitmap, the old one gone.
    push_history(home, &work, &srv, 16, 25);
    repack(&srv, &[NOW]);
    let tips = tip_commits(home, &srv);
    assert_bitmaps_used(home, &srv, &tips);
    let second = bitmap_files(&srv).remove(0);
    assert_ne!(first, second);
    assert!(!srv.join("objects/pack").join(&first).exists());

    // A push stored loose, then one stored as a pack on top of it: the
    // loose objects are rolled into the new pack first, as `git repack
    // --geometric` does, so the new tip gets its bitmap too.
    git_ok(home, &srv, &["config", "receive.unpackLimit", "100"]);
    push_history(home, &work, &srv, 25, 26);
    git_ok(home, &srv, &["config", "receive.unpackLimit", "1"]);
    push_history(home, &work, &srv, 26, 27);
    let loose = git_ok(home, &srv, &["count-objects"]);
    assert!(!loose.starts_with("0 objects"), "{loose}");
    let out = repack(&srv, &[NOW]);
    assert!(
        out.contains("packed ") && !out.contains("packed 0 "),
        "{out}"
    );
    let loose = git_ok(home, &srv, &["count-objects"]);
    assert!(loose.starts_with("0 objects"), "{loose}");
    let tips = tip_commits(home, &srv);
    assert_bitmaps_used(home, &srv, &tips);

    assert_refstore_clone(home, &srv, "two.git");
}

#[test]
fn sha256_repositories_get_bitmaps_git_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = setup_with(home, "sha256");
    push_history(home, &work, &srv, 0, 8);
    repack(&srv, &[NOW]);
    assert_bitmaps_used(home, &srv, &tip_commits(home, &srv));
    assert_refstore_clone(home, &srv, "copy.git");
}

#[test]
fn repack_write_bitmaps_decides_where_bitmaps_are_written() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = setup(home);
    push_history(home, &work, &srv, 0, 4);

    // Bare, but turned off.
    let off = ["repack.writeBitmaps=false", NOW];
    let out = repack(&srv, &off);
    assert!(out.contains("multi-pack-index over"), "{out}");
    assert!(bitmap_files(&srv).is_empty());
    git_ok(home, &srv, &["multi-pack-index", "verify"]);
    // Turned on (git's default for a bare repository): written for the
    // multi-pack-index there is, without a new pack.
    repack(&srv, &[NOW]);
    assert_bitmaps_used(home, &srv, &tip_commits(home, &srv));

    // A repository with a work tree: none by default, as git; with
    // repack.writeBitmaps, one.
    git_ok(home, &work, &["repack", "-q", "-d"]);
    repack(&work, &[NOW]);
    assert!(work.join(".git/objects/pack/multi-pack-index").exists());
    assert!(bitmap_files(&work.join(".git")).is_empty());
    repack(&work, &["pack.writeBitmaps=true", NOW]);
    assert_bitmaps_used(home, &work.join(".git"), &tip_commits(home, &work));
}

/// Imports into `repo` a linear `main` of `commits` commits, commit n
/// (from 1) changing file `f<n % 7>`.
fn import_linear(home: &Path, repo: &Path, commits: usize) {
    let mut stream = String::new();
    for n in 1..=commits {
        let content = format!("version {n}\n");
        stream.push_str(&format!(
            "commit refs/heads/main\nmark :{n}\ncommitter C <c@example.com> {} +0000\n\
             data 2\nc\nM 100644 inline f{}\ndata {}\n{content}\n",
            1_700_000_000 + n,
            n % 7,
            content.len()
        ));
    }
    Git::new(home, repo).ok_with(&["fast-import", "--quiet"], stream.as_bytes());
}

#[test]
fn a_long_history_has_a_bitmap_every_hundred_commits() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let srv = home.join("srv.git");
    git_ok(home, home, &["init", "-q", "--bare", "srv.git"]);
    import_linear(home, &srv, 250);
    repack(&srv, &[NOW]);
    // The tip, main~100 and main~200, each checked against git.
    let tips = tip_commits(home, &srv);
    assert_eq!(assert_bitmaps_used(home, &srv, &tips), 3);
    for back in ["main~100", "main~200"] {
        let id = git_ok(home, &srv, &["rev-parse", back]);
        let o = git(home, &srv, &["rev-list", "--test-bitmap", id.trim()]);
        assert!(o.status.success(), "{back}: {}", stderr(&o));
    }
}

/// Writes a pack of the objects `ids` (read from `from`) into `into`.
fn pack_objects(home: &Path, from: &Path, into: &Path, ids: &[&str]) {
    let base = into.join("objects/pack/pack");
    let ids = format!("{}\n", ids.join("\n"));
    Git::new(home, from).ok_with(
        &["pack-objects", "-q", base.to_str().unwrap()],
        ids.as_bytes(),
    );
}

/// A copy lacking some objects of one commit of its history (as a
/// cluster node's copy lacks the pushes other nodes hold) gets bitmaps
/// for the history below that commit, right below it, and none above,
/// whether its root tree or only a blob deep in it is missing; git checks
/// each bitmap once the object is back. Without the commit itself the
/// history below it is out of reach, and no commit gets one.
#[test]
fn a_copy_missing_one_commits_objects_has_bitmaps_below_it() {
    const COMMITS: usize = 150;
    const HOLE: usize = 120;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = home.join("src.git");
    git_ok(home, home, &["init", "-q", "--bare", "src.git"]);
    import_linear(home, &src, COMMITS);
    let commit_at = |n: usize| {
        git_ok(home, &src, &["rev-parse", &format!("main~{}", COMMITS - n)])
            .trim()
            .to_owned()
    };
    let hole = commit_at(HOLE);
    let hole_tree = git_ok(home, &src, &["rev-parse", &format!("{hole}^{{tree}}")]);
    let hole_blob = git_ok(home, &src, &["rev-parse", &format!("{hole}:f{}", HOLE % 7)]);
    let below: BTreeSet<String> = git_ok(home, &src, &["rev-list", &commit_at(HOLE - 1)])
        .lines()
        .map(str::to_owned)
        .collect();
    let objects = git_ok(home, &src, &["rev-list", "--objects", "main"]);
    let all: Vec<&str> = objects
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();

    for missing in [hole.trim(), hole_tree.trim(), hole_blob.trim()] {
        let name = format!("srv-{missing}.git");
        git_ok(home, home, &["init", "-q", "--bare", &name]);
        let srv = home.join(&name);
        git_ok(home, &srv, &["config", "gc.auto", "0"]);
        let present: Vec<&str> = all.iter().copied().filter(|id| *id != missing).collect();
        pack_objects(home, &src, &srv, &present);
        let tip = commit_at(COMMITS);
        git_ok(home, &srv, &["update-ref", "refs/heads/main", &tip]);

        let out = repack(&srv, &[NOW]);
        if missing == hole.trim() {
            assert!(out.contains("no commit to write a bitmap for"), "{out}");
            continue;
        }
        assert!(out.contains("with bitmaps of"), "{missing}: {out}");
        // The missing object comes back, in a pack of its own, so that
        // git can check every bitmap against its walk.
        pack_objects(home, &src, &srv, &[missing]);
        let tips = BTreeSet::from([commit_at(HOLE - 1)]);
        assert_bitmaps_used(home, &srv, &tips);
        let objects = srv.join("objects");
        let packs = Packs::open(&objects, ObjectFormat::Sha1).unwrap();
        let index = BitmapIndex::open(&RealFs::new(), &objects, &packs)
            .unwrap()
            .unwrap();
        for bit in index.commits_with_bitmaps() {
            let commit = packs.id(index.at_bit(bit)).to_string();
            assert!(
                below.contains(&commit),
                "{missing}: {commit} is above the hole"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 8, ..ProptestConfig::default() })]

    #[test]
    fn bitmaps_of_random_histories_agree_with_git(
        runs in prop::collection::vec(prop::collection::vec(history::op(), 1..150), 1..4)
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path();
        let srv = home.join("srv.git");
        git_ok(home, home, &["init", "-q", "--bare", "srv.git"]);
        let mut writer = history::Writer::default();
        for ops in &runs {
            // Each import its own pack, as a push would leave it.
            let import = ["-c", "fastimport.unpackLimit=1", "fast-import", "--quiet"];
            let o = Git::new(home, &srv).run_with(&import, &writer.stream(ops));
            prop_assert!(o.status.success(), "fast-import: {}", stderr(&o));
            repack(&srv, &[NOW]);
            assert_bitmaps_used(home, &srv, &tip_commits(home, &srv));
        }
    }
}

#[test]
fn a_damaged_tree_costs_the_bitmap_not_the_multi_pack_index() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = setup(home);
    push_history(home, &work, &srv, 0, 3);
    git_ok(home, &srv, &["repack", "-adq"]);
    // Damage the compressed data of one tree stored whole.
    let pack_dir = srv.join("objects/pack");
    let index = std::fs::read_dir(&pack_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "idx"))
        .unwrap();
    let verbose = git_ok(home, &srv, &["verify-pack", "-v", index.to_str().unwrap()]);
    // `<id> tree <size> <size-in-pack> <offset>` for an entry that is no delta.
    let (size_in_pack, offset): (usize, usize) = verbose
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .find(|w| w.len() == 5 && w[1] == "tree" && w[3].parse::<usize>().unwrap() > 20)
        .map(|w| (w[3].parse().unwrap(), w[4].parse().unwrap()))
        .unwrap();
    let pack = index.with_extension("pack");
    let mut bytes = std::fs::read(&pack).unwrap();
    for byte in &mut bytes[offset + size_in_pack - 8..offset + size_in_pack - 2] {
        *byte ^= 0x55;
    }
    std::fs::write(&pack, bytes).unwrap();

    let out = repack(&srv, &[NOW]);
    assert!(out.contains("no bitmap:"), "{out}");
    assert!(bitmap_files(&srv).is_empty());
    git_ok(home, &srv, &["multi-pack-index", "verify"]);
}

/// Name hashes by object id, from refstore's reader of the repository's
/// bitmap.
fn name_hashes(repo: &Path) -> BTreeMap<String, Option<u32>> {
    let objects = repo.join("objects");
    let packs = Packs::open(&objects, ObjectFormat::Sha1).unwrap();
    let index = BitmapIndex::open(&RealFs::new(), &objects, &packs)
        .unwrap()
        .unwrap();
    (0..index.objects())
        .map(|bit| {
            (
                packs.id(index.at_bit(bit)).to_string(),
                index.name_hash(bit),
            )
        })
        .collect()
}

#[test]
fn name_hashes_are_the_ones_git_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let (srv, work) = setup(home);
    // Every file and directory holds content found at one path only, so
    // the path an object is first found at is the same for every walk.
    for i in 0..8 {
        let dir = format!("dir{}", i % 3);
        std::fs::create_dir_all(work.join(&dir)).unwrap();
        let path = format!("{dir}/file {i}.txt");
        std::fs::write(work.join(&path), format!("{path} {i}\n")).unwrap();
        std::fs::write(work.join("top.rs"), format!("top {i}\n")).unwrap();
        git_ok(home, &work, &["add", "-A"]);
        git_ok(home, &work, &["commit", "-qm", &format!("c{i}")]);
        git_ok(home, &work, &["push", "-q", srv.to_str().unwrap(), "main"]);
    }
    repack(&srv, &[NOW]);
    let ours = name_hashes(&srv);

    // git's own bitmap (with its name-hash cache) of the same objects.
    let copy = home.join("git.git");
    git_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            "--no-local",
            srv.to_str().unwrap(),
            "git.git",
        ],
    );
    git_ok(home, &copy, &["repack", "-adbq"]);
    let theirs = name_hashes(&copy);
    assert_eq!(ours.len(), theirs.len());
    assert!(ours.values().filter(|h| h.is_some_and(|h| h != 0)).count() > 10);
    assert_eq!(ours, theirs);
}
