//! The `commit-graph` task: `objects/info/commit-graph` (git's format,
//! version 1) over every commit in the object database, so that walks read
//! parents, root trees, dates and generation numbers without inflating
//! commits.
//!
//! Layout: `CGPH`, version 1, hash id, the number of chunks, 0 base
//! graphs; a chunk table like the multi-pack-index's; `OIDF` (fanout),
//! `OIDL` (sorted ids), `CDAT` (per commit: root tree id, first and second
//! parent as positions — `0x70000000` for none, or for an octopus the
//! high bit and where its parents start in `EDGE` — then the topological
//! level in 30 bits with the top two bits of the committer time, then the
//! time's low 32 bits) and `EDGE` (parents beyond the first of octopus
//! merges, the last of each list with the high bit set); the checksum.
//!
//! Generation numbers are topological levels (1 for a root, one more than
//! the highest parent otherwise); no `GDAT` chunk is written, so git
//! uses them as they are. The graph must hold every parent of every
//! commit in it: a commit whose ancestry is incomplete in the database is
//! left out. A single `commit-graph` file takes precedence over a chain
//! in git's readers, so an existing chain is left as it is.
//!
//! Not written: changed-path Bloom filters.

use crate::{MaintError, Repo};
use refstore_fs::config::Component;
use refstore_odb::{ObjectKind, Odb, PackedAt, Packs};
use refstore_refs::ObjectId;
use std::collections::{HashMap, HashSet};

const PARENT_NONE: u32 = 0x7000_0000;
const EXTRA_EDGES: u32 = 0x8000_0000;
const LAST_EDGE: u32 = 0x8000_0000;
const GENERATION_MAX: u32 = 0x3fff_ffff;

/// What a walk needs of a commit.
pub(crate) struct Commit {
    /// Its root tree.
    pub(crate) tree: Vec<u8>,
    /// Its parents, in order.
    pub(crate) parents: Vec<Vec<u8>>,
    /// Its committer time.
    pub(crate) time: u64,
}

/// Runs the task.
pub fn run(repo: &Repo) -> Result<String, MaintError> {
    let odb = Odb::open(&repo.objects_dir(), repo.format)?;
    let ids = all_commit_ids(repo, &odb)?;
    let mut commits: HashMap<Vec<u8>, Commit> = HashMap::with_capacity(ids.len());
    for id in ids {
        let oid = ObjectId::from_raw(&id).ok_or_else(|| MaintError::Format("bad id".into()))?;
        if let Some((ObjectKind::Commit, data)) = odb.read(&oid)? {
            if let Some(commit) = parse_commit(&data, repo) {
                commits.insert(id, commit);
            }
        }
    }
    // Only commits whose whole ancestry is here.
    loop {
        let incomplete: Vec<Vec<u8>> = commits
            .iter()
            .filter(|(_, c)| c.parents.iter().any(|p| !commits.contains_key(p)))
            .map(|(id, _)| id.clone())
            .collect();
        if incomplete.is_empty() {
            break;
        }
        for id in incomplete {
            commits.remove(&id);
        }
    }
    if commits.is_empty() {
        return Ok("no commits".into());
    }
    let bytes = build(&commits, repo.hash())?;
    let target = repo.objects_dir().join("info").join("commit-graph");
    crate::install::replace_file(repo, &target, &bytes, Component::CommitGraph)?;
    Ok(format!("commit-graph of {} commits", commits.len()))
}

/// Ids of every commit in the packs and loose objects.
fn all_commit_ids(repo: &Repo, odb: &Odb) -> Result<HashSet<Vec<u8>>, MaintError> {
    let mut ids = HashSet::new();
    let packs = Packs::open(&repo.objects_dir(), repo.format)?;
    for pack in 0..packs.len() as u32 {
        for position in 0..packs.objects_in(pack) {
            let at = PackedAt { pack, position };
            let id = packs.id(at).as_bytes().to_vec();
            if ids.contains(&id) {
                continue;
            }
            let kind = match packs.kind(at)? {
                Some(kind) => Some(kind),
                None => {
                    let oid = ObjectId::from_raw(&id)
                        .ok_or_else(|| MaintError::Format("bad id".into()))?;
                    odb.kind(&oid)?
                }
            };
            if kind == Some(ObjectKind::Commit) {
                ids.insert(id);
            }
        }
    }
    for object in crate::loose::list(repo)? {
        if ids.contains(&object.id) {
            continue;
        }
        if let Some((ObjectKind::Commit, _)) = crate::loose::read_checked(repo, &object)? {
            ids.insert(object.id);
        }
    }
    Ok(ids)
}

/// Tree, parents and committer time of a commit.
pub(crate) fn parse_commit(data: &[u8], repo: &Repo) -> Option<Commit> {
    let hex = |s: &[u8]| {
        ObjectId::from_hex_in(s, repo.format)
            .ok()
            .map(|id| id.as_bytes().to_vec())
    };
    let mut tree = None;
    let mut parents = Vec::new();
    let mut time = None;
    for line in data.split(|&b| b == b'\n') {
        if line.is_empty() {
            break;
        }
        if let Some(rest) = line.strip_prefix(b"tree ") {
            tree = hex(rest);
        } else if let Some(rest) = line.strip_prefix(b"parent ") {
            parents.push(hex(rest)?);
        } else if let Some(rest) = line.strip_prefix(b"committer ") {
            // `<name> <<email>> <seconds> <zone>`: the number after the
            // last '>'.
            let after = rest
                .iter()
                .rposition(|&b| b == b'>')
                .map(|i| &rest[i + 1..])?;
            let text = String::from_utf8_lossy(after);
            time = Some(text.split_whitespace().next()?.parse::<u64>().unwrap_or(0));
        }
    }
    Some(Commit {
        tree: tree?,
        parents,
        time: time.unwrap_or(0),
    })
}

/// The commit-graph file.
fn build(commits: &HashMap<Vec<u8>, Commit>, hash: gix_hash::Kind) -> Result<Vec<u8>, MaintError> {
    let mut ids: Vec<&Vec<u8>> = commits.keys().collect();
    ids.sort();
    let position: HashMap<&[u8], u32> = ids
        .iter()
        .enumerate()
        .map(|(n, id)| (id.as_slice(), n as u32))
        .collect();
    let levels = levels(commits, &ids, &position);

    let mut oidf = Vec::with_capacity(1024);
    let mut counts = [0u32; 256];
    for id in &ids {
        counts[id[0] as usize] += 1;
    }
    let mut total = 0u32;
    for count in counts {
        total += count;
        oidf.extend_from_slice(&total.to_be_bytes());
    }
    let mut oidl = Vec::new();
    for id in &ids {
        oidl.extend_from_slice(id);
    }
    let mut cdat = Vec::new();
    let mut edge = Vec::new();
    for (n, id) in ids.iter().enumerate() {
        let commit = &commits[*id];
        cdat.extend_from_slice(&commit.tree);
        let pos = |p: &Vec<u8>| position[p.as_slice()];
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
        let level = levels[n].min(GENERATION_MAX);
        let high = (level << 2) | ((commit.time >> 32) as u32 & 0x3);
        cdat.extend_from_slice(&high.to_be_bytes());
        cdat.extend_from_slice(&(commit.time as u32).to_be_bytes());
    }
    let mut chunks: Vec<([u8; 4], &[u8])> =
        vec![(*b"OIDF", &oidf), (*b"OIDL", &oidl), (*b"CDAT", &cdat)];
    if !edge.is_empty() {
        chunks.push((*b"EDGE", &edge));
    }
    let mut out = Vec::new();
    out.extend_from_slice(b"CGPH");
    out.push(1);
    out.push(match hash {
        gix_hash::Kind::Sha256 => 2,
        _ => 1,
    });
    out.push(chunks.len() as u8);
    out.push(0);
    let mut offset = (out.len() + 12 * (chunks.len() + 1)) as u64;
    for (id, chunk) in &chunks {
        out.extend_from_slice(id);
        out.extend_from_slice(&offset.to_be_bytes());
        offset += chunk.len() as u64;
    }
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&offset.to_be_bytes());
    for (_, chunk) in &chunks {
        out.extend_from_slice(chunk);
    }
    crate::checksum::append(&mut out, hash)?;
    Ok(out)
}

/// Topological levels, computed without recursion (histories are deep).
fn levels(
    commits: &HashMap<Vec<u8>, Commit>,
    ids: &[&Vec<u8>],
    position: &HashMap<&[u8], u32>,
) -> Vec<u32> {
    let mut level = vec![0u32; ids.len()];
    let mut stack: Vec<u32> = Vec::new();
    for start in 0..ids.len() as u32 {
        if level[start as usize] != 0 {
            continue;
        }
        stack.push(start);
        while let Some(&n) = stack.last() {
            if level[n as usize] != 0 {
                stack.pop();
                continue;
            }
            let commit = &commits[ids[n as usize]];
            let mut ready = true;
            let mut max = 0;
            for parent in &commit.parents {
                let p = position[parent.as_slice()];
                match level[p as usize] {
                    0 => {
                        ready = false;
                        stack.push(p);
                    }
                    l => max = max.max(l),
                }
            }
            if ready {
                level[n as usize] = max.saturating_add(1);
                stack.pop();
            }
        }
    }
    level
}

/// Commits reachable from the refs that the commit-graph lacks, counted up
/// to `limit` (for `--auto`).
pub fn missing_commits(repo: &Repo, limit: usize) -> Result<usize, MaintError> {
    let Some(refs) = &repo.refs else {
        return Ok(0);
    };
    let in_graph = graph_ids(repo)?;
    let listing = refs
        .list(b"")
        .map_err(|e| MaintError::Refs(e.to_string()))?;
    let odb = Odb::open(&repo.objects_dir(), repo.format)?;
    let mut seen: HashSet<Vec<u8>> = HashSet::new();
    let mut queue: Vec<ObjectId> = Vec::new();
    for r in &listing.refs {
        if let refstore_refs::value::Target::Object(id) = &r.target {
            queue.push(*id);
        }
    }
    let mut missing = 0;
    while let Some(id) = queue.pop() {
        if missing >= limit {
            break;
        }
        let raw = id.as_bytes().to_vec();
        if in_graph.contains(&raw) || !seen.insert(raw) {
            continue;
        }
        let Some((ObjectKind::Commit, data)) = odb.read(&id)? else {
            continue;
        };
        missing += 1;
        if let Some(commit) = parse_commit(&data, repo) {
            for parent in commit.parents {
                if let Some(parent) = ObjectId::from_raw(&parent) {
                    queue.push(parent);
                }
            }
        }
    }
    Ok(missing)
}

/// The ids the current `objects/info/commit-graph` holds.
fn graph_ids(repo: &Repo) -> Result<HashSet<Vec<u8>>, MaintError> {
    let path = repo.objects_dir().join("info").join("commit-graph");
    let bytes = match repo.vfs.read_mapped(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(HashSet::new()),
        Err(e) => return Err(e.into()),
    };
    let hash_len = repo.hash().len_in_bytes();
    if bytes.len() < 8 || &bytes[..4] != b"CGPH" {
        return Ok(HashSet::new());
    }
    let chunks = bytes[6] as usize;
    for n in 0..chunks {
        let at = 8 + 12 * n;
        let Some(row) = bytes.get(at..at + 24) else {
            break;
        };
        if &row[..4] == b"OIDL" {
            let start = u64::from_be_bytes(row[4..12].try_into().expect("8")) as usize;
            let end = u64::from_be_bytes(row[16..24].try_into().expect("8")) as usize;
            if let Some(list) = bytes.get(start..end) {
                return Ok(list.chunks(hash_len).map(<[u8]>::to_vec).collect());
            }
        }
    }
    Ok(HashSet::new())
}
