//! The cluster file every node of a cluster is started with
//! (`refstore serve --cluster <file>`): where etcd is, which node this is,
//! the other nodes' addresses, and how many nodes must hold a push's
//! objects before its refs commit.
//!
//! ```toml
//! etcd = ["http://127.0.0.1:2379", "http://127.0.0.1:22379", "http://127.0.0.1:32379"]
//! node = "n1"
//! object_copies = 2
//! secret_file = "cluster.secret"   # optional; relative to this file
//! etcd_timeout_ms = 3000            # optional
//! peer_timeout_ms = 30000           # optional
//! stale_reads = true                # optional, with max_staleness_ms
//! max_staleness_ms = 30000
//! [nodes]
//! n1 = "http://127.0.0.1:9001"
//! n2 = "http://127.0.0.1:9002"
//! n3 = "http://127.0.0.1:9003"
//! ```
//!
//! Every node reads the same file except for `node`. The fields are
//! public so that each part of the cluster (refs, object copies) reads
//! what it needs from one parsed, checked value.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The key prefix under which every repository's refs are kept, unless
/// the file names another (`key_prefix`), e.g. to share one etcd between
/// several clusters.
pub const DEFAULT_KEY_PREFIX: &str = "/refstore/";

/// How long one etcd request may take before the next member is tried,
/// unless the file says otherwise (`etcd_timeout_ms`).
pub const DEFAULT_ETCD_TIMEOUT: Duration = Duration::from_secs(3);

/// A checked cluster file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterConfig {
    /// etcd's client URLs (`http://host:port`), at least one.
    pub etcd: Vec<String>,
    /// This node's name, a key of `nodes`.
    pub node: String,
    /// How many nodes (the receiving one included) hold a push's objects
    /// durably before its refs are committed; between 1 and the number of
    /// nodes.
    pub object_copies: usize,
    /// Every node of the cluster, this one included: name → the URL of its
    /// `--listen` address, which also serves the nodes' internal endpoints.
    pub nodes: BTreeMap<String, String>,
    /// A file holding the secret the nodes' internal endpoints authenticate
    /// each other with, resolved against the cluster file's directory.
    pub secret_file: Option<PathBuf>,
    /// The prefix of every etcd key the cluster writes.
    pub key_prefix: String,
    /// How long one etcd request may take, every member tried included.
    pub etcd_timeout: Duration,
    /// Whether a node that cannot reach etcd may answer reads from its
    /// copy of a repository's refs, and how old that copy may be, counted
    /// from the last time etcd confirmed it current (`stale_reads = true`,
    /// `max_staleness_ms`). `None`, the default: such reads are refused,
    /// so every answer is linearizable.
    pub stale_reads: Option<Duration>,
    /// How long another node may take to answer one request of the
    /// object copies (a push's packs, a pack a node lacks) before it
    /// counts as unreachable; `None`: the replication's default.
    pub peer_timeout: Option<Duration>,
    /// How old a reflog record gets before it is deleted (`reflog_expire`,
    /// git's `gc.reflogExpire` forms); `None` keeps them forever.
    pub reflog_expire: Option<Duration>,
    /// How many expired reflog records one housekeeping round deletes at
    /// most (`reflog_expire_per_round`); the rest wait for the next
    /// rounds, so that a first expiry over a year of pushes does not
    /// hold etcd busy for one long stretch.
    pub reflog_expire_per_round: u64,
    /// How much of etcd's revision history the cluster keeps
    /// (`compaction_retention_s`); `None` leaves compaction to etcd.
    pub compaction_retention: Option<Duration>,
    /// How often etcd's members are defragmented (`defrag_interval_s`);
    /// `None` never.
    pub defrag_interval: Option<Duration>,
    /// How often a node's repair pass (catching every repository up from
    /// the other nodes, restoring `object_copies`) runs
    /// (`repair_interval_s`); `None`: the replication's default.
    pub repair_interval: Option<Duration>,
}

/// How old a reflog record gets before it is deleted, unless the file
/// says otherwise: git's default `gc.reflogExpire`, 90 days.
pub const DEFAULT_REFLOG_EXPIRE: Duration = Duration::from_secs(90 * 86_400);

/// How many expired reflog records one housekeeping round deletes, unless
/// the file says otherwise (`reflog_expire_per_round`).
pub const DEFAULT_REFLOG_EXPIRE_PER_ROUND: u64 = 50_000;

/// How much of etcd's revision history is kept, unless the file says
/// otherwise (`compaction_retention_s`).
pub const DEFAULT_COMPACTION_RETENTION: Duration = Duration::from_secs(3600);

/// How often etcd's members are defragmented, unless the file says
/// otherwise (`defrag_interval_s`).
pub const DEFAULT_DEFRAG_INTERVAL: Duration = Duration::from_secs(86_400);

/// The file as written; checked into a [`ClusterConfig`].
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    etcd: Vec<String>,
    node: String,
    object_copies: Option<usize>,
    nodes: BTreeMap<String, String>,
    secret_file: Option<PathBuf>,
    key_prefix: Option<String>,
    etcd_timeout_ms: Option<u64>,
    stale_reads: Option<bool>,
    max_staleness_ms: Option<u64>,
    peer_timeout_ms: Option<u64>,
    reflog_expire: Option<String>,
    reflog_expire_per_round: Option<u64>,
    compaction_retention_s: Option<u64>,
    defrag_interval_s: Option<u64>,
    repair_interval_s: Option<u64>,
}

/// What is wrong with a cluster file.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cluster file '{}': {reason}", path.display())]
pub struct ConfigError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub reason: String,
}

impl ClusterConfig {
    /// Parses and checks `text`, the contents of the cluster file at
    /// `path` (relative paths inside it are resolved against its
    /// directory).
    pub fn parse(text: &str, path: &Path) -> Result<ClusterConfig, ConfigError> {
        let fail = |reason: String| ConfigError {
            path: path.to_owned(),
            reason,
        };
        let raw: Raw = toml::from_str(text).map_err(|e| fail(e.message().to_owned()))?;
        if raw.etcd.is_empty() {
            return Err(fail(
                "'etcd' lists no endpoint; give etcd's client URLs, e.g. [\"http://127.0.0.1:2379\"]"
                    .into(),
            ));
        }
        for endpoint in &raw.etcd {
            if endpoint.starts_with("https://") {
                return Err(fail(format!(
                    "etcd endpoint '{endpoint}': TLS to etcd is not supported; reach etcd over a private network with http://"
                )));
            }
            if !endpoint.starts_with("http://") {
                return Err(fail(format!(
                    "etcd endpoint '{endpoint}' is not a URL (http://host:port)"
                )));
            }
        }
        if raw.nodes.is_empty() {
            return Err(fail("[nodes] lists no node".into()));
        }
        if !raw.nodes.contains_key(&raw.node) {
            let known: Vec<&str> = raw.nodes.keys().map(String::as_str).collect();
            return Err(fail(format!(
                "node '{}' is not one of [nodes] ({})",
                raw.node,
                known.join(", ")
            )));
        }
        for (name, url) in &raw.nodes {
            if !(url.starts_with("http://") || url.starts_with("https://")) {
                return Err(fail(format!(
                    "node '{name}': '{url}' is not a URL (http://host:port)"
                )));
            }
        }
        let object_copies = raw.object_copies.unwrap_or(1);
        if object_copies == 0 || object_copies > raw.nodes.len() {
            return Err(fail(format!(
                "object_copies = {object_copies}: give a number between 1 and the number of nodes ({})",
                raw.nodes.len()
            )));
        }
        let key_prefix = raw
            .key_prefix
            .unwrap_or_else(|| DEFAULT_KEY_PREFIX.to_owned());
        if !key_prefix.ends_with('/') {
            return Err(fail(format!("key_prefix '{key_prefix}' must end with '/'")));
        }
        let etcd_timeout = match raw.etcd_timeout_ms {
            Some(0) => return Err(fail("etcd_timeout_ms must be positive".into())),
            Some(ms) => Duration::from_millis(ms),
            None => DEFAULT_ETCD_TIMEOUT,
        };
        let stale_reads = match (raw.stale_reads.unwrap_or(false), raw.max_staleness_ms) {
            (false, None) => None,
            (false, Some(_)) => {
                return Err(fail(
                    "max_staleness_ms bounds stale reads, which are off: add stale_reads = true or remove it"
                        .into(),
                ))
            }
            (true, None) => {
                return Err(fail(
                    "stale_reads = true needs a bound: max_staleness_ms = <milliseconds>".into(),
                ))
            }
            (true, Some(0)) => return Err(fail("max_staleness_ms must be positive".into())),
            (true, Some(ms)) => Some(Duration::from_millis(ms)),
        };
        let peer_timeout = match raw.peer_timeout_ms {
            Some(0) => return Err(fail("peer_timeout_ms must be positive".into())),
            ms => ms.map(Duration::from_millis),
        };
        let reflog_expire = match &raw.reflog_expire {
            Some(text) => refstore_maint::expire::parse(text)
                .map_err(|e| fail(format!("reflog_expire: {e}")))?,
            None => Some(DEFAULT_REFLOG_EXPIRE),
        };
        // 0 turns a task off.
        let seconds = |value: Option<u64>, default: Duration| match value {
            Some(0) => None,
            Some(s) => Some(Duration::from_secs(s)),
            None => Some(default),
        };
        let repair_interval = match raw.repair_interval_s {
            Some(0) => return Err(fail("repair_interval_s must be positive".into())),
            s => s.map(Duration::from_secs),
        };
        let base = path.parent().unwrap_or(Path::new("."));
        Ok(ClusterConfig {
            etcd: raw.etcd,
            node: raw.node,
            object_copies,
            nodes: raw.nodes,
            secret_file: raw.secret_file.map(|p| base.join(p)),
            key_prefix,
            etcd_timeout,
            stale_reads,
            peer_timeout,
            reflog_expire,
            compaction_retention: seconds(raw.compaction_retention_s, DEFAULT_COMPACTION_RETENTION),
            // At least one: a round that may delete nothing would leave
            // the expiry unfinished forever.
            reflog_expire_per_round: raw
                .reflog_expire_per_round
                .unwrap_or(DEFAULT_REFLOG_EXPIRE_PER_ROUND)
                .max(1),
            defrag_interval: seconds(raw.defrag_interval_s, DEFAULT_DEFRAG_INTERVAL),
            repair_interval,
        })
    }

    /// The URL of this node.
    pub fn own_url(&self) -> &str {
        &self.nodes[&self.node]
    }

    /// The other nodes, by name.
    pub fn peers(&self) -> impl Iterator<Item = (&str, &str)> {
        self.nodes
            .iter()
            .filter(|(name, _)| **name != self.node)
            .map(|(name, url)| (name.as_str(), url.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
etcd = ["http://127.0.0.1:2379", "http://127.0.0.1:22379"]
node = "n2"
object_copies = 2
secret_file = "secret"
[nodes]
n1 = "http://127.0.0.1:9001"
n2 = "http://127.0.0.1:9002"
n3 = "http://127.0.0.1:9003"
"#;

    fn parse(text: &str) -> Result<ClusterConfig, ConfigError> {
        ClusterConfig::parse(text, Path::new("/etc/refstore/cluster.toml"))
    }

    #[test]
    fn a_good_file_is_read() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.etcd.len(), 2);
        assert_eq!(config.own_url(), "http://127.0.0.1:9002");
        assert_eq!(config.object_copies, 2);
        assert_eq!(
            config.secret_file.as_deref(),
            Some(Path::new("/etc/refstore/secret"))
        );
        let peers: Vec<&str> = config.peers().map(|(n, _)| n).collect();
        assert_eq!(peers, ["n1", "n3"]);
        assert_eq!(config.key_prefix, DEFAULT_KEY_PREFIX);
        assert_eq!(config.etcd_timeout, DEFAULT_ETCD_TIMEOUT);
        assert_eq!(config.stale_reads, None);
        assert_eq!(config.peer_timeout, None);
        let config = parse(&format!("peer_timeout_ms = 2500\n{GOOD}")).unwrap();
        assert_eq!(config.peer_timeout, Some(Duration::from_millis(2500)));
        assert_eq!(config.repair_interval, None);
        let config = parse(&format!("repair_interval_s = 5\n{GOOD}")).unwrap();
        assert_eq!(config.repair_interval, Some(Duration::from_secs(5)));
        assert_eq!(config.reflog_expire, Some(DEFAULT_REFLOG_EXPIRE));
        assert_eq!(
            config.compaction_retention,
            Some(DEFAULT_COMPACTION_RETENTION)
        );
        assert_eq!(config.defrag_interval, Some(DEFAULT_DEFRAG_INTERVAL));
        assert_eq!(
            config.reflog_expire_per_round,
            DEFAULT_REFLOG_EXPIRE_PER_ROUND
        );
        for (set, read) in [(250, 250), (0, 1)] {
            let text = format!("reflog_expire_per_round = {set}\n{GOOD}");
            assert_eq!(parse(&text).unwrap().reflog_expire_per_round, read);
        }
    }

    #[test]
    fn housekeeping_settings_are_read() {
        let with = |lines: &str| parse(&format!("{lines}\n{GOOD}"));
        let config = with(
            "reflog_expire = \"2.weeks.ago\"\ncompaction_retention_s = 60\ndefrag_interval_s = 0",
        )
        .unwrap();
        assert_eq!(config.reflog_expire, Some(Duration::from_secs(14 * 86_400)));
        assert_eq!(config.compaction_retention, Some(Duration::from_secs(60)));
        assert_eq!(config.defrag_interval, None);
        for never in ["never", "false"] {
            let config = with(&format!("reflog_expire = \"{never}\"")).unwrap();
            assert_eq!(config.reflog_expire, None);
        }
        let error = with("reflog_expire = \"soon\"").unwrap_err().to_string();
        assert!(
            error.contains("reflog_expire: invalid expiry date 'soon'"),
            "{error}"
        );
    }

    #[test]
    fn stale_reads_are_opted_into_with_a_bound() {
        for ms in [1u64, 250, 30_000, 86_400_000] {
            let text = format!("stale_reads = true\nmax_staleness_ms = {ms}\n{GOOD}");
            let config = parse(&text).unwrap();
            assert_eq!(config.stale_reads, Some(Duration::from_millis(ms)));
        }
        let config = parse(&format!("stale_reads = false\n{GOOD}")).unwrap();
        assert_eq!(config.stale_reads, None);
    }

    #[test]
    fn bad_files_say_what_is_wrong() {
        let cases = [
            (
                GOOD.replace("node = \"n2\"", "node = \"n9\""),
                "node 'n9' is not one of [nodes] (n1, n2, n3)",
            ),
            (
                GOOD.replace("object_copies = 2", "object_copies = 4"),
                "object_copies = 4",
            ),
            (
                GOOD.replace("object_copies = 2", "object_copies = 0"),
                "object_copies = 0",
            ),
            (
                GOOD.replace(
                    "etcd = [\"http://127.0.0.1:2379\", \"http://127.0.0.1:22379\"]",
                    "etcd = []",
                ),
                "'etcd' lists no endpoint",
            ),
            (
                GOOD.replace("http://127.0.0.1:2379", "127.0.0.1:2379"),
                "is not a URL",
            ),
            (format!("extra = 1\n{GOOD}"), "unknown field `extra`"),
            (
                format!("stale_reads = true\n{GOOD}"),
                "stale_reads = true needs a bound: max_staleness_ms",
            ),
            (
                format!("max_staleness_ms = 100\n{GOOD}"),
                "max_staleness_ms bounds stale reads, which are off",
            ),
            (
                format!("stale_reads = true\nmax_staleness_ms = 0\n{GOOD}"),
                "max_staleness_ms must be positive",
            ),
            (
                format!("repair_interval_s = 0\n{GOOD}"),
                "repair_interval_s must be positive",
            ),
            (
                format!("peer_timeout_ms = 0\n{GOOD}"),
                "peer_timeout_ms must be positive",
            ),
            ("node = \"n1\"".to_owned(), "missing field"),
        ];
        for (text, expected) in cases {
            let error = parse(&text).unwrap_err().to_string();
            assert!(error.contains(expected), "{error} lacks {expected}");
            assert!(error.starts_with("cluster file '/etc/refstore/cluster.toml': "));
        }
    }
}
