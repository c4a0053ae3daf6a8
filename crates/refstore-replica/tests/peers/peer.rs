//! A peer node as the replica sees it: an HTTP listener on loopback that
//! answers the replication endpoint's three requests ([`refstore_replica`]'s
//! client documents them) for the repositories below its root, through
//! the crate's own [`packs`] and [`secret`], as `refstore serve` exposes
//! them. It can also play a peer that takes connections and never answers,
//! or one that claims to store packs under another name; it counts the
//! requests it was sent. Dropping it stops its listener.

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_replica::packs::{self, PackFile};
use refstore_replica::{secret, ENDPOINT_PREFIX};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// How a peer answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// As a node does.
    Serves,
    /// Takes connections, reads nothing, answers nothing.
    Hangs,
    /// Stores a sent pack, and names another pack in its answer.
    Misnames,
}

/// A running peer.
pub struct Peer {
    pub addr: SocketAddr,
    pub root: PathBuf,
    /// Requests answered (hung connections not counted).
    pub requests: Arc<AtomicUsize>,
    behaviour: Arc<Mutex<Behaviour>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Peer {
    /// A peer serving the repositories below `root` to holders of
    /// `secret`.
    pub fn start(root: &Path, secret: &[u8], behaviour: Behaviour) -> Peer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let behaviour = Arc::new(Mutex::new(behaviour));
        let thread = {
            let (stop, requests, behaviour) = (stop.clone(), requests.clone(), behaviour.clone());
            let (root, secret) = (root.to_owned(), secret.to_vec());
            std::thread::spawn(move || {
                let mut hung = Vec::new();
                let mut answering = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let stream = match listener.accept() {
                        Ok((stream, _)) => stream,
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            // How often the listener looks at the stop
                            // flag while no client comes.
                            std::thread::sleep(Duration::from_millis(5));
                            continue;
                        }
                        Err(e) => panic!("accept: {e}"),
                    };
                    stream.set_nonblocking(false).unwrap();
                    let now = *behaviour.lock().unwrap();
                    if now == Behaviour::Hangs {
                        hung.push(stream);
                        continue;
                    }
                    let (root, secret, requests) = (root.clone(), secret.clone(), requests.clone());
                    answering.push(std::thread::spawn(move || {
                        answer(stream, &root, &secret, now);
                        requests.fetch_add(1, Ordering::SeqCst);
                    }));
                }
                for thread in answering {
                    let _ = thread.join();
                }
            })
        };
        Peer {
            addr,
            root: root.to_owned(),
            requests,
            behaviour,
            stop,
            thread: Some(thread),
        }
    }

    /// Its base URL.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Answers as `behaviour` says from now on.
    pub fn behave(&self, behaviour: Behaviour) {
        *self.behaviour.lock().unwrap() = behaviour;
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads one request and answers it.
fn answer(stream: TcpStream, root: &Path, secret: &[u8], behaviour: Behaviour) {
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    reader.read_line(&mut line).unwrap();
    let mut words = line.split_whitespace();
    let (method, path) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    let (method, path) = (method.to_owned(), path.to_owned());
    let (mut length, mut authorization) = (0, None);
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).unwrap();
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':').unwrap_or((header, ""));
        match name.to_ascii_lowercase().as_str() {
            "content-length" => length = value.trim().parse().unwrap(),
            "authorization" => authorization = Some(value.trim().to_owned()),
            _ => {}
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let (status, content) = match secret::check(secret, authorization.as_deref()) {
        secret::Verdict::Missing => (401, b"no token".to_vec()),
        secret::Verdict::Wrong => (403, b"wrong token".to_vec()),
        secret::Verdict::Authorized => route(&method, &path, &body, root, behaviour),
    };
    let mut stream = stream;
    let head = format!(
        "HTTP/1.1 {status} X\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        content.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&content);
}

/// The answer to an authorized request.
fn route(
    method: &str,
    path: &str,
    body: &[u8],
    root: &Path,
    behaviour: Behaviour,
) -> (u16, Vec<u8>) {
    let Some(rest) = path.strip_prefix(ENDPOINT_PREFIX) else {
        return (404, b"no such endpoint".to_vec());
    };
    let (name, tail) = match rest.find(".git/") {
        Some(at) => (&rest[..at + 4], &rest[at + 5..]),
        None => return (404, b"no repository".to_vec()),
    };
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
    let opened = refstore_repo::Repository::open(vfs, &root.join(name), &[]);
    let Ok(repo) = opened
        .map_err(|e| e.to_string())
        .and_then(|opened| refstore_protocol::Repository::serve(opened).map_err(|e| e.to_string()))
    else {
        return (404, b"not a repository".to_vec());
    };
    let found = |read: Result<Option<Vec<u8>>, String>| match read {
        Ok(Some(bytes)) => (200, bytes),
        Ok(None) => (404, b"no such pack".to_vec()),
        Err(e) => (500, e.into_bytes()),
    };
    match (method, tail) {
        ("GET", "packs") => match packs::list(&repo) {
            Ok(list) => (
                200,
                list.iter()
                    .map(|(pack, size)| format!("{pack} {size}\n"))
                    .collect::<String>()
                    .into_bytes(),
            ),
            Err(e) => (500, e.into_bytes()),
        },
        ("POST", "pack") => match packs::index(&repo, body) {
            Ok(_) if behaviour == Behaviour::Misnames => (200, b"pack-elsewhere\n".to_vec()),
            Ok(stored) => (200, format!("{stored}\n").into_bytes()),
            Err(e) => (400, e.into_bytes()),
        },
        ("GET", file) => match file.strip_prefix("pack/") {
            Some(file) => match (file.strip_suffix(".pack"), file.strip_suffix(".idx")) {
                (Some(pack), _) => found(packs::read(&repo, pack, PackFile::Pack)),
                (_, Some(pack)) => found(packs::read(&repo, pack, PackFile::Index)),
                _ => (404, b"no such file".to_vec()),
            },
            None => (404, b"no such endpoint".to_vec()),
        },
        _ => (404, b"no such endpoint".to_vec()),
    }
}
