//! `refstore cluster node add|remove|list`: the cluster's membership
//! ([`refstore_cluster::membership`]), which every node follows within a
//! few seconds, without a restart.

use crate::context::Fatal;
use refstore_cluster::membership::Members;
use refstore_cluster::Cluster;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Joins the cluster a cluster file describes (`refstore cluster`'s).
pub type Connect<'a> = &'a dyn Fn(&Path) -> Result<Arc<Cluster>, Fatal>;

/// Arguments of `cluster node`.
#[derive(Debug, clap::Args)]
pub struct NodeArgs {
    #[command(subcommand)]
    command: NodeCommand,
}

/// The subcommands of `cluster node`.
#[derive(Debug, clap::Subcommand)]
enum NodeCommand {
    /// Add a node: the other nodes send it pushes' packs and catch up
    /// from it; start it with a cluster file naming it.
    Add(AddArgs),
    /// Remove a node: no node sends it packs or reads from it any more,
    /// and it refuses every request. Refused if fewer nodes than
    /// object_copies would be left.
    Remove(RemoveArgs),
    /// List the nodes: name and URL, tab-separated, one per line.
    List(ClusterFile),
}

/// The cluster file, which every subcommand takes.
#[derive(Debug, clap::Args)]
struct ClusterFile {
    /// The cluster file (as given to `serve --cluster`).
    #[arg(long, value_name = "file")]
    cluster: PathBuf,
}

/// Arguments of `cluster node add`.
#[derive(Debug, clap::Args)]
struct AddArgs {
    #[command(flatten)]
    cluster: ClusterFile,
    /// The node's name (its cluster file's `node`).
    name: String,
    /// The URL of its --listen address (`http://host:port`).
    url: String,
}

/// Arguments of `cluster node remove`.
#[derive(Debug, clap::Args)]
struct RemoveArgs {
    #[command(flatten)]
    cluster: ClusterFile,
    /// The node's name.
    name: String,
}

/// Runs `cluster node`.
pub fn run(args: NodeArgs, connect: Connect) -> Result<u8, Fatal> {
    match args.command {
        NodeCommand::Add(args) => {
            let cluster = connect(&args.cluster.cluster)?;
            let members = cluster
                .add_member(&args.name, &args.url)
                .map_err(Fatal::new)?;
            eprintln!(
                "added node '{}' to the cluster ({} nodes)",
                args.name,
                members.nodes.len()
            );
            Ok(0)
        }
        NodeCommand::Remove(args) => {
            let cluster = connect(&args.cluster.cluster)?;
            let members = cluster.remove_member(&args.name).map_err(Fatal::new)?;
            eprintln!(
                "removed node '{}' from the cluster ({} nodes)",
                args.name,
                members.nodes.len()
            );
            Ok(0)
        }
        NodeCommand::List(args) => {
            let cluster = connect(&args.cluster)?;
            let members = cluster.members().map_err(Fatal::new)?;
            print_members(&members)
        }
    }
}

fn print_members(members: &Members) -> Result<u8, Fatal> {
    let mut out = String::new();
    for (name, url) in &members.nodes {
        out.push_str(&format!("{name}\t{url}\n"));
    }
    std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())
        .map_err(|e| Fatal::new(format!("cannot write the list: {e}")))?;
    Ok(0)
}
