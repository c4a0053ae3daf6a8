//! One commit-graph file in git's format (version 1): a single
//! `commit-graph`, or one layer `graph-<checksum>.graph` of a chain.
//!
//! Layout: `CGPH`, version 1, hash id, the number of chunks, the number of
//! base graphs below it in its chain; a chunk table like the
//! multi-pack-index's; then the chunks:
//!
//! - `OIDF` (fanout) and `OIDL` (the layer's commit ids, sorted);
//! - `CDAT`, per commit: root tree id, first and second parent as
//!   positions in the whole chain (a layer's commits are numbered after
//!   those of its bases; `0x70000000` for none, or for an octopus the high
//!   bit and where its parents start in `EDGE`), then the topological
//!   level in 30 bits with the top two bits of the committer time, then
//!   the time's low 32 bits;
//! - `GDA2`, per commit, its corrected commit date (the larger of its
//!   committer time and one more than the corrected dates of its parents)
//!   as an offset from its committer time; an offset that needs more than
//!   31 bits is stored in `GDO2` (8 bytes each) and `GDA2` holds the high
//!   bit and its index there;
//! - `EDGE` (parents beyond the first of octopus merges, the last of each
//!   list with the high bit set);
//! - `BASE`, in a layer with bases: their checksums, bottom first.
//!
//! The file ends with the checksum of everything before it.

use crate::commit::Commit;
use crate::error::MaintError;
use refstore_refs::ObjectFormat;
use std::collections::HashMap;

const PARENT_NONE: u32 = 0x7000_0000;
const EXTRA_EDGES: u32 = 0x8000_0000;
const LAST_EDGE: u32 = 0x8000_0000;
const GENERATION_MAX: u32 = 0x3fff_ffff;
const OFFSET_OVERFLOW: u32 = 0x8000_0000;

/// Generation numbers of a commit: both kinds git stores.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Generation {
    /// Topological level (1 for a root).
    pub(crate) level: u32,
    /// Corrected commit date.
    pub(crate) corrected: u64,
}

/// Generation numbers of every commit of `commits` (whose parents must
/// all be in it), computed without recursion (histories are deep).
pub(crate) fn generations(commits: &HashMap<Vec<u8>, Commit>) -> HashMap<&[u8], Generation> {
    let mut done: HashMap<&[u8], Generation> = HashMap::with_capacity(commits.len());
    let mut stack: Vec<&[u8]> = Vec::new();
    for start in commits.keys() {
        if done.contains_key(start.as_slice()) {
            continue;
        }
        stack.push(start);
        while let Some(&id) = stack.last() {
            if done.contains_key(id) {
                stack.pop();
                continue;
            }
            let commit = &commits[id];
            let mut ready = true;
            let mut level = 0u32;
            let mut corrected = commit.time;
            for parent in &commit.parents {
                match done.get(parent.as_slice()) {
                    Some(g) => {
                        level = level.max(g.level);
                        corrected = corrected.max(g.corrected.saturating_add(1));
                    }
                    None => {
                        ready = false;
                        stack.push(parent);
                    }
                }
            }
            if ready {
                done.insert(
                    id,
                    Generation {
                        level: level.saturating_add(1),
                        corrected,
                    },
                );
                stack.pop();
            }
        }
    }
    done
}

/// What one file holds and how it refers to the rest of its chain.
pub(crate) struct Layer<'a> {
    /// Its commits, sorted.
    pub(crate) ids: &'a [&'a [u8]],
    /// Every commit of the chain up to this layer: its position.
    pub(crate) position: &'a dyn Fn(&[u8]) -> u32,
    /// Checksums of the layers below, bottom first.
    pub(crate) bases: &'a [Vec<u8>],
}

/// The bytes of the file for `layer`.
pub(crate) fn build(
    layer: &Layer<'_>,
    commits: &HashMap<Vec<u8>, Commit>,
    generations: &HashMap<&[u8], Generation>,
    format: ObjectFormat,
) -> Result<Vec<u8>, MaintError> {
    let ids = layer.ids;
    let mut oidf = Vec::with_capacity(1024);
    let mut counts = [0u32; 256];
    for id in ids {
        counts[id[0] as usize] += 1;
    }
    let mut total = 0u32;
    for count in counts {
        total += count;
        oidf.extend_from_slice(&total.to_be_bytes());
    }
    let oidl: Vec<u8> = ids.concat();
    let mut cdat = Vec::with_capacity(ids.len() * (format.raw_len() + 16));
    let mut gda2 = Vec::with_capacity(ids.len() * 4);
    let mut gdo2 = Vec::new();
    let mut edge = Vec::new();
    for id in ids {
        let commit = &commits[*id];
        cdat.extend_from_slice(&commit.tree);
        let pos = |p: &Vec<u8>| (layer.position)(p);
        let first = commit.parents.first().map_or(PARENT_NONE, pos);
        let second = match commit.parents.len() {
            0 | 1 => PARENT_NONE,
            2 => pos(&commit.parents[1]),
            _ => {
                let start = (edge.len() / 4) as u32;
                let rest = &commit.parents[1..];
                for (i, parent) in rest.iter().enumerate() {
                    let mut value = pos(parent);
                    if i + 1 == rest.len() {
                        value |= LAST_EDGE;
                    }
                    edge.extend_from_slice(&value.to_be_bytes());
                }
                EXTRA_EDGES | start
            }
        };
        cdat.extend_from_slice(&first.to_be_bytes());
        cdat.extend_from_slice(&second.to_be_bytes());
        let generation = generations[*id];
        let level = generation.level.min(GENERATION_MAX);
        let high = (level << 2) | ((commit.time >> 32) as u32 & 0x3);
        cdat.extend_from_slice(&high.to_be_bytes());
        cdat.extend_from_slice(&(commit.time as u32).to_be_bytes());
        let offset = generation.corrected - commit.time;
        if offset < u64::from(OFFSET_OVERFLOW) {
            gda2.extend_from_slice(&(offset as u32).to_be_bytes());
        } else {
            let index = (gdo2.len() / 8) as u32;
            gda2.extend_from_slice(&(OFFSET_OVERFLOW | index).to_be_bytes());
            gdo2.extend_from_slice(&offset.to_be_bytes());
        }
    }
    let base: Vec<u8> = layer.bases.concat();
    let mut chunks: Vec<([u8; 4], &[u8])> = vec![
        (*b"OIDF", &oidf),
        (*b"OIDL", &oidl),
        (*b"CDAT", &cdat),
        (*b"GDA2", &gda2),
    ];
    if !gdo2.is_empty() {
        chunks.push((*b"GDO2", &gdo2));
    }
    if !edge.is_empty() {
        chunks.push((*b"EDGE", &edge));
    }
    if !base.is_empty() {
        chunks.push((*b"BASE", &base));
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"CGPH");
    out.push(1);
    out.push(format.file_id());
    out.push(chunks.len() as u8);
    out.push(u8::try_from(layer.bases.len()).map_err(|_| {
        MaintError::Format("a commit-graph chain cannot have more than 255 layers".into())
    })?);
    crate::chunk_file::append_chunks(&mut out, &chunks);
    crate::checksum::append(&mut out, format)?;
    Ok(out)
}
