//! HTTPS with the machine's real git (libcurl) and a certificate made in
//! the test: clone, fetch, ls-remote and push over protocol v0 and v2;
//! bytes that are no TLS handshake close their connection without
//! troubling the next client; ambiguous framing inside TLS is refused as
//! over plain HTTP.

use crate::support::alone::alone;
use crate::support::keys::Certificate;
use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::Command;

fn commit(home: &Path, work: &Path, name: &str) -> String {
    Work::at(home, work)
        .commit_file(name, name)
        .git(&["rev-parse", "HEAD"])
}

#[test]
fn clone_fetch_ls_remote_and_push_over_https() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let served = root.join("proj.git");
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n").bare_clone(&served);
    let work = work.path;
    let certificate = Certificate::new(home, "server");
    let cert = &certificate.cert;
    let mut serve = Serve::new(&root).pushes("bob:bob-pw\n");
    serve.options.tls = Some(certificate.server_config());
    let server = serve.start();
    let url = server.https("proj.git");
    let push_url = format!("https://bob:bob-pw@{}/proj.git", server.addr);

    for version in ["0", "2"] {
        let protocol = format!("protocol.version={version}");
        let copy = format!("copy-v{version}");
        let o = git_tls(
            home,
            home,
            cert,
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
            cert,
            &["-c", &protocol, "push", &push_url, "main"],
        );
        assert!(o.status.success(), "push v{version}: {}", stderr(&o));
        assert_eq!(git_ok(home, &served, &["rev-parse", "main"]), head);
        let o = git_tls(
            home,
            &copy,
            cert,
            &["-c", &protocol, "fetch", "-q", "origin"],
        );
        assert!(o.status.success(), "fetch v{version}: {}", stderr(&o));
        assert_eq!(git_ok(home, &copy, &["rev-parse", "origin/main"]), head);

        let o = git_tls(home, home, cert, &["-c", &protocol, "ls-remote", &url]);
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
        let mut stream = TcpStream::connect(server.addr).unwrap();
        let _ = stream.write_all(&garbage);
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        assert!(
            !String::from_utf8_lossy(&answer).contains("HTTP/1.1 200"),
            "{answer:?}"
        );
        let o = git_tls(home, home, cert, &["ls-remote", &url]);
        assert!(o.status.success(), "{}", stderr(&o));
    }

    // Inside TLS, a request announcing its body two ways is refused as
    // over plain HTTP.
    let mut client = Running::spawn(
        Command::new("openssl")
            .args(["s_client", "-quiet", "-verify_return_error", "-connect"])
            .arg(server.addr.to_string())
            .arg("-CAfile")
            .arg(cert)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null()),
    );
    client
        .child()
        .stdin
        .take()
        .unwrap()
        .write_all(b"POST /proj.git/git-upload-pack HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-git-upload-pack-request\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n")
        .unwrap();
    let answer = client.finish();
    let answer = String::from_utf8_lossy(&answer.stdout);
    assert!(answer.starts_with("HTTP/1.1 400 "), "{answer}");

    server.stop();
    let log = log.log();
    assert!(!log.contains("bob-pw"), "{log}");
}
