//! Access rules (`--access`): who may read and push which repository, with
//! the machine's real git over HTTP. A private repository answers 401 to
//! anonymous clients, so git asks for credentials, whether it exists or
//! not; a user who may read but not write sees the server's reason when
//! a push is refused; a user who may not read is told the repository does
//! not exist; public repositories stay open to anonymous clones.

use crate::support::alone::alone;
use crate::support::*;
use std::path::{Path, PathBuf};

/// A work repository and bare copies of it at `pub/open.git`,
/// `priv/secret.git` and `team/alices.git` below `root`.
fn setup(home: &Path, root: &Path) -> PathBuf {
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n");
    for repo in ["pub/open.git", "priv/secret.git", "team/alices.git"] {
        work.bare_clone(&root.join(repo));
    }
    work.path
}

/// A server with access rules and two users.
fn start(root: &Path) -> Served {
    Serve::new(root)
        .credentials("alice:alice-pw\nbob:bob-pw\n")
        .access("* read pub/*\nalice write *\nbob read priv/*\n")
        .start()
}

fn refused_for_credentials(o: &std::process::Output) {
    assert!(!o.status.success());
    let err = stderr(o);
    assert!(
        err.contains("Authentication failed") || err.contains("could not read Username"),
        "{err}"
    );
}

#[test]
fn private_repositories_ask_for_credentials_and_rights_decide() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = setup(home, &root);
    let main = git_ok(home, &work, &["rev-parse", "main"]);
    let server = start(&root);

    // Public: anonymous clones work, anonymous pushes need a user.
    let o = git_net(
        home,
        home,
        &["clone", "-q", &server.url("pub/open.git"), "open"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        git_ok(home, &home.join("open"), &["rev-parse", "HEAD"]),
        main
    );
    let o = git_net(
        home,
        &work,
        &["push", &server.url("pub/open.git"), "main:refs/heads/anon"],
    );
    refused_for_credentials(&o);

    // Private: anonymous clients are asked who they are, whether the
    // repository exists or not.
    for repo in ["priv/secret.git", "priv/nothing.git", "team/alices.git"] {
        let o = git_net(home, home, &["ls-remote", &server.url(repo)]);
        refused_for_credentials(&o);
    }
    // git asks (here GIT_ASKPASS answers as bob), and the clone goes on.
    let askpass = home.join("askpass");
    std::fs::write(
        &askpass,
        format!(
            "#!/bin/sh\necho \"$1\" >> '{}'\ncase \"$1\" in Username*) echo bob;; *) echo bob-pw;; esac\n",
            home.join("asked").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &askpass,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let o = Git::new(home, home).env("GIT_ASKPASS", &askpass).run(&[
        "clone",
        "-q",
        &server.url("priv/secret.git"),
        "secret",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let asked = std::fs::read_to_string(home.join("asked")).unwrap();
    assert!(
        asked.contains("Username") && asked.contains("Password"),
        "{asked}"
    );
    assert_eq!(
        git_ok(home, &home.join("secret"), &["rev-parse", "HEAD"]),
        main
    );

    // bob may read priv/*, not push there: git shows the server's reason.
    let bob = server.url_as("bob", "bob-pw", "priv/secret.git");
    let o = git_net(home, &work, &["push", &bob, "main:refs/heads/bobs"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("user 'bob' may not push to 'priv/secret.git'"),
        "{}",
        stderr(&o)
    );
    // Nor is he told that alice's repository exists.
    let o = git_net(
        home,
        home,
        &[
            "ls-remote",
            &server.url_as("bob", "bob-pw", "team/alices.git"),
        ],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("not found"), "{}", stderr(&o));
    // A wrong password is no user at all.
    let o = git_net(
        home,
        home,
        &[
            "ls-remote",
            &server.url_as("bob", "guess", "priv/secret.git"),
        ],
    );
    refused_for_credentials(&o);

    // alice writes everywhere, over protocol v0 and v2.
    for (version, branch) in [("0", "v0"), ("2", "v2")] {
        let alice = server.url_as("alice", "alice-pw", "priv/secret.git");
        let o = git_net(
            home,
            &work,
            &[
                "-c",
                &format!("protocol.version={version}"),
                "push",
                &alice,
                &format!("main:refs/heads/{branch}"),
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let refs = git_ok(
        home,
        &root.join("priv/secret.git"),
        &["for-each-ref", "--format=%(refname)"],
    );
    assert_eq!(refs, "refs/heads/main\nrefs/heads/v0\nrefs/heads/v2\n");
    assert_eq!(
        git_ok(
            home,
            &root.join("pub/open.git"),
            &["for-each-ref", "--format=%(refname)"]
        ),
        "refs/heads/main\n"
    );

    server.stop();
    let log = log.log();
    assert!(
        log.contains("user=alice") && log.contains("status=401"),
        "{log}"
    );
    assert!(
        !log.contains("alice-pw") && !log.contains("bob-pw"),
        "{log}"
    );
}
