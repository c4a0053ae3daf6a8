//! The `incremental-repack` task: a geometric repack (`git repack
//! --geometric=2 -d`), a new `multi-pack-index`, and the deletion of packs
//! made redundant once no reader can still need them.
//!
//! The packs to roll up are chosen by [`crate::geometric::split`] among
//! the packs without `.keep`. Their objects go into one new pack, each
//! object once, entries copied as stored where possible: whole objects
//! byte for byte, offset deltas with their header rewritten for the new
//! distance to their base (which is always written before them: entries
//! are taken pack by pack in pack order, and a base is earlier in its
//! pack than its deltas), reference deltas as they are when their base is
//! in the new pack too. Every copied entry's CRC32 is checked against its
//! index first; an entry that cannot be copied is written afresh from the
//! inflated object.
//!
//! Then a `multi-pack-index` over every pack except the rolled-up ones
//! replaces the old one, with its reachability bitmap
//! ([`crate::midx_write`]). A rolled-up pack is hidden once every object
//! of it is in that `multi-pack-index`: it is named in
//! `objects/info/refstore-redundant-packs` with the time
//! ([`crate::rolled_up`]), then its `.idx` is removed, so that no reader lists it
//! any more (git, gix and refstore all list packs by their index), however
//! many pile up under sustained pushes. Its data stays on disk for
//! `refstore.redundantPackExpire` (one hour by default) for the readers
//! that opened its index, or the old `multi-pack-index` naming it, just
//! before; a reader that listed the index but opens it only now lists
//! again, as after a `git repack -d`, which deletes packs at once.
//!
//! When the index gets a reachability bitmap, loose objects are packed
//! first ([`crate::loose`]), as `git repack --geometric` rolls them in:
//! a bitmap can only be written for commits whose whole history is in
//! the index, so a few loose objects deep in it (a repository's first
//! push, below the loose-objects task's threshold of 100) would cost
//! every commit above them its bitmap, run after run.
//!
//! In a cluster node's copy, old packs holding unreachable objects are
//! rolled up too, and those objects left out ([`crate::prune_packs`]):
//! such a pack is redundant once every object of it is in the
//! `multi-pack-index` or was dropped.

use crate::error::MaintError;
use crate::idx::IndexEntries;
use crate::install::Installed;
use crate::inventory::{Inventory, PackInfo};
use crate::midx::Midx;
use crate::pack_out::PackOut;
use crate::prune_packs::PackPrune;
use crate::repo::Repo;
use crate::rolled_up;
use refstore_fs::config::Component;
use refstore_odb::{DeltaBaseCache, Odb, PackedAt, Packs, StoredKind};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// The factor of the progression (`--geometric=2`).
const FACTOR: u64 = 2;

/// Extensions of a pack's files, the index first: deleting it makes the
/// pack invisible before anything else goes.
const PACK_FILES: [&str; 6] = ["idx", "pack", "rev", "bitmap", "mtimes", "promisor"];

/// Redundant packs by name, each with the time it was first found
/// redundant.
type RedundantSince = HashMap<String, SystemTime>;

/// Runs the task; a summary of what it did.
pub fn run(repo: &Repo) -> Result<String, MaintError> {
    let mut summary = String::new();
    if repo.maint.writes_bitmaps(repo.is_bare()) && crate::loose_files::any(repo)? {
        summary.push_str(&crate::loose::run(repo)?);
        summary.push_str("; ");
    }
    let inventory = Inventory::read(repo)?;
    let redundant_before = read_redundant(repo)?;
    // Packs already redundant are no candidates, nor named by the new
    // multi-pack-index.
    let live: Vec<&PackInfo> = inventory
        .packs
        .iter()
        .filter(|p| p.keep || !redundant_before.contains_key(&p.name))
        .collect();
    let (rolled, prune) = choose_rolled(repo, &inventory, &live)?;
    let new_pack = if rolled.is_empty() {
        None
    } else {
        let installed = roll_up(repo, &rolled, prune.as_ref())?;
        let into = match &installed {
            Some(installed) => format!("{} ({} objects)", installed.name, installed.objects),
            None => "nothing".to_owned(),
        };
        summary.push_str(&format!("rolled {} packs into {into}; ", rolled.len()));
        installed
    };
    let covered = covered_packs(repo, &live, &rolled, new_pack.as_ref());
    let midx = refresh_midx(repo, &inventory, &covered, &mut summary)?;

    let now = SystemTime::now();
    let (mut redundant, undecided) = judge_listed(
        repo,
        &inventory,
        midx.as_ref(),
        prune.as_ref(),
        &redundant_before,
        now,
    )?;
    let listed: HashSet<&str> = inventory.packs.iter().map(|p| p.name.as_str()).collect();
    keep_hidden(repo, &listed, &redundant_before, &mut redundant);
    let deleted = delete_expired(repo, &mut redundant, now)?;
    // The list before the indexes go: a pack whose index is removed
    // without being listed would never be deleted.
    let newly_redundant: Vec<String> = redundant
        .keys()
        .filter(|name| listed.contains(name.as_str()))
        .cloned()
        .collect();
    redundant.extend(undecided);
    write_redundant(repo, &redundant, &redundant_before)?;
    for name in &newly_redundant {
        hide_pack(repo, name)?;
    }
    summary.push_str(&format!(
        "{deleted} redundant packs deleted, {} kept for readers",
        redundant.len()
    ));
    Ok(summary)
}

/// The packs to roll up: the geometric progression's smaller packs among
/// the `live` ones without `.keep`, and in a cluster copy the old packs
/// holding orphans; with the pruning plan that says which objects those
/// drop.
fn choose_rolled<'a>(
    repo: &Repo,
    inventory: &Inventory,
    live: &[&'a PackInfo],
) -> Result<(Vec<&'a PackInfo>, Option<PackPrune>), MaintError> {
    let mut candidates: Vec<&PackInfo> = live.iter().copied().filter(|p| !p.keep).collect();
    candidates.sort_by(|a, b| a.objects.cmp(&b.objects).then(a.name.cmp(&b.name)));
    let counts: Vec<u64> = candidates.iter().map(|p| u64::from(p.objects)).collect();
    let split = crate::geometric::split(&counts, FACTOR);
    let mut rolled: Vec<&PackInfo> = candidates[..split].to_vec();
    if split < 2 {
        rolled.clear();
    }
    // A cluster copy's old packs holding orphans are rewritten too.
    let prune = crate::prune_packs::plan(repo, &inventory.packs)?;
    if let Some(prune) = &prune {
        for pack in &candidates[rolled.len()..] {
            if prune.to_rewrite.contains(&pack.name) {
                rolled.push(pack);
            }
        }
    }
    Ok((rolled, prune))
}

/// The packs the new multi-pack-index covers, by name, with their index
/// files: the live ones not rolled up, and the new pack.
fn covered_packs(
    repo: &Repo,
    live: &[&PackInfo],
    rolled: &[&PackInfo],
    new_pack: Option<&Installed>,
) -> Vec<(String, PathBuf)> {
    let rolled_names: HashSet<&str> = rolled.iter().map(|p| p.name.as_str()).collect();
    let mut covered: Vec<(String, PathBuf)> = live
        .iter()
        .filter(|p| !rolled_names.contains(p.name.as_str()))
        .map(|p| (p.name.clone(), Inventory::index_path(repo, p)))
        .collect();
    if let Some(new) = new_pack {
        if !covered.iter().any(|(name, _)| *name == new.name) {
            covered.push((new.name.clone(), new.index_path.clone()));
        }
    }
    covered.sort();
    covered
}

/// The multi-pack-index over `covered`: rewritten when its set of packs
/// changes or it lacks the bitmap it should have, else the current one.
fn refresh_midx(
    repo: &Repo,
    inventory: &Inventory,
    covered: &[(String, PathBuf)],
    summary: &mut String,
) -> Result<Option<Midx>, MaintError> {
    let wanted: Vec<String> = covered.iter().map(|(n, _)| format!("{n}.idx")).collect();
    let stale = match &inventory.midx {
        Some(midx) => midx.packs != wanted || crate::midx_write::lacks_bitmap(repo, midx),
        None => true,
    };
    if stale && !covered.is_empty() {
        let outcome = crate::midx_write::write(repo, covered)?;
        summary.push_str(&outcome.summary);
        summary.push_str("; ");
        Ok(Some(outcome.midx))
    } else {
        Ok(inventory.midx.clone())
    }
}

/// Judges the listed packs without `.keep`: redundant (outside the
/// multi-pack-index, every object in it or dropped), with the time since
/// when; and, apart, those an earlier run found redundant that this one
/// cannot judge.
fn judge_listed(
    repo: &Repo,
    inventory: &Inventory,
    midx: Option<&Midx>,
    prune: Option<&PackPrune>,
    redundant_before: &RedundantSince,
    now: SystemTime,
) -> Result<(RedundantSince, RedundantSince), MaintError> {
    let hash_len = repo.object_format().raw_len();
    let named: HashSet<&str> = midx
        .iter()
        .flat_map(|m| m.packs.iter().map(String::as_str))
        .collect();
    let mut redundant = RedundantSince::new();
    // A cluster copy's packs rewritten by an earlier run's pruning, which
    // this run cannot judge (objects missing here until it catches up):
    // left redundant as they were, neither deleted nor rolled back in.
    let mut undecided = RedundantSince::new();
    let cannot_judge =
        repo.cluster_copy && prune.is_none() && crate::reach::cluster_grace(repo).is_some();
    for pack in inventory.packs.iter().filter(|p| !p.keep) {
        if named.contains(pack.index_name().as_str()) {
            continue;
        }
        let Some(midx) = midx else { continue };
        let index = match repo.vfs.read_mapped(&Inventory::index_path(repo, pack)) {
            Ok(index) => index,
            Err(e) if e.is_not_found() => continue,
            Err(e) => return Err(e.into()),
        };
        let entries = crate::idx::read(&index, hash_len)?;
        let elsewhere_or_dropped =
            |id: &[u8]| midx.contains(id) || prune.is_some_and(|p| p.dropped(&pack.name, id));
        if (0..entries.len()).all(|n| elsewhere_or_dropped(entries.id(n))) {
            let since = redundant_before.get(&pack.name).copied().unwrap_or(now);
            redundant.insert(pack.name.clone(), since);
        } else if let Some(since) = redundant_before.get(&pack.name).filter(|_| cannot_judge) {
            undecided.insert(pack.name.clone(), *since);
        }
    }
    Ok((redundant, undecided))
}

/// Adds to `redundant` the packs an earlier run hid (their index removed,
/// so not `listed`), waiting out their expiry as long as their data is
/// there.
fn keep_hidden(
    repo: &Repo,
    listed: &HashSet<&str>,
    redundant_before: &RedundantSince,
    redundant: &mut RedundantSince,
) {
    for (name, since) in redundant_before {
        if !listed.contains(name.as_str())
            && repo
                .vfs
                .exists(&repo.pack_dir().join(format!("{name}.pack")))
        {
            redundant.insert(name.clone(), *since);
        }
    }
}

/// Deletes the redundant packs older than `refstore.redundantPackExpire`
/// and takes them off `redundant`; how many.
fn delete_expired(
    repo: &Repo,
    redundant: &mut RedundantSince,
    now: SystemTime,
) -> Result<usize, MaintError> {
    let Some(expiry) = repo.maint.redundant_pack_expire else {
        return Ok(0);
    };
    let expired: Vec<String> = redundant
        .iter()
        .filter(|(_, since)| now.duration_since(**since).unwrap_or(Duration::ZERO) >= expiry)
        .map(|(name, _)| name.clone())
        .collect();
    for name in &expired {
        delete_pack(repo, name)?;
        redundant.remove(name);
    }
    Ok(expired.len())
}

/// Writes one pack holding every object of `rolled`, once, but those
/// `prune` drops; `None` if no object is left to write.
fn roll_up(
    repo: &Repo,
    rolled: &[&PackInfo],
    prune: Option<&PackPrune>,
) -> Result<Option<Installed>, MaintError> {
    let hash_len = repo.object_format().raw_len();
    let paths: Vec<PathBuf> = rolled
        .iter()
        .map(|p| Inventory::index_path(repo, p))
        .collect();
    let packs = Packs::open_indexes(&paths, repo.object_format())?;
    let mut indexes = Vec::with_capacity(paths.len());
    for path in &paths {
        let index = repo.vfs.read_mapped(path)?;
        indexes.push(crate::idx::read(&index, hash_len)?);
    }
    let unique: HashSet<&[u8]> = indexes
        .iter()
        .flat_map(|index| (0..index.len()).map(move |n| index.id(n)))
        .filter(|id| prune.is_none_or(|p| p.keeps(id)))
        .collect();
    if unique.is_empty() {
        return Ok(None);
    }
    let total = unique.len() as u32;
    let mut out = PackOut::start(&repo.vfs, &repo.pack_dir(), repo.object_format(), total)?;
    let temp = out.temp_path().to_owned();
    let result = copy_all(repo, &packs, &indexes, &unique, &mut out)
        .and_then(|_| out.finish())
        .and_then(|finished| crate::install::install(repo, finished));
    if result.is_err() {
        let _ = repo.vfs.unlink(&temp);
    }
    result.map(Some)
}

fn copy_all(
    repo: &Repo,
    packs: &Packs,
    indexes: &[IndexEntries],
    unique: &HashSet<&[u8]>,
    out: &mut PackOut,
) -> Result<(), MaintError> {
    // New offsets of the objects written so far.
    let mut written: HashMap<Vec<u8>, u64> = HashMap::with_capacity(unique.len());
    let mut cache = DeltaBaseCache::default();
    let mut buf = Vec::new();
    let mut odb: Option<Odb> = None;
    for (pack, index) in indexes.iter().enumerate() {
        let mut order: Vec<u32> = (0..index.len() as u32).collect();
        order.sort_unstable_by_key(|&n| index.offsets[n as usize]);
        for position in order {
            let id = index.id(position as usize);
            if written.contains_key(id) || !unique.contains(id) {
                continue;
            }
            let at = PackedAt {
                pack: pack as u32,
                position,
            };
            let offset = out.offset();
            if !copy_entry(packs, at, id, &written, unique, out)? {
                // Written afresh: from its pack, or from wherever the
                // repository has it.
                let kind = match packs.read(at, &mut cache, &mut buf)? {
                    Some(kind) => kind,
                    None => {
                        let odb = match &mut odb {
                            Some(odb) => odb,
                            None => odb.insert(repo.objects()?),
                        };
                        let oid = refstore_refs::ObjectId::from_raw(id)
                            .ok_or_else(|| MaintError::Format("bad object id".into()))?;
                        let (kind, data) = odb.read(&oid)?.ok_or_else(|| {
                            MaintError::Format(format!("object {oid} cannot be read"))
                        })?;
                        buf = data;
                        kind
                    }
                };
                out.whole(id, kind, &buf)?;
            }
            written.insert(id.to_vec(), offset);
        }
    }
    Ok(())
}

/// Copies the stored entry at `at` if it can be; false if it must be
/// written afresh.
fn copy_entry(
    packs: &Packs,
    at: PackedAt,
    id: &[u8],
    written: &HashMap<Vec<u8>, u64>,
    unique: &HashSet<&[u8]>,
    out: &mut PackOut,
) -> Result<bool, MaintError> {
    let entry = match packs.entry(at) {
        Ok(entry) => entry,
        Err(_) => return Ok(false),
    };
    if !packs.crc_matches(at, &entry) {
        tracing::warn!(
            "entry of {} does not match its CRC32: rewritten",
            packs.id(at)
        );
        return Ok(false);
    }
    match entry.kind {
        StoredKind::Whole(_) => out.copy_entry(id, entry.raw)?,
        StoredKind::OfsDelta { base_offset } => {
            let Some(base) = packs.at_offset(at.pack, base_offset) else {
                return Ok(false);
            };
            let Some(&new_base) = written.get(packs.id(base).as_bytes()) else {
                return Ok(false);
            };
            out.ofs_delta(id, entry.size, new_base, entry.compressed())?;
        }
        StoredKind::RefDelta { base } => match written.get(base.as_bytes()) {
            Some(&new_base) => out.ofs_delta(id, entry.size, new_base, entry.compressed())?,
            None if unique.contains(base.as_bytes()) => out.copy_entry(id, entry.raw)?,
            None => return Ok(false),
        },
    }
    Ok(true)
}

/// Removes a rolled-up pack's index: no reader lists the pack any more
/// (git, gix and refstore alike list packs by their index), so thousands
/// of packs waiting to expire cost readers nothing, while one that read
/// the index before, or the `multi-pack-index` that named the pack, can
/// still read the pack's data until it expires. A reader that listed the
/// index but opens it only now finds it gone and lists again, as it does
/// after a `git repack -d`.
fn hide_pack(repo: &Repo, name: &str) -> Result<(), MaintError> {
    match repo
        .vfs
        .unlink(&repo.pack_dir().join(format!("{name}.idx")))
    {
        Err(e) if !e.is_not_found() => Err(e.into()),
        _ => Ok(()),
    }
}

/// Deletes a pack's files, its index first.
fn delete_pack(repo: &Repo, name: &str) -> Result<(), MaintError> {
    let dir = repo.pack_dir();
    for ext in PACK_FILES {
        match repo.vfs.unlink(&dir.join(format!("{name}.{ext}"))) {
            Ok(()) => {}
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(())
}

fn read_redundant(repo: &Repo) -> Result<HashMap<String, SystemTime>, MaintError> {
    Ok(rolled_up::read(repo.vfs.as_ref(), repo.objects_dir())?)
}

fn write_redundant(
    repo: &Repo,
    redundant: &HashMap<String, SystemTime>,
    before: &HashMap<String, SystemTime>,
) -> Result<(), MaintError> {
    if redundant == before {
        return Ok(());
    }
    let path = rolled_up::path(repo.objects_dir());
    if redundant.is_empty() {
        return match repo.vfs.unlink(&path) {
            Err(e) if !e.is_not_found() => Err(e.into()),
            _ => Ok(()),
        };
    }
    crate::install::replace_file(
        repo,
        &path,
        &rolled_up::format(redundant),
        Component::PackMetadata,
    )
}
