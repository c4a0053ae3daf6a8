//! Shallow clones and fetches from `refstore upload-pack` by the real git
//! client over file://, in protocol v0 and v2: `--depth`, `--shallow-since`,
//! `--shallow-exclude`, `fetch --deepen`, `fetch --depth` and
//! `fetch --unshallow` end with the same commits, objects and
//! `.git/shallow` as the same commands against git's own upload-pack, in
//! repositories that `git fsck` finds complete.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use support::{git, git_ok, isolate, stderr};

const VERSIONS: [&str; 2] = ["0", "2"];

/// The committer time of the `n`th commit of the fixture.
fn time_of(n: u32) -> i64 {
    1_600_000_000 + i64::from(n) * 86_400
}

struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    root: PathBuf,
    source: PathBuf,
    commits: std::cell::Cell<u32>,
}

impl Fixture {
    /// A history with branches and merges, one commit a day:
    ///
    /// ```text
    /// main:  c1 c2 c3 [v1] c4 c5 M1 c6 M2 c7
    /// side:        \-- s1 s2 --/      /
    /// topic:             \-- t1 t2 --/   (t1 branches from s1)
    /// ```
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().join("home");
        let root = tmp.path().join("work");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(&root).unwrap();
        let source = root.join("source");
        let f = Fixture {
            _tmp: tmp,
            home,
            root,
            source,
            commits: std::cell::Cell::new(0),
        };
        f.git(&f.root, &["init", "-q", "-b", "main", "source"]);
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

    fn git(&self, cwd: &Path, args: &[&str]) -> String {
        git_ok(&self.home, cwd, args)
    }

    /// Runs git with the committer and author dates of the next commit.
    fn git_dated(&self, args: &[&str]) {
        let n = self.commits.get() + 1;
        self.commits.set(n);
        let date = format!("@{} +0000", time_of(n));
        let out = isolate(&mut Command::new("git"), &self.home)
            .env("GIT_COMMITTER_DATE", &date)
            .env("GIT_AUTHOR_DATE", &date)
            .args(args)
            .current_dir(&self.source)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    }

    fn commit(&self, name: &str) {
        // A shared file that every commit changes, and one of its own.
        let shared = self.source.join("shared.txt");
        let mut text = std::fs::read_to_string(&shared).unwrap_or_default();
        text.push_str(&format!("{name}\n"));
        std::fs::write(&shared, text).unwrap();
        std::fs::create_dir_all(self.source.join("dir")).unwrap();
        std::fs::write(self.source.join("dir").join(name), name.repeat(100)).unwrap();
        self.git(&self.source, &["add", "-A"]);
        self.git_dated(&["commit", "-q", "-m", name]);
    }

    fn merge(&self, branch: &str) {
        let out = git(
            &self.home,
            &self.source,
            &["merge", "-q", "--no-commit", branch],
        );
        // shared.txt conflicts: keep both sides' lines.
        if !out.status.success() {
            let text = std::fs::read_to_string(self.source.join("shared.txt")).unwrap();
            let text: String = text
                .lines()
                .filter(|l| {
                    !l.starts_with("<<<<<<<")
                        && !l.starts_with("=======")
                        && !l.starts_with(">>>>>>>")
                })
                .map(|l| format!("{l}\n"))
                .collect();
            std::fs::write(self.source.join("shared.txt"), text).unwrap();
            self.git(&self.source, &["add", "-A"]);
        }
        self.git_dated(&["commit", "-q", "-m", &format!("merge {branch}")]);
    }

    fn url(&self) -> String {
        format!("file://{}", self.source.display())
    }

    /// Runs a git command that talks to the source through refstore's
    /// upload-pack or git's own, in protocol `version`.
    fn remote_ok(&self, cwd: &Path, version: &str, refstore: bool, args: &[&str]) {
        let mut full = vec!["-c".to_owned(), format!("protocol.version={version}")];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        if refstore {
            args.insert(
                1,
                format!(
                    "--upload-pack={} upload-pack",
                    env!("CARGO_BIN_EXE_refstore")
                ),
            );
        }
        full.extend(args.iter().cloned());
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        let out = git(&self.home, cwd, &full);
        assert!(
            out.status.success(),
            "git {args:?} (refstore: {refstore}, v{version}): {}",
            stderr(&out)
        );
    }

    /// Clones with `options` through refstore and through git, into
    /// `<name>-ours-v<version>` and `<name>-theirs-v<version>`.
    fn clone_both(&self, name: &str, version: &str, options: &[&str]) -> (PathBuf, PathBuf) {
        let ours = self.root.join(format!("{name}-ours-v{version}"));
        let theirs = self.root.join(format!("{name}-theirs-v{version}"));
        for (dir, refstore) in [(&ours, true), (&theirs, false)] {
            let url = self.url();
            let mut args = vec!["clone", "-q"];
            args.extend_from_slice(options);
            args.push(&url);
            args.push(dir.to_str().unwrap());
            self.remote_ok(&self.root, version, refstore, &args);
        }
        (ours, theirs)
    }

    /// Runs `args` in both clones, each against its server.
    fn both(&self, ours: &Path, theirs: &Path, version: &str, args: &[&str]) {
        self.remote_ok(ours, version, true, args);
        self.remote_ok(theirs, version, false, args);
    }

    /// The commits, objects and shallow boundary of a clone.
    fn state(&self, repo: &Path) -> (Vec<String>, Vec<String>, Vec<String>) {
        let sorted = |text: String| {
            let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
            lines.sort();
            lines
        };
        let commits = sorted(self.git(repo, &["rev-list", "--all"]));
        let objects = sorted(self.git(repo, &["rev-list", "--all", "--objects"]));
        let shallow = std::fs::read_to_string(repo.join(".git/shallow")).unwrap_or_default();
        (commits, objects, sorted(shallow))
    }

    /// Requires the same state in both clones, a complete `ours` and a
    /// shallow boundary of `shallow` commits.
    fn assert_same(&self, ours: &Path, theirs: &Path, what: &str, shallow: Option<usize>) {
        let state = self.state(ours);
        assert_eq!(state, self.state(theirs), "{what}");
        if let Some(n) = shallow {
            assert_eq!(state.2.len(), n, "{what}: {:?}", state.2);
        }
        let out = git(&self.home, ours, &["fsck", "--strict", "--no-dangling"]);
        assert!(out.status.success(), "{what}: fsck: {}", stderr(&out));
        assert!(
            stderr(&out).trim().is_empty(),
            "{what}: fsck: {}",
            stderr(&out)
        );
    }
}

#[test]
fn depth_clones_match_git() {
    let f = Fixture::new();
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("depth1", version, &["--depth", "1"]);
        f.assert_same(&ours, &theirs, &format!("--depth 1 v{version}"), Some(1));
        assert_eq!(f.state(&ours).0.len(), 1, "--depth 1 v{version}");

        // Every branch, three generations down through the merges.
        let (ours, theirs) =
            f.clone_both("depth3", version, &["--depth", "3", "--no-single-branch"]);
        f.assert_same(&ours, &theirs, &format!("--depth 3 v{version}"), None);
        let commits = f.state(&ours).0.len();
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
    let f = Fixture::new();
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
    let f = Fixture::new();
    let since = format!("--shallow-since=@{}", time_of(7));
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("since", version, &[&since]);
        f.assert_same(&ours, &theirs, &format!("{since} v{version}"), None);
        assert!(!f.state(&ours).2.is_empty(), "{since} v{version}");

        for exclude in ["--shallow-exclude=v1", "--shallow-exclude=side"] {
            let (ours, theirs) = f.clone_both(
                &format!("exclude-{}", exclude.len()),
                version,
                &[exclude, "--no-single-branch"],
            );
            f.assert_same(&ours, &theirs, &format!("{exclude} v{version}"), None);
            assert!(!f.state(&ours).2.is_empty(), "{exclude} v{version}");
        }
    }
}

#[test]
fn deepen_depth_and_unshallow_fetches_match_git() {
    let f = Fixture::new();
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("deepen", version, &["--depth", "1"]);
        f.both(&ours, &theirs, version, &["fetch", "-q", "--deepen", "2"]);
        f.assert_same(&ours, &theirs, &format!("--deepen 2 v{version}"), None);
        assert!(f.state(&ours).0.len() > 2, "--deepen 2 v{version}");

        // A deeper depth counted from the tips again, through the merge.
        f.both(&ours, &theirs, version, &["fetch", "-q", "--depth", "5"]);
        f.assert_same(&ours, &theirs, &format!("--depth 5 v{version}"), None);

        f.both(&ours, &theirs, version, &["fetch", "-q", "--unshallow"]);
        f.assert_same(&ours, &theirs, &format!("--unshallow v{version}"), Some(0));
        assert!(!ours.join(".git/shallow").exists());
        assert_eq!(
            f.state(&ours).0,
            f.state(&f.source).0,
            "--unshallow v{version}"
        );
    }
}

#[test]
fn fetches_into_a_shallow_clone_keep_its_boundary() {
    let f = Fixture::new();
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
    let f = Fixture::new();
    let since = format!("--shallow-since=@{}", time_of(3));
    for version in VERSIONS {
        let (ours, theirs) = f.clone_both("refetch", version, &["--depth", "1"]);
        f.both(&ours, &theirs, version, &["fetch", "-q", &since]);
        f.assert_same(&ours, &theirs, &format!("fetch {since} v{version}"), None);
        assert!(f.state(&ours).0.len() > 3, "fetch {since} v{version}");
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
    let f = Fixture::new();
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
