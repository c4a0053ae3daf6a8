//! The configuration of a node's replication, as plain values: whoever
//! reads a cluster's configuration fills it.

use std::time::Duration;

/// This node, the nodes of its cluster, and how many must hold a push's
/// objects.
#[derive(Clone)]
pub struct Peers {
    /// This node's name, one of `nodes`.
    pub this_node: String,
    /// Every node of the cluster (this one included): its name and the
    /// base URL its `refstore serve` listens on (`http://host:port`).
    pub nodes: Vec<(String, String)>,
    /// How many nodes, this one included, hold a push's packs durably
    /// before its refs change.
    pub object_copies: usize,
    /// The secret every node shares, that opens the replication endpoint.
    pub secret: Vec<u8>,
    /// How long one request to a peer may take before that peer counts as
    /// unreachable.
    pub timeout: Duration,
    /// How often the background repair runs (`None`: only at startup).
    pub repair_every: Option<Duration>,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The secret stays out of logs.
        f.debug_struct("Peers")
            .field("this_node", &self.this_node)
            .field("nodes", &self.nodes)
            .field("object_copies", &self.object_copies)
            .field("timeout", &self.timeout)
            .field("repair_every", &self.repair_every)
            .finish_non_exhaustive()
    }
}

/// The time a peer has to answer one request, unless configured.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How often the repair runs, unless configured.
pub const DEFAULT_REPAIR_EVERY: Duration = Duration::from_secs(60);

impl Peers {
    /// A configuration with the default timeout and repair interval.
    pub fn new(
        this_node: String,
        nodes: Vec<(String, String)>,
        object_copies: usize,
        secret: Vec<u8>,
    ) -> Peers {
        Peers {
            this_node,
            nodes,
            object_copies,
            secret,
            timeout: DEFAULT_TIMEOUT,
            repair_every: Some(DEFAULT_REPAIR_EVERY),
        }
    }

    /// The other nodes: name and base URL.
    pub fn others(&self) -> impl Iterator<Item = (&str, &str)> {
        self.nodes
            .iter()
            .filter(|(name, _)| *name != self.this_node)
            .map(|(name, url)| (name.as_str(), url.as_str()))
    }

    /// Why the configuration cannot work, if it cannot.
    pub fn check(&self) -> Result<(), String> {
        if !self.nodes.iter().any(|(name, _)| *name == self.this_node) {
            return Err(format!(
                "node '{}' is not one of the cluster's nodes",
                self.this_node
            ));
        }
        for (i, (name, url)) in self.nodes.iter().enumerate() {
            if self.nodes[..i].iter().any(|(other, _)| other == name) {
                return Err(format!("node '{name}' is named twice"));
            }
            if !url.starts_with("http://") {
                return Err(format!(
                    "node '{name}': '{url}' is not an http:// URL (nodes reach each other over plain HTTP)"
                ));
            }
        }
        if self.object_copies == 0 || self.object_copies > self.nodes.len() {
            return Err(format!(
                "object_copies = {} must be between 1 and the number of nodes ({})",
                self.object_copies,
                self.nodes.len()
            ));
        }
        if self.secret.is_empty() {
            return Err("the replication secret is empty".to_owned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn peers(copies: usize) -> Peers {
        Peers::new(
            "n1".into(),
            vec![
                ("n1".into(), "http://127.0.0.1:1".into()),
                ("n2".into(), "http://127.0.0.1:2".into()),
            ],
            copies,
            b"s".to_vec(),
        )
    }

    #[test]
    fn others_leave_this_node_out() {
        let p = peers(2);
        assert_eq!(
            p.others().collect::<Vec<_>>(),
            [("n2", "http://127.0.0.1:2")]
        );
        assert_eq!(p.check(), Ok(()));
    }

    #[test]
    fn unusable_configurations_are_explained() {
        assert!(peers(3).check().unwrap_err().contains("between 1 and"));
        assert!(peers(0).check().is_err());
        let mut p = peers(1);
        p.this_node = "n9".into();
        assert!(p.check().unwrap_err().contains("not one of"));
        let mut p = peers(1);
        p.secret.clear();
        assert!(p.check().unwrap_err().contains("secret"));
        let mut p = peers(1);
        p.nodes[1].1 = "https://x".into();
        assert!(p.check().unwrap_err().contains("http://"));
        assert!(!format!("{p:?}").contains("secret"));
    }
}
