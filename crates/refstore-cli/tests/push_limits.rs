//! The limits on what a push may send hold over every transport, with the
//! machine's real git: a push larger than `--max-push-request` is refused
//! over SSH as over HTTP (413), with the reason on git's stderr and
//! nothing stored; push options are offered only where
//! `receive.advertisePushOptions` is true, as git offers them, and are
//! bounded in number and bytes; `refstore receive-pack` over stdio takes
//! the same limits from the configuration.

mod served;
mod ssh_served;
mod support;
use served::git_net;
use ssh_served::*;
use std::path::Path;
use support::*;

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
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    std::fs::write(home.join("users"), "alice:alice-pw\n").unwrap();
    let server = SshServed::start(
        home,
        &root,
        &alice_pub,
        &[
            "--allow-push",
            "--credentials",
            home.join("users").to_str().unwrap(),
            "--max-push-request",
            "200000",
        ],
    );
    let before = refs_of(home, &served);
    commit_noise(home, &work, 1 << 20);

    let o = git_ssh(
        home,
        &work,
        &alice,
        &["push", &server.url("proj.git"), "HEAD:refs/heads/big"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the request is larger than this server accepts (200000 bytes)"),
        "{}",
        stderr(&o)
    );
    let url = format!("http://alice:alice-pw@{}/proj.git", server.http);
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
        &["push", &server.url("proj.git"), "HEAD:refs/heads/small"],
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
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let server = SshServed::start(
        home,
        &root,
        &alice_pub,
        &[
            "--allow-push",
            "--max-push-options",
            "2",
            "--max-push-options-size",
            "100",
        ],
    );
    let push = |repo: &str, options: &[&str], branch: &str| {
        let mut args = vec!["push"];
        for option in options {
            args.extend(["-o", option]);
        }
        let url = server.url(repo);
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

#[test]
fn receive_pack_over_stdio_takes_the_limits_from_the_configuration() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["proj.git"]);
    let served = root.join("proj.git");
    git_ok(
        home,
        &served,
        &["config", "refstore.maxPushRequest", "100k"],
    );
    let before = refs_of(home, &served);
    commit_noise(home, &work, 1 << 20);
    let receive_pack = format!("{} receive-pack", env!("CARGO_BIN_EXE_refstore"));
    let url = format!("file://{}", served.display());
    let o = git(
        home,
        &work,
        &[
            "push",
            "--receive-pack",
            &receive_pack,
            &url,
            "HEAD:refs/heads/big",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the request is larger than this server accepts (102400 bytes)"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &served), before);
    assert_eq!(quarantines(&served), 0);
}
