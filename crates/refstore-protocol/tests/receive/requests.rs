//! Push requests served by both: commands, ref names, old values, packs
//! thin or not, truncated or missing objects, atomic or not.

use super::{report, report_and_messages, Setup, ZERO};
use refstore_testsupport::pkt_line::pkt;
use refstore_testsupport::{git, git_ok, stderr, Git};
use std::path::Path;

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
    // The call fails (the `refstore receive-pack` command then exits 128
    // with the message after `fatal: `), with git's reason where git
    // gives the one both know.
    for input in bad_requests {
        let (ours, theirs) = s.both(&input);
        assert!(!theirs.success, "git accepted {input:?}");
        assert!(!ours.success, "refstore accepted {input:?}");
        assert!(!ours.message.is_empty(), "no reason for {input:?}");
        if theirs.message.contains("expected old/new/ref") {
            assert!(
                ours.message.contains("expected old/new/ref"),
                "{}",
                ours.message
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
            let index = std::fs::read(&path).unwrap();
            let listing = Git::new(&s.home, repo).ok_with(&["show-index"], &index);
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
        let fsck = git(&s.home, &s.ours, &["fsck", "--strict"]);
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
    let pack = s.pack_of(&objects, &[]);
    let input = [
        pkt(format!(
            "{old} {new} refs/heads/main\0report-status side-band-64k"
        )),
        pkt(format!("{ZERO} {old} refs/heads/fine")),
        b"0000".to_vec(),
        pack,
    ]
    .concat();
    let (ours, theirs) = s.both(&input);
    assert_eq!(report(&ours), report(&theirs));
    let (report, messages) = report_and_messages(&ours);
    assert_eq!(
        report,
        [
            "unpack ok",
            "ng refs/heads/main missing necessary objects",
            "ok refs/heads/fine"
        ]
    );
    // The user is told which object is missing.
    assert!(messages.contains(&blob), "{messages}");
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
    let pack = s.pack_of(&objects, &[]);
    let input = [
        pkt(format!(
            "{old} {new} refs/heads/main\0report-status atomic side-band-64k"
        )),
        pkt(format!("{ZERO} {old} refs/heads/fine")),
        b"0000".to_vec(),
        pack,
    ]
    .concat();
    let before = s.refs(&s.ours);
    let ours = s.serve(true, &input);
    assert_eq!(s.refs(&s.ours), before);
    let (report, messages) = report_and_messages(&ours);
    assert_eq!(
        report,
        [
            "unpack ok",
            "ng refs/heads/main missing necessary objects",
            "ng refs/heads/fine atomic push failure"
        ]
    );
    assert!(messages.contains(&blob), "{messages}");
}
