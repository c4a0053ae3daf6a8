//! `serve`'s hidden replication flags: a node of a cluster whose pushes'
//! objects reach `--replicate-copies` nodes before their refs change. A
//! cluster's configuration file fills the same values; these flags give
//! them directly.

use crate::context::{Fatal, Globals};
use refstore_replica::{Peers, Replica};
use refstore_server::ServeOptions;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// The replication flags.
#[derive(Debug, clap::Args)]
pub struct ReplicationArgs {
    /// This node's name, one of --replicate-peer's.
    #[arg(long, hide = true, value_name = "name", requires_all = ["replicate_peer", "replicate_secret"])]
    replicate_node: Option<String>,
    /// A node of the cluster, this one included: `<name>=http://host:port`.
    #[arg(
        long,
        hide = true,
        value_name = "name=url",
        requires = "replicate_node"
    )]
    replicate_peer: Vec<String>,
    /// Nodes, this one included, that hold a push's objects before its
    /// refs change.
    #[arg(long, hide = true, value_name = "n", default_value_t = 2)]
    replicate_copies: usize,
    /// A file holding the secret the nodes share (its whitespace trimmed).
    #[arg(long, hide = true, value_name = "file", requires = "replicate_node")]
    replicate_secret: Option<PathBuf>,
    /// How long a peer may take to answer one request.
    #[arg(long, hide = true, value_name = "seconds", default_value_t = 30.0)]
    replicate_timeout: f64,
    /// Seconds between background repairs (0: only at startup).
    #[arg(long, hide = true, value_name = "seconds", default_value_t = 60.0)]
    replicate_repair_every: f64,
    /// No background repair at all (fetches still catch up).
    #[arg(long, hide = true)]
    replicate_no_repair: bool,
}

/// The replication the flags ask for, if any.
pub fn replica(args: &ReplicationArgs, globals: &Globals) -> Result<Option<Arc<Replica>>, Fatal> {
    let Some(node) = &args.replicate_node else {
        return Ok(None);
    };
    let mut nodes = Vec::new();
    for peer in &args.replicate_peer {
        let (name, url) = peer.split_once('=').ok_or_else(|| {
            Fatal::new(format!("--replicate-peer '{peer}': expected <name>=<url>"))
        })?;
        nodes.push((name.to_owned(), url.to_owned()));
    }
    let secret_file = args
        .replicate_secret
        .as_ref()
        .map(|path| globals.cwd().join(path))
        .ok_or_else(|| Fatal::new("--replicate-node needs --replicate-secret <file>"))?;
    let secret = read_secret(globals, &secret_file)?;
    let seconds = |value: f64, flag: &str| {
        if value.is_finite() && value >= 0.0 {
            Ok(Duration::from_secs_f64(value))
        } else {
            Err(Fatal::new(format!(
                "--{flag} {value}: give a number of seconds"
            )))
        }
    };
    let mut peers = Peers::new(node.clone(), nodes, args.replicate_copies, secret);
    peers.timeout = seconds(args.replicate_timeout, "replicate-timeout")?;
    let every = seconds(args.replicate_repair_every, "replicate-repair-every")?;
    peers.repair_every = (!every.is_zero()).then_some(every);
    peers.check().map_err(Fatal::new)?;
    Ok(Some(Arc::new(Replica::new(peers))))
}

/// The replication a cluster file describes among `members` (the
/// cluster's nodes at startup): its `object_copies`, its
/// `peer_timeout_ms` and `repair_interval_s`, and the secret in its
/// `secret_file`, which a cluster of more than one node must name; none
/// for a cluster of one node.
#[cfg(feature = "cluster")]
pub fn from_cluster(
    config: &refstore_cluster::ClusterConfig,
    members: &std::collections::BTreeMap<String, String>,
    path: &Path,
    globals: &Globals,
) -> Result<Option<Arc<Replica>>, Fatal> {
    if members.len() == 1 {
        return Ok(None);
    }
    let secret = match &config.secret_file {
        Some(file) => read_secret(globals, file)?,
        None => {
            return Err(Fatal::new(format!(
                "cluster file '{}': name the nodes' shared secret with secret_file = \"<file>\" \
                 (the nodes copy pushes to each other with it)",
                path.display()
            )))
        }
    };
    let nodes = members
        .iter()
        .map(|(name, url)| (name.clone(), url.clone()))
        .collect();
    let mut peers = Peers::new(config.node.clone(), nodes, config.object_copies, secret);
    if let Some(timeout) = config.peer_timeout {
        peers.timeout = timeout;
    }
    if let Some(every) = config.repair_interval {
        peers.repair_every = Some(every);
    }
    peers.check().map_err(Fatal::new)?;
    Ok(Some(Arc::new(Replica::new(peers))))
}

/// The secret in `file`, its surrounding whitespace trimmed.
fn read_secret(globals: &Globals, file: &Path) -> Result<Vec<u8>, Fatal> {
    let secret = globals
        .vfs()
        .read(file)
        .map_err(|e| Fatal::new(format!("replication secret '{}': {e}", file.display())))?;
    Ok(secret.trim_ascii().to_vec())
}

/// Starts the background repair of a replicating server. The server is
/// not ready (`/healthz` answers `starting: catching up N repositories`)
/// until the first pass has caught every repository up from the peers:
/// a new node, or one whose disk was replaced, holds nothing yet, and a
/// load balancer should not send it clients meanwhile (it would serve
/// them correctly, fetching what a request needs from its peers first,
/// but slowly).
pub fn start_repair(
    args: &ReplicationArgs,
    options: &ServeOptions,
    globals: &Globals,
    shutdown: &Arc<AtomicBool>,
) -> Result<(), Fatal> {
    let Some(replica) = &options.replication else {
        return Ok(());
    };
    if args.replicate_no_repair {
        return Ok(());
    }
    refstore_replica::repair::spawn(
        replica.clone(),
        globals.vfs().clone(),
        options.root.clone(),
        options.repository_overrides(),
        shutdown.clone(),
        readiness(
            options.health.clone(),
            refstore_replica::repair::repositories(globals.vfs().as_ref(), &options.root).len(),
        ),
    )
    .map(drop)
    .map_err(|e| Fatal::new(format!("cannot start the repair: {e}")))
}

/// What the repair's progress makes of the server's health: starting,
/// with the count of `repositories` and how many are done, until the
/// first pass is over; ready from then on.
fn readiness(
    health: refstore_server::health::Health,
    repositories: usize,
) -> refstore_replica::repair::Progress {
    health.set_starting(format!("catching up {repositories} repositories"));
    let started = std::time::Instant::now();
    let mut ready = false;
    Box::new(move |done, total| {
        if ready {
            return;
        }
        if done < total {
            health.set_starting(format!("catching up {total} repositories ({done} done)"));
            return;
        }
        ready = true;
        health.set_ready();
        tracing::info!(
            repositories = total,
            seconds = started.elapsed().as_secs_f64(),
            "caught up from the other nodes; ready"
        );
    })
}
