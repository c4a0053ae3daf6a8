//! `refstore cluster node add|remove|list`: the cluster's membership
//! ([`refstore_cluster::membership`]), which every node follows within a
//! few seconds, without a restart.

use super::cluster::{connect, ClusterArgs};
use crate::context::{Fatal, Globals};
use refstore_cluster::membership::Members;

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
    List(ClusterArgs),
}

/// Arguments of `cluster node add`.
#[derive(Debug, clap::Args)]
struct AddArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The node's name (its cluster file's `node`).
    name: String,
    /// The URL of its --listen address (`http://host:port`).
    url: String,
}

/// Arguments of `cluster node remove`.
#[derive(Debug, clap::Args)]
struct RemoveArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The node's name.
    name: String,
}

/// Runs `cluster node`.
pub fn run(args: NodeArgs, globals: &Globals) -> Result<u8, Fatal> {
    match args.command {
        NodeCommand::Add(args) => {
            let cluster = connect(&args.cluster, globals)?;
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
            let cluster = connect(&args.cluster, globals)?;
            let members = cluster.remove_member(&args.name).map_err(Fatal::new)?;
            eprintln!(
                "removed node '{}' from the cluster ({} nodes)",
                args.name,
                members.nodes.len()
            );
            Ok(0)
        }
        NodeCommand::List(args) => {
            let cluster = connect(&args, globals)?;
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
