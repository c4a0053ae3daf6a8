//! Compatibility with the real git: the writer reproduces git's own
//! advertisement byte for byte, git parses what the writer sends (requests,
//! and a side-band stream), and the readers parse what git sends.

use std::io::{self, Read};
use std::path::Path;
use std::process::Output;

use refstore_testsupport::{stderr, Git};

use refstore_protocol::pkt_line::sideband::{SidebandMode, SidebandReader, SidebandWriter};
use refstore_protocol::pkt_line::{Dialect, Packet, PacketReader, PacketWriter};

/// `git <args>` in `dir` (its home too), isolated from the user's
/// configuration, with fixed dates, `env`, and `input` on stdin; it must
/// succeed.
fn git_with(dir: &Path, args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    let out = Git::at(dir).fixed_dates().envs(env).run_with(args, input);
    assert!(out.status.success(), "git {args:?}: {}", stderr(&out));
    out
}

fn git(dir: &Path, args: &[&str]) -> String {
    String::from_utf8(git_with(dir, args, &[], b"").stdout).unwrap()
}

/// A repository with branches, an annotated and a lightweight tag.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    std::fs::write(path.join("file"), "content\n").unwrap();
    git(path, &["add", "file"]);
    git(path, &["commit", "-q", "-m", "first"]);
    for n in 0..20 {
        git(path, &["branch", &format!("topic/{n:02}")]);
    }
    git(path, &["tag", "-a", "-m", "annotated", "v1.0"]);
    git(path, &["tag", "light"]);
    dir
}

/// Text lines of a v2 response up to its flush-pkt.
fn text_lines_until_flush<R: Read>(reader: &mut PacketReader<R>) -> Vec<String> {
    let mut lines = Vec::new();
    loop {
        match reader.read_text().unwrap() {
            Some(Packet::Data(line)) => lines.push(String::from_utf8(line.to_vec()).unwrap()),
            Some(Packet::Flush) => return lines,
            other => panic!("unexpected {other:?}"),
        }
    }
}

#[test]
fn v0_advertisement_matches_git_byte_for_byte() {
    let repo = repository();
    let path = repo.path();
    let theirs = git_with(path, &["upload-pack", "--advertise-refs", "."], &[], b"").stdout;

    // The capability list is git's choice; take it from the first packet.
    let first_len = usize::from_str_radix(std::str::from_utf8(&theirs[..4]).unwrap(), 16).unwrap();
    let first = &theirs[4..first_len];
    let nul = first.iter().position(|&b| b == 0).unwrap();
    let capabilities = &first[nul + 1..first.len() - 1];

    let refs = git(path, &["show-ref", "--head", "--dereference"]);
    let mut writer = PacketWriter::new(Vec::new());
    for (index, line) in refs.lines().enumerate() {
        let (oid, name) = line.split_once(' ').unwrap();
        if index == 0 {
            assert_eq!(name, "HEAD");
            writer
                .write_parts(&[oid.as_bytes(), b" HEAD\0", capabilities, b"\n"])
                .unwrap();
        } else {
            writeln!(writer, "{oid} {name}").unwrap();
        }
    }
    writer.write_flush().unwrap();
    let ours = writer.into_inner().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ours),
        String::from_utf8_lossy(&theirs)
    );
    assert_eq!(ours, theirs);

    // And the reader parses git's advertisement back into those lines.
    let mut reader = PacketReader::new(&theirs[..], Dialect::V0);
    let mut lines = text_lines_until_flush(&mut reader);
    assert_eq!(reader.read().unwrap(), None);
    let nul = lines[0].find('\0').unwrap();
    lines[0].truncate(nul);
    assert_eq!(lines, refs.lines().collect::<Vec<_>>());
    assert!(refs.contains("refs/tags/v1.0^{}"));
}

#[test]
fn reads_git_v2_capability_advertisement() {
    let repo = repository();
    let out = git_with(
        repo.path(),
        &["upload-pack", "--advertise-refs", "."],
        &[("GIT_PROTOCOL", "version=2")],
        b"",
    );
    let mut reader = PacketReader::new(&out.stdout[..], Dialect::V2);
    let lines = text_lines_until_flush(&mut reader);
    assert_eq!(reader.read().unwrap(), None);
    assert_eq!(lines[0], "version 2");
    assert!(
        lines.iter().any(|l| l.starts_with("agent=git/")),
        "{lines:?}"
    );
    assert!(lines.iter().any(|l| l.starts_with("ls-refs")), "{lines:?}");
    assert!(lines.iter().any(|l| l.starts_with("fetch")), "{lines:?}");
}

/// Sends a v2 command written by our writer to git's upload-pack and
/// returns the response.
fn v2_command(repo: &Path, command: &str, arguments: &[String]) -> Vec<u8> {
    let mut writer = PacketWriter::new(Vec::new());
    writeln!(writer, "command={command}").unwrap();
    writer.write_text("object-format=sha1").unwrap();
    writer.write_delim().unwrap();
    for argument in arguments {
        writer.write_text(argument).unwrap();
    }
    writer.write_flush().unwrap();
    let request = writer.into_inner().unwrap();
    git_with(
        repo,
        &["upload-pack", "--stateless-rpc", "."],
        &[("GIT_PROTOCOL", "version=2")],
        &request,
    )
    .stdout
}

#[test]
fn git_answers_an_ls_refs_request_from_the_writer() {
    let repo = repository();
    let path = repo.path();
    let response = v2_command(
        path,
        "ls-refs",
        &[
            "peel".into(),
            "symrefs".into(),
            "ref-prefix refs/".into(),
            "ref-prefix HEAD".into(),
        ],
    );
    let mut reader = PacketReader::new(&response[..], Dialect::V2);
    let lines = text_lines_until_flush(&mut reader);
    assert_eq!(reader.read().unwrap(), None);

    let head = git(path, &["rev-parse", "HEAD"]);
    let mut expected = vec![format!(
        "{} HEAD symref-target:refs/heads/main",
        head.trim()
    )];
    let refs = git(
        path,
        &[
            "for-each-ref",
            "--format=%(objectname) %(refname)%(if)%(*objectname)%(then) peeled:%(*objectname)%(end)",
        ],
    );
    expected.extend(refs.lines().map(str::to_owned));
    assert_eq!(lines, expected);
}

#[test]
fn demultiplexes_a_pack_that_git_sends_on_side_band() {
    let repo = repository();
    let path = repo.path();
    let head = git(path, &["rev-parse", "HEAD"]).trim().to_owned();
    let response = v2_command(
        path,
        "fetch",
        &[format!("want {head}"), "ofs-delta".into(), "done".into()],
    );

    let mut reader = PacketReader::new(&response[..], Dialect::V2);
    assert_eq!(reader.read_text().unwrap(), Some(Packet::Data(b"packfile")));
    let mut progress = Vec::new();
    let mut pack = Vec::new();
    SidebandReader::new(&mut reader, |message: &[u8]| {
        progress.extend_from_slice(message)
    })
    .read_to_end(&mut pack)
    .unwrap();
    assert_eq!(reader.read().unwrap(), None);
    assert!(pack.starts_with(b"PACK"));
    let progress = String::from_utf8(progress).unwrap();
    assert!(progress.contains("Total 3"), "{progress}");

    // git accepts the demultiplexed bytes as the pack of that commit.
    let clone = tempfile::tempdir().unwrap();
    git(clone.path(), &["init", "-q", "--bare"]);
    git_with(clone.path(), &["index-pack", "--stdin"], &[], &pack);
    assert_eq!(git(clone.path(), &["cat-file", "-t", &head]), "commit\n");
    assert_eq!(
        git(clone.path(), &["show", "-s", "--format=%s", &head]),
        "first\n"
    );
}

#[test]
fn git_demultiplexes_a_side_band_stream_from_the_writer() {
    // git archive --remote speaks upload-archive: arguments, then "ACK" and
    // a flush-pkt, then the archive on side-band 64k. We play the server
    // with a stream written beforehand, and git must unpack it exactly.
    let repo = repository();
    let path = repo.path();
    std::fs::write(path.join("big"), vec![b'z'; 200_000]).unwrap();
    git(path, &["add", "big"]);
    git(path, &["commit", "-q", "-m", "big"]);
    let archive = git_with(path, &["archive", "--format=tar", "HEAD"], &[], b"").stdout;
    assert!(
        archive.len() > 3 * 65515,
        "the archive spans several packets"
    );

    let mut writer = PacketWriter::new(Vec::new());
    writer.write_text("ACK").unwrap();
    writer.write_flush().unwrap();
    let mut sideband = SidebandWriter::new(&mut writer, SidebandMode::SideBand64k);
    sideband.write_progress(b"packing the archive\n").unwrap();
    io::copy(&mut &archive[..], &mut sideband).unwrap();
    sideband.finish().unwrap();
    let server = tempfile::tempdir().unwrap();
    let response = server.path().join("response");
    std::fs::write(&response, writer.into_inner().unwrap()).unwrap();
    let script = server.path().join("upload-archive");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\ncat '{0}'\ncat > '{0}.request'\n",
            response.display()
        ),
    )
    .unwrap();
    let mode = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&script, mode).unwrap();

    let out = git_with(
        path,
        &[
            "archive",
            "--remote",
            ".",
            "--exec",
            script.to_str().unwrap(),
            "--format=tar",
            "HEAD",
        ],
        &[],
        b"",
    );
    assert!(
        out.stdout == archive,
        "git's output differs from the archive sent"
    );
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert!(stderr.contains("remote: packing the archive"), "{stderr}");

    // And what git sent as a request reads as pkt-lines.
    let request = std::fs::read(server.path().join("response.request")).unwrap();
    let mut reader = PacketReader::new(&request[..], Dialect::V0);
    let lines = text_lines_until_flush(&mut reader);
    assert!(lines.contains(&"argument HEAD".to_owned()), "{lines:?}");
}
