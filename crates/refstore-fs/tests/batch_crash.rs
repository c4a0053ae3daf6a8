//! A lock-file transaction over several files, committed through a
//! `FlushBatch`, keeps "every file old or new, and new once acknowledged" at
//! every crash point with `fsync` and `batch` (both mechanisms); with `none`
//! the crash harness finds a state that breaks it.

use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::lock::{commit_all, LockFile};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

fn path(i: usize) -> PathBuf {
    PathBuf::from(format!("/repo/refs/heads/b{}/r{i}", i % 3))
}

fn run(refs: usize, method: FlushMethod, mechanism: BatchMechanism) -> Result<(), String> {
    let sim = SimFs::new();
    for i in 0..refs {
        sim.create_dir_all(path(i).parent().unwrap()).unwrap();
        sim.create_exclusive(&path(i))
            .unwrap()
            .write_all(format!("old {i}\n").as_bytes())
            .unwrap();
    }
    sim.sync_all();
    sim.start_recording();

    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    let locks = (0..refs)
        .map(|i| {
            let mut lock = LockFile::acquire(&vfs, path(i), Duration::ZERO).unwrap();
            lock.write_all(format!("new {i}\n").as_bytes()).unwrap();
            lock
        })
        .collect();
    let mut batch = FlushBatch::new(vfs, method, Path::new("/repo")).with_mechanism(mechanism);
    commit_all(locks, &mut batch).unwrap();
    sim.acknowledge("transaction committed");

    let options = CrashOptions {
        exhaustive_limit: 64,
        samples: 16,
        seed: 7,
    };
    sim.check_crashes(&options, |crashed| {
        for i in 0..refs {
            let content = crashed
                .fs
                .read(&path(i))
                .map_err(|e| format!("ref {i} unreadable: {e}"))?;
            let content = String::from_utf8_lossy(&content);
            let new = format!("new {i}\n");
            if content == new
                || (content == format!("old {i}\n") && crashed.acknowledged.is_empty())
            {
                continue;
            }
            return Err(format!("ref {i} reads {content:?}"));
        }
        Ok(())
    })
    .map(|_| ())
    .map_err(|v| v.to_string())
}

#[test]
fn durable_methods_keep_every_ref_old_or_new() {
    for refs in [1, 10] {
        run(refs, FlushMethod::Fsync, BatchMechanism::default()).unwrap();
        run(refs, FlushMethod::Batch, BatchMechanism::Syncfs).unwrap();
        run(refs, FlushMethod::Batch, BatchMechanism::ConcurrentFsync).unwrap();
    }
}

#[test]
fn no_flushing_loses_data() {
    let violation = run(10, FlushMethod::None, BatchMechanism::default()).unwrap_err();
    assert!(violation.contains("reads"), "{violation}");
    assert!(run(1, FlushMethod::WriteoutOnly, BatchMechanism::default()).is_err());
}
