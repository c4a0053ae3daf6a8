//! A split commit-graph, as `git commit-graph write --split` keeps it (and
//! `git maintenance`'s commit-graph task asks for):
//! `objects/info/commit-graphs/commit-graph-chain` lists the checksums of
//! its layers, bottom first, one a line; layer `<h>` is
//! `objects/info/commit-graphs/graph-<h>.graph`, naming the layers below
//! it in its `BASE` chunk.
//!
//! New commits go into a new top layer. Layers are merged as git merges
//! them: going down from the top, a layer holding no more than
//! [`SIZE_MULTIPLE`] times the commits of the new layer (with the layers
//! merged into it so far) is merged into it, so layer sizes grow
//! geometrically towards the bottom and a chain stays short.
//!
//! The new layer is written under a temporary name, flushed and linked to
//! its name before the chain file naming it replaces the old one (under
//! git's lock protocol); a single `commit-graph` file, which git's readers
//! prefer to a chain, is removed once the chain is in place. Layers the
//! chain no longer names are touched when they leave it and deleted once
//! older than `refstore.redundantPackExpire`, as packs are: a reader that
//! read the old chain may still open them.

use crate::error::MaintError;
use crate::repo::Repo;
use refstore_fs::config::Component;
use refstore_refs::ObjectFormat;
use std::collections::HashSet;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

/// A layer is merged into the new one while it holds at most this many
/// times the new one's commits (git's `splitCommitGraph` size multiple).
pub(crate) const SIZE_MULTIPLE: usize = 2;

/// The chain file's name.
const CHAIN: &str = "commit-graph-chain";

/// One layer of the current chain.
pub(crate) struct ExistingLayer {
    /// Its checksum (the name of its file).
    pub(crate) checksum: Vec<u8>,
    /// Its commits, sorted.
    pub(crate) ids: Vec<Vec<u8>>,
}

/// `objects/info/commit-graphs`.
pub(crate) fn dir(repo: &Repo) -> PathBuf {
    repo.objects_dir().join("info").join("commit-graphs")
}

fn layer_path(repo: &Repo, checksum: &[u8]) -> PathBuf {
    dir(repo).join(format!("graph-{}.graph", hex(checksum)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The layers of the current chain, bottom first; empty if there is no
/// chain, or one refstore cannot extend (a layer missing, damaged, of
/// another hash, or without generation data v2), which is then replaced
/// as a whole.
pub(crate) fn read(repo: &Repo) -> Result<Vec<ExistingLayer>, MaintError> {
    let text = match repo.vfs.read(&dir(repo).join(CHAIN)) {
        Ok(text) => text,
        Err(e) if e.is_not_found() => return Ok(Vec::new()),
        Err(e) => return Err(e.into()),
    };
    let hash_len = repo.object_format().raw_len();
    let mut layers: Vec<ExistingLayer> = Vec::new();
    for line in String::from_utf8_lossy(&text).lines() {
        let Some(checksum) = unhex(line.trim()).filter(|c| c.len() == hash_len) else {
            return Ok(Vec::new());
        };
        let bytes = match repo.vfs.read_mapped(&layer_path(repo, &checksum)) {
            Ok(bytes) => bytes,
            Err(e) if e.is_not_found() => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let bases: Vec<&[u8]> = layers.iter().map(|l| l.checksum.as_slice()).collect();
        match parse_layer(&bytes, repo.object_format(), &checksum, &bases) {
            Some(ids) => layers.push(ExistingLayer { checksum, ids }),
            None => return Ok(Vec::new()),
        }
    }
    Ok(layers)
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The ids of a layer, if it is one refstore can build on.
fn parse_layer(
    bytes: &[u8],
    format: ObjectFormat,
    checksum: &[u8],
    bases: &[&[u8]],
) -> Option<Vec<Vec<u8>>> {
    let hash_len = format.raw_len();
    if bytes.len() < 8 + hash_len || &bytes[..4] != b"CGPH" || bytes[4] != 1 {
        return None;
    }
    let wanted_hash = format.file_id();
    if bytes[5] != wanted_hash || usize::from(bytes[7]) != bases.len() {
        return None;
    }
    let (body, trailer) = bytes.split_at(bytes.len() - hash_len);
    if trailer != checksum || crate::checksum::of(body, format).ok()? != checksum {
        return None;
    }
    let chunks = usize::from(bytes[6]);
    let mut found = std::collections::HashMap::new();
    for n in 0..chunks {
        let row = bytes.get(8 + 12 * n..8 + 12 * n + 24)?;
        let start = u64::from_be_bytes(row[4..12].try_into().ok()?) as usize;
        let end = u64::from_be_bytes(row[16..24].try_into().ok()?) as usize;
        let id: [u8; 4] = row[..4].try_into().ok()?;
        found.insert(id, bytes.get(start..end)?);
    }
    // Without generation data v2 in every layer git would not use it in
    // any: such a chain is rewritten.
    found.get(b"GDA2")?;
    if !bases.is_empty() && found.get(b"BASE")?.to_vec() != bases.concat() {
        return None;
    }
    let oidl = found.get(b"OIDL")?;
    if oidl.len() % hash_len != 0 {
        return None;
    }
    Some(oidl.chunks(hash_len).map(<[u8]>::to_vec).collect())
}

/// How many of `layers` (bottom first) stay below a new layer of
/// `new_commits` commits; the others are merged into it.
pub(crate) fn kept_layers(layers: &[ExistingLayer], new_commits: usize) -> usize {
    let mut kept = layers.len();
    let mut merged = new_commits;
    while kept > 0 && layers[kept - 1].ids.len() <= SIZE_MULTIPLE.saturating_mul(merged) {
        merged += layers[kept - 1].ids.len();
        kept -= 1;
    }
    kept
}

/// Installs `content` (a layer whose bases are `kept`) as the new top of
/// the chain; removes a single `commit-graph` file then, and layers
/// no longer named once old enough.
pub(crate) fn install(
    repo: &Repo,
    kept: &[ExistingLayer],
    left: &[ExistingLayer],
    content: &[u8],
) -> Result<Vec<u8>, MaintError> {
    let hash_len = repo.object_format().raw_len();
    let checksum = content[content.len() - hash_len..].to_vec();
    // Layers leaving the chain: their grace period starts now.
    for layer in left {
        match repo.vfs.touch(&layer_path(repo, &layer.checksum)) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
    }
    crate::install::add_file(
        repo,
        &layer_path(repo, &checksum),
        content,
        "tmp_graph_",
        Component::CommitGraph,
    )?;
    let mut chain = String::new();
    for layer in kept {
        chain.push_str(&hex(&layer.checksum));
        chain.push('\n');
    }
    chain.push_str(&hex(&checksum));
    chain.push('\n');
    crate::install::replace_file(
        repo,
        &dir(repo).join(CHAIN),
        chain.as_bytes(),
        Component::CommitGraph,
    )?;
    let single = repo.objects_dir().join("info").join("commit-graph");
    match repo.vfs.unlink(&single) {
        Err(e) if !e.is_not_found() => return Err(e.into()),
        _ => {}
    }
    Ok(checksum)
}

/// Deletes layer files the chain does not name, once untouched for the
/// expiry; how many.
pub(crate) fn expire(repo: &Repo, named: &HashSet<Vec<u8>>) -> Result<usize, MaintError> {
    let Some(expiry) = repo.maint.redundant_pack_expire else {
        return Ok(0);
    };
    let entries = match repo.vfs.read_dir(&dir(repo)) {
        Ok(entries) => entries,
        Err(e) if e.is_not_found() => return Ok(0),
        Err(e) => return Err(e.into()),
    };
    let now = SystemTime::now();
    let mut deleted = 0;
    for entry in entries {
        let name = entry.name.to_string_lossy();
        let Some(checksum) = name
            .strip_prefix("graph-")
            .and_then(|n| n.strip_suffix(".graph"))
            .and_then(unhex)
        else {
            continue;
        };
        if named.contains(&checksum) {
            continue;
        }
        let path = dir(repo).join(&entry.name);
        let old = repo.vfs.stat(&path).is_ok_and(|meta| {
            now.duration_since(meta.modified).unwrap_or(Duration::ZERO) >= expiry
        });
        if old {
            match repo.vfs.unlink(&path) {
                Ok(()) => deleted += 1,
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(deleted)
}
