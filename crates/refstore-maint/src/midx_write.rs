//! Installing a new `multi-pack-index` over a set of packs, with its
//! reachability bitmap when bitmaps are wanted
//! ([`crate::MaintSettings::writes_bitmaps`]). An object the bitmap
//! writer cannot read (a damaged pack entry) costs the bitmap, not the
//! index: the failure is reported and the index written without one.
//!
//! The preferred pack (the first of the pseudo-pack order, whose objects
//! the index takes from it wherever they are duplicated) is the largest:
//! after a geometric repack, the one holding most of the history, whose
//! bytes a clone can then reuse as they are.
//!
//! Order of installation: the bitmap, named after the new index's
//! checksum, is added and made durable first; then the index replaces
//! the old one under git's lock protocol; then bitmaps (and `.rev` files)
//! of earlier indexes are removed. A reader sees either the old index
//! (whose bitmap it may find gone: it then walks, as with none) or the
//! new one with its bitmap already in place; a crash at any point leaves
//! one of those, and at most an unnamed bitmap for `cleanup` or the next
//! run to remove.

use crate::error::MaintError;
use crate::idx::IndexEntries;
use crate::midx::{Midx, MidxPack};
use crate::repo::Repo;
use refstore_fs::config::Component;
use std::path::PathBuf;

/// What writing the index did.
pub struct Outcome {
    /// The new index.
    pub midx: Midx,
    /// A summary for the task's report.
    pub summary: String,
}

/// Writes the multi-pack-index over the packs `covered` (names
/// `pack-<hash>` with their `.idx` paths).
pub fn write(repo: &Repo, covered: &[(String, PathBuf)]) -> Result<Outcome, MaintError> {
    let hash_len = repo.object_format().raw_len();
    let mut entries: Vec<IndexEntries> = Vec::with_capacity(covered.len());
    for (_, path) in covered {
        let index = repo.vfs.read_mapped(path)?;
        entries.push(crate::idx::read(&index, hash_len)?);
    }
    // The largest pack first (the first of equals by name), the others
    // as given.
    let mut preference: Vec<usize> = (0..covered.len()).collect();
    if let Some(largest) = (0..covered.len()).max_by(|&a, &b| {
        entries[a]
            .len()
            .cmp(&entries[b].len())
            .then(covered[b].0.cmp(&covered[a].0))
    }) {
        preference.retain(|&n| n != largest);
        preference.insert(0, largest);
    }
    let packs: Vec<MidxPack<'_>> = preference
        .iter()
        .map(|&n| MidxPack {
            index_name: format!("{}.idx", covered[n].0),
            entries: &entries[n],
        })
        .collect();
    let written = crate::midx::write(&packs, repo.object_format())?;
    let mut summary = format!("multi-pack-index over {} packs", covered.len());
    let mut bitmap = None;
    if repo.maint.writes_bitmaps(repo.is_bare()) {
        let paths: Vec<PathBuf> = preference.iter().map(|&n| covered[n].1.clone()).collect();
        match crate::bitmaps::build(repo, &written, &paths) {
            Ok(Some(built)) => {
                summary.push_str(&format!(" with bitmaps of {} commits", built.commits));
                bitmap = Some((written.midx.bitmap_name(), built.bytes));
            }
            Ok(None) => summary.push_str(" (no commit to write a bitmap for)"),
            // The index is worth having without one: readers then walk.
            Err(e) => {
                tracing::warn!("no reachability bitmap written: {e}");
                summary.push_str(&format!(" (no bitmap: {e})"));
            }
        }
    }
    install(repo, &written.bytes, bitmap)?;
    Ok(Outcome {
        midx: written.midx,
        summary,
    })
}

/// Installs the multi-pack-index `midx` and its bitmap `(name, bytes)`:
/// the bitmap durable first, then the index, then stale bitmaps removed.
fn install(repo: &Repo, midx: &[u8], bitmap: Option<(String, Vec<u8>)>) -> Result<(), MaintError> {
    let dir = repo.pack_dir();
    if let Some((name, bytes)) = &bitmap {
        crate::install::add_file(
            repo,
            &dir.join(name),
            bytes,
            "tmp_bitmap_",
            Component::PackMetadata,
        )?;
    }
    let target = dir.join("multi-pack-index");
    crate::install::replace_file(repo, &target, midx, Component::PackMetadata)?;
    remove_stale(repo, bitmap.as_ref().map(|(name, _)| name.as_str()))
}

/// True if `midx`, the current index, lacks the bitmap it should have:
/// it was written without a pseudo-pack order, or its bitmap is missing.
pub fn lacks_bitmap(repo: &Repo, midx: &Midx) -> bool {
    repo.maint.writes_bitmaps(repo.is_bare())
        && (!midx.has_order || !repo.vfs.exists(&repo.pack_dir().join(midx.bitmap_name())))
}

/// Removes the bitmaps and `.rev` files of multi-pack-indexes other than
/// the one whose bitmap is `keep`.
fn remove_stale(repo: &Repo, keep: Option<&str>) -> Result<(), MaintError> {
    let dir = repo.pack_dir();
    for entry in repo.vfs.read_dir(&dir)? {
        let name = entry.name.to_string_lossy();
        let stale = name.starts_with("multi-pack-index-")
            && (name.ends_with(".bitmap") || name.ends_with(".rev"))
            && Some(name.as_ref()) != keep;
        if stale {
            match repo.vfs.unlink(&dir.join(name.as_ref())) {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use refstore_fs::sim::{CrashOptions, SimFs};
    use refstore_fs::Vfs;
    use std::path::Path;
    use std::sync::Arc;

    const PACK: &str = "/repo/objects/pack";
    const OLD_BITMAP: &str = "multi-pack-index-01.bitmap";
    const NEW_BITMAP: &str = "multi-pack-index-02.bitmap";

    fn repo(sim: &SimFs, config: &str) -> Repo {
        let vfs: Arc<dyn Vfs> = Arc::new(sim.clone());
        let config = refstore_fs::config::Config::from_local_bytes(config.as_bytes()).unwrap();
        let location = refstore_fs::discover::Location {
            git_dir: "/repo".into(),
            common_dir: "/repo".into(),
            work_tree: None,
        };
        let repository = refstore_repo::Repository::from_config(vfs, location, config).unwrap();
        Repo::without_refs(repository).unwrap()
    }

    /// Installs a new index and bitmap over old ones, crashing after every
    /// step: the index is always one of the two, whole, and the new one
    /// only with its whole bitmap.
    fn crash_test(config: &str) -> Result<usize, String> {
        let sim = SimFs::new();
        let pack = Path::new(PACK);
        sim.create_dir_all(pack).unwrap();
        let (old, old_bitmap) = (b"old index".repeat(50), b"old bitmap".repeat(80));
        let (new, new_bitmap) = (b"new index".repeat(60), b"new bitmap".repeat(90));
        for (name, bytes) in [("multi-pack-index", &old), (OLD_BITMAP, &old_bitmap)] {
            let mut file = sim.create_exclusive(&pack.join(name)).unwrap();
            file.write_all(bytes).unwrap();
        }
        sim.sync_all();
        sim.start_recording();
        let repo = repo(&sim, config);
        install(&repo, &new, Some((NEW_BITMAP.into(), new_bitmap.clone())))
            .map_err(|e| e.to_string())?;
        sim.acknowledge("installed");
        assert!(!sim.exists(&pack.join(OLD_BITMAP)));
        let report = sim.check_crashes(&CrashOptions::default(), |crashed| {
            let files = crashed.fs.files();
            let index = files.get(&pack.join("multi-pack-index"));
            if index == Some(&new) {
                if files.get(&pack.join(NEW_BITMAP)) != Some(&new_bitmap) {
                    return Err("the new index is there without its whole bitmap".into());
                }
            } else if index != Some(&old) {
                return Err("the index is neither the old one nor the new one".into());
            } else if !crashed.acknowledged.is_empty() {
                return Err("the installed index is gone".into());
            }
            match files.get(&pack.join(OLD_BITMAP)) {
                Some(bytes) if *bytes != old_bitmap => Err("the old bitmap was changed".into()),
                _ => Ok(()),
            }
        });
        report.map(|r| r.states).map_err(|v| v.message)
    }

    #[test]
    fn a_crash_never_shows_an_index_without_its_bitmap() {
        let states = crash_test("[core]\n\tbare = true\n").unwrap();
        assert!(states > 10, "{states}");
    }

    #[test]
    fn without_flushing_the_harness_sees_a_broken_index() {
        // The check can fail: unflushed, the rename of the index can
        // outlive its data and the bitmap's.
        let error = crash_test("[core]\n\tbare = true\n\tfsync = none\n").unwrap_err();
        assert!(
            error.contains("neither the old one") || error.contains("without its whole bitmap"),
            "{error}"
        );
    }
}
