//! Which objects a pack must hold: everything reachable from the wants,
//! less what the client has, judged from the common commits.
//!
//! Commits are walked newest first from the wants and the common commits
//! together; a commit reached from a common one is uninteresting, and the
//! walk stops once only uninteresting commits remain. The trees of the
//! uninteresting parents of sent commits (the "edges") are what the client
//! certainly has: their trees and blobs are left out, compared path by path
//! (`sparse.rs`), or, past a few edges, all of what they hold. Objects the
//! client has only through older history may still be sent, which costs
//! bytes but never correctness: this is the trade git makes too. For the
//! same reason a commit missing below one the client has ends the walk
//! there instead of failing it, as in git: a cluster node can hold a
//! push's commit without the parent it missed.
//!
//! A shallow request walks with grafts (`shallow.rs`): the client's
//! shallow commits and the new boundary have no parents, so nothing
//! behind the client's boundary is taken as its own. In a thin pack the
//! whole trees of the client's commits (its haves and the shallow commits
//! that gain their parents) are then left out as well, as git's
//! `pack-objects --shallow` does; they are on the client, as every
//! commit's tree is, however shallow its history.
//!
//! Where the repository has a reachability bitmap, `bitmap_walk.rs` counts
//! instead, and this walk is what remains without one.

use super::contents::{include_tags, path_hash, IdSet, PackContents, NO_PATH, ROOT};
use super::graph::Graph;
use super::tree_scan::scan_tree;
use super::versions::{LastVersions, Unchanged};
use super::UploadPackError;
use refstore_hash::IdHasher;
use refstore_refs::ObjectId;
use std::collections::{BinaryHeap, HashMap};

/// A commit's state during the walk.
const QUEUED: u8 = 1;
const UNINTERESTING: u8 = 2;
const DONE: u8 = 4;

/// What a shallow request changes in the choice of trees and blobs, as
/// git's `pack-objects --shallow` (which upload-pack runs whenever the
/// walk has shallow grafts) chooses them.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct ShallowEdges<'a> {
    /// The client's shallow commits that gain their parents: commits the
    /// client has, though no sent commit is their child.
    pub unshallowed: &'a [ObjectId],
    /// The walk has shallow grafts and the pack is thin: the whole trees
    /// of the client's commits (the common ones and `unshallowed`) are
    /// then the client's, not only those of the edges, since below its
    /// shallow boundary the client lacks the history that an edge's tree
    /// would otherwise stand for. Without a thin pack git leaves only the
    /// edges' trees out, and the trees of `unshallowed` are sent again.
    pub aggressive: bool,
}

/// The commits a request names, for [`exclude_client_trees`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClientCommits<'a> {
    /// The wants as the client sent them (tags not peeled).
    pub wants: &'a [ObjectId],
    /// The haves in common.
    pub common: &'a [ObjectId],
    /// The commits the walk chose to send.
    pub sent: &'a [ObjectId],
}

/// Computes what to send for `wants` when the client has `common`;
/// `tags_to_include` lists annotated tags to send when the objects they
/// point to are sent (`include-tag`); `shallow` says how a shallow
/// request's boundary changes what is the client's.
pub(crate) fn pack_contents(
    graph: &mut Graph,
    wants: &[ObjectId],
    common: &[ObjectId],
    tags_to_include: &[ObjectId],
    shallow: ShallowEdges<'_>,
) -> Result<PackContents, UploadPackError> {
    if let Some(contents) =
        super::bitmap_walk::pack_contents(graph, wants, common, tags_to_include)?
    {
        return Ok(contents);
    }
    let mut tags = Vec::new();
    let mut want_commits = Vec::new();
    let mut want_others = Vec::new();
    for want in wants {
        let peeled = graph.peel(want, |tag| tags.push(tag))?;
        match peeled {
            Some((id, gix_object::Kind::Commit)) => want_commits.push(id),
            Some((id, kind)) => want_others.push((id, kind == gix_object::Kind::Tree)),
            None => {
                return Err(UploadPackError::Objects(format!(
                "the object {want} or an object it names is missing: the repository is incomplete"
            )))
            }
        }
    }
    let have_commits = have_commits(graph, common)?;
    let (commits, mut edges) = walk_commits(graph, &want_commits, &have_commits)?;
    let mut excluded = IdSet::default();
    if shallow.aggressive {
        let request = ClientCommits {
            wants,
            common,
            sent: &commits,
        };
        exclude_client_trees(graph, request, shallow, &edges, &mut excluded)?;
        // Their trees are the client's versions for thin deltas.
        edges.extend(shallow.unshallowed.iter().copied());
    }
    // A clone has no edges: nothing to compare with.
    let sparse = !edges.is_empty() && edges.len() <= super::sparse::MAX_BOUNDARY;
    let mut edge_trees = Vec::new();
    for &edge in &edges {
        let tree = graph
            .commit(&edge)?
            .map(|commit| commit.tree)
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {edge}")))?;
        match sparse {
            true => edge_trees.push(tree),
            false => exclude_tree(graph, tree, &mut excluded)?,
        }
    }

    let mut contents = PackContents::default();
    for commit in &commits {
        contents.add(*commit, NO_PATH);
    }
    for tag in tags {
        contents.add(tag, NO_PATH);
    }
    let mut roots = Vec::with_capacity(commits.len());
    let mut versions = LastVersions::default();
    for commit in &commits {
        let tree = graph
            .commit(commit)?
            .map(|c| c.tree)
            .expect("walked commits exist");
        match sparse {
            true => roots.push(tree),
            false => add_tree(graph, tree, &excluded, &mut contents, &mut versions)?,
        }
    }
    // A wanted tree is walked as a commit's root tree is: path by path
    // against the edges' trees, where the client's objects are found.
    if sparse {
        roots.extend(
            want_others
                .iter()
                .filter(|(_, is_tree)| *is_tree)
                .map(|(id, _)| *id),
        );
        let loose: Vec<ObjectId> = want_others
            .iter()
            .filter(|(_, is_tree)| !is_tree)
            .map(|(id, _)| *id)
            .collect();
        let held =
            super::sparse::add_trees(graph, &roots, &edge_trees, &excluded, &loose, &mut contents)?;
        want_others.retain(|(id, _)| !held.contains(id));
    }
    for (id, is_tree) in want_others {
        if is_tree {
            if !sparse {
                add_tree(graph, id, &excluded, &mut contents, &mut versions)?;
            }
        } else if !excluded.contains(&id) {
            contents.add(id, path_hash(ROOT, b""));
        }
    }
    include_tags(graph, tags_to_include, &mut contents)?;
    contents.boundary = edges.into_iter().collect();
    if !sparse {
        contents.client_has = excluded;
    }
    graph.forget_walk();
    Ok(contents)
}

/// The interesting commits, newest first, and the uninteresting parents of
/// those.
pub(crate) fn walk_commits(
    graph: &mut Graph,
    wants: &[ObjectId],
    haves: &[ObjectId],
) -> Result<(Vec<ObjectId>, IdSet), UploadPackError> {
    let mut flags: HashMap<ObjectId, u8, IdHasher> = HashMap::default();
    let mut queue = BinaryHeap::new();
    // Queued commits not (yet) known to be uninteresting: the walk ends
    // when none remain.
    let mut interesting_queued = 0usize;
    for have in haves {
        let time = commit_time(graph, have)?;
        flags.insert(*have, QUEUED | UNINTERESTING);
        queue.push((time, *have));
    }
    for want in wants {
        if flags.contains_key(want) {
            continue;
        }
        let time = commit_time(graph, want)?;
        flags.insert(*want, QUEUED);
        queue.push((time, *want));
        interesting_queued += 1;
    }

    let mut commits = Vec::new();
    while interesting_queued > 0 {
        let Some((_, id)) = queue.pop() else { break };
        let state = flags.get_mut(&id).expect("queued commits have flags");
        if *state & DONE != 0 {
            continue;
        }
        *state |= DONE;
        let uninteresting = *state & UNINTERESTING != 0;
        if !uninteresting {
            interesting_queued -= 1;
            commits.push(id);
        }
        let commit = graph
            .commit(&id)?
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))?;
        for parent in &commit.parents {
            let state = flags.entry(*parent).or_insert(0);
            if uninteresting {
                if *state & (QUEUED | DONE | UNINTERESTING) == QUEUED {
                    interesting_queued -= 1;
                }
                *state |= UNINTERESTING;
            }
            if *state & QUEUED == 0 {
                let Some(found) = graph.commit(parent)? else {
                    // Below a commit the client has, history may be
                    // missing here (a cluster node that missed a push
                    // holds the next one's commit without its parent):
                    // the client has it all the same, and the walk ends
                    // there, as git's does. What the wants reach must
                    // be here.
                    if *state & UNINTERESTING != 0 {
                        continue;
                    }
                    return Err(UploadPackError::Objects(format!("missing commit {parent}")));
                };
                *state |= QUEUED;
                if *state & UNINTERESTING == 0 {
                    interesting_queued += 1;
                }
                queue.push((found.time, *parent));
            }
        }
    }

    // Only commits that are here are queued: an edge's tree can be read.
    let mut edges = IdSet::default();
    for id in &commits {
        let commit = graph.commit(id)?.expect("walked commits exist");
        for parent in &commit.parents {
            let client_has = UNINTERESTING | QUEUED;
            if flags
                .get(parent)
                .is_some_and(|f| f & client_has == client_has)
            {
                edges.insert(*parent);
            }
        }
    }
    // A client that has a wanted commit already needs nothing of it.
    commits.retain(|id| flags.get(id).is_some_and(|f| f & UNINTERESTING == 0));
    Ok((commits, edges))
}

fn commit_time(graph: &mut Graph, id: &ObjectId) -> Result<i64, UploadPackError> {
    graph
        .commit(id)?
        .map(|commit| commit.time)
        .ok_or_else(|| UploadPackError::Objects(format!("missing commit {id}")))
}

/// The commits the haves `common` peel to.
pub(crate) fn have_commits(
    graph: &mut Graph,
    common: &[ObjectId],
) -> Result<Vec<ObjectId>, UploadPackError> {
    let mut commits = Vec::new();
    for have in common {
        if let Some((id, gix_object::Kind::Commit)) = graph.peel(have, |_| {})? {
            commits.push(id);
        }
    }
    Ok(commits)
}

/// For an aggressive shallow pack, adds the trees of the client's commits
/// and what they hold to `excluded`, as git's `--objects-edge-aggressive`
/// marks them. The client's commits are those named in the request that
/// are commits themselves, not tags: the haves, the unshallowed commits,
/// and the wants the walk found the client has (`wants` not among the
/// `sent` commits). A tree already taken as the client's (the root tree of
/// an edge, which the path-by-path walk compares) is not entered again.
pub(crate) fn exclude_client_trees(
    graph: &mut Graph,
    request: ClientCommits<'_>,
    shallow: ShallowEdges<'_>,
    edges: &IdSet,
    excluded: &mut IdSet,
) -> Result<(), UploadPackError> {
    let sent: IdSet = request.sent.iter().copied().collect();
    let mut client_commits = Vec::new();
    for have in request.common.iter().chain(shallow.unshallowed) {
        if graph.kind(have)? == Some(gix_object::Kind::Commit) {
            client_commits.push(*have);
        }
    }
    for want in request.wants {
        if !sent.contains(want) && graph.kind(want)? == Some(gix_object::Kind::Commit) {
            client_commits.push(*want);
        }
    }
    let mut marked = IdSet::default();
    for edge in edges {
        let tree = graph
            .commit(edge)?
            .map(|commit| commit.tree)
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {edge}")))?;
        marked.insert(tree);
    }
    for commit in &client_commits {
        let tree = graph
            .commit(commit)?
            .map(|commit| commit.tree)
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {commit}")))?;
        if !marked.insert(tree) {
            continue;
        }
        excluded.insert(tree);
        let mut stack = vec![tree];
        while let Some(tree) = stack.pop() {
            graph.scan_tree(&tree, |entry| {
                if entry.is_commit || !marked.insert(entry.id()) {
                    return;
                }
                excluded.insert(entry.id());
                if entry.is_tree {
                    stack.push(entry.id());
                }
            })?;
        }
    }
    Ok(())
}

/// Adds `tree` and everything below it to `excluded`.
pub(crate) fn exclude_tree(
    graph: &mut Graph,
    tree: ObjectId,
    excluded: &mut IdSet,
) -> Result<(), UploadPackError> {
    let mut stack = vec![tree];
    excluded.insert(tree);
    while let Some(tree) = stack.pop() {
        graph.scan_tree(&tree, |entry| {
            if !entry.is_commit && excluded.insert(entry.id()) && entry.is_tree {
                stack.push(entry.id());
            }
        })?;
    }
    Ok(())
}

/// Adds `tree` and everything below it that is not excluded or added,
/// noting the path each is met at. Entries a directory's previous version
/// (in `versions`) had are skipped: they were dealt with then.
fn add_tree(
    graph: &mut Graph,
    tree: ObjectId,
    excluded: &IdSet,
    contents: &mut PackContents,
    versions: &mut LastVersions,
) -> Result<(), UploadPackError> {
    if excluded.contains(&tree) || !contents.add(tree, ROOT) {
        return Ok(());
    }
    // Each tree with the hash of its path: a path's hash continues its
    // parent's, so no path is ever built. Most entries name objects met
    // before (a commit changes few files): for them, one lookup is all.
    let mut stack = vec![(tree, ROOT)];
    let check_excluded = !excluded.is_empty();
    let hash = graph.object_format();
    while let Some((tree, path)) = stack.pop() {
        let previous = versions.take(path);
        let data = graph.tree_data(&tree)?;
        let mut unchanged = Unchanged::new(previous.as_deref().unwrap_or_default(), hash);
        scan_tree(data, hash, |entry| {
            if entry.is_commit || unchanged.contains(entry.record, entry.name, entry.raw_id) {
                return;
            }
            let id = entry.id();
            if check_excluded && excluded.contains(&id) {
                return;
            }
            if let Some(entry_path) = contents.add_new(id, || path_hash(path, entry.name)) {
                if entry.is_tree {
                    stack.push((id, entry_path));
                }
            }
        })
        .map_err(|e| UploadPackError::Objects(format!("corrupt tree {tree}: {e}")))?;
        versions.keep(path, data, previous);
    }
    Ok(())
}
