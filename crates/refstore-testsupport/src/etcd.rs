//! Real etcd clusters for tests: members on free loopback ports, data in a
//! temporary directory, stopped when dropped. etcd is installed through
//! scripts/install-deps when missing.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One etcd cluster.
pub struct EtcdCluster {
    pub dir: tempfile::TempDir,
    members: Vec<Member>,
}

struct Member {
    name: String,
    client_port: u16,
    args: Vec<String>,
    child: Option<Child>,
}

/// Where [`free_port`] looks: below Linux's ephemeral range (32768 and
/// up by default), from which outgoing connections take their local
/// ports. A server restarted on its port (a killed node, an etcd member)
/// then never finds it taken by some client's connection meanwhile.
const PORTS: std::ops::Range<u16> = 20000..32000;

/// A free loopback port, never one this process handed out before (tests
/// of one binary run at once, and a port a stopped server left must stay
/// its own).
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static HANDED_OUT: std::sync::Mutex<Vec<u16>> = std::sync::Mutex::new(Vec::new());
    static TURN: AtomicU32 = AtomicU32::new(0);
    let span = u32::from(PORTS.end - PORTS.start);
    let turn = TURN.fetch_add(1, Ordering::Relaxed);
    let start = std::process::id()
        .wrapping_mul(7919)
        .wrapping_add(turn.wrapping_mul(104_729))
        % span;
    let mut handed_out = HANDED_OUT.lock().unwrap_or_else(|e| e.into_inner());
    for step in 0..span {
        let port = PORTS.start + ((start + step * 613) % span) as u16;
        if handed_out.contains(&port) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            handed_out.push(port);
            return port;
        }
    }
    panic!("no free loopback port in {PORTS:?}");
}

/// The etcd binary, installed first if missing.
fn etcd_binary() -> PathBuf {
    let found = |name: &str| {
        std::env::var_os("PATH").and_then(|path| {
            std::env::split_paths(&path)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    };
    if let Some(path) = found("etcd") {
        return path;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/install-deps");
    let status = Command::new(&script).status().unwrap_or_else(|e| {
        panic!("cannot run {}: {e}", script.display());
    });
    assert!(status.success(), "{} failed", script.display());
    found("etcd").expect("scripts/install-deps did not install etcd (Debian's etcd-server)")
}

impl EtcdCluster {
    /// Starts `size` members and waits until the cluster has a leader.
    pub fn start(size: usize) -> EtcdCluster {
        let binary = etcd_binary();
        let dir = tempfile::tempdir().unwrap();
        let ports: Vec<(u16, u16)> = (0..size).map(|_| (free_port(), free_port())).collect();
        let initial: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect();
        let initial = initial.join(",");
        let mut members = Vec::new();
        for (i, (client, peer)) in ports.iter().enumerate() {
            let name = format!("m{i}");
            let args = vec![
                binary.display().to_string(),
                "--name".into(),
                name.clone(),
                "--data-dir".into(),
                dir.path().join(&name).display().to_string(),
                "--listen-client-urls".into(),
                format!("http://127.0.0.1:{client}"),
                "--advertise-client-urls".into(),
                format!("http://127.0.0.1:{client}"),
                "--listen-peer-urls".into(),
                format!("http://127.0.0.1:{peer}"),
                "--initial-advertise-peer-urls".into(),
                format!("http://127.0.0.1:{peer}"),
                "--initial-cluster".into(),
                initial.clone(),
                "--initial-cluster-state".into(),
                "new".into(),
                "--initial-cluster-token".into(),
                "refstore-test".into(),
                // A push of many refs is one transaction.
                "--max-txn-ops".into(),
                "100000".into(),
                "--max-request-bytes".into(),
                "33554432".into(),
                "--heartbeat-interval".into(),
                "50".into(),
                "--election-timeout".into(),
                "500".into(),
                "--logger".into(),
                "zap".into(),
                "--log-level".into(),
                "error".into(),
            ];
            members.push(Member {
                name,
                client_port: *client,
                args,
                child: None,
            });
        }
        let mut cluster = EtcdCluster { dir, members };
        for i in 0..size {
            cluster.start_member(i);
        }
        cluster.wait_healthy();
        cluster
    }

    /// The client URLs.
    pub fn endpoints(&self) -> Vec<String> {
        self.client_ports()
            .into_iter()
            .map(|port| format!("http://127.0.0.1:{port}"))
            .collect()
    }

    /// The members' client ports (on 127.0.0.1).
    pub fn client_ports(&self) -> Vec<u16> {
        self.members.iter().map(|m| m.client_port).collect()
    }

    /// The endpoints as a TOML array.
    pub fn endpoints_toml(&self) -> String {
        let quoted: Vec<String> = self
            .endpoints()
            .iter()
            .map(|e| format!("\"{e}\""))
            .collect();
        format!("[{}]", quoted.join(", "))
    }

    /// Starts member `i` (again).
    pub fn start_member(&mut self, i: usize) {
        let member = &mut self.members[i];
        assert!(
            member.child.is_none(),
            "member {} runs already",
            member.name
        );
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join(format!("{}.log", member.name)))
            .unwrap();
        let child = Command::new(&member.args[0])
            .args(&member.args[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("cannot start etcd");
        member.child = Some(child);
    }

    /// Kills member `i` with SIGKILL.
    pub fn kill_member(&mut self, i: usize) {
        if let Some(mut child) = self.members[i].child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The process id of member `i`.
    pub fn pid(&self, i: usize) -> Option<u32> {
        self.members[i].child.as_ref().map(Child::id)
    }

    /// Waits until every running member reports itself healthy (which
    /// needs a leader).
    pub fn wait_healthy(&self) {
        let deadline = Instant::now() + Duration::from_secs(60);
        for member in self.members.iter().filter(|m| m.child.is_some()) {
            while !healthy(member.client_port) {
                assert!(
                    Instant::now() < deadline,
                    "etcd member {} did not become healthy; see {}",
                    member.name,
                    self.dir.path().display()
                );
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

impl Drop for EtcdCluster {
    fn drop(&mut self) {
        for i in 0..self.members.len() {
            self.kill_member(i);
        }
    }
}

/// etcd's `/health` answers `"health":"true"` once the member has a leader.
fn healthy(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.0\r\nHost: 127.0.0.1:{port}\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.contains("\"health\":\"true\"")
}
