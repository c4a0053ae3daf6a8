//! The pack cache with real git clients: identical clones share one
//! computation (counted in the metrics) and get the same pack, which
//! `git fsck` accepts; a client that hangs up mid-pack does not spoil the
//! entry a follower reads; a damaged entry is computed again.

use crate::support::alone::{alone, Alone};
use crate::support::pkt_line::{pkt, FLUSH};
use crate::support::*;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const CACHE_DIR: &str = ".refstore-pack-cache";

/// A server of `root` as `refstore serve --workers 16` runs it, the
/// storage layers' reports counted in its metrics.
fn start(log: &Alone, root: &Path) -> Served {
    let mut serve = Serve::new(root).metrics_listener();
    serve.options.workers = 16;
    log.observe(&serve.options.metrics);
    serve.start()
}

/// The lookups of `outcome` counted so far.
fn lookups(server: &Served, outcome: &str) -> f64 {
    server
        .scrape()
        .value("refstore_pack_cache_lookups_total", &[("outcome", outcome)])
        .unwrap_or(0.0)
}

/// Sends a v2 fetch of `tip` (no haves: a clone's pack) and returns the
/// connection, its answer unread.
fn fetch(server: &Served, tip: &str) -> TcpStream {
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
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body).unwrap();
    stream
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
    let indexed = Git::new(home, &repo).run_with(&["index-pack", "--stdin"], pack);
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
fn concurrent_identical_clones_share_one_computation() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    setup(home, &root, 2 << 20);
    let server = start(&log, &root);
    let clones = 8;
    let url = server.url("proj.git");
    let threads: Vec<_> = (0..clones)
        .map(|n| {
            let (home, url) = (home.to_owned(), url.clone());
            std::thread::spawn(move || {
                let to = home.join(format!("clone-{n}.git"));
                git_net_ok(
                    &home,
                    &home,
                    &["clone", "-q", "--bare", &url, to.to_str().unwrap()],
                );
                to
            })
        })
        .collect();
    let repos: Vec<PathBuf> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(lookups(&server, "miss"), 1.0);
    assert_eq!(
        lookups(&server, "hit") + lookups(&server, "follow"),
        (clones - 1) as f64
    );
    let served = server
        .scrape()
        .value("refstore_pack_cache_served_bytes_total", &[])
        .unwrap();
    assert!(served > (clones - 1) as f64 * (2 << 20) as f64, "{served}");
    // The same bytes reached every client: index-pack names a pack by
    // its checksum.
    let first = pack_files(&repos[0]);
    for repo in &repos {
        assert_eq!(pack_files(repo), first);
        git_ok(home, repo, &["fsck", "--strict"]);
    }

    // A later clone is a hit of the finished entry.
    let later = home.join("later.git");
    git_net_ok(
        home,
        home,
        &["clone", "-q", "--bare", &url, later.to_str().unwrap()],
    );
    assert_eq!(lookups(&server, "miss"), 1.0);
    assert_eq!(pack_files(&later), first);

    // A damaged entry is not served: removed, computed again.
    let entries: Vec<PathBuf> = std::fs::read_dir(root.join(CACHE_DIR))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(entries.len(), 1, "{entries:?}");
    let mut bytes = std::fs::read(&entries[0]).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&entries[0], &bytes).unwrap();
    let again = home.join("again.git");
    git_net_ok(
        home,
        home,
        &["clone", "-q", "--bare", &url, again.to_str().unwrap()],
    );
    assert_eq!(lookups(&server, "corrupt"), 1.0);
    assert_eq!(lookups(&server, "miss"), 2.0);
    git_ok(home, &again, &["fsck", "--strict"]);

    // A shallow clone asks for another pack.
    let shallow = home.join("shallow.git");
    git_net_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            "--bare",
            "--depth",
            "1",
            &url,
            shallow.to_str().unwrap(),
        ],
    );
    assert_eq!(lookups(&server, "miss"), 3.0);
    git_ok(home, &shallow, &["fsck"]);
}

#[test]
fn a_client_that_hangs_up_mid_pack_does_not_spoil_the_entry_its_follower_reads() {
    let log = alone();
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let root = home.join("root");
    let tip = setup(home, &root, 48 << 20);
    let server = start(&log, &root);

    // The first client reads nothing: its producer stalls mid-pack.
    let first = fetch(&server, &tip);
    entry_being_written(&root);
    let follower = {
        let stream = fetch(&server, &tip);
        std::thread::spawn(move || read_pack(stream))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while lookups(&server, "follow") < 1.0 {
        assert!(Instant::now() < deadline, "the second fetch never followed");
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(first);

    let pack = follower.join().unwrap().expect("the follower's pack");
    check_pack(home, &pack, &tip, "followed.git");
    // The entry was finished and kept: a later fetch gets the same bytes.
    let later = read_pack(fetch(&server, &tip)).unwrap();
    assert_eq!(lookups(&server, "hit"), 1.0);
    assert_eq!(lookups(&server, "miss"), 1.0);
    assert!(
        later == pack,
        "the cached pack differs from the followed one"
    );
}
