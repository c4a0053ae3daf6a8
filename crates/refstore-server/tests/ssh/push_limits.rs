//! The limits on what a push may send hold over every transport, with the
//! machine's real git: a push larger than the server's request limit is
//! refused over SSH as over HTTP (413), with the reason on git's stderr
//! and nothing stored; push options are offered only where
//! `receive.advertisePushOptions` is true, as git offers them, and are
//! bounded in number and bytes.

use crate::setup;
use crate::support::keys::user_key;
use crate::support::*;
use std::path::Path;

/// Adds a file of `len` bytes of noise to `work` in a new commit.
fn commit_noise(home: &Path, work: &Path, len: usize) {
    std::fs::write(work.join("noise"), noise(7, len)).unwrap();
    git_ok(home, work, &["add", "noise"]);
    git_ok(home, work, &["commit", "-q", "-m", "noise"]);
}

fn quarantines(git_dir: &Path) -> usize {
    std::fs::read_dir(git_dir.join("objects"))
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().starts_with("tmp_objdir")
        })
        .count()
}

#[test]
fn a_push_beyond_max_push_request_is_refused_over_ssh_and_http_alike() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["proj.git"]);
    let served = root.join("proj.git");
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root)
        .ssh(&alice.public)
        .pushes("alice:alice-pw\n");
    serve.options.limits.max_push_request = 200000;
    let server = serve.start();
    let alice = alice.path;
    let before = refs_of(home, &served);
    commit_noise(home, &work, 1 << 20);

    let o = git_ssh(
        home,
        &work,
        &alice,
        &["push", &server.ssh_url("proj.git"), "HEAD:refs/heads/big"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the request is larger than this server accepts (200000 bytes)"),
        "{}",
        stderr(&o)
    );
    let url = server.url_as("alice", "alice-pw", "proj.git");
    let o = git_net(home, &work, &["push", &url, "HEAD:refs/heads/big"]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("413"), "{}", stderr(&o));
    assert_eq!(refs_of(home, &served), before);
    assert_eq!(quarantines(&served), 0);

    // Within the limit, the same push goes through.
    git_ok(home, &work, &["reset", "-q", "--hard", "HEAD~1"]);
    commit_noise(home, &work, 1000);
    let o = git_ssh(
        home,
        &work,
        &alice,
        &["push", &server.ssh_url("proj.git"), "HEAD:refs/heads/small"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
}

#[test]
fn push_options_are_offered_as_git_offers_them_and_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["quiet.git", "opts.git"]);
    git_ok(
        home,
        &root.join("opts.git"),
        &["config", "receive.advertisePushOptions", "true"],
    );
    let alice = user_key("alice", "ed25519");
    let mut serve = Serve::new(&root).ssh(&alice.public).allow_push();
    serve.options.limits.max_push_options = 2;
    serve.options.limits.max_push_options_size = 100;
    let server = serve.start();
    let alice = alice.path;
    let push = |repo: &str, options: &[&str], branch: &str| {
        let mut args = vec!["push"];
        for option in options {
            args.extend(["-o", option]);
        }
        let url = server.ssh_url(repo);
        let refspec = format!("HEAD:refs/heads/{branch}");
        args.extend([url.as_str(), refspec.as_str()]);
        git_ssh(home, &work, &alice, &args)
    };

    // Not advertised: git's client refuses to send them, as against git.
    let o = push("quiet.git", &["ci.skip"], "a");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the receiving end does not support push options"),
        "{}",
        stderr(&o)
    );
    // Advertised: within the bounds, accepted.
    let o = push("opts.git", &["ci.skip", "x=y"], "b");
    assert!(o.status.success(), "{}", stderr(&o));
    // Too many, or too large: refused with the reason, nothing stored.
    let before = refs_of(home, &root.join("opts.git"));
    let o = push("opts.git", &["a", "b", "c"], "c");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("too many push options: this server accepts at most 2"),
        "{}",
        stderr(&o)
    );
    let long = "v".repeat(101);
    let o = push("opts.git", &[&long], "d");
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the push options are larger than this server accepts (100 bytes)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &root.join("opts.git")), before);
}
