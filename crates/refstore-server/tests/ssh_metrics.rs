//! The SSH server's metrics, counted against what real clients (git and
//! OpenSSH) did: requests by service and status, bytes, refused logins,
//! open connections; and the server stops on the shutdown flag once its
//! services are done.

use refstore_fs::real::RealFs;
use refstore_server::access::Reloadable;
use refstore_server::metrics::Metrics;
use refstore_server::ssh::{keys, AuthorizedKeys, SshOptions, SshServer};
use refstore_server::{Capacity, ServeOptions};
use refstore_testsupport::fixtures::Work;
use refstore_testsupport::{isolate, ssh};
use std::path::Path;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn run(home: &Path, cwd: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> Output {
    isolate(&mut Command::new(program), home)
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e} (scripts/install-deps installs it)"))
}

/// A key pair made by ssh-keygen; returns the private key's path and the
/// public key's line, naming `name` as the user.
fn keygen(home: &Path, name: &str) -> (String, String) {
    let (path, public) = ssh::keygen(home, name, "ed25519", name);
    (path.to_str().unwrap().to_owned(), public)
}

/// The OpenSSH client with only `key`, to the server's `port`.
fn ssh_command(key: &str, port: u16) -> String {
    format!("{} -p {port}", ssh::ssh_command(Path::new(key)))
}

/// The value of the series `line` starts (name and labels).
fn value(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| line.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("{series} missing from\n{text}"))
        .parse()
        .unwrap()
}

#[test]
fn ssh_requests_are_counted_as_clients_made_them() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    std::fs::create_dir_all(&root).unwrap();
    Work::init(home, "work")
        .commit_file("a", "a\n")
        .bare_clone(&root.join("proj.git"));

    let (host, _) = keygen(home, "host");
    let (alice, alice_pub) = keygen(home, "alice");
    let (mallory, _) = keygen(home, "mallory");
    let metrics = Arc::new(Metrics::new());
    let mut options = ServeOptions::new(root.clone());
    options.metrics = metrics.clone();
    options.maintenance_workers = 0;
    let ssh = SshOptions {
        host_key: keys::host_key(&std::fs::read_to_string(&host).unwrap()).unwrap(),
        authorized_keys: Arc::new(Reloadable::new(AuthorizedKeys::parse(&alice_pub).unwrap())),
    };
    let vfs: Arc<dyn refstore_fs::Vfs> = Arc::new(RealFs::new());
    let capacity = Capacity::new(&options, vfs.clone());
    let server = SshServer::bind("127.0.0.1:0", ssh, options, vfs, capacity).unwrap();
    let port = server.local_addr().port();
    let shutdown = Arc::new(AtomicBool::new(false));
    let running = {
        let shutdown = shutdown.clone();
        std::thread::spawn(move || server.run(&shutdown))
    };
    let url = format!("ssh://git@127.0.0.1:{port}/proj.git");

    let as_alice = [("GIT_SSH_COMMAND", ssh_command(&alice, port))];
    let as_alice: Vec<(&str, &str)> = as_alice.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for args in [
        vec!["ls-remote", url.as_str()],
        vec!["clone", "-q", url.as_str(), "clone"],
    ] {
        let o = run(home, home, "git", &args, &as_alice);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    let as_mallory = ssh_command(&mallory, port);
    let o = run(
        home,
        home,
        "git",
        &["ls-remote", &url],
        &[("GIT_SSH_COMMAND", &as_mallory)],
    );
    assert!(!o.status.success());
    let mut ls: Vec<String> = ssh_command(&alice, port)
        .split(' ')
        .map(str::to_owned)
        .collect();
    ls.extend(["git@127.0.0.1".to_owned(), "ls".to_owned()]);
    let args: Vec<&str> = ls[1..].iter().map(String::as_str).collect();
    let o = run(home, home, "ssh", &args, &[]);
    assert_eq!(o.status.code(), Some(1));

    shutdown.store(true, Ordering::Relaxed);
    running.join().unwrap();
    let text = metrics.encode();
    let ssh = "transport=\"ssh\"";
    assert_eq!(
        value(
            &text,
            &format!("refstore_requests_total{{{ssh},service=\"git-upload-pack\",status=\"200\"}}")
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            &format!("refstore_requests_total{{{ssh},service=\"other\",status=\"400\"}}")
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            &format!(
                "refstore_request_duration_seconds_count{{{ssh},service=\"git-upload-pack\"}}"
            )
        ),
        2.0
    );
    assert_eq!(
        value(
            &text,
            "refstore_rejected_requests_total{reason=\"unauthorized\"}"
        ),
        1.0
    );
    // The clone's pack alone is more than a few hundred bytes; the client
    // sent its wants.
    assert!(value(&text, &format!("refstore_sent_bytes_total{{{ssh}}}")) > 500.0);
    assert!(value(&text, &format!("refstore_received_bytes_total{{{ssh}}}")) > 50.0);
    assert_eq!(
        value(&text, &format!("refstore_active_connections{{{ssh}}}")),
        0.0
    );
}
