//! Signals: SIGTERM stops `refstore serve` (at once without a drain
//! time, after draining with one, a second SIGTERM cutting the drain
//! short), and SIGHUP reads the TLS certificate and the SSH keys again,
//! keeping what is in force when a file no longer parses.

use crate::served::*;
use crate::ssh_served::{git_ssh, keygen, SshServed};
use crate::support::*;
use refstore_testsupport::server::ServerProcess;
use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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

/// A running `refstore serve` with a metrics listener, stopped with
/// SIGTERM by [`Observed::stop`] (killed when dropped).
struct Observed {
    process: ServerProcess,
    addr: String,
    metrics_addr: String,
}

impl Observed {
    fn start(home: &Path, root: &Path, extra: &[&str]) -> Observed {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, home)
            .args(["serve", "--listen", "127.0.0.1:0", "--print-address"])
            .args(["--metrics-listen", "127.0.0.1:0", "--workers", "4"])
            .arg("--root")
            .arg(root)
            .args(extra);
        let (process, stdout) = ServerProcess::spawn(&mut cmd);
        let mut lines = stdout.lines();
        let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
        let (addr, metrics_addr) = (next(), next());
        assert!(
            !addr.is_empty() && !metrics_addr.is_empty(),
            "serve printed no addresses"
        );
        Observed {
            process,
            addr,
            metrics_addr,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://{}/{path}", self.addr)
    }

    /// A GET of `path` on the metrics listener: status, headers, body.
    fn metrics_get(&self, path: &str) -> (u16, String, String) {
        let mut stream = TcpStream::connect(&self.metrics_addr).unwrap();
        std::io::Write::write_all(
            &mut stream,
            format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .unwrap();
        let (status, answer) = read_answer(&mut stream);
        let (head, body) = answer.split_once("\r\n\r\n").unwrap_or((&answer, ""));
        (status, head.to_owned(), body.to_owned())
    }

    /// Stops the server with SIGTERM; returns its exit code and log.
    fn stop(self) -> (Option<i32>, String) {
        self.process.stop()
    }
}

/// Without `--metrics-listen` there is no drain time: SIGTERM stops the
/// accepting at once, and a connection the server took just before,
/// whose client had not sent its request yet, gets that request answered
/// before the server exits 0.
#[test]
fn without_a_drain_time_sigterm_stops_accepting_and_answers_a_connection_taken() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    fixtures::three_commits(home).bare_clone(&root.join("team/proj.git"));
    // No --metrics-listen: no drain time, accepting stops at the signal.
    let server = Served::start(home, &root, &[]);
    let mut early = std::net::TcpStream::connect(&server.addr).unwrap();
    // Taken by the server, request not sent yet.
    wait_until_read(&early);
    let addr = server.addr.clone();
    let stopping = std::thread::spawn(move || server.stop());
    // The server has stopped accepting (a new connection is refused)...
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while std::net::TcpStream::connect(&addr).is_ok() {
        assert!(
            std::time::Instant::now() < deadline,
            "still accepting after SIGTERM"
        );
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // ...and the early connection's request is answered all the same.
    early
        .write_all(
            b"GET /team/proj.git/info/refs?service=git-upload-pack HTTP/1.1\r\nHost: x\r\n\r\n",
        )
        .unwrap();
    let (status, answer) = read_answer(&mut early);
    assert_eq!(status, 200, "{answer}");
    assert!(answer.contains("refs/heads/main"), "{answer}");
    let (code, log) = stopping.join().unwrap();
    assert_eq!(code, Some(0), "{log}");
}

/// SIGTERM: `/healthz` answers `draining` at once while git is still
/// served for the drain time; a second SIGTERM ends the drain time, and
/// the server exits 0, having logged each phase.
#[test]
fn sigterm_drains_and_a_second_one_stops_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    fixtures::three_commits(home).bare_clone(&root.join("proj.git"));
    // Long enough that only the second signal can end it within the test.
    let server = Observed::start(home, &root, &["--drain-time", "120"]);
    let (status, _, body) = server.metrics_get("/healthz");
    assert_eq!((status, body.as_str()), (200, "ok\n"));

    server.process.signal("TERM");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let (status, _, body) = server.metrics_get("/healthz");
        if (status, body.as_str()) == (503, "draining\n") {
            break;
        }
        assert_eq!((status, body.as_str()), (200, "ok\n"));
        assert!(std::time::Instant::now() < deadline, "never draining");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    // Still serving, on new connections too, while draining.
    for _ in 0..3 {
        let refs = git_net_ok(home, home, &["ls-remote", &server.url("proj.git")]);
        assert!(refs.contains("refs/heads/main"), "{refs}");
    }
    let (status, _, body) = server.metrics_get("/healthz");
    assert_eq!((status, body.as_str()), (503, "draining\n"));

    let (addr, metrics_addr) = (server.addr.clone(), server.metrics_addr.clone());
    let second = std::time::Instant::now();
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        second.elapsed() < std::time::Duration::from_secs(30),
        "the second SIGTERM did not end the drain time: {:?}",
        second.elapsed()
    );
    let phases = [
        "draining: /healthz answers draining",
        "signalled again: draining cut short",
        "stopping: no new connections; finishing the requests in flight",
        "shut down",
    ];
    let mut rest = log.as_str();
    for phase in phases {
        let at = rest
            .find(phase)
            .unwrap_or_else(|| panic!("{phase:?} not logged in order: {log}"));
        rest = &rest[at..];
    }
    assert!(TcpStream::connect(&addr).is_err());
    assert!(TcpStream::connect(&metrics_addr).is_err());
}

#[test]
fn certificates_are_reloaded_on_sighup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    Work::init(home, "work")
        .commit_file("a", "a\n")
        .bare_clone(&root.join("proj.git"));
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
}

#[test]
fn authorized_keys_are_read_again_on_sighup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    crate::ssh_served::setup(home, &root, &["proj.git"]);
    let (alice, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let (carol, carol_pub) = keygen(home, "carol", "ed25519", "carol");
    let server = SshServed::start(home, &root, &alice_pub, &[]);
    let url = server.url("proj.git");
    let o = git_ssh(home, home, &carol, &["ls-remote", &url]);
    assert!(
        stderr(&o).contains("Permission denied (publickey)"),
        "{}",
        stderr(&o)
    );

    // Carol in, alice out.
    std::fs::write(home.join("authorized_keys"), &carol_pub).unwrap();
    server.hang_up();
    server.wait_for_log("authorized keys reloaded");
    let o = git_ssh(home, home, &carol, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_ssh(home, home, &alice, &["ls-remote", &url]);
    assert!(
        stderr(&o).contains("Permission denied (publickey)"),
        "{}",
        stderr(&o)
    );

    // A file that no longer parses leaves the keys in force.
    std::fs::write(home.join("authorized_keys"), "garbage\n").unwrap();
    server.hang_up();
    server.wait_for_log("keeping the authorized keys in force");
    let o = git_ssh(home, home, &carol, &["ls-remote", &url]);
    assert!(o.status.success(), "{}", stderr(&o));
}
