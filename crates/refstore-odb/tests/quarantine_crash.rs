//! Crash simulation of a push's quarantine: objects written into
//! `objects/tmp_objdir-incoming-*` and migrated into the repository. With
//! `fsync` and `batch`, no crash leaves an object or a visible pack in the
//! repository whose content is incomplete, and everything is in place once
//! the migration returned; a quarantine dropped without migration leaves
//! nothing in the repository. With `none` the harness finds a crash state
//! that breaks these rules.

mod support;

use refstore_fs::flush::{BatchMechanism, FlushMethod};
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_hash::ObjectFormat;
use refstore_odb::{loose_object_path, ObjectKind, PackOptions, Quarantine};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const OBJECTS: &str = "/repo/objects";

/// A pack made by git.
fn git_pack() -> Vec<u8> {
    support::small_pack(tempfile::tempdir().unwrap().path(), 3)
}

/// The repository's files (outside the quarantine) that a reader may use:
/// loose objects and pack files.
fn repository_files(files: &BTreeMap<PathBuf, Vec<u8>>) -> BTreeMap<PathBuf, Vec<u8>> {
    files
        .iter()
        .filter(|(path, _)| {
            let rel = path.strip_prefix(OBJECTS).unwrap_or(path);
            !rel.starts_with("info") && !rel.to_string_lossy().starts_with("tmp_objdir-")
        })
        .map(|(p, c)| (p.clone(), c.clone()))
        .collect()
}

fn options(method: FlushMethod) -> PackOptions<'static> {
    PackOptions {
        format: ObjectFormat::Sha1,
        method,
        batch_mechanism: BatchMechanism::Auto,
        thin_bases: None,
        keep: Some(b"receiving\n"),
        rev_index: true,
        limits: Default::default(),
    }
}

fn crash_test(method: FlushMethod) -> Result<usize, String> {
    let input = git_pack();
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new("/repo/objects/pack")).unwrap();
    sim.sync_all();
    sim.start_recording();
    let quarantine =
        Quarantine::create(vfs.clone(), Path::new(OBJECTS), ObjectFormat::Sha1).unwrap();
    let stored = quarantine
        .store_pack(&input[..], &options(method))
        .map_err(|e| e.to_string())?;
    let mut writer = quarantine.loose_writer(method, BatchMechanism::Auto);
    let blob = writer.write(ObjectKind::Blob, b"pushed loose\n").unwrap();
    writer.commit().unwrap();
    // What the repository holds once the migration is done.
    let pack_name = stored.pack_path.file_name().unwrap().to_owned();
    let index_name = stored.index_path.file_name().unwrap().to_owned();
    let migrated = quarantine
        .migrate(method, BatchMechanism::Auto)
        .map_err(|e| e.to_string())?;
    sim.acknowledge("migrated");
    let pack_dir = Path::new(OBJECTS).join("pack");
    let final_pack = pack_dir.join(&pack_name);
    let final_index = pack_dir.join(&index_name);
    let final_blob = loose_object_path(Path::new(OBJECTS), &blob);
    let expected = repository_files(&sim.files());
    for path in [&final_pack, &final_index, &final_blob] {
        if !expected.contains_key(path) {
            return Err(format!("{} is missing after the migration", path.display()));
        }
    }
    if migrated.keep_files != [final_pack.with_extension("keep")] {
        return Err(format!("keep files: {:?}", migrated.keep_files));
    }
    if sim
        .dirs()
        .iter()
        .any(|d| d.to_string_lossy().contains("tmp_objdir"))
    {
        return Err("the quarantine is left after the migration".into());
    }
    let report = sim
        .check_crashes(&CrashOptions::default(), |crashed| {
            let files = repository_files(&crashed.fs.files());
            // Whatever is in the repository is complete.
            for (path, content) in &files {
                if expected.get(path) != Some(content) {
                    return Err(format!(
                        "{} holds {} bytes, not the {} migrated",
                        path.display(),
                        content.len(),
                        expected.get(path).map_or(0, Vec::len)
                    ));
                }
            }
            if files.contains_key(&final_index) && !files.contains_key(&final_pack) {
                return Err("index visible without its pack".into());
            }
            if !crashed.acknowledged.is_empty() && files != expected {
                return Err("acknowledged migration is not all there".into());
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn durable_methods_migrate_complete_objects() {
    for method in [FlushMethod::Fsync, FlushMethod::Batch] {
        let states = crash_test(method).unwrap_or_else(|e| panic!("{}: {e}", method.name()));
        assert!(states > 5, "{} checked {states} states", method.name());
    }
}

#[test]
fn method_none_can_lose_migrated_objects() {
    let err = crash_test(FlushMethod::None).expect_err("some crash state must break the rules");
    assert!(
        err.contains("bytes") || err.contains("not all there"),
        "{err}"
    );
}

#[test]
fn a_dropped_quarantine_leaves_nothing() {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new("/repo/objects/pack")).unwrap();
    let before = (sim.files(), sim.dirs());
    let quarantine =
        Quarantine::create(vfs.clone(), Path::new(OBJECTS), ObjectFormat::Sha1).unwrap();
    quarantine
        .store_pack(&git_pack()[..], &options(FlushMethod::Batch))
        .unwrap();
    let mut writer = quarantine.loose_writer(FlushMethod::Batch, BatchMechanism::Auto);
    writer.write(ObjectKind::Blob, b"refused\n").unwrap();
    writer.commit().unwrap();
    assert!(sim.files().len() > before.0.len());
    drop(quarantine);
    assert_eq!((sim.files(), sim.dirs()), before);
}
