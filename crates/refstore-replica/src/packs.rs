//! A repository's packs as the replication endpoint serves them: which
//! there are, their files, and a received pack indexed with refstore's
//! own ingestion (every object hashed, `.idx` and `.rev` written, all
//! flushed durably before the pack is visible).
//!
//! Files are named by pack (`pack-<hex>`, the pack's checksum) plus
//! `.pack` or `.idx`; no other name is read, so a request cannot reach
//! anything else in the repository.

use refstore_fs::config::Component;
use refstore_fs::FileKind;
use refstore_odb::{big_file_threshold, store_pack, IngestLimits, PackOptions};
use refstore_protocol::Repository;
use std::path::PathBuf;

/// The paths of the replication endpoint start with this, below a node's
/// address.
pub const ENDPOINT_PREFIX: &str = "/_refstore/replicate/";

/// True for `pack-` followed by the hex of an object id in the
/// repository's format.
pub fn is_pack_name(repo: &Repository, name: &str) -> bool {
    name.strip_prefix("pack-").is_some_and(|hex| {
        hex.len() == repo.object_format().hex_len()
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

/// The two files of a pack that are served.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PackFile {
    /// The pack itself.
    Pack,
    /// Its index.
    Index,
}

impl PackFile {
    fn extension(self) -> &'static str {
        match self {
            PackFile::Pack => "pack",
            PackFile::Index => "idx",
        }
    }
}

fn pack_dir(repo: &Repository) -> PathBuf {
    repo.location.common_dir.join("objects").join("pack")
}

/// Whether the repository has the pack `name` (its index: what makes a
/// pack visible).
pub fn has(repo: &Repository, name: &str) -> bool {
    repo.vfs.exists(&pack_dir(repo).join(format!("{name}.idx")))
}

/// The packs of the repository (those with an index) and the size of
/// each pack file, sorted by name.
pub fn list(repo: &Repository) -> Result<Vec<(String, u64)>, String> {
    let dir = pack_dir(repo);
    let entries = match repo.vfs.read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.to_string()),
    };
    let mut packs = Vec::new();
    for entry in entries {
        let name = entry.name.to_string_lossy();
        let Some(name) = name.strip_suffix(".idx") else {
            continue;
        };
        if entry.kind != FileKind::File || !is_pack_name(repo, name) {
            continue;
        }
        // A pack removed since the directory was read is simply left out.
        if let Ok(meta) = repo.vfs.stat(&dir.join(format!("{name}.pack"))) {
            packs.push((name.to_owned(), meta.len));
        }
    }
    packs.sort();
    Ok(packs)
}

/// The content of one file of pack `name`; `None` if the name is not a
/// pack name or there is no such pack.
pub fn read(repo: &Repository, name: &str, file: PackFile) -> Result<Option<Vec<u8>>, String> {
    if !is_pack_name(repo, name) {
        return Ok(None);
    }
    let path = pack_dir(repo).join(format!("{name}.{}", file.extension()));
    match repo.vfs.read(&path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.to_string()),
    }
}

/// Stores a received (complete, not thin) pack with its index, durably,
/// as the repository's `core.fsync` says; a pack already there is left as
/// it is. Returns the pack's name. A pack that does not verify (truncated,
/// corrupt, thin) is refused with nothing stored.
pub fn index(repo: &Repository, pack: &[u8]) -> Result<String, String> {
    let fsync = &repo.settings.fsync;
    let options = PackOptions {
        format: repo.object_format(),
        method: fsync.method_for(Component::Pack),
        batch_mechanism: fsync.batch_mechanism(),
        thin_bases: None,
        keep: None,
        rev_index: repo
            .config
            .bool("pack.writeReverseIndex")
            .map_err(|e| e.to_string())?
            .unwrap_or(true),
        // As git's index-pack: large objects hashed in pieces, no bound on
        // the total (the pack was accepted by the node that received it).
        limits: IngestLimits {
            big_file_threshold: big_file_threshold(&repo.config)?,
            max_inflated: None,
        },
    };
    let objects = repo.location.common_dir.join("objects");
    let stored =
        store_pack(repo.vfs.clone(), &objects, pack, &options).map_err(|e| e.to_string())?;
    Ok(format!("pack-{}", stored.checksum))
}
