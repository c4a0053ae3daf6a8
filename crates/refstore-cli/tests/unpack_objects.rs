//! `refstore unpack-objects` compared with git: packs made by git (with
//! offset and reference deltas, SHA-1 and SHA-256) unpack to the objects
//! git unpacks; thin packs complete against the repository; bad packs fail
//! with a fatal error and leave no object (partial or whole) behind.

mod support;

use std::path::Path;
use std::process::{Command, Output};
use support::*;

fn unpack(program: &str, home: &Path, repo: &Path, args: &[&str], pack: &[u8]) -> Output {
    let mut cmd = Command::new(program);
    isolate(&mut cmd, home)
        .arg("unpack-objects")
        .args(args)
        .current_dir(repo);
    run_with_input(&mut cmd, pack)
}

fn refstore_unpack(home: &Path, repo: &Path, args: &[&str], pack: &[u8]) -> Output {
    unpack(env!("CARGO_BIN_EXE_refstore"), home, repo, args, pack)
}

/// A source repository: three commits changing large files a little (so
/// packs hold deltas) and an annotated tag.
fn source(home: &Path, format: &str) -> std::path::PathBuf {
    let src = home.join("src");
    git_ok(
        home,
        home,
        &["init", "-q", &format!("--object-format={format}"), "src"],
    );
    for round in 0..3 {
        let mut text = String::new();
        for line in 0..300 {
            text.push_str(&format!("line {line}: the same text in every round\n"));
        }
        text.push_str(&format!("round {round}\n"));
        std::fs::write(src.join("big"), &text).unwrap();
        std::fs::write(src.join(format!("small{round}")), format!("{round}\n")).unwrap();
        git_ok(home, &src, &["add", "."]);
        git_ok(
            home,
            &src,
            &["commit", "-q", "-m", &format!("round {round}")],
        );
        if round == 0 {
            git_ok(home, &src, &["tag", "base"]);
        }
    }
    git_ok(home, &src, &["tag", "-a", "-m", "release", "v1"]);
    src
}

fn empty_repo(home: &Path, name: &str, format: &str) -> std::path::PathBuf {
    git_ok(
        home,
        home,
        &[
            "init",
            "-q",
            "--bare",
            &format!("--object-format={format}"),
            name,
        ],
    );
    home.join(name)
}

/// `<id> <type> <size>` of every object, sorted.
fn all_objects(home: &Path, repo: &Path) -> String {
    git_ok(
        home,
        repo,
        &["cat-file", "--batch-check", "--batch-all-objects"],
    )
}

fn loose_files(repo: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for fanout in std::fs::read_dir(repo.join("objects")).unwrap() {
        let fanout = fanout.unwrap().path();
        let name = fanout.file_name().unwrap().to_string_lossy().into_owned();
        if name.len() != 2 {
            continue;
        }
        for entry in std::fs::read_dir(&fanout).unwrap() {
            found.push(format!(
                "{name}/{}",
                entry.unwrap().file_name().to_string_lossy()
            ));
        }
    }
    found.sort();
    found
}

#[test]
fn git_packs_unpack_as_git_unpacks_them() {
    for format in ["sha1", "sha256"] {
        for delta_style in ["--delta-base-offset", "--no-reuse-delta"] {
            let tmp = tempfile::tempdir().unwrap();
            let home = tmp.path();
            let src = source(home, format);
            let pack = git_bytes(
                home,
                &src,
                &["pack-objects", "--stdout", "--all", "-q", delta_style],
                b"",
            );
            let ours = empty_repo(home, "ours", format);
            let theirs = empty_repo(home, "theirs", format);
            let out = refstore_unpack(home, &ours, &[], &pack);
            assert!(out.status.success(), "{}", stderr(&out));
            assert_eq!(stdout(&out), "");
            assert_eq!(stderr(&out), "", "no progress without a terminal");
            assert!(unpack("git", home, &theirs, &[], &pack).status.success());
            assert_eq!(all_objects(home, &ours), all_objects(home, &theirs));
            assert_eq!(loose_files(&ours), loose_files(&theirs));
            let tip = git_ok(home, &src, &["rev-parse", "v1"]);
            git_ok(home, &ours, &["update-ref", "refs/tags/v1", tip.trim()]);
            let fsck = git(
                home,
                &ours,
                &["fsck", "--full", "--strict", "--no-dangling"],
            );
            assert!(fsck.status.success(), "{}", stderr(&fsck));
            assert_eq!(all_objects(home, &ours).lines().count(), 3 * 3 + 1 + 3);
        }
    }
}

#[test]
fn thin_packs_complete_against_the_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = source(home, "sha1");
    let dst = empty_repo(home, "dst", "sha1");
    let base_pack = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--revs", "-q"],
        b"base\n",
    );
    assert!(refstore_unpack(home, &dst, &["-q"], &base_pack)
        .status
        .success());
    let thin = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--revs", "--thin", "-q"],
        b"HEAD\n^base\n",
    );
    let out = refstore_unpack(home, &dst, &[], &thin);
    assert!(out.status.success(), "{}", stderr(&out));
    let main = git_ok(home, &src, &["rev-parse", "HEAD"]);
    git_ok(home, &dst, &["update-ref", "refs/heads/main", main.trim()]);
    let fsck = git(home, &dst, &["fsck", "--full", "--no-dangling"]);
    assert!(fsck.status.success(), "{}", stderr(&fsck));

    // Without the bases, the pack cannot be completed: nothing is stored.
    let empty = empty_repo(home, "empty", "sha1");
    let out = refstore_unpack(home, &empty, &[], &thin);
    assert_eq!(out.status.code(), Some(128));
    assert!(
        stderr(&out).contains("unresolved deltas"),
        "{}",
        stderr(&out)
    );
    assert_eq!(loose_files(&empty), Vec::<String>::new());
}

#[test]
fn existing_objects_and_dry_runs_write_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = source(home, "sha1");
    let pack = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--revs", "-q", "--all"],
        b"",
    );
    let dst = empty_repo(home, "dst", "sha1");
    let out = refstore_unpack(home, &dst, &["-n"], &pack);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(loose_files(&dst), Vec::<String>::new());

    // Objects already in the repository (here: in a pack) are skipped.
    git_bytes(home, &dst, &["index-pack", "--stdin"], &pack);
    let out = refstore_unpack(home, &dst, &[], &pack);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(loose_files(&dst), Vec::<String>::new());
}

/// Hand-made packs for bad input: entry encoding, zlib stored blocks and
/// the SHA-1 trailer (computed by `sha1sum`).
mod craft {
    use std::io::Write;
    use std::process::{Command, Stdio};

    pub const BLOB: u8 = 3;
    pub const OFS_DELTA: u8 = 6;
    pub const REF_DELTA: u8 = 7;

    pub fn entry_header(kind: u8, size: usize) -> Vec<u8> {
        let mut out = vec![(kind << 4) | (size & 0x0f) as u8];
        let mut rest = size >> 4;
        while rest > 0 {
            *out.last_mut().unwrap() |= 0x80;
            out.push((rest & 0x7f) as u8);
            rest >>= 7;
        }
        out
    }

    /// zlib data in one stored (uncompressed) block.
    pub fn zlib(data: &[u8]) -> Vec<u8> {
        let mut out = vec![0x78, 0x01, 0x01];
        let len = data.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(data);
        let (mut a, mut b) = (1u32, 0u32);
        for &byte in data {
            a = (a + byte as u32) % 65521;
            b = (b + a) % 65521;
        }
        out.extend(((b << 16) | a).to_be_bytes());
        out
    }

    pub fn blob(data: &[u8]) -> Vec<u8> {
        let mut out = entry_header(BLOB, data.len());
        out.extend(zlib(data));
        out
    }

    /// A pack of `entries`, with a correct trailer.
    pub fn pack(entries: &[Vec<u8>]) -> Vec<u8> {
        let mut out = b"PACK\0\0\0\x02".to_vec();
        out.extend((entries.len() as u32).to_be_bytes());
        for e in entries {
            out.extend(e);
        }
        let trailer = sha1(&out);
        out.extend(trailer);
        out
    }

    fn sha1(data: &[u8]) -> Vec<u8> {
        let mut child = Command::new("sha1sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(data).unwrap();
        let out = child.wait_with_output().unwrap();
        let hex = String::from_utf8(out.stdout).unwrap();
        (0..40)
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }
}

#[test]
fn bad_packs_fail_and_store_nothing() {
    use craft::*;
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let src = source(home, "sha1");
    let good = git_bytes(
        home,
        &src,
        &["pack-objects", "--stdout", "--revs", "-q", "--all"],
        b"",
    );
    let first = blob(b"a good object first\n");
    // Sanity: the crafted encoding is valid when nothing is wrong.
    let valid = pack(&[first.clone(), blob(b"second\n")]);

    let mut bad_type = blob(b"x\n");
    bad_type[0] = (bad_type[0] & 0x8f) | (5 << 4);
    let mut corrupt_zlib = blob(b"zlib checksum broken\n");
    *corrupt_zlib.last_mut().unwrap() ^= 0xff;
    let mut missing_base = entry_header(REF_DELTA, 4);
    missing_base.extend([0xab; 20]);
    missing_base.extend(zlib(&[1, 1, 1, b'x']));
    let mut base_before_start = entry_header(OFS_DELTA, 4);
    base_before_start.push(0x7f);
    base_before_start.extend(zlib(&[1, 1, 1, b'x']));
    let mut bad_delta = entry_header(OFS_DELTA, 4);
    bad_delta.push((first.len()) as u8);
    bad_delta.extend(zlib(&[9, 1, 1, b'x'])); // wrong base size
    let mut checksum = good.clone();
    *checksum.last_mut().unwrap() ^= 1;

    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("truncated", good[..good.len() / 2].to_vec(), "incomplete"),
        ("no header", b"PACK\0\0".to_vec(), "early EOF"),
        (
            "not a pack",
            b"this is not a pack at all".to_vec(),
            "not a pack",
        ),
        ("checksum", checksum, "checksum"),
        ("wrong type", pack(&[first.clone(), bad_type]), "type 5"),
        (
            "corrupt zlib",
            pack(&[first.clone(), corrupt_zlib]),
            "deflate",
        ),
        (
            "missing base",
            pack(&[first.clone(), missing_base]),
            "unresolved deltas",
        ),
        (
            "base before start",
            pack(&[first.clone(), base_before_start]),
            "no base",
        ),
        (
            "bad delta",
            pack(&[first.clone(), bad_delta]),
            "base of 9 bytes",
        ),
    ];
    for (name, bytes, message) in cases {
        let repo = empty_repo(home, name, "sha1");
        let out = refstore_unpack(home, &repo, &[], &bytes);
        assert_eq!(out.status.code(), Some(128), "{name}: {}", stderr(&out));
        let err = stderr(&out);
        assert!(
            err.starts_with("fatal: pack is unusable: "),
            "{name}: {err}"
        );
        assert!(err.contains(message), "{name}: {err}");
        assert_eq!(loose_files(&repo), Vec::<String>::new(), "{name}");
        // git rejects it too (with exit 1 for an unknown entry type).
        let theirs = unpack("git", home, &repo, &[], &bytes);
        assert!(!theirs.status.success(), "{name}: git accepted it");
    }
    let repo = empty_repo(home, "valid", "sha1");
    let out = refstore_unpack(home, &repo, &[], &valid);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(loose_files(&repo).len(), 2);
}
