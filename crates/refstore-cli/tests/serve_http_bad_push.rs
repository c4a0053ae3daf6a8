//! A push whose command list is malformed, sent to `refstore serve` over
//! HTTP: generated requests (a command line that is not
//! `<old> <new> <ref>`, or framing that is no pkt-line) are refused with
//! 400 Bad Request and git's own message, and no ref changes. git's
//! `receive-pack` is run on the same bytes as the oracle: each generated
//! request must be one git dies on, with the message refstore shows.
//!
//! `REFSTORE_BAD_PUSH_SEED` and `REFSTORE_BAD_PUSH_REQUESTS` change the
//! generated requests.

mod served;
mod support;

use refstore_testsupport::rng::Rng;
use served::*;
use std::path::Path;
use support::*;

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn pkt(payload: &[u8]) -> Vec<u8> {
    let mut out = format!("{:04x}", payload.len() + 4).into_bytes();
    out.extend_from_slice(payload);
    out
}

fn hex_id(rng: &mut Rng, len: usize) -> String {
    (0..len)
        .map(|_| char::from(b"0123456789abcdef"[rng.below(16)]))
        .collect()
}

/// One command line that git's receive-pack refuses as malformed.
fn malformed_command(rng: &mut Rng, main: &str) -> String {
    let zero = "0".repeat(40);
    let old = if rng.chance(50) {
        zero.clone()
    } else {
        main.to_owned()
    };
    let new = if rng.chance(50) {
        main.to_owned()
    } else {
        hex_id(rng, 40)
    };
    let name = format!("refs/heads/b{}", rng.below(1000));
    match rng.below(7) {
        // Too few fields.
        0 => format!("{old} {new}"),
        1 => old,
        // An id of the wrong length.
        2 | 3 => {
            let len = 1 + rng.below(39);
            let short = hex_id(rng, len);
            match rng.chance(50) {
                true => format!("{short} {new} {name}"),
                false => format!("{old} {short} {name}"),
            }
        }
        // A character that is no hex digit in an id.
        4 => {
            let mut bad: Vec<char> = old.chars().collect();
            let at = rng.below(bad.len());
            bad[at] = *rng.pick(&['g', 'z', 'X', '-', ' ', '\t']);
            let bad: String = bad.into_iter().collect();
            format!("{bad} {new} {name}")
        }
        // Another separator than one space.
        5 => {
            let separator = *rng.pick(&["\t", "  ", ":", ""]);
            format!("{old}{separator}{new} {name}")
        }
        // Words.
        _ => {
            let words = ["push", "update", "main", "delete", "HEAD", "refs/heads/x"];
            (0..1 + rng.below(4))
                .map(|_| *rng.pick(&words))
                .collect::<Vec<_>>()
                .join(" ")
        }
    }
}

/// A request body: maybe valid commands first, then a malformed one, or
/// bytes that are no pkt-line; the capabilities a client sends.
fn malformed_request(rng: &mut Rng, main: &str) -> Vec<u8> {
    let capabilities = rng.some(
        &[
            "report-status",
            "report-status-v2",
            "side-band-64k",
            "atomic",
            "quiet",
        ],
        3,
    );
    let mut lines = Vec::new();
    for _ in 0..rng.below(3) {
        let name = format!("refs/heads/ok{}", rng.below(1000));
        lines.push(format!("{} {main} {name}", "0".repeat(40)));
    }
    if rng.chance(15) {
        // Framing: a length header that is no hex number.
        let mut body = Vec::new();
        for line in &lines {
            body.extend(pkt(line.as_bytes()));
        }
        let header = *rng.pick(&["zz12", "00g5", "-001"]);
        body.extend_from_slice(header.as_bytes());
        body.extend_from_slice(b"garbage");
        return body;
    }
    lines.insert(rng.below(lines.len() + 1), malformed_command(rng, main));
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
    let out = run_isolated(
        "git",
        home,
        home,
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
    let (server, url) = served_for_pushes(home, &[], &[]);
    let work = home.join("work");
    git_ok(home, &work, &["commit", "-q", "--allow-empty", "-m", "one"]);
    let o = git_net(home, &work, &["push", &url, "HEAD:refs/heads/main"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let served = home.join("root/proj.git");
    let main = git_ok(home, &served, &["rev-parse", "refs/heads/main"]);
    let main = main.trim();
    let refs = || git_ok(home, &served, &["for-each-ref"]);
    let before = refs();

    let mut rng = Rng::new(env_number("REFSTORE_BAD_PUSH_SEED", 11));
    let count = env_number("REFSTORE_BAD_PUSH_REQUESTS", 40);
    let auth = "Authorization: Basic Ym9iOnB3"; // bob:pw
    for n in 0..count {
        let body = malformed_request(&mut rng, main);
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
        assert_eq!(status, 400, "request {n} {shown:?}:\n{answer}");
        assert!(
            answer.contains(&message),
            "request {n} {shown:?}: git says {message:?}, refstore:\n{answer}"
        );
        assert_eq!(refs(), before, "request {n} {shown:?} changed refs");
    }
    println!("{count} malformed pushes refused with 400 and git's message");
}
