//! JGit's client makes shallow clones from `refstore serve` over HTTP, in
//! protocol v0 and v2: `setDepth(1)`, `setDepth(2)`, `setShallowSince` and
//! `addShallowExclude` leave a clone that the machine's git finds complete, as deep as asked,
//! with the commits and `.git/shallow` of git's own clone of the same
//! repository.

mod served;
mod support;
use support::jgit;

use served::Served;
use std::path::Path;
use support::shallow::{time_of, Fixture};
use support::{git, isolate, stderr};

/// A history whose `main` is linear above a merge, and a `side` branch
/// that goes on after it was merged, one commit a day:
///
/// ```text
/// main:  c1 c2 M(c3) c4 c5
/// side:     \-- s1 s2 -/ s3
/// ```
fn fixture() -> Fixture {
    let f = Fixture::empty();
    f.commit("c1");
    f.git(&f.source, &["checkout", "-q", "-b", "side"]);
    f.commit("s1");
    f.git(&f.source, &["checkout", "-q", "main"]);
    f.commit("c2");
    f.git(&f.source, &["checkout", "-q", "side"]);
    f.commit("s2");
    f.git(&f.source, &["checkout", "-q", "main"]);
    f.merge("side");
    f.commit("c4");
    f.commit("c5");
    f.git(&f.source, &["checkout", "-q", "side"]);
    f.commit("s3");
    f.git(&f.source, &["checkout", "-q", "main"]);
    f
}

/// Clones `url` into `dir` with JGit and `options` (see `JGitFetch.java`),
/// its user configuration in `home`.
fn jgit_clone(home: &Path, url: &str, dir: &Path, options: &[&str]) {
    let mut cmd = jgit::java("JGitFetch");
    isolate(&mut cmd, home)
        .env(
            "JDK_JAVA_OPTIONS",
            format!("-Duser.home={}", home.display()),
        )
        .args(["clone", url, dir.to_str().unwrap()])
        .args(options);
    let out = cmd.output().expect("cannot run java");
    assert!(
        out.status.success(),
        "JGit clone {url} {options:?}: {}",
        stderr(&out)
    );
}

/// Requires the same commits and shallow boundary in JGit's clone as in
/// git's, and a clone git finds complete.
fn assert_like_git(f: &Fixture, jgit: &Path, git_clone: &Path, what: &str) {
    let ours = f.state(jgit);
    let theirs = f.state(git_clone);
    assert_eq!(ours.commits, theirs.commits, "{what}");
    assert_eq!(ours.objects, theirs.objects, "{what}");
    assert_eq!(ours.shallow, theirs.shallow, "{what}");
    assert!(!ours.shallow.is_empty(), "{what}");
    let out = git(&f.home, jgit, &["fsck", "--no-dangling"]);
    assert!(out.status.success(), "{what}: fsck: {}", stderr(&out));
    assert!(
        stderr(&out).trim().is_empty(),
        "{what}: fsck: {}",
        stderr(&out)
    );
}

#[test]
fn jgit_shallow_clones_over_http_match_git() {
    let f = fixture();
    let root = f.root.join("served");
    std::fs::create_dir_all(&root).unwrap();
    let bare = root.join("proj.git");
    f.git(
        &f.root,
        &[
            "clone",
            "-q",
            "--bare",
            f.source.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let file_url = format!("file://{}", bare.display());
    let since = time_of(5).to_string();
    // JGit's options and git's for the same clone.
    let cases: [(&str, &[&str], String); 4] = [
        ("depth1", &["--depth", "1"], "--depth=1".to_owned()),
        ("depth2", &["--depth", "2"], "--depth=2".to_owned()),
        (
            "since",
            &["--since", &since],
            format!("--shallow-since=@{since}"),
        ),
        (
            "exclude",
            &["--exclude", "side"],
            "--shallow-exclude=side".to_owned(),
        ),
    ];

    for version in ["0", "2"] {
        f.git(
            &f.root,
            &["config", "--global", "protocol.version", version],
        );
        let server = Served::start(&f.home, &root, &[]);
        let url = server.url("proj.git");
        for (name, jgit_options, git_option) in &cases {
            let what = format!("JGit {jgit_options:?} v{version}");
            let dir = f.root.join(format!("jgit-{name}-v{version}"));
            jgit_clone(&f.home, &url, &dir, jgit_options);
            if let ["--depth", depth] = jgit_options {
                let count = f.git(&dir, &["rev-list", "--count", "HEAD"]);
                assert_eq!(count.trim(), *depth, "{what}");
            }
            let git_dir = f.root.join(format!("git-{name}-v{version}"));
            f.git(
                &f.root,
                &[
                    "clone",
                    "-q",
                    "--no-single-branch",
                    git_option,
                    &file_url,
                    git_dir.to_str().unwrap(),
                ],
            );
            assert_like_git(&f, &dir, &git_dir, &what);
        }

        // JGit spoke the version asked for: a clone with nothing to
        // negotiate is one request in v0, and `ls-refs` then `fetch` in v2.
        let (_, log) = server.stop();
        let posts = log.matches("method=POST").count();
        let per_clone = if version == "2" { 2 } else { 1 };
        assert_eq!(posts, cases.len() * per_clone, "v{version}: {log}");
    }
}
