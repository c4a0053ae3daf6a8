//! The `loose-objects` task: loose objects that are also in a pack are
//! removed (`git prune-packed`), then the others are written into one new
//! pack (at most 50,000 per run, as git's task does) and their loose
//! copies removed once the pack is durable and visible. A reader that
//! misses a loose object it listed looks again and finds the pack (git
//! and gitoxide both re-scan on a miss).
//!
//! Trees and blobs are stored as deltas where one pays
//! ([`crate::delta_plan`]), as `git repack` stores them.
//!
//! Every loose object is checked against its name before it is packed; one
//! that does not hash to its name, or cannot be read, is left alone for
//! `git fsck` to report.
//!
//! Before packing, unreachable loose objects older than `gc.pruneExpire`
//! are deleted ([`crate::prune`]).

use crate::delta_plan::Stored;
use crate::error::MaintError;
use crate::idx::IndexEntries;
use crate::inventory::Inventory;
use crate::loose_files::{list, read_checked, LooseObject};
use crate::pack_out::PackOut;
use crate::repo::Repo;
use refstore_odb::ObjectKind;

/// git's batch size for this task.
const BATCH: usize = 50_000;

/// Runs the task.
pub fn run(repo: &Repo) -> Result<String, MaintError> {
    let loose = list(repo)?;
    if loose.is_empty() {
        return Ok("no loose objects".into());
    }
    let packed = packed_indexes(repo)?;
    let is_packed = |id: &[u8]| packed.iter().any(|index| contains(index, id));
    let mut pruned = 0;
    let mut unpacked = Vec::new();
    for object in loose {
        if is_packed(&object.id) {
            if remove(repo, &object)? {
                pruned += 1;
            }
        } else {
            unpacked.push(object);
        }
    }
    let (mut to_pack, unreachable) = crate::prune::prune(repo, unpacked)?;
    to_pack.truncate(BATCH);
    let mut objects = Vec::with_capacity(to_pack.len());
    for object in to_pack {
        match read_checked(repo, &object)? {
            Some((kind, data)) => objects.push((object, kind, data)),
            None => tracing::warn!(
                "loose object {} is damaged: left alone",
                object.path.display()
            ),
        }
    }
    let mut packed_now = 0;
    if !objects.is_empty() {
        repo.vfs.create_dir_all(&repo.pack_dir())?;
        let mut out = PackOut::start(
            &repo.vfs,
            &repo.pack_dir(),
            repo.object_format(),
            objects.len() as u32,
        )?;
        let temp = out.temp_path().to_owned();
        let written = write_all(&objects, &mut out)
            .and_then(|_| out.finish())
            .and_then(|finished| crate::install::install(repo, finished));
        if let Err(e) = written {
            let _ = repo.vfs.unlink(&temp);
            return Err(e);
        }
        for (object, _, _) in &objects {
            if remove(repo, object)? {
                packed_now += 1;
            }
        }
    }
    Ok(format!(
        "packed {packed_now} loose objects, removed {pruned} loose copies of packed objects, \
         pruned {unreachable} unreachable old ones"
    ))
}

/// Writes the objects as [`crate::delta_plan`] plans them.
fn write_all(
    objects: &[(LooseObject, ObjectKind, Vec<u8>)],
    out: &mut PackOut,
) -> Result<(), MaintError> {
    let listed: Vec<crate::delta_plan::Object<'_>> = objects
        .iter()
        .map(|(object, kind, data)| crate::delta_plan::Object {
            id: &object.id,
            kind: *kind,
            data,
        })
        .collect();
    let mut offsets = vec![0u64; objects.len()];
    for (n, stored) in crate::delta_plan::plan(&listed) {
        offsets[n] = out.offset();
        let (object, kind, data) = &objects[n];
        match stored {
            Stored::Whole => out.whole(&object.id, *kind, data)?,
            Stored::Delta { base, delta } => out.delta(&object.id, offsets[base], &delta)?,
        }
    }
    Ok(())
}

/// The indexes of every visible pack.
fn packed_indexes(repo: &Repo) -> Result<Vec<IndexEntries>, MaintError> {
    let inventory = Inventory::read(repo)?;
    let hash_len = repo.object_format().raw_len();
    let mut indexes = Vec::with_capacity(inventory.packs.len());
    for pack in &inventory.packs {
        match repo.vfs.read_mapped(&Inventory::index_path(repo, pack)) {
            Ok(index) => indexes.push(crate::idx::read(&index, hash_len)?),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(indexes)
}

fn contains(index: &IndexEntries, id: &[u8]) -> bool {
    let (mut lo, mut hi) = (0, index.len());
    while lo < hi {
        let mid = (lo + hi) / 2;
        match index.id(mid).cmp(id) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return true,
        }
    }
    false
}

/// Removes a loose object file and, when it was the last, its directory.
fn remove(repo: &Repo, object: &LooseObject) -> Result<bool, MaintError> {
    match repo.vfs.unlink(&object.path) {
        Ok(()) => {}
        Err(e) if e.is_not_found() => return Ok(false),
        Err(e) => return Err(e.into()),
    }
    if let Some(dir) = object.path.parent() {
        // Fails while other files remain, which is fine.
        let _ = repo.vfs.rmdir(dir);
    }
    Ok(true)
}
