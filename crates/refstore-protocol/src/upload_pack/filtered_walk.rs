//! The objects of a partial clone's pack: the walk of `walk.rs` with a
//! [`Filter`] applied to what the commits' trees hold (objects named in
//! `want` lines are sent whatever it says).
//!
//! The client's side is judged by the whole trees of the boundary commits
//! (no path-by-path comparison), and a filtered pack is never thin: the
//! client may lack the objects a thin pack's deltas would be based on
//! (they were filtered out before).
//!
//! With `sparse:oid=` parts the answer for a blob depends on its path: a
//! tree met at another path is walked again, and a blob left out at one
//! path may be sent at another; trees are walked depth first in entry
//! order, commits newest first, as git walks them.

use super::combined_blobs::CombinedBlobs;
use super::contents::{self, IdSet, PackContents, NO_PATH, ROOT};
use super::filter::{Filter, Place};
use super::graph::Graph;
use super::walk;
use super::UploadPackError;
use gix_object::Kind;
use refstore_hash::IdHasher;
use refstore_refs::ObjectId;
use std::collections::{HashMap, HashSet};

/// Like [`walk::pack_contents`], leaving out what `filter` omits; the
/// objects `wants` name are sent whatever the filter says. The client's
/// side is judged by the whole trees of the boundary commits (no sparse
/// comparison), and nothing is recorded for a thin pack. `sparse:oid=`
/// parts must have their patterns read
/// ([`resolve_filter`](super::sparse_oid::resolve_filter)).
pub(crate) fn pack_contents(
    graph: &mut Graph,
    wants: &[ObjectId],
    common: &[ObjectId],
    tags_to_include: &[ObjectId],
    filter: &Filter,
    shallow: walk::ShallowEdges<'_>,
) -> Result<PackContents, UploadPackError> {
    let sparse_parts = filter.sparse_parts();
    let mut tags = Vec::new();
    let mut want_commits = Vec::new();
    let mut want_others = Vec::new();
    for want in wants {
        match graph.peel(want, |tag| tags.push(tag))? {
            Some((id, Kind::Commit)) => want_commits.push(id),
            Some((id, kind)) => want_others.push((id, kind)),
            None => {
                return Err(UploadPackError::Objects(format!(
                "the object {want} or an object it names is missing: the repository is incomplete"
            )))
            }
        }
    }
    let have_commits = walk::have_commits(graph, common)?;
    let (commits, edges) = walk::walk_commits(graph, &want_commits, &have_commits)?;
    let mut excluded = IdSet::default();
    if shallow.aggressive {
        let request = walk::ClientCommits {
            wants,
            common,
            sent: &commits,
        };
        walk::exclude_client_trees(graph, request, shallow, &edges, &mut excluded)?;
    }
    for edge in &edges {
        let tree = graph
            .commit(edge)?
            .map(|commit| commit.tree)
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {edge}")))?;
        walk::exclude_tree(graph, tree, &mut excluded)?;
    }

    let mut contents = PackContents::default();
    let show_commits = filter.shows(Kind::Commit);
    let wanted: IdSet = want_commits.iter().copied().collect();
    for commit in &commits {
        if show_commits || wanted.contains(commit) {
            contents.add(*commit, NO_PATH);
        }
    }
    // The tags met peeling the wants were asked for.
    for tag in tags {
        contents.add(tag, NO_PATH);
    }
    let mut trees = TreeWalk {
        filter,
        excluded: &excluded,
        met: HashMap::default(),
        depths: filter.uses_depth(),
        sparse_parts,
        walked: HashSet::new(),
        combined: match filter {
            Filter::Combine(parts) if sparse_parts > 0 => Some(CombinedBlobs::new(parts.len())),
            _ => None,
        },
    };
    for commit in &commits {
        let tree = graph
            .commit(commit)?
            .map(|c| c.tree)
            .expect("walked commits exist");
        trees.tree(graph, Dir::root(tree, sparse_parts), &mut contents)?;
    }
    for (id, kind) in want_others {
        match kind {
            Kind::Tree => {
                // The tree is asked for; what it holds is filtered, a level
                // below it.
                contents.add(id, ROOT);
                trees.children(graph, Dir::root(id, sparse_parts), &mut contents)?;
            }
            _ => {
                contents.add(id, contents::path_hash(ROOT, b""));
            }
        }
    }
    contents::include_tags(graph, tags_to_include, &mut contents)?;
    contents.boundary = edges.into_iter().collect();
    graph.forget_walk();
    Ok(contents)
}

/// A tree to walk or a blob to judge: where it is met, and for each
/// sparse part of the filter whether the directory holding it is
/// included.
struct Dir {
    tree: ObjectId,
    is_tree: bool,
    depth: u64,
    path_hash: u64,
    /// Its path from the root tree (kept only when a sparse part needs it).
    path: Vec<u8>,
    included: Vec<bool>,
}

impl Dir {
    /// A root tree (or a tree asked for, which git walks as a root).
    fn root(tree: ObjectId, sparse_parts: usize) -> Dir {
        Dir {
            tree,
            is_tree: true,
            depth: 0,
            path_hash: ROOT,
            path: Vec::new(),
            included: vec![false; sparse_parts],
        }
    }
}

/// The filtered walk of trees, remembering the smallest depth each tree
/// and blob was met at (a later meeting nearer a root may send it).
struct TreeWalk<'a> {
    filter: &'a Filter,
    excluded: &'a IdSet,
    met: HashMap<ObjectId, u64, IdHasher>,
    /// Depth matters (`tree:`); otherwise every object is met once.
    depths: bool,
    /// How many `sparse:oid` parts the filter has. With any, a tree met
    /// at another path (or with other answers of its parents) is walked
    /// again, and a blob left out at one path may be sent at another,
    /// as git does.
    sparse_parts: usize,
    /// The trees walked with sparse parts: id, depth, path, answers.
    walked: HashSet<(ObjectId, u64, Vec<u8>, Vec<bool>)>,
    /// For a `combine:` with sparse parts, what its parts remember.
    combined: Option<CombinedBlobs>,
}

impl TreeWalk<'_> {
    /// True the first time `id` is met at `depth` or nearer a root.
    fn meet(&mut self, id: ObjectId, depth: u64) -> bool {
        let depth = if self.depths { depth } else { 0 };
        match self.met.get(&id) {
            Some(&before) if before <= depth => false,
            _ => {
                self.met.insert(id, depth);
                true
            }
        }
    }

    /// True the first time the tree of `dir` is met where it is.
    fn first_visit(&mut self, dir: &Dir) -> bool {
        if self.sparse_parts == 0 {
            return self.meet(dir.tree, dir.depth);
        }
        let depth = if self.depths { dir.depth } else { 0 };
        self.walked
            .insert((dir.tree, depth, dir.path.clone(), dir.included.clone()))
    }

    fn tree(
        &mut self,
        graph: &mut Graph,
        dir: Dir,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        self.walk(graph, vec![dir], contents)
    }

    /// Walks the entries of `stack`, last first, depth first: git's order,
    /// which decides what a `combine:` with sparse parts sends.
    fn walk(
        &mut self,
        graph: &mut Graph,
        mut stack: Vec<Dir>,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        while let Some(mut dir) = stack.pop() {
            if !dir.is_tree {
                let place = Place {
                    path: &dir.path,
                    included: &dir.included,
                };
                self.blob(graph, dir.tree, dir.depth, dir.path_hash, &place, contents)?;
                continue;
            }
            if self.excluded.contains(&dir.tree) {
                continue;
            }
            self.filter.enter_directory(&dir.path, &mut dir.included);
            if !self.first_visit(&dir) {
                continue;
            }
            let (show, down) = self.filter.tree(dir.depth);
            if show {
                contents.add(dir.tree, dir.path_hash);
            }
            if down {
                self.entries(graph, &dir, &mut stack)?;
            }
        }
        Ok(())
    }

    /// Pushes what the tree of `dir` holds on `stack`, the first entry
    /// last.
    fn entries(
        &mut self,
        graph: &mut Graph,
        dir: &Dir,
        stack: &mut Vec<Dir>,
    ) -> Result<(), UploadPackError> {
        let mut entries = Vec::new();
        let names = self.sparse_parts > 0;
        named_entries(graph, &dir.tree, dir.path_hash, names, &mut entries)?;
        for (id, is_tree, path_hash, name) in entries.into_iter().rev() {
            let path = match dir.path.is_empty() {
                // Without sparse parts, names (and so paths) are empty.
                true => name,
                false => [&dir.path[..], b"/", &name[..]].concat(),
            };
            stack.push(Dir {
                tree: id,
                is_tree,
                depth: dir.depth + 1,
                path_hash,
                path,
                included: dir.included.clone(),
            });
        }
        Ok(())
    }

    /// Walks what the root tree of `dir` holds, not the tree itself.
    fn children(
        &mut self,
        graph: &mut Graph,
        mut dir: Dir,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        self.filter.enter_directory(&dir.path, &mut dir.included);
        let mut stack = Vec::new();
        self.entries(graph, &dir, &mut stack)?;
        self.walk(graph, stack, contents)
    }

    fn blob(
        &mut self,
        graph: &mut Graph,
        blob: ObjectId,
        depth: u64,
        path_hash: u64,
        place: &Place<'_>,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        if self.excluded.contains(&blob) || contents.contains(&blob) {
            return Ok(());
        }
        if self.sparse_parts == 0 && !self.meet(blob, depth) {
            return Ok(());
        }
        let size = &mut || blob_size(graph, &blob);
        let sent = match (&mut self.combined, self.filter) {
            (Some(memory), Filter::Combine(parts)) => {
                memory.judge(parts, blob, depth, place, size)?
            }
            _ => self.filter.blob(depth, place, size)?,
        };
        if sent {
            contents.add(blob, path_hash);
        }
        Ok(())
    }
}

/// The entries of tree `id` (at `path_hash`) but submodules: id, whether
/// a tree, the hash of its path, and its name when `names` asks for it
/// (empty otherwise).
fn named_entries(
    graph: &mut Graph,
    id: &ObjectId,
    path_hash: u64,
    names: bool,
    entries: &mut Vec<(ObjectId, bool, u64, Vec<u8>)>,
) -> Result<(), UploadPackError> {
    graph.each_tree_entry(id, |entry, is_tree, filename| {
        let name = match names {
            true => filename.to_vec(),
            false => Vec::new(),
        };
        let hash = contents::path_hash(path_hash, filename);
        entries.push((entry, is_tree, hash, name));
    })
}

/// The size of blob `id`: from its entry header when stored whole, from
/// the start of its delta when stored as one, else by reading it.
fn blob_size(graph: &mut Graph, id: &ObjectId) -> Result<u64, UploadPackError> {
    if let Some(at) = graph.packs().locate(id) {
        let entry = graph
            .packs()
            .entry(at)
            .map_err(|e| UploadPackError::objects(&format!("cannot read object {id}"), e))?;
        if let refstore_odb::StoredKind::Whole(_) = entry.kind {
            return Ok(entry.size);
        }
        if let Some(size) = delta_result_size(entry.compressed()) {
            return Ok(size);
        }
    }
    match graph.read(id)? {
        Some((_, data)) => Ok(data.len() as u64),
        None => Err(UploadPackError::Objects(format!(
            "missing blob {id}: the repository is incomplete"
        ))),
    }
}

/// The size of a delta's result, the second number of its header, from
/// the first inflated bytes of the delta (`None` if they do not hold it).
fn delta_result_size(compressed: &[u8]) -> Option<u64> {
    let mut head = [0u8; 24];
    let mut inflate = flate2::Decompress::new(true);
    inflate
        .decompress(compressed, &mut head, flate2::FlushDecompress::None)
        .ok()?;
    let head = &head[..inflate.total_out() as usize];
    // Two little-endian base-128 numbers: the base's size, the result's.
    let mut numbers = [0u64; 2];
    let mut at = 0;
    for number in &mut numbers {
        let mut shift = 0;
        loop {
            let byte = *head.get(at)?;
            at += 1;
            *number |= u64::from(byte & 0x7f).checked_shl(shift)?;
            shift += 7;
            if byte & 0x80 == 0 {
                break;
            }
            if shift > 63 {
                return None;
            }
        }
    }
    Some(numbers[1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delta_headers_give_the_result_size() {
        use std::io::Write;
        // Base of 300 bytes, result of 5 bytes, then instructions.
        let delta = [0xac, 0x02, 0x05, 0x05, b'h', b'e', b'l', b'l', b'o'];
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(&delta).unwrap();
        assert_eq!(delta_result_size(&z.finish().unwrap()), Some(5));
        assert_eq!(delta_result_size(b"not zlib"), None);
    }
}
