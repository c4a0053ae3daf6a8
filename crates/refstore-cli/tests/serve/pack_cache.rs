//! The pack cache of `refstore serve` as a process: a server killed while
//! it writes an entry leaves nothing that is served, and its leftover is
//! removed at the next start, before any fetch. `refstore upload-pack`
//! over stdio caches nothing unless configured to. How the cache serves
//! concurrent clients is tested in refstore-server's tests.

use crate::served::*;
use crate::support::prometheus::{self, Exposition};
use crate::support::*;
use refstore_testsupport::pkt_line::{pkt, FLUSH};
use refstore_testsupport::server::ServerProcess;
use std::io::{BufRead, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

const CACHE_DIR: &str = ".refstore-pack-cache";

/// `refstore serve` of `root` with a metrics listener.
struct Server {
    process: ServerProcess,
    addr: String,
    metrics_addr: String,
}

impl Server {
    fn start(home: &Path, root: &Path) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_refstore"));
        isolate(&mut cmd, home)
            .args(["serve", "--listen", "127.0.0.1:0", "--print-address"])
            .args(["--metrics-listen", "127.0.0.1:0", "--workers", "16"])
            // No balancer to wait for: SIGTERM stops at once.
            .args(["--drain-time", "0"])
            .arg("--root")
            .arg(root);
        let (process, stdout) = ServerProcess::spawn(&mut cmd);
        let mut lines = stdout.lines();
        let mut next = || lines.next().and_then(Result::ok).unwrap_or_default();
        let (addr, metrics_addr) = (next(), next());
        assert!(!addr.is_empty() && !metrics_addr.is_empty());
        Server {
            process,
            addr,
            metrics_addr,
        }
    }

    fn scrape(&self) -> Exposition {
        let mut stream = TcpStream::connect(&self.metrics_addr).unwrap();
        stream
            .write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .unwrap();
        let (status, answer) = read_answer(&mut stream);
        assert_eq!(status, 200);
        let body = answer.split_once("\r\n\r\n").unwrap().1;
        prometheus::parse(body).unwrap_or_else(|e| panic!("{e}\n{body}"))
    }

    /// The lookups of `outcome` counted so far.
    fn lookups(&self, outcome: &str) -> f64 {
        self.scrape()
            .value("refstore_pack_cache_lookups_total", &[("outcome", outcome)])
            .unwrap_or(0.0)
    }

    /// Sends a v2 fetch of `tip` (no haves: a clone's pack) and returns
    /// the connection, its answer unread.
    fn fetch(&self, tip: &str) -> TcpStream {
        let mut body = Vec::new();
        body.extend(pkt("command=fetch\n"));
        body.extend(pkt("object-format=sha1\n"));
        body.extend(b"0001");
        body.extend(pkt("ofs-delta\n"));
        body.extend(pkt(format!("want {tip}\n")));
        body.extend(pkt("done\n"));
        body.extend(FLUSH);
        let head = format!(
            "POST /proj.git/git-upload-pack HTTP/1.1\r\nHost: x\r\n\
             Content-Type: application/x-git-upload-pack-request\r\n\
             Git-Protocol: version=2\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        let mut stream = TcpStream::connect(&self.addr).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(&body).unwrap();
        stream
    }
}

/// The pack of a fetch's answer (band 1 of its side-band packets); `Err`
/// with the band-3 message, or if the answer ends before its flush-pkt.
fn read_pack(mut stream: TcpStream) -> Result<Vec<u8>, String> {
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let split = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no HTTP head")?;
    let head = String::from_utf8_lossy(&answer[..split]).to_ascii_lowercase();
    let mut body = answer[split + 4..].to_vec();
    if head.contains("transfer-encoding: chunked") {
        body = unchunk(&body)?;
    }
    let mut pack = Vec::new();
    let mut at = 0;
    let mut seen_packfile = false;
    while at + 4 <= body.len() {
        let len = usize::from_str_radix(std::str::from_utf8(&body[at..at + 4]).unwrap(), 16)
            .map_err(|e| e.to_string())?;
        if len == 0 {
            return if seen_packfile {
                Ok(pack)
            } else {
                Err("no packfile section".into())
            };
        }
        if len < 4 || at + len > body.len() {
            break;
        }
        let payload = &body[at + 4..at + len];
        at += len;
        if !seen_packfile {
            seen_packfile = payload == b"packfile\n";
            continue;
        }
        match payload[0] {
            1 => pack.extend_from_slice(&payload[1..]),
            2 => {}
            _ => return Err(String::from_utf8_lossy(&payload[1..]).into_owned()),
        }
    }
    Err(format!(
        "the answer ended early, after {} pack bytes",
        pack.len()
    ))
}

fn unchunk(mut body: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("chunked body cut short")?;
        let size = usize::from_str_radix(std::str::from_utf8(&body[..line_end]).unwrap(), 16)
            .map_err(|e| e.to_string())?;
        body = &body[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if body.len() < size + 2 {
            out.extend_from_slice(&body[..body.len().min(size)]);
            return Ok(out);
        }
        out.extend_from_slice(&body[..size]);
        body = &body[size + 2..];
    }
}

/// Checks `pack` with git: indexed into a new repository, it holds `tip`
/// and everything `tip` reaches.
fn check_pack(home: &Path, pack: &[u8], tip: &str, name: &str) {
    let repo = home.join(name);
    git_ok(
        home,
        home,
        &["init", "-q", "--bare", repo.to_str().unwrap()],
    );
    let indexed = run_isolated("git", home, &repo, &["index-pack", "--stdin"], pack);
    assert!(indexed.status.success(), "{}", stderr(&indexed));
    git_ok(home, &repo, &["update-ref", "refs/heads/main", tip]);
    git_ok(home, &repo, &["fsck", "--strict", "--no-dangling"]);
}

/// A bare `proj.git` below `root` whose history holds `big` bytes that do
/// not compress (so that its pack takes a while to send); its tip.
fn setup(home: &Path, root: &Path, big: usize) -> String {
    let work = fixtures::three_commits(home);
    if big > 0 {
        work.commit_file("big.bin", noise(7, big));
    }
    work.annotated_tag("v9", "nine", "HEAD");
    work.bare_clone(&root.join("proj.git"));
    work.head()
}

fn temp_entries(root: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(listing) = std::fs::read_dir(root.join(CACHE_DIR)) else {
        return Vec::new();
    };
    listing
        .map(|e| e.unwrap())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("tmp_packcache_")
        })
        .map(|e| (e.path(), e.metadata().map(|m| m.len()).unwrap_or(0)))
        .collect()
}

/// Waits until an entry is being written, for a client that does not
/// read: its path. It cannot be finished while that client reads
/// nothing, since the pack is far larger than what the connection and
/// the server's channel hold, so its producer stalls.
fn entry_being_written(root: &Path) -> PathBuf {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let entries = temp_entries(root);
        if let [(path, len)] = entries.as_slice() {
            if *len > 0 {
                return path.clone();
            }
        }
        assert!(
            Instant::now() < deadline,
            "no entry being written: {entries:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn pack_files(repo: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(repo.join("objects/pack"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".pack"))
        .collect();
    names.sort();
    names
}

#[test]
fn a_server_killed_while_writing_an_entry_leaves_nothing_served() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let tip = setup(home, &root, 48 << 20);
    let server = Server::start(home, &root);
    let stalled = server.fetch(&tip);
    let leftover = entry_being_written(&root);
    server.process.kill();
    drop(stalled);
    assert!(leftover.exists());

    let server = Server::start(home, &root);
    // Cleaned when the server starts, before any fetch.
    assert!(!leftover.exists(), "{} is left", leftover.display());
    let pack = read_pack(server.fetch(&tip)).unwrap();
    assert_eq!(server.lookups("miss"), 1.0);
    assert_eq!(server.lookups("hit") + server.lookups("follow"), 0.0);
    check_pack(home, &pack, &tip, "fresh.git");
    let _ = server.process.stop();
}

#[test]
fn stdio_upload_pack_caches_only_when_configured() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, 0);
    let repo = root.join("proj.git");
    let upload_pack = format!("{} upload-pack", env!("CARGO_BIN_EXE_refstore"));
    let clone = |name: &str| {
        let to = home.join(name);
        git_ok(
            home,
            home,
            &[
                "clone",
                "-q",
                "--bare",
                "--no-local",
                "--upload-pack",
                &upload_pack,
                repo.to_str().unwrap(),
                to.to_str().unwrap(),
            ],
        );
        to
    };
    clone("plain.git");
    assert!(!repo.join("refstore-pack-cache").exists());
    git_ok(
        home,
        &repo,
        &["config", "refstore.packCache.enabled", "true"],
    );
    let first = clone("cached-1.git");
    let entries = std::fs::read_dir(repo.join("refstore-pack-cache"))
        .unwrap()
        .count();
    assert_eq!(entries, 1);
    let second = clone("cached-2.git");
    assert_eq!(pack_files(&first), pack_files(&second));
    git_ok(home, &second, &["fsck", "--strict"]);
}
