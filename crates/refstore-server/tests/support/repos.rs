//! Repositories and files several tests of a binary only read, made once
//! per test binary in a directory of its own below Cargo's temporary
//! directory for tests. A run leaves its directory behind (statics are
//! never dropped); the next run of any binary removes those of processes
//! that have ended.

use refstore_testsupport::fixtures::{self, Work};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// This process's directory of things made once.
fn process_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let base = Path::new(env!("CARGO_TARGET_TMPDIR")).join("refstore-server-tests");
        std::fs::create_dir_all(&base).unwrap();
        for entry in std::fs::read_dir(&base).unwrap().flatten() {
            let pid = entry.file_name().to_string_lossy().into_owned();
            let ended = pid
                .parse::<u32>()
                .is_ok_and(|pid| !Path::new(&format!("/proc/{pid}")).exists());
            if ended {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
        let dir = base.join(std::process::id().to_string());
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    })
}

/// A directory `name` of this process's, made on first use.
pub fn shared_dir(name: &str) -> &'static Path {
    static DIRS: OnceLock<std::sync::Mutex<Vec<&'static Path>>> = OnceLock::new();
    let dir = process_dir().join(name);
    let mut made = DIRS.get_or_init(Default::default).lock().unwrap();
    if let Some(found) = made.iter().find(|d| **d == dir) {
        return found;
    }
    std::fs::create_dir_all(&dir).unwrap();
    let leaked: &'static Path = Box::leak(dir.into_boxed_path());
    made.push(leaked);
    leaked
}

/// [`fixtures::three_commits`], made once: commits `a`, `b` and `c`,
/// `topic` at `b`, the annotated tag `v1` of `a`. Tests clone it; none
/// writes to it.
pub fn three_commits() -> &'static Path {
    static WORK: OnceLock<PathBuf> = OnceLock::new();
    WORK.get_or_init(|| {
        let home = shared_dir("three-commits");
        fixtures::three_commits(home).path
    })
}

/// A work repository `home/work` with the history of [`three_commits`]
/// (a clone of it, `origin` removed), for a test to commit in.
pub fn three_commits_work(home: &Path) -> Work {
    let work = home.join("work");
    refstore_testsupport::git_ok(
        home,
        home,
        &[
            "clone",
            "-q",
            three_commits().to_str().unwrap(),
            work.to_str().unwrap(),
        ],
    );
    let work = Work::at(home, &work);
    work.git(&["branch", "-q", "topic", "origin/topic"]);
    work.git(&["remote", "remove", "origin"]);
    work
}

/// A bare copy of [`three_commits`] at `to`.
pub fn serve_three_commits(home: &Path, to: &Path) {
    fixtures::bare_clone(home, three_commits(), to);
}

/// An empty bare reftable repository at `git_dir` (HEAD naming
/// `refs/heads/main`): made by git in the files format and migrated by
/// refstore's migration (git 2.39 cannot make one).
pub fn reftable_repo(home: &Path, git_dir: &Path) {
    refstore_testsupport::git_ok(
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
    let vfs: std::sync::Arc<dyn refstore_fs::Vfs> =
        std::sync::Arc::new(refstore_fs::real::RealFs::new());
    let repo = refstore_repo::Repository::open(vfs, git_dir, &[]).unwrap();
    let refs = repo.refs().unwrap();
    let files = refs
        .as_files()
        .expect("a new repository of git's is in the files format");
    let options = refstore_refs::reftable::ReftableOptions::new(files.object_format());
    refstore_refs::reftable::migrate::files_to_reftable(
        files,
        git_dir,
        &options,
        refstore_fs::flush::FlushMethod::Fsync,
        false,
        &refstore_refs::reftable::migrate::NoProgress,
    )
    .unwrap();
}

/// The refs of the repository at `git_dir` as refstore reads them (either
/// format), `<id> <name>` lines sorted by name; symbolic refs left out.
pub fn refstore_refs(git_dir: &Path) -> String {
    let vfs: std::sync::Arc<dyn refstore_fs::Vfs> =
        std::sync::Arc::new(refstore_fs::real::RealFs::new());
    let repo = refstore_repo::Repository::open(vfs, git_dir, &[]).unwrap();
    let listing = repo.refs().unwrap().list(b"").unwrap();
    listing
        .refs
        .iter()
        .filter_map(|r| match &r.target {
            refstore_refs::value::Target::Object(id) => Some(format!("{id} {}\n", r.name)),
            refstore_refs::value::Target::Symbolic(_) => None,
        })
        .collect()
}
