//! The objects of a partial clone's pack: the walk of `walk.rs` with a
//! [`Filter`] applied to what the commits' trees hold (objects named in
//! `want` lines are sent whatever it says).
//!
//! The client's side is judged by the whole trees of the boundary commits
//! (no path-by-path comparison), and a filtered pack is never thin: the
//! client may lack the objects a thin pack's deltas would be based on
//! (they were filtered out before).

use super::filter::Filter;
use super::graph::Graph;
use super::walk::{self, PackContents, NO_PATH, ROOT};
use super::UploadPackError;
use gix_hash::ObjectId;
use gix_object::Kind;
use std::collections::HashMap;

/// Like [`walk::pack_contents`], leaving out what `filter` omits; the
/// objects `wants` name are sent whatever the filter says. The client's
/// side is judged by the whole trees of the boundary commits (no sparse
/// comparison), and nothing is recorded for a thin pack.
pub(crate) fn pack_contents(
    graph: &mut Graph,
    wants: &[ObjectId],
    common: &[ObjectId],
    tags_to_include: &[ObjectId],
    filter: &Filter,
) -> Result<PackContents, UploadPackError> {
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
    let mut have_commits = Vec::new();
    for have in common {
        if let Some((id, Kind::Commit)) = graph.peel(have, |_| {})? {
            have_commits.push(id);
        }
    }
    let (commits, edges) = walk::walk_commits(graph, &want_commits, &have_commits)?;
    let mut excluded = walk::IdSet::default();
    for edge in &edges {
        let tree = graph
            .commit(edge)?
            .map(|commit| commit.tree)
            .ok_or_else(|| UploadPackError::Objects(format!("missing commit {edge}")))?;
        walk::exclude_tree(graph, tree, &mut excluded)?;
    }

    let mut contents = PackContents::default();
    let show_commits = filter.shows(Kind::Commit);
    let wanted: walk::IdSet = want_commits.iter().copied().collect();
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
    };
    for commit in &commits {
        let tree = graph
            .commit(commit)?
            .map(|c| c.tree)
            .expect("walked commits exist");
        trees.tree(graph, tree, 0, ROOT, &mut contents)?;
    }
    for (id, kind) in want_others {
        match kind {
            Kind::Tree => {
                // The tree is asked for; what it holds is filtered, a level
                // below it.
                contents.add(id, ROOT);
                trees.children(graph, id, 0, ROOT, &mut contents)?;
            }
            _ => {
                contents.add(id, walk::path_hash(ROOT, b""));
            }
        }
    }
    walk::include_tags(graph, tags_to_include, &mut contents)?;
    contents.boundary = edges.into_iter().collect();
    graph.forget_walk();
    Ok(contents)
}

/// The filtered walk of trees, remembering the smallest depth each tree
/// and blob was met at (a later meeting nearer a root may send it).
struct TreeWalk<'a> {
    filter: &'a Filter,
    excluded: &'a walk::IdSet,
    met: HashMap<ObjectId, u64, super::graph::IdHasher>,
    /// Depth matters (`tree:`); otherwise every object is met once.
    depths: bool,
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

    fn tree(
        &mut self,
        graph: &mut Graph,
        tree: ObjectId,
        depth: u64,
        path: u64,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        let mut stack = vec![(tree, depth, path)];
        let mut entries = Vec::new();
        while let Some((tree, depth, path)) = stack.pop() {
            if self.excluded.contains(&tree) || !self.meet(tree, depth) {
                continue;
            }
            let (show, down) = self.filter.tree(depth);
            if show {
                contents.add(tree, path);
            }
            if !down {
                continue;
            }
            graph.tree_entries(&tree, |name| walk::path_hash(path, name), &mut entries)?;
            for &(id, is_tree, entry_path) in &entries {
                if is_tree {
                    stack.push((id, depth + 1, entry_path));
                } else {
                    self.blob(graph, id, depth + 1, entry_path, contents)?;
                }
            }
        }
        Ok(())
    }

    /// Walks what `tree` (at `depth`) holds, not `tree` itself.
    fn children(
        &mut self,
        graph: &mut Graph,
        tree: ObjectId,
        depth: u64,
        path: u64,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        let mut entries = Vec::new();
        graph.tree_entries(&tree, |name| walk::path_hash(path, name), &mut entries)?;
        for (id, is_tree, entry_path) in entries {
            if is_tree {
                self.tree(graph, id, depth + 1, entry_path, contents)?;
            } else {
                self.blob(graph, id, depth + 1, entry_path, contents)?;
            }
        }
        Ok(())
    }

    fn blob(
        &mut self,
        graph: &mut Graph,
        blob: ObjectId,
        depth: u64,
        path: u64,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        if self.excluded.contains(&blob) || contents.contains(&blob) || !self.meet(blob, depth) {
            return Ok(());
        }
        if self.filter.blob(depth, &mut || blob_size(graph, &blob))? {
            contents.add(blob, path);
        }
        Ok(())
    }
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
