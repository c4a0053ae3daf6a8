//! `refstore serve --tls-cert --tls-key`: HTTPS with the machine's real
//! git (libcurl) and a certificate made in the test: clone, fetch,
//! ls-remote and push over protocol v0 and v2; bytes that are no TLS
//! handshake close their connection without troubling the next client;
//! ambiguous framing inside TLS is refused as over plain HTTP; a
//! new certificate is taken on SIGHUP, a broken one is reported and the
//! one in force stays; a broken certificate stops the server at startup.

mod served;
mod support;
use served::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use support::*;

/// A self-signed certificate for 127.0.0.1 and localhost, written as
/// `<name>.crt` and `<name>.key`.
fn certificate(home: &Path, name: &str) -> (PathBuf, PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned(), "localhost".to_owned()])
            .unwrap();
    let cert = home.join(format!("{name}.crt"));
    let key = home.join(format!("{name}.key"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// git trusting `ca` for HTTPS, prompts off.
fn git_tls(home: &Path, cwd: &Path, ca: &Path, args: &[&str]) -> Output {
    isolate(&mut Command::new("git"), home)
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_SSL_CAINFO", ca)
        .env_remove("GIT_SSL_NO_VERIFY")
        .env_remove("GIT_ASKPASS")
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

fn https(server: &Served, path: &str) -> String {
    format!("https://{}/{path}", server.addr)
}

fn https_as(server: &Served, user: &str, path: &str) -> String {
    format!("https://{user}@{}/{path}", server.addr)
}

/// A work repository with one commit and a bare copy `root/proj.git`.
fn setup(home: &Path, root: &Path) -> (PathBuf, PathBuf) {
    let served = root.join("proj.git");
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n").bare_clone(&served);
    (work.path, served)
}

fn commit(home: &Path, work: &Path, name: &str) -> String {
    Work::at(home, work)
        .commit_file(name, name)
        .git(&["rev-parse", "HEAD"])
}

#[test]
fn clone_fetch_ls_remote_and_push_over_https() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let (work, served) = setup(home, &root);
    let (cert, key) = certificate(home, "server");
    let users = home.join("users");
    std::fs::write(&users, "bob:bob-pw\n").unwrap();
    let server = Served::start(
        home,
        &root,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
            "--allow-push",
            "--credentials",
            users.to_str().unwrap(),
        ],
    );
    let url = https(&server, "proj.git");
    let push_url = https_as(&server, "bob:bob-pw", "proj.git");

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let copy = format!("copy-v{version}");
        let o = git_tls(
            home,
            home,
            &cert,
            &["-c", &protocol, "clone", "-q", &url, &copy],
        );
        assert!(o.status.success(), "clone v{version}: {}", stderr(&o));
        let copy = home.join(copy);
        assert_eq!(
            git_ok(home, &copy, &["rev-parse", "HEAD"]),
            git_ok(home, &served, &["rev-parse", "main"])
        );

        // A push, then a fetch of it into the clone.
        let head = commit(home, &work, &format!("file-v{version}"));
        let o = git_tls(
            home,
            &work,
            &cert,
            &["-c", &protocol, "push", &push_url, "main"],
        );
        assert!(o.status.success(), "push v{version}: {}", stderr(&o));
        assert_eq!(git_ok(home, &served, &["rev-parse", "main"]), head);
        let o = git_tls(
            home,
            &copy,
            &cert,
            &["-c", &protocol, "fetch", "-q", "origin"],
        );
        assert!(o.status.success(), "fetch v{version}: {}", stderr(&o));
        assert_eq!(git_ok(home, &copy, &["rev-parse", "origin/main"]), head);

        let o = git_tls(home, home, &cert, &["-c", &protocol, "ls-remote", &url]);
        assert!(o.status.success(), "ls-remote v{version}: {}", stderr(&o));
        assert_eq!(
            stdout(&o),
            git_ok(home, &served, &["ls-remote", "."]),
            "ls-remote v{version}"
        );
    }

    // Without trusting the certificate, git refuses the server.
    let o = git_tls(home, home, &home.join("nothing.crt"), &["ls-remote", &url]);
    assert!(!o.status.success());

    // Bytes that are no TLS handshake: the connection closes, and the
    // next client is served.
    for garbage in [
        b"GET /proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\n\r\n".to_vec(),
        (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
        vec![0x16, 0x03, 0x01, 0xff, 0xff, 0x01],
    ] {
        let mut stream = TcpStream::connect(&server.addr).unwrap();
        let _ = stream.write_all(&garbage);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        assert!(
            !String::from_utf8_lossy(&answer).contains("HTTP/1.1 200"),
            "{answer:?}"
        );
        let o = git_tls(home, home, &cert, &["ls-remote", &url]);
        assert!(o.status.success(), "{}", stderr(&o));
    }

    // Inside TLS, a request announcing its body two ways is refused as
    // over plain HTTP.
    let mut client = Command::new("openssl")
        .args(["s_client", "-quiet", "-verify_return_error", "-connect"])
        .arg(&server.addr)
        .arg("-CAfile")
        .arg(&cert)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("cannot run openssl: scripts/install-deps installs it");
    client
        .stdin
        .take()
        .unwrap()
        .write_all(b"POST /proj.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        .unwrap();
    let answer = client.wait_with_output().unwrap();
    let answer = String::from_utf8_lossy(&answer.stdout);
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");

    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("bob-pw"), "{log}");
}

#[test]
fn certificates_are_reloaded_on_sighup_and_checked_at_startup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let (cert, key) = certificate(home, "server");
    let (old_cert, _) = certificate(home, "old");
    std::fs::copy(&cert, &old_cert).unwrap();
    let server = Served::start(
        home,
        &root,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let url = https(&server, "proj.git");
    let o = git_tls(home, home, &cert, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A broken file at reload: reported, the certificate in force stays.
    std::fs::write(&cert, "not a certificate\n").unwrap();
    server.hang_up();
    server.wait_for_log("keeping the TLS certificate in force");
    let o = git_tls(home, home, &old_cert, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));

    // A new certificate and key: new connections use them.
    let (new_cert, new_key) = certificate(home, "new");
    std::fs::copy(&new_cert, &cert).unwrap();
    std::fs::copy(&new_key, &key).unwrap();
    server.hang_up();
    server.wait_for_log("TLS certificate reloaded");
    let o = git_tls(home, home, &new_cert, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_tls(home, home, &old_cert, &["ls-remote", &url]);
    assert!(!o.status.success(), "the old certificate is still served");
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");

    // At startup, a certificate or key that cannot be used stops the
    // server with the reason.
    let (other_cert, _) = certificate(home, "other");
    let garbage = home.join("garbage");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnope\n").unwrap();
    for (cert, key, reason) in [
        (&garbage, &key, "certificate"),
        (&cert, &garbage, "private key"),
        (&other_cert, &key, "TLS certificate"),
        (&home.join("missing.crt"), &key, "missing.crt"),
    ] {
        let o = refstore(
            home,
            home,
            &[
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--root",
                root.to_str().unwrap(),
                "--tls-cert",
                cert.to_str().unwrap(),
                "--tls-key",
                key.to_str().unwrap(),
            ],
        );
        assert!(!o.status.success(), "{cert:?} {key:?}");
        assert!(stderr(&o).contains(reason), "{reason}: {}", stderr(&o));
    }
}

/// A connection the server took just before SIGTERM, before its client
/// began the TLS handshake, gets its handshake and first request answered
/// before the server exits: the client was told the server took it.
#[test]
fn a_connection_taken_before_sigterm_gets_its_handshake_and_first_request() {
    use std::time::{Duration, Instant};
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root);
    let (cert, key) = certificate(home, "server");
    // No --metrics-listen: no drain time, accepting stops at the signal.
    let server = Served::start(
        home,
        &root,
        &[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ],
    );
    let early = TcpStream::connect(&server.addr).unwrap();
    // Taken by the server (it accepts at once), nothing sent yet.
    std::thread::sleep(Duration::from_millis(300));
    let addr = server.addr.clone();
    let stopping = std::thread::spawn(move || server.stop());
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&addr).is_ok() {
        assert!(Instant::now() < deadline, "still accepting after SIGTERM");
        std::thread::sleep(Duration::from_millis(10));
    }
    // git's one connection (protocol v0: one request) is relayed to the
    // early one.
    let relay = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = relay.local_addr().unwrap().port();
    let relaying = std::thread::spawn(move || {
        let (client, _) = relay.accept().unwrap();
        let pipe = |mut from: TcpStream, mut to: TcpStream| {
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from, &mut to);
                let _ = to.shutdown(std::net::Shutdown::Write);
            })
        };
        let up = pipe(client.try_clone().unwrap(), early.try_clone().unwrap());
        let down = pipe(early, client);
        let _ = (up.join(), down.join());
    });
    let o = git_tls(
        home,
        home,
        &cert,
        &[
            "-c",
            "protocol.version=0",
            "ls-remote",
            &format!("https://127.0.0.1:{port}/proj.git"),
        ],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("\tHEAD\n"), "{}", stdout(&o));
    relaying.join().unwrap();
    let (code, log) = stopping.join().unwrap();
    assert_eq!(code, Some(0), "{log}");
}
