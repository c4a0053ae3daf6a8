//! Bad requests to upload-pack: each is refused with an error returned to
//! the transport and, while the client can still read it, an `ERR` packet
//! in git's wording; arbitrary bytes never make it panic. And the
//! advertisement of 100k refs goes out in a handful of writes.

use proptest::prelude::*;
use refstore_fs::real::RealFs;
use refstore_protocol::upload_pack::{upload_pack, Options, UploadPackError};
use refstore_protocol::{ProtocolVersion, Repository};
use refstore_testsupport::Git;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

fn git(dir: &Path, args: &[&str]) -> String {
    Git::at(dir).ok(args).trim_end().to_owned()
}

/// A repository with one commit on main.
fn repository() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    git(
        dir.path(),
        &["commit", "-q", "--allow-empty", "-m", "first"],
    );
    dir
}

fn open(dir: &Path) -> Repository {
    refstore_repo::Repository::open(Arc::new(RealFs::new()), dir, &[])
        .and_then(Repository::serve)
        .unwrap()
}

fn stateless(version: ProtocolVersion) -> Options {
    Options {
        stateless_rpc: true,
        advertise_refs: false,
        version,
    }
}

/// Frames `lines` as pkt-lines; `"0000"` and `"0001"` are special packets.
fn packets(lines: &[&str]) -> Vec<u8> {
    let mut out = Vec::new();
    for line in lines {
        if let "0000" | "0001" = *line {
            out.extend_from_slice(line.as_bytes());
        } else {
            out.extend_from_slice(format!("{:04x}{line}\n", line.len() + 5).as_bytes());
        }
    }
    out
}

/// Runs a request that must fail; returns the error and what was sent.
fn refused(repo: &Repository, options: Options, input: &[u8]) -> (UploadPackError, String) {
    let mut output = Vec::new();
    let err = upload_pack(repo, &options, &mut &input[..], &mut output).unwrap_err();
    (err, String::from_utf8_lossy(&output).into_owned())
}

#[test]
fn malformed_packets_are_refused_with_git_wording() {
    let dir = repository();
    let repo = open(dir.path());
    let cases: &[(&[u8], &str)] = &[
        (b"zzzz", "protocol error: bad line length character: zzzz"),
        (b"0003", "protocol error: bad line length 3"),
        (b"ffff", "protocol error: bad line length 65535"),
        (b"0032want 01", "the remote end hung up unexpectedly"),
        (b"00", "the remote end hung up unexpectedly"),
    ];
    for version in [ProtocolVersion::V0, ProtocolVersion::V2] {
        for (input, message) in cases {
            let (err, sent) = refused(&repo, stateless(version), input);
            assert!(matches!(err, UploadPackError::Packet(_)), "{err:?}");
            assert!(err.to_string().contains(message), "{err}");
            assert!(
                sent.contains(&format!("ERR upload-pack: {message}")),
                "{sent:?}"
            );
        }
    }
    // A delim-pkt is v2 framing: a v0 conversation refuses it.
    let (err, _) = refused(&repo, stateless(ProtocolVersion::V0), b"0001");
    assert!(err.to_string().contains("unexpected"), "{err}");
}

#[test]
fn bad_wants_are_refused() {
    let dir = repository();
    let repo = open(dir.path());
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let unknown = "0123456789012345678901234567890123456789";
    let blob = {
        std::fs::write(dir.path().join("loose"), "not in any commit\n").unwrap();
        git(dir.path(), &["hash-object", "-w", "loose"])
    };
    let v0_cases = [
        (
            format!("want {unknown} side-band-64k"),
            format!("not our ref {unknown}"),
        ),
        (
            "want 0123".to_owned(),
            "expected to get an object id".to_owned(),
        ),
        (
            format!("want {head}x"),
            "expected to get an object id".to_owned(),
        ),
        (
            "gimme everything".to_owned(),
            "expected to get object ID".to_owned(),
        ),
        (
            format!("want {head}\ndeepen 0"),
            "invalid deepen: 'deepen 0'".to_owned(),
        ),
        (
            format!("want {head}\nshallow {head}x"),
            "expected to get an object id".to_owned(),
        ),
        (
            format!("want {head}\ndeepen 1\ndeepen-since 5"),
            "deepen and deepen-since (or deepen-not) cannot be used together".to_owned(),
        ),
        (
            format!("want {head}\ndeepen-not nosuchref"),
            "deepen-not is not a ref: nosuchref".to_owned(),
        ),
        (
            format!("want {head}\nshallow {blob}"),
            format!("invalid shallow object {blob}"),
        ),
        (
            format!("want {head} object-format=sha256"),
            "uses object format 'sha256'".to_owned(),
        ),
    ];
    for (line, message) in &v0_cases {
        let mut lines: Vec<&str> = line.split('\n').collect();
        lines.extend(["0000", "done"]);
        let input = packets(&lines);
        let (err, sent) = refused(&repo, stateless(ProtocolVersion::V0), &input);
        assert!(
            matches!(err, UploadPackError::Request(_)),
            "{line}: {err:?}"
        );
        assert!(err.to_string().contains(message.as_str()), "{line}: {err}");
        assert_eq!(sent.get(4..8), Some("ERR "), "{sent:?}");
    }
    // An object no ref names: over HTTP git lets any tree or blob through
    // (its reachability check sees commits only); over a connection that
    // advertised the refs it is refused, unless the configuration allows
    // it (uploadpack.allowAnySHA1InWant is off by default).
    let input = packets(&[&format!("want {blob}"), "0000", "done"]);
    let options = Options {
        stateless_rpc: false,
        ..stateless(ProtocolVersion::V0)
    };
    let (err, sent) = refused(&repo, options, &input);
    assert!(
        err.to_string().contains(&format!("not our ref {blob}")),
        "{err}"
    );
    assert!(
        sent.contains(&format!("ERR upload-pack: not our ref {blob}")),
        "{sent:?}"
    );
    // After valid wants, only haves and done may come.
    let input = packets(&[&format!("want {head}"), "0000", "haev x"]);
    let (err, _) = refused(&repo, stateless(ProtocolVersion::V0), &input);
    assert!(
        err.to_string()
            .contains("expected to get a have line or done"),
        "{err}"
    );

    let input = packets(&[
        "command=fetch",
        "0001",
        &format!("want {unknown}"),
        "done",
        "0000",
    ]);
    let (err, sent) = refused(&repo, stateless(ProtocolVersion::V2), &input);
    assert!(err.to_string().contains("not our ref"), "{err}");
    assert!(sent.contains("ERR upload-pack: not our ref"), "{sent:?}");
}

#[test]
fn bad_v2_requests_are_refused() {
    let dir = repository();
    let repo = open(dir.path());
    let cases: &[(&[&str], &str)] = &[
        (
            &["command=frobnicate", "0000"],
            "invalid command 'frobnicate'",
        ),
        (&["frobnicate", "0000"], "expected a command"),
        (
            &["command=ls-refs", "color=always", "0000"],
            "unknown capability 'color=always'",
        ),
        (
            &["command=ls-refs", "0001", "sort", "0000"],
            "expected an ls-refs argument, got 'sort'",
        ),
        (
            &["command=fetch", "0001", "deepen-since soon", "0000"],
            "invalid deepen-since: 'deepen-since soon'",
        ),
        (
            &["command=fetch", "0001", "filter blob:none", "0000"],
            "expected a fetch argument",
        ),
        (
            &["command=fetch", "0001", "wait-for-done", "done", "0000"],
            "at least one object",
        ),
        (
            &["command=ls-refs", "0001", "peel"],
            "hung up in the middle of a request",
        ),
    ];
    for (lines, message) in cases {
        let (err, sent) = refused(&repo, stateless(ProtocolVersion::V2), &packets(lines));
        assert!(err.to_string().contains(message), "{lines:?}: {err}");
        assert!(sent.contains("ERR upload-pack: "), "{lines:?}: {sent:?}");
    }
    // A fetch that wants nothing gets no answer, as from git.
    let mut sent = Vec::new();
    let input = packets(&["command=fetch", "0001", "done", "0000"]);
    upload_pack(
        &repo,
        &stateless(ProtocolVersion::V2),
        &mut &input[..],
        &mut sent,
    )
    .unwrap();
    assert_eq!(sent, b"");
}

#[test]
fn a_client_that_only_lists_refs_is_served() {
    let dir = repository();
    let repo = open(dir.path());
    // ls-remote over v0: it reads the advertisement and sends a flush, or
    // hangs up.
    for input in [&b"0000"[..], b""] {
        let mut output = Vec::new();
        let options = Options::default();
        upload_pack(&repo, &options, &mut &input[..], &mut output).unwrap();
        assert!(output.ends_with(b"0000"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Arbitrary bytes, raw or after a plausible start, give an answer or
    /// an error, never a panic.
    #[test]
    fn arbitrary_input_never_panics(
        prefix in prop::sample::select(vec!["", "0014command=ls-refs\n0001", "0012command=fetch\n0001", "0032want "]),
        bytes in prop::collection::vec(any::<u8>(), 0..200),
        v2 in any::<bool>(),
    ) {
        let dir = repository_once();
        let repo = open(dir);
        let mut input = prefix.as_bytes().to_vec();
        input.extend_from_slice(&bytes);
        let version = if v2 { ProtocolVersion::V2 } else { ProtocolVersion::V0 };
        let mut output = Vec::new();
        let _ = upload_pack(&repo, &stateless(version), &mut &input[..], &mut output);
    }
}

/// One repository for all property cases: creating one per case would
/// dominate the run.
fn repository_once() -> &'static Path {
    static REPO: std::sync::OnceLock<tempfile::TempDir> = std::sync::OnceLock::new();
    REPO.get_or_init(repository).path()
}

/// Counts the writes reaching it.
struct CountingWriter {
    writes: usize,
    bytes: usize,
}

impl Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writes += 1;
        self.bytes += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn the_advertisement_of_100k_refs_takes_few_writes() {
    let dir = repository();
    let head = git(dir.path(), &["rev-parse", "HEAD"]);
    let refs = 100_000;
    let mut packed = String::from("# pack-refs with: peeled fully-peeled sorted \n");
    for n in 0..refs {
        packed.push_str(&format!("{head} refs/heads/branch-{n:06}\n"));
    }
    std::fs::write(dir.path().join(".git/packed-refs"), packed).unwrap();
    let repo = open(dir.path());

    let requests: [(Options, Vec<u8>); 3] = [
        (
            Options {
                advertise_refs: true,
                ..Options::default()
            },
            Vec::new(),
        ),
        (
            Options {
                advertise_refs: false,
                stateless_rpc: false,
                version: ProtocolVersion::V0,
            },
            b"0000".to_vec(),
        ),
        (
            stateless(ProtocolVersion::V2),
            packets(&["command=ls-refs", "0001", "peel", "symrefs", "0000"]),
        ),
    ];
    for (options, input) in requests {
        let mut counter = CountingWriter {
            writes: 0,
            bytes: 0,
        };
        upload_pack(&open(dir.path()), &options, &mut &input[..], &mut counter).unwrap();
        // main and HEAD besides the packed refs, one line each.
        assert!(
            counter.bytes > (refs + 2) * 60,
            "{options:?}: {} bytes",
            counter.bytes
        );
        let bound = counter.bytes / (16 * 1024) + 3;
        assert!(
            counter.writes <= bound,
            "{options:?}: {} writes for {} bytes (bound {bound})",
            counter.writes,
            counter.bytes
        );
    }
    drop(repo);
}
