//! The reachability bitmap of a new multi-pack-index: for the commits
//! [`crate::bitmap_select`] chooses among the history of the refs, every
//! object reachable from each, as bits in the index's pseudo-pack order;
//! and the type of every object of the index.
//!
//! A commit's set is built from those of chosen commits below it
//! ([`crate::bitmap_walk`]), so chosen commits are done oldest first.
//!
//! A bitmap must hold everything reachable from its commit, and it can
//! only number objects of the index: a commit whose history reaches an
//! object outside it (a loose object, a missing one; submodule commits
//! aside) gets no bitmap, nor does anything above it. Such commits are
//! known before any walk where it is cheap to tell (a commit, its root
//! tree or a parent outside the index: a push stored loose, or, on a
//! cluster node's copy, a push whose pack another node holds), so the
//! choice passes over them to the history below; a walk that still meets
//! a missing object deeper in a tree marks that commit and everything
//! above it, and the choice moves down its first-parent chain. Each
//! missing object thus costs one walk, however long the history above
//! it: a copy with a hole near its root gets no bitmap at the cost of one
//! pass, not a walk of the whole history per chosen commit.

use crate::bitmap_file::Entry;
use crate::bitmap_walk::{NameHashes, Numbering, Reached, Walk};
use crate::commit::{parse_commit, Commit};
use crate::error::MaintError;
use crate::midx::Written;
use crate::repo::Repo;
use refstore_odb::ewah::Bitmap;
use refstore_odb::{ObjectKind, Odb, PackedAt, Packs};
use refstore_refs::value::Target;
use refstore_refs::{ObjectId, RefName};
use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;

/// A bitmap file ready to be installed.
pub struct Built {
    /// The file.
    pub bytes: Vec<u8>,
    /// How many commits it stores a bitmap for.
    pub commits: usize,
}

/// The bitmap of the multi-pack-index `written`, whose packs are (in the
/// order given to [`crate::midx::write`]) `index_paths`; `None` if no
/// commit can have one (no refs, or none reaching only indexed objects).
pub fn build(
    repo: &Repo,
    written: &Written,
    index_paths: &[PathBuf],
) -> Result<Option<Built>, MaintError> {
    let Some(refs) = &repo.refs else {
        return Ok(None);
    };
    let odb = repo.objects()?;
    let midx = &written.midx;
    let mut bit_of = vec![0u32; written.chosen.len()];
    for (bit, &position) in written.order.iter().enumerate() {
        bit_of[position as usize] = bit as u32;
    }
    let numbering = Numbering {
        midx,
        bit_of: &bit_of,
    };

    let tips = tips(refs.as_ref(), &odb)?;
    let commits = history(repo, &odb, &tips)?;
    let generation = generations(&commits);
    let mut oldest_first: Vec<&[u8]> = commits.keys().map(Vec::as_slice).collect();
    oldest_first.sort_by(|a, b| generation[a].cmp(&generation[b]).then(a.cmp(b)));
    let mut broken: HashSet<&[u8]> = oldest_first
        .iter()
        .copied()
        .filter(|id| !midx.contains(id) || !midx.contains(&commits[*id].tree))
        .collect();
    let mut complete = complete_commits(&oldest_first, &commits, &broken);
    let mut chosen = crate::bitmap_select::select(&tips, &commits, &|id| complete.contains(id));
    chosen.sort_by(|a, b| {
        generation[a.as_slice()]
            .cmp(&generation[b.as_slice()])
            .then(a.cmp(b))
    });

    let walk = Walk {
        repo,
        odb: &odb,
        commits: &commits,
        generation: &generation,
        numbering: &numbering,
    };
    let mut entries: Vec<Entry> = Vec::new();
    let mut names = NameHashes::new(written.chosen.len());
    let mut stored: HashMap<&[u8], usize> = HashMap::new();
    // A chosen commit found to reach a missing object deeper in a tree
    // hands its choice down its first-parent chain, for at most a
    // spacing's worth of commits, to the first one still complete.
    let mut pending: VecDeque<(&[u8], usize)> = chosen.iter().map(|c| (c.as_slice(), 0)).collect();
    while let Some((commit, tries)) = pending.pop_front() {
        if stored.contains_key(commit) {
            continue;
        }
        if complete.contains(commit) {
            match walk.reachable(commit, &stored, &entries, &mut names)? {
                Reached::All(reachable) => {
                    let Some(position) = midx.position(commit) else {
                        continue;
                    };
                    stored.insert(commit, entries.len());
                    entries.push(Entry {
                        position,
                        reachable,
                    });
                    continue;
                }
                Reached::Incomplete(at) => {
                    // Only `at` and what lies above it can change.
                    let from = oldest_first.partition_point(|id| generation[id] < generation[at]);
                    broken.insert(at);
                    drop_incomplete(&oldest_first[from..], &commits, &broken, &mut complete);
                }
            }
        }
        if tries < crate::bitmap_select::SPACING {
            if let Some(parent) = commits[commit]
                .parents
                .first()
                .filter(|p| commits.contains_key(*p))
            {
                pending.push_back((parent, tries + 1));
            }
        }
    }
    if entries.is_empty() {
        return Ok(None);
    }
    let types = types(repo, written, index_paths, &odb, &bit_of)?;
    let bytes = crate::bitmap_file::write(
        &midx.checksum,
        &types,
        &entries,
        &names.hashes,
        repo.object_format(),
    )?;
    Ok(Some(Built {
        bytes,
        commits: entries.len(),
    }))
}

/// The commits the refs (and a detached `HEAD`) point at, tags peeled.
fn tips(refs: &dyn refstore_refs::backend::Backend, odb: &Odb) -> Result<Vec<Vec<u8>>, MaintError> {
    let refs_error = |e: refstore_refs::ReadError| MaintError::Refs(e.to_string());
    let mut ids: Vec<ObjectId> = Vec::new();
    for r in refs.list(b"").map_err(refs_error)?.refs {
        if let Target::Object(id) = r.target {
            ids.push(id);
        }
    }
    if let Ok(head) = RefName::new("HEAD") {
        if let Some(id) = refs
            .resolve(&head)
            .map_err(refs_error)?
            .and_then(|resolved| resolved.id)
        {
            ids.push(id);
        }
    }
    let mut tips = Vec::with_capacity(ids.len());
    for id in ids {
        // A tag whose target is missing names no commit to choose.
        let peeled = odb.peel(&id).unwrap_or(None).unwrap_or(id);
        tips.push(peeled.as_bytes().to_vec());
    }
    tips.sort();
    tips.dedup();
    Ok(tips)
}

/// Every commit reachable from `tips` that can be read (tips that are no
/// commits are left out).
fn history(
    repo: &Repo,
    odb: &Odb,
    tips: &[Vec<u8>],
) -> Result<HashMap<Vec<u8>, Commit>, MaintError> {
    let mut commits: HashMap<Vec<u8>, Commit> = HashMap::new();
    let mut queue: Vec<Vec<u8>> = tips.to_vec();
    while let Some(id) = queue.pop() {
        if commits.contains_key(&id) {
            continue;
        }
        let Some(oid) = ObjectId::from_raw(&id) else {
            continue;
        };
        let Some((ObjectKind::Commit, data)) = odb.read(&oid)? else {
            continue;
        };
        let Some(commit) = parse_commit(&data, repo) else {
            continue;
        };
        queue.extend(
            commit
                .parents
                .iter()
                .filter(|p| !commits.contains_key(*p))
                .cloned(),
        );
        commits.insert(id, commit);
    }
    Ok(commits)
}

/// The commits of `oldest_first` (every commit of `commits`, parents
/// before children) that neither are in `broken` nor have an ancestor
/// there or outside `commits`: those that can have a bitmap.
fn complete_commits<'c>(
    oldest_first: &[&'c [u8]],
    commits: &HashMap<Vec<u8>, Commit>,
    broken: &HashSet<&[u8]>,
) -> HashSet<&'c [u8]> {
    let mut complete: HashSet<&[u8]> = oldest_first.iter().copied().collect();
    drop_incomplete(oldest_first, commits, broken, &mut complete);
    complete
}

/// Removes from `complete` the commits of `oldest_first` (parents before
/// children) that are in `broken` or have a parent not in `complete`.
fn drop_incomplete(
    oldest_first: &[&[u8]],
    commits: &HashMap<Vec<u8>, Commit>,
    broken: &HashSet<&[u8]>,
    complete: &mut HashSet<&[u8]>,
) {
    for &id in oldest_first {
        let parents_complete = commits[id]
            .parents
            .iter()
            .all(|p| complete.contains(p.as_slice()));
        if !parents_complete || broken.contains(id) {
            complete.remove(id);
        }
    }
}

/// Topological levels: 1 for a commit without (readable) parents, one more
/// than its highest parent otherwise.
fn generations(commits: &HashMap<Vec<u8>, Commit>) -> HashMap<&[u8], u32> {
    let mut level: HashMap<&[u8], u32> = HashMap::with_capacity(commits.len());
    for start in commits.keys() {
        let mut stack: Vec<&[u8]> = vec![start];
        while let Some(&id) = stack.last() {
            if level.contains_key(id) {
                stack.pop();
                continue;
            }
            let parents = &commits[id].parents;
            let pending: Vec<&[u8]> = parents
                .iter()
                .map(Vec::as_slice)
                .filter(|p| commits.contains_key(*p) && !level.contains_key(*p))
                .collect();
            if pending.is_empty() {
                let highest = parents
                    .iter()
                    .filter_map(|p| level.get(p.as_slice()))
                    .max()
                    .copied()
                    .unwrap_or(0);
                level.insert(id, highest + 1);
                stack.pop();
            } else {
                stack.extend(pending);
            }
        }
    }
    level
}

/// The commits, trees, blobs and tags among the index's objects, as bits.
fn types(
    repo: &Repo,
    written: &Written,
    index_paths: &[PathBuf],
    odb: &Odb,
    bit_of: &[u32],
) -> Result<[Bitmap; 4], MaintError> {
    let packs = Packs::open_indexes(index_paths, repo.object_format())?;
    // `Packs` numbers packs its own way: find each by its path.
    let number: Vec<u32> = index_paths
        .iter()
        .map(|path| {
            let pack = path.with_extension("pack");
            (0..packs.len() as u32)
                .find(|&n| packs.pack_path(n) == pack)
                .ok_or_else(|| MaintError::Format(format!("{} was not opened", pack.display())))
        })
        .collect::<Result<_, _>>()?;
    let mut types: [Bitmap; 4] = Default::default();
    for (position, chosen) in written.chosen.iter().enumerate() {
        let at = PackedAt {
            pack: number[chosen.pack],
            position: chosen.position,
        };
        let kind = match packs.kind(at)? {
            Some(kind) => Some(kind),
            // A delta against an object of another pack.
            None => match ObjectId::from_raw(packs.id(at).as_bytes()) {
                Some(id) => odb.kind(&id)?,
                None => None,
            },
        };
        let slot = match kind {
            Some(ObjectKind::Commit) => 0,
            Some(ObjectKind::Tree) => 1,
            Some(ObjectKind::Blob) => 2,
            Some(ObjectKind::Tag) => 3,
            None => {
                return Err(MaintError::Format(format!(
                    "object {} of the multi-pack-index cannot be read",
                    packs.id(at)
                )))
            }
        };
        types[slot].set(bit_of[position] as usize);
    }
    Ok(types)
}
