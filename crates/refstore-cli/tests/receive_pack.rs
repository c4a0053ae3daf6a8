//! `refstore receive-pack` behind real `git push` over file://: every push
//! is made twice, into a repository served by refstore and into a copy
//! served by git's own receive-pack, and the client's exit status, its
//! per-ref summary (`--porcelain`), the resulting refs and `git fsck` must
//! agree.

mod support;

use std::path::Path;
use std::process::Command;
use support::push_pair::PushPair;
use support::{git, git_ok, isolate, stderr, stdout};

/// A work repository `src` and two targets: `ours` served by refstore,
/// `theirs` by git.
struct Setup(PushPair);

impl std::ops::Deref for Setup {
    type Target = PushPair;
    fn deref(&self) -> &PushPair {
        &self.0
    }
}

/// What a push printed and left behind.
#[derive(Debug, PartialEq, Eq)]
struct Pushed {
    code: Option<i32>,
    summary: String,
    refs: String,
}

fn refstore_receive_pack() -> String {
    format!("{} receive-pack", env!("CARGO_BIN_EXE_refstore"))
}

impl Setup {
    /// `bare`: whether the targets are bare repositories.
    fn new(bare: bool) -> Setup {
        let pair = PushPair::new(if bare { &["--bare"] } else { &[] });
        pair.commit("first");
        Setup(pair)
    }

    /// Pushes with `args` into one target.
    fn push_into(&self, target: &Path, args: &[&str], ours: bool) -> Pushed {
        let (out, url) = self.push_to(ours, args);
        let summary = stdout(&out).replace(&url, "<url>");
        if ours {
            let fsck = git(&self.home, target, &["fsck", "--no-progress"]);
            assert!(fsck.status.success(), "fsck: {}", stderr(&fsck));
        }
        let refs = git_ok(&self.home, target, &["for-each-ref"]);
        Pushed {
            code: out.status.code(),
            summary,
            refs,
        }
    }

    /// Pushes into both targets and requires the same outcome; returns it.
    fn push(&self, args: &[&str]) -> Pushed {
        let ours = self.push_into(&self.ours, args, true);
        let theirs = self.push_into(&self.theirs, args, false);
        assert_eq!(ours, theirs, "git push {args:?}");
        ours
    }
}

#[test]
fn new_branch_fast_forward_and_follow_tags() {
    let s = Setup::new(true);
    let pushed = s.push(&["main"]);
    assert!(
        pushed.summary.contains("[new branch]"),
        "{}",
        pushed.summary
    );
    // Objects the server has already: the client sends an empty pack.
    s.push(&["main:refs/heads/copy"]);
    s.commit("second");
    s.git(&["tag", "-a", "-m", "release", "v1"]);
    s.git(&["tag", "light"]);
    let pushed = s.push(&["--follow-tags", "main"]);
    assert!(pushed.refs.contains("refs/tags/v1"), "{}", pushed.refs);
    assert!(!pushed.refs.contains("refs/tags/light"), "{}", pushed.refs);
    // Nothing left to push.
    s.push(&["--follow-tags", "main"]);
    // No .keep file outlives the push.
    let packs = std::fs::read_dir(s.ours.join("objects/pack")).unwrap();
    for entry in packs {
        let name = entry.unwrap().file_name();
        assert!(!name.to_string_lossy().ends_with(".keep"), "{name:?}");
    }
}

#[test]
fn non_fast_forward_refused_by_the_client_or_the_server() {
    let s = Setup::new(true);
    s.commit("second");
    s.push(&["main"]);
    s.git(&["reset", "-q", "--hard", "HEAD~1"]);
    s.commit("diverged");
    // Refused by git's client before anything is sent.
    let refused = s.push(&["main"]);
    assert_ne!(refused.code, Some(0));
    assert!(
        refused.summary.contains("non-fast-forward"),
        "{}",
        refused.summary
    );
    // Forced, and the server refuses.
    s.config("receive.denyNonFastForwards", "true");
    let denied = s.push(&["--force", "main"]);
    assert!(
        denied
            .summary
            .contains("[remote rejected] (non-fast-forward)"),
        "{}",
        denied.summary
    );
    // Forced, and the server accepts.
    s.config("receive.denyNonFastForwards", "false");
    let forced = s.push(&["--force", "main"]);
    assert_eq!(forced.code, Some(0), "{}", forced.summary);
    assert!(
        forced.summary.contains("(forced update)"),
        "{}",
        forced.summary
    );
}

#[test]
fn delete_and_deny_deletes() {
    let s = Setup::new(true);
    s.push(&["main", "main:refs/heads/topic", "main:refs/heads/other"]);
    let deleted = s.push(&["--delete", "topic"]);
    assert!(
        !deleted.refs.contains("refs/heads/topic"),
        "{}",
        deleted.refs
    );
    s.config("receive.denyDeletes", "true");
    let denied = s.push(&["--delete", "other"]);
    assert!(
        denied.summary.contains("(deletion prohibited)"),
        "{}",
        denied.summary
    );
    // The branch HEAD names cannot be deleted either, by default.
    s.config("receive.denyDeletes", "false");
    s.push(&["--delete", "main"]);
}

#[test]
fn atomic_push_with_one_refused_ref_changes_nothing() {
    let s = Setup::new(true);
    s.commit("second");
    s.push(&["main", "main:refs/heads/keep"]);
    s.git(&["reset", "-q", "--hard", "HEAD~1"]);
    s.commit("diverged");
    // Refused by git's client: nothing is sent.
    let client = s.push(&["--atomic", "main", "main:refs/heads/new"]);
    assert!(
        client.summary.contains("(atomic push failed)"),
        "{}",
        client.summary
    );
    assert!(!client.refs.contains("refs/heads/new"), "{}", client.refs);
    s.config("receive.denyNonFastForwards", "true");
    let atomic = s.push(&[
        "--atomic",
        "--force",
        "main",
        "main:refs/heads/new",
        "main:refs/tags/t",
    ]);
    assert!(!atomic.refs.contains("refs/heads/new"), "{}", atomic.refs);
    assert!(
        atomic.summary.contains("(atomic push failure)"),
        "{}",
        atomic.summary
    );
    // Without --atomic the other refs are committed.
    let batch = s.push(&["--force", "main", "main:refs/heads/new", "main:refs/tags/t"]);
    assert!(batch.refs.contains("refs/heads/new"), "{}", batch.refs);
    assert!(batch.refs.contains("refs/tags/t"), "{}", batch.refs);
}

#[test]
fn checked_out_branch_of_a_non_bare_repository() {
    let s = Setup::new(false);
    let refused = s.push(&["main"]);
    assert!(
        refused
            .summary
            .contains("(branch is currently checked out)"),
        "{}",
        refused.summary
    );
    s.push(&["main:refs/heads/elsewhere"]);
    s.config("receive.denyCurrentBranch", "ignore");
    let accepted = s.push(&["main"]);
    assert_eq!(accepted.code, Some(0));
}

#[test]
fn a_thousand_refs() {
    let s = Setup::new(true);
    let specs: Vec<String> = (0..1000)
        .map(|i| format!("main:refs/heads/branch/{i:04}"))
        .collect();
    let args: Vec<&str> = specs.iter().map(String::as_str).collect();
    let pushed = s.push(&args);
    assert_eq!(pushed.refs.lines().count(), 1000);
    let mut deletes = vec!["--atomic", "--delete"];
    deletes.extend(specs[..500].iter().map(|s| &s[5..]));
    let pushed = s.push(&deletes);
    assert_eq!(pushed.refs.lines().count(), 500);
}

#[test]
fn push_options_are_accepted() {
    let s = Setup::new(true);
    s.config("receive.advertisePushOptions", "true");
    s.push(&["-o", "ci.skip", "-o", "note=x", "main"]);
}

/// Commands must name the repository through its path: an unknown one is
/// git's fatal error.
#[test]
fn not_a_repository() {
    let tmp = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, tmp.path());
    let out = cmd
        .args(["receive-pack", "missing"])
        .current_dir(tmp.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: 'missing' does not appear to be a git repository\n"
    );
}

#[test]
fn sha256_repositories() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(
        home,
        home,
        &["init", "-q", "--object-format=sha256", "-b", "main", "src"],
    );
    let src = home.join("src");
    std::fs::write(src.join("file"), "content\n").unwrap();
    git_ok(home, &src, &["add", "file"]);
    git_ok(home, &src, &["commit", "-q", "-m", "first"]);
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", "--object-format=sha256", "ours"],
    );
    let ours = home.join("ours");
    let url = format!("file://{}", ours.display());
    let receive_pack = format!("--receive-pack={}", refstore_receive_pack());
    git_ok(home, &src, &["push", "-q", &receive_pack, &url, "main"]);
    let head = git_ok(home, &src, &["rev-parse", "main"]);
    assert_eq!(git_ok(home, &ours, &["rev-parse", "main"]), head);
    git_ok(home, &ours, &["fsck"]);
}

#[test]
fn reflogs_say_push() {
    let s = Setup::new(true);
    s.config("core.logAllRefUpdates", "true");
    s.push(&["main"]);
    s.commit("second");
    s.push(&["main"]);
    let reflog = |repo: &Path| {
        git_ok(
            &s.home,
            repo,
            &["log", "-g", "--format=%gs %H %gn <%ge>", "refs/heads/main"],
        )
    };
    let ours = reflog(&s.ours);
    assert_eq!(ours, reflog(&s.theirs));
    assert_eq!(ours.lines().count(), 2);
    assert!(ours.lines().all(|l| l.starts_with("push ")), "{ours}");
}

/// git's clients ask for protocol v1 or v2 through `GIT_PROTOCOL`; pushes
/// have no v2, and a v0 answer serves both.
#[test]
fn clients_asking_for_newer_protocols() {
    let s = Setup::new(true);
    s.push(&["main"]);
    for version in ["1", "2"] {
        s.commit(&format!("for v{version}"));
        s.git(&["config", "protocol.version", version]);
        let pushed = s.push(&["main"]);
        assert_eq!(pushed.code, Some(0), "v{version}: {}", pushed.summary);
    }
}
