//! Which nodes make up the cluster, kept in etcd so that adding or
//! removing one needs neither every node's cluster file edited nor any
//! node restarted: `<key_prefix>nodes/<name>` holds the URL of each
//! member's `--listen` address.
//!
//! The cluster file's `[nodes]` table is the initial membership: while
//! etcd holds no member key, the members are the file's. The first
//! `add` or `remove` writes the whole resulting membership to etcd (in
//! one transaction, on condition that etcd still holds none), and from
//! then on etcd's members are the cluster's and every node's `[nodes]`
//! is no longer read for membership (a node's file must still name the
//! node itself, which is how it finds its own entry and URL when it
//! starts).
//!
//! Every node polls the members ([`Cluster::members`]) and points its
//! replication at them; see `refstore serve --cluster`.

use crate::cluster::Cluster;
use crate::etcd::{Consistency, EtcdError};
use crate::keys::range_end;
use etcd_client::{Compare, CompareOp, GetOptions, Txn, TxnOp};
use std::collections::BTreeMap;

/// Why a membership change did not happen.
#[derive(Debug, Clone, thiserror::Error)]
pub enum MembershipError {
    /// The name or URL cannot be used.
    #[error("cluster: {0}")]
    Invalid(String),
    /// A member of that name exists.
    #[error("cluster: node '{0}' is a member already")]
    Exists(String),
    /// No member of that name.
    #[error("cluster: node '{0}' is not a member (members: {1})")]
    Unknown(String, String),
    /// Removing the node would leave fewer members than `object_copies`.
    #[error(
        "cluster: removing node '{name}' would leave {left} nodes, fewer than object_copies = {copies}; \
         add a node first or lower object_copies"
    )]
    BelowCopies {
        /// The node.
        name: String,
        /// The members left.
        left: usize,
        /// The cluster's `object_copies`.
        copies: usize,
    },
    /// Another change of the membership happened meanwhile.
    #[error("cluster: the membership changed while this ran; try again")]
    Changed,
    /// etcd could not be asked.
    #[error("{0}")]
    Etcd(#[from] EtcdError),
}

/// The cluster's members: name → URL, and whether etcd holds them (else
/// they are the cluster file's `[nodes]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Members {
    /// Every member, by name.
    pub nodes: BTreeMap<String, String>,
    /// True once etcd holds the membership.
    pub in_etcd: bool,
}

/// A node's name: letters, digits, `-`, `_` and `.`, not starting with
/// `.`, at most 64 bytes (it appears in keys, logs and stamps).
pub fn check_node_name(name: &str) -> Result<(), MembershipError> {
    let good = !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if good {
        Ok(())
    } else {
        Err(MembershipError::Invalid(format!(
            "'{name}' cannot name a node: use letters, digits, '-', '_' and '.'"
        )))
    }
}

impl Cluster {
    fn member_prefix(&self) -> Vec<u8> {
        format!("{}nodes/", self.config.key_prefix).into_bytes()
    }

    fn member_key(&self, name: &str) -> Vec<u8> {
        let mut key = self.member_prefix();
        key.extend_from_slice(name.as_bytes());
        key
    }

    /// The cluster's members, read linearizably.
    pub fn members(&self) -> Result<Members, EtcdError> {
        let prefix = self.member_prefix();
        let end = range_end(&prefix);
        let kvs = self.etcd().call(Consistency::Quorum, move |mut client| {
            let (start, end) = (prefix.clone(), end.clone());
            async move {
                let mut response = client
                    .get(start, Some(GetOptions::new().with_range(end)))
                    .await?;
                Ok(response.take_kvs())
            }
        })?;
        let prefix = self.member_prefix();
        let nodes: BTreeMap<String, String> = kvs
            .iter()
            .filter_map(|kv| {
                let name = std::str::from_utf8(kv.key().strip_prefix(prefix.as_slice())?).ok()?;
                let url = std::str::from_utf8(kv.value()).ok()?;
                Some((name.to_owned(), url.to_owned()))
            })
            .collect();
        Ok(match nodes.is_empty() {
            true => Members {
                nodes: self.config.nodes.clone(),
                in_etcd: false,
            },
            false => Members {
                nodes,
                in_etcd: true,
            },
        })
    }

    /// Adds the node `name`, reached at `url`.
    pub fn add_member(&self, name: &str, url: &str) -> Result<Members, MembershipError> {
        check_node_name(name)?;
        if !url.starts_with("http://") || url.len() <= "http://".len() {
            return Err(MembershipError::Invalid(format!(
                "node '{name}': '{url}' is not an http:// URL (nodes reach each other over plain HTTP)"
            )));
        }
        let current = self.members()?;
        if current.nodes.contains_key(name) {
            return Err(MembershipError::Exists(name.to_owned()));
        }
        let url = url.trim_end_matches('/');
        if let Some((other, _)) = current
            .nodes
            .iter()
            .find(|(_, u)| u.trim_end_matches('/') == url)
        {
            return Err(MembershipError::Invalid(format!(
                "node '{other}' has the URL '{url}' already"
            )));
        }
        let mut next = current.clone();
        next.nodes.insert(name.to_owned(), url.to_owned());
        next.in_etcd = true;
        self.write_members(&current, &next, &[])?;
        Ok(next)
    }

    /// Removes the node `name`; refused if fewer than `object_copies`
    /// members would be left.
    pub fn remove_member(&self, name: &str) -> Result<Members, MembershipError> {
        let current = self.members()?;
        if !current.nodes.contains_key(name) {
            let known: Vec<&str> = current.nodes.keys().map(String::as_str).collect();
            return Err(MembershipError::Unknown(name.to_owned(), known.join(", ")));
        }
        let left = current.nodes.len() - 1;
        if left < self.config.object_copies {
            return Err(MembershipError::BelowCopies {
                name: name.to_owned(),
                left,
                copies: self.config.object_copies,
            });
        }
        let mut next = current.clone();
        next.nodes.remove(name);
        next.in_etcd = true;
        self.write_members(&current, &next, &[name])?;
        Ok(next)
    }

    /// Writes `next` over `current` in one transaction, on condition that
    /// etcd still holds every member of `current` (so two concurrent
    /// removals cannot together go below `object_copies`) and, for an
    /// addition, not the added name; when etcd held no membership yet, on
    /// condition that it still holds none (the file's is written whole).
    fn write_members(
        &self,
        current: &Members,
        next: &Members,
        removed: &[&str],
    ) -> Result<(), MembershipError> {
        let mut guards = Vec::new();
        let mut ops = Vec::new();
        if current.in_etcd {
            for name in current.nodes.keys() {
                guards.push(Compare::version(
                    self.member_key(name),
                    CompareOp::Greater,
                    0,
                ));
            }
            for name in removed {
                ops.push(TxnOp::delete(self.member_key(name), None));
            }
        } else {
            let prefix = self.member_prefix();
            let end = range_end(&prefix);
            guards.push(Compare::version(prefix, CompareOp::Equal, 0).with_range(end));
        }
        for (name, url) in &next.nodes {
            if !current.in_etcd || !current.nodes.contains_key(name) {
                let key = self.member_key(name);
                guards.push(Compare::version(key.clone(), CompareOp::Equal, 0));
                ops.push(TxnOp::put(key, url.as_bytes(), None));
            }
        }
        let txn = Txn::new().when(guards).and_then(ops);
        if self.run_txn(txn)? {
            Ok(())
        } else {
            Err(MembershipError::Changed)
        }
    }
}
