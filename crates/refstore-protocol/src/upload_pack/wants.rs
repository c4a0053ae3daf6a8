//! Which wanted objects a client may have: the objects the refs name
//! (`allow-tip-sha1-in-want`) and the commits reachable from them
//! (`allow-reachable-sha1-in-want`). Anything else — a missing object, or
//! one only unreachable history holds — is refused with git's
//! `not our ref`.

use super::graph::{to_gix, Graph, IdHasher};
use super::refs::RefSnapshot;
use super::UploadPackError;
use gix_hash::ObjectId;
use std::collections::{HashSet, VecDeque};

/// Checks `wants` against the offered refs.
pub(crate) fn check(
    graph: &mut Graph,
    snapshot: &RefSnapshot,
    wants: &[ObjectId],
) -> Result<(), UploadPackError> {
    // Thousands of tags: ids hash cheaply.
    let mut tips: HashSet<ObjectId, IdHasher> = HashSet::default();
    for offered in snapshot.offered() {
        tips.insert(to_gix(&offered.id));
        if let Some(peeled) = &offered.peeled {
            tips.insert(to_gix(peeled));
        }
    }
    let mut unreached: HashSet<ObjectId> = HashSet::new();
    for want in wants {
        if tips.contains(want) {
            continue;
        }
        if graph.commit(want)?.is_none() {
            return Err(not_our_ref(want));
        }
        unreached.insert(*want);
    }
    if unreached.is_empty() {
        return Ok(());
    }
    // Walk the history of every tip until each wanted commit is met.
    let mut seen = HashSet::new();
    let mut queue: VecDeque<ObjectId> = tips.into_iter().collect();
    while let Some(id) = queue.pop_front() {
        if !seen.insert(id) {
            continue;
        }
        if unreached.remove(&id) && unreached.is_empty() {
            return Ok(());
        }
        if let Some(commit) = graph.commit(&id)? {
            queue.extend(commit.parents.iter().copied());
        }
    }
    let first = unreached.iter().next().expect("checked non-empty");
    Err(not_our_ref(first))
}

fn not_our_ref(id: &ObjectId) -> UploadPackError {
    UploadPackError::request(format!("upload-pack: not our ref {id}"))
}
