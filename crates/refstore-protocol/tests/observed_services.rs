//! upload-pack reports every pack it sends (objects and bytes, as sent)
//! and receive-pack every push (the refs it updated) to the process's
//! observer.
//!
//! The observer is process-wide; it records each report on the thread
//! that made it, so the tests of this binary, each on its own thread, see
//! only their own.

use refstore_fs::observe::{self, Observer};
use refstore_fs::real::RealFs;
use refstore_protocol::{receive_pack, upload_pack, ProtocolVersion, Repository};
use std::cell::RefCell;
use std::sync::Arc;
use std::time::Duration;

const ZERO: &str = "0000000000000000000000000000000000000000";

#[derive(Default)]
struct Seen {
    packs: Vec<(u64, u64)>,
    pushes: Vec<usize>,
    commits: Vec<usize>,
}

thread_local! {
    static SEEN: RefCell<Seen> = RefCell::new(Seen::default());
}

struct Recorder;

impl Observer for Recorder {
    fn pack_sent(&self, objects: u64, bytes: u64) {
        SEEN.with(|s| s.borrow_mut().packs.push((objects, bytes)));
    }

    fn push_received(&self, refs_updated: usize) {
        SEEN.with(|s| s.borrow_mut().pushes.push(refs_updated));
    }

    fn transaction_committed(&self, refs: usize, _took: Duration) {
        SEEN.with(|s| s.borrow_mut().commits.push(refs));
    }
}

fn take() -> Seen {
    observe::install(Arc::new(Recorder));
    SEEN.with(|s| std::mem::take(&mut *s.borrow_mut()))
}

mod support;
use support::pkt;

/// The push target of [`support::push_target`], opened.
fn repository() -> (tempfile::TempDir, Repository, String) {
    let (tmp, commit) = support::push_target();
    let dir = tmp.path().join("repo.git");
    let repo = refstore_repo::Repository::open(Arc::new(RealFs::new()), &dir, &[])
        .and_then(Repository::serve)
        .unwrap();
    (tmp, repo, commit)
}

#[test]
fn a_pack_sent_is_reported_with_its_objects_and_length() {
    let (_tmp, repo, commit) = repository();
    take();
    // Protocol v0 without side-band: NAK, then the raw pack.
    let input = [
        pkt(format!("want {commit}\n").as_bytes()),
        b"0000".to_vec(),
        pkt(b"done\n"),
    ]
    .concat();
    let mut output = Vec::new();
    let options = upload_pack::Options {
        stateless_rpc: true,
        advertise_refs: false,
        version: ProtocolVersion::V0,
    };
    upload_pack::upload_pack(&repo, &options, &mut &input[..], &mut output).unwrap();
    let pack = output.strip_prefix(b"0008NAK\n").expect("NAK first");
    assert_eq!(&pack[..4], b"PACK");
    // The commit and its empty tree.
    assert_eq!(take().packs, [(2, pack.len() as u64)]);

    // An advertisement sends no pack.
    let options = upload_pack::Options {
        advertise_refs: true,
        ..options
    };
    upload_pack::upload_pack(&repo, &options, &mut &b""[..], &mut Vec::new()).unwrap();
    assert!(take().packs.is_empty());
}

/// Runs a push of `commands` (no pack: deletions only).
fn push(repo: &Repository, commands: &[String]) {
    let mut input = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let line = if i == 0 {
            format!("{command}\0report-status")
        } else {
            command.clone()
        };
        input.extend(pkt(line.as_bytes()));
    }
    input.extend_from_slice(b"0000");
    let options = receive_pack::Options {
        stateless_rpc: true,
        ..receive_pack::Options::default()
    };
    receive_pack::receive_pack(repo, &options, &mut &input[..], &mut Vec::new()).unwrap();
}

#[test]
fn a_push_is_reported_with_the_refs_it_updated() {
    let (_tmp, repo, commit) = repository();
    take();
    // receive.denyDeletes refuses the branch; the tag goes.
    push(
        &repo,
        &[
            format!("{commit} {ZERO} refs/heads/gone"),
            format!("{commit} {ZERO} refs/tags/t"),
        ],
    );
    let seen = take();
    assert_eq!(seen.pushes, [1]);
    assert_eq!(seen.commits, [1]);

    // Everything refused: a push of nothing.
    push(&repo, &[format!("{commit} {ZERO} refs/heads/main")]);
    let seen = take();
    assert_eq!(seen.pushes, [0]);
    assert!(seen.commits.is_empty());

    // An empty command list is no push at all.
    push(&repo, &[]);
    assert!(take().pushes.is_empty());
}
