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
use crate::idx::IndexEntries;
use crate::inventory::Inventory;
use crate::pack_out::PackOut;
use crate::{MaintError, Repo};
use refstore_fs::FileKind;
use refstore_odb::ObjectKind;
use std::io::Read;
use std::path::PathBuf;

/// git's batch size for this task.
const BATCH: usize = 50_000;

/// One loose object file.
pub struct LooseObject {
    /// Its raw id.
    pub id: Vec<u8>,
    /// Its path.
    pub path: PathBuf,
}

/// Every loose object of the repository.
pub fn list(repo: &Repo) -> Result<Vec<LooseObject>, MaintError> {
    let vfs = repo.vfs.as_ref();
    let objects = repo.objects_dir();
    let hex_len = repo.hash().len_in_hex();
    let mut found = Vec::new();
    let dirs = match vfs.read_dir(&objects) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(found),
        Err(e) => return Err(e.into()),
    };
    for dir in dirs {
        let prefix = dir.name.to_string_lossy().into_owned();
        if dir.kind != FileKind::Dir || prefix.len() != 2 || !is_hex(&prefix) {
            continue;
        }
        let path = objects.join(&dir.name);
        let files = match vfs.read_dir(&path) {
            Ok(files) => files,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        for file in files {
            let rest = file.name.to_string_lossy();
            if file.kind != FileKind::File || rest.len() != hex_len - 2 || !is_hex(&rest) {
                continue;
            }
            let hex = format!("{prefix}{rest}");
            found.push(LooseObject {
                id: decode_hex(&hex),
                path: path.join(&file.name),
            });
        }
    }
    found.sort_by(|a, b| a.id.cmp(&b.id));
    Ok(found)
}

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
            repo.hash(),
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
    let hash_len = repo.hash().len_in_bytes();
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

/// Reads and inflates a loose object, checking its id; `None` if it is
/// damaged.
pub fn read_checked(
    repo: &Repo,
    object: &LooseObject,
) -> Result<Option<(ObjectKind, Vec<u8>)>, MaintError> {
    let compressed = match repo.vfs.read(&object.path) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let mut raw = Vec::new();
    if flate2::read::ZlibDecoder::new(&compressed[..])
        .read_to_end(&mut raw)
        .is_err()
    {
        return Ok(None);
    }
    let Some(nul) = raw.iter().position(|&b| b == 0) else {
        return Ok(None);
    };
    let Some((kind, size)) = refstore_odb::parse_loose_header(&raw[..nul]) else {
        return Ok(None);
    };
    if size != (raw.len() - nul - 1) as u64 {
        return Ok(None);
    }
    let mut hasher = gix_hash::hasher(repo.hash());
    hasher.update(&raw);
    match hasher.try_finalize() {
        Ok(id) if id.as_slice() == object.id.as_slice() => {}
        _ => return Ok(None),
    }
    raw.drain(..=nul);
    Ok(Some((kind, raw)))
}

fn is_hex(text: &str) -> bool {
    text.bytes().all(|b| b.is_ascii_hexdigit())
}

fn decode_hex(hex: &str) -> Vec<u8> {
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("checked hex"))
        .collect()
}
