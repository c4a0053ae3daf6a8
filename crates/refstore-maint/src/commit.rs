//! What the commit-graph and the bitmaps need of a commit, read from its
//! object: root tree, parents and committer time.

use crate::repo::Repo;
use refstore_refs::ObjectId;

/// What a walk needs of a commit.
pub(crate) struct Commit {
    /// Its root tree.
    pub(crate) tree: Vec<u8>,
    /// Its parents, in order.
    pub(crate) parents: Vec<Vec<u8>>,
    /// Its committer time.
    pub(crate) time: u64,
}

/// Tree, parents and committer time of a commit.
pub(crate) fn parse_commit(data: &[u8], repo: &Repo) -> Option<Commit> {
    let hex = |s: &[u8]| {
        ObjectId::from_hex_in(s, repo.object_format())
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
