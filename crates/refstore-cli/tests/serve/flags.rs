//! `serve`'s flags: each reaches the server and takes effect, the
//! addresses are printed in the documented order, files and addresses
//! that cannot be used stop the server at startup with the reason, the
//! log warns of plain-text passwords and can be JSON.

use crate::served::*;
use crate::ssh_served::keygen;
use crate::support::prometheus;
use crate::support::*;
use refstore_testsupport::server::ServerProcess;
use std::io::{BufRead, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A self-signed certificate for 127.0.0.1, written as `<name>.crt` and
/// `<name>.key`.
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

/// A GET of `path` from `addr`: status and body.
fn get(addr: &str, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let (status, answer) = read_answer(&mut stream);
    let body = answer.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (status, body.to_owned())
}

/// The flags a server is started with reach it, each seen at work:
/// `--credentials` and `--access` decide who pushes, `--max-push-request`
/// bounds a push, `--ssh-listen` with its keys serves SSH, and
/// `--metrics-listen` serves what the storage layers report (a push
/// counted); `--print-address` prints the HTTP, SSH and metrics
/// addresses in that order.
#[test]
fn flags_reach_the_server() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let work = fixtures::three_commits(home);
    work.bare_clone(&root.join("proj.git"));
    let (alice_key, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    keygen(home, "host", "ed25519", "host");
    let files = [
        ("users", "alice:alice-pw\nbob:bob-pw\n".to_owned()),
        ("access", "* read *\nalice write *\n".to_owned()),
        ("keys", alice_pub),
    ];
    for (name, text) in &files {
        std::fs::write(home.join(name), text).unwrap();
    }
    let path = |name: &str| home.join(name).to_str().unwrap().to_owned();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
    isolate(&mut cmd, home)
        .args(["serve", "--root", root.to_str().unwrap(), "--print-address"])
        .args(["--listen", "127.0.0.1:0", "--workers", "2"])
        .args(["--allow-push", "--credentials", &path("users")])
        .args(["--access", &path("access"), "--max-push-request", "200000"])
        .args([
            "--ssh-listen",
            "127.0.0.1:0",
            "--ssh-host-key",
            &path("host"),
        ])
        .args(["--ssh-authorized-keys", &path("keys")])
        .args(["--metrics-listen", "127.0.0.1:0", "--drain-time", "0"]);
    let (process, stdout) = ServerProcess::spawn(&mut cmd);
    let lines: Vec<String> = stdout.lines().take(3).map(Result::unwrap).collect();
    let [http, ssh, metrics] = lines.as_slice() else {
        panic!("serve printed {lines:?}: {}", process.kill());
    };
    let url = |user: &str| format!("http://{user}:{user}-pw@{http}/proj.git");

    let o = git_net(
        home,
        &work.path,
        &["push", &url("alice"), "main:refs/heads/a"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let o = git_net(
        home,
        &work.path,
        &["push", &url("bob"), "main:refs/heads/b"],
    );
    assert!(
        stderr(&o).contains("user 'bob' may not push to 'proj.git'"),
        "{}",
        stderr(&o)
    );
    std::fs::write(work.path.join("noise"), noise(3, 1 << 20)).unwrap();
    work.git(&["add", "noise"]);
    work.git(&["commit", "-q", "-m", "noise"]);
    let o = git_net(
        home,
        &work.path,
        &["push", &url("alice"), "main:refs/heads/big"],
    );
    assert!(stderr(&o).contains("413"), "{}", stderr(&o));

    let listed = crate::ssh_served::git_ssh_ok(
        home,
        home,
        &alice_key,
        &[
            "ls-remote",
            &format!("ssh://git@{ssh}/proj.git"),
            "refs/heads/*",
        ],
    );
    assert!(listed.contains("refs/heads/a\n"), "{listed}");
    assert!(!listed.contains("refs/heads/big"), "{listed}");

    assert_eq!(get(metrics, "/healthz"), (200, "ok\n".to_owned()));
    let (status, body) = get(metrics, "/metrics");
    assert_eq!(status, 200);
    let metrics_read = prometheus::parse(&body).unwrap_or_else(|e| panic!("{e}\n{body}"));
    assert_eq!(metrics_read.value("refstore_pushes_total", &[]), Some(1.0));

    let (code, log) = process.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains(&format!("serving metrics addr={metrics}")),
        "{log}"
    );
}

#[test]
fn files_and_addresses_that_cannot_be_used_stop_the_server_at_startup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let root = root.to_str().unwrap();
    let serve = |extra: &[&str]| {
        let mut args = vec!["serve", "--listen", "127.0.0.1:0", "--root", root];
        args.extend_from_slice(extra);
        refstore(home, home, &args)
    };

    // A certificate or key that cannot be used.
    let (cert, key) = certificate(home, "server");
    let (other_cert, _) = certificate(home, "other");
    let garbage = home.join("garbage");
    std::fs::write(&garbage, "-----BEGIN CERTIFICATE-----\nnope\n").unwrap();
    for (cert, key, reason) in [
        (&garbage, &key, "certificate"),
        (&cert, &garbage, "private key"),
        (&other_cert, &key, "TLS certificate"),
        (&home.join("missing.crt"), &key, "missing.crt"),
    ] {
        let o = serve(&[
            "--tls-cert",
            cert.to_str().unwrap(),
            "--tls-key",
            key.to_str().unwrap(),
        ]);
        assert!(!o.status.success(), "{cert:?} {key:?}");
        assert!(stderr(&o).contains(reason), "{reason}: {}", stderr(&o));
    }

    // SSH key files that cannot be used, and SSH flags alone.
    let (_, alice_pub) = keygen(home, "alice", "ed25519", "alice");
    let (host, _) = keygen(home, "host", "ed25519", "host");
    let not_a_key = home.join("not-a-key");
    std::fs::write(&not_a_key, "hello\n").unwrap();
    let good_keys = home.join("keys");
    std::fs::write(&good_keys, &alice_pub).unwrap();
    let bad_keys = home.join("bad-keys");
    std::fs::write(&bad_keys, format!("# team\nrestrict {alice_pub}")).unwrap();
    for (host_key, keys, expected) in [
        (&not_a_key, &good_keys, "not an OpenSSH private key"),
        (&host, &bad_keys, "line 2: options before the key"),
        (&home.join("missing"), &good_keys, "missing"),
    ] {
        let o = serve(&[
            "--ssh-listen",
            "127.0.0.1:0",
            "--ssh-host-key",
            host_key.to_str().unwrap(),
            "--ssh-authorized-keys",
            keys.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
        assert!(stderr(&o).contains(expected), "{}", stderr(&o));
    }
    let o = refstore(
        home,
        home,
        &["serve", "--root", root, "--ssh-listen", "127.0.0.1:0"],
    );
    assert!(!o.status.success());
    assert!(stderr(&o).contains("--ssh-host-key"), "{}", stderr(&o));

    // A metrics address that cannot be listened on.
    let o = serve(&["--metrics-listen", "nowhere"]);
    assert_eq!(o.status.code(), Some(128), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("--metrics-listen: cannot listen on nowhere: "),
        "{}",
        stderr(&o)
    );
}

#[test]
fn plain_text_passwords_are_warned_of_at_startup() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let users = home.join("users");
    std::fs::write(&users, "alice:alice-pw\n").unwrap();
    let server = Served::start(
        home,
        &root,
        &["--allow-push", "--credentials", users.to_str().unwrap()],
    );
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(
        log.contains("plain-text passwords for alice"),
        "no startup warning: {log}"
    );
    assert!(!log.contains("alice-pw"), "{log}");
}

#[test]
fn json_logs_are_one_object_a_line() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    fixtures::three_commits(home).bare_clone(&root.join("proj.git"));
    let server = Served::start(home, &root, &["--log-format", "json"]);
    let o = git_net(home, home, &["ls-remote", &server.url("proj.git")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let (status, _) = server.raw("GET /nothing.git/info/refs?service=git-upload-pack");
    assert_eq!(status, 404);
    let (code, log) = server.stop();
    assert_eq!(code, Some(0), "{log}");

    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| {
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: not JSON: {line:?}"))
        })
        .collect();
    for line in &lines {
        assert!(line["fields"]["message"].is_string(), "{line}");
        assert!(
            line["level"].is_string() && line["timestamp"].is_string(),
            "{line}"
        );
    }
    let access: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| l["target"] == "refstore::access")
        .collect();
    let statuses: Vec<u64> = access
        .iter()
        .map(|l| l["fields"]["status"].as_u64().expect("a status number"))
        .collect();
    assert!(statuses.contains(&200), "{log}");
    assert!(statuses.contains(&404), "{log}");
    assert!(
        lines.iter().any(|l| l["fields"]["message"] == "serving"),
        "{log}"
    );
}
