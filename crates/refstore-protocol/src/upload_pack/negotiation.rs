//! Finding what the client already has: the `have` lines it sends are
//! checked against the repository, and once every wanted commit reaches a
//! commit both sides have, the server can stop listening and send a pack
//! ("ready"). Protocol v0 and v2 share this; they differ only in how they
//! acknowledge.

use super::graph::Graph;
use super::UploadPackError;
use refstore_refs::ObjectId;
use std::collections::{HashSet, VecDeque};

/// The state of one fetch's negotiation.
pub(crate) struct Negotiation {
    /// Wanted commits not yet known to reach a common commit.
    unsatisfied: Vec<ObjectId>,
    /// Objects both sides have, in the order the client named them, each
    /// once: a have already known to be the client's (named before, or
    /// a parent of a commit named before) is not added again. These are
    /// what v2 acknowledges and what counts as "a common object" for v0's
    /// `ACK` and `NAK`, as in git.
    common: Vec<ObjectId>,
    /// Objects the client has: the common objects and the parents of the
    /// common commits.
    they_have: HashSet<ObjectId>,
    /// The committer time of the oldest common commit: a search for a
    /// common ancestor need not go below it.
    oldest_have: Option<i64>,
}

/// What a `have` line told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Have {
    /// The server has the object too (it may have been named before).
    Common,
    /// The server does not have it.
    Unknown,
}

impl Negotiation {
    /// A negotiation for the wanted objects `wants` (those that are not
    /// commits need no common ancestor).
    pub fn new(graph: &mut Graph, wants: &[ObjectId]) -> Result<Self, UploadPackError> {
        let mut unsatisfied = Vec::new();
        for want in wants {
            if let Some((peeled, gix_object::Kind::Commit)) = graph.peel(want, |_| {})? {
                unsatisfied.push(peeled);
            }
        }
        Ok(Negotiation {
            unsatisfied,
            common: Vec::new(),
            they_have: HashSet::new(),
            oldest_have: None,
        })
    }

    /// Records a `have`.
    pub fn have(&mut self, graph: &mut Graph, id: ObjectId) -> Result<Have, UploadPackError> {
        // Haves are nearly always commits: parse them as such first, which
        // reads each only once.
        if let Some(commit) = graph.commit(&id)? {
            self.they_have.extend(commit.parents.iter().copied());
            self.oldest_have = Some(self.oldest_have.map_or(commit.time, |t| t.min(commit.time)));
        } else if graph.kind(&id)?.is_none() {
            return Ok(Have::Unknown);
        }
        if self.they_have.insert(id) {
            self.common.push(id);
        }
        Ok(Have::Common)
    }

    /// Whether any `have` was common.
    pub fn has_common(&self) -> bool {
        !self.common.is_empty()
    }

    /// The common objects, in the order the client named them.
    pub fn common(&self) -> &[ObjectId] {
        &self.common
    }

    /// True once every wanted commit reaches a commit the client has: more
    /// haves would not make the pack smaller by much.
    pub fn ready(&mut self, graph: &mut Graph) -> Result<bool, UploadPackError> {
        let mut still = Vec::new();
        for want in std::mem::take(&mut self.unsatisfied) {
            if !self.reaches_common(graph, want)? {
                still.push(want);
            }
        }
        let ready = still.is_empty();
        self.unsatisfied = still;
        Ok(ready)
    }

    /// Whether `want` reaches a commit the client has, going down from it
    /// only through commits no older than the oldest have: as in git,
    /// the parents of every commit reached are looked at, whatever their
    /// age, but only the young enough are walked on.
    fn reaches_common(&self, graph: &mut Graph, want: ObjectId) -> Result<bool, UploadPackError> {
        let Some(oldest) = self.oldest_have else {
            return Ok(false);
        };
        if self.they_have.contains(&want) {
            return Ok(true);
        }
        let mut seen = HashSet::from([want]);
        let mut queue = VecDeque::from([want]);
        while let Some(id) = queue.pop_front() {
            let Some(commit) = graph.commit(&id)? else {
                continue;
            };
            for parent in commit.parents.iter().copied() {
                if self.they_have.contains(&parent) {
                    return Ok(true);
                }
                if !seen.insert(parent) {
                    continue;
                }
                if graph.commit(&parent)?.is_some_and(|p| p.time >= oldest) {
                    queue.push_back(parent);
                }
            }
        }
        Ok(false)
    }
}
