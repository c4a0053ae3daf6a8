//! `refstore serve` nodes that replicate pushes' objects, with the
//! machine's git over HTTP on loopback: the internal endpoint opens only
//! to the shared secret and stays below the served root; a push is
//! acknowledged once `object_copies` nodes hold its pack, and refused
//! with every ref unchanged when too few can (down, or never answering);
//! concurrent pushes through every node, with few workers, each reach a
//! quorum; a node that was down catches up when a fetch (protocol v0 or
//! v2) needs what it missed, and by its repair; and a pack left on fewer
//! than `object_copies` nodes (one of its holders lost) is sent by its
//! holder's repair to a node lacking it.
//!
//! Each node keeps its refs in its own repository here; where a test
//! needs a node to show a ref another node wrote (as a shared ref store
//! would), it writes the ref there itself.

mod served;
mod support;
use served::*;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::*;

const SECRET: &str = "correct horse battery staple";

/// A cluster of `n` nodes on loopback: their roots, addresses and the
/// files their flags name. Nodes are started and stopped one by one.
struct Cluster {
    home: PathBuf,
    ports: Vec<u16>,
    copies: usize,
    /// `--replicate-timeout`.
    timeout: &'static str,
}

impl Cluster {
    /// Roots `n1`... below `home`, each with an empty bare `r.git`.
    fn new(home: &Path, n: usize, copies: usize) -> Cluster {
        std::fs::write(home.join("secret"), format!("{SECRET}\n")).unwrap();
        std::fs::write(home.join("users"), "alice:pw\n").unwrap();
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
            timeout: "10",
        }
    }

    fn root(&self, i: usize) -> PathBuf {
        self.home.join(format!("n{i}"))
    }

    fn repo(&self, i: usize) -> PathBuf {
        self.root(i).join("r.git")
    }

    /// Starts node `i` (1-based) with `extra` flags.
    fn start(&self, i: usize, extra: &[&str]) -> Served {
        let secret = self.home.join("secret");
        let users = self.home.join("users");
        let copies = self.copies.to_string();
        let mut args = vec![
            "--allow-push",
            "--credentials",
            users.to_str().unwrap(),
            "--replicate-secret",
            secret.to_str().unwrap(),
            "--replicate-copies",
            &copies,
            "--replicate-timeout",
            self.timeout,
        ];
        let node = format!("n{i}");
        args.extend(["--replicate-node", &node]);
        let peers: Vec<String> = self
            .ports
            .iter()
            .enumerate()
            .map(|(j, port)| format!("n{}=http://127.0.0.1:{port}", j + 1))
            .collect();
        for peer in &peers {
            args.extend(["--replicate-peer", peer]);
        }
        args.extend_from_slice(extra);
        let listen = format!("127.0.0.1:{}", self.ports[i - 1]);
        Served::start_listening(&self.home, &self.root(i), &listen, &args, &[])
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

/// A work repository with one commit of `file`; its id.
fn commit(home: &Path, work: &Path, file: &str) -> String {
    commit_text(home, work, file, &format!("{file}\n"))
}

/// A commit of `file` holding `text`; its id.
fn commit_text(home: &Path, work: &Path, file: &str, text: &str) -> String {
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

fn push(home: &Path, work: &Path, node: &Served) -> std::process::Output {
    let url = node.url_as("alice", "pw", "r.git");
    git_net(home, work, &["push", &url, "main"])
}

/// Writes `refs/heads/main` of a node's repository directly, as a ref
/// store shared by the nodes would show it there.
fn set_main(repo: &Path, id: &str) {
    std::fs::write(repo.join("refs/heads/main"), format!("{id}\n")).unwrap();
}

/// Clones `r.git` from `node` into `dest` and checks it with fsck.
fn clone_and_fsck(home: &Path, node: &Served, dest: &Path) -> String {
    clone_and_fsck_with(home, node, dest, "2")
}

/// [`clone_and_fsck`] in protocol `version`.
fn clone_and_fsck_with(home: &Path, node: &Served, dest: &Path, version: &str) -> String {
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

/// An HTTP/1.0 request with a bearer token (if any) and a body.
fn request(
    node: &Served,
    method: &str,
    path: &str,
    token: Option<&str>,
    body: &[u8],
) -> (u16, String) {
    let mut head = format!("{method} {path} HTTP/1.0\r\nHost: x\r\n");
    if let Some(token) = token {
        head.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(body);
    node.exchange(&bytes)
}

fn token() -> String {
    SECRET.bytes().map(|b| format!("{b:02x}")).collect()
}

/// A complete pack of every object of `work`.
fn pack_of(home: &Path, work: &Path) -> Vec<u8> {
    let objects = git_ok(home, work, &["rev-list", "--objects", "--all"]);
    let ids: String = objects.lines().map(|l| format!("{}\n", &l[..40])).collect();
    let o = run_with_input(
        isolate(&mut Command::new("git"), home)
            .args(["pack-objects", "--stdout"])
            .current_dir(work),
        ids.as_bytes(),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    o.stdout
}

#[test]
fn the_endpoint_needs_the_secret_and_stays_below_the_root() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 2, 1);
    let n1 = cluster.start(1, &["--replicate-no-repair"]);
    let list = "/_refstore/replicate/r.git/packs";

    let (status, _) = request(&n1, "GET", list, None, b"");
    assert_eq!(status, 401);
    let (status, _) = request(&n1, "GET", list, Some("00"), b"");
    assert_eq!(status, 403);
    let (status, _) = request(
        &n1,
        "POST",
        "/_refstore/replicate/r.git/pack",
        Some("7365"),
        b"PACK",
    );
    assert_eq!(status, 403);
    let (status, answer) = request(&n1, "GET", list, Some(&token()), b"");
    assert_eq!(status, 200, "{answer}");

    // Paths that leave the root, through `..` or a symbolic link, are
    // not repositories.
    std::os::unix::fs::symlink(cluster.repo(2), cluster.root(1).join("outside.git")).unwrap();
    for hostile in [
        "/_refstore/replicate/../n2/r.git/packs",
        "/_refstore/replicate/%2e%2e/n2/r.git/packs",
        "/_refstore/replicate/outside.git/packs",
        "/_refstore/replicate/r.git/pack/..%2f..%2fconfig.pack",
        "/_refstore/replicate/r.git/pack/pack-x.keep",
    ] {
        let (status, answer) = request(&n1, "GET", hostile, Some(&token()), b"");
        assert_eq!(status, 404, "{hostile}: {answer}");
    }

    // A pack is stored once, idempotently; a corrupt or truncated one is
    // refused with nothing stored.
    let work = home.join("work");
    commit(home, &work, "a");
    let pack = pack_of(home, &work);
    let upload = "/_refstore/replicate/r.git/pack";
    let mut corrupt = pack.clone();
    let middle = corrupt.len() / 2;
    corrupt[middle] ^= 0xff;
    for bad in [&corrupt[..], &pack[..pack.len() - 7], b"not a pack"] {
        let (status, answer) = request(&n1, "POST", upload, Some(&token()), bad);
        assert_eq!(status, 400, "{answer}");
        assert!(packs(&cluster.repo(1)).is_empty());
    }
    let (status, first) = request(&n1, "POST", upload, Some(&token()), &pack);
    assert_eq!(status, 200, "{first}");
    let (status, again) = request(&n1, "POST", upload, Some(&token()), &pack);
    assert_eq!(status, 200, "{again}");
    let stored = packs(&cluster.repo(1));
    assert_eq!(stored.len(), 1);
    assert!(first.ends_with(&format!("{}\n", stored[0])), "{first}");
    let idx = cluster
        .repo(1)
        .join(format!("objects/pack/{}.idx", stored[0]));
    git_ok(home, home, &["verify-pack", idx.to_str().unwrap()]);
    let (_, listed) = request(&n1, "GET", list, Some(&token()), b"");
    assert!(
        listed.contains(&format!("{} {}\n", stored[0], pack.len())),
        "{listed}"
    );
    let (status, served) = request(
        &n1,
        "GET",
        &format!("/_refstore/replicate/r.git/pack/{}.pack", stored[0]),
        Some(&token()),
        b"",
    );
    assert_eq!(status, 200);
    assert!(served.len() > pack.len());
    drop(n1);

    // A node that does not replicate has no such endpoint.
    let plain = Served::start(home, &cluster.root(1), &[]);
    let (status, _) = request(&plain, "GET", list, Some(&token()), b"");
    assert_eq!(status, 404);
}

#[test]
fn a_push_is_acknowledged_once_a_peer_holds_its_pack() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    let nodes: Vec<Served> = (1..=3)
        .map(|i| cluster.start(i, &["--replicate-no-repair"]))
        .collect();
    let work = home.join("work");
    let id = commit(home, &work, "a");
    let o = push(home, &work, &nodes[0]);
    assert!(o.status.success(), "{}", stderr(&o));

    // The receiving node dies at once; its pack is on a peer already.
    let kill = Command::new("kill")
        .args(["-9", &nodes[0].pid().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    // Small as the push is, it is kept as a pack, the unit nodes exchange.
    let pushed = packs(&cluster.repo(1));
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    let holder = (2..=3)
        .find(|&i| packs(&cluster.repo(i)) == pushed)
        .expect("no peer holds the pushed pack");
    let idx = cluster
        .repo(holder)
        .join(format!("objects/pack/{}.idx", pushed[0]));
    git_ok(home, home, &["verify-pack", idx.to_str().unwrap()]);

    set_main(&cluster.repo(holder), &id);
    let cloned = clone_and_fsck(home, &nodes[holder - 1], &home.join("clone"));
    assert_eq!(cloned, id);
}

#[test]
fn without_enough_peers_a_push_is_refused_and_refs_stay() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let mut cluster = Cluster::new(home, 3, 2);
    cluster.timeout = "1";
    let n1 = cluster.start(1, &["--replicate-no-repair"]);
    // n2 takes connections and never answers; n3 is down.
    let hung = TcpListener::bind(("127.0.0.1", cluster.ports[1])).unwrap();
    let work = home.join("work");
    let id = commit(home, &work, "a");
    let o = push(home, &work, &n1);
    assert!(!o.status.success());
    let err = stderr(&o);
    assert!(
        err.contains("cluster: objects reached 1 of 2 nodes; push refused"),
        "{err}"
    );
    assert!(err.contains("[remote rejected]"), "{err}");
    let refs = git_ok(home, home, &["ls-remote", &n1.url("r.git")]);
    assert_eq!(refs, "");
    assert!(!cluster.repo(1).join("refs/heads/main").exists());

    // Once n2 answers, the same push goes through.
    drop(hung);
    let n2 = cluster.start(2, &["--replicate-no-repair"]);
    let o = push(home, &work, &n1);
    assert!(o.status.success(), "{}", stderr(&o));
    let refs = git_ok(home, home, &["ls-remote", &n1.url("r.git")]);
    assert_eq!(refs, format!("{id}\tHEAD\n{id}\trefs/heads/main\n"));
    let pushed = packs(&cluster.repo(1));
    assert!(!pushed.is_empty());
    assert_eq!(packs(&cluster.repo(2)), pushed);
    drop(n2);
}

#[test]
fn a_node_that_was_down_catches_up_on_fetch_and_by_repair() {
    catch_up("2");
}

#[test]
fn a_node_that_was_down_catches_up_on_a_protocol_v0_fetch() {
    catch_up("0");
}

/// A node down during a push catches up when a fetch in protocol
/// `version` wants what it missed; down during another, it catches up by
/// its repair at startup.
fn catch_up(version: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    let n1 = cluster.start(1, &["--replicate-no-repair"]);
    let n2 = cluster.start(2, &["--replicate-no-repair"]);
    let work = home.join("work");
    let lines: Vec<String> = (0..2000).map(|i| format!("line {i}\n")).collect();
    let first = commit_text(home, &work, "big", &lines.concat());
    let o = push(home, &work, &n1);
    assert!(o.status.success(), "{}", stderr(&o));

    // n3 was down; a fetch that wants the pushed commit makes it fetch
    // the pack from a peer before it answers.
    let n3 = cluster.start(3, &["--replicate-no-repair"]);
    assert!(packs(&cluster.repo(3)).is_empty());
    set_main(&cluster.repo(3), &first);
    let c1 = home.join("c1");
    assert_eq!(clone_and_fsck_with(home, &n3, &c1, version), first);
    let packs_before = packs(&cluster.repo(1));
    assert_eq!(packs(&cluster.repo(3)), packs_before);
    drop(n3);

    // Down again for a second push, a thin pack (a delta against the
    // first version of the file) that n2 completes before it replicates
    // it; n3's repair at startup brings it up to date before any fetch.
    let mut changed = lines;
    changed[1000] = "changed\n".to_owned();
    let second = commit_text(home, &work, "big", &changed.concat());
    let o = push(home, &work, &n2);
    assert!(o.status.success(), "{}", stderr(&o));
    let n3 = cluster.start(3, &[]);
    n3.wait_for_log("repair pass done");
    let expected = packs(&cluster.repo(2));
    assert_eq!(expected.len(), 2);
    assert_eq!(packs(&cluster.repo(3)), expected);
    // The replicated pack holds the delta's base, added by completion.
    let base = git_ok(home, &work, &["rev-parse", &format!("{first}:big")]);
    let new_pack = expected.iter().find(|p| !packs_before.contains(p)).unwrap();
    let idx = cluster.repo(3).join(format!("objects/pack/{new_pack}.idx"));
    let listed = git_ok(home, home, &["verify-pack", "-v", idx.to_str().unwrap()]);
    assert!(listed.contains(base.trim()), "{listed}");
    set_main(&cluster.repo(3), &second);
    assert_eq!(clone_and_fsck(home, &n3, &home.join("c2")), second);
    drop(n1);
}

#[test]
fn concurrent_pushes_through_every_node_each_reach_a_quorum() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    // Two workers each: pushes waiting for their peers hold every turn
    // while the peers' replication requests must still be served.
    let nodes: Vec<Served> = (1..=3)
        .map(|i| cluster.start(i, &["--replicate-no-repair", "--workers", "2"]))
        .collect();
    let pushes: Vec<(usize, String)> = (0..9)
        .map(|i| {
            let work = home.join(format!("work{i}"));
            (i % 3, commit(home, &work, &format!("f{i}")))
        })
        .collect();
    std::thread::scope(|scope| {
        for (i, (node, _)) in pushes.iter().enumerate() {
            let (nodes, work) = (&nodes, home.join(format!("work{i}")));
            scope.spawn(move || {
                let url = nodes[*node].url_as("alice", "pw", "r.git");
                let refspec = format!("main:refs/heads/b{i}");
                let o = git_net(home, &work, &["push", &url, &refspec]);
                assert!(o.status.success(), "push {i}: {}", stderr(&o));
            });
        }
    });
    for (i, (_, id)) in pushes.iter().enumerate() {
        let holders = (1..=3)
            .filter(|&n| {
                let repo = cluster.repo(n);
                git(
                    home,
                    &repo,
                    &["cat-file", "-e", &format!("{id}^{{commit}}")],
                )
                .status
                .success()
            })
            .count();
        assert!(holders >= 2, "push {i} is on {holders} node(s)");
    }
}

#[test]
fn the_repair_restores_object_copies_when_a_holder_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path();
    let cluster = Cluster::new(home, 3, 2);
    // n1 repairs every second; n2 and n3 never do, so a copy reaching n3
    // can only be n1's repair sending it.
    let n1 = cluster.start(1, &["--replicate-repair-every", "1"]);
    let n2 = cluster.start(2, &["--replicate-no-repair"]);
    let work = home.join("work");
    let id = commit(home, &work, "a");
    let o = push(home, &work, &n1);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(packs(&cluster.repo(2)), packs(&cluster.repo(1)));

    // n2, the pack's second copy, is lost; n3 comes up without it.
    drop(n2);
    let n3 = cluster.start(3, &["--replicate-no-repair"]);
    let started = std::time::Instant::now();
    while git(home, &cluster.repo(3), &["cat-file", "-e", &id])
        .status
        .code()
        != Some(0)
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(20),
            "n1's repair did not copy the pack to n3"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert_eq!(packs(&cluster.repo(3)), packs(&cluster.repo(1)));
    n1.wait_for_log("restored object_copies");
    drop(n3);
}
