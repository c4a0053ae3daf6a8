//! Fault injection into object ingestion: every operation of storing a
//! received pack (with `.keep` and `.rev`) and of a batch of loose objects
//! fails in turn with EIO, and with ENOSPC where space is consumed, under
//! the `fsync`, `batch` and `none` flush methods. See the shared
//! `refstore_testsupport::faults` for the rules every faulted run is held to; on top
//! of them a pack is all-or-nothing (a failed store leaves the directory as
//! it was, unless the pack was already visible when a last flush failed),
//! and loose objects appear whole or not at all.

mod support;

use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::SimFs;
use refstore_fs::Vfs;
use refstore_hash::ObjectFormat;
use refstore_odb::{loose_object_path, store_pack, LooseWriter, ObjectKind, PackOptions};
use std::path::Path;
use std::sync::Arc;
use support::faults::{self, Case, Faulted, Tally, METHODS};

const OBJECTS: &str = "/repo/objects";

/// A small pack made by git.
fn git_pack() -> Vec<u8> {
    support::small_pack(tempfile::tempdir().unwrap().path(), 3)
}

/// An object directory holding one loose object and an older pack's files.
fn setup() -> SimFs {
    let fs = SimFs::new();
    fs.create_dir_all(&Path::new(OBJECTS).join("pack")).unwrap();
    let mut writer = LooseWriter::new(
        Arc::new(fs.clone()),
        OBJECTS.into(),
        ObjectFormat::Sha1,
        FlushMethod::None,
    );
    writer.write(ObjectKind::Blob, b"already here\n").unwrap();
    writer.commit().unwrap();
    for (name, content) in [("pack-old.pack", &b"PACK"[..]), ("pack-old.idx", b"idx")] {
        fs.create_exclusive(&Path::new(OBJECTS).join("pack").join(name))
            .unwrap()
            .write_all(content)
            .unwrap();
    }
    fs.sync_all();
    fs
}

/// Every object-database file (temporary files aside) and its length.
fn state(fs: &SimFs) -> Result<String, String> {
    Ok(fs
        .files()
        .into_iter()
        .filter(|(path, _)| !faults::is_leftover(path))
        .map(|(path, content)| format!("{} {}\n", path.display(), content.len()))
        .collect())
}

/// The next write after a fault: one more loose object, readable.
fn next_write(fs: &SimFs) -> Result<(), String> {
    let vfs: Arc<dyn Vfs> = Arc::new(fs.clone());
    let mut writer = LooseWriter::new(
        vfs.clone(),
        OBJECTS.into(),
        ObjectFormat::Sha1,
        FlushMethod::Fsync,
    );
    let id = writer
        .write(ObjectKind::Blob, b"written after the fault\n")
        .map_err(|e| e.to_string())?;
    writer.commit().map_err(|e| e.to_string())?;
    let path = loose_object_path(Path::new(OBJECTS), &id);
    match vfs.read(&path) {
        Ok(bytes) if !bytes.is_empty() => Ok(()),
        other => Err(format!("the next object reads back as {other:?}")),
    }
}

/// A pack store that failed: nothing changed, or the pack is wholly
/// visible (only a flush after its index was named failed).
fn pack_all_or_nothing(run: &Faulted<'_>) -> Result<(), String> {
    let now = faults::files(run.fs);
    if now == *run.before || run.state_now == run.state_after {
        Ok(())
    } else {
        Err(format!(
            "the pack directory is neither as before nor as after:\n{}",
            faults::diff(run.before, &now)
        ))
    }
}

#[test]
fn every_fault_in_storing_a_pack_fails_cleanly() {
    let input = git_pack();
    let mut tally = Tally::default();
    for method in METHODS {
        let workload = |fs: &SimFs| {
            let options = PackOptions {
                format: ObjectFormat::Sha1,
                method,
                batch_mechanism: refstore_fs::flush::BatchMechanism::Auto,
                thin_bases: None,
                keep: Some(b"receive-pack 1 on host\n"),
                rev_index: true,
                limits: Default::default(),
            };
            store_pack(
                Arc::new(fs.clone()),
                Path::new(OBJECTS),
                &input[..],
                &options,
            )
            .map(|_| ())
            .map_err(|e| e.to_string())
        };
        tally.add(faults::run(&Case {
            label: format!("index-pack, {}", method.name()),
            setup: &setup,
            workload: &workload,
            state: &state,
            partial: Some(&pack_all_or_nothing),
            absorbed: None,
            next: &next_write,
        }));
    }
    tally.print("pack ingestion");
    assert!(tally.failed > 50, "{tally:?}");
}

#[test]
fn every_fault_in_a_loose_object_batch_fails_cleanly() {
    let mut tally = Tally::default();
    for method in METHODS {
        let workload = |fs: &SimFs| {
            let mut writer = LooseWriter::new(
                Arc::new(fs.clone()),
                OBJECTS.into(),
                ObjectFormat::Sha1,
                method,
            );
            let mut write = |content: &[u8]| {
                writer
                    .write(ObjectKind::Blob, content)
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            };
            write(b"already here\n")?;
            for i in 0..5 {
                write(format!("object {i}\n").repeat(i + 1).as_bytes())?;
            }
            writer.commit().map_err(|e| e.to_string())
        };
        tally.add(faults::run(&Case {
            label: format!("loose objects, {}", method.name()),
            setup: &setup,
            workload: &workload,
            state: &state,
            partial: None,
            absorbed: None,
            next: &next_write,
        }));
    }
    tally.print("loose object batches");
    assert!(tally.failed > 100, "{tally:?}");
}
