//! A node's replication against peers that answer the replication
//! endpoint on loopback ([`peer`]), each holding repositories made by
//! git: a push's packs sent until `object_copies` nodes hold them
//! ([`quorum`]), catching up what the node lacks or what the cluster's
//! refs reach ([`catch_up`]), and the repair of copies and of every
//! repository below a root ([`repair`]).

mod catch_up;
mod peer;
mod quorum;
mod repair;

use refstore_fs::real::RealFs;
use refstore_fs::Vfs;
use refstore_replica::{Peers, Replica};
use refstore_testsupport::fixtures::Work;
use refstore_testsupport::{git_ok, Git};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// The secret every node of these tests shares.
pub const SECRET: &[u8] = b"correct horse battery staple";

/// The replication of the node `this` among `others` (name, URL), keeping
/// `copies` of every push, each peer given `timeout` to answer.
pub fn replica(others: &[(String, String)], copies: usize, timeout: Duration) -> Replica {
    let mut nodes = vec![("this".to_owned(), "http://127.0.0.1:1".to_owned())];
    nodes.extend(others.iter().cloned());
    let mut peers = Peers::new("this".to_owned(), nodes, copies, SECRET.to_vec());
    peers.timeout = timeout;
    peers.check().unwrap();
    Replica::new(peers)
}

/// An empty bare repository at `git_dir`.
pub fn bare(home: &Path, git_dir: &Path) {
    git_ok(
        home,
        home,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            git_dir.to_str().unwrap(),
        ],
    );
}

/// The repository at `git_dir` as a node serves it.
pub fn open(git_dir: &Path) -> refstore_protocol::Repository {
    let vfs: Arc<dyn Vfs> = Arc::new(RealFs::new());
    let opened = refstore_repo::Repository::open(vfs, git_dir, &[]).unwrap();
    refstore_protocol::Repository::serve(opened).unwrap()
}

/// Writes a pack of the objects `revs` name (`rev-list --objects`
/// arguments, `^` excluding) from `work` into the repository at
/// `git_dir`, with `compression` (the pack's bytes, so its name, differ
/// with it); the pack's name.
pub fn pack_into(work: &Work, git_dir: &Path, revs: &[&str], compression: u8) -> String {
    let base = git_dir.join("objects/pack/pack");
    let input: String = revs.iter().map(|r| format!("{r}\n")).collect();
    let hash = Git::new(&work.home, &work.path).ok_with(
        &[
            "-c",
            &format!("pack.compression={compression}"),
            "pack-objects",
            "-q",
            "--revs",
            base.to_str().unwrap(),
        ],
        input.as_bytes(),
    );
    format!("pack-{}", hash.trim())
}

/// The pack names of the repository at `git_dir`, sorted.
pub fn packs_of(git_dir: &Path) -> Vec<String> {
    refstore_replica::packs::list(&open(git_dir))
        .unwrap()
        .into_iter()
        .map(|(name, _)| name)
        .collect()
}

/// Whether git finds everything `tip` reaches in the repository at
/// `git_dir` (its ref `refs/heads/check` set there for the check).
pub fn complete(home: &Path, git_dir: &Path, tip: &str) -> bool {
    let set = Git::new(home, git_dir).run(&["update-ref", "refs/heads/check", tip]);
    set.status.success()
        && Git::new(home, git_dir)
            .run(&["fsck", "--connectivity-only", "--no-dangling"])
            .status
            .success()
}

/// A loopback URL nothing listens on right now: a node that is down.
pub fn down() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    format!("http://{}", listener.local_addr().unwrap())
}
