//! Which objects packed afresh (loose objects) are stored as deltas, and
//! against which base: a window search over the objects sorted as git
//! sorts them for `pack-objects`, by kind, then by the name they have in
//! the trees that name them, then largest first, then newest first (by
//! the newest commit among them that reaches them). Versions of one file
//! thus sit side by side, and the newest (with appended lines, the
//! largest) is stored whole with the older ones as deltas against it and
//! each other; root trees of one size come in history order, so each is
//! a small delta against the next.
//!
//! Each tree or blob is tried against the [`WINDOW`] objects before it of
//! its kind whose delta chain is shorter than [`MAX_DEPTH`]; the smallest
//! delta wins if it is less than half the object's size. Deltas are
//! computed by the object store's encoder ([`DeltaIndex`]), and every base
//! is written before its deltas, so all of them are offset deltas.

use refstore_odb::delta::DeltaIndex;
use refstore_odb::ObjectKind;
use std::collections::{HashMap, VecDeque};

/// How many earlier objects each one is tried against (git's
/// `pack.window` default).
const WINDOW: usize = 10;
/// The longest delta chain written (git's `pack.depth` default).
const MAX_DEPTH: u32 = 50;
/// Objects smaller than this are stored whole: a delta would save nothing.
const MIN_SIZE: usize = 64;
/// Objects larger than this are stored whole, without a search.
const MAX_SIZE: usize = 64 << 20;

/// One object to pack: its id, kind and content.
pub(crate) struct Object<'a> {
    /// Raw id.
    pub(crate) id: &'a [u8],
    /// Kind.
    pub(crate) kind: ObjectKind,
    /// Content.
    pub(crate) data: &'a [u8],
}

/// How an object is stored.
pub(crate) enum Stored {
    /// Whole, compressed.
    Whole,
    /// As this delta against the object at this index.
    Delta {
        /// Index of the base among the objects.
        base: usize,
        /// The delta instructions.
        delta: Vec<u8>,
    },
}

/// The plan: objects in the order to write them (bases first) and how
/// each is stored.
pub(crate) fn plan(objects: &[Object<'_>]) -> Vec<(usize, Stored)> {
    let names = names(objects);
    let recency = recency(objects);
    let rank = |kind: ObjectKind| match kind {
        ObjectKind::Commit => 0,
        ObjectKind::Tag => 1,
        ObjectKind::Tree => 2,
        ObjectKind::Blob => 3,
    };
    let mut order: Vec<usize> = (0..objects.len()).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (&objects[a], &objects[b]);
        rank(x.kind)
            .cmp(&rank(y.kind))
            .then_with(|| names.get(x.id).cmp(&names.get(y.id)))
            .then_with(|| y.data.len().cmp(&x.data.len()))
            .then_with(|| recency.get(y.id).cmp(&recency.get(x.id)))
            .then_with(|| x.id.cmp(y.id))
    });
    let mut depth = vec![0u32; objects.len()];
    let mut window: VecDeque<(usize, DeltaIndex<'_>)> = VecDeque::with_capacity(WINDOW);
    let mut planned = Vec::with_capacity(objects.len());
    for n in order {
        let object = &objects[n];
        let searchable = matches!(object.kind, ObjectKind::Tree | ObjectKind::Blob)
            && (MIN_SIZE..=MAX_SIZE).contains(&object.data.len());
        if !searchable {
            planned.push((n, Stored::Whole));
            continue;
        }
        let mut best: Option<(usize, Vec<u8>)> = None;
        let mut limit = object.data.len() / 2;
        for (base, index) in window.iter().rev() {
            if objects[*base].kind != object.kind || depth[*base] >= MAX_DEPTH {
                continue;
            }
            if let Some(delta) = index.delta(object.data, limit) {
                limit = delta.len();
                best = Some((*base, delta));
            }
        }
        match best {
            Some((base, delta)) => {
                depth[n] = depth[base] + 1;
                planned.push((n, Stored::Delta { base, delta }));
            }
            None => planned.push((n, Stored::Whole)),
        }
        if window.len() == WINDOW {
            window.pop_front();
        }
        window.push_back((n, DeltaIndex::new(object.data)));
    }
    planned
}

/// For each tree and blob, the committer time of the newest commit among
/// `objects` that reaches it through trees among `objects`.
fn recency<'a>(objects: &[Object<'a>]) -> HashMap<&'a [u8], u64> {
    let by_id: HashMap<&[u8], &Object<'a>> = objects.iter().map(|o| (o.id, o)).collect();
    let mut commits: Vec<(u64, &[u8])> = objects
        .iter()
        .filter(|o| o.kind == ObjectKind::Commit)
        .filter_map(|o| {
            let (time, tree) = commit_time_and_tree(o.data)?;
            let tree = by_id.get(tree.as_slice())?;
            Some((time, tree.id))
        })
        .collect();
    commits.sort_unstable_by(|a, b| b.cmp(a));
    let mut times: HashMap<&'a [u8], u64> = HashMap::with_capacity(objects.len());
    let mut queue = Vec::new();
    for (time, root) in commits {
        if times.contains_key(root) {
            continue;
        }
        times.insert(root, time);
        queue.push(root);
        while let Some(tree) = queue.pop() {
            let Some(object) = by_id.get(tree) else {
                continue;
            };
            for (_, id) in entries(object.data, object.id.len()) {
                let Some(child) = by_id.get(id) else {
                    continue;
                };
                if times.contains_key(child.id) {
                    continue;
                }
                times.insert(child.id, time);
                if child.kind == ObjectKind::Tree {
                    queue.push(child.id);
                }
            }
        }
    }
    times
}

/// Committer time and root tree (raw id) of a commit.
fn commit_time_and_tree(data: &[u8]) -> Option<(u64, Vec<u8>)> {
    let mut tree = None;
    let mut time = None;
    for line in data.split(|&b| b == b'\n') {
        if line.is_empty() {
            break;
        }
        if let Some(hex) = line.strip_prefix(b"tree ") {
            tree = unhex(hex);
        } else if let Some(rest) = line.strip_prefix(b"committer ") {
            let after = &rest[rest.iter().rposition(|&b| b == b'>')? + 1..];
            let text = std::str::from_utf8(after).ok()?;
            time = text.split_whitespace().next()?.parse().ok();
        }
    }
    Some((time.unwrap_or(0), tree?))
}

fn unhex(hex: &[u8]) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(hex).ok()?;
    if text.len() % 2 != 0 {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).ok())
        .collect()
}

/// The entries of a tree: `(name, raw id)`, from `<mode> <name>\0<raw id>`
/// records; stops at the first malformed one.
fn entries(tree: &[u8], hash_len: usize) -> impl Iterator<Item = (&[u8], &[u8])> {
    let mut rest = tree;
    std::iter::from_fn(move || {
        let nul = rest.iter().position(|&b| b == 0)?;
        let space = rest[..nul].iter().position(|&b| b == b' ')?;
        let id = rest.get(nul + 1..nul + 1 + hash_len)?;
        let name = &rest[space + 1..nul];
        rest = &rest[nul + 1 + hash_len..];
        Some((name, id))
    })
}

/// The name each tree or blob has in a tree among `objects` (the first
/// one found); root trees have none.
fn names<'a>(objects: &[Object<'a>]) -> HashMap<&'a [u8], &'a [u8]> {
    let ids: std::collections::HashSet<&[u8]> = objects.iter().map(|o| o.id).collect();
    let mut names = HashMap::new();
    for object in objects.iter().filter(|o| o.kind == ObjectKind::Tree) {
        for (name, id) in entries(object.data, object.id.len()) {
            if ids.contains(id) {
                names.entry(id).or_insert(name);
            }
        }
    }
    names
}
