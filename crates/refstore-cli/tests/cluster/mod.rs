//! A refstore cluster for tests: a real etcd, nodes running `refstore
//! serve --cluster` on loopback, one repository `repo.git` served by all.
//!
//! Objects reach the nodes one of two ways ([`Objects`]): the nodes copy
//! each push's packs to each other, as a real cluster does; or, for tests
//! about refs alone, every node's repository borrows the objects of one
//! shared repository (`objects/info/alternates`) where a test stores a
//! push's objects first.
//!
//! Every node reaches each etcd member, and each other node, through a
//! [`FaultProxy`] of its own, so that a test can cut one node off from
//! etcd, from its peers, or both ([`TestCluster::cut`]). A cluster whose
//! membership changes is a [`fleet::Fleet`].
#![allow(dead_code)]

pub mod fleet;
pub mod history;

pub use refstore_testsupport::etcd;
pub use refstore_testsupport::fault_proxy::{FaultProxy, Mode};

use crate::support::{git_ok, isolate};
use etcd::{free_port, EtcdCluster};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// One node: a `refstore serve --cluster` process.
pub struct Node {
    pub name: String,
    pub port: u16,
    /// Where its `/metrics` are served.
    pub metrics_port: u16,
    pub root: PathBuf,
    pub config: PathBuf,
    child: Option<Child>,
}

impl Node {
    /// The push URL of `repo.git` (with the test user).
    pub fn url(&self) -> String {
        self.url_of("repo.git")
    }

    /// The push URL of the repository `name` (with the test user).
    pub fn url_of(&self, name: &str) -> String {
        format!("http://alice:pw@127.0.0.1:{}/{name}", self.port)
    }

    /// One HTTP/1.0 request to the node, with Basic credentials if given:
    /// the status and the body.
    pub fn http(
        &self,
        method: &str,
        path: &str,
        login: Option<(&str, &str)>,
        body: &[u8],
    ) -> (u16, String) {
        use base64::Engine as _;
        use std::io::{Read, Write};
        let mut head = format!("{method} {path} HTTP/1.0\r\nHost: x\r\n");
        if let Some((user, password)) = login {
            let encoded =
                base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
            head.push_str(&format!("Authorization: Basic {encoded}\r\n"));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body).unwrap();
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).unwrap();
        let answer = String::from_utf8_lossy(&answer).into_owned();
        let status = answer
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status in {answer:?}"));
        let body = answer
            .split_once("\r\n\r\n")
            .map_or(String::new(), |(_, b)| b.to_owned());
        (status, body)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// What its `/healthz` answers (status and body), if it answers.
    pub fn healthz(&self) -> Option<(u16, String)> {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(("127.0.0.1", self.metrics_port)).ok()?;
        stream
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .ok()?;
        stream
            .write_all(b"GET /healthz HTTP/1.0\r\nHost: health\r\n\r\n")
            .ok()?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer).ok()?;
        let status = answer.split(' ').nth(1)?.parse().ok()?;
        let (_, body) = answer.split_once("\r\n\r\n")?;
        Some((status, body.to_owned()))
    }

    /// Whether its process has exited (or was never started).
    pub fn exited(&mut self) -> bool {
        self.child
            .as_mut()
            .is_none_or(|child| child.try_wait().is_ok_and(|status| status.is_some()))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// How a pushed object reaches the nodes that did not receive the push.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Objects {
    /// Every node borrows the shared repository's objects.
    Shared,
    /// Nodes copy each push to this many nodes (the receiving one
    /// included) before its refs commit, and fetch what they lack.
    Replicated { copies: usize },
}

/// Which of a node's links a cut affects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// The node's connections to every etcd member.
    Etcd,
    /// The node's connections to the other nodes, and theirs to it.
    Peers,
    /// Both.
    All,
}

/// The proxies a node's links go through.
struct NodeLinks {
    /// To each etcd member, in the members' order.
    etcd: Vec<FaultProxy>,
    /// To each other node, by index (`None` for itself).
    peers: Vec<Option<FaultProxy>>,
}

/// The cluster and its repository.
pub struct TestCluster {
    pub home: PathBuf,
    pub etcd: EtcdCluster,
    pub nodes: Vec<Node>,
    links: Vec<NodeLinks>,
    /// The repository whose objects every node borrows.
    pub shared: PathBuf,
    /// A work tree with `main` at the imported commit.
    pub work: PathBuf,
    /// More arguments for every node's `refstore serve`.
    pub serve_args: Vec<String>,
}

impl TestCluster {
    /// Starts etcd with `members` members and `nodes` nodes serving
    /// `repo.git`, whose refs (one commit on `main`) are imported first.
    pub fn start(home: &Path, members: usize, nodes: usize) -> TestCluster {
        Self::start_with(home, members, nodes, Objects::Shared)
    }

    /// [`start`](Self::start), with objects reaching the nodes as
    /// `objects` says.
    pub fn start_with(home: &Path, members: usize, nodes: usize, objects: Objects) -> TestCluster {
        Self::start_configured(home, members, nodes, objects, "")
    }

    /// [`start_with`](Self::start_with), with `extra` (top-level lines of
    /// the cluster file) in every node's cluster file.
    pub fn start_configured(
        home: &Path,
        members: usize,
        nodes: usize,
        objects: Objects,
        extra: &str,
    ) -> TestCluster {
        let etcd = EtcdCluster::start(members);
        let shared = home.join("shared.git");
        let work = home.join("work");
        git_ok(
            home,
            home,
            &["init", "-q", "--bare", shared.to_str().unwrap()],
        );
        git_ok(
            home,
            home,
            &["init", "-q", "-b", "main", work.to_str().unwrap()],
        );
        git_ok(
            home,
            &work,
            &["commit", "-q", "--allow-empty", "-m", "first"],
        );
        git_ok(
            home,
            &work,
            &["push", "-q", shared.to_str().unwrap(), "main"],
        );
        git_ok(home, &shared, &["symbolic-ref", "HEAD", "refs/heads/main"]);
        std::fs::write(home.join("users"), "alice:pw\n").unwrap();
        std::fs::write(home.join("cluster.secret"), "a secret the nodes share\n").unwrap();
        let copies = match objects {
            Objects::Shared => 1,
            Objects::Replicated { copies } => copies,
        };

        let names: Vec<String> = (1..=nodes).map(|n| format!("n{n}")).collect();
        let ports: Vec<u16> = names.iter().map(|_| free_port()).collect();
        let links: Vec<NodeLinks> = (0..nodes)
            .map(|i| NodeLinks {
                etcd: etcd
                    .client_ports()
                    .into_iter()
                    .map(FaultProxy::to_port)
                    .collect(),
                peers: (0..nodes)
                    .map(|j| (j != i).then(|| FaultProxy::to_port(ports[j])))
                    .collect(),
            })
            .collect();
        let mut cluster = TestCluster {
            home: home.to_owned(),
            etcd,
            nodes: Vec::new(),
            links,
            shared: shared.clone(),
            work,
            serve_args: Vec::new(),
        };
        for (i, (name, port)) in names.iter().zip(&ports).enumerate() {
            // The node's own address is its real one; the others', and
            // etcd's, are its proxies'.
            let table: String = names
                .iter()
                .zip(&cluster.links[i].peers)
                .map(|(n, proxy)| {
                    let p = proxy.as_ref().map_or(*port, FaultProxy::port);
                    format!("{n} = \"http://127.0.0.1:{p}\"\n")
                })
                .collect();
            let endpoints: Vec<String> = cluster.links[i]
                .etcd
                .iter()
                .map(|proxy| format!("\"http://127.0.0.1:{}\"", proxy.port()))
                .collect();
            let root = home.join(format!("root-{name}"));
            std::fs::create_dir_all(&root).unwrap();
            let repo = root.join("repo.git");
            git_ok(home, &root, &["init", "-q", "--bare", "repo.git"]);
            match objects {
                Objects::Shared => std::fs::write(
                    repo.join("objects/info/alternates"),
                    format!("{}\n", shared.join("objects").display()),
                )
                .unwrap(),
                Objects::Replicated { .. } => {
                    git_ok(
                        home,
                        &cluster.work,
                        &["push", "-q", repo.to_str().unwrap(), "main"],
                    );
                }
            }
            let config = home.join(format!("cluster-{name}.toml"));
            std::fs::write(
                &config,
                format!(
                    "etcd = [{}]\nnode = \"{name}\"\nobject_copies = {copies}\nsecret_file = \"cluster.secret\"\netcd_timeout_ms = 2000\n{extra}\n[nodes]\n{table}",
                    endpoints.join(", ")
                ),
            )
            .unwrap();
            cluster.nodes.push(Node {
                name: name.clone(),
                port: *port,
                metrics_port: free_port(),
                root,
                config,
                child: None,
            });
        }
        let import = cluster.import();
        assert!(
            import.status.success(),
            "{}",
            crate::support::stderr(&import)
        );
        for i in 0..nodes {
            cluster.start_node(i);
        }
        cluster
    }

    /// Runs refstore in the test's home.
    pub fn refstore(&self, args: &[&str]) -> Output {
        crate::support::refstore(&self.home, &self.home, args)
    }

    /// `refstore cluster import` of the shared repository's refs into
    /// `repo.git`, through node 0's configuration.
    pub fn import(&self) -> Output {
        self.refstore(&[
            "cluster",
            "import",
            "--cluster",
            self.nodes[0].config.to_str().unwrap(),
            "--name",
            "repo.git",
            self.shared.to_str().unwrap(),
        ])
    }

    /// `refstore cluster <subcommand> --cluster <node 0's file> <args>`.
    pub fn cluster(&self, subcommand: &str, args: &[&str]) -> Output {
        let mut all = vec![
            "cluster",
            subcommand,
            "--cluster",
            self.nodes[0].config.to_str().unwrap(),
        ];
        all.extend_from_slice(args);
        self.refstore(&all)
    }

    /// Starts node `i` (again) and waits until it listens.
    pub fn start_node(&mut self, i: usize) {
        let node = &mut self.nodes[i];
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, &self.home)
            .args(["serve", "--print-address", "--workers", "8", "--allow-push"])
            .arg("--listen")
            .arg(format!("127.0.0.1:{}", node.port))
            .arg("--metrics-listen")
            .arg(format!("127.0.0.1:{}", node.metrics_port))
            .arg("--root")
            .arg(&node.root)
            .arg("--credentials")
            .arg(self.home.join("users"))
            .arg("--cluster")
            .arg(&node.config)
            .args(&self.serve_args)
            .stdout(Stdio::piped())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(self.home.join(format!("{}.log", node.name)))
                    .unwrap(),
            );
        let mut child = cmd.spawn().unwrap();
        // The HTTP address, then the metrics address: both read, since a
        // node whose standard output is closed fails to print.
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        for _ in 0..2 {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert!(
                !line.is_empty(),
                "node {} did not start: {}",
                node.name,
                std::fs::read_to_string(self.home.join(format!("{}.log", node.name)))
                    .unwrap_or_default()
            );
        }
        node.child = Some(child);
    }

    /// Puts node `i`'s `links` in `mode`: [`Mode::Hold`] cuts the node off
    /// as a partition does, [`Mode::Pass`] heals the cut.
    pub fn cut(&self, i: usize, links: Links, mode: Mode) {
        if links != Links::Peers {
            for proxy in &self.links[i].etcd {
                proxy.set(mode);
            }
        }
        if links != Links::Etcd {
            for (j, node) in self.links.iter().enumerate() {
                let proxies = if j == i {
                    node.peers.iter().flatten().collect::<Vec<_>>()
                } else {
                    node.peers[i].iter().collect()
                };
                for proxy in proxies {
                    proxy.set(mode);
                }
            }
        }
    }

    /// Heals every cut.
    pub fn heal_all(&self) {
        for i in 0..self.nodes.len() {
            self.cut(i, Links::All, Mode::Pass);
        }
    }

    /// The value of the sample `series` (without labels) in node `i`'s
    /// `/metrics`, if it has one.
    pub fn metric(&self, i: usize, series: &str) -> Option<f64> {
        use std::io::{Read, Write};
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.nodes[i].metrics_port)).unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.0\r\nHost: metrics\r\n\r\n")
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        text.lines().find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == series)
                .then(|| value.trim().parse().ok())
                .flatten()
        })
    }

    /// Sends node `i` the signal `name` (`TERM`, `INT`, ...) with kill(1).
    pub fn signal_node(&self, i: usize, name: &str) {
        let pid = self.nodes[i].pid().to_string();
        let status = Command::new("kill")
            .args([&format!("-{name}"), &pid])
            .status()
            .unwrap();
        assert!(status.success(), "kill -{name} {pid}");
    }

    /// Waits until node `i` has exited: its exit status.
    pub fn wait_node(&mut self, i: usize) -> std::process::ExitStatus {
        let mut child = self.nodes[i].child.take().expect("the node runs");
        child.wait().unwrap()
    }

    /// Kills node `i` with SIGKILL.
    pub fn kill_node(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stores the objects of `revs` (of the work tree) where every node
    /// finds them.
    pub fn share_objects(&self, revs: &[&str]) {
        let refspecs: Vec<String> = revs
            .iter()
            .enumerate()
            .map(|(i, rev)| format!("{rev}:refs/shared/{i}"))
            .collect();
        let mut args = vec!["push", "-q", "-f", self.shared.to_str().unwrap()];
        args.extend(refspecs.iter().map(String::as_str));
        git_ok(&self.home, &self.work, &args);
    }

    /// `git <args>` in the work tree, over the network.
    pub fn git(&self, args: &[&str]) -> Output {
        isolate(&mut Command::new("git"), &self.home)
            .env("GIT_TERMINAL_PROMPT", "0")
            .args(args)
            .current_dir(&self.work)
            .output()
            .unwrap()
    }

    /// `git ls-remote` of `repo.git` through node `i`: ref → id.
    pub fn ls_remote(&self, i: usize) -> Vec<(String, String)> {
        let o = self.git(&["ls-remote", &self.nodes[i].url()]);
        assert!(
            o.status.success(),
            "ls-remote through {}: {}",
            self.nodes[i].name,
            crate::support::stderr(&o)
        );
        crate::support::stdout(&o)
            .lines()
            .map(|l| {
                let (id, name) = l.split_once('\t').unwrap();
                (name.to_owned(), id.to_owned())
            })
            .collect()
    }

    /// The id `name` has through node `i`.
    pub fn remote_ref(&self, i: usize, name: &str) -> Option<String> {
        self.ls_remote(i)
            .into_iter()
            .find(|(n, _)| n == name)
            .map(|(_, id)| id)
    }

    /// A new commit in the work tree with `tree` and the one parent
    /// `parent` (`git commit-tree`), not on any branch: its id.
    pub fn commit_tree(&self, tree: &str, parent: &str, message: &str) -> String {
        git_ok(
            &self.home,
            &self.work,
            &["commit-tree", tree, "-p", parent, "-m", message],
        )
        .trim()
        .to_owned()
    }

    /// `git rev-parse <rev>` in the work tree.
    pub fn rev(&self, rev: &str) -> String {
        git_ok(&self.home, &self.work, &["rev-parse", rev])
            .trim()
            .to_owned()
    }
}
