//! Installing a new `multi-pack-index` over a set of packs, with its
//! reachability bitmap when bitmaps are wanted
//! ([`crate::MaintSettings::writes_bitmaps`]).
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

use crate::idx::IndexEntries;
use crate::midx::{Midx, MidxPack};
use crate::{MaintError, Repo};
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
    let hash_len = repo.hash().len_in_bytes();
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
    let written = crate::midx::write(&packs, repo.hash())?;
    let dir = repo.pack_dir();
    let mut summary = format!("multi-pack-index over {} packs", covered.len());
    let mut keep = None;
    if repo.maint.writes_bitmaps(repo.bare) {
        let paths: Vec<PathBuf> = preference.iter().map(|&n| covered[n].1.clone()).collect();
        match crate::bitmaps::build(repo, &written, &paths)? {
            Some(built) => {
                let name = written.midx.bitmap_name();
                crate::install::add_file(
                    repo,
                    &dir.join(&name),
                    &built.bytes,
                    "tmp_bitmap_",
                    Component::PackMetadata,
                )?;
                summary.push_str(&format!(" with bitmaps of {} commits", built.commits));
                keep = Some(name);
            }
            None => summary.push_str(" (no commit to write a bitmap for)"),
        }
    }
    let target = dir.join("multi-pack-index");
    crate::install::replace_file(repo, &target, &written.bytes, Component::PackMetadata)?;
    remove_stale(repo, keep.as_deref())?;
    Ok(Outcome {
        midx: written.midx,
        summary,
    })
}

/// True if `midx`, the current index, lacks the bitmap it should have:
/// it was written without a pseudo-pack order, or its bitmap is missing.
pub fn lacks_bitmap(repo: &Repo, midx: &Midx) -> bool {
    repo.maint.writes_bitmaps(repo.bare)
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
