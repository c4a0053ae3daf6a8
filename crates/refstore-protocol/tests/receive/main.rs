//! receive-pack fed raw requests, next to `git receive-pack` fed the same
//! bytes: malformed pkt-lines, invalid ids, funny ref names and truncated
//! packs get an error or an `ng`/`unpack` report, and leave every ref as
//! it was; thin packs of REF_DELTA entries are completed without duplicate
//! objects; the advertisement lists what git's lists. refstore's is this
//! crate's receive-pack called in this process, on the repository opened
//! as `refstore receive-pack` opens it; git's is its executable.

mod advertisement;
mod requests;
#[path = "../support/stdio.rs"]
mod stdio;

use refstore_testsupport::{git_ok, stderr, Git};
use std::path::{Path, PathBuf};

/// Two bare repositories with the same history: `ours` served by
/// refstore, `theirs` by git; and `src`, where it was made.
struct Setup {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    src: PathBuf,
    ours: PathBuf,
    theirs: PathBuf,
}

/// What a server answered.
struct Answer {
    stdout: Vec<u8>,
    /// git's standard error, or the error refstore's call returned.
    message: String,
    success: bool,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let home = tmp.path().to_owned();
        let src = home.join("src");
        git_ok(&home, &home, &["init", "-q", "-b", "main", "src"]);
        let big: String = (0..200).map(|i| format!("line {i} of a file\n")).collect();
        std::fs::write(src.join("file"), &big).unwrap();
        git_ok(&home, &src, &["add", "file"]);
        git_ok(&home, &src, &["commit", "-q", "-m", "first"]);
        for target in ["ours", "theirs"] {
            git_ok(&home, &home, &["clone", "-q", "--bare", "src", target]);
        }
        // A second commit, only in src, changing one line of the file so
        // that git stores it as a delta.
        std::fs::write(src.join("file"), big.replace("line 7 ", "line seven ")).unwrap();
        git_ok(&home, &src, &["commit", "-q", "-a", "-m", "second"]);
        Setup {
            ours: home.join("ours"),
            theirs: home.join("theirs"),
            _tmp: tmp,
            home,
            src,
        }
    }

    fn rev(&self, rev: &str) -> String {
        git_ok(&self.home, &self.src, &["rev-parse", rev])
            .trim()
            .to_owned()
    }

    /// A pack made by `git pack-objects` in `src` from `input` (ids, or
    /// revisions one per line with `--revs`).
    fn pack_of(&self, input: &str, args: &[&str]) -> Vec<u8> {
        let mut all = vec!["pack-objects", "--stdout", "-q"];
        all.extend(args);
        Git::new(&self.home, &self.src).ok_bytes(&all, input.as_bytes())
    }

    /// A pack made by `git pack-objects --revs` from `revs`.
    fn pack(&self, revs: &str, extra: &[&str]) -> Vec<u8> {
        let mut args = vec!["--revs"];
        args.extend(extra);
        self.pack_of(revs, &args)
    }

    /// `input` served by refstore (`ours`) or by git (`theirs`).
    fn serve(&self, ours: bool, input: &[u8]) -> Answer {
        if ours {
            serve_ours(&self.ours, stdio::How::default(), input)
        } else {
            let o = Git::new(&self.home, &self.home).run_with(&["receive-pack", "theirs"], input);
            Answer {
                message: stderr(&o),
                success: o.status.success(),
                stdout: o.stdout,
            }
        }
    }

    fn refs(&self, repo: &Path) -> String {
        git_ok(&self.home, repo, &["for-each-ref"])
    }

    /// Serves `input` with both and returns (ours, theirs), requiring that
    /// their refs are alike afterwards.
    fn both(&self, input: &[u8]) -> (Answer, Answer) {
        let ours = self.serve(true, input);
        let theirs = self.serve(false, input);
        assert_eq!(self.refs(&self.ours), self.refs(&self.theirs));
        (ours, theirs)
    }
}

/// `input` served by refstore's receive-pack into `repo`.
fn serve_ours(repo: &Path, how: stdio::How, input: &[u8]) -> Answer {
    let mut stdout = Vec::new();
    let result = stdio::receive_pack(repo, how, &mut &input[..], &mut stdout);
    Answer {
        stdout,
        message: result.as_ref().err().cloned().unwrap_or_default(),
        success: result.is_ok(),
    }
}

/// The answer after the advertisement's flush-pkt, up to the next one:
/// the report's lines and the messages for the user. With side-band the
/// report is band 1's pkt-lines and the messages band 2's text; without,
/// the packets are the report's lines.
fn report_and_messages(answer: &Answer) -> (Vec<String>, String) {
    let text = |packet: &Vec<u8>| String::from_utf8_lossy(packet).trim_end().to_owned();
    let packets = packets_after_first_flush(&answer.stdout);
    let banded = packets
        .first()
        .is_some_and(|p| matches!(p.first(), Some(1..=3)));
    if !banded {
        return (packets.iter().map(text).collect(), String::new());
    }
    let (mut report, mut messages) = (Vec::new(), String::new());
    for packet in &packets {
        match packet.split_first() {
            Some((1, data)) => report.extend_from_slice(data),
            Some((2, message)) => messages.push_str(&String::from_utf8_lossy(message)),
            _ => panic!("not a side-band packet: {packet:?}"),
        }
    }
    // Band 1 holds the report as pkt-lines, ended by a flush-pkt.
    let report = packets_after_first_flush(&[b"0000", &report[..]].concat());
    (report.iter().map(text).collect(), messages)
}

/// The report: the pkt-lines after the advertisement's flush-pkt.
fn report(answer: &Answer) -> Vec<String> {
    report_and_messages(answer).0
}

/// The payloads of the packets between the first flush-pkt and the next.
fn packets_after_first_flush(stream: &[u8]) -> Vec<Vec<u8>> {
    let mut bytes = stream;
    let mut packets = Vec::new();
    let mut flushes = 0;
    while bytes.len() >= 4 && flushes < 2 {
        let len = usize::from_str_radix(std::str::from_utf8(&bytes[..4]).unwrap(), 16).unwrap();
        if len == 0 {
            flushes += 1;
            bytes = &bytes[4..];
            continue;
        }
        if flushes == 1 {
            packets.push(bytes[4..len].to_vec());
        }
        bytes = &bytes[len..];
    }
    packets
}

const ZERO: &str = "0000000000000000000000000000000000000000";
