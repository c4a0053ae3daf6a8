//! Clone, fetch, push and ls-remote over ssh:// with ed25519 and RSA
//! keys made by ssh-keygen, protocol v0 and v2, packs larger than the
//! channel's window; unknown keys, pushes of read-only users, private
//! repositories and other commands refused in git's words; shallow and
//! partial clones and push hooks as over the other transports.

use crate::support::alone::alone;
use crate::support::keys::user_key;
use crate::support::*;
use crate::{serve_big_file, setup};
use std::process::Command;

#[test]
fn clone_fetch_push_and_ls_remote_over_ssh_in_protocol_v0_and_v2() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["team/proj.git"]);
    let served = root.join("team/proj.git");
    let alice = user_key("alice", "ed25519");
    let server = Serve::new(&root).ssh(&alice.public).allow_push().start();
    let alice = &alice.path;
    let url = server.ssh_url("team/proj.git");

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let clone = home.join(format!("clone-v{version}"));
        let o = git_ssh_env(
            home,
            home,
            alice,
            &[
                "-c",
                &protocol,
                "clone",
                "-q",
                &url,
                clone.to_str().unwrap(),
            ],
            &[("GIT_TRACE_PACKET", "1")],
        );
        assert!(o.status.success(), "clone v{version}: {}", stderr(&o));
        // The version the server answered in: v2 starts "version 2".
        let trace = stderr(&o);
        assert_eq!(
            trace.contains("< version 2"),
            version == "2",
            "v{version}: {trace}"
        );
        git_ok(home, &clone, &["fsck", "--no-progress"]);
        assert_eq!(
            git_ok(
                home,
                &clone,
                &["rev-parse", "HEAD", "origin/topic", "v1^{}"]
            ),
            git_ok(home, &served, &["rev-parse", "HEAD", "topic", "v1^{}"])
        );

        let ours = git_ssh(
            home,
            home,
            alice,
            &["-c", &protocol, "ls-remote", "--symref", &url],
        );
        let theirs = git_ok(
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
        assert_eq!(stdout(&ours), theirs, "ls-remote v{version}");

        // A push from the clone, then a fetch of it into the work tree.
        std::fs::write(clone.join("d"), format!("v{version}\n")).unwrap();
        git_ok(home, &clone, &["add", "d"]);
        git_ok(home, &clone, &["commit", "-q", "-m", "more"]);
        let branch = format!("refs/heads/from-v{version}");
        let o = git_ssh(
            home,
            &clone,
            alice,
            &["-c", &protocol, "push", "origin", &format!("HEAD:{branch}")],
        );
        assert!(o.status.success(), "push v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &served, &["rev-parse", &branch]),
            git_ok(home, &clone, &["rev-parse", "HEAD"])
        );
        let o = git_ssh(
            home,
            &work,
            alice,
            &[
                "-c",
                &protocol,
                "fetch",
                "-q",
                &url,
                &format!("{branch}:{branch}"),
            ],
        );
        assert!(o.status.success(), "fetch v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &work, &["rev-parse", &branch]),
            git_ok(home, &clone, &["rev-parse", "HEAD"])
        );
    }
    git_ok(home, &served, &["fsck", "--no-progress"]);
    // Deleting a branch is a push too.
    let o = git_ssh(home, &work, alice, &["push", &url, ":refs/heads/from-v0"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!refs_of(home, &served).contains("from-v0"));

    server.stop();
    let log = log.log();
    assert!(log.contains("user=alice"), "{log}");
    assert!(
        log.contains("transport=\"ssh\"") || log.contains("transport=ssh"),
        "{log}"
    );
}

#[test]
fn rsa_keys_log_in_and_unknown_keys_are_refused() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let served = root.join("proj.git");
    let bob = user_key("bob", "rsa");
    let mallory = user_key("mallory", "ed25519").path;
    let server = Serve::new(&root).ssh(&bob.public).start();
    let bob = &bob.path;

    let o = git_ssh(home, home, bob, &["ls-remote", &server.ssh_url("proj.git")]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o),
        git_ok(home, home, &["ls-remote", served.to_str().unwrap()])
    );

    let before = refs_of(home, &served);
    for args in [
        vec!["ls-remote", "URL"],
        vec!["push", "URL", "main:refs/heads/new"],
    ] {
        let url = server.ssh_url("proj.git");
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "URL" { url.as_str() } else { a })
            .collect();
        let o = git_ssh(home, &home.join("work"), &mallory, &args);
        assert!(!o.status.success());
        assert!(
            stderr(&o).contains("Permission denied (publickey)"),
            "{}",
            stderr(&o)
        );
    }
    assert_eq!(refs_of(home, &served), before);

    // The refusal is logged once the connection is over.
    server.stop();
    let log = log.log();
    assert!(log.contains("no authorized key offered"), "{log}");
    // With the fingerprint ssh-keygen shows for the key.
    let fingerprint = Command::new("ssh-keygen")
        .arg("-lf")
        .arg(mallory.with_extension("pub"))
        .output()
        .unwrap();
    let fingerprint = stdout(&fingerprint);
    let fingerprint = fingerprint.split_whitespace().nth(1).unwrap();
    assert!(fingerprint.starts_with("SHA256:"), "{fingerprint}");
    assert!(log.contains(fingerprint), "{fingerprint} not in {log}");
    let server = Serve::new(&root)
        .ssh(&user_key("bob", "rsa").public)
        .start();

    // Without pushes allowed even a known key only reads.
    let o = git_ssh(
        home,
        &home.join("work"),
        bob,
        &["push", &server.ssh_url("proj.git"), "main:refs/heads/new"],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("fatal: pushing is disabled on this server"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &served), before);
}

#[test]
fn access_rules_decide_and_never_reveal_private_repositories() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &["pub/proj.git", "priv/secret.git"]);
    let (alice, bob) = (user_key("alice", "ed25519"), user_key("bob", "ed25519"));
    let server = Serve::new(&root)
        .ssh(&format!("{}{}", alice.public, bob.public))
        .access("* read pub/*\nalice write *\n")
        .start();
    let (alice, bob) = (&alice.path, &bob.path);
    let public = root.join("pub/proj.git");
    let before = refs_of(home, &public);

    // A read-only user pushing: refused with the reason.
    let o = git_ssh(
        home,
        &work,
        bob,
        &[
            "push",
            &server.ssh_url("pub/proj.git"),
            "main:refs/heads/new",
        ],
    );
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("fatal: user 'bob' may not push to 'pub/proj.git'"),
        "{}",
        stderr(&o)
    );
    assert_eq!(refs_of(home, &public), before);

    // A private repository looks exactly like a missing one to bob.
    let hidden = git_ssh(
        home,
        home,
        bob,
        &["ls-remote", &server.ssh_url("priv/secret.git")],
    );
    let missing = git_ssh(
        home,
        home,
        bob,
        &["ls-remote", &server.ssh_url("priv/none.git")],
    );
    assert!(!hidden.status.success() && !missing.status.success());
    assert!(
        stderr(&hidden)
            .contains("fatal: '/priv/secret.git' does not appear to be a git repository"),
        "{}",
        stderr(&hidden)
    );
    assert_eq!(stderr(&hidden).replace("secret", "none"), stderr(&missing));
    let o = ssh(
        home,
        bob,
        server.ssh_addr().port(),
        "git-upload-pack '/priv/secret.git'",
    );
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));

    // Alice reads and writes everything.
    let o = git_ssh(
        home,
        &work,
        alice,
        &[
            "push",
            &server.ssh_url("priv/secret.git"),
            "main:refs/heads/new",
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_ssh(
        home,
        home,
        alice,
        &["ls-remote", &server.ssh_url("priv/secret.git")],
    );
    assert!(stdout(&o).contains("refs/heads/new"), "{}", stderr(&o));
}

#[test]
fn only_git_commands_on_repositories_below_the_root_are_run() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git", "../outside.git"]);
    let alice = user_key("alice", "ed25519");
    let server = Serve::new(&root).ssh(&alice.public).start();
    let alice = &alice.path;

    // A login checks the key and ends.
    let o = ssh(home, alice, server.ssh_addr().port(), "");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Hi alice! You have logged in"),
        "{}",
        stderr(&o)
    );

    let o = ssh(home, alice, server.ssh_addr().port(), "ls -la");
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("only git-upload-pack and git-receive-pack are served here"),
        "{}",
        stderr(&o)
    );
    for path in ["/nothing.git", "/../outside.git", "~/../outside.git"] {
        let o = ssh(
            home,
            alice,
            server.ssh_addr().port(),
            &format!("git-upload-pack '{path}'"),
        );
        assert_eq!(o.status.code(), Some(128), "{path}: {}", stderr(&o));
        assert_eq!(
            stderr(&o),
            format!("fatal: '{path}' does not appear to be a git repository\n")
        );
    }
    // The forms git's clients send: `git upload-pack`, scp-like paths
    // without a slash, `~/`.
    for command in [
        "git upload-pack '/proj.git'",
        "git-upload-pack 'proj.git'",
        "git-upload-pack '~/proj.git'",
    ] {
        let o = ssh(home, alice, server.ssh_addr().port(), command);
        // The client sends nothing; the advertisement came first.
        assert!(
            stdout(&o).contains("refs/heads/main"),
            "{command}: {}",
            stderr(&o)
        );
    }
}

#[test]
fn packs_larger_than_the_channel_window_stream_both_ways() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root, &[]);
    let served = serve_big_file(home, &root, &work, 6 << 20, 7);
    let alice = user_key("alice", "ed25519");
    let server = Serve::new(&root).ssh(&alice.public).allow_push().start();
    let alice = &alice.path;

    let clone = home.join("clone");
    let o = git_ssh(
        home,
        home,
        alice,
        &[
            "clone",
            "-q",
            &server.ssh_url("big.git"),
            clone.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    git_ok(home, &clone, &["fsck", "--no-progress"]);
    assert_eq!(std::fs::read(clone.join("big")).unwrap(), noise(7, 6 << 20));

    std::fs::write(clone.join("big2"), noise(11, 6 << 20)).unwrap();
    git_ok(home, &clone, &["add", "big2"]);
    git_ok(home, &clone, &["commit", "-q", "-m", "big2"]);
    let o = git_ssh(
        home,
        &clone,
        alice,
        &["push", "-q", "origin", "HEAD:refs/heads/big2"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        git_ok(home, &served, &["rev-parse", "big2"]),
        git_ok(home, &clone, &["rev-parse", "HEAD"])
    );
    git_ok(home, &served, &["fsck", "--no-progress"]);
}

/// What stdio and HTTP serve, SSH serves too: shallow clones and their
/// deepening, partial clones with their lazy fetches, and push hooks whose
/// words reach the user, in protocol v0 and v2.
#[test]
fn shallow_and_partial_clones_and_hooks_over_ssh() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, &["proj.git"]);
    let served = root.join("proj.git");
    git_ok(home, &served, &["config", "uploadpack.allowFilter", "true"]);
    // Lazy fetches over v0 ask for objects no ref names, as with git.
    git_ok(
        home,
        &served,
        &["config", "uploadpack.allowAnySHA1InWant", "true"],
    );
    let alice = user_key("alice", "ed25519");
    let server = Serve::new(&root).ssh(&alice.public).allow_push().start();
    let alice = &alice.path;
    let url = server.ssh_url("proj.git");

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let shallow = home.join(format!("shallow-v{version}"));
        let o = git_ssh(
            home,
            home,
            alice,
            &[
                "-c",
                &protocol,
                "clone",
                "-q",
                "--depth",
                "1",
                &url,
                shallow.to_str().unwrap(),
            ],
        );
        assert!(o.status.success(), "depth clone v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &shallow, &["rev-list", "--count", "HEAD"]).trim(),
            "1"
        );
        assert!(shallow.join(".git/shallow").exists());
        let o = git_ssh(
            home,
            &shallow,
            alice,
            &["-c", &protocol, "fetch", "-q", "--unshallow"],
        );
        assert!(o.status.success(), "unshallow v{version}: {}", stderr(&o));
        assert_eq!(
            git_ok(home, &shallow, &["rev-list", "--count", "HEAD"]).trim(),
            "3"
        );
        assert!(!shallow.join(".git/shallow").exists());
        git_ok(home, &shallow, &["fsck", "--no-progress"]);

        let partial = home.join(format!("partial-v{version}"));
        let o = git_ssh(
            home,
            home,
            alice,
            &[
                "-c",
                &protocol,
                "clone",
                "-q",
                "--no-checkout",
                "--filter=blob:none",
                &url,
                partial.to_str().unwrap(),
            ],
        );
        assert!(
            o.status.success(),
            "partial clone v{version}: {}",
            stderr(&o)
        );
        let missing = git_ok(
            home,
            &partial,
            &["rev-list", "--objects", "--missing=print", "--all"],
        );
        assert_eq!(
            missing.lines().filter(|l| l.starts_with('?')).count(),
            3,
            "v{version}: {missing}"
        );
        let o = git_ssh(
            home,
            &partial,
            alice,
            &["-c", &protocol, "checkout", "-q", "main"],
        );
        assert!(o.status.success(), "lazy fetch v{version}: {}", stderr(&o));
        assert_eq!(std::fs::read_to_string(partial.join("c")).unwrap(), "2\n");
    }

    let hooks = served.join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    let hook = hooks.join("pre-receive");
    std::fs::write(&hook, "#!/bin/sh\necho no pushes over ssh today\nexit 1\n").unwrap();
    let mut mode = std::fs::metadata(&hook).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut mode, 0o755);
    std::fs::set_permissions(&hook, mode).unwrap();
    let before = refs_of(home, &served);
    let clone = home.join("shallow-v2");
    git_ok(
        home,
        &clone,
        &["commit", "-q", "--allow-empty", "-m", "refused"],
    );
    let o = git_ssh(home, &clone, alice, &["push", "-q", "origin", "HEAD:main"]);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(err.contains("remote: no pushes over ssh today"), "{err}");
    assert!(err.contains("pre-receive hook declined"), "{err}");
    assert_eq!(refs_of(home, &served), before);
}
