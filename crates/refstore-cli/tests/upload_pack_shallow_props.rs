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
use support::shallow::{time_of, Fixture};
use support::stderr;

/// Branches a history grows at most.
const BRANCHES: usize = 4;

/// One step of a generated history. Branch numbers are taken modulo the
/// branches that exist at that point.
#[derive(Debug, Clone)]
enum Op {
    /// A commit on branch `branch`, dated `back` days before its turn.
    Commit { branch: usize, back: u32 },
    /// A new branch from the tip of `from`.
    Branch { from: usize },
    /// A merge commit of `from` into `into`.
    Merge { from: usize, into: usize },
    /// An annotated tag on the tip of `branch`.
    Tag { branch: usize },
    /// A commit on branch `branch` that brings older trees and blobs back
    /// at other paths ([`Fixture::commit_reusing`]): what the client has
    /// only below its shallow boundary must still be sent.
    Reuse { branch: usize, back: u32 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..BRANCHES, prop_oneof![3 => Just(0u32), 1 => 1..3u32])
            .prop_map(|(branch, back)| Op::Commit { branch, back }),
        1 => (0..BRANCHES).prop_map(|from| Op::Branch { from }),
        2 => (0..BRANCHES, 0..BRANCHES).prop_map(|(from, into)| Op::Merge { from, into }),
        1 => (0..BRANCHES).prop_map(|branch| Op::Tag { branch }),
        2 => (0..BRANCHES, prop_oneof![3 => Just(0u32), 1 => 1..3u32])
            .prop_map(|(branch, back)| Op::Reuse { branch, back }),
    ]
}

/// The refs of a generated history a `--shallow-exclude` may name.
struct History {
    f: Fixture,
    refs: Vec<String>,
}

/// Runs `ops` on a source with one commit on `main`.
fn grow(ops: &[Op], packed: bool) -> History {
    let f = Fixture::empty();
    f.commit("c0");
    let mut branches = vec!["main".to_owned()];
    let mut tags = Vec::new();
    let mut current = "main".to_owned();
    let checkout = |current: &mut String, name: &str| {
        if current != name {
            f.git(&f.source, &["checkout", "-q", name]);
            *current = name.to_owned();
        }
    };
    for (n, op) in ops.iter().enumerate() {
        let name = format!("c{}", n + 1);
        match *op {
            Op::Commit { branch, back } => {
                checkout(&mut current, &branches[branch % branches.len()].clone());
                f.commit_skewed(&name, back);
            }
            Op::Branch { from } if branches.len() < BRANCHES => {
                let from = branches[from % branches.len()].clone();
                let new = format!("b{}", branches.len());
                f.git(&f.source, &["checkout", "-q", "-b", &new, &from]);
                branches.push(new.clone());
                current = new;
            }
            Op::Branch { .. } => f.commit(&name),
            Op::Merge { from, into } => {
                let from = branches[from % branches.len()].clone();
                let into = branches[into % branches.len()].clone();
                checkout(&mut current, &into);
                let merged = support::git(
                    &f.home,
                    &f.source,
                    &["merge-base", "--is-ancestor", &from, &into],
                );
                // Nothing to merge: a commit keeps the step's date.
                if merged.status.success() {
                    f.commit(&name);
                } else {
                    f.merge(&from);
                }
            }
            Op::Reuse { branch, back } => {
                checkout(&mut current, &branches[branch % branches.len()].clone());
                f.commit_reusing(&name, back);
            }
            Op::Tag { branch } => {
                let branch = &branches[branch % branches.len()];
                let tag = format!("t{n}");
                f.git(&f.source, &["tag", "-a", &tag, "-m", &tag, branch]);
                tags.push(tag);
            }
        }
    }
    if packed {
        f.git(&f.source, &["repack", "-adq"]);
    }
    branches.extend(tags);
    History { f, refs: branches }
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
    let History { f, refs } = grow(&case.ops, case.packed);
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

/// 16 cases unless `REFSTORE_PROPTEST_CASES` or `PROPTEST_CASES` says.
fn config() -> ProptestConfig {
    let cases = ["REFSTORE_PROPTEST_CASES", "PROPTEST_CASES"]
        .iter()
        .find_map(|name| std::env::var(name).ok()?.parse().ok())
        .unwrap_or(16);
    ProptestConfig {
        cases,
        // Every case runs git some hundred times; a failure shrinks in
        // bounded time.
        max_shrink_iters: 200,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config())]

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
