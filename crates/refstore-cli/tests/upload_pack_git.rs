//! `refstore upload-pack` serving the real git client over file://, in
//! protocol v0 and v2, compared with git's own upload-pack on the same
//! repository: the same refs listed, cloned and fetched, and repositories
//! that `git fsck` finds complete.

mod support;

use std::path::{Path, PathBuf};
use support::fixtures::Sandbox;
use support::{git, git_ok, stderr};

const VERSIONS: [&str; 2] = ["0", "2"];

/// The `--upload-pack` value that runs refstore.
fn refstore_upload_pack() -> String {
    format!("{} upload-pack", env!("CARGO_BIN_EXE_refstore"))
}

/// A home and the repositories beside it (through `Deref`).
struct Fixture {
    sandbox: Sandbox,
    /// The served repository (with a work tree).
    source: PathBuf,
}

impl std::ops::Deref for Fixture {
    type Target = Sandbox;
    fn deref(&self) -> &Sandbox {
        &self.sandbox
    }
}

impl Fixture {
    /// A repository with two branches, merges, a subdirectory, annotated,
    /// lightweight and nested tags, part of it packed and part loose.
    fn new() -> Fixture {
        let sandbox = Sandbox::new();
        let source = sandbox.init("source").path;
        let fixture = Fixture { sandbox, source };
        for i in 0..4 {
            fixture.commit(&format!("first {i}"));
        }
        fixture.git(&fixture.source, &["tag", "-a", "v1", "-m", "version 1"]);
        fixture.git(
            &fixture.source,
            &["tag", "-a", "v1-signed-off", "-m", "tag of a tag", "v1"],
        );
        fixture.git(&fixture.source, &["checkout", "-q", "-b", "side", "HEAD~2"]);
        fixture.commit("side 1");
        fixture.git(&fixture.source, &["tag", "light"]);
        fixture.git(&fixture.source, &["checkout", "-q", "main"]);
        fixture.git(&fixture.source, &["merge", "-q", "--no-edit", "side"]);
        // Older objects packed, with deltas; newer ones loose.
        fixture.git(&fixture.source, &["gc", "-q"]);
        fixture.commit("after gc");
        fixture
    }

    fn git(&self, cwd: &Path, args: &[&str]) -> String {
        git_ok(&self.home, cwd, args)
    }

    /// Commits a change of several files in the source repository.
    fn commit(&self, message: &str) {
        let dir = self.source.join("dir").join("sub");
        std::fs::create_dir_all(&dir).unwrap();
        // One growing file per kind of commit: branches never conflict.
        let file = dir.join(message.split(' ').next().unwrap());
        let mut text = std::fs::read_to_string(&file).unwrap_or_default();
        for line in 0..50 {
            text.push_str(&format!("{message} line {line}\n"));
        }
        std::fs::write(&file, &text).unwrap();
        std::fs::write(self.source.join(format!("{message}.txt")), message).unwrap();
        self.git(&self.source, &["add", "-A"]);
        self.git(&self.source, &["commit", "-q", "-m", message]);
    }

    fn url(&self) -> String {
        format!("file://{}", self.source.display())
    }

    /// Runs a git command that talks to the source, through refstore's
    /// upload-pack or git's own, in protocol `version`.
    fn remote(
        &self,
        cwd: &Path,
        version: &str,
        refstore: bool,
        args: &[&str],
    ) -> std::process::Output {
        let mut full = vec!["-c".to_owned(), format!("protocol.version={version}")];
        let mut args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        if refstore {
            // The option goes right after the subcommand.
            args.insert(1, format!("--upload-pack={}", refstore_upload_pack()));
        }
        full.extend(args);
        let full: Vec<&str> = full.iter().map(String::as_str).collect();
        git(&self.home, cwd, &full)
    }

    fn remote_ok(&self, cwd: &Path, version: &str, refstore: bool, args: &[&str]) -> String {
        let out = self.remote(cwd, version, refstore, args);
        assert!(
            out.status.success(),
            "git {args:?} (refstore: {refstore}, v{version}): {}",
            stderr(&out)
        );
        String::from_utf8(out.stdout).unwrap()
    }

    fn refs(&self, repo: &Path) -> String {
        self.git(
            repo,
            &[
                "for-each-ref",
                "--format=%(objectname) %(objecttype) %(refname)",
            ],
        )
    }

    fn fsck(&self, repo: &Path) {
        let out = git(&self.home, repo, &["fsck", "--strict", "--no-dangling"]);
        assert!(
            out.status.success(),
            "fsck in {}: {}",
            repo.display(),
            stderr(&out)
        );
        // A repository that only fetched has an unborn HEAD: a notice.
        let messages = stderr(&out);
        let problems: Vec<&str> = messages
            .lines()
            .filter(|line| !line.starts_with("notice: HEAD points to an unborn branch"))
            .collect();
        assert!(
            problems.is_empty(),
            "fsck in {}: {problems:?}",
            repo.display()
        );
    }
}

#[test]
fn ls_remote_lists_what_git_lists() {
    let f = Fixture::new();
    for version in VERSIONS {
        for args in [
            &["ls-remote"][..],
            &["ls-remote", "--symref"],
            &["ls-remote", "--tags"],
            &["ls-remote", "--heads"],
        ] {
            let mut args = args.to_vec();
            let url = f.url();
            args.push(&url);
            let ours = f.remote_ok(&f.root, version, true, &args);
            let theirs = f.remote_ok(&f.root, version, false, &args);
            assert_eq!(ours, theirs, "{args:?} v{version}");
            if args.len() == 2 {
                assert!(ours.contains("refs/tags/v1^{}"), "{ours}");
            }
        }
    }
}

#[test]
fn clone_and_incremental_fetch_match_git() {
    let f = Fixture::new();
    for version in VERSIONS {
        let ours = f.root.join(format!("ours-v{version}"));
        let theirs = f.root.join(format!("theirs-v{version}"));
        for (dir, refstore) in [(&ours, true), (&theirs, false)] {
            let dir = dir.to_str().unwrap();
            f.remote_ok(
                &f.root,
                version,
                refstore,
                &["clone", "-q", "--no-local", &f.url(), dir],
            );
        }
        f.fsck(&ours);
        assert_eq!(f.refs(&ours), f.refs(&theirs), "clone v{version}");
        assert_eq!(
            f.git(&ours, &["rev-parse", "HEAD"]),
            f.git(&f.source, &["rev-parse", "HEAD"])
        );
    }

    // New history on both branches and a new annotated tag.
    f.commit("second 1");
    f.commit("second 2");
    f.git(&f.source, &["tag", "-a", "v2", "-m", "version 2"]);
    f.git(&f.source, &["checkout", "-q", "side"]);
    f.commit("side 2");
    f.git(&f.source, &["checkout", "-q", "main"]);
    for version in VERSIONS {
        let ours = f.root.join(format!("ours-v{version}"));
        let theirs = f.root.join(format!("theirs-v{version}"));
        for (dir, refstore) in [(&ours, true), (&theirs, false)] {
            f.remote_ok(dir, version, refstore, &["fetch", "-q", "origin"]);
        }
        f.fsck(&ours);
        assert_eq!(f.refs(&ours), f.refs(&theirs), "fetch v{version}");
        assert!(f.refs(&ours).contains("tag refs/tags/v2"));
        // Nothing new: the fetch is a no-op, not an error.
        f.remote_ok(&ours, version, true, &["fetch", "-q", "origin"]);
        assert_eq!(f.refs(&ours), f.refs(&theirs), "second fetch v{version}");
    }
}

#[test]
fn fetching_one_branch_with_or_without_tags_matches_git() {
    let f = Fixture::new();
    for version in VERSIONS {
        for tags in ["--no-tags", "--tags"] {
            let mut results = Vec::new();
            for refstore in [true, false] {
                let dir = f.root.join(format!("one-{version}{tags}-{refstore}"));
                f.git(&f.root, &["init", "-q", dir.to_str().unwrap()]);
                f.remote_ok(
                    &dir,
                    version,
                    refstore,
                    &["fetch", "-q", tags, &f.url(), "side:refs/heads/copy"],
                );
                f.fsck(&dir);
                results.push(f.refs(&dir));
            }
            assert_eq!(results[0], results[1], "v{version} {tags}");
            assert!(results[0].contains("refs/heads/copy"));
            assert_eq!(
                results[0].contains("refs/tags/v1-signed-off"),
                tags == "--tags"
            );
        }
    }
}

#[test]
fn tags_pointing_into_a_fetched_branch_come_along() {
    let f = Fixture::new();
    for version in VERSIONS {
        let mut results = Vec::new();
        for refstore in [true, false] {
            let dir = f.root.join(format!("follow-{version}-{refstore}"));
            f.git(&f.root, &["init", "-q", dir.to_str().unwrap()]);
            // A remote tracking main only: tags on its history are
            // followed, through include-tag in the same pack.
            f.git(&dir, &["remote", "add", "-t", "main", "origin", &f.url()]);
            f.remote_ok(&dir, version, refstore, &["fetch", "-q", "origin"]);
            f.fsck(&dir);
            results.push(f.refs(&dir));
        }
        assert_eq!(results[0], results[1], "v{version}");
        assert!(results[0].contains("tag refs/tags/v1\n"), "{}", results[0]);
        assert!(
            !results[0].contains("refs/remotes/origin/side"),
            "{}",
            results[0]
        );
    }
}

#[test]
fn an_unknown_object_is_refused_as_git_refuses_it() {
    let f = Fixture::new();
    let unknown = "0123456789012345678901234567890123456789";
    for version in VERSIONS {
        let dir = f.root.join(format!("unknown-{version}"));
        f.git(&f.root, &["init", "-q", dir.to_str().unwrap()]);
        let out = f.remote(&dir, version, true, &["fetch", &f.url(), unknown]);
        let theirs = f.remote(&dir, version, false, &["fetch", &f.url(), unknown]);
        assert_eq!(out.status.code(), theirs.status.code(), "v{version}");
        let err = stderr(&out);
        // v0 offers no allow-*-sha1-in-want by default, so the client
        // refuses to ask; v2 lets it ask and the server refuses.
        let expected = match version {
            "0" => format!("Server does not allow request for unadvertised object {unknown}"),
            _ => format!("fatal: remote error: upload-pack: not our ref {unknown}"),
        };
        assert!(err.contains(&expected), "v{version}: {err}");
        assert!(stderr(&theirs).contains(&expected), "v{version}");
        assert!(!err.contains("panicked"), "{err}");
    }
}

#[test]
fn sha256_repositories_are_served() {
    let f = Fixture::new();
    let source = f.root.join("sha256");
    let source_dir = source.to_str().unwrap();
    f.git(
        &f.root,
        &[
            "init",
            "-q",
            "--object-format=sha256",
            "-b",
            "main",
            source_dir,
        ],
    );
    for n in 0..3 {
        let text: String = (0..200 * (n + 1)).map(|i| format!("line {i}\n")).collect();
        std::fs::write(source.join("file"), text).unwrap();
        f.git(&source, &["add", "file"]);
        f.git(&source, &["commit", "-q", "-m", &format!("commit {n}")]);
    }
    f.git(&source, &["tag", "-a", "v1", "-m", "tag"]);
    let url = format!("file://{source_dir}");
    for version in VERSIONS {
        let mut listings = Vec::new();
        for refstore in [true, false] {
            listings.push(f.remote_ok(&f.root, version, refstore, &["ls-remote", &url]));
        }
        assert_eq!(listings[0], listings[1], "v{version}");
        let clone = f.root.join(format!("sha256-clone-{version}"));
        f.remote_ok(
            &f.root,
            version,
            true,
            &["clone", "-q", &url, clone.to_str().unwrap()],
        );
        f.fsck(&clone);
        assert_eq!(
            f.git(&clone, &["rev-parse", "HEAD", "v1"]),
            f.git(&source, &["rev-parse", "HEAD", "v1"])
        );
    }
}
