//! `refstore upload-pack` as a process: bad input and bad repositories end
//! it with git's exit code 128 and a `fatal:` message, never a panic; an
//! empty repository is cloned as git clones one; `--strict` and
//! `--timeout` behave as git's options do.

mod support;

use std::path::Path;
use std::process::Command;
use support::{git, git_ok, isolate, run_with_input, stderr, stdout};

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
            b"ffff",
            "",
            "fatal: protocol error: bad line length 65535 (a packet is at most 65520 bytes, its 4-byte \
             header included)",
        ),
        (
            b"0011command=frob\n0000",
            "version=2",
            "fatal: upload-pack: invalid command 'frob'",
        ),
        (
            b"0032want 0123456789012345678901234567890123456789\n00000009done\n",
            "",
            "fatal: upload-pack: not our ref 0123456789012345678901234567890123456789",
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
fn an_empty_repository_clones_as_with_git() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    git_ok(home, home, &["init", "-q", "--bare", "empty.git"]);
    let url = format!("file://{}", home.join("empty.git").display());
    let upload_pack = format!(
        "--upload-pack={} upload-pack",
        env!("CARGO_BIN_EXE_refstore")
    );
    for version in ["0", "2"] {
        let dir = format!("clone-{version}");
        let protocol = format!("protocol.version={version}");
        let out = git(
            home,
            home,
            &["-c", &protocol, "clone", &upload_pack, &url, &dir],
        );
        assert!(out.status.success(), "v{version}: {}", stderr(&out));
        assert!(stderr(&out).contains("You appear to have cloned an empty repository"));
    }
}

/// A repository that lost an object a fetch needs (a parent commit, a tree
/// or a blob, chosen by the loop) fails the fetch with the reason on
/// side-band 3, which git prints as `remote: …`, whichever protocol
/// version the client speaks; never a packet git reads as a bad band.
#[test]
fn an_object_missing_midway_is_reported_on_band_3() {
    let (_tmp, home) = setup();
    let repo = home.join("repo");
    std::fs::write(repo.join("file"), "content\n").unwrap();
    git_ok(&home, &repo, &["add", "file"]);
    git_ok(&home, &repo, &["commit", "-q", "-m", "two"]);
    git_ok(
        &home,
        &repo,
        &["commit", "-q", "--allow-empty", "-m", "three"],
    );
    let refstore_bin = env!("CARGO_BIN_EXE_refstore");
    let objects = ["HEAD~1", "HEAD~1^{tree}", "HEAD~1:file"];
    for (n, object) in objects.iter().enumerate() {
        let damaged = home.join(format!("damaged-{n}"));
        git_ok(
            &home,
            &home,
            &["clone", "-q", "--bare", "repo", damaged.to_str().unwrap()],
        );
        git_ok(&home, &damaged, &["repack", "-q", "-a", "-d"]);
        let id = git_ok(&home, &damaged, &["rev-parse", object]);
        let id = id.trim();
        // Unpack everything loose but the lost object.
        let packs: Vec<_> = std::fs::read_dir(damaged.join("objects/pack"))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "pack"))
            .collect();
        for pack in packs {
            let data = std::fs::read(&pack).unwrap();
            std::fs::remove_file(&pack).unwrap();
            std::fs::remove_file(pack.with_extension("idx")).unwrap();
            let _ = std::fs::remove_file(pack.with_extension("rev"));
            let mut cmd = Command::new("git");
            isolate(&mut cmd, &home)
                .args(["unpack-objects", "-q"])
                .current_dir(&damaged);
            assert!(run_with_input(&mut cmd, &data).status.success());
        }
        std::fs::remove_file(damaged.join("objects").join(&id[..2]).join(&id[2..])).unwrap();
        for version in ["0", "2"] {
            let target = home.join(format!("target-{n}-{version}"));
            let out = git(
                &home,
                &home,
                &[
                    "-c",
                    &format!("protocol.version={version}"),
                    "clone",
                    "--bare",
                    "--no-local",
                    &format!("--upload-pack={refstore_bin} upload-pack"),
                    damaged.to_str().unwrap(),
                    target.to_str().unwrap(),
                ],
            );
            let err = stderr(&out);
            assert!(
                !out.status.success(),
                "{object}, v{version}: the clone succeeded"
            );
            assert!(
                err.contains("remote: ") && err.contains(&id[..7]) && !err.contains("bad band"),
                "{object}, v{version}: {err}"
            );
        }
    }
}
