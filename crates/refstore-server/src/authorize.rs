//! Which repository a request reaches, and whether its client may do what
//! it asks there: the one decision HTTP, SSH, the replication endpoint and
//! a cluster's nodes make before they open a repository.
//!
//! The repository is found as git finds it (with or without `.git`, a work
//! tree or its git directory) and fully resolved by
//! [`crate::confine::repository`]; access is then decided by the
//! name of the directory that will be opened, never by the path the client
//! typed, and [`Decision::served`] is what the transport opens.

use crate::access::{decide, AccessRules, Verdict, Want};
use crate::confine::{self, Served};
use refstore_fs::Vfs;
use std::path::Path;

/// What a transport does with a request to a repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The answer the rules give.
    pub verdict: Verdict,
    /// The repository to open when the verdict allows it; `None` when
    /// there is no repository below the root at the path (answered like a
    /// missing one).
    pub served: Option<Served>,
}

/// Finds the repository `request` names below `root` (a `/`-separated,
/// decoded path; a leading `/` is the root's) and decides whether `user`
/// (`None`: anonymous) may do `want` to it. Where nothing is found, the
/// rules are asked about the path as typed, so that a client that may not
/// read there learns nothing about what exists.
pub fn authorize(
    vfs: &dyn Vfs,
    root: &Path,
    rules: Option<&AccessRules>,
    allow_push: bool,
    user: Option<&str>,
    request: &str,
    want: Want,
) -> Decision {
    let request = request.trim_start_matches('/');
    let served = confine::repository(vfs, root, request).ok();
    let name = match &served {
        Some(served) => served.name.clone(),
        None => request
            .split('/')
            .filter(|n| !n.is_empty())
            .collect::<Vec<_>>()
            .join("/"),
    };
    Decision {
        verdict: decide(rules, allow_push, user, &name, want),
        served,
    }
}

#[cfg(test)]
mod tests;
