//! Helpers shared by the integration tests that drive the real git.
#![allow(dead_code)]

use refstore_protocol::pkt_line::sideband::SidebandReader;
use refstore_protocol::pkt_line::{Dialect, Packet, PacketReader};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// `git <args>` in `dir`, isolated from the user's configuration, with
/// `input` on stdin.
pub fn git_with(dir: &Path, args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    let mut child = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .env("GIT_AUTHOR_NAME", "A U Thor")
        .env("GIT_AUTHOR_EMAIL", "author@example.com")
        .env("GIT_COMMITTER_NAME", "C O Mitter")
        .env("GIT_COMMITTER_EMAIL", "committer@example.com")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("cannot run git: install git (scripts/install-deps does)");
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let feeder = std::thread::spawn(move || {
        // git may stop reading early; that is its answer, not a failure.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    out
}

/// `git <args>` in `dir`, which must succeed: its output, trimmed.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    let out = git_with(dir, args, &[], b"");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// `payload` framed as one pkt-line.
pub fn pkt(payload: &[u8]) -> Vec<u8> {
    let mut out = format!("{:04x}", payload.len() + 4).into_bytes();
    out.extend_from_slice(payload);
    out
}

/// A stateless v2 `command=fetch` request with `arguments` (`want <id>`,
/// `done`, ...), each a text pkt-line after the delim-pkt, then a flush-pkt.
pub fn fetch_request(arguments: &[&str]) -> Vec<u8> {
    let mut out = pkt(b"command=fetch\n");
    out.extend_from_slice(b"0001");
    for argument in arguments {
        out.extend_from_slice(&pkt(format!("{argument}\n").as_bytes()));
    }
    out.extend_from_slice(b"0000");
    out
}

/// The pack in a v2 fetch response, taken out of its side-band; the
/// progress band's messages go to `progress`. Reading fails where the
/// side-band does (an error on band 3).
pub fn v2_pack_with(response: &[u8], progress: impl FnMut(&[u8])) -> std::io::Result<Vec<u8>> {
    let mut reader = PacketReader::new(response, Dialect::V2);
    loop {
        match reader.read_text().unwrap() {
            Some(Packet::Data(b"packfile")) => break,
            Some(_) => continue,
            None => panic!("no packfile section"),
        }
    }
    let mut pack = Vec::new();
    SidebandReader::new(&mut reader, progress).read_to_end(&mut pack)?;
    Ok(pack)
}

/// The pack in a v2 fetch response that must succeed.
pub fn v2_pack(response: &[u8]) -> Vec<u8> {
    v2_pack_with(response, |_: &[u8]| {}).unwrap()
}

/// A bare repository `repo.git` to push into: one commit (an empty tree)
/// on `refs/heads/main`, `refs/heads/gone` and `refs/tags/t`, and
/// `receive.denyDeletes` protecting branches. Returns the commit's id.
pub fn push_target() -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    git_ok(tmp.path(), &["init", "-q", "--bare", "repo.git"]);
    let repo = tmp.path().join("repo.git");
    let tree = git_ok(&repo, &["mktree"]);
    let commit = git_ok(&repo, &["commit-tree", "-m", "first", &tree]);
    for name in ["refs/heads/main", "refs/heads/gone", "refs/tags/t"] {
        git_ok(&repo, &["update-ref", name, &commit]);
    }
    git_ok(&repo, &["config", "receive.denyDeletes", "true"]);
    (tmp, commit)
}
