//! Pruning while a push is in flight: a push that brings objects the
//! repository already holds loose (old and unreachable, so prunable)
//! freshens them when its quarantine migrates, and only then writes the
//! refs that make them reachable. A prune that read the refs before those
//! refs were written must still keep the objects. The push's migration is
//! placed, with [`Interpose`], at the moment the prune reads the refs.

use refstore_fs::flush::{BatchMechanism, FlushMethod};
use refstore_fs::interpose::Interpose;
use refstore_fs::real::RealFs;
use refstore_fs::{Op, Vfs};
use refstore_maint::{Options, Repo, Task};
use refstore_odb::{Odb, Quarantine};
use refstore_refs::{ObjectFormat, ObjectId};
use refstore_testsupport::Git;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

fn git(dir: &Path, args: &[&str], input: &str) -> String {
    Git::at(dir)
        .ok_with(args, input.as_bytes())
        .trim()
        .to_owned()
}

/// Makes a loose object look a month old, older than `gc.pruneExpire`.
fn age(objects: &Path, id: &str) {
    let path = objects.join(&id[..2]).join(&id[2..]);
    let status = Command::new("touch")
        .args(["-d", "30 days ago"])
        .arg(&path)
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn objects_a_push_freshened_while_the_refs_were_read_are_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let git_dir = tmp.path().join("r.git");
    git(tmp.path(), &["init", "-q", "--bare", "r.git"], "");
    let objects = git_dir.join("objects");
    // A reachable history, and an old commit no ref names.
    let blob = git(
        &git_dir,
        &["hash-object", "-w", "--stdin"],
        "pushed again\n",
    );
    let tree = git(
        &git_dir,
        &["mktree"],
        &format!("100644 blob {blob}\tfile\n"),
    );
    let commit = git(&git_dir, &["commit-tree", &tree, "-m", "old"], "");
    let empty = git(&git_dir, &["mktree"], "");
    let base = git(&git_dir, &["commit-tree", &empty, "-m", "base"], "");
    git(&git_dir, &["update-ref", "refs/heads/main", &base], "");
    for id in [&blob, &tree, &commit] {
        age(&objects, id);
    }

    // The push brings the old commit again: its quarantine holds copies.
    let real: Arc<dyn Vfs> = Arc::new(RealFs::new());
    let quarantine = Quarantine::create(real.clone(), &objects, ObjectFormat::Sha1).unwrap();
    let mut writer = quarantine.loose_writer(FlushMethod::Fsync, BatchMechanism::default());
    let odb = Odb::open(&objects, ObjectFormat::Sha1).unwrap();
    for id in [&blob, &tree, &commit] {
        let id = ObjectId::from_hex_in(id.as_bytes(), ObjectFormat::Sha1).unwrap();
        let (kind, data) = odb.read(&id).unwrap().unwrap();
        writer.write(kind, &data).unwrap();
    }
    writer.commit().unwrap();

    // It migrates when the prune starts reading refs.
    let in_flight = Arc::new(Mutex::new(Some(quarantine)));
    let armed = Arc::new(AtomicBool::new(false));
    let vfs: Arc<dyn Vfs> = {
        let (in_flight, armed, refs) = (in_flight.clone(), armed.clone(), git_dir.join("refs"));
        let packed_refs = git_dir.join("packed-refs");
        Arc::new(Interpose::new(real, move |op, path| {
            let reads_refs = matches!(op, Op::ReadDir | Op::Read | Op::Stat)
                && (path.starts_with(&refs) || path == packed_refs);
            if reads_refs && armed.swap(false, Ordering::SeqCst) {
                let quarantine = in_flight.lock().unwrap().take().unwrap();
                quarantine
                    .migrate(FlushMethod::Fsync, BatchMechanism::default())
                    .unwrap();
            }
        }))
    };
    let opened = refstore_repo::Repository::open(vfs, &git_dir, &[]).unwrap();
    let repo = Repo::new(opened).unwrap();
    armed.store(true, Ordering::SeqCst);
    let options = Options {
        auto: false,
        tasks: vec![Task::LooseObjects],
    };
    let reports = refstore_maint::run(&repo, &options).unwrap().unwrap();
    assert!(
        in_flight.lock().unwrap().is_none(),
        "the prune read no refs: the push never migrated"
    );

    // Then the push writes its ref: everything it names is there.
    git(&git_dir, &["update-ref", "refs/heads/pushed", &commit], "");
    git(&git_dir, &["fsck", "--strict", "--no-progress"], "");
    for id in [&blob, &tree, &commit] {
        git(&git_dir, &["cat-file", "-e", id], "");
    }
    eprintln!("{}", reports[0].summary);
}
