//! Fault injection into a push's quarantine: every operation of creating
//! it, storing a pack and loose objects in it and migrating them fails in
//! turn with EIO (ENOSPC for writes too), under `fsync`, `batch` and
//! `none`. After each faulted run (the quarantine dropped, as a refused
//! push drops it):
//!
//! - every file of the repository outside the quarantine is as before the
//!   run or as after the fault-free run (objects appear whole or not at
//!   all; an index is never visible without its pack);
//! - no quarantine directory is left, unless the failed operation was one
//!   of its removal (best effort; git's prune removes what is left);
//! - a run that failed before its migration began changed nothing;
//! - the next write succeeds.

mod support;

use refstore_fs::flush::{BatchMechanism, FlushMethod};
use refstore_fs::sim::{Fault, SimFs};
use refstore_fs::{Op, Vfs};
use refstore_hash::ObjectFormat;
use refstore_odb::{LooseWriter, ObjectKind, PackOptions, Quarantine};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const OBJECTS: &str = "/repo/objects";
const EIO: i32 = 5;
const ENOSPC: i32 = 28;

fn git_pack() -> Vec<u8> {
    support::small_pack(tempfile::tempdir().unwrap().path(), 2)
}

fn setup() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(&Path::new(OBJECTS).join("pack")).unwrap();
    fs.sync_all();
    fs
}

fn in_quarantine(path: &Path) -> bool {
    path.to_string_lossy().contains("/tmp_objdir-incoming-")
}

/// The repository's files outside any quarantine.
fn repository(fs: &SimFs) -> BTreeMap<PathBuf, Vec<u8>> {
    fs.files()
        .into_iter()
        .filter(|(path, _)| !in_quarantine(path))
        .collect()
}

/// Quarantines a pack and two loose objects, then migrates them.
fn push(fs: &SimFs, pack: &[u8], method: FlushMethod) -> Result<(), String> {
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let text = |e: refstore_odb::OdbError| e.to_string();
    let quarantine =
        Quarantine::create(vfs, Path::new(OBJECTS), ObjectFormat::Sha1).map_err(text)?;
    let options = PackOptions {
        format: ObjectFormat::Sha1,
        method,
        batch_mechanism: BatchMechanism::Auto,
        thin_bases: None,
        keep: Some(b"receiving\n"),
        rev_index: true,
        limits: Default::default(),
    };
    quarantine.store_pack(pack, &options).map_err(text)?;
    let mut writer = quarantine.loose_writer(method, BatchMechanism::Auto);
    writer.write(ObjectKind::Blob, b"one\n").map_err(text)?;
    writer.write(ObjectKind::Blob, b"two\n").map_err(text)?;
    writer.commit().map_err(text)?;
    quarantine
        .migrate(method, BatchMechanism::Auto)
        .map_err(text)?;
    Ok(())
}

#[test]
fn every_fault_in_a_quarantined_push_fails_cleanly() {
    let pack = git_pack();
    let mut faults = 0;
    for method in [FlushMethod::Fsync, FlushMethod::Batch, FlushMethod::None] {
        let clean = setup();
        let before = repository(&clean);
        clean.start_tracing();
        push(&clean, &pack, method).unwrap();
        let trace = clean.traced_ops();
        let after = repository(&clean);
        assert!(after.len() > before.len() + 3, "{after:?}");
        // The first operation that changes the repository outside the
        // quarantine: the migration's first link.
        let migration = trace
            .iter()
            .position(|(op, path)| *op == Op::Link && !in_quarantine(path))
            .expect("the migration links objects in");
        for (index, (op, path)) in trace.iter().enumerate() {
            let errnos: &[i32] = if *op == Op::Write {
                &[EIO, ENOSPC]
            } else {
                &[EIO]
            };
            for &errno in errnos {
                let fs = setup();
                fs.inject(Fault::nth_op(index, errno));
                let result = push(&fs, &pack, method);
                faults += 1;
                let label = format!(
                    "{}: op {index} {op:?} {} errno {errno}",
                    method.name(),
                    path.display()
                );
                let now = repository(&fs);
                for (file, content) in &now {
                    if before.get(file) != Some(content) && after.get(file) != Some(content) {
                        panic!(
                            "{label}: {} is neither as before nor as after",
                            file.display()
                        );
                    }
                }
                let index_names: Vec<&PathBuf> = now
                    .keys()
                    .filter(|p| p.extension().is_some_and(|e| e == "idx"))
                    .collect();
                for idx in index_names {
                    assert!(
                        now.contains_key(&idx.with_extension("pack")),
                        "{label}: {} visible without its pack",
                        idx.display()
                    );
                }
                let removal =
                    matches!(op, Op::Unlink | Op::Rmdir | Op::ReadDir) && in_quarantine(path);
                let left = fs.dirs().iter().any(|d| in_quarantine(d));
                assert!(
                    !left || removal,
                    "{label}: the quarantine was left behind: {result:?}"
                );
                if index < migration && result.is_err() {
                    assert_eq!(
                        now, before,
                        "{label}: failed before the migration, yet changed the repository"
                    );
                }
                // The next write goes through.
                let mut writer = LooseWriter::new(
                    Arc::new(fs.clone()),
                    OBJECTS.into(),
                    ObjectFormat::Sha1,
                    FlushMethod::Fsync,
                );
                writer.write(ObjectKind::Blob, b"next\n").unwrap();
                writer
                    .commit()
                    .unwrap_or_else(|e| panic!("{label}: next write: {e}"));
            }
        }
    }
    assert!(faults > 100, "{faults} faults");
}
