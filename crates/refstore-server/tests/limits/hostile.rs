//! The HTTP transport under hostile clients: clients that send slowly or not
//! at all are dropped after `--timeout` without starving real clients;
//! request heads and bodies beyond the limits are refused with 431 and 413
//! whatever their framing (length, chunked, gzip); paths and ref names
//! that try to leave the repository are refused; a loose ref that is a
//! symbolic link out of the repository is replaced, never written through,
//! as git does; no password reaches the log, even at trace level; and one
//! client address cannot take every connection or every worker.

use crate::support::alone::alone;
use crate::support::*;
use base64::Engine as _;
use refstore_testsupport::pkt_line::pkt;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A bare repository `root/proj.git` with two commits on main; returns it
/// and the work repository it was cloned from.
fn setup(home: &Path, root: &Path) -> (PathBuf, PathBuf) {
    let served = root.join("proj.git");
    let work = Work::init(home, "work");
    work.commit_file("a", "a")
        .commit_file("b", "b")
        .bare_clone(&served);
    (work.path, served)
}

fn basic(user_password: &str) -> String {
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_password)
    )
}

/// Sends `bytes` one at a time, `gap` apart, until the server closes:
/// the slow client under test (its gaps are its slowness, not a wait).
fn trickle(mut stream: TcpStream, bytes: Vec<u8>, gap: Duration) {
    for byte in bytes {
        if stream.write_all(&[byte]).is_err() {
            return;
        }
        std::thread::sleep(gap);
    }
}

/// Sends the first byte of `bytes` at once, then trickles the rest from a
/// thread of its own: the server has something to read from the start.
fn start_trickle(stream: &mut TcpStream, bytes: &[u8], gap: Duration) -> JoinHandle<()> {
    stream.write_all(&bytes[..1]).unwrap();
    let (writer, rest) = (stream.try_clone().unwrap(), bytes[1..].to_vec());
    std::thread::spawn(move || trickle(writer, rest, gap))
}

#[test]
fn slow_clients_are_dropped_without_starving_real_ones() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (_, served) = setup(home, &root);
    let timeout = Duration::from_secs(3);
    let mut serve = Serve::new(&root);
    serve.options.workers = 2;
    serve.options.timeout = timeout;
    let server = serve.start();

    let get =
        b"GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n".to_vec();
    let post = b"POST /proj.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 100000\r\n\r\n".to_vec();
    let started = Instant::now();
    let mut slow = Vec::new();
    let mut tricklers = Vec::new();
    // Three kinds, two of each: more slow clients than workers.
    for kind in 0..6 {
        let mut stream = TcpStream::connect(server.addr).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        match kind % 3 {
            0 => {} // connects and says nothing
            1 => tricklers.push(start_trickle(&mut stream, &get, Duration::from_millis(100))),
            _ => {
                // The whole head, then a body a byte at a time.
                stream.write_all(&post).unwrap();
                tricklers.push(start_trickle(
                    &mut stream,
                    &[b'0'; 100_000],
                    Duration::from_millis(100),
                ));
            }
        }
        slow.push((kind % 3, stream));
    }
    // Every slow client holds what it can before the real one asks.
    for (_, stream) in &slow {
        wait_until_read(stream);
    }

    // A real client is served at once, long before the slow ones are gone.
    let asked = Instant::now();
    // curl gives up if the server sends nothing for the timeout, so a
    // starved client fails this test instead of hanging it.
    let o = git_net(
        home,
        home,
        &[
            "-c",
            "http.lowSpeedLimit=1",
            "-c",
            "http.lowSpeedTime=3",
            "ls-remote",
            &server.url("proj.git"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        stdout(&o).lines().find(|l| l.ends_with("refs/heads/main")),
        git_ok(home, &served, &["ls-remote", "."])
            .lines()
            .find(|l| l.ends_with("refs/heads/main"))
    );
    assert!(
        asked.elapsed() < timeout,
        "ls-remote waited {:?} behind slow clients",
        asked.elapsed()
    );

    // Every slow client is dropped after about the timeout: the silent
    // ones without an answer, the others with 408.
    for (kind, mut stream) in slow {
        let (status, answer) = read_answer(&mut stream);
        let waited = started.elapsed();
        assert!(
            waited < timeout + Duration::from_secs(5),
            "kind {kind} still connected after {waited:?}"
        );
        match kind {
            0 => assert_eq!(status, 0, "{answer}"),
            _ => assert_eq!(status, 408, "kind {kind}: {answer}"),
        }
    }
    assert!(started.elapsed() >= timeout - Duration::from_millis(500));
    for t in tricklers {
        t.join().unwrap();
    }

    server.stop();
    let log = log.log();
    assert!(log.contains("status=408"), "{log}");
}

#[test]
fn connections_beyond_the_limit_get_503_and_slow_clients_do_not_delay_shutdown() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let mut serve = Serve::new(&root);
    serve.options.max_connections = 2;
    serve.options.timeout = Duration::from_secs(60);
    let server = serve.start();
    // Two connections busy with requests still arriving (an idle one
    // would make room for the next: see connections.rs).
    let mut stalled = TcpStream::connect(server.addr).unwrap();
    stalled.write_all(b"GET /proj.git/info/re").unwrap();
    let mut trickler = TcpStream::connect(server.addr).unwrap();
    let trickling = start_trickle(
        &mut trickler,
        b"GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\n",
        Duration::from_millis(100),
    );
    // Both have begun a request the server has read: neither is idle.
    wait_until_read(&stalled);
    wait_until_read(&trickler);
    let (status, answer) = server.raw("GET /proj.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 503, "{answer}");

    // A stop: the requests still arriving are given up, long before the
    // 60 s timeout.
    let stopping = Instant::now();
    server.stop();
    let log = log.log();
    assert!(
        stopping.elapsed() < Duration::from_secs(10),
        "shutdown took {:?} with slow clients connected",
        stopping.elapsed()
    );
    assert!(log.contains("too many connections"), "{log}");
    drop(stalled);
    drop(trickler);
    trickling.join().unwrap();
}

/// A chunked body made of `data` in chunks of at most 1000 bytes.
fn chunked(data: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    for chunk in data.chunks(1000) {
        out.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        out.extend_from_slice(chunk);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut child = Command::new("gzip")
        .arg("-c")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(data).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    out.stdout
}

fn post(service: &str, fields: &[&str], body: &[u8]) -> Vec<u8> {
    let mut request = format!(
        "POST /proj.git/git-{service} HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-{service}-request\r\n"
    );
    for field in fields {
        request.push_str(field);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    let mut request = request.into_bytes();
    request.extend_from_slice(body);
    request
}

#[test]
fn heads_and_bodies_beyond_the_limits_are_refused() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (_, served) = setup(home, &root);
    let mut serve = Serve::new(&root).pushes("bob:plain-pw\n");
    serve.options.limits.max_fetch_request = 4096;
    serve.options.limits.max_push_request = 8192;
    let server = serve.start();
    let before = git_ok(home, &served, &["for-each-ref"]);

    // Within the limit, chunked: a v2 ls-refs answered.
    let ls_refs = b"0014command=ls-refs\n0000";
    let (status, answer) = server.exchange(&post(
        "upload-pack",
        &[
            "Git-Protocol: version=2",
            "Transfer-Encoding: chunked",
            "Connection: close",
        ],
        &chunked(ls_refs),
    ));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("refs/heads/main"), "{answer}");
    // And gzip-compressed, with a length.
    let small = gzip(ls_refs);
    let (status, answer) = server.exchange(&post(
        "upload-pack",
        &[
            "Git-Protocol: version=2",
            "Content-Encoding: gzip",
            &format!("Content-Length: {}", small.len()),
            "Connection: close",
        ],
        &small,
    ));
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("refs/heads/main"), "{answer}");

    // Over the limit: by announced length (refused before the body is
    // sent, and the connection closes), chunked, and gzip that inflates
    // past it from a few bytes.
    let big = vec![b'0'; 5000];
    let (status, answer) = server.exchange(&post("upload-pack", &["Content-Length: 5000"], b""));
    assert_eq!(status, 413, "{answer}");
    assert!(answer.contains("4096 bytes"), "{answer}");
    let (status, answer) = server.exchange(&post(
        "upload-pack",
        &["Transfer-Encoding: chunked"],
        &chunked(&big),
    ));
    assert_eq!(status, 413, "{answer}");
    let bomb = gzip(&vec![b'0'; 1 << 20]);
    assert!(bomb.len() < 4096);
    for fields in [
        vec![
            "Content-Encoding: gzip".to_owned(),
            format!("Content-Length: {}", bomb.len()),
        ],
        vec![
            "Content-Encoding: gzip".to_owned(),
            "Transfer-Encoding: chunked".to_owned(),
        ],
    ] {
        let fields: Vec<&str> = fields.iter().map(String::as_str).collect();
        let body = if fields[1].starts_with("Transfer") {
            chunked(&bomb)
        } else {
            bomb.clone()
        };
        let (status, answer) = server.exchange(&post("upload-pack", &fields, &body));
        assert_eq!(status, 413, "{fields:?}: {answer}");
    }
    // Pushes have their own limit, checked for authenticated users.
    let auth = format!("Authorization: {}", basic("bob:plain-pw"));
    let main = git_ok(home, &served, &["rev-parse", "main"]);
    let mut push_body = pkt(format!(
        "{} {} refs/heads/big\0report-status\n",
        "0".repeat(40),
        main.trim()
    )
    .as_bytes());
    push_body.extend_from_slice(b"0000");
    push_body.extend(pack_of_noise(home, 9000));
    let (status, answer) = server.exchange(&post(
        "receive-pack",
        &[&auth, "Transfer-Encoding: chunked"],
        &chunked(&push_body),
    ));
    assert_eq!(status, 413, "{answer}");
    assert!(answer.contains("8192 bytes"), "{answer}");
    let (status, answer) = server.exchange(&post(
        "receive-pack",
        &[&auth, "Content-Length: 10000"],
        b"",
    ));
    assert_eq!(status, 413, "{answer}");

    // Bodies that can be read two ways, or not at all.
    for fields in [
        &["Content-Length: 4", "Transfer-Encoding: chunked"][..],
        &["Content-Length: 4", "Content-Length: 5"],
        &["Transfer-Encoding: gzip"],
    ] {
        let (status, answer) = server.exchange(&post("upload-pack", fields, b"0000"));
        assert_eq!(status, 400, "{fields:?}: {answer}");
    }
    let (status, answer) = server.exchange(&post(
        "upload-pack",
        &["Transfer-Encoding: chunked"],
        b"zz\r\n0000\r\n0\r\n\r\n",
    ));
    assert_eq!(status, 400, "{answer}");

    // Heads: a long URL, too many fields.
    let long = format!(
        "GET /{}/info/refs?service=git-upload-pack",
        "a".repeat(20_000)
    );
    let (status, answer) = server.raw(&long);
    assert_eq!(status, 431, "{answer}");
    let mut many = String::from("GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\n");
    for i in 0..150 {
        many.push_str(&format!("X-Field-{i}: {i}\r\n"));
    }
    many.push_str("\r\n");
    let (status, answer) = server.exchange(many.as_bytes());
    assert_eq!(status, 431, "{answer}");

    assert_eq!(git_ok(home, &served, &["for-each-ref"]), before);
    server.stop();
    let log = log.log();
    assert!(
        log.contains("status=413") && log.contains("status=431"),
        "{log}"
    );
}

/// A pack holding one blob of `size` incompressible bytes.
fn pack_of_noise(home: &Path, size: usize) -> Vec<u8> {
    let repo = home.join("noise.git");
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", repo.to_str().unwrap()],
    );
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..size)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect();
    std::fs::write(home.join("noise"), &noise).unwrap();
    let id = git_ok(home, &repo, &["hash-object", "-w", "../noise"]);
    let o = Git::new(home, &repo).run_with(&["pack-objects", "--stdout", "-q"], id.as_bytes());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(o.stdout.len() > size);
    o.stdout
}

#[test]
fn escaping_paths_and_ref_names_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (work, served) = setup(home, &root);
    git_ok(home, home, &["init", "-q", "--bare", "secret.git"]);
    std::fs::create_dir_all(root.join("team")).unwrap();
    std::os::unix::fs::symlink(home, root.join("team/home")).unwrap();
    let server = Serve::new(&root).pushes("bob:plain-pw\n").start();

    let secret = home.join("secret.git");
    let absolute = secret.to_str().unwrap().trim_start_matches('/');
    for path in [
        "/../secret.git".to_owned(),
        "/%2e%2e/secret.git".to_owned(),
        "/%2E%2E%2Fsecret.git".to_owned(),
        "/proj.git/%2e%2e/%2e%2e/secret.git".to_owned(),
        "/team/home/secret.git".to_owned(),
        "/team%2Fhome%2Fsecret.git".to_owned(),
        format!("/{absolute}"),
        format!("//{absolute}"),
        format!("/%2F{absolute}"),
    ] {
        for service in ["git-upload-pack", "git-receive-pack"] {
            let (status, answer) = server.exchange(
                format!(
                    "GET {path}/info/refs?service={service} HTTP/1.0\r\nAuthorization: {}\r\n\r\n",
                    basic("bob:plain-pw")
                )
                .as_bytes(),
            );
            assert_eq!(status, 404, "{path}: {answer}");
        }
    }
    let (status, _) = server.raw("GET /proj.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 200);

    // Ref names that are not refs, or that would leave refs/: refused one
    // by one with git's words; a good one in the same push goes through.
    let main = git_ok(home, &served, &["rev-parse", "main"]);
    let main = main.trim();
    let zero = "0".repeat(40);
    let empty_pack = Git::new(home, &served).ok_bytes(&["pack-objects", "--stdout", "-q"], b"");
    let funny = [
        "refs/heads/../../../outside",
        "refs/heads/a..b",
        "/etc/passwd",
        "HEAD",
        "refs/heads/x.lock",
    ];
    let mut body = Vec::new();
    for (i, name) in funny.iter().chain(["refs/heads/fine"].iter()).enumerate() {
        let caps = if i == 0 { "\0report-status" } else { "" };
        body.extend(pkt(format!("{zero} {main} {name}{caps}\n").as_bytes()));
    }
    body.extend_from_slice(b"0000");
    body.extend_from_slice(&empty_pack);
    let auth = format!("Authorization: {}", basic("bob:plain-pw"));
    let (status, answer) = server.exchange(&post(
        "receive-pack",
        &[
            &auth,
            &format!("Content-Length: {}", body.len()),
            "Connection: close",
        ],
        &body,
    ));
    assert_eq!(status, 200, "{answer}");
    for name in funny {
        assert!(
            answer.contains(&format!("ng {name} funny refname\n")),
            "{name}: {answer}"
        );
    }
    assert!(answer.contains("ok refs/heads/fine\n"), "{answer}");
    assert!(!home.join("outside").exists() && !root.join("outside").exists());
    assert_eq!(
        git_ok(home, &served, &["for-each-ref", "--format=%(refname)"]),
        "refs/heads/fine\nrefs/heads/main\n"
    );

    // A loose ref that is a symbolic link out of the repository: read
    // through, as git reads it, but a push replaces the link with a
    // regular file and never writes through it, as git does.
    let outside = home.join("outside-ref");
    let parent = git_ok(home, &served, &["rev-parse", "main~1"]);
    std::fs::write(&outside, &parent).unwrap();
    std::os::unix::fs::symlink(&outside, served.join("refs/heads/linked")).unwrap();
    let o = git_net(
        home,
        home,
        &["ls-remote", &server.url("proj.git"), "refs/heads/linked"],
    );
    assert_eq!(
        stdout(&o),
        format!("{}\trefs/heads/linked\n", parent.trim())
    );
    let bob = server.url_as("bob", "plain-pw", "proj.git");
    let o = git_net(home, &work, &["push", &bob, "main:refs/heads/linked"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), parent);
    let link = std::fs::symlink_metadata(served.join("refs/heads/linked")).unwrap();
    assert!(link.file_type().is_file(), "the link was written through");
    assert_eq!(git_ok(home, &served, &["rev-parse", "linked"]).trim(), main);
    git_ok(home, &served, &["fsck", "--no-progress"]);
}

#[test]
fn no_secret_reaches_the_log() {
    let log = alone();
    // Trace level: whatever any module logs, secrets stay out.
    log.trace();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (work, served) = setup(home, &root);
    let server = Serve::new(&root)
        .pushes("# pushers\nbob:plain-pw\nalice:other-secret\n")
        .start();
    let bob = server.url_as("bob", "plain-pw", "proj.git");
    let o = git_net(home, &work, &["push", &bob, "main:refs/heads/pushed"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_net(
        home,
        &work,
        &[
            "push",
            &server.url_as("bob", "wrong-guess", "proj.git"),
            "main:refs/heads/no",
        ],
    );
    assert!(!o.status.success());
    // A malformed request that carries credentials.
    let (status, _) = server.exchange(
        format!(
            "POST /proj.git/git-receive-pack HTTP/1.1\r\nAuthorization: {}\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
            basic("alice:other-secret")
        )
        .as_bytes(),
    );
    assert_eq!(status, 400);
    assert!(git_ok(home, &served, &["rev-parse", "pushed"]).len() > 40);

    server.stop();
    let log = log.log();
    assert!(log.contains("user=bob"), "{log}");
    for secret in [
        "plain-pw".to_owned(),
        "wrong-guess".to_owned(),
        "other-secret".to_owned(),
        "bob:plain-pw".to_owned(),
        base64::engine::general_purpose::STANDARD.encode("bob:plain-pw"),
        base64::engine::general_purpose::STANDARD.encode("alice:other-secret"),
    ] {
        assert!(!log.contains(&secret), "{secret:?} is in the log:\n{log}");
    }
    assert!(
        !log.to_ascii_lowercase().contains("authorization:"),
        "{log}"
    );
}

/// The answer to a request sent in pieces must not depend on how TCP cuts
/// it: a keep-alive connection carries several requests.
#[test]
fn one_connection_carries_several_requests() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let server = Serve::new(&root).start();
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let get = "GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n";
    let last = "GET /nothing.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    write!(stream, "{get}{get}{last}").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    assert_eq!(answer.matches("HTTP/1.1 200 OK").count(), 2, "{answer}");
    assert_eq!(
        answer.matches("HTTP/1.1 404 Not Found").count(),
        1,
        "{answer}"
    );
    assert_eq!(answer.matches("\r\n0\r\n\r\n").count(), 2, "{answer}");
}

#[test]
fn slow_connections_from_one_address_leave_room_for_others() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (_, served) = setup(home, &root);
    let mut serve = Serve::new(&root);
    serve.options.max_connections = 64;
    serve.options.timeout = Duration::from_secs(60);
    let server = serve.start();

    // 100 connections from 127.0.0.2, each sending a request head a byte
    // at a time: more than --max-connections.
    let head = b"GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\nX-Slow: ".to_vec();
    let mut writers = Vec::new();
    let (answers, answered) = std::sync::mpsc::channel();
    for _ in 0..100 {
        let mut stream = connect_from("127.0.0.2", server.addr);
        writers.push(stream.try_clone().unwrap());
        let answers = answers.clone();
        std::thread::spawn(move || answers.send(read_answer(&mut stream)));
    }
    drop(answers);
    let attacking = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let trickler = {
        let attacking = attacking.clone();
        std::thread::spawn(move || {
            let mut sent = 0;
            while attacking.load(std::sync::atomic::Ordering::Relaxed) {
                let byte = head.get(sent).copied().unwrap_or(b'x');
                for writer in &mut writers {
                    let _ = writer.write_all(&[byte]);
                }
                sent += 1;
                // The attackers' slowness, which is what is tested.
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };

    // Meanwhile a clone from 127.0.0.1 is served.
    let o = git_net(
        home,
        home,
        &["clone", "-q", &server.url("proj.git"), "copy"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(
        git_ok(home, &home.join("copy"), &["rev-parse", "HEAD"]),
        git_ok(home, &served, &["rev-parse", "main"])
    );

    // The attacker kept at most its 32 connections (the default
    // --max-connections-per-ip): each new one beyond took the place of
    // one still idle, which was closed, and none got an answer; shutting
    // down drops the slow ones without an answer.
    attacking.store(false, std::sync::atomic::Ordering::Relaxed);
    trickler.join().unwrap();
    server.stop();
    let statuses: Vec<u16> = answered.iter().map(|(status, _)| status).collect();
    assert_eq!(statuses.len(), 100);
    assert!(
        statuses.iter().all(|s| *s == 0 || *s == 503),
        "{statuses:?}"
    );
}
