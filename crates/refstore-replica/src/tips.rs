//! The cluster's refs as catching up needs them ([`ClusterTips`]), and
//! what it remembers of its last walks ([`CompleteTips`]).

use refstore_protocol::Repository;
use refstore_refs::ObjectId;
use std::collections::{HashMap, HashSet};

/// The cluster's refs of a repository, for catching up.
pub trait ClusterTips: Send + Sync + std::fmt::Debug {
    /// The objects the refs of the repository `name` (opened as `repo`)
    /// point at, listed at one revision, and `HEAD`'s.
    fn tips(&self, repo: &Repository, name: &str) -> Result<Vec<ObjectId>, String>;

    /// What tells this copy of `repo` from an earlier repository of the
    /// same name (deleted, or renamed away): a walk's memory of complete
    /// tips is kept per name and this.
    fn incarnation(&self, repo: &Repository) -> Option<String>;
}

/// Per repository (its name and incarnation), the tips of the last walk
/// that found everything here: where the next walk may stop.
pub(crate) type CompleteTips = std::sync::Mutex<HashMap<String, HashSet<ObjectId>>>;
