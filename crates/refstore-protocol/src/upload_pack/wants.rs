//! Which wanted objects a client may have, as git's upload-pack decides
//! it from `uploadpack.allowTipSHA1InWant`, `allowReachableSHA1InWant` and
//! `allowAnySHA1InWant`:
//!
//! - protocol v2 serves any object the repository has;
//! - protocol v0 serves the objects the refs name; other objects only with
//!   `allowAnySHA1InWant`, or, with `allowReachableSHA1InWant` or over a
//!   stateless transport (HTTP, where the advertisement came from another
//!   request), commits reachable from the refs and any tree or blob (git
//!   checks them with `rev-list`, which lists commits only).
//!
//! Anything else — a missing object, or a commit only unreachable history
//! holds — is refused with git's `not our ref`.

use super::graph::Graph;
use super::refs::RefSnapshot;
use super::UploadPackError;
use refstore_fs::config::Config;
use refstore_hash::IdHasher;
use refstore_refs::ObjectId;
use std::collections::{HashSet, VecDeque};

/// The `uploadpack.allow*SHA1InWant` settings.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct WantPolicy {
    /// `allowTipSHA1InWant` (advertised as `allow-tip-sha1-in-want`).
    pub tip: bool,
    /// `allowReachableSHA1InWant` (`allow-reachable-sha1-in-want`).
    pub reachable: bool,
    /// `allowAnySHA1InWant`, which implies both others.
    pub any: bool,
}

impl WantPolicy {
    /// Reads the settings; `allowAnySHA1InWant` set either way sets or
    /// clears all three, as in git when it comes last.
    pub(crate) fn read(config: &Config) -> Result<Self, UploadPackError> {
        let get = |key: &str| {
            config
                .bool(key)
                .map_err(|e| UploadPackError::Objects(e.to_string()))
        };
        let mut policy = WantPolicy {
            tip: get("uploadpack.allowTipSHA1InWant")? == Some(true),
            reachable: get("uploadpack.allowReachableSHA1InWant")? == Some(true),
            any: false,
        };
        match get("uploadpack.allowAnySHA1InWant")? {
            Some(true) => {
                policy = WantPolicy {
                    tip: true,
                    reachable: true,
                    any: true,
                }
            }
            Some(false) => policy = WantPolicy::default(),
            None => {}
        }
        Ok(policy)
    }
}

/// How the wants came.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protocol {
    /// Protocol v0/v1; `stateless` over HTTP.
    V0 { stateless: bool },
    /// Protocol v2.
    V2,
}

/// Checks `wants` against the offered refs.
pub(crate) fn check(
    graph: &mut Graph,
    snapshot: &RefSnapshot,
    wants: &[ObjectId],
    policy: WantPolicy,
    protocol: Protocol,
) -> Result<(), UploadPackError> {
    // Thousands of tags: ids hash cheaply. What an annotated tag peels to
    // is advertised but is no tip: as in git, a stateful v0 client may
    // not want it by its own id, and over HTTP it is reachable from its
    // tag, where the walk below starts too.
    let mut tips: HashSet<ObjectId, IdHasher> = HashSet::default();
    let mut peeled_tips = Vec::new();
    if protocol != Protocol::V2 && !policy.any {
        for offered in snapshot.offered() {
            tips.insert(offered.id);
            peeled_tips.extend(offered.peeled);
        }
    }
    let mut unreached: HashSet<ObjectId> = HashSet::new();
    // As in git, a missing object is refused as the wants are read; the
    // others once all are read, and the one named is then the first want
    // that is no tip, whichever was found unreachable.
    let mut first_non_tip = None;
    let mut tips_only = false;
    for want in wants {
        if tips.contains(want) {
            continue;
        }
        let Some(kind) = graph.kind(want)? else {
            return Err(not_our_ref(want));
        };
        let stateless = match protocol {
            Protocol::V2 => continue,
            _ if policy.any => continue,
            Protocol::V0 { stateless } => stateless,
        };
        first_non_tip = first_non_tip.or(Some(*want));
        if !stateless && !policy.reachable {
            tips_only = true;
            continue;
        }
        let commit = match kind {
            gix_object::Kind::Commit => *want,
            gix_object::Kind::Tag => match graph.peel(want, |_| {})? {
                Some((id, gix_object::Kind::Commit)) => id,
                _ => continue,
            },
            // Not commits: git's reachability check does not see them.
            _ => continue,
        };
        if !tips.contains(&commit) {
            unreached.insert(commit);
        }
    }
    let Some(first_non_tip) = first_non_tip else {
        return Ok(());
    };
    if tips_only {
        return Err(not_our_ref(&first_non_tip));
    }
    if unreached.is_empty() {
        return Ok(());
    }
    // Walk the history of every tip until each wanted commit is met.
    let mut seen = HashSet::new();
    let mut queue: VecDeque<ObjectId> = tips.into_iter().chain(peeled_tips).collect();
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
    Err(not_our_ref(&first_non_tip))
}

/// Refuses the first of `wants` the repository does not have, as git
/// does when it reads the want.
pub(crate) fn check_present(graph: &mut Graph, wants: &[ObjectId]) -> Result<(), UploadPackError> {
    for want in wants {
        if graph.kind(want)?.is_none() {
            return Err(not_our_ref(want));
        }
    }
    Ok(())
}

fn not_our_ref(id: &ObjectId) -> UploadPackError {
    UploadPackError::request(format!("upload-pack: not our ref {id}"))
}
