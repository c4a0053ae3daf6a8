//! Access rules and the served root hold whatever name a client uses for a
//! repository, with the machine's real git over HTTP and SSH: leaving
//! `.git` off a name (which git's servers accept) reaches the repository
//! the access rules were asked about, never the target of a symbolic link
//! outside the root or under a name the rules give away.
//!
//! The tree: `public/evil.git` links to a repository outside the root,
//! `public/priv.git` and `team/plink` to `private/x.git`; the rules let
//! everyone read `public/*` and tina write `team/*`.

use crate::support::keys::user_key;
use crate::support::*;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

const RULES: &str = "* read public/*\ntina write team/*\nowen write private/*\n";

struct Setup {
    work: PathBuf,
    root: PathBuf,
    outside: PathBuf,
}

fn setup(home: &Path) -> Setup {
    let root = home.join("root");
    let work = crate::setup(home, &root, &["public/open.git", "private/x.git"]);
    let outside = home.join("outside/evil.git");
    std::fs::create_dir_all(outside.parent().unwrap()).unwrap();
    bare_clone(home, &work, &outside);
    std::fs::create_dir_all(root.join("team")).unwrap();
    symlink(&outside, root.join("public/evil.git")).unwrap();
    symlink("../private/x.git", root.join("public/priv.git")).unwrap();
    symlink("../private/x.git", root.join("team/plink")).unwrap();
    Setup {
        work,
        root,
        outside,
    }
}

/// A server over HTTP and SSH with the rules; keys for tina, owen and
/// rita (who has no rule of her own).
fn start(root: &Path) -> (Served, [PathBuf; 3]) {
    let [tina, owen, rita] = ["tina", "owen", "rita"].map(|user| user_key(user, "ed25519"));
    let server = Serve::new(root)
        .ssh(&format!("{}{}{}", tina.public, owen.public, rita.public))
        .credentials("tina:tina-pw\nrita:rita-pw\nowen:owen-pw\n")
        .access(RULES)
        .start();
    (server, [tina.path, owen.path, rita.path])
}

fn http(server: &Served, path: &str) -> String {
    server.url(path)
}

fn http_as(server: &Served, user: &str, path: &str) -> String {
    server.url_as(user, &format!("{user}-pw"), path)
}

fn refused(o: &std::process::Output, what: &str) {
    assert!(!o.status.success(), "{what} succeeded: {}", stdout(o));
    assert!(stdout(o).is_empty(), "{what} listed refs: {}", stdout(o));
}

#[test]
fn names_without_git_reach_only_what_the_rules_were_asked_about_over_http() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let s = setup(home);
    let (server, _) = start(&s.root);
    let private_refs = refs_of(home, &s.root.join("private/x.git"));

    // git's suffix rules still work for what may be read.
    for name in ["public/open", "public/open.git", "public/open/"] {
        let o = git_net(home, home, &["ls-remote", &http(&server, name)]);
        assert!(o.status.success(), "{name}: {}", stderr(&o));
        assert!(stdout(&o).contains("refs/heads/main"), "{name}");
    }

    // 1. A link out of the root, with or without `.git`.
    for name in ["public/evil", "public/evil.git", "public/evil/"] {
        let o = git_net(home, home, &["clone", "-q", &http(&server, name), "evil"]);
        refused(&o, name);
        assert!(!home.join("evil").exists(), "{name} was cloned");
    }
    // 2. A public name for a private repository: anonymous clients are
    // asked who they are, as for the private name itself.
    for name in ["public/priv", "public/priv.git", "public/priv%2F"] {
        let o = git_net(home, home, &["ls-remote", &http(&server, name)]);
        refused(&o, name);
        assert!(
            stderr(&o).contains("could not read Username"),
            "{}",
            stderr(&o)
        );
    }
    // 3. A writer of team/* pushing into private/x.git through a link.
    for name in ["team/plink", "team/plink.git", "team//plink/"] {
        let url = http_as(&server, "tina", name);
        let o = git_net(home, &s.work, &["push", &url, "main:refs/heads/tina"]);
        refused(&o, name);
    }
    assert_eq!(refs_of(home, &s.root.join("private/x.git")), private_refs);
    // The private repository's own writer reaches it under any name.
    let url = http_as(&server, "owen", "team/plink");
    let o = git_net(home, &s.work, &["push", &url, "main:refs/heads/owen"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(refs_of(home, &s.root.join("private/x.git")).contains("refs/heads/owen"));
    assert_eq!(
        refs_of(home, &s.outside),
        refs_of(home, &s.root.join("public/open.git"))
    );
}

#[test]
fn names_without_git_reach_only_what_the_rules_were_asked_about_over_ssh() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let s = setup(home);
    let (server, [tina, owen, rita]) = start(&s.root);
    let private_refs = refs_of(home, &s.root.join("private/x.git"));

    git_ssh_ok(
        home,
        home,
        &rita,
        &["ls-remote", &server.ssh_url("public/open")],
    );

    // 1. A link out of the root.
    for name in ["public/evil", "public/evil.git"] {
        let o = git_ssh(
            home,
            home,
            &rita,
            &["clone", "-q", &server.ssh_url(name), "evil"],
        );
        refused(&o, name);
        assert!(stderr(&o).contains("does not appear to be a git repository"));
        assert!(!home.join("evil").exists(), "{name} was cloned");
    }
    // 2. A public name for a private repository.
    for name in ["public/priv", "public/priv.git"] {
        let o = git_ssh(home, home, &rita, &["ls-remote", &server.ssh_url(name)]);
        refused(&o, name);
    }
    // 3. A writer of team/* pushing into private/x.git through a link.
    for name in ["team/plink", "team/plink.git", "team/plink/"] {
        let url = server.ssh_url(name);
        let o = git_ssh(
            home,
            &s.work,
            &tina,
            &["push", &url, "main:refs/heads/tina"],
        );
        refused(&o, name);
    }
    assert_eq!(refs_of(home, &s.root.join("private/x.git")), private_refs);
    let url = server.ssh_url("team/plink");
    git_ssh_ok(
        home,
        &s.work,
        &owen,
        &["push", &url, "main:refs/heads/owen"],
    );
    assert!(refs_of(home, &s.root.join("private/x.git")).contains("refs/heads/owen"));
}
