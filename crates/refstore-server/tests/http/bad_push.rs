//! A push whose command list is malformed, sent over HTTP: generated
//! requests (a command line that is not `<old> <new> <ref>`, or framing
//! that is no pkt-line) are refused with 400 Bad Request and git's own
//! message, and no ref changes. git's `receive-pack` is run on the same
//! bytes as the oracle: each generated request must be one git dies on,
//! with the message refstore shows.
//!
//! `PROPTEST_CASES` changes how many requests are generated (40 by
//! default).

use crate::support::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError, TestRunner};
use std::path::Path;

fn pkt(payload: &[u8]) -> Vec<u8> {
    let mut out = format!("{:04x}", payload.len() + 4).into_bytes();
    out.extend_from_slice(payload);
    out
}

fn hex(len: usize) -> impl Strategy<Value = String> {
    proptest::collection::vec(proptest::sample::select(b"0123456789abcdef".to_vec()), len)
        .prop_map(|bytes| String::from_utf8(bytes).unwrap())
}

/// One command line that git's receive-pack refuses as malformed.
fn malformed_command(main: String) -> impl Strategy<Value = String> {
    let zero = "0".repeat(40);
    let old = prop_oneof![Just(zero), Just(main.clone())];
    let new = prop_oneof![Just(main), hex(40)];
    let name = (0..1000u32).prop_map(|n| format!("refs/heads/b{n}"));
    prop_oneof![
        // Too few fields.
        (old.clone(), new.clone()).prop_map(|(old, new)| format!("{old} {new}")),
        old.clone(),
        // An id of the wrong length, as either id.
        (
            old.clone(),
            new.clone(),
            (1..40usize).prop_flat_map(hex),
            name.clone(),
            any::<bool>()
        )
            .prop_map(|(old, new, short, name, first)| match first {
                true => format!("{short} {new} {name}"),
                false => format!("{old} {short} {name}"),
            }),
        // A character that is no hex digit in an id.
        (
            old.clone(),
            new.clone(),
            0..40usize,
            proptest::sample::select(vec!['g', 'z', 'X', '-', ' ', '\t']),
            name.clone()
        )
            .prop_map(|(old, new, at, bad, name)| {
                let mut id: Vec<char> = old.chars().collect();
                id[at] = bad;
                format!("{} {new} {name}", id.into_iter().collect::<String>())
            }),
        // Another separator than one space.
        (
            old,
            new,
            proptest::sample::select(vec!["\t", "  ", ":", ""]),
            name
        )
            .prop_map(|(old, new, separator, name)| format!("{old}{separator}{new} {name}")),
        // Words.
        proptest::collection::vec(
            proptest::sample::select(vec![
                "push",
                "update",
                "main",
                "delete",
                "HEAD",
                "refs/heads/x"
            ]),
            1..=4
        )
        .prop_map(|words| words.join(" ")),
    ]
}

/// A request body: maybe valid commands first, then a malformed one, or
/// bytes that are no pkt-line; the capabilities a client sends.
fn malformed_request(main: String) -> impl Strategy<Value = Vec<u8>> {
    let capabilities = proptest::sample::subsequence(
        vec![
            "report-status",
            "report-status-v2",
            "side-band-64k",
            "atomic",
            "quiet",
        ],
        0..=3,
    )
    .prop_shuffle();
    let zero = "0".repeat(40);
    let valid = {
        let main = main.clone();
        proptest::collection::vec(0..1000u32, 0..3).prop_map(move |names| {
            names
                .into_iter()
                .map(|n| format!("{zero} {main} refs/heads/ok{n}"))
                .collect::<Vec<_>>()
        })
    };
    // Framing: a length header that is no hex number.
    let framing = (
        valid.clone(),
        proptest::sample::select(vec!["zz12", "00g5", "-001"]),
    )
        .prop_map(|(lines, header)| {
            let mut body = Vec::new();
            for line in &lines {
                body.extend(pkt(line.as_bytes()));
            }
            body.extend_from_slice(header.as_bytes());
            body.extend_from_slice(b"garbage");
            body
        });
    let commands = (
        valid,
        malformed_command(main),
        any::<prop::sample::Index>(),
        capabilities,
    )
        .prop_map(|(mut lines, bad, at, capabilities)| {
            let at = at.index(lines.len() + 1);
            lines.insert(at, bad);
            let mut body = Vec::new();
            for (i, line) in lines.iter().enumerate() {
                let mut payload = line.clone().into_bytes();
                if i == 0 && !capabilities.is_empty() {
                    payload.push(0);
                    payload.extend_from_slice(capabilities.join(" ").as_bytes());
                }
                payload.push(b'\n');
                body.extend(pkt(&payload));
            }
            body.extend_from_slice(b"0000");
            body
        });
    prop_oneof![15 => framing, 85 => commands]
}

/// What git's receive-pack dies with on `body`: its `fatal:` message.
fn git_refusal(home: &Path, repo: &Path, body: &[u8]) -> String {
    let copy = home.join("oracle.git");
    let _ = std::fs::remove_dir_all(&copy);
    git_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            repo.to_str().unwrap(),
            copy.to_str().unwrap(),
        ],
    );
    let out = Git::new(home, home).run_with(
        &["receive-pack", "--stateless-rpc", copy.to_str().unwrap()],
        body,
    );
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success() && out.stdout.is_empty(),
        "git accepted a generated request {:?}: {err}",
        String::from_utf8_lossy(body)
    );
    err.trim_end()
        .strip_prefix("fatal: ")
        .unwrap_or_else(|| panic!("git's message has no `fatal:`: {err}"))
        .to_owned()
}

#[test]
fn malformed_pushes_are_bad_requests_with_gits_message() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let served = root.join("proj.git");
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", served.to_str().unwrap()],
    );
    let server = Serve::new(&root).pushes("bob:pw\n").start();
    let url = server.url_as("bob", "pw", "proj.git");
    let work = Work::init(home, "work");
    work.commit_empty("one");
    let o = git_net(home, &work.path, &["push", &url, "HEAD:refs/heads/main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let main = git_ok(home, &served, &["rev-parse", "refs/heads/main"]);
    let main = main.trim().to_owned();
    let refs = || git_ok(home, &served, &["for-each-ref"]);
    let before = refs();

    let auth = "Authorization: Basic Ym9iOnB3"; // bob:pw
    let mut config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    if std::env::var_os("PROPTEST_CASES").is_none() {
        config.cases = 40;
    }
    let mut runner = TestRunner::new(config);
    runner
        .run(&malformed_request(main), |body| {
            let message = git_refusal(home, &served, &body);
            let mut request = format!(
                "POST /proj.git/git-receive-pack HTTP/1.1\r\nHost: x\r\n{auth}\r\n\
                 Content-Type: application/x-git-receive-pack-request\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            request.extend_from_slice(&body);
            let (status, answer) = server.exchange(&request);
            let shown = String::from_utf8_lossy(&body).into_owned();
            let fail = |why: String| Err(TestCaseError::fail(format!("{shown:?}: {why}")));
            if status != 400 {
                return fail(format!("answered {status}:\n{answer}"));
            }
            if !answer.contains(&message) {
                return fail(format!("git says {message:?}, refstore:\n{answer}"));
            }
            if refs() != before {
                return fail("the refs changed".to_owned());
            }
            Ok(())
        })
        .unwrap();
}
