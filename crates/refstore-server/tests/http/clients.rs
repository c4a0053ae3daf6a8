//! The machine's real git over http://127.0.0.1: clone, fetch, ls-remote
//! (protocol v0 and v2), concurrent clones, pushes that need credentials,
//! paths outside the root and non-repositories refused, for files and
//! reftable repositories. The services are the code of `upload-pack` and
//! `receive-pack`, which their own tests compare with git's.

use crate::support::alone::alone;
use crate::support::repos::{
    refstore_refs, reftable_repo, serve_three_commits, three_commits_work,
};
use crate::support::*;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A work repository with two branches and an annotated tag, and a bare
/// copy of it at `root/team/proj.git`.
fn setup(home: &Path, root: &Path) -> (PathBuf, PathBuf) {
    let served = root.join("team/proj.git");
    let work = three_commits_work(home);
    work.bare_clone(&served);
    (work.path, served)
}

#[test]
fn clone_fetch_and_ls_remote_over_http() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (work, served) = setup(home, &root);
    let server = Serve::new(&root).start();

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let clone = home.join(format!("clone-v{version}"));
        let o = git_net(
            home,
            home,
            &[
                "-c",
                &protocol,
                "clone",
                "-q",
                &server.url("team/proj.git"),
                clone.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "clone v{version}: {}", stderr(&o));
        git_ok(home, &clone, &["fsck", "--no-progress"]);
        assert_eq!(
            git_ok(
                home,
                &clone,
                &["rev-parse", "HEAD", "origin/topic", "v1^{}"]
            ),
            git_ok(home, &served, &["rev-parse", "HEAD", "topic", "v1^{}"])
        );

        let ours = git_net(
            home,
            home,
            &[
                "-c",
                &protocol,
                "ls-remote",
                "--symref",
                &server.url("team/proj.git"),
            ],
        );
        let theirs = git_net(
            home,
            home,
            &[
                "-c",
                &protocol,
                "ls-remote",
                "--symref",
                served.to_str().unwrap(),
            ],
        );
        assert!(ours.status.success(), "{}", stderr(&ours));
        assert_eq!(stdout(&ours), stdout(&theirs), "ls-remote v{version}");

        // An incremental fetch brings a new commit.
        std::fs::write(work.join("d"), format!("v{version}\n")).unwrap();
        git_ok(home, &work, &["add", "d"]);
        git_ok(home, &work, &["commit", "-q", "-m", "more"]);
        git_ok(
            home,
            &work,
            &["push", "-q", served.to_str().unwrap(), "main"],
        );
        let o = git_net(home, &clone, &["-c", &protocol, "fetch", "-q", "origin"]);
        assert!(o.status.success(), "fetch v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &clone, &["rev-parse", "origin/main"]),
            git_ok(home, &served, &["rev-parse", "main"])
        );
    }

    // Many clients at once (more than the server's 4 workers).
    let expected = git_ok(home, &served, &["rev-parse", "main"]);
    std::thread::scope(|scope| {
        let handles: Vec<_> = (0..10)
            .map(|i| {
                let (server, expected) = (&server, &expected);
                scope.spawn(move || {
                    let dir = home.join(format!("concurrent-{i}"));
                    let o = git_net(
                        home,
                        home,
                        &[
                            "clone",
                            "-q",
                            "--bare",
                            &server.url("team/proj.git"),
                            dir.to_str().unwrap(),
                        ],
                    );
                    assert!(o.status.success(), "clone {i}: {}", stderr(&o));
                    assert_eq!(&git_ok(home, &dir, &["rev-parse", "main"]), expected);
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
    });

    // Paths outside the root, non-repositories and non-smart endpoints.
    std::fs::create_dir_all(home.join("secret.git")).unwrap();
    git_ok(home, home, &["init", "-q", "--bare", "secret.git"]);
    std::os::unix::fs::symlink(home.join("secret.git"), root.join("link.git")).unwrap();
    for path in [
        "/../secret.git/info/refs?service=git-upload-pack",
        "/team/../../secret.git/info/refs?service=git-upload-pack",
        "/%2e%2e/secret.git/info/refs?service=git-upload-pack",
        "/link.git/info/refs?service=git-upload-pack",
        "/team/nothing.git/info/refs?service=git-upload-pack",
        "/team/proj.git/HEAD",
    ] {
        let (status, _) = server.raw(&format!("GET {path}"));
        assert_eq!(status, 404, "{path}");
    }
    let (status, _) = server.raw("GET /team/proj.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 200);
    let (status, _) = server.raw("GET /team/proj.git/info/refs?service=git-evil");
    assert_eq!(status, 403);
    // HEAD: the headers of the advertisement, no body.
    let (status, answer) = server.raw("HEAD /team/proj.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains("application/x-git-upload-pack-advertisement")
            && answer.ends_with("\r\n\r\n"),
        "{answer}"
    );
    let (status, _) = server.raw("HEAD /team/nothing.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 404);

    server.stop();
    let log = log.log();
    assert!(
        log.contains("refstore::access"),
        "no access log lines: {log}"
    );
    assert!(log.contains("status=404"), "{log}");
}

#[test]
fn pushes_need_allow_push_and_credentials() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (work, served) = setup(home, &root);
    let mut lines = String::from("bob:plain-pw\n");
    // A bcrypt hash written by Apache's htpasswd, an independent tool.
    let htpasswd = Command::new("htpasswd")
        .args(["-nbB", "alice", "s3cret"])
        .output()
        .expect("cannot run htpasswd: install apache2-utils (scripts/install-deps does)");
    assert!(htpasswd.status.success());
    lines.push_str(stdout(&htpasswd).trim());
    lines.push('\n');
    let before = refs_of(home, &served);

    // Read-only server: pushes are refused whoever asks.
    let read_only = Serve::new(&root).credentials(&lines).start();
    let o = git_net(
        home,
        &work,
        &[
            "push",
            &read_only.url_as("bob", "plain-pw", "team/proj.git"),
            "main:refs/heads/new",
        ],
    );
    assert!(!o.status.success());
    assert_eq!(refs_of(home, &served), before);
    read_only.stop();

    let server = Serve::new(&root).pushes(&lines).start();
    // No credentials, wrong ones: refused, nothing changes.
    for url in [
        server.url("team/proj.git"),
        server.url_as("bob", "wrong", "team/proj.git"),
        server.url_as("mallory", "plain-pw", "team/proj.git"),
    ] {
        let o = git_net(home, &work, &["push", &url, "main:refs/heads/new"]);
        assert!(!o.status.success(), "push to {url} succeeded");
        // Without a user git asks for one (and may not); with a wrong one
        // the server's 401 ends the push.
        let err = stderr(&o);
        assert!(
            err.contains("Authentication failed") || err.contains("could not read Username"),
            "{err}"
        );
        assert_eq!(refs_of(home, &served), before);
    }

    // With credentials: a new branch, then its deletion.
    let bob = server.url_as("bob", "plain-pw", "team/proj.git");
    let o = git_net(home, &work, &["push", &bob, "main:refs/heads/new"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        git_ok(home, &served, &["rev-parse", "new"]),
        git_ok(home, &work, &["rev-parse", "main"])
    );
    let alice = server.url_as("alice", "s3cret", "team/proj.git");
    let o = git_net(home, &work, &["push", &alice, ":refs/heads/new"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(refs_of(home, &served), before);
    git_ok(home, &served, &["fsck", "--no-progress"]);

    // A reftable repository is served the same way: push into it, clone
    // it back (the machine's git cannot read reftable itself).
    reftable_repo(home, &root.join("team/rt.git"));
    let rt = server.url_as("bob", "plain-pw", "team/rt.git");
    let o = git_net(home, &work, &["push", &rt, "main", "topic", "v1"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        refstore_refs(&root.join("team/rt.git")),
        git_ok(
            home,
            &work,
            &[
                "for-each-ref",
                "--format=%(objectname) %(refname)",
                "refs/heads/main",
                "refs/heads/topic",
                "refs/tags/v1"
            ]
        )
    );
    let clone = home.join("rt-clone");
    let o = git_net(
        home,
        home,
        &[
            "clone",
            "-q",
            &server.url("team/rt.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        git_ok(home, &clone, &["rev-parse", "origin/topic", "v1"]),
        git_ok(home, &work, &["rev-parse", "topic", "v1"])
    );
    git_ok(home, &clone, &["fsck", "--no-progress"]);

    server.stop();
    let log = log.log();
    assert!(
        !log.contains("plain-pw") && !log.contains("s3cret"),
        "a secret is in the log"
    );
    assert!(log.contains("user=bob"), "{log}");
    assert!(log.contains("status=401"), "{log}");
}

#[test]
fn partial_clones_over_http_fetch_missing_blobs_lazily() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let served = root.join("team/proj.git");
    serve_three_commits(home, &served);
    git_ok(home, &served, &["config", "uploadpack.allowFilter", "true"]);
    // Protocol v0 clients ask for unadvertised objects only when this is
    // offered; v2 needs nothing.
    git_ok(
        home,
        &served,
        &["config", "uploadpack.allowAnySHA1InWant", "true"],
    );
    let server = Serve::new(&root).start();
    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let clone = home.join(format!("partial-v{version}"));
        let o = git_net(
            home,
            home,
            &[
                "-c",
                &protocol,
                "clone",
                "-q",
                "--filter=blob:none",
                "--no-checkout",
                &server.url("team/proj.git"),
                clone.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "clone v{version}: {}", stderr(&o));
        git_ok(home, &clone, &["config", "protocol.version", version]);
        let missing = || {
            git_ok(
                home,
                &clone,
                &["rev-list", "--objects", "--all", "--missing=print"],
            )
            .lines()
            .filter(|line| line.starts_with('?'))
            .count()
        };
        assert_eq!(missing(), 3, "v{version}: one blob per commit left out");
        // blame reads the one version of `b` there is, fetched lazily.
        let o = git_net(home, &clone, &["blame", "--porcelain", "main", "--", "b"]);
        assert!(o.status.success(), "blame v{version}: {}", stderr(&o));
        assert!(stdout(&o).contains("\n\t1\n"), "{}", stdout(&o));
        assert_eq!(missing(), 2, "v{version}");
        let o = git_net(home, &clone, &["log", "-p", "--format=%s"]);
        assert!(o.status.success(), "log -p v{version}: {}", stderr(&o));
        assert!(stdout(&o).contains("+2"), "{}", stdout(&o));
        assert_eq!(missing(), 0, "v{version}");
        git_ok(home, &clone, &["fsck", "--no-progress"]);
    }
}

/// A request the service refuses: its `ERR` line reaches the client before
/// the response is cut short, as git's http-backend shows it.
#[test]
fn a_refused_fetch_shows_the_services_message() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    serve_three_commits(home, &root.join("team/proj.git"));
    let server = Serve::new(&root).start();
    let unknown = "1234567890123456789012345678901234567890";
    let body = format!("0032want {unknown}\n00000009done\n");
    let request = format!(
        "POST /team/proj.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let (status, answer) = server.exchange(request.as_bytes());
    assert_eq!(status, 200, "{answer}");
    assert!(
        answer.contains(&format!("ERR upload-pack: not our ref {unknown}")),
        "{answer}"
    );
    // Cut short: no last chunk.
    assert!(!answer.ends_with("0\r\n\r\n"), "{answer:?}");
}
