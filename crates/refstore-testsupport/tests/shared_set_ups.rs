//! The shared set-ups do what the tests that use them rely on: git runs
//! isolated from the developer's configuration, fixed dates make the same
//! ids every time, the fixtures hold the refs they promise, and pkt-lines
//! framed here read back.

use refstore_testsupport::fixtures::{three_commits, Sandbox, Work};
use refstore_testsupport::pkt_line::{after_first_flush, pkt, FLUSH};
use refstore_testsupport::{git, git_ok, Git};

#[test]
fn git_sees_only_the_configuration_of_the_test_home() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    // Nothing configured: the identity comes from the environment.
    assert_eq!(
        git_ok(home, home, &["var", "GIT_AUTHOR_IDENT"])
            .split(" <")
            .next(),
        Some("A U Thor")
    );
    assert!(!git(home, home, &["config", "--global", "--get", "x.y"])
        .status
        .success());
    // What a test writes to its home's configuration is read back; with no
    // global configuration it is not.
    git_ok(home, home, &["config", "--global", "x.y", "z"]);
    assert_eq!(git_ok(home, home, &["config", "--get", "x.y"]), "z\n");
    let o = Git::new(home, home)
        .no_global_config()
        .run(&["config", "--get", "x.y"]);
    assert!(!o.status.success());
}

#[test]
fn fixed_dates_make_the_same_commit_twice() {
    let commit = |seconds: u32| {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let date = format!("{seconds} +0000");
        Git::at(dir)
            .dated(&date)
            .ok(&["init", "-q", "-b", "main", "."]);
        Git::at(dir)
            .dated(&date)
            .ok(&["commit", "-q", "--allow-empty", "-m", "same"]);
        Git::at(dir).ok(&["rev-parse", "HEAD"])
    };
    assert_eq!(commit(1_700_000_000), commit(1_700_000_000));
    assert_ne!(commit(1_700_000_000), commit(1_700_000_001));
}

#[test]
fn input_reaches_git_and_a_failure_is_reported() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    git_ok(dir, dir, &["init", "-q", "--bare", "."]);
    for n in 0..3 {
        let content = format!("blob {n}\n");
        let id = Git::at(dir).ok_with(&["hash-object", "-w", "--stdin"], content.as_bytes());
        let back = Git::at(dir).ok(&["cat-file", "-p", id.trim()]);
        assert_eq!(back, content);
    }
    let refused = std::panic::catch_unwind(|| Git::at(dir).ok(&["cat-file", "-p", "nothing"]));
    assert!(refused.is_err());
}

#[test]
fn the_serving_history_has_its_branches_and_tag() {
    let tmp = tempfile::tempdir().unwrap();
    let work = three_commits(tmp.path());
    assert_eq!(work.git(&["rev-list", "--count", "HEAD"]), "3\n");
    assert_eq!(work.rev("topic"), work.rev("HEAD~1"));
    assert_eq!(work.rev("v1^{commit}"), work.rev("HEAD~2"));
    assert_eq!(work.git(&["cat-file", "-t", "v1"]), "tag\n");
    assert_eq!(std::fs::read_to_string(work.path.join("b")).unwrap(), "1\n");
    let bare = tmp.path().join("deep/down/served.git");
    work.bare_clone(&bare);
    assert_eq!(
        git_ok(tmp.path(), &bare, &["rev-parse", "topic"]).trim(),
        work.rev("topic")
    );
}

#[test]
fn refs_are_packed_or_loose_as_asked() {
    let sandbox = Sandbox::new();
    let work: Work = sandbox.init("r");
    work.commits("file", 4)
        .light_tag("light", "HEAD~3")
        .annotated_tag("v1", "one", "HEAD~1")
        .nested_tag("v1-again", "v1")
        .pack_refs()
        .branch("after", "HEAD");
    let packed = std::fs::read_to_string(work.path.join(".git/packed-refs")).unwrap();
    for name in ["refs/heads/main", "refs/tags/light", "refs/tags/v1"] {
        assert!(packed.contains(name), "{name} not packed: {packed}");
    }
    assert!(!packed.contains("refs/heads/after"));
    assert!(work.path.join(".git/refs/heads/after").is_file());
    assert_eq!(work.rev("v1-again^{}"), work.rev("HEAD~1"));
    let nested = work.git(&["cat-file", "-p", "v1-again"]);
    // A tag whose object is the tag v1.
    let of_v1 = format!("object {}\ntype tag\n", work.rev("v1"));
    assert!(nested.starts_with(&of_v1), "{nested}");
}

#[test]
fn pkt_lines_read_back_after_the_first_flush() {
    let lines = ["unpack ok", "ok refs/heads/main", "ng refs/heads/x why"];
    let mut stream = [pkt("advertised\n"), FLUSH.to_vec()].concat();
    for line in lines {
        stream.extend(pkt(format!("{line}\n")));
    }
    stream.extend_from_slice(FLUSH);
    stream.extend(pkt("after the report\n"));
    assert_eq!(after_first_flush(&stream), lines);
    assert_eq!(pkt(""), b"0004");
    assert_eq!(pkt([0u8; 12]).len(), 16);
    assert_eq!(&pkt("a\n")[..4], b"0006");
}
