//! git's commit-graph (`objects/info/commit-graph`, or a chain of them in
//! `objects/info/commit-graphs/`), read: each commit's root tree, parents
//! and commit time without inflating the commit.
//!
//! A commit-graph file: `CGPH`, version 1, the hash function (1 SHA-1,
//! 2 SHA-256), the number of chunks and of base graphs; a table of chunks
//! (4-byte id, 8-byte offset, ending with id 0 at the end offset); the
//! chunks; a checksum of everything before it. The chunks read here:
//! `OIDF` (256 cumulative counts by first byte), `OIDL` (the sorted ids),
//! `CDAT` (per commit: root tree, two parent positions, generation and
//! time), `EDGE` (the third and later parents of octopus merges) and
//! `BASE` (the checksums of the graphs below, in a chain). Parents are
//! positions in the whole chain: a graph's commits are numbered after
//! those of its bases.
//!
//! As git, the single file is used if there is one, the chain otherwise.
//! Everything is checked when it is opened (the checksum of each file,
//! chunk bounds, the fanout, that a chain's bases are the files it names);
//! [`CommitGraph::open`] fails on a damaged or foreign graph, and the
//! caller reads commits from the object database instead, as git ignores
//! such a graph with a warning.

use crate::OdbError;
use refstore_fs::Vfs;
use refstore_hash::{ObjectFormat, ObjectId};
use std::path::{Path, PathBuf};

/// A parent slot that holds no parent.
const NO_PARENT: u32 = 0x7000_0000;
/// In the second parent slot: the rest are in `EDGE` from this index on.
/// In `EDGE`: the last parent.
const MORE: u32 = 0x8000_0000;

/// What the graph says of one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphCommit {
    /// The root tree.
    pub tree: ObjectId,
    /// The parents, as positions in the graph, in order.
    pub parents: Vec<u32>,
    /// The committer time, seconds since the epoch.
    pub time: i64,
    /// The topological level (generation number v1); 0 if not computed.
    pub generation: u32,
}

/// One file of the graph.
struct Layer {
    data: refstore_fs::Mapped,
    path: PathBuf,
    /// Commits in the layers below.
    base: u32,
    commits: u32,
    fanout: usize,
    ids: usize,
    data_at: usize,
    /// Where `EDGE` is and how many entries it has.
    edges: Option<(usize, usize)>,
}

/// A repository's commit-graph.
pub struct CommitGraph {
    layers: Vec<Layer>,
    format: ObjectFormat,
    hash_len: usize,
    total: u32,
}

impl std::fmt::Debug for CommitGraph {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommitGraph")
            .field("layers", &self.layers.len())
            .field("commits", &self.total)
            .finish()
    }
}

impl CommitGraph {
    /// Opens the commit-graph of the object directory `objects_dir`, read
    /// through `vfs`; `None` if it has none. A damaged graph, or one of
    /// another object format, is an error.
    pub fn open(
        vfs: &dyn Vfs,
        objects_dir: &Path,
        format: ObjectFormat,
    ) -> Result<Option<CommitGraph>, OdbError> {
        let info = objects_dir.join("info");
        let single = info.join("commit-graph");
        let paths = match read(vfs, &single)? {
            Some(data) => vec![(single, data)],
            None => {
                let chain_path = info.join("commit-graphs").join("commit-graph-chain");
                let Some(chain) = read(vfs, &chain_path)? else {
                    return Ok(None);
                };
                let mut files = Vec::new();
                for line in chain.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
                    let name = std::str::from_utf8(line)
                        .ok()
                        .filter(|hex| {
                            hex.len() == 2 * format.raw_len()
                                && hex.bytes().all(|b| b.is_ascii_hexdigit())
                        })
                        .ok_or_else(|| {
                            OdbError::Pack(format!(
                                "{}: not a list of graph checksums",
                                chain_path.display()
                            ))
                        })?;
                    let path = info
                        .join("commit-graphs")
                        .join(format!("graph-{name}.graph"));
                    let data = read(vfs, &path)?.ok_or_else(|| {
                        OdbError::Pack(format!("{}: missing, named in the chain", path.display()))
                    })?;
                    files.push((path, data));
                }
                if files.is_empty() {
                    return Ok(None);
                }
                files
            }
        };
        let mut graph = CommitGraph {
            layers: Vec::new(),
            format,
            hash_len: format.raw_len(),
            total: 0,
        };
        for (path, data) in paths {
            let layer = graph.parse_layer(path, data)?;
            graph.total = graph
                .total
                .checked_add(layer.commits)
                .filter(|&total| total < NO_PARENT)
                .ok_or_else(|| OdbError::Pack("commit-graph: too many commits".into()))?;
            graph.layers.push(layer);
        }
        Ok(Some(graph))
    }

    /// Checks one file and finds its chunks; `self.layers` are its bases.
    fn parse_layer(&self, path: PathBuf, data: refstore_fs::Mapped) -> Result<Layer, OdbError> {
        let bad = |what: &str| OdbError::Pack(format!("{}: {what}", path.display()));
        let bytes: &[u8] = &data;
        let h = self.hash_len;
        if bytes.len() < 8 + 12 + h || &bytes[..4] != b"CGPH" {
            return Err(bad("not a commit-graph file"));
        }
        if bytes[4] != 1 {
            return Err(bad(&format!(
                "unsupported commit-graph version {}",
                bytes[4]
            )));
        }
        if bytes[5] != self.format.file_id() {
            return Err(bad("the commit-graph is of another object format"));
        }
        let chunks = bytes[6] as usize;
        let bases = bytes[7] as usize;
        if bases != self.layers.len() {
            return Err(bad("its number of base graphs does not match the chain"));
        }
        let end = bytes.len() - h;
        let mut hasher = gix_hash::hasher(self.format.gix_kind());
        hasher.update(&bytes[..end]);
        let checksum = hasher
            .try_finalize()
            .map_err(|e| bad(&format!("cannot hash it: {e}")))?;
        if checksum.as_slice() != &bytes[end..] {
            return Err(bad("its checksum does not match its contents"));
        }

        // The table of contents: each chunk ends where the next begins.
        let toc_end = 8 + 12 * (chunks + 1);
        if toc_end > end {
            return Err(bad("truncated chunk table"));
        }
        let entry = |n: usize| {
            let at = 8 + 12 * n;
            let id: [u8; 4] = bytes[at..at + 4].try_into().expect("four bytes");
            let offset = u64::from_be_bytes(bytes[at + 4..at + 12].try_into().expect("eight"));
            (id, offset)
        };
        let mut found: Vec<([u8; 4], usize, usize)> = Vec::new();
        for n in 0..chunks {
            let (id, start) = entry(n);
            let (_, next) = entry(n + 1);
            if id == [0; 4] || start < toc_end as u64 || next < start || next > end as u64 {
                return Err(bad("bad chunk table"));
            }
            if found.iter().any(|c| c.0 == id) {
                return Err(bad("a chunk appears twice"));
            }
            found.push((id, start as usize, (next - start) as usize));
        }
        if entry(chunks).0 != [0; 4] {
            return Err(bad("bad chunk table"));
        }
        let chunk = |id: &[u8; 4]| found.iter().find(|c| &c.0 == id).map(|c| (c.1, c.2));
        let (fanout, fanout_len) = chunk(b"OIDF").ok_or_else(|| bad("no OIDF chunk"))?;
        if fanout_len != 1024 {
            return Err(bad("bad OIDF chunk"));
        }
        let count = |n: usize| {
            let at = fanout + 4 * n;
            u32::from_be_bytes(bytes[at..at + 4].try_into().expect("four bytes"))
        };
        if (1..256).any(|n| count(n) < count(n - 1)) {
            return Err(bad("its fanout is not sorted"));
        }
        let commits = count(255);
        let n = commits as usize;
        let (ids, ids_len) = chunk(b"OIDL").ok_or_else(|| bad("no OIDL chunk"))?;
        if ids_len != n * h {
            return Err(bad("its OIDL chunk does not fit its commit count"));
        }
        let (data_at, data_len) = chunk(b"CDAT").ok_or_else(|| bad("no CDAT chunk"))?;
        if data_len != n * (h + 16) {
            return Err(bad("its CDAT chunk does not fit its commit count"));
        }
        let edges = match chunk(b"EDGE") {
            Some((at, len)) if len % 4 == 0 => Some((at, len / 4)),
            Some(_) => return Err(bad("bad EDGE chunk")),
            None => None,
        };
        if bases > 0 {
            let (at, len) = chunk(b"BASE").ok_or_else(|| bad("no BASE chunk"))?;
            if len != bases * h {
                return Err(bad("bad BASE chunk"));
            }
            for (n, layer) in self.layers.iter().enumerate() {
                let named = &bytes[at + n * h..at + (n + 1) * h];
                if named != &layer.data[layer.data.len() - h..] {
                    return Err(bad("its base graphs are not the chain's"));
                }
            }
        }
        Ok(Layer {
            data,
            path,
            base: self.total,
            commits,
            fanout,
            ids,
            data_at,
            edges,
        })
    }

    /// How many commits the graph holds: positions are `0..len()`.
    pub fn len(&self) -> u32 {
        self.total
    }

    /// True if the graph holds no commit.
    pub fn is_empty(&self) -> bool {
        self.total == 0
    }

    /// The position of commit `id`, if the graph has it.
    pub fn lookup(&self, id: &ObjectId) -> Option<u32> {
        let first = *id.as_bytes().first()? as usize;
        let h = self.hash_len;
        self.layers.iter().rev().find_map(|layer| {
            let count = |n: usize| {
                let at = layer.fanout + 4 * n;
                u32::from_be_bytes(layer.data[at..at + 4].try_into().expect("four")) as usize
            };
            let (mut lo, mut hi) = (if first == 0 { 0 } else { count(first - 1) }, count(first));
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let at = layer.ids + mid * h;
                match layer.data[at..at + h].cmp(id.as_bytes()) {
                    std::cmp::Ordering::Less => lo = mid + 1,
                    std::cmp::Ordering::Greater => hi = mid,
                    std::cmp::Ordering::Equal => return Some(layer.base + mid as u32),
                }
            }
            None
        })
    }

    /// The id of the commit at `position` (below [`CommitGraph::len`]).
    pub fn id(&self, position: u32) -> ObjectId {
        let (layer, n) = self.layer_of(position);
        let at = layer.ids + n * self.hash_len;
        self.id_from(&layer.data[at..at + self.hash_len])
    }

    /// The id whose raw bytes are `raw`, of the graph's length.
    fn id_from(&self, raw: &[u8]) -> ObjectId {
        ObjectId::from_raw(raw).expect("the graph's ids have its format's length")
    }

    fn layer_of(&self, position: u32) -> (&Layer, usize) {
        let layer = self
            .layers
            .iter()
            .rev()
            .find(|layer| layer.base <= position)
            .filter(|layer| position - layer.base < layer.commits)
            .expect("a position below len()");
        (layer, (position - layer.base) as usize)
    }

    /// What the graph records of the commit at `position` (below
    /// [`CommitGraph::len`]). A parent position outside the graph is an
    /// error.
    pub fn commit(&self, position: u32) -> Result<GraphCommit, OdbError> {
        let (layer, n) = self.layer_of(position);
        let h = self.hash_len;
        let at = layer.data_at + n * (h + 16);
        let record = &layer.data[at..at + h + 16];
        let word = |k: usize| {
            u32::from_be_bytes(record[h + 4 * k..h + 4 * k + 4].try_into().expect("four"))
        };
        let bad = |what: &str| {
            OdbError::Pack(format!(
                "{}: commit {}: {what}",
                layer.path.display(),
                self.id(position)
            ))
        };
        // Parents of a layer are in it or below it.
        let limit = layer.base + layer.commits;
        let check = |parent: u32| {
            if parent < limit {
                Ok(parent)
            } else {
                Err(bad("a parent outside the graph"))
            }
        };
        let mut parents = Vec::new();
        let (first, second) = (word(0), word(1));
        if first != NO_PARENT {
            parents.push(check(first)?);
        }
        if second != NO_PARENT {
            if second & MORE == 0 {
                parents.push(check(second)?);
            } else {
                let (edges_at, edges) = layer.edges.ok_or_else(|| bad("no EDGE chunk"))?;
                let mut e = (second & !MORE) as usize;
                loop {
                    if e >= edges {
                        return Err(bad("its parents run past the EDGE chunk"));
                    }
                    let at = edges_at + 4 * e;
                    let value = u32::from_be_bytes(layer.data[at..at + 4].try_into().expect("4"));
                    parents.push(check(value & !MORE)?);
                    if value & MORE != 0 {
                        break;
                    }
                    e += 1;
                }
            }
        }
        let (high, low) = (word(2), word(3));
        Ok(GraphCommit {
            tree: self.id_from(&record[..h]),
            parents,
            time: (i64::from(high & 3) << 32) | i64::from(low),
            generation: high >> 2,
        })
    }
}

/// The file at `path`, or `None` if there is none.
fn read(vfs: &dyn Vfs, path: &Path) -> Result<Option<refstore_fs::Mapped>, OdbError> {
    match vfs.read_mapped(path) {
        Ok(data) => Ok(Some(data)),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e.into()),
    }
}
