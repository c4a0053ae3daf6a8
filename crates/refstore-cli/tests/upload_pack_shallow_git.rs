//! Shallow clones and fetches from `refstore upload-pack` by the real git
//! client over file://, in protocol v0 and v2: `--depth`, `--shallow-since`,
//! `--shallow-exclude`, `fetch --deepen`, `fetch --depth` and
//! `fetch --unshallow` end with the same commits, objects and
//! `.git/shallow` as the same commands against git's own upload-pack, in
//! repositories that `git fsck` finds complete.

mod support;

use std::path::Path;
use support::shallow::{time_of, Fixture};

const VERSIONS: [&str; 2] = ["0", "2"];

/// A history with branches and merges, one commit a day:
///
/// ```text
/// main:  c1 c2 c3 [v1] c4 c5 M1 c6 M2 c7
/// side:        \-- s1 s2 --/      /
/// topic:             \-- t1 t2 --/   (t1 branches from s1)
/// ```
fn fixture() -> Fixture {
    let f = Fixture::empty();
    for name in ["c1", "c2", "c3"] {
        f.commit(name);
    }
    f.git(&f.source, &["tag", "-a", "v1", "-m", "version 1"]);
    f.git(&f.source, &["checkout", "-q", "-b", "side"]);
    f.commit("s1");
    f.git(&f.source, &["checkout", "-q", "-b", "topic"]);
    f.commit("t1");
    f.commit("t2");
    f.git(&f.source, &["checkout", "-q", "side"]);
    f.commit("s2");
    f.git(&f.source, &["checkout", "-q", "main"]);
    f.commit("c4");
    f.commit("c5");
    f.merge("side");
    f.commit("c6");
    f.merge("topic");
    f.commit("c7");
    f.git(&f.source, &["gc", "-q"]);
    f
}

#[test]
fn depth_clones_match_git() {
    let f = fixture();
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("depth1", version, &["--depth", "1"]);
        f.assert_same(&ours, &theirs, &format!("--depth 1 v{version}"), Some(1));
        assert_eq!(f.state(&ours).commits.len(), 1, "--depth 1 v{version}");

        // Every branch, three generations down through the merges.
        let (ours, theirs) =
            f.clone_both("depth3", version, &["--depth", "3", "--no-single-branch"]);
        f.assert_same(&ours, &theirs, &format!("--depth 3 v{version}"), None);
        let commits = f.state(&ours).commits.len();
        assert!(
            commits > 3 && commits < 13,
            "--depth 3 v{version}: {commits}"
        );
    }
}

/// A server with a reachability bitmap and a commit-graph still answers
/// shallow clones with the shallow history, not the whole one the bitmap
/// records.
#[test]
fn depth_clones_of_a_bitmapped_repository_match_git() {
    let f = fixture();
    f.git(&f.source, &["repack", "-adbq"]);
    f.git(&f.source, &["commit-graph", "write", "--reachable"]);
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("bitmapped1", version, &["--depth", "1"]);
        f.assert_same(
            &ours,
            &theirs,
            &format!("bitmapped --depth 1 v{version}"),
            Some(1),
        );
        let (ours, theirs) = f.clone_both("bitmapped2", version, &["--depth", "2"]);
        f.assert_same(
            &ours,
            &theirs,
            &format!("bitmapped --depth 2 v{version}"),
            None,
        );
        f.both(&ours, &theirs, version, &["fetch", "-q", "--unshallow"]);
        f.assert_same(
            &ours,
            &theirs,
            &format!("bitmapped --unshallow v{version}"),
            Some(0),
        );
    }
}

#[test]
fn shallow_since_and_exclude_match_git() {
    let f = fixture();
    let since = format!("--shallow-since=@{}", time_of(7));
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("since", version, &[&since]);
        f.assert_same(&ours, &theirs, &format!("{since} v{version}"), None);
        assert!(!f.state(&ours).shallow.is_empty(), "{since} v{version}");

        for exclude in ["--shallow-exclude=v1", "--shallow-exclude=side"] {
            let (ours, theirs) = f.clone_both(
                &format!("exclude-{}", exclude.len()),
                version,
                &[exclude, "--no-single-branch"],
            );
            f.assert_same(&ours, &theirs, &format!("{exclude} v{version}"), None);
            assert!(!f.state(&ours).shallow.is_empty(), "{exclude} v{version}");
        }
    }
}

#[test]
fn deepen_depth_and_unshallow_fetches_match_git() {
    let f = fixture();
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("deepen", version, &["--depth", "1"]);
        f.both(&ours, &theirs, version, &["fetch", "-q", "--deepen", "2"]);
        f.assert_same(&ours, &theirs, &format!("--deepen 2 v{version}"), None);
        assert!(f.state(&ours).commits.len() > 2, "--deepen 2 v{version}");

        // A deeper depth counted from the tips again, through the merge.
        f.both(&ours, &theirs, version, &["fetch", "-q", "--depth", "5"]);
        f.assert_same(&ours, &theirs, &format!("--depth 5 v{version}"), None);

        f.both(&ours, &theirs, version, &["fetch", "-q", "--unshallow"]);
        f.assert_same(&ours, &theirs, &format!("--unshallow v{version}"), Some(0));
        assert!(!ours.join(".git/shallow").exists());
        assert_eq!(
            f.state(&ours).commits,
            f.state(&f.source).commits,
            "--unshallow v{version}"
        );
    }
}

#[test]
fn fetches_into_a_shallow_clone_keep_its_boundary() {
    let f = fixture();
    let mut clones = Vec::new();
    for version in VERSIONS {
        clones.push((version, f.clone_both("grow", version, &["--depth", "2"])));
    }
    // New history on main, on top of what the clones have.
    f.commit("c8");
    f.commit("c9");
    for (version, (ours, theirs)) in &clones {
        f.both(ours, theirs, version, &["fetch", "-q", "origin"]);
        f.assert_same(ours, theirs, &format!("fetch v{version}"), Some(1));
        let tip = f.git(&f.source, &["rev-parse", "main"]);
        assert_eq!(f.git(ours, &["rev-parse", "origin/main"]), tip);
        // And a new depth from the new tip.
        f.both(ours, theirs, version, &["fetch", "-q", "--depth", "1"]);
        f.assert_same(ours, theirs, &format!("--depth 1 again v{version}"), None);
    }
}

#[test]
fn since_and_exclude_fetches_deepen_a_depth_clone_like_git() {
    let f = fixture();
    let since = format!("--shallow-since=@{}", time_of(3));
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("refetch", version, &["--depth", "1"]);
        f.both(&ours, &theirs, version, &["fetch", "-q", &since]);
        f.assert_same(&ours, &theirs, &format!("fetch {since} v{version}"), None);
        assert!(f.state(&ours).commits.len() > 3, "fetch {since} v{version}");
        f.both(
            &ours,
            &theirs,
            version,
            &["fetch", "-q", "--shallow-exclude=v1"],
        );
        f.assert_same(&ours, &theirs, &format!("fetch exclude v{version}"), None);
    }
}

/// The number of packed objects of a repository, counted once per pack
/// that holds them.
fn packed_objects(f: &Fixture, repo: &Path) -> usize {
    let counts = f.git(repo, &["count-objects", "-v"]);
    counts
        .lines()
        .find_map(|line| line.strip_prefix("in-pack: "))
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn deepening_sends_only_what_the_shallow_commits_lack() {
    let f = fixture();
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("lean", version, &["--depth", "1"]);
        // The fetch's pack is kept, to be counted (its objects that the
        // client has already would not show as new loose objects).
        for dir in [&ours, &theirs] {
            f.git(dir, &["config", "fetch.unpackLimit", "1"]);
        }
        let cloned = packed_objects(&f, &ours);
        assert_eq!(cloned, packed_objects(&f, &theirs), "v{version}");
        f.both(&ours, &theirs, version, &["fetch", "-q", "--deepen", "1"]);
        f.assert_same(&ours, &theirs, &format!("--deepen 1 v{version}"), None);
        let sent = packed_objects(&f, &ours) - cloned;
        let git_sent = packed_objects(&f, &theirs) - cloned;
        assert!(
            sent > 0 && sent <= git_sent,
            "v{version}: {sent} objects sent, git sends {git_sent}"
        );
    }
}
