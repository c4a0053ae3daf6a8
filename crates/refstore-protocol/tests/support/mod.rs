//! Helpers shared by the integration tests that drive the real git.
#![allow(dead_code)]

use refstore_protocol::pkt_line::sideband::SidebandReader;
use refstore_protocol::pkt_line::{Dialect, Packet, PacketReader};
pub use refstore_testsupport::pkt_line::pkt;
use refstore_testsupport::Git;
use std::io::Read;
use std::path::Path;
use std::process::Output;

/// `git <args>` in `dir` (its home too), isolated from the user's
/// configuration, with `env` and with `input` on stdin.
pub fn git_with(dir: &Path, args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    Git::at(dir).envs(env).run_with(args, input)
}

/// `git <args>` in `dir`, which must succeed: its output, trimmed.
pub fn git_ok(dir: &Path, args: &[&str]) -> String {
    Git::at(dir).ok(args).trim().to_owned()
}

/// `git <args>` in `dir` with `input` on stdin, which must succeed: its
/// output without trailing white space.
pub fn git_in(dir: &Path, args: &[&str], input: &[u8]) -> String {
    Git::at(dir).ok_with(args, input).trim_end().to_owned()
}

/// `git <args>` in `dir`, which must succeed: its output without trailing
/// white space.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_in(dir, args, b"")
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

/// What a stateless v2 `fetch` with `arguments`, served by refstore from
/// the repository at `dir`, answers: the result (with band 3's message
/// when it fails), the pack (empty then) and the progress text.
pub fn served_fetch(dir: &Path, arguments: &[&str]) -> (Result<(), String>, Vec<u8>, String) {
    use refstore_protocol::upload_pack::{upload_pack, Options};
    let input = fetch_request(arguments);
    let repo = refstore_repo::Repository::open(
        std::sync::Arc::new(refstore_fs::real::RealFs::new()),
        dir,
        &[],
    )
    .and_then(refstore_protocol::Repository::serve)
    .unwrap();
    let options = Options {
        stateless_rpc: true,
        advertise_refs: false,
        version: refstore_protocol::ProtocolVersion::V2,
    };
    let mut response = Vec::new();
    let result = upload_pack(&repo, &options, &mut &input[..], &mut response);
    let mut progress = Vec::new();
    let read = v2_pack_with(&response, |message: &[u8]| {
        progress.extend_from_slice(message)
    });
    let (result, pack) = match (result, read) {
        (Ok(()), Ok(pack)) => (Ok(()), pack),
        (Err(e), Err(band3)) => (Err(format!("{e} / {band3}")), Vec::new()),
        (ours, client) => panic!(
            "server said {ours:?}, the client read {:?}",
            client.map(|pack| pack.len())
        ),
    };
    (result, pack, String::from_utf8(progress).unwrap())
}

/// The numbers of git's "Total N (delta D), reused R (delta RD),
/// pack-reused P" progress line, in that order.
pub fn total_line(progress: &str) -> [usize; 5] {
    let total = progress
        .lines()
        .find(|l| l.starts_with("Total "))
        .unwrap_or_else(|| panic!("no Total line in {progress:?}"));
    let numbers: Vec<usize> = total
        .split(|c: char| !c.is_ascii_digit())
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    numbers
        .try_into()
        .unwrap_or_else(|_| panic!("not five numbers: {total}"))
}
