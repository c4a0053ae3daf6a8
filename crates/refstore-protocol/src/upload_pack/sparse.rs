//! Adding the trees and blobs of the sent commits, path by path against
//! the trees of the boundary commits (git's "sparse" walk,
//! `pack.useSparse`): an entry of a sent tree is left out when a boundary
//! tree has the same object at the same path, and only subtrees that
//! differ are read. The cost follows what changed, not the size of the
//! boundary trees, which a walk of everything the client has would read
//! whole (thousands of trees for one new commit in a large project).
//!
//! Objects the client has only at another path (a file moved, a version
//! brought back) are sent again, which costs bytes but never correctness:
//! git's sparse walk makes the same trade.
//!
//! On the way it records what a thin pack needs: for each sent tree and
//! blob, the object at its path in a boundary tree (its version on the
//! client); those versions are the objects known to be on the client
//! (unchanged entries are not recorded: there are thousands of them).

use super::contents::{path_hash, IdSet, PackContents, ROOT};
use super::graph::Graph;
use super::UploadPackError;
use refstore_hash::{IdHasher, ObjectFormat};
use refstore_refs::ObjectId;
use std::cmp::Ordering;
use std::collections::HashMap;
use std::rc::Rc;

/// More boundary commits than this are not walked path by path: each
/// sent tree would be compared with too many trees.
pub(crate) const MAX_BOUNDARY: usize = 16;

/// Adds `roots` (the root trees of the sent commits, newest first) and
/// what they hold to `contents`, leaving out what `boundary_roots` hold at
/// the same paths and what `excluded` holds (the client has it, wherever
/// it is); fills `contents.client_versions` and `contents.client_has`.
/// Returns those of `loose` (wanted blobs) that a boundary tree the walk
/// read holds: git's sparse walk marks every entry of those trees as the
/// client's, so such a blob is not sent.
pub(crate) fn add_trees(
    graph: &mut Graph,
    roots: &[ObjectId],
    boundary_roots: &[ObjectId],
    excluded: &IdSet,
    loose: &[ObjectId],
    contents: &mut PackContents,
) -> Result<IdSet, UploadPackError> {
    let mut walk = Sparse {
        graph,
        excluded: (!excluded.is_empty()).then_some(excluded),
        base_trees: HashMap::default(),
        client_has: IdSet::default(),
        versions: HashMap::new(),
    };
    let mut bases: Vec<ObjectId> = boundary_roots.to_vec();
    bases.sort_unstable();
    bases.dedup();
    for &root in roots {
        walk.add_tree(root, bases.clone(), contents)?;
    }
    let mut held = IdSet::default();
    if !loose.is_empty() {
        for base in &bases {
            walk.base_tree(base)?;
        }
        let format = walk.graph.object_format();
        for tree in walk.base_trees.values() {
            let mut at = 0;
            while let Some(entry) = (at < tree.data.len())
                .then(|| Entry::parse(&tree.data, at, format))
                .flatten()
            {
                at = entry.end;
                let id = entry.id(&tree.data);
                if loose.contains(&id) {
                    held.insert(id);
                }
            }
        }
    }
    contents.client_versions = Some(walk.versions);
    contents.client_has = walk.client_has;
    Ok(held)
}

struct Sparse<'g> {
    graph: &'g mut Graph,
    /// Objects the client has at any path: neither sent nor entered
    /// (only in shallow packs; none otherwise).
    excluded: Option<&'g IdSet>,
    /// Boundary trees read so far: one serves every version of its path.
    base_trees: HashMap<ObjectId, Rc<BaseTree>, IdHasher>,
    client_has: IdSet,
    versions: HashMap<u32, ObjectId>,
}

impl Sparse<'_> {
    /// Adds `tree` (at the root) and what it holds, against `bases`, the
    /// boundary trees at the same path.
    fn add_tree(
        &mut self,
        tree: ObjectId,
        bases: Vec<ObjectId>,
        contents: &mut PackContents,
    ) -> Result<(), UploadPackError> {
        if bases.contains(&tree) || self.excluded.is_some_and(|set| set.contains(&tree)) {
            return Ok(());
        }
        if !self.add(tree, ROOT, &bases, contents) {
            return Ok(());
        }
        let format = self.graph.object_format();
        let corrupt = |id: &ObjectId| {
            UploadPackError::Objects(format!("corrupt tree {id}: an entry is cut short"))
        };
        let mut stack = vec![(tree, ROOT, bases)];
        let mut child_bases = Vec::new();
        let mut sent = Vec::new();
        while let Some((tree, path, bases)) = stack.pop() {
            let mut cursors = Vec::with_capacity(bases.len());
            for base in &bases {
                cursors.push(Cursor::new(self.base_tree(base)?, format));
            }
            sent.clear();
            sent.extend_from_slice(self.tree(&tree)?);
            let mut at = 0;
            while at < sent.len() {
                if let [cursor] = cursors.as_mut_slice() {
                    // One boundary tree (the usual case): runs of
                    // unchanged entries are skipped as bytes.
                    at += cursor.skip_same(&sent[at..]);
                    if at >= sent.len() {
                        break;
                    }
                }
                let entry = Entry::parse(&sent, at, format).ok_or_else(|| corrupt(&tree))?;
                at = entry.end;
                if entry.is_submodule {
                    continue;
                }
                child_bases.clear();
                let mut client_has_it = false;
                for cursor in &mut cursors {
                    match cursor.find(&sent, &entry) {
                        Found::Same => client_has_it = true,
                        Found::Other(id) => {
                            if !child_bases.contains(&id) {
                                child_bases.push(id);
                            }
                        }
                        Found::None => {}
                        Found::Corrupt => return Err(corrupt(&bases[0])),
                    }
                }
                if client_has_it {
                    continue;
                }
                let id = entry.id(&sent);
                if self.excluded.is_some_and(|set| set.contains(&id)) {
                    continue;
                }
                let entry_path = path_hash(path, entry.name(&sent));
                if !self.add(id, entry_path, &child_bases, contents) {
                    continue;
                }
                if entry.is_tree {
                    stack.push((id, entry_path, child_bases.clone()));
                }
            }
        }
        Ok(())
    }

    /// Adds `id`, met at `path`, unless it is added: false if it was.
    /// Its versions on the client are `bases`.
    fn add(
        &mut self,
        id: ObjectId,
        path: u64,
        bases: &[ObjectId],
        contents: &mut PackContents,
    ) -> bool {
        let slot = contents.ids.len() as u32;
        if !contents.add(id, path) {
            return false;
        }
        if let Some(&base) = bases.first() {
            self.versions.insert(slot, base);
            self.client_has.extend(bases.iter().copied());
        }
        true
    }

    /// The boundary tree `id`.
    fn base_tree(&mut self, id: &ObjectId) -> Result<Rc<BaseTree>, UploadPackError> {
        if let Some(tree) = self.base_trees.get(id) {
            return Ok(tree.clone());
        }
        let format = self.graph.object_format();
        let tree = Rc::new(BaseTree::new(self.tree(id)?.to_vec(), format));
        self.base_trees.insert(*id, tree.clone());
        Ok(tree)
    }

    /// The content of tree `id`, valid until the next read.
    fn tree(&mut self, id: &ObjectId) -> Result<&[u8], UploadPackError> {
        match self.graph.read(id)? {
            Some((gix_object::Kind::Tree, data)) => Ok(data),
            _ => Err(UploadPackError::Objects(format!(
                "missing tree {id}: the repository is incomplete"
            ))),
        }
    }
}

/// One entry of a tree's content: `<mode> <name>\0<id>`.
#[derive(Clone, Copy)]
struct Entry {
    start: usize,
    /// Where the name starts and ends (at its NUL).
    name: (usize, usize),
    end: usize,
    is_tree: bool,
    is_submodule: bool,
}

impl Entry {
    /// The entry of `data` that starts at `start`; `None` if it is cut
    /// short.
    fn parse(data: &[u8], start: usize, format: ObjectFormat) -> Option<Entry> {
        let space = start + data[start..].iter().position(|&b| b == b' ')?;
        let nul = space + 1 + data[space + 1..].iter().position(|&b| b == 0)?;
        let end = nul + 1 + format.raw_len();
        if end > data.len() {
            return None;
        }
        let mode = &data[start..space];
        Some(Entry {
            start,
            name: (space + 1, nul),
            end,
            is_tree: mode == b"40000",
            is_submodule: mode == b"160000",
        })
    }

    fn name<'d>(&self, data: &'d [u8]) -> &'d [u8] {
        &data[self.name.0..self.name.1]
    }

    fn id(&self, data: &[u8]) -> ObjectId {
        ObjectId::from_raw(&data[self.name.1 + 1..self.end])
            .expect("ids are read at the object format's length")
    }
}

/// What a boundary tree has at a sent entry's name.
enum Found {
    /// The same entry: the client has the object.
    Same,
    /// Another object of the same kind.
    Other(ObjectId),
    None,
    Corrupt,
}

/// A boundary tree's content and where its entries start.
struct BaseTree {
    data: Vec<u8>,
    /// The start of each entry, then the end of the last.
    starts: Vec<u32>,
}

impl BaseTree {
    fn new(data: Vec<u8>, format: ObjectFormat) -> Self {
        let mut starts = vec![0];
        let mut at = 0;
        while let Some(entry) = (at < data.len())
            .then(|| Entry::parse(&data, at, format))
            .flatten()
        {
            at = entry.end;
            starts.push(at as u32);
        }
        BaseTree { data, starts }
    }
}

/// A position in a boundary tree, moving forward in step with the sent
/// tree: both are sorted, so each is read once.
struct Cursor {
    tree: Rc<BaseTree>,
    at: usize,
    current: Option<Entry>,
    format: ObjectFormat,
}

impl Cursor {
    fn new(tree: Rc<BaseTree>, format: ObjectFormat) -> Self {
        let current = Entry::parse(&tree.data, 0, format);
        Cursor {
            tree,
            at: 0,
            current,
            format,
        }
    }

    /// Moves past the entries that `sent` (the rest of a sent tree, from
    /// an entry's start) begins with too, byte for byte; how many bytes
    /// they take.
    fn skip_same(&mut self, sent: &[u8]) -> usize {
        let same = common_prefix(sent, &self.tree.data[self.at..]);
        if same == 0 {
            return 0;
        }
        // Equal bytes from equal starts split into the same entries: the
        // last whole one ends at the last start within the equal bytes.
        let starts = &self.tree.starts;
        let last = starts.partition_point(|&start| start as usize <= self.at + same) - 1;
        let end = (starts[last] as usize).max(self.at);
        let skipped = end - self.at;
        self.next(end);
        skipped
    }

    /// The boundary tree's entry at the name and kind of `entry` (of the
    /// sent tree's content `sent`).
    fn find(&mut self, sent: &[u8], entry: &Entry) -> Found {
        let wanted = &sent[entry.start..entry.end];
        loop {
            let Some(current) = self.current else {
                return match self.at < self.tree.data.len() {
                    true => Found::Corrupt,
                    false => Found::None,
                };
            };
            let data = &self.tree.data[..];
            // Most entries are unchanged: the same bytes.
            if &data[current.start..current.end] == wanted {
                self.next(current.end);
                return Found::Same;
            }
            match tree_order(
                current.name(data),
                current.is_tree,
                entry.name(sent),
                entry.is_tree,
            ) {
                Ordering::Less => self.next(current.end),
                Ordering::Equal => {
                    let id = current.id(data);
                    self.next(current.end);
                    if current.is_submodule {
                        return Found::None;
                    }
                    return match id == entry.id(sent) {
                        true => Found::Same,
                        false => Found::Other(id),
                    };
                }
                Ordering::Greater => return Found::None,
            }
        }
    }

    fn next(&mut self, at: usize) {
        self.at = at;
        self.current = match at < self.tree.data.len() {
            true => Entry::parse(&self.tree.data, at, self.format),
            false => None,
        };
    }
}

/// How many bytes `a` and `b` begin with alike.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const CHUNK: usize = 64;
    let n = a.len().min(b.len());
    let mut at = 0;
    while at + CHUNK <= n && a[at..at + CHUNK] == b[at..at + CHUNK] {
        at += CHUNK;
    }
    while at < n && a[at] == b[at] {
        at += 1;
    }
    at
}

/// Git's order of tree entries: by name, a tree's name followed by `/`.
pub(crate) fn tree_order(a: &[u8], a_tree: bool, b: &[u8], b_tree: bool) -> Ordering {
    let common = a.len().min(b.len());
    match a[..common].cmp(&b[..common]) {
        Ordering::Equal => {
            let end = |name: &[u8], tree: bool| match name.get(common) {
                Some(&c) => c,
                None if tree => b'/',
                None => 0,
            };
            end(a, a_tree)
                .cmp(&end(b, b_tree))
                .then(a.len().cmp(&b.len()))
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_compare_in_git_tree_order() {
        // git sorts "a.txt" < "a" (a tree, "a/") < "a0".
        let mut names = [("a0", false), ("a", true), ("a.txt", false), ("a", false)];
        names.sort_by(|x, y| tree_order(x.0.as_bytes(), x.1, y.0.as_bytes(), y.1));
        assert_eq!(
            names,
            [("a", false), ("a.txt", false), ("a", true), ("a0", false)]
        );
        assert_eq!(tree_order(b"a", true, b"a", false), Ordering::Greater);
        assert_eq!(tree_order(b"ab", false, b"ab", false), Ordering::Equal);
    }
}
