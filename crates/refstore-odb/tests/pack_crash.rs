//! Crash simulation of storing a pack: with `fsync` and `batch` an index
//! (which makes a pack visible) never appears before both files are
//! complete, and both are present once the pack was acknowledged; with
//! `none` the harness finds a visible index over an incomplete pack.

mod support;

use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_hash::ObjectFormat;
use refstore_odb::{store_pack, PackOptions};
use std::path::Path;
use std::sync::Arc;
use support::{run, run_with_input};

const OBJECTS: &str = "/repo/objects";

/// A pack made by git, and the .pack and .idx git's index-pack makes of it.
fn git_pack() -> (Vec<u8>, Vec<u8>, Vec<u8>) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let pack = support::small_pack(dir, 3);
    let target = dir.join("target");
    run(dir, &["init", "-q", "--bare", "target"]);
    let out = run_with_input(&target, &["index-pack", "--stdin"], &pack);
    let name = String::from_utf8(out).unwrap();
    let hash = name.trim().trim_start_matches("pack\t");
    let base = target.join(format!("objects/pack/pack-{hash}"));
    (
        pack,
        std::fs::read(base.with_extension("pack")).unwrap(),
        std::fs::read(base.with_extension("idx")).unwrap(),
    )
}

fn crash_test(method: FlushMethod, durability: bool) -> Result<usize, String> {
    let (input, git_pack, git_index) = git_pack();
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    sim.create_dir_all(Path::new("/repo/objects/pack")).unwrap();
    sim.sync_all();
    sim.start_recording();
    let options = PackOptions {
        format: ObjectFormat::Sha1,
        method,
        batch_mechanism: refstore_fs::flush::BatchMechanism::Auto,
        thin_bases: None,
        keep: Some(b"receiving\n"),
        rev_index: true,
        limits: Default::default(),
    };
    let stored =
        store_pack(vfs, Path::new(OBJECTS), &input[..], &options).map_err(|e| e.to_string())?;
    sim.acknowledge("pack stored");
    let report = sim
        .check_crashes(&CrashOptions::default(), |crashed| {
            let files = crashed.fs.files();
            if let Some(index) = files.get(&stored.index_path) {
                if *index != git_index {
                    return Err(format!(
                        "index is visible with {} of {} bytes right",
                        index.len(),
                        git_index.len()
                    ));
                }
                match files.get(&stored.pack_path) {
                    Some(pack) if *pack == git_pack => {}
                    Some(pack) => {
                        return Err(format!(
                            "index visible over a pack of {} bytes, not {}",
                            pack.len(),
                            git_pack.len()
                        ))
                    }
                    None => return Err("index visible without its pack".into()),
                }
                if files
                    .get(stored.keep_path.as_ref().unwrap())
                    .map(Vec::as_slice)
                    != Some(b"receiving\n")
                {
                    return Err("pack visible without its complete .keep file".into());
                }
            } else if durability && !crashed.acknowledged.is_empty() {
                return Err("acknowledged pack is missing".into());
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn durable_methods_never_expose_an_incomplete_pack() {
    for method in [FlushMethod::Fsync, FlushMethod::Batch] {
        let states = crash_test(method, true).unwrap_or_else(|e| panic!("{}: {e}", method.name()));
        assert!(states > 5, "{} checked {states} states", method.name());
    }
}

#[test]
fn method_none_can_expose_an_incomplete_pack() {
    let err =
        crash_test(FlushMethod::None, false).expect_err("some crash state must break the pack");
    assert!(err.contains("bytes"), "{err}");
}
