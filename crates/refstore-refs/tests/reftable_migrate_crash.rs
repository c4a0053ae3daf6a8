//! Crash simulation of `refs migrate`, both ways: at every crash point the
//! repository, opened in the format its config names, holds every ref at
//! its value, and after the migration returned it is in the new format.

use refstore_fs::config::RefStorage;
use refstore_fs::flush::FlushMethod;
use refstore_fs::sim::{CrashOptions, SimFs};
use refstore_fs::Vfs;
use refstore_refs::backend::{self, Location};
use refstore_refs::files::FilesBackend;
use refstore_refs::reftable::migrate::{files_to_reftable, reftable_to_files, NoProgress};
use refstore_refs::reftable::{ReftableBackend, ReftableOptions};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use std::path::Path;
use std::sync::Arc;

const GIT_DIR: &str = "/repo/.git";

fn id(n: u32) -> ObjectId {
    format!("{n:040x}").parse().unwrap()
}

fn write(sim: &SimFs, path: &str, content: &[u8]) {
    let path = Path::new(GIT_DIR).join(path);
    sim.create_dir_all(path.parent().unwrap()).unwrap();
    sim.create_exclusive(&path)
        .unwrap()
        .write_all(content)
        .unwrap();
}

/// Every ref as (name, value), HEAD first, in the format the config names.
fn refs(vfs: Arc<dyn Vfs>) -> Result<(RefStorage, Vec<(String, Target)>), String> {
    let config = vfs
        .read(&Path::new(GIT_DIR).join("config"))
        .map_err(|e| e.to_string())?;
    let storage = match String::from_utf8_lossy(&config).contains("refstorage = reftable") {
        true => RefStorage::Reftable,
        false => RefStorage::Files,
    };
    let location = Location {
        git_dir: GIT_DIR.into(),
        common_dir: GIT_DIR.into(),
        object_format: ObjectFormat::Sha1,
        storage,
    };
    let store = backend::open(vfs, &location).map_err(|e| e.to_string())?;
    let head = store
        .read(&RefName::new("HEAD").unwrap())
        .map_err(|e| e.to_string())?
        .ok_or("no HEAD")?;
    let mut all = vec![("HEAD".to_owned(), head.target)];
    let listing = store.list(b"").map_err(|e| e.to_string())?;
    all.extend(
        listing
            .refs
            .into_iter()
            .map(|r| (r.name.to_string(), r.target)),
    );
    Ok((storage, all))
}

fn run(method: FlushMethod, back: bool) -> Result<usize, String> {
    let sim = SimFs::new();
    let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
    write(
        &sim,
        "config",
        b"[core]\n\trepositoryformatversion = 0\n\tbare = true\n",
    );
    write(&sim, "HEAD", b"ref: refs/heads/main\n");
    write(&sim, "refs/heads/main", format!("{}\n", id(1)).as_bytes());
    write(&sim, "refs/tags/loose", format!("{}\n", id(2)).as_bytes());
    write(
        &sim,
        "packed-refs",
        format!(
            "# pack-refs with: peeled fully-peeled sorted \n{} refs/heads/packed\n",
            id(3)
        )
        .as_bytes(),
    );
    let line = format!("{} {} C <c@x> 1700000000 +0000\tcreated\n", id(0), id(1));
    write(&sim, "logs/HEAD", line.as_bytes());
    write(&sim, "logs/refs/heads/main", line.as_bytes());
    sim.sync_all();
    let (_, original) = refs(vfs.clone()).unwrap();
    assert_eq!(original.len(), 4);
    let files = FilesBackend::new(
        vfs.clone(),
        GIT_DIR.into(),
        GIT_DIR.into(),
        ObjectFormat::Sha1,
    );
    let options = ReftableOptions::new(ObjectFormat::Sha1);
    let target = if back {
        // There first, unrecorded; the way back is what crashes.
        files_to_reftable(
            &files,
            Path::new(GIT_DIR),
            &options,
            FlushMethod::Fsync,
            false,
            &NoProgress,
        )
        .unwrap();
        sim.sync_all();
        sim.start_recording();
        let git_dir = Path::new(GIT_DIR);
        let reftable = ReftableBackend::new(vfs.clone(), git_dir, ObjectFormat::Sha1, options);
        reftable_to_files(&reftable, git_dir, method, false, &NoProgress)
            .map_err(|e| e.to_string())?;
        RefStorage::Files
    } else {
        sim.start_recording();
        files_to_reftable(
            &files,
            Path::new(GIT_DIR),
            &options,
            method,
            false,
            &NoProgress,
        )
        .map_err(|e| e.to_string())?;
        RefStorage::Reftable
    };
    sim.acknowledge("migrated");
    assert_eq!(refs(vfs).unwrap(), (target, original.clone()));

    let report = sim
        .check_crashes(&CrashOptions::default(), |crashed| {
            let (storage, found) = refs(crashed.vfs())?;
            if found != original {
                return Err(format!("{storage:?} store reads {found:?}"));
            }
            if !crashed.acknowledged.is_empty() && storage != target {
                return Err("the acknowledged migration is undone".into());
            }
            Ok(())
        })
        .map_err(|v| v.to_string())?;
    Ok(report.states)
}

#[test]
fn every_crash_leaves_all_refs_in_one_format_or_the_other() {
    for back in [false, true] {
        for method in [FlushMethod::Fsync, FlushMethod::Batch] {
            let states =
                run(method, back).unwrap_or_else(|v| panic!("{method:?}, back {back}:\n{v}"));
            assert!(states > 10, "{method:?}: only {states} crash states");
        }
    }
}

#[test]
fn no_flushing_can_lose_refs() {
    let violation = run(FlushMethod::None, false).unwrap_err();
    assert!(violation.contains("crash"), "{violation}");
}
