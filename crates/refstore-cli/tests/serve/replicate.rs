//! `serve`'s hidden replication flags: nodes named with
//! `--replicate-node` and `--replicate-peer` keep a push's pack on
//! `--replicate-copies` of them, a node's repair at startup (unless
//! `--replicate-no-repair`) catches it up before it reports itself ready,
//! and flags that cannot work stop the node at startup. How replication
//! behaves is tested in refstore-server's and refstore-replica's tests.

use crate::served::*;
use crate::support::*;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

/// The pack names of a bare repository.
fn packs(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
        .map(|dir| {
            dir.filter_map(|e| {
                let name = e.unwrap().file_name().into_string().unwrap();
                name.strip_suffix(".idx").map(str::to_owned)
            })
            .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The flags of node `i` of the nodes on `ports`, keeping `copies`
/// copies.
fn node_flags(home: &Path, ports: &[u16], i: usize, copies: usize) -> Vec<String> {
    let mut flags = vec![
        "--allow-push".to_owned(),
        "--credentials".to_owned(),
        home.join("users").to_str().unwrap().to_owned(),
        "--replicate-secret".to_owned(),
        home.join("secret").to_str().unwrap().to_owned(),
        "--replicate-copies".to_owned(),
        copies.to_string(),
        "--replicate-node".to_owned(),
        format!("n{i}"),
    ];
    for (j, port) in ports.iter().enumerate() {
        flags.push("--replicate-peer".to_owned());
        flags.push(format!("n{}=http://127.0.0.1:{port}", j + 1));
    }
    flags
}

fn start(home: &Path, ports: &[u16], i: usize, extra: &[&str]) -> Served {
    let flags = node_flags(home, ports, i, 2);
    let mut args: Vec<&str> = flags.iter().map(String::as_str).collect();
    args.extend_from_slice(extra);
    let listen = format!("127.0.0.1:{}", ports[i - 1]);
    Served::start_listening(home, &home.join(format!("n{i}")), &listen, &args, &[])
}

#[test]
fn nodes_named_by_flags_keep_copies_and_repair_before_they_are_ready() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    std::fs::write(home.join("secret"), "correct horse battery staple\n").unwrap();
    std::fs::write(home.join("users"), "alice:pw\n").unwrap();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let repos: Vec<PathBuf> = (1..=3).map(|i| home.join(format!("n{i}/r.git"))).collect();
    for repo in &repos {
        git_ok(
            home,
            home,
            &["init", "-q", "--bare", "-b", "main", repo.to_str().unwrap()],
        );
    }
    let n1 = start(home, &ports, 1, &["--replicate-no-repair"]);
    let n2 = start(home, &ports, 2, &["--replicate-no-repair"]);
    let work = Work::init(home, "work");
    work.commit_file("a", "a\n");
    let o = git_net(
        home,
        &work.path,
        &["push", &n1.url_as("alice", "pw", "r.git"), "main"],
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let pushed = packs(&repos[0]);
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    assert_eq!(packs(&repos[1]), pushed);

    // n3 was down: its repair at startup copies the pack before it says
    // it is ready.
    let n3 = start(home, &ports, 3, &[]);
    n3.wait_for_log("caught up from the other nodes; ready");
    assert_eq!(packs(&repos[2]), pushed);
    let (code, log) = n3.stop();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("repair pass done"), "{log}");
    drop((n1, n2));

    // Flags that cannot work stop a node at startup with the reason.
    let root = home.join("n1");
    for (copies, more, reason) in [
        (2, &["--replicate-peer", "n1"][..], "expected <name>=<url>"),
        (5, &[], "must be between 1 and the number of nodes (3)"),
    ] {
        let mut args = vec!["serve", "--root", root.to_str().unwrap()];
        let all = node_flags(home, &ports, 1, copies);
        args.extend(all.iter().map(String::as_str));
        args.extend_from_slice(more);
        let o = refstore(home, home, &args);
        assert!(!o.status.success());
        assert!(stderr(&o).contains(reason), "{reason}: {}", stderr(&o));
    }
}
