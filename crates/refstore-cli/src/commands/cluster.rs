//! `refstore cluster`: what a cluster of `refstore serve --cluster` nodes
//! needs besides serving: reading the cluster file, naming repositories as
//! the nodes name them, creating, deleting, renaming and listing the
//! cluster's repositories (its nodes: [`super::cluster_nodes`]), and seeding etcd with a repository's existing
//! refs.

use crate::context::{Fatal, Globals};
use refstore_cluster::lifecycle::NewRepository;
use refstore_cluster::records::RefFormat;
use refstore_cluster::{Cluster, ClusterConfig};
use refstore_fs::config::RefStorage;
use refstore_fs::Vfs;
use refstore_protocol::repository::Repository;
use refstore_refs::backend::Backend;
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, RefName};
use refstore_server::ref_source::RefSource;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

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
    /// Create an empty repository on every node of the cluster.
    Create(CreateArgs),
    /// Delete a repository from every node of the cluster.
    Delete(NameArgs),
    /// Rename a repository on every node of the cluster.
    Rename(RenameArgs),
    /// List the cluster's repositories: name, object format, ref format
    /// and HEAD, tab-separated, one per line.
    List(ClusterArgs),
    /// Add, remove or list the cluster's nodes.
    Node(super::cluster_nodes::NodeArgs),
}

/// The cluster file, which every subcommand takes.
#[derive(Debug, clap::Args)]
struct ClusterArgs {
    /// The cluster file (as given to `serve --cluster`).
    #[arg(long, value_name = "file")]
    cluster: PathBuf,
}

/// Arguments of `cluster create`.
#[derive(Debug, clap::Args)]
struct CreateArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The object format: `sha1` or `sha256`.
    #[arg(long, value_name = "format", default_value = "sha1")]
    object_format: String,
    /// The ref storage format of the nodes' copies: `files` or `reftable`.
    #[arg(long, value_name = "format", default_value = "files")]
    ref_format: String,
    /// The branch HEAD points at.
    #[arg(short = 'b', long, value_name = "name", default_value = "master")]
    initial_branch: String,
    /// The repository's name: its path below the nodes' --root, ending in
    /// `.git` (`team/project.git`).
    name: String,
}

/// Arguments naming one repository.
#[derive(Debug, clap::Args)]
struct NameArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The repository's name.
    name: String,
}

/// Arguments of `cluster rename`.
#[derive(Debug, clap::Args)]
struct RenameArgs {
    #[command(flatten)]
    cluster: ClusterArgs,
    /// The repository's name.
    from: String,
    /// Its new name, which no repository of the cluster may have.
    to: String,
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
    #[arg(long, conflicts_with = "record_only")]
    force: bool,
    /// Copy no refs: only record that the cluster holds the repository,
    /// whose refs etcd holds already (one imported before the cluster
    /// kept records).
    #[arg(long)]
    record_only: bool,
    /// The repository.
    repository: PathBuf,
}

/// Runs `cluster`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    match args.command {
        ClusterCommand::Import(args) => import(args, globals),
        ClusterCommand::Create(args) => create(args, globals),
        ClusterCommand::Delete(args) => {
            let cluster = connect(&args.cluster, globals)?;
            cluster.delete(&args.name).map_err(Fatal::new)?;
            eprintln!("deleted '{}' from the cluster", args.name);
            Ok(0)
        }
        ClusterCommand::Rename(args) => {
            let cluster = connect(&args.cluster, globals)?;
            cluster.rename(&args.from, &args.to).map_err(Fatal::new)?;
            eprintln!("renamed '{}' to '{}' in the cluster", args.from, args.to);
            Ok(0)
        }
        ClusterCommand::Node(args) => super::cluster_nodes::run(args, &|file| {
            connect(
                &ClusterArgs {
                    cluster: file.to_owned(),
                },
                globals,
            )
        }),
        ClusterCommand::List(args) => {
            let cluster = connect(&args, globals)?;
            let mut out = String::new();
            for (name, record) in cluster.list().map_err(Fatal::new)? {
                out.push_str(&format!(
                    "{name}\t{}\t{}\t{}\n",
                    record.object_format.name(),
                    record.ref_format.name(),
                    record.head
                ));
            }
            std::io::Write::write_all(&mut std::io::stdout(), out.as_bytes())
                .map_err(|e| Fatal::new(format!("cannot write the list: {e}")))?;
            Ok(0)
        }
    }
}

/// Joins the cluster the file of `args` describes.
fn connect(args: &ClusterArgs, globals: &Globals) -> Result<Arc<Cluster>, Fatal> {
    let config = read_config(globals.vfs().as_ref(), &globals.cwd().join(&args.cluster))?;
    Cluster::connect(config).map_err(Fatal::new)
}

fn create(args: CreateArgs, globals: &Globals) -> Result<u8, Fatal> {
    let object_format = ObjectFormat::from_name(&args.object_format)
        .ok_or_else(|| Fatal::new(format!("unknown hash algorithm '{}'", args.object_format)))?;
    let ref_format = RefFormat::from_name(&args.ref_format)
        .ok_or_else(|| Fatal::new(format!("unknown ref storage format '{}'", args.ref_format)))?;
    let new = NewRepository {
        object_format,
        ref_format,
        initial_branch: args.initial_branch,
    };
    let cluster = connect(&args.cluster, globals)?;
    cluster.create(&args.name, &new).map_err(Fatal::new)?;
    eprintln!("created '{}' in the cluster", args.name);
    Ok(0)
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
    let head = match repo.refs.read(&RefName::new("HEAD").expect("valid")) {
        Ok(Some(head)) => match head.target {
            Target::Symbolic(to) => String::from_utf8_lossy(to.as_bytes()).into_owned(),
            Target::Object(_) => String::new(),
        },
        Ok(None) => String::new(),
        Err(e) => return Err(Fatal::new(e)),
    };
    let ref_format = match repo.settings.ref_storage {
        RefStorage::Files => RefFormat::Files,
        RefStorage::Reftable => RefFormat::Reftable,
    };
    let record = cluster.new_record(repo.object_format(), ref_format, head);
    if args.record_only {
        refstore_cluster::import::record_only(&target, &name, record).map_err(Fatal::new)?;
        eprintln!("recorded '{name}' in the cluster");
        return Ok(0);
    }
    let copied =
        refstore_cluster::import::import(&target, repo.refs.as_ref(), &name, record, args.force)
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
    fn refs(&self, repo: &Repository, name: &str, request: Option<Instant>) -> Arc<dyn Backend> {
        let format = repo.object_format();
        let refs = match request {
            Some(since) => self.cluster.request_refs(name, format, since),
            None => self.cluster.refs(name, format),
        };
        refs.set_peeler(repo.peeler());
        // The copy's incarnation: its pushes commit only into that one.
        if let Some(id) = super::cluster_copy::incarnation(repo.vfs.as_ref(), repo.common_dir()) {
            refs.pin_incarnation(id);
        }
        refs
    }
}

impl refstore_replica::ClusterTips for ClusterRefs {
    /// Etcd's refs of the repository, listed at one revision, and `HEAD`:
    /// what catching up makes complete on this node.
    fn tips(&self, repo: &Repository, name: &str) -> Result<Vec<refstore_refs::ObjectId>, String> {
        let refs = RefSource::refs(self, repo, name, None);
        let listing = refs.list(b"").map_err(|e| e.to_string())?;
        let mut tips: Vec<refstore_refs::ObjectId> = listing
            .refs
            .iter()
            .filter_map(|r| match &r.target {
                Target::Object(id) => Some(*id),
                _ => None,
            })
            .collect();
        let head = RefName::new("HEAD").map_err(|e| e.to_string())?;
        let resolved = refs.resolve(&head).map_err(|e| e.to_string())?;
        tips.extend(resolved.and_then(|r| r.id));
        Ok(tips)
    }

    fn incarnation(&self, repo: &Repository) -> Option<String> {
        super::cluster_copy::incarnation(repo.vfs.as_ref(), repo.common_dir())
    }
}
