//! Serving a pack holds a bounded amount of memory, whatever the size of
//! what is sent: objects whose stored base is not sent (a shallow clone of
//! an old commit) are read one delta at a time through a capped cache,
//! and no object is kept as a delta candidate unless a later object of its
//! path may use it. The heap is measured by a counting allocator around
//! the upload-pack call (this binary holds this one test, so nothing else
//! allocates meanwhile).

use refstore_fs::real::RealFs;
use refstore_odb::{Packs, StoredKind};
use refstore_protocol::upload_pack::{upload_pack, Options};
use refstore_protocol::{ProtocolVersion, Repository};
use refstore_refs::ObjectFormat;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

mod support;
use support::git_ok as git;

/// The system allocator, counting the bytes allocated and their peak.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const FILES: usize = 160;
const FILE_SIZE: usize = 256 << 10;
/// More than the caps of what serving keeps (delta bases, candidates) and
/// its buffers, less than the files sent.
const BOUND: usize = 32 << 20;

/// Text that compresses and deltifies as source code does, but differs
/// from file to file.
fn file_text(file: usize) -> String {
    let mut state = 0x9e37_79b9_7f4a_7c15u64 ^ file as u64;
    let mut text = String::with_capacity(FILE_SIZE + 64);
    let mut line = 0;
    while text.len() < FILE_SIZE {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        text.push_str(&format!("file {file} line {line}: {state:016x}\n"));
        line += 1;
    }
    text
}

/// The pack of a v2 fetch of `want`, one commit deep, and the peak heap
/// upload-pack added while making it.
fn shallow_fetch(dir: &Path, want: &str) -> (Vec<u8>, usize) {
    let input = support::fetch_request(&[&format!("want {want}"), "deepen 1", "done"]);
    let repo = refstore_repo::Repository::open(Arc::new(RealFs::new()), dir, &[])
        .and_then(Repository::serve)
        .unwrap();
    let options = Options {
        stateless_rpc: true,
        advertise_refs: false,
        version: ProtocolVersion::V2,
    };
    // The response is written into a buffer as large as the pack: that is
    // the test's, not the server's, so it is made before measuring.
    let mut response = Vec::with_capacity(2 * FILES * FILE_SIZE);
    let before = CURRENT.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    upload_pack(&repo, &options, &mut &input[..], &mut response).unwrap();
    let peak = PEAK.load(Ordering::Relaxed) - before;
    assert!(
        response.len() <= response.capacity(),
        "the response outgrew its buffer"
    );
    let pack = support::v2_pack(&response);
    (pack, peak)
}

#[test]
fn a_shallow_clone_of_old_versions_stored_as_deltas_stays_within_a_bound() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    git(path, &["init", "-q", "-b", "main"]);
    for file in 0..FILES {
        std::fs::write(path.join(format!("f{file}.txt")), file_text(file)).unwrap();
    }
    git(path, &["add", "-A"]);
    git(path, &["commit", "-q", "-m", "old"]);
    let old = git(path, &["rev-parse", "HEAD"]);
    git(path, &["branch", "old"]);
    // The new versions are larger: git makes them the stored bases and the
    // old ones deltas against them.
    for file in 0..FILES {
        let mut text = file_text(file);
        text.push_str("one more line\n");
        std::fs::write(path.join(format!("f{file}.txt")), text).unwrap();
    }
    git(path, &["commit", "-q", "-a", "-m", "new"]);
    git(path, &["repack", "-adfq"]);

    let objects = path.join(".git/objects");
    let packs = Packs::open(&objects, ObjectFormat::Sha1).unwrap();
    let old_blobs: Vec<String> = git(path, &["ls-tree", "old"])
        .lines()
        .map(|l| l.split_whitespace().nth(2).unwrap().to_owned())
        .collect();
    assert_eq!(old_blobs.len(), FILES);
    let stored_as_deltas = old_blobs
        .iter()
        .filter(|id| {
            let id = refstore_refs::ObjectId::from_hex(id.as_bytes()).unwrap();
            let at = packs.locate(&id).unwrap();
            !matches!(packs.entry(at).unwrap().kind, StoredKind::Whole(_))
        })
        .count();
    assert!(
        stored_as_deltas > FILES / 2,
        "only {stored_as_deltas} old versions are stored as deltas"
    );

    let (pack, peak) = shallow_fetch(path, &old);
    assert!(
        peak < BOUND,
        "upload-pack held {peak} bytes sending {} bytes of files",
        FILES * FILE_SIZE
    );

    // The pack is whole: the commit, its tree and every old version.
    let received = tempfile::tempdir().unwrap();
    git(received.path(), &["init", "-q", "--bare"]);
    let pack_file = received.path().join("objects/pack/received.pack");
    std::fs::write(&pack_file, &pack).unwrap();
    git(
        received.path(),
        &["index-pack", pack_file.to_str().unwrap()],
    );
    let listed = git(
        received.path(),
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname)",
        ],
    );
    let listed: std::collections::BTreeSet<&str> = listed.lines().collect();
    assert_eq!(listed.len(), FILES + 2);
    assert!(listed.contains(old.as_str()));
    assert!(old_blobs.iter().all(|id| listed.contains(id.as_str())));
}
