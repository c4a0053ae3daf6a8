//! The advertisement receive-pack sends first, and a stateless request
//! answered without one.

use super::{serve_ours, stdio, Answer, Setup, ZERO};
use refstore_testsupport::git_ok;
use refstore_testsupport::pkt_line::pkt;

/// The advertisement's lines, with the capabilities (which name the
/// agent) cut off the first.
fn advertised(out: &Answer) -> Vec<String> {
    let mut bytes = &out.stdout[..];
    let mut lines = Vec::new();
    while bytes.len() >= 4 {
        let len = usize::from_str_radix(std::str::from_utf8(&bytes[..4]).unwrap(), 16).unwrap();
        if len == 0 {
            break;
        }
        let line = String::from_utf8_lossy(&bytes[4..len]).into_owned();
        lines.push(line.split('\0').next().unwrap().trim_end().to_owned());
        bytes = &bytes[len..];
    }
    lines
}

/// The capabilities of the advertisement's first line, without `agent`.
fn capabilities(out: &Answer) -> Vec<String> {
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let first = text.split('\0').nth(1).unwrap_or_default();
    let first = first.split('\n').next().unwrap_or_default();
    first
        .split(' ')
        .filter(|w| !w.is_empty() && !w.starts_with("agent="))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_advertisement_lists_what_git_lists() {
    let s = Setup::new();
    // One tag object for both (its id depends on the time it is made).
    git_ok(&s.home, &s.ours, &["tag", "-a", "-m", "t", "v1", "main"]);
    git_ok(
        &s.home,
        &s.theirs,
        &["fetch", "-q", "../ours", "refs/tags/v1:refs/tags/v1"],
    );
    for repo in [&s.ours, &s.theirs] {
        git_ok(
            &s.home,
            repo,
            &[
                "symbolic-ref",
                "refs/remotes/origin/HEAD",
                "refs/heads/main",
            ],
        );
    }
    let (ours, theirs) = s.both(b"0000");
    assert_eq!(advertised(&ours), advertised(&theirs));
    assert_eq!(advertised(&ours).len(), 3, "{:?}", advertised(&ours));
    // The same capabilities as git's, `push-options` only once
    // `receive.advertisePushOptions` asks for it.
    assert_eq!(capabilities(&ours), capabilities(&theirs));
    assert!(!capabilities(&ours).contains(&"push-options".to_owned()));
    for repo in [&s.ours, &s.theirs] {
        git_ok(
            &s.home,
            repo,
            &["config", "receive.advertisePushOptions", "true"],
        );
    }
    let (ours, theirs) = s.both(b"0000");
    assert_eq!(capabilities(&ours), capabilities(&theirs));
    let caps = capabilities(&ours);
    for cap in [
        "report-status",
        "report-status-v2",
        "delete-refs",
        "side-band-64k",
        "quiet",
        "atomic",
        "ofs-delta",
        "push-options",
        "object-format=sha1",
    ] {
        assert!(caps.contains(&cap.to_owned()), "{cap} missing: {caps:?}");
    }
    assert!(String::from_utf8_lossy(&ours.stdout).contains("agent=refstore/"));

    let tmp = tempfile::tempdir().unwrap();
    git_ok(tmp.path(), tmp.path(), &["init", "-q", "--bare", "empty"]);
    let how = stdio::How {
        advertise_refs: true,
        ..stdio::How::default()
    };
    let empty = serve_ours(&tmp.path().join("empty"), how, b"");
    assert!(empty.success, "{}", empty.message);
    assert_eq!(advertised(&empty), [format!("{ZERO} capabilities^{{}}")]);
}

#[test]
fn stateless_rpc_answers_without_an_advertisement() {
    let s = Setup::new();
    let first = s.rev("main~1");
    git_ok(&s.home, &s.ours, &["update-ref", "refs/heads/gone", &first]);
    let input = [
        pkt(format!("{first} {ZERO} refs/heads/gone\0report-status")),
        b"0000".to_vec(),
    ]
    .concat();
    let how = stdio::How {
        stateless_rpc: true,
        ..stdio::How::default()
    };
    let out = serve_ours(&s.ours, how, &input);
    assert!(out.success, "{}", out.message);
    let expected = [
        pkt("unpack ok\n"),
        pkt("ok refs/heads/gone\n"),
        b"0000".to_vec(),
    ]
    .concat();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&expected)
    );
    assert!(!s.refs(&s.ours).contains("refs/heads/gone"));
}
