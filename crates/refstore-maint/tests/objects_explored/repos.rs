//! The repositories the object explorations start from: built once per
//! test with the machine's git (fixed identities and dates, so every
//! build has the same object ids), then copied, file times included, to a
//! fresh directory for every schedule.

use refstore_testsupport::{stderr, Git};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

/// `git <args>` in `dir` (its home too) with `input` on stdin, isolated
/// from the user's configuration, with fixed dates: whether it succeeded,
/// its output and its errors.
pub fn git_with(dir: &Path, args: &[&str], input: &[u8]) -> (bool, Vec<u8>, String) {
    let out = Git::at(dir)
        .no_global_config()
        .fixed_dates()
        .run_with(args, input);
    let errors = stderr(&out);
    (out.status.success(), out.stdout, errors)
}

/// `git <args>` in `dir`, which must succeed: its output, trimmed.
pub fn git(dir: &Path, args: &[&str]) -> String {
    git_in(dir, args, b"")
}

/// `git <args>` in `dir` with `input`, which must succeed: its output,
/// trimmed.
pub fn git_in(dir: &Path, args: &[&str], input: &[u8]) -> String {
    let (ok, out, err) = git_with(dir, args, input);
    assert!(ok, "git {args:?} in {}: {err}", dir.display());
    String::from_utf8(out).unwrap().trim().to_owned()
}

/// A directory for one schedule's repository: in memory where the machine
/// has `/dev/shm`, so that the flushes of a run cost nothing.
pub fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(dir) = tempfile::Builder::new()
            .prefix("refstore-explore-")
            .tempdir_in(shm)
        {
            return dir;
        }
    }
    tempfile::tempdir().unwrap()
}

/// Sets a file's modification time to `days` days ago: an object older
/// than `gc.pruneExpire` (two weeks), whatever the clock does during a run.
pub fn age(path: &Path, days: u64) {
    let when = SystemTime::now() - Duration::from_secs(days * 86_400);
    std::fs::File::open(path)
        .and_then(|f| f.set_modified(when))
        .unwrap_or_else(|e| panic!("cannot age {}: {e}", path.display()));
}

/// The loose object file of `id` in `git_dir`.
pub fn loose_path(git_dir: &Path, id: &str) -> PathBuf {
    git_dir.join("objects").join(&id[..2]).join(&id[2..])
}

/// Copies the tree at `from` to `to` (which must not exist), keeping file
/// times and permissions: prune's judgements of age are the template's.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir(to).unwrap();
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .unwrap()
        .map(|e| e.unwrap())
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let (source, target) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&source, &target);
        } else {
            std::fs::copy(&source, &target).unwrap();
            let modified = entry.metadata().unwrap().modified().unwrap();
            std::fs::File::open(&target)
                .and_then(|f| f.set_modified(modified))
                .unwrap();
        }
    }
}

/// The objects the templates are made of, the same ids in every
/// repository they are written to.
#[derive(Debug, Clone)]
pub struct Ids {
    /// The empty tree.
    pub empty_tree: String,
    /// `refs/heads/main`: a commit of the empty tree.
    pub base: String,
    /// A blob, a tree holding it and a commit of that tree, no ref naming
    /// any of them: old history, which the push brings again.
    pub old_blob: String,
    pub old_tree: String,
    pub old_commit: String,
    /// An old blob nothing names or brings: prune's to remove.
    pub junk: String,
}

/// Writes the template objects into the repository at `git_dir`.
pub fn write_objects(git_dir: &Path) -> Ids {
    let empty_tree = git_in(git_dir, &["mktree"], b"");
    let base = git(git_dir, &["commit-tree", &empty_tree, "-m", "base"]);
    let old_blob = git_in(
        git_dir,
        &["hash-object", "-w", "--stdin"],
        b"pushed again\n",
    );
    let old_tree = git_in(
        git_dir,
        &["mktree"],
        format!("100644 blob {old_blob}\told\n").as_bytes(),
    );
    let old_commit = git(git_dir, &["commit-tree", &old_tree, "-m", "old"]);
    let junk = git_in(
        git_dir,
        &["hash-object", "-w", "--stdin"],
        b"nobody wants this\n",
    );
    Ids {
        empty_tree,
        base,
        old_blob,
        old_tree,
        old_commit,
        junk,
    }
}

/// A commit the client makes on top of the old history: a new blob next
/// to the old one, written into `git_dir`. Returns the commit.
pub fn client_commit(git_dir: &Path, ids: &Ids, label: &str) -> String {
    let new_blob = git_in(
        git_dir,
        &["hash-object", "-w", "--stdin"],
        format!("new in {label}\n").as_bytes(),
    );
    let tree = git_in(
        git_dir,
        &["mktree"],
        format!(
            "100644 blob {new_blob}\tnew\n100644 blob {}\told\n",
            ids.old_blob
        )
        .as_bytes(),
    );
    git(
        git_dir,
        &["commit-tree", &tree, "-p", &ids.old_commit, "-m", label],
    )
}

/// The pack a client sends to push `tip` to a repository whose refs name
/// `base`: everything reachable from `tip` and not from `base`, so the
/// old history the repository already holds too.
pub fn push_pack(client: &Path, tip: &str, base: &str) -> Vec<u8> {
    let (ok, pack, err) = git_with(
        client,
        &["pack-objects", "--revs", "--stdout", "-q"],
        format!("{tip}\n^{base}\n").as_bytes(),
    );
    assert!(ok, "git pack-objects: {err}");
    pack
}

/// Packs the objects `ids` of `git_dir` into one pack of their own (and
/// removes their loose copies).
pub fn pack_objects(git_dir: &Path, ids: &[&str]) {
    let list: String = ids.iter().map(|id| format!("{id}\n")).collect();
    git_in(
        git_dir,
        &["pack-objects", "-q", "objects/pack/pack"],
        list.as_bytes(),
    );
    git(git_dir, &["prune-packed"]);
}
