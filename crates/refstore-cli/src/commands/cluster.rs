//! `refstore cluster`: what a cluster of `refstore serve --cluster` nodes
//! needs besides serving: reading the cluster file, naming repositories as
//! the nodes name them, and seeding etcd with a repository's existing refs.

use crate::context::{Fatal, Globals};
use refstore_cluster::{Cluster, ClusterConfig};
use refstore_fs::Vfs;
use refstore_protocol::repository::Repository;
use refstore_refs::backend::Backend;
use refstore_server::ref_source::RefSource;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Arguments of `cluster`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    command: ClusterCommand,
}

/// The subcommands of `cluster`.
#[derive(Debug, clap::Subcommand)]
enum ClusterCommand {
    /// Copy a repository's refs into the cluster's etcd, once, before the
    /// nodes serve it (they serve refs from etcd only).
    Import(ImportArgs),
}

/// Arguments of `cluster import`.
#[derive(Debug, clap::Args)]
struct ImportArgs {
    /// The cluster file (as given to `serve --cluster`).
    #[arg(long, value_name = "file")]
    cluster: PathBuf,
    /// The name the nodes serve the repository under: its path below
    /// their --root (default: the repository directory's name).
    #[arg(long, value_name = "name")]
    name: Option<String>,
    /// Replace the refs etcd holds for the repository already.
    #[arg(long)]
    force: bool,
    /// The repository.
    repository: PathBuf,
}

/// Runs `cluster`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    match args.command {
        ClusterCommand::Import(args) => import(args, globals),
    }
}

fn import(args: ImportArgs, globals: &Globals) -> Result<u8, Fatal> {
    let config = read_config(globals.vfs().as_ref(), &globals.cwd().join(&args.cluster))?;
    let path = globals.cwd().join(&args.repository);
    let repo =
        refstore_repo::Repository::open(globals.vfs().clone(), &path, globals.config_overrides())
            .and_then(Repository::serve)
            .map_err(Fatal::new)?;
    let name = match args.name {
        Some(name) => name,
        None => {
            let dir = &repo.location.common_dir;
            repository_name(dir.parent().unwrap_or(dir), dir).ok_or_else(|| {
                Fatal::new(format!(
                    "cannot name '{}' for the cluster; give --name",
                    dir.display()
                ))
            })?
        }
    };
    let cluster = Cluster::connect(config).map_err(Fatal::new)?;
    let target = cluster.refs(&name, repo.object_format());
    target.set_peeler(repo.peeler());
    let copied = refstore_cluster::import::import(&target, repo.refs.as_ref(), &name, args.force)
        .map_err(Fatal::new)?;
    eprintln!("imported {copied} refs of '{name}' into the cluster");
    Ok(0)
}

/// Reads and checks the cluster file at `path`.
pub fn read_config(vfs: &dyn Vfs, path: &Path) -> Result<ClusterConfig, Fatal> {
    let bytes = vfs.read(path).map_err(Fatal::new)?;
    let text = String::from_utf8(bytes)
        .map_err(|_| Fatal::new(format!("cluster file '{}' is not UTF-8", path.display())))?;
    ClusterConfig::parse(&text, path).map_err(Fatal::new)
}

/// The name of the repository whose common directory is `dir` below the
/// served root `root`: its path below the root, without a final `.git`
/// of a repository with a work tree. `None` outside the root.
pub fn repository_name(root: &Path, dir: &Path) -> Option<String> {
    let below = dir.strip_prefix(root).ok()?;
    let below = if below.file_name().is_some_and(|n| n == ".git") {
        below.parent()?
    } else {
        below
    };
    let name = below.to_str()?;
    (!name.is_empty()).then(|| name.to_owned())
}

/// The refs of served repositories, from the cluster's etcd, under the
/// names the server gives them (their resolved path below the root).
#[derive(Debug)]
pub struct ClusterRefs {
    cluster: Arc<Cluster>,
}

impl ClusterRefs {
    /// The refs of served repositories, from `cluster`.
    pub fn new(cluster: Arc<Cluster>) -> ClusterRefs {
        ClusterRefs { cluster }
    }
}

impl RefSource for ClusterRefs {
    fn refs(&self, repo: &Repository, name: &str) -> Arc<dyn Backend> {
        let refs = self.cluster.refs(name, repo.object_format());
        refs.set_peeler(repo.peeler());
        refs
    }
}
