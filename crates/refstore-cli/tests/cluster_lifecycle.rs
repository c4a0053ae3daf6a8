//! A cluster's repositories are created, deleted, renamed and listed with
//! `refstore cluster` or a node's admin endpoint, and every node follows:
//! clones through any node check out the default branch, a node that was
//! down applies what it missed before it serves, a repository on a node's
//! disk that the cluster does not hold is refused, and hostile names
//! change nothing.

mod cluster;
mod support;

use cluster::{Objects, TestCluster};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::{git_ok, stderr, stdout};

/// Three nodes, a push's objects on two of them.
fn start(home: &Path) -> TestCluster {
    TestCluster::start_with(home, 1, 3, Objects::Replicated { copies: 2 })
}

/// Waits up to ten seconds for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn ok(o: &std::process::Output) -> String {
    assert!(o.status.success(), "{}", stderr(o));
    stdout(o)
}

/// The incarnation the copy of `name` on node `i` carries, if there is one.
fn marker(c: &TestCluster, i: usize, name: &str) -> Option<String> {
    std::fs::read_to_string(c.nodes[i].root.join(name).join("refstore-cluster-id"))
        .ok()
        .map(|id| id.trim().to_owned())
}

/// Clones `name` through node `i`, checks that the default branch is
/// checked out with no warning about HEAD, and returns HEAD's id.
fn clone_checked(c: &TestCluster, i: usize, name: &str, dest: &str) -> String {
    let dest = c.home.join(dest);
    let o = c.git(&["clone", &c.nodes[i].url_of(name), dest.to_str().unwrap()]);
    let err = stderr(&o);
    assert!(
        o.status.success(),
        "clone through {}: {err}",
        c.nodes[i].name
    );
    assert!(
        !err.contains("remote HEAD refers to nonexistent ref"),
        "clone through {}: {err}",
        c.nodes[i].name
    );
    let branch = git_ok(&c.home, &dest, &["symbolic-ref", "HEAD"]);
    assert_eq!(branch.trim(), "refs/heads/main");
    git_ok(&c.home, &dest, &["rev-parse", "HEAD"])
        .trim()
        .to_owned()
}

/// The names of every file and directory below `dir`, recursively.
fn tree(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(d) = pending.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if entry.file_type().unwrap().is_dir() {
                pending.push(path.clone());
            }
            found.push(path);
        }
    }
    found.sort();
    found
}

fn has_object(c: &TestCluster, i: usize, name: &str, id: &str) -> bool {
    let dir = c.nodes[i].root.join(name);
    support::run_isolated(
        "git",
        &c.home,
        &dir,
        &["cat-file", "-e", &format!("{id}^{{commit}}")],
        b"",
    )
    .status
    .success()
}

#[test]
fn a_created_repository_is_served_by_every_node_with_its_head() {
    let tmp = tempfile::tempdir().unwrap();
    let c = start(tmp.path());
    ok(&c.cluster("create", &["--initial-branch", "main", "team/new.git"]));
    let o = c.git(&["push", &c.nodes[0].url_of("team/new.git"), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let main = c.rev("main");
    for i in 0..3 {
        assert_eq!(
            clone_checked(&c, i, "team/new.git", &format!("clone-{i}")),
            main
        );
        assert!(marker(&c, i, "team/new.git").is_some());
    }
    // The client may name it without `.git`, as git's servers allow.
    let o = c.git(&["ls-remote", &c.nodes[1].url_of("team/new")]);
    assert!(stdout(&o).contains("refs/heads/main"), "{}", stderr(&o));

    let listed = ok(&c.cluster("list", &[]));
    assert_eq!(
        listed,
        "repo.git\tsha1\tfiles\trefs/heads/main\nteam/new.git\tsha1\tfiles\trefs/heads/main\n"
    );
    // git's defaults, and another format.
    ok(&c.cluster("create", &["plain.git"]));
    ok(&c.cluster(
        "create",
        &[
            "--object-format",
            "sha256",
            "--ref-format",
            "reftable",
            "wide.git",
        ],
    ));
    let listed = ok(&c.cluster("list", &[]));
    assert!(
        listed.contains("plain.git\tsha1\tfiles\trefs/heads/master\n"),
        "{listed}"
    );
    assert!(
        listed.contains("wide.git\tsha256\treftable\trefs/heads/master\n"),
        "{listed}"
    );
    eventually("every node has the sha256 repository", || {
        (0..3).all(|i| marker(&c, i, "wide.git").is_some())
    });
    // (The machine's git may predate reftable: the configuration says it.)
    let config = std::fs::read_to_string(c.nodes[2].root.join("wide.git/config")).unwrap();
    assert!(config.contains("objectformat = sha256"), "{config}");
    assert!(config.contains("refstorage = reftable"), "{config}");
    // A second create of the same name is refused.
    let o = c.cluster("create", &["plain.git"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("exists already"), "{}", stderr(&o));
}

#[test]
fn a_deletion_reaches_a_node_that_was_down() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = start(tmp.path());
    ok(&c.cluster("create", &["-b", "main", "doomed.git"]));
    let o = c.git(&["push", &c.nodes[0].url_of("doomed.git"), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let main = c.rev("main");
    eventually("every node has the repository", || {
        (0..3).all(|i| marker(&c, i, "doomed.git").is_some())
    });
    let old = marker(&c, 2, "doomed.git").unwrap();

    c.kill_node(2);
    ok(&c.cluster("delete", &["doomed.git"]));
    for i in 0..2 {
        eventually("the running nodes removed their copy", || {
            !c.nodes[i].root.join("doomed.git").exists()
        });
        let o = c.git(&["ls-remote", &c.nodes[i].url_of("doomed.git")]);
        assert!(!o.status.success(), "{}", stdout(&o));
    }
    assert!(c.nodes[2].root.join("doomed.git").exists());
    assert!(!ok(&c.cluster("list", &[])).contains("doomed.git"));

    c.start_node(2);
    // Applied before the node serves anything.
    assert!(!c.nodes[2].root.join("doomed.git").exists());
    let o = c.git(&["ls-remote", &c.nodes[2].url_of("doomed.git")]);
    assert!(!o.status.success(), "{}", stdout(&o));

    // Created again while a node is down: that node's old copy is not
    // taken for the new repository.
    c.kill_node(1);
    ok(&c.cluster("create", &["-b", "main", "doomed.git"]));
    c.start_node(1);
    let new = marker(&c, 1, "doomed.git").expect("created at startup");
    assert_ne!(new, old);
    assert!(!has_object(&c, 1, "doomed.git", &main));
    let o = c.git(&["ls-remote", &c.nodes[1].url_of("doomed.git")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains(&main), "{}", stdout(&o));
}

#[test]
fn a_rename_reaches_a_node_that_was_down_and_keeps_its_objects() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = start(tmp.path());
    ok(&c.cluster("create", &["-b", "main", "old.git"]));
    let o = c.git(&["push", &c.nodes[0].url_of("old.git"), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let main = c.rev("main");
    // Every node holds the objects (the third fetches them for a clone).
    clone_checked(&c, 1, "old.git", "before");
    clone_checked(&c, 2, "old.git", "before-2");

    c.kill_node(1);
    ok(&c.cluster("rename", &["old.git", "team/new.git"]));
    for i in [0, 2] {
        eventually("the running nodes moved their copy", || {
            !c.nodes[i].root.join("old.git").exists()
                && c.nodes[i].root.join("team/new.git").exists()
        });
        assert_eq!(
            clone_checked(&c, i, "team/new.git", &format!("after-{i}")),
            main
        );
    }
    // A rename onto a taken name is refused, and changes nothing.
    ok(&c.cluster("create", &["taken.git"]));
    let before = ok(&c.cluster("list", &[]));
    let o = c.cluster("rename", &["team/new.git", "taken.git"]);
    assert!(!o.status.success());
    assert_eq!(ok(&c.cluster("list", &[])), before);

    c.start_node(1);
    assert!(!c.nodes[1].root.join("old.git").exists());
    assert!(
        has_object(&c, 1, "team/new.git", &main),
        "the copy was moved, not made anew"
    );
    assert_eq!(clone_checked(&c, 1, "team/new.git", "after-1"), main);
    let o = c.git(&["ls-remote", &c.nodes[1].url_of("old.git")]);
    assert!(!o.status.success());
}

#[test]
fn a_repository_the_cluster_does_not_hold_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let c = start(tmp.path());
    let root = &c.nodes[0].root;
    git_ok(&c.home, root, &["init", "-q", "--bare", "stray.git"]);
    let expected = "fatal: remote error: repository 'stray.git' is not in the cluster; \
                    create it with `refstore cluster create` or import it with `refstore cluster import`";
    for url in [c.nodes[0].url_of("stray.git"), c.nodes[0].url_of("stray")] {
        let o = c.git(&["ls-remote", &url]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(expected), "{}", stderr(&o));
        let o = c.git(&["push", &url, "main"]);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(expected), "{}", stderr(&o));
    }
    // Nothing was written to it.
    let refs = git_ok(&c.home, &root.join("stray.git"), &["for-each-ref"]);
    assert_eq!(refs, "");

    // Imported, it is served.
    let o = c.refstore(&[
        "cluster",
        "import",
        "--cluster",
        c.nodes[0].config.to_str().unwrap(),
        root.join("stray.git").to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = c.git(&["push", &c.nodes[0].url_of("stray.git"), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(ok(&c.cluster("list", &[])).contains("stray.git\t"));
}

#[test]
fn hostile_names_are_refused_with_nothing_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let c = start(tmp.path());
    let names = refstore_testsupport::names::repository_names();
    let roots: Vec<Vec<PathBuf>> = (0..3).map(|i| tree(&c.nodes[i].root)).collect();
    let listed = ok(&c.cluster("list", &[]));
    let hostile = names.iter().filter(|(_, valid)| !valid).map(|(n, _)| n);
    for (n, name) in hostile.enumerate() {
        let mut attempts = vec![
            ("create", vec![name.as_str()]),
            ("rename", vec!["repo.git", name.as_str()]),
        ];
        // Every third name also as the repository acted on.
        if n % 3 == 0 {
            attempts.push(("delete", vec![name.as_str()]));
            attempts.push(("rename", vec![name.as_str(), "fine.git"]));
        }
        for (subcommand, args) in attempts {
            let o = c.cluster(subcommand, &args);
            assert!(!o.status.success(), "{subcommand} {name:?} succeeded");
            assert!(
                stderr(&o).contains("is not a valid repository name"),
                "{subcommand} {name:?}: {}",
                stderr(&o)
            );
        }
    }
    assert_eq!(ok(&c.cluster("list", &[])), listed);
    std::thread::sleep(Duration::from_millis(200));
    for (node, before) in c.nodes.iter().zip(&roots) {
        assert_eq!(&tree(&node.root), before, "{}'s root changed", node.name);
    }
    // The valid ones are created on every node, where their names say.
    for (name, _) in names.iter().filter(|(_, valid)| *valid) {
        ok(&c.cluster("create", &[name]));
    }
    eventually("every node has every valid repository", || {
        names
            .iter()
            .filter(|(_, valid)| *valid)
            .all(|(name, _)| (0..3).all(|i| marker(&c, i, name).is_some()))
    });
}

#[test]
fn the_admin_endpoint_needs_an_admin() {
    let tmp = tempfile::tempdir().unwrap();
    let mut c = start(tmp.path());
    std::fs::write(c.home.join("users"), "alice:pw\nwebapp:token\nbob:pw2\n").unwrap();
    std::fs::write(
        c.home.join("access"),
        "* read *\nalice write *\nbob write *\nwebapp admin *\nbob admin bob/*\n",
    )
    .unwrap();
    c.serve_args = vec![
        "--access".into(),
        c.home.join("access").to_str().unwrap().into(),
    ];
    for i in 0..3 {
        c.kill_node(i);
        c.start_node(i);
    }
    let node = &c.nodes[1];
    let base = "/_refstore/admin/repositories";
    let create = br#"{"name": "web.git", "initial_branch": "main"}"#;
    let listed = ok(&c.cluster("list", &[]));

    // Without credentials, with wrong ones, or without an admin rule.
    let (status, _) = node.http("GET", base, None, b"");
    assert_eq!(status, 401);
    let (status, _) = node.http("POST", base, None, create);
    assert_eq!(status, 401);
    let (status, _) = node.http("POST", base, Some(("webapp", "wrong")), create);
    assert_eq!(status, 401);
    let (status, _) = node.http("POST", base, Some(("alice", "pw")), create);
    assert_eq!(status, 403);
    let (status, _) = node.http("GET", base, Some(("alice", "pw")), b"");
    assert_eq!(status, 403);
    let (status, _) = node.http("POST", base, Some(("bob", "pw2")), create);
    assert_eq!(status, 403);
    assert_eq!(ok(&c.cluster("list", &[])), listed);

    // An admin creates, lists, renames and deletes.
    let admin = Some(("webapp", "token"));
    let (status, body) = node.http("POST", base, admin, create);
    assert_eq!(status, 201, "{body}");
    let entry: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(entry["name"], "web.git");
    assert_eq!(entry["head"], "refs/heads/main");
    let (status, _) = node.http("POST", base, admin, create);
    assert_eq!(status, 409);
    let o = c.git(&["push", &c.nodes[2].url_of("web.git"), "main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (status, body) = node.http("GET", base, admin, b"");
    assert_eq!(status, 200);
    let list: serde_json::Value = serde_json::from_str(&body).unwrap();
    let names: Vec<&str> = list["repositories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["repo.git", "web.git"]);
    let (status, body) = node.http(
        "POST",
        &format!("{base}/web.git/rename"),
        admin,
        br#"{"to": "bob/web.git"}"#,
    );
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        clone_checked(&c, 0, "bob/web.git", "renamed"),
        c.rev("main")
    );
    // bob administers bob/ only: he may delete it there, not elsewhere.
    let (status, _) = node.http(
        "DELETE",
        &format!("{base}/repo.git"),
        Some(("bob", "pw2")),
        b"",
    );
    assert_eq!(status, 403);
    let (status, body) = node.http("GET", base, Some(("bob", "pw2")), b"");
    assert_eq!(status, 200);
    assert!(
        body.contains("bob/web.git") && !body.contains("repo.git"),
        "{body}"
    );
    let (status, _) = node.http(
        "DELETE",
        &format!("{base}/bob%2Fweb.git"),
        Some(("bob", "pw2")),
        b"",
    );
    assert_eq!(status, 200);
    let (status, _) = node.http("DELETE", &format!("{base}/bob/web.git"), admin, b"");
    assert_eq!(status, 404);
    assert_eq!(ok(&c.cluster("list", &[])), listed);
    eventually("every node removed the repository", || {
        (0..3).all(|i| !c.nodes[i].root.join("bob/web.git").exists())
    });

    // Hostile names and bodies change nothing.
    for (name, valid) in refstore_testsupport::names::repository_names() {
        if valid {
            continue;
        }
        let body = serde_json::json!({ "name": name }).to_string();
        let (status, answer) = node.http("POST", base, admin, body.as_bytes());
        assert_eq!(status, 400, "{name:?}: {answer}");
        let rename = serde_json::json!({ "to": name }).to_string();
        let (status, answer) = node.http(
            "POST",
            &format!("{base}/repo.git/rename"),
            admin,
            rename.as_bytes(),
        );
        assert_eq!(status, 400, "{name:?}: {answer}");
    }
    let (status, _) = node.http("POST", base, admin, b"{not json");
    assert_eq!(status, 400);
    assert_eq!(ok(&c.cluster("list", &[])), listed);
}
