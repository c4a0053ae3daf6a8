//! Fetches from a repository that lacks part of the history below the
//! client's commits. A cluster node that missed a push holds the next
//! push's commit (copied to it by the node that took that push) without
//! its parent; before a fetch is answered the node brings in what the
//! wants reach, not what the haves reach. git's upload-pack answers such
//! a fetch: below a commit the client has, a missing commit ends the walk
//! there, which may send more but never less.
//!
//! Generated histories (branches, merges, dates out of order, tags), the
//! older part packed with a reachability bitmap or not, are cloned, grown,
//! stripped of random commits that only the client's side reaches, and
//! fetched from through refstore's upload-pack (served in this process,
//! reached by git through a relay) and through git's, in protocol v0 or
//! v2: refstore must succeed where git does, and both clients must end
//! with the same refs and objects, complete (`git fsck`).
//!
//! Few cases run by default; `REFSTORE_PROPTEST_CASES` or
//! `PROPTEST_CASES` asks for more.

use super::stdio;
use proptest::prelude::*;
use refstore_testsupport::fetch_history::{config, op, History, Op};
use refstore_testsupport::stderr;
use std::collections::BTreeSet;

#[derive(Debug, Clone)]
struct Case {
    /// The history the clients clone.
    before: Vec<Op>,
    /// What the source gains after the clones.
    after: Vec<Op>,
    /// The first `n % (before.len() + 1)` steps of `before` are packed
    /// with a reachability bitmap, the rest stays loose.
    bitmap_after: Option<usize>,
    v2: bool,
    /// Bit `i % 64` strips the `i`th commit that may go.
    strip: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(op(), 1..10),
        prop::collection::vec(op(), 1..8),
        prop::option::of(any::<usize>()),
        any::<bool>(),
        any::<u64>(),
    )
        .prop_map(|(before, after, bitmap_after, v2, strip)| Case {
            before,
            after,
            bitmap_after,
            v2,
            strip,
        })
}

/// The lines of `text`, as a set.
fn lines(text: &str) -> BTreeSet<String> {
    text.lines().map(str::to_owned).collect()
}

/// Removes from the source the loose commits that `case.strip` picks
/// among those a fetch's wants do not reach and no ref points to; their
/// ids.
fn strip(history: &History, client: &std::path::Path, mask: u64) -> Vec<String> {
    let f = &history.f;
    let held = lines(&f.git(client, &["rev-list", "--all", "--objects"]));
    let held: BTreeSet<String> = held
        .iter()
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .collect();
    let tips = lines(&f.git(
        &f.source,
        &[
            "for-each-ref",
            "--format=%(objectname)",
            "refs/heads",
            "refs/tags",
        ],
    ));
    let wants: Vec<&str> = tips
        .iter()
        .filter(|tip| !held.contains(*tip))
        .map(String::as_str)
        .collect();
    // What the wants reach is what the node brought in before answering.
    let kept = match wants.is_empty() {
        true => BTreeSet::new(),
        false => {
            let mut args = vec!["rev-list"];
            args.extend(&wants);
            lines(&f.git(&f.source, &args))
        }
    };
    let peeled = lines(&f.git(
        &f.source,
        &[
            "for-each-ref",
            "--format=%(objectname)%0a%(*objectname)",
            "refs/heads",
            "refs/tags",
        ],
    ));
    let objects = f.source.join(".git/objects");
    let mut stripped = Vec::new();
    let commits = f.git(&f.source, &["rev-list", "--all"]);
    let candidates = commits.lines().filter(|id| {
        !kept.contains(*id)
            && !peeled.contains(*id)
            && objects.join(&id[..2]).join(&id[2..]).exists()
    });
    for (i, id) in candidates.enumerate() {
        if mask >> (i % 64) & 1 == 1 {
            std::fs::remove_file(objects.join(&id[..2]).join(&id[2..])).unwrap();
            stripped.push(id.to_owned());
        }
    }
    stripped
}

/// Runs `case`; the commits stripped from the server.
fn check(case: &Case) -> Vec<String> {
    let relay = stdio::relay();
    let mut history = History::new(&relay.command("upload-pack"));
    match case.bitmap_after {
        Some(n) => {
            let (packed, loose) = case.before.split_at(n % (case.before.len() + 1));
            history.grow(packed);
            history.f.git(&history.f.source, &["repack", "-adbq"]);
            history.grow(loose);
        }
        None => history.grow(&case.before),
    }
    let f = &history.f;
    let version = if case.v2 { "2" } else { "0" };
    let (ours, theirs) = f.clone_both("clone", version, &["--no-single-branch"]);
    history.grow(&case.after);
    let f = &history.f;
    let stripped = strip(&history, &ours, case.strip);
    let what = format!("fetch v{version} with {stripped:?} missing on the server");
    let args = ["fetch", "-q", "origin"];
    let (out_ours, out_theirs) = (
        f.remote(&ours, version, true, &args),
        f.remote(&theirs, version, false, &args),
    );
    assert!(
        out_theirs.status.success(),
        "{what}: git's upload-pack failed: {}",
        stderr(&out_theirs)
    );
    assert!(
        out_ours.status.success(),
        "{what}: refstore's upload-pack failed where git's did not: {}",
        stderr(&out_ours)
    );
    f.assert_same(&ours, &theirs, &what, None);
    stripped
}

// A gap the walk meets needs a wanted commit dated before it, and about
// one case in twenty has one: 48 cases.
proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn fetches_below_missing_history_match_git(case in case()) {
        check(&case);
    }
}

/// The client has a branch whose tip the server holds but not the tip's
/// parent, and wants a branch dated before that parent: the walk of what
/// the client has goes past the tip and meets the gap before the wanted
/// commit is reached.
#[test]
fn a_missing_parent_of_a_commit_the_client_has_ends_the_walk() {
    for (v2, bitmap_after) in [
        (false, None),
        (true, None),
        (false, Some(2)),
        (true, Some(2)),
    ] {
        let stripped = check(&Case {
            before: vec![
                Op::Commit { branch: 0, back: 0 },
                Op::Branch { from: 0 },
                Op::Commit { branch: 1, back: 0 },
                Op::Commit { branch: 1, back: 0 },
            ],
            after: vec![Op::Branch { from: 0 }, Op::Commit { branch: 2, back: 3 }],
            bitmap_after,
            v2,
            strip: u64::MAX,
        });
        // The tip's parent on the branch the client has.
        assert_eq!(stripped.len(), 1, "{stripped:?}");
    }
}
