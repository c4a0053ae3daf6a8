//! A cluster whose membership changes: nodes that reach each other
//! directly (no fault proxies, since a member's URL in etcd is one for
//! every node), added, stopped, wiped and started again by name, each
//! with `/healthz` and `/metrics` on a port of its own.

use super::etcd::{free_port, EtcdCluster};
use crate::support::isolate;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// One node of a [`Fleet`].
pub struct FleetNode {
    pub name: String,
    pub port: u16,
    pub metrics_port: u16,
    pub root: PathBuf,
    pub config: PathBuf,
    child: Option<Child>,
}

impl FleetNode {
    /// The URL of the repository `name` through this node (test user).
    pub fn url_of(&self, name: &str) -> String {
        format!("http://alice:pw@127.0.0.1:{}/{name}", self.port)
    }

    /// The node's `--listen` URL, as the cluster names it.
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Whether its process runs.
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }
}

impl Drop for FleetNode {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// etcd and the nodes.
pub struct Fleet {
    pub home: PathBuf,
    pub etcd: EtcdCluster,
    pub nodes: Vec<FleetNode>,
    /// Top-level lines of every node's cluster file.
    settings: String,
    /// The `[nodes]` table every cluster file starts the cluster with.
    initial: String,
}

impl Fleet {
    /// One etcd member and the nodes `names` (the initial membership, in
    /// every cluster file's `[nodes]`), none started; `settings` are more
    /// top-level lines of the cluster files.
    pub fn new(home: &Path, names: &[&str], settings: &str) -> Fleet {
        let etcd = EtcdCluster::start(1);
        std::fs::write(home.join("users"), "alice:pw\n").unwrap();
        std::fs::write(home.join("cluster.secret"), "a secret the nodes share\n").unwrap();
        let endpoints: Vec<String> = etcd
            .endpoints()
            .iter()
            .map(|e| format!("\"{e}\""))
            .collect();
        let mut fleet = Fleet {
            home: home.to_owned(),
            etcd,
            nodes: Vec::new(),
            settings: format!(
                "etcd = [{}]\nsecret_file = \"cluster.secret\"\n{settings}\n",
                endpoints.join(", ")
            ),
            initial: String::new(),
        };
        for name in names {
            fleet.add_node(name);
        }
        fleet.initial = fleet
            .nodes
            .iter()
            .map(|n| format!("{} = \"{}\"\n", n.name, n.base()))
            .collect();
        for i in 0..fleet.nodes.len() {
            fleet.write_config(i);
        }
        fleet
    }

    /// A node not started yet, with a port, a root and a cluster file of
    /// its own (the initial `[nodes]` and itself): its index.
    pub fn add_node(&mut self, name: &str) -> usize {
        let root = self.home.join(format!("root-{name}"));
        std::fs::create_dir_all(&root).unwrap();
        self.nodes.push(FleetNode {
            name: name.to_owned(),
            port: free_port(),
            metrics_port: free_port(),
            root,
            config: self.home.join(format!("cluster-{name}.toml")),
            child: None,
        });
        let i = self.nodes.len() - 1;
        if !self.initial.is_empty() {
            self.write_config(i);
        }
        i
    }

    fn write_config(&self, i: usize) {
        let node = &self.nodes[i];
        let mut table = self.initial.clone();
        if !table.contains(&format!("{} = ", node.name)) {
            table.push_str(&format!("{} = \"{}\"\n", node.name, node.base()));
        }
        let text = format!(
            "{}node = \"{}\"\n[nodes]\n{table}",
            self.settings, node.name
        );
        std::fs::write(&node.config, text).unwrap();
    }

    /// Starts node `i` and waits until it listens (not until it is ready).
    pub fn start(&mut self, i: usize) {
        let log = self.home.join(format!("{}.log", self.nodes[i].name));
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
            .stdout(Stdio::piped())
            .stderr(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .unwrap(),
            );
        let mut child = cmd.spawn().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        for _ in 0..2 {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            assert!(
                !line.is_empty(),
                "node {} did not start: {}",
                node.name,
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        node.child = Some(child);
    }

    /// Stops node `i` (SIGKILL: the harshest stop).
    pub fn stop(&mut self, i: usize) {
        if let Some(mut child) = self.nodes[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Node `i`'s log so far (every run of it).
    pub fn log(&self, i: usize) -> String {
        std::fs::read_to_string(self.home.join(format!("{}.log", self.nodes[i].name)))
            .unwrap_or_default()
    }

    /// How many repair passes node `i` has finished (every run of it).
    pub fn repair_passes(&self, i: usize) -> usize {
        self.log(i).matches("repair pass done").count()
    }

    /// `refstore cluster <args>` with node `via`'s cluster file.
    pub fn cluster(&self, via: usize, subcommand: &[&str], args: &[&str]) -> Output {
        let mut all = vec!["cluster"];
        all.extend_from_slice(subcommand);
        all.extend_from_slice(&["--cluster", self.nodes[via].config.to_str().unwrap()]);
        all.extend_from_slice(args);
        crate::support::refstore(&self.home, &self.home, &all)
    }

    /// `GET <path>` on node `i`'s metrics listener: status and body.
    pub fn get(&self, i: usize, path: &str) -> (u16, String) {
        let mut stream =
            std::net::TcpStream::connect(("127.0.0.1", self.nodes[i].metrics_port)).unwrap();
        stream
            .write_all(format!("GET {path} HTTP/1.0\r\nHost: m\r\n\r\n").as_bytes())
            .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).unwrap();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(0);
        let body = text
            .split_once("\r\n\r\n")
            .map_or("", |(_, b)| b)
            .to_owned();
        (status, body)
    }

    /// Node `i`'s `/healthz` body, trimmed, and whether it answered 200.
    pub fn health(&self, i: usize) -> (bool, String) {
        let (status, body) = self.get(i, "/healthz");
        (status == 200, body.trim().to_owned())
    }

    /// The value of the sample `series` (no labels) in node `i`'s
    /// `/metrics`.
    pub fn metric(&self, i: usize, series: &str) -> Option<f64> {
        let (_, text) = self.get(i, "/metrics");
        text.lines().find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == series)
                .then(|| value.trim().parse().ok())
                .flatten()
        })
    }
}
