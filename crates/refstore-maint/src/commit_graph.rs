//! The `commit-graph` task: git's commit-graph over every commit in the
//! object database, so that walks read parents, root trees, dates and
//! generation numbers without inflating commits. Written as git
//! maintenance writes it (`git commit-graph write --split`): the commits
//! not in the current chain go into a new layer, merged with the layers
//! above a geometric size ([`crate::commit_graph_chain`]), in the format
//! of [`crate::commit_graph_file`] with generation data v2.
//!
//! The graph must hold every parent of every commit in it: a commit whose
//! ancestry is incomplete in the database is left out.
//!
//! Not written: changed-path Bloom filters.

use crate::commit::{parse_commit, Commit};
use crate::commit_graph_chain as chain;
use crate::error::MaintError;
use crate::repo::Repo;
use refstore_odb::{ObjectKind, Odb, PackedAt, Packs};
use refstore_refs::ObjectId;
use std::collections::{HashMap, HashSet};

/// Runs the task.
pub fn run(repo: &Repo) -> Result<String, MaintError> {
    let commits = complete_commits(repo)?;
    if commits.is_empty() {
        return Ok("no commits".into());
    }
    let generations = crate::commit_graph_file::generations(&commits);
    let mut layers = chain::read(repo)?;
    // A chain holding commits the database lacks (pruned since) is
    // replaced as a whole.
    if layers
        .iter()
        .any(|l| l.ids.iter().any(|id| !commits.contains_key(id)))
    {
        layers.clear();
    }
    let in_chain: HashSet<&[u8]> = layers
        .iter()
        .flat_map(|l| l.ids.iter().map(Vec::as_slice))
        .collect();
    let mut new: Vec<&[u8]> = commits
        .keys()
        .map(Vec::as_slice)
        .filter(|id| !in_chain.contains(id))
        .collect();
    let single = repo.objects_dir().join("info").join("commit-graph");
    if new.is_empty() {
        match repo.vfs.unlink(&single) {
            Err(e) if !e.is_not_found() => return Err(e.into()),
            _ => {}
        }
        let named: HashSet<Vec<u8>> = layers.iter().map(|l| l.checksum.clone()).collect();
        let expired = chain::expire(repo, &named)?;
        return Ok(format!(
            "commit-graph chain of {} commits in {} layers is up to date; \
             {expired} old layers deleted",
            commits.len(),
            layers.len()
        ));
    }
    let kept = chain::kept_layers(&layers, new.len());
    let (below, merged) = layers.split_at(kept);
    new.extend(merged.iter().flat_map(|l| l.ids.iter().map(Vec::as_slice)));
    new.sort_unstable();
    let mut position: HashMap<&[u8], u32> = HashMap::with_capacity(commits.len());
    for id in below
        .iter()
        .flat_map(|l| l.ids.iter().map(Vec::as_slice))
        .chain(new.iter().copied())
    {
        let next = position.len() as u32;
        position.insert(id, next);
    }
    let bases: Vec<Vec<u8>> = below.iter().map(|l| l.checksum.clone()).collect();
    let lookup = |id: &[u8]| position[id];
    let layer = crate::commit_graph_file::Layer {
        ids: &new,
        position: &lookup,
        bases: &bases,
    };
    let bytes =
        crate::commit_graph_file::build(&layer, &commits, &generations, repo.object_format())?;
    let checksum = chain::install(repo, below, merged, &bytes)?;
    let mut named: HashSet<Vec<u8>> = bases.into_iter().collect();
    named.insert(checksum);
    let expired = chain::expire(repo, &named)?;
    Ok(format!(
        "commit-graph chain of {} commits: a layer of {} commits on {} layers \
         ({} merged into it); {expired} old layers deleted",
        commits.len(),
        new.len(),
        below.len(),
        merged.len()
    ))
}

/// Every commit of the database whose whole ancestry is there too.
fn complete_commits(repo: &Repo) -> Result<HashMap<Vec<u8>, Commit>, MaintError> {
    let odb = repo.objects()?;
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
    Ok(commits)
}

/// Ids of every commit in the packs and loose objects.
fn all_commit_ids(repo: &Repo, odb: &Odb) -> Result<HashSet<Vec<u8>>, MaintError> {
    let mut ids = HashSet::new();
    let packs = Packs::open(repo.objects_dir(), repo.object_format())?;
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
    for object in crate::loose_files::list(repo)? {
        if ids.contains(&object.id) {
            continue;
        }
        if let Some((ObjectKind::Commit, _)) = crate::loose_files::read_checked(repo, &object)? {
            ids.insert(object.id);
        }
    }
    Ok(ids)
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
    let odb = repo.objects()?;
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

/// The ids the current commit-graph holds: the single file's, or the
/// chain's.
fn graph_ids(repo: &Repo) -> Result<HashSet<Vec<u8>>, MaintError> {
    let layers = chain::read(repo)?;
    if !layers.is_empty() {
        return Ok(layers.into_iter().flat_map(|l| l.ids).collect());
    }
    let path = repo.objects_dir().join("info").join("commit-graph");
    let bytes = match repo.vfs.read_mapped(&path) {
        Ok(bytes) => bytes,
        Err(e) if e.is_not_found() => return Ok(HashSet::new()),
        Err(e) => return Err(e.into()),
    };
    let hash_len = repo.object_format().raw_len();
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
