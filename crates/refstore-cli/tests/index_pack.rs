//! `refstore index-pack --stdin` compared with git: the same .pack and .idx
//! bytes and output, thin packs completed with --fix-thin into a pack git
//! verifies, .keep files, and bad packs that leave nothing behind.

mod support;

use std::path::{Path, PathBuf};
use std::process::Output;
use support::*;

fn refstore_in(home: &Path, cwd: &Path, args: &[&str], input: &[u8]) -> Output {
    refstore_with_input(home, cwd, args, input)
}

/// A repository with three commits changing a large file a little.
fn source(home: &Path) -> PathBuf {
    let src = home.join("src");
    git_ok(home, home, &["init", "-q", "src"]);
    for round in 0..3 {
        let text = "the same line in every round\n".repeat(200) + &format!("round {round}\n");
        std::fs::write(src.join("big"), text).unwrap();
        git_ok(home, &src, &["add", "big"]);
        git_ok(
            home,
            &src,
            &["commit", "-q", "-m", &format!("round {round}")],
        );
        if round == 0 {
            git_ok(home, &src, &["tag", "base"]);
        }
    }
    src
}

fn bare(home: &Path, name: &str) -> PathBuf {
    git_ok(home, home, &["init", "-q", "--bare", name]);
    home.join(name)
}

fn pack_dir_files(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn packs_and_indexes_are_what_git_writes() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = source(home);
    let pack = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--all", "-q"],
        b"",
    );
    let (ours, theirs) = (bare(home, "ours"), bare(home, "theirs"));
    let out = refstore_in(home, &ours, &["index-pack", "--stdin"], &pack);
    assert!(out.status.success(), "{}", stderr(&out));
    // refstore writes the reverse index by default, as git 2.41 and later
    // do; git 2.39 writes it when asked.
    let git_line = git_bytes(
        home,
        &theirs,
        &["index-pack", "--stdin", "--rev-index"],
        &pack,
    );
    assert_eq!(stdout(&out), String::from_utf8(git_line).unwrap());
    assert_eq!(pack_dir_files(&ours), pack_dir_files(&theirs));
    assert!(pack_dir_files(&ours).iter().any(|n| n.ends_with(".rev")));
    for name in pack_dir_files(&ours) {
        let a = std::fs::read(ours.join("objects/pack").join(&name)).unwrap();
        let b = std::fs::read(theirs.join("objects/pack").join(&name)).unwrap();
        assert!(a == b, "{name} differs from git's");
    }
    let fsck = git(home, &ours, &["fsck", "--full"]);
    assert!(fsck.status.success(), "{}", stderr(&fsck));

    // Without a reverse index when configured or asked so.
    for (name, args) in [
        (
            "norev1",
            &[
                "-c",
                "pack.writeReverseIndex=false",
                "index-pack",
                "--stdin",
            ][..],
        ),
        ("norev2", &["index-pack", "--stdin", "--no-rev-index"][..]),
    ] {
        let repo = bare(home, name);
        let out = refstore_in(home, &repo, args, &pack);
        assert!(out.status.success(), "{}", stderr(&out));
        let files = pack_dir_files(&repo);
        assert_eq!(files.len(), 2, "{files:?}");
        assert!(!files.iter().any(|n| n.ends_with(".rev")), "{files:?}");
    }

    // Again, with a .keep file: the pack is already there, so none is made.
    let out = refstore_in(
        home,
        &ours,
        &["index-pack", "--stdin", "--keep=push"],
        &pack,
    );
    assert!(stdout(&out).starts_with("pack\t"), "{}", stdout(&out));
    let kept = bare(home, "kept");
    let out = refstore_in(
        home,
        &kept,
        &["index-pack", "--stdin", "--keep=push 42"],
        &pack,
    );
    assert!(stdout(&out).starts_with("keep\t"), "{}", stderr(&out));
    let keep: Vec<String> = pack_dir_files(&kept)
        .into_iter()
        .filter(|n| n.ends_with(".keep"))
        .collect();
    assert_eq!(keep.len(), 1);
    assert_eq!(
        std::fs::read(kept.join("objects/pack").join(&keep[0])).unwrap(),
        b"push 42\n"
    );
}

#[test]
fn thin_packs_are_completed_with_fix_thin() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = source(home);
    let dst = bare(home, "dst");
    let base = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--revs", "-q"],
        b"base\n",
    );
    assert!(refstore_in(home, &dst, &["index-pack", "--stdin"], &base)
        .status
        .success());
    let thin = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--revs", "--thin", "-q"],
        b"HEAD\n^base\n",
    );
    let before = pack_dir_files(&dst);
    let out = refstore_in(home, &dst, &["index-pack", "--stdin"], &thin);
    assert_eq!(out.status.code(), Some(128), "a thin pack needs --fix-thin");
    assert_eq!(pack_dir_files(&dst), before, "nothing left behind");

    let out = refstore_in(home, &dst, &["index-pack", "--stdin", "--fix-thin"], &thin);
    assert!(out.status.success(), "{}", stderr(&out));
    let head = git_ok(home, &src, &["rev-parse", "HEAD"]);
    git_ok(home, &dst, &["update-ref", "refs/heads/main", head.trim()]);
    let fsck = git(home, &dst, &["fsck", "--full", "--no-dangling"]);
    assert!(fsck.status.success(), "{}", stderr(&fsck));
    let hash = stdout(&out).trim().trim_start_matches("pack\t").to_owned();
    let idx = dst.join(format!("objects/pack/pack-{hash}.idx"));
    let verify = git(home, &dst, &["verify-pack", idx.to_str().unwrap()]);
    assert!(verify.status.success(), "{}", stderr(&verify));
    // The completed pack holds as many objects as git's completion.
    let theirs = bare(home, "theirs");
    git_bytes(home, &theirs, &["index-pack", "--stdin"], &base);
    let git_line = git_bytes(
        home,
        &theirs,
        &["index-pack", "--stdin", "--fix-thin"],
        &thin,
    );
    let git_hash = String::from_utf8(git_line).unwrap();
    let ours_objects = git_ok(home, &dst, &["verify-pack", "-v", idx.to_str().unwrap()])
        .lines()
        .filter(|l| l.len() > 40 && !l.contains("chain length"))
        .count();
    let theirs_idx = theirs.join(format!(
        "objects/pack/pack-{}.idx",
        git_hash.trim().trim_start_matches("pack\t")
    ));
    let theirs_objects = git_ok(
        home,
        &theirs,
        &["verify-pack", "-v", theirs_idx.to_str().unwrap()],
    )
    .lines()
    .filter(|l| l.len() > 40 && !l.contains("chain length"))
    .count();
    assert_eq!(ours_objects, theirs_objects);
}

#[test]
fn bad_packs_leave_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = source(home);
    let pack = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--all", "-q"],
        b"",
    );
    let mut checksum = pack.clone();
    *checksum.last_mut().unwrap() ^= 1;
    let mut zlib = pack.clone();
    zlib[40] ^= 0x55;
    for (name, bytes) in [
        ("truncated", pack[..pack.len() / 2].to_vec()),
        ("checksum", checksum),
        ("corrupt", zlib),
        ("garbage", b"not a pack, not at all".to_vec()),
    ] {
        let repo = bare(home, name);
        let out = refstore_in(home, &repo, &["index-pack", "--stdin", "--keep"], &bytes);
        assert_eq!(out.status.code(), Some(128), "{name}");
        assert!(
            stderr(&out).starts_with("fatal: pack is unusable: "),
            "{name}: {}",
            stderr(&out)
        );
        assert_eq!(pack_dir_files(&repo), Vec::<String>::new(), "{name}");
    }
    let out = refstore(home, &src, &["index-pack"]);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("--stdin"), "{}", stderr(&out));
}
