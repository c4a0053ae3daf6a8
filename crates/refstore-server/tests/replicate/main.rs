//! Servers that replicate pushes' objects, run in the test's process and
//! reached by the machine's git over HTTP on loopback: the internal
//! endpoint opens only to the shared secret and stays below the served
//! root; a push is acknowledged once `object_copies` nodes hold its pack,
//! and refused with every ref unchanged when too few can (down, or never
//! answering); concurrent pushes through every node, with few workers,
//! each reach a quorum; a node that was down catches up when a fetch
//! (protocol v0 or v2) needs what it missed, and by its repair; and a
//! pack left on fewer than `object_copies` nodes (one of its holders
//! lost) is sent by its holder's repair to a node lacking it.
//!
//! Each node keeps its refs in its own repository here; where a test
//! needs a node to show a ref another node wrote (as a shared ref store
//! would), it writes the ref there itself.

#[path = "../support/mod.rs"]
mod support;

mod catch_up;
mod endpoint;
mod pushes;

use refstore_replica::{Peers, Replica};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use support::*;

const SECRET: &str = "correct horse battery staple";

/// A cluster of nodes on loopback: their roots and ports. Nodes are
/// started and stopped one by one.
pub struct Cluster {
    home: PathBuf,
    ports: Vec<u16>,
    copies: usize,
    /// How long a peer may take to answer one request.
    timeout: Duration,
}

/// Whether a node runs its background repair, and how often.
#[derive(Debug, Clone, Copy)]
pub enum Repair {
    /// None (fetches still catch up).
    Off,
    /// At startup and then every `n` seconds.
    Every(u64),
}

impl Cluster {
    /// `n` nodes whose roots `n1`... below `home` each hold an empty bare
    /// `r.git`; `copies` of a push's objects are kept.
    pub fn new(home: &Path, n: usize, copies: usize) -> Cluster {
        let ports = (0..n).map(|_| free_port()).collect();
        for i in 1..=n {
            let repo = home.join(format!("n{i}/r.git"));
            git_ok(
                home,
                home,
                &["init", "-q", "--bare", "-b", "main", repo.to_str().unwrap()],
            );
        }
        Cluster {
            home: home.to_owned(),
            ports,
            copies,
            timeout: Duration::from_secs(10),
        }
    }

    pub fn root(&self, i: usize) -> PathBuf {
        self.home.join(format!("n{i}"))
    }

    pub fn repo(&self, i: usize) -> PathBuf {
        self.root(i).join("r.git")
    }

    pub fn port(&self, i: usize) -> u16 {
        self.ports[i - 1]
    }

    /// Starts node `i` (1-based) with `workers` workers.
    pub fn start(&self, i: usize, repair: Repair) -> Served {
        self.start_with(i, repair, 4)
    }

    /// [`Cluster::start`] with `workers` workers.
    pub fn start_with(&self, i: usize, repair: Repair, workers: usize) -> Served {
        let nodes = self
            .ports
            .iter()
            .enumerate()
            .map(|(j, port)| (format!("n{}", j + 1), format!("http://127.0.0.1:{port}")))
            .collect();
        let mut peers = Peers::new(
            format!("n{i}"),
            nodes,
            self.copies,
            SECRET.as_bytes().to_vec(),
        );
        peers.timeout = self.timeout;
        peers.repair_every = match repair {
            Repair::Off => None,
            Repair::Every(seconds) => Some(Duration::from_secs(seconds)),
        };
        peers.check().unwrap();
        let mut serve = Serve::new(&self.root(i))
            .pushes("alice:pw\n")
            .listen(&format!("127.0.0.1:{}", self.port(i)));
        serve.options.workers = workers;
        serve.options.replication = Some(Arc::new(Replica::new(peers)));
        if let Repair::Every(_) = repair {
            serve = serve.repair();
        }
        serve.start()
    }
}

/// A loopback port nothing listens on right now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The pack names (`pack-<hex>`) of a bare repository.
pub fn packs(repo: &Path) -> Vec<String> {
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

/// A work repository with one commit of `file`; its id.
pub fn commit(home: &Path, work: &Path, file: &str) -> String {
    commit_text(home, work, file, &format!("{file}\n"))
}

/// A commit of `file` holding `text`; its id.
pub fn commit_text(home: &Path, work: &Path, file: &str, text: &str) -> String {
    if !work.exists() {
        git_ok(
            home,
            home,
            &["init", "-q", "-b", "main", work.to_str().unwrap()],
        );
    }
    std::fs::write(work.join(file), text).unwrap();
    git_ok(home, work, &["add", file]);
    git_ok(home, work, &["commit", "-q", "-m", file]);
    git_ok(home, work, &["rev-parse", "HEAD"]).trim().to_owned()
}

pub fn push(home: &Path, work: &Path, node: &Served) -> std::process::Output {
    let url = node.url_as("alice", "pw", "r.git");
    git_net(home, work, &["push", &url, "main"])
}

/// Writes `refs/heads/main` of a node's repository directly, as a ref
/// store shared by the nodes would show it there.
pub fn set_main(repo: &Path, id: &str) {
    std::fs::write(repo.join("refs/heads/main"), format!("{id}\n")).unwrap();
}

/// Clones `r.git` from `node` into `dest` in protocol `version` and
/// checks it with fsck; its HEAD.
pub fn clone_and_fsck(home: &Path, node: &Served, dest: &Path, version: &str) -> String {
    let protocol = format!("protocol.version={version}");
    let url = node.url("r.git");
    let o = git_net(
        home,
        home,
        &["-c", &protocol, "clone", "-q", &url, dest.to_str().unwrap()],
    );
    assert!(o.status.success(), "clone: {}", stderr(&o));
    git_ok(home, dest, &["fsck", "--full", "--strict"]);
    git_ok(home, dest, &["rev-parse", "HEAD"]).trim().to_owned()
}
