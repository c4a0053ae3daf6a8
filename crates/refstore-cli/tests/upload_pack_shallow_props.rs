//! Shallow clones of generated histories: branches, merges and commit
//! dates (some of them skewed into the past) made by a small program of
//! operations, then `clone --depth` followed by `fetch --deepen` and a
//! `fetch --shallow-since` or `--shallow-exclude`, `clone
//! --shallow-since` and `clone --shallow-exclude` through `refstore
//! upload-pack` and through git's own, in protocol v0 or v2, must leave
//! the two clients with the same commits, objects, refs and `.git/shallow`
//! (or fail both), and the client's history whole (`git fsck`): some
//! commits bring older trees and blobs back at other paths, which a
//! shallow client has only if they were sent.
//!
//! Few cases run by default; `REFSTORE_PROPTEST_CASES` or
//! `PROPTEST_CASES` asks for more.

mod support;

use proptest::prelude::*;
use std::process::Output;
use support::history::{config, op, History, Op};
use support::shallow::time_of;
use support::stderr;

/// Runs `ops` on a source with one commit on `main`, packed if `packed`.
fn grow(ops: &[Op], packed: bool) -> History {
    let mut history = History::new();
    history.grow(ops);
    if packed {
        history.f.git(&history.f.source, &["repack", "-adq"]);
    }
    history
}

/// Requires refstore's clone to fail where git's fails, and both clones to
/// hold the same where both succeed; whether they did.
fn same_outcome(what: &str, (ours, theirs): (Output, Output)) -> bool {
    assert_eq!(
        ours.status.success(),
        theirs.status.success(),
        "{what}: refstore: {}\ngit: {}",
        stderr(&ours),
        stderr(&theirs)
    );
    ours.status.success()
}

#[derive(Debug, Clone)]
struct Case {
    ops: Vec<Op>,
    packed: bool,
    v2: bool,
    single_branch: bool,
    depth: u32,
    deepen: u32,
    /// Picks the commit whose date `--shallow-since` names.
    since: usize,
    /// Picks the ref `--shallow-exclude` names.
    exclude: usize,
    /// Whether the depth clone's last fetch is by ref, not by date.
    refetch_by_ref: bool,
    /// Picks the ref or the commit whose date that fetch names.
    refetch: usize,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(op(), 2..14),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        1..5u32,
        1..4u32,
        any::<usize>(),
        any::<usize>(),
        (any::<bool>(), any::<usize>()),
    )
        .prop_map(
            |(ops, packed, v2, single_branch, depth, deepen, since, exclude, refetch)| Case {
                ops,
                packed,
                v2,
                single_branch,
                depth,
                deepen,
                since,
                exclude,
                refetch_by_ref: refetch.0,
                refetch: refetch.1,
            },
        )
}

fn check(case: &Case) {
    let history = grow(&case.ops, case.packed);
    let (f, refs) = (&history.f, history.refs());
    let version = if case.v2 { "2" } else { "0" };
    let branches = if case.single_branch {
        "--single-branch"
    } else {
        "--no-single-branch"
    };

    let depth = format!("--depth={}", case.depth);
    let what = format!("clone {depth} {branches} v{version}");
    let (ours, theirs) = f.clone_both("depth", version, &[&depth, branches]);
    f.assert_same(&ours, &theirs, &what, None);
    let deepen = format!("--deepen={}", case.deepen);
    f.both(&ours, &theirs, version, &["fetch", "-q", &deepen]);
    f.assert_same(&ours, &theirs, &format!("{what}, fetch {deepen}"), None);
    // And a new boundary by date or by ref, below or above the old one.
    let refetch = if case.refetch_by_ref {
        format!("--shallow-exclude={}", refs[case.refetch % refs.len()])
    } else {
        let commit = u32::try_from(case.refetch).unwrap_or(u32::MAX) % (f.commit_count() + 1);
        format!("--shallow-since=@{}", time_of(commit))
    };
    let what = format!("{what}, fetch {deepen}, fetch {refetch}");
    let args = ["fetch", "-q", &refetch];
    let outcome = (
        f.remote(&ours, version, true, &args),
        f.remote(&theirs, version, false, &args),
    );
    same_outcome(&what, outcome);
    f.assert_same(&ours, &theirs, &what, None);

    let commits = u32::try_from(case.since).unwrap_or(u32::MAX) % (f.commit_count() + 1);
    let since = format!("--shallow-since=@{}", time_of(commits));
    let what = format!("clone {since} v{version}");
    let outcome = f.try_clone_both("since", version, &[&since, "--no-single-branch"]);
    if same_outcome(&what, outcome) {
        let (ours, theirs) = f.clone_dirs("since", version);
        f.assert_same(&ours, &theirs, &what, None);
    }

    let exclude = format!("--shallow-exclude={}", refs[case.exclude % refs.len()]);
    let what = format!("clone {exclude} v{version}");
    let outcome = f.try_clone_both("exclude", version, &[&exclude, "--no-single-branch"]);
    if same_outcome(&what, outcome) {
        let (ours, theirs) = f.clone_dirs("exclude", version);
        f.assert_same(&ours, &theirs, &what, None);
    }
}

proptest! {
    #![proptest_config(config(16))]

    #[test]
    fn shallow_clones_of_generated_histories_match_git(case in case()) {
        check(&case);
    }
}

/// A tag on a commit that the excluded branch's tip, dated no later,
/// hides only once both were met: nothing is left to send, and refstore
/// refuses the clone as git does.
#[test]
fn exclude_hides_a_tag_below_a_skewed_tip() {
    for v2 in [false, true] {
        check(&Case {
            ops: vec![
                Op::Commit { branch: 0, back: 0 },
                Op::Tag { branch: 0 },
                Op::Commit { branch: 0, back: 1 },
            ],
            packed: false,
            v2,
            single_branch: false,
            depth: 1,
            deepen: 1,
            since: 0,
            exclude: 0,
            refetch_by_ref: false,
            refetch: 0,
        });
    }
}
