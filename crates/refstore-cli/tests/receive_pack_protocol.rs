//! `refstore receive-pack` fed raw requests, next to `git receive-pack`
//! fed the same bytes: malformed pkt-lines, invalid ids, funny ref names
//! and truncated packs get an error or an `ng`/`unpack` report, and leave
//! every ref as it was; thin packs of REF_DELTA entries are completed
//! without duplicate objects.

mod support;

use refstore_testsupport::pkt_line::{after_first_flush, pkt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::{git_ok, isolate, run_with_input, stderr};

/// Two bare repositories with the same history: `ours` served by
/// refstore, `theirs` by git; and `src`, where it was made.
struct Setup {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    src: PathBuf,
    ours: PathBuf,
    theirs: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_owned();
        let src = home.join("src");
        git_ok(&home, &home, &["init", "-q", "-b", "main", "src"]);
        let big: String = (0..200).map(|i| format!("line {i} of a file\n")).collect();
        std::fs::write(src.join("file"), &big).unwrap();
        git_ok(&home, &src, &["add", "file"]);
        git_ok(&home, &src, &["commit", "-q", "-m", "first"]);
        for target in ["ours", "theirs"] {
            git_ok(&home, &home, &["clone", "-q", "--bare", "src", target]);
        }
        // A second commit, only in src, changing one line of the file so
        // that git stores it as a delta.
        std::fs::write(src.join("file"), big.replace("line 7 ", "line seven ")).unwrap();
        git_ok(&home, &src, &["commit", "-q", "-a", "-m", "second"]);
        Setup {
            ours: home.join("ours"),
            theirs: home.join("theirs"),
            _tmp: tmp,
            home,
            src,
        }
    }

    fn rev(&self, rev: &str) -> String {
        git_ok(&self.home, &self.src, &["rev-parse", rev])
            .trim()
            .to_owned()
    }

    /// A pack made by `git pack-objects` from `revs` (one per line).
    fn pack(&self, revs: &str, extra: &[&str]) -> Vec<u8> {
        let mut cmd = Command::new("git");
        isolate(&mut cmd, &self.home);
        cmd.current_dir(&self.src)
            .args(["pack-objects", "--stdout", "--revs", "-q"])
            .args(extra);
        let out = run_with_input(&mut cmd, revs.as_bytes());
        assert!(out.status.success(), "{}", stderr(&out));
        out.stdout
    }

    fn serve(&self, ours: bool, input: &[u8]) -> Output {
        let mut cmd = if ours {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
            cmd.args(["receive-pack", "ours"]);
            cmd
        } else {
            let mut cmd = Command::new("git");
            cmd.args(["receive-pack", "theirs"]);
            cmd
        };
        isolate(&mut cmd, &self.home);
        cmd.current_dir(&self.home);
        run_with_input(&mut cmd, input)
    }

    fn refs(&self, repo: &Path) -> String {
        git_ok(&self.home, repo, &["for-each-ref"])
    }

    /// Serves `input` with both and returns (ours, theirs), requiring that
    /// their refs are alike afterwards.
    fn both(&self, input: &[u8]) -> (Output, Output) {
        let ours = self.serve(true, input);
        let theirs = self.serve(false, input);
        assert_eq!(self.refs(&self.ours), self.refs(&self.theirs));
        (ours, theirs)
    }
}

/// The report: the pkt-lines after the advertisement's flush-pkt.
fn report(out: &Output) -> Vec<String> {
    after_first_flush(&out.stdout)
}

const ZERO: &str = "0000000000000000000000000000000000000000";

#[test]
fn malformed_requests_are_refused_before_anything_is_stored() {
    let s = Setup::new();
    let before = s.refs(&s.ours);
    let main = s.rev("main~1");
    let new = s.rev("main");
    let bad_requests: Vec<Vec<u8>> = vec![
        b"00zz".to_vec(),
        [pkt(format!("{main} {new}")), b"0000".to_vec()].concat(),
        [
            pkt(format!("{} {new} refs/heads/main", &main[..39])),
            b"0000".to_vec(),
        ]
        .concat(),
        [
            pkt(format!("{main} {new}X refs/heads/main")),
            b"0000".to_vec(),
        ]
        .concat(),
    ];
    for input in bad_requests {
        let (ours, theirs) = s.both(&input);
        assert_ne!(theirs.status.code(), Some(0));
        assert_eq!(ours.status.code(), Some(128), "{}", stderr(&ours));
        assert!(stderr(&ours).starts_with("fatal: "), "{}", stderr(&ours));
        if stderr(&theirs).contains("expected old/new/ref") {
            assert!(
                stderr(&ours).contains("expected old/new/ref"),
                "{}",
                stderr(&ours)
            );
        }
        assert_eq!(s.refs(&s.ours), before);
    }
}

#[test]
fn funny_ref_names_are_reported_per_ref() {
    let s = Setup::new();
    let first = s.rev("main~1");
    let input = [
        pkt(format!("{ZERO} {first} refs/foo\0report-status")),
        pkt(format!("{ZERO} {first} refs/heads/a..b")),
        pkt(format!("{ZERO} {first} refs/heads/fine")),
        b"0000".to_vec(),
        s.pack(&format!("{first}\n"), &["--thin"]),
    ]
    .concat();
    let (ours, theirs) = s.both(&input);
    assert_eq!(report(&ours), report(&theirs));
    assert_eq!(
        report(&ours),
        [
            "unpack ok",
            "ng refs/foo funny refname",
            "ng refs/heads/a..b funny refname",
            "ok refs/heads/fine"
        ]
    );
}

#[test]
fn a_truncated_pack_changes_nothing() {
    let s = Setup::new();
    let (old, new) = (s.rev("main~1"), s.rev("main"));
    let pack = s.pack(&format!("{new}\n^{old}\n"), &["--thin"]);
    let input = [
        pkt(format!("{old} {new} refs/heads/main\0report-status")),
        b"0000".to_vec(),
        pack[..pack.len() - 30].to_vec(),
    ]
    .concat();
    let before = s.refs(&s.ours);
    let packs_before = std::fs::read_dir(s.ours.join("objects/pack"))
        .unwrap()
        .count();
    let (ours, theirs) = s.both(&input);
    let (ours, theirs) = (report(&ours), report(&theirs));
    assert!(
        ours[0].starts_with("unpack ") && ours[0] != "unpack ok",
        "{ours:?}"
    );
    assert_eq!(ours[1..], theirs[1..]);
    assert_eq!(ours[1], "ng refs/heads/main unpacker error");
    assert_eq!(s.refs(&s.ours), before);
    let packs_after = std::fs::read_dir(s.ours.join("objects/pack"))
        .unwrap()
        .count();
    assert_eq!(
        packs_after, packs_before,
        "temporary files were left behind"
    );
}

/// Ids in a pack index, in order.
fn index_ids(s: &Setup, repo: &Path) -> Vec<String> {
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(repo.join("objects/pack")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "idx") {
            let mut cmd = Command::new("git");
            isolate(&mut cmd, &s.home);
            cmd.current_dir(repo).arg("show-index");
            let out = run_with_input(&mut cmd, &std::fs::read(&path).unwrap());
            let listing = String::from_utf8(out.stdout).unwrap();
            ids.extend(
                listing
                    .lines()
                    .map(|l| l.split(' ').nth(1).unwrap().to_owned()),
            );
        }
    }
    ids
}

#[test]
fn ref_delta_packs_thin_or_not_are_stored_without_duplicates() {
    for thin in [true, false] {
        let s = Setup::new();
        let (old, new) = (s.rev("main~1"), s.rev("main"));
        // Without --delta-base-offset deltas name their base by id
        // (REF_DELTA); a thin pack's base is in the repository only, a
        // full pack's base is in the pack and in the repository.
        let revs = if thin {
            format!("{new}\n^{old}\n")
        } else {
            format!("{new}\n")
        };
        let extra: &[&str] = if thin { &["--thin"] } else { &[] };
        let input = [
            pkt(format!("{old} {new} refs/heads/main\0report-status")),
            b"0000".to_vec(),
            s.pack(&revs, extra),
        ]
        .concat();
        let (ours, theirs) = s.both(&input);
        assert_eq!(report(&ours), ["unpack ok", "ok refs/heads/main"]);
        assert_eq!(report(&ours), report(&theirs));
        let fsck = support::git(&s.home, &s.ours, &["fsck", "--strict"]);
        assert!(fsck.status.success(), "{}", stderr(&fsck));
        let mut ids = index_ids(&s, &s.ours);
        let count = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(
            ids.len(),
            count,
            "duplicate objects in the packs (thin: {thin})"
        );
    }
}

#[test]
fn deletes_need_no_pack() {
    let s = Setup::new();
    let first = s.rev("main~1");
    git_ok(&s.home, &s.ours, &["update-ref", "refs/heads/gone", &first]);
    git_ok(
        &s.home,
        &s.theirs,
        &["update-ref", "refs/heads/gone", &first],
    );
    let input = [
        pkt(format!(
            "{first} {ZERO} refs/heads/gone\0report-status-v2 atomic"
        )),
        b"0000".to_vec(),
    ]
    .concat();
    let (ours, theirs) = s.both(&input);
    assert_eq!(report(&ours), ["unpack ok", "ok refs/heads/gone"]);
    assert_eq!(report(&ours), report(&theirs));
}

#[test]
fn a_stale_old_value_fails_that_ref_only() {
    let s = Setup::new();
    let (first, second) = (s.rev("main~1"), s.rev("main"));
    let input = [
        pkt(format!("{second} {first} refs/heads/main\0report-status")),
        pkt(format!("{ZERO} {first} refs/heads/new")),
        b"0000".to_vec(),
        s.pack(&format!("{first}\n"), &["--thin"]),
    ]
    .concat();
    let (ours, theirs) = s.both(&input);
    assert_eq!(report(&ours), report(&theirs));
    assert_eq!(
        report(&ours),
        [
            "unpack ok",
            "ng refs/heads/main failed to update ref",
            "ok refs/heads/new"
        ]
    );
}

#[test]
fn an_atomic_push_with_a_stale_old_value_changes_nothing() {
    let s = Setup::new();
    let (first, second) = (s.rev("main~1"), s.rev("main"));
    let input = [
        pkt(format!(
            "{second} {first} refs/heads/main\0report-status atomic"
        )),
        pkt(format!("{ZERO} {first} refs/heads/new")),
        b"0000".to_vec(),
        s.pack(&format!("{first}\n"), &["--thin"]),
    ]
    .concat();
    let (ours, theirs) = s.both(&input);
    assert_eq!(report(&ours), report(&theirs));
    assert_eq!(
        report(&ours),
        [
            "unpack ok",
            "ng refs/heads/main atomic transaction failed",
            "ng refs/heads/new atomic transaction failed"
        ]
    );
}

/// The advertisement's lines, with the capabilities (which name the
/// agent) cut off the first.
fn advertised(out: &Output) -> Vec<String> {
    let mut bytes = &out.stdout[..];
    let mut lines = Vec::new();
    while bytes.len() >= 4 {
        let len = usize::from_str_radix(std::str::from_utf8(&bytes[..4]).unwrap(), 16).unwrap();
        if len == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&bytes[4..len]).into_owned();
        lines.push(line.split('\0').next().unwrap().trim_end().to_owned());
        bytes = &bytes[len..];
    }
    lines
}

/// The capabilities of the advertisement's first line, without `agent`.
fn capabilities(out: &Output) -> Vec<String> {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.split('\0').nth(1).unwrap_or_default();
    let first = first.split('\n').next().unwrap_or_default();
    first
        .split(' ')
        .filter(|w| !w.is_empty() && !w.starts_with("agent="))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_advertisement_lists_what_git_lists() {
    let s = Setup::new();
    // One tag object for both (its id depends on the time it is made).
    git_ok(&s.home, &s.ours, &["tag", "-a", "-m", "t", "v1", "main"]);
    git_ok(
        &s.home,
        &s.theirs,
        &["fetch", "-q", "../ours", "refs/tags/v1:refs/tags/v1"],
    );
    for repo in [&s.ours, &s.theirs] {
        git_ok(
            &s.home,
            repo,
            &[
                "symbolic-ref",
                "refs/remotes/origin/HEAD",
                "refs/heads/main",
            ],
        );
    }
    let (ours, theirs) = s.both(b"0000");
    assert_eq!(advertised(&ours), advertised(&theirs));
    assert_eq!(advertised(&ours).len(), 3, "{:?}", advertised(&ours));
    // The same capabilities as git's, `push-options` only once
    // `receive.advertisePushOptions` asks for it.
    assert_eq!(capabilities(&ours), capabilities(&theirs));
    assert!(!capabilities(&ours).contains(&"push-options".to_owned()));
    for repo in [&s.ours, &s.theirs] {
        git_ok(
            &s.home,
            repo,
            &["config", "receive.advertisePushOptions", "true"],
        );
    }
    let (ours, theirs) = s.both(b"0000");
    assert_eq!(capabilities(&ours), capabilities(&theirs));
    let caps = capabilities(&ours);
    for cap in [
        "report-status",
        "report-status-v2",
        "delete-refs",
        "side-band-64k",
        "quiet",
        "atomic",
        "ofs-delta",
        "push-options",
        "object-format=sha1",
    ] {
        assert!(caps.contains(&cap.to_owned()), "{cap} missing: {caps:?}");
    }
    assert!(String::from_utf8_lossy(&ours.stdout).contains("agent=refstore/"));

    let tmp = tempfile::tempdir().unwrap();
    git_ok(tmp.path(), tmp.path(), &["init", "-q", "--bare", "empty"]);
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, tmp.path());
    cmd.current_dir(tmp.path())
        .args(["receive-pack", "--advertise-refs", "empty"]);
    let empty = cmd.output().unwrap();
    assert_eq!(advertised(&empty), [format!("{ZERO} capabilities^{{}}")]);
}

#[test]
fn stateless_rpc_answers_without_an_advertisement() {
    let s = Setup::new();
    let first = s.rev("main~1");
    git_ok(&s.home, &s.ours, &["update-ref", "refs/heads/gone", &first]);
    let input = [
        pkt(format!("{first} {ZERO} refs/heads/gone\0report-status")),
        b"0000".to_vec(),
    ]
    .concat();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, &s.home);
    cmd.current_dir(&s.home)
        .args(["receive-pack", "--stateless-rpc", "ours"]);
    let out = run_with_input(&mut cmd, &input);
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = [
        pkt("unpack ok\n"),
        pkt("ok refs/heads/gone\n"),
        b"0000".to_vec(),
    ]
    .concat();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&expected)
    );
    assert!(!s.refs(&s.ours).contains("refs/heads/gone"));
}

#[test]
fn a_pack_missing_objects_is_refused_per_ref() {
    let s = Setup::new();
    let (old, new) = (s.rev("main~1"), s.rev("main"));
    let blob = s.rev("main:file");
    let listed = git_ok(
        &s.home,
        &s.src,
        &["rev-list", "--objects", &new, &format!("^{old}")],
    );
    let objects: String = listed
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .filter(|id| *id != blob)
        .map(|id| format!("{id}\n"))
        .collect();
    let mut cmd = Command::new("git");
    isolate(&mut cmd, &s.home);
    cmd.current_dir(&s.src)
        .args(["pack-objects", "--stdout", "-q"]);
    let pack = run_with_input(&mut cmd, objects.as_bytes()).stdout;
    let input = [
        pkt(format!("{old} {new} refs/heads/main\0report-status")),
        pkt(format!("{ZERO} {old} refs/heads/fine")),
        b"0000".to_vec(),
        pack,
    ]
    .concat();
    let (ours, theirs) = s.both(&input);
    assert_eq!(report(&ours), report(&theirs));
    assert_eq!(
        report(&ours),
        [
            "unpack ok",
            "ng refs/heads/main missing necessary objects",
            "ok refs/heads/fine"
        ]
    );
    assert!(stderr(&ours).contains(&blob), "{}", stderr(&ours));
}

/// All or nothing, as `git push --atomic` documents it. (git 2.39's own
/// receive-pack commits the complete refs here: a command that failed the
/// connectivity check is skipped rather than failing the transaction.)
#[test]
fn a_pack_missing_objects_fails_an_atomic_push() {
    let s = Setup::new();
    let (old, new) = (s.rev("main~1"), s.rev("main"));
    let blob = s.rev("main:file");
    let listed = git_ok(
        &s.home,
        &s.src,
        &["rev-list", "--objects", &new, &format!("^{old}")],
    );
    let objects: String = listed
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .filter(|id| *id != blob)
        .map(|id| format!("{id}\n"))
        .collect();
    let mut cmd = Command::new("git");
    isolate(&mut cmd, &s.home);
    cmd.current_dir(&s.src)
        .args(["pack-objects", "--stdout", "-q"]);
    let pack = run_with_input(&mut cmd, objects.as_bytes()).stdout;
    let input = [
        pkt(format!("{old} {new} refs/heads/main\0report-status atomic")),
        pkt(format!("{ZERO} {old} refs/heads/fine")),
        b"0000".to_vec(),
        pack,
    ]
    .concat();
    let before = s.refs(&s.ours);
    let ours = s.serve(true, &input);
    assert_eq!(s.refs(&s.ours), before);
    assert_eq!(
        report(&ours),
        [
            "unpack ok",
            "ng refs/heads/main missing necessary objects",
            "ng refs/heads/fine atomic push failure"
        ]
    );
    assert!(stderr(&ours).contains(&blob), "{}", stderr(&ours));
}
