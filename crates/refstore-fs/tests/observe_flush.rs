//! Flush points are reported to the process's observer with the mechanism
//! that carried them out, and only flush points that flushed something.
//!
//! The observer is process-wide; it records each report on the thread that
//! made it, so the tests of this binary, each on its own thread, see only
//! their own flushes.

use refstore_fs::flush::{BatchMechanism, FlushBatch, FlushMethod};
use refstore_fs::observe::{self, Observer};
use refstore_fs::sim::SimFs;
use refstore_fs::Vfs;
use std::cell::RefCell;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

thread_local! {
    static FLUSHES: RefCell<Vec<&'static str>> = const { RefCell::new(Vec::new()) };
}

struct Recorder;

impl Observer for Recorder {
    fn flushed(&self, mechanism: &'static str, _took: Duration) {
        FLUSHES.with(|f| f.borrow_mut().push(mechanism));
    }
}

/// The mechanisms reported while `files` new files in one directory are
/// written with `method`/`mechanism`, through both flush points.
fn reported(method: FlushMethod, mechanism: BatchMechanism, files: usize) -> Vec<&'static str> {
    observe::install(Arc::new(Recorder));
    FLUSHES.with(|f| f.borrow_mut().clear());
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim);
    vfs.create_dir_all(Path::new("/repo/d")).unwrap();
    let mut batch = FlushBatch::new(vfs.clone(), method, "/repo").with_mechanism(mechanism);
    for i in 0..files {
        let path = Path::new("/repo/d").join(format!("f{i}.lock"));
        let mut f = vfs.create_exclusive(&path).unwrap();
        f.write_all(b"x\n").unwrap();
        batch.stage(f).unwrap();
    }
    batch.flush_files().unwrap();
    for i in 0..files {
        let from = Path::new("/repo/d").join(format!("f{i}.lock"));
        vfs.rename(&from, &from.with_extension("")).unwrap();
    }
    batch.dir_changed(Path::new("/repo/d"));
    batch.flush_dirs().unwrap();
    // Nothing is left to flush: no more reports.
    batch.flush_files_and_dirs().unwrap();
    FLUSHES.with(|f| f.borrow().clone())
}

#[test]
fn fsync_reports_every_file_and_the_directories() {
    assert_eq!(
        reported(FlushMethod::Fsync, BatchMechanism::Auto, 3),
        ["fsync", "fsync", "fsync", "fsync"]
    );
}

#[test]
fn batch_reports_one_flush_point_each_for_data_and_directories() {
    assert_eq!(
        reported(FlushMethod::Batch, BatchMechanism::Syncfs, 3),
        ["syncfs", "syncfs"]
    );
    assert_eq!(
        reported(FlushMethod::Batch, BatchMechanism::ConcurrentFsync, 3),
        ["fdatasync", "fdatasync"]
    );
    // Auto on the simulated ext4: syncfs whatever the batch's size.
    for files in [2, 50] {
        assert_eq!(
            reported(FlushMethod::Batch, BatchMechanism::Auto, files),
            ["syncfs", "syncfs"]
        );
    }
}

#[test]
fn methods_that_do_not_flush_report_nothing() {
    assert!(reported(FlushMethod::None, BatchMechanism::Auto, 3).is_empty());
    assert!(reported(FlushMethod::WriteoutOnly, BatchMechanism::Auto, 3).is_empty());
}
