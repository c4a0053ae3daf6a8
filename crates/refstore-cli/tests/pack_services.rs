//! `refstore upload-pack` and `refstore receive-pack` as processes, what
//! the commands add to the protocol crate's services (whose behaviour
//! `refstore-protocol`'s tests check in-process): a refused request or a
//! missing repository ends them with git's exit code 128 and a `fatal:`
//! message, never a panic; `--strict` and `--timeout` behave as git's
//! options do.

mod support;

use std::path::Path;
use std::process::Command;
use support::{git, git_ok, isolate, refstore_with_input, run_with_input, stderr, stdout};

fn upload_pack(
    home: &Path,
    cwd: &Path,
    args: &[&str],
    env: &[(&str, &str)],
    input: &[u8],
) -> std::process::Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .arg("upload-pack")
        .args(args)
        .envs(env.iter().copied())
        .current_dir(cwd);
    run_with_input(&mut cmd, input)
}

fn setup() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().to_owned();
    git_ok(&home, &home, &["init", "-q", "-b", "main", "repo"]);
    git_ok(
        &home,
        &home.join("repo"),
        &["commit", "-q", "--allow-empty", "-m", "one"],
    );
    (tmp, home)
}

#[test]
fn bad_input_exits_128_with_a_message() {
    let (_tmp, home) = setup();
    let cases: &[(&[u8], &str, &str)] = &[
        (
            b"zzzz",
            "",
            "fatal: protocol error: bad line length character: zzzz",
        ),
        (
            b"0011command=frob\n0000",
            "version=2",
            "fatal: upload-pack: invalid command 'frob'",
        ),
    ];
    for (input, protocol, message) in cases {
        let out = upload_pack(
            &home,
            &home,
            &["--stateless-rpc", "repo"],
            &[("GIT_PROTOCOL", protocol)],
            input,
        );
        assert_eq!(out.status.code(), Some(128), "{message}: {}", stderr(&out));
        assert_eq!(stderr(&out).trim_end(), *message);
        assert!(
            stdout(&out).contains("ERR upload-pack: "),
            "{}",
            stdout(&out)
        );
    }
}

#[test]
fn a_missing_repository_is_reported_as_git_reports_it() {
    let (_tmp, home) = setup();
    let out = upload_pack(&home, &home, &["nowhere"], &[], b"");
    assert_eq!(out.status.code(), Some(128));
    assert_eq!(
        stderr(&out),
        "fatal: 'nowhere' does not appear to be a git repository\n"
    );
    // --strict takes <dir> itself only: a work tree is not a git directory.
    let out = upload_pack(
        &home,
        &home,
        &["--strict", "--advertise-refs", "repo"],
        &[],
        b"",
    );
    assert_eq!(out.status.code(), Some(128));
    let out = upload_pack(
        &home,
        &home,
        &["--strict", "--advertise-refs", "repo/.git"],
        &[],
        b"",
    );
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let theirs = git(
        &home,
        &home,
        &["upload-pack", "--strict", "--advertise-refs", "repo"],
    );
    assert_eq!(theirs.status.code(), Some(128));
}

#[test]
fn a_silent_client_times_out() {
    let (_tmp, home) = setup();
    let mut child = isolate(&mut Command::new(env!("CARGO_BIN_EXE_refstore")), &home)
        .args(["upload-pack", "--timeout=1", "repo"])
        .current_dir(&home)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The client keeps the connection open and says nothing.
    let stdin = child.stdin.take().unwrap();
    let out = child.wait_with_output().unwrap();
    drop(stdin);
    assert_eq!(out.status.code(), Some(128));
    assert!(stderr(&out).contains("timeout reached"), "{}", stderr(&out));
    // The advertisement went out before the wait.
    assert!(stdout(&out).contains("refs/heads/main"), "{}", stdout(&out));
}

#[test]
fn a_malformed_push_exits_128_and_changes_nothing() {
    let (_tmp, home) = setup();
    let repo = home.join("repo");
    let before = git_ok(&home, &repo, &["for-each-ref"]);
    let head = git_ok(&home, &repo, &["rev-parse", "HEAD"]);
    // An old id one digit short.
    let line = format!("{} {} refs/heads/main", &head.trim()[..39], head.trim());
    let input = [refstore_testsupport::pkt_line::pkt(line), b"0000".to_vec()].concat();
    let out = refstore_with_input(&home, &home, &["receive-pack", "repo"], &input);
    assert_eq!(out.status.code(), Some(128), "{}", stderr(&out));
    assert!(stderr(&out).starts_with("fatal: "), "{}", stderr(&out));
    assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
    assert_eq!(git_ok(&home, &repo, &["for-each-ref"]), before);
}
