//! `refstore maintenance run [--auto] [--task=<task>...] [--cluster
//! <file> [--name <name>]] [<repo>]`: housekeeping of a repository (like
//! `git maintenance run`), done by `refstore_maint`.
//!
//! A cluster node's copy of a repository (it carries the cluster's
//! incarnation marker) is maintained only with `--cluster`, with etcd's
//! refs ([`refstore_maint::Repo::with_cluster_refs`]): its own ref store
//! is not the truth, and judging reachability by it could lose objects
//! acknowledged pushes need.

use super::cluster_copy::incarnation;
use crate::context::{Fatal, Globals};
use refstore_maint::{Options, Repo, Task};
use refstore_repo::Repository;
use std::path::{Path, PathBuf};

/// Arguments of `maintenance`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
}

impl Args {
    /// The command works on a cluster node's copy (`--cluster`).
    pub fn is_for_cluster(&self) -> bool {
        match &self.action {
            Action::Run(args) => args.cluster.is_some(),
        }
    }
}

#[derive(Debug, clap::Subcommand)]
enum Action {
    /// Run housekeeping tasks now.
    Run(RunArgs),
}

#[derive(Debug, clap::Args)]
struct RunArgs {
    /// Run each task only if it has enough to do (gc.auto, gc.autoPackLimit,
    /// maintenance.<task>.auto).
    #[arg(long)]
    auto: bool,
    /// Run this task (cleanup, pack-refs, loose-objects, incremental-repack,
    /// commit-graph); may be given several times. Default: every task
    /// maintenance.<task>.enabled does not turn off.
    #[arg(long = "task", value_name = "task", require_equals = true, action = clap::ArgAction::Append)]
    tasks: Vec<String>,
    /// Print nothing but warnings and errors.
    #[arg(long, short)]
    quiet: bool,
    /// The repository is a cluster node's copy: maintain it with the refs
    /// the cluster this file describes keeps in etcd.
    #[arg(long, value_name = "file")]
    cluster: Option<PathBuf>,
    /// With --cluster: the repository's name in the cluster, its path below
    /// the nodes' --root (default: the repository directory's name).
    #[arg(long, value_name = "name", requires = "cluster")]
    name: Option<String>,
    /// The repository (default: the one refstore finds as git does).
    repo: Option<PathBuf>,
}

/// Runs `maintenance`.
/// How a cluster node's copy is opened with the cluster's refs: in the
/// server's executable, which holds the etcd client.
pub type OpenClusterCopy = fn(Repository, &Path, Option<&str>, &Globals) -> Result<Repo, Fatal>;

pub fn run(args: Args, globals: &Globals, cluster_repo: OpenClusterCopy) -> Result<u8, Fatal> {
    let Action::Run(args) = args.action;
    let mut tasks = Vec::new();
    for name in &args.tasks {
        let task = Task::from_name(name)
            .ok_or_else(|| Fatal::new(format!("'{name}' is not a valid task")))?;
        tasks.push(task);
    }
    let opened = match &args.repo {
        Some(path) => Repository::open(
            globals.vfs().clone(),
            &globals.cwd().join(path),
            globals.config_overrides(),
        )
        .map_err(Fatal::new)?,
        None => globals.open_repo()?,
    };
    let repo = match &args.cluster {
        Some(file) => {
            let file = globals.cwd().join(file);
            cluster_repo(opened, &file, args.name.as_deref(), globals)?
        }
        None if is_cluster_copy(&opened) => {
            let dir = opened.location.common_dir.display();
            return Err(Fatal::new(format!(
                "'{dir}' is a cluster node's copy, whose refs are in etcd; \
                 run maintenance with --cluster <file>"
            )));
        }
        None => Repo::new(opened).map_err(Fatal::new)?,
    };
    let options = Options {
        auto: args.auto,
        tasks,
    };
    match refstore_maint::run(&repo, &options).map_err(Fatal::new)? {
        None => Ok(0),
        Some(reports) => {
            if !args.quiet {
                for report in reports.iter().filter(|r| r.ran) {
                    eprintln!("{}: {}", report.task.name(), report.summary);
                }
            }
            Ok(0)
        }
    }
}

/// True if `repo` carries a cluster's incarnation marker.
fn is_cluster_copy(repo: &Repository) -> bool {
    incarnation(repo.vfs.as_ref(), &repo.location.common_dir).is_some()
}

/// `--cluster` where the etcd client is not linked in (the `refstore`
/// executable hands `maintenance --cluster` to `refstore-server`).
pub fn cluster_in_server(
    _: Repository,
    _: &Path,
    _: Option<&str>,
    _: &Globals,
) -> Result<Repo, Fatal> {
    Err(Fatal::new(
        "maintenance --cluster runs in the server's executable, refstore-server",
    ))
}

/// `repo`, a copy of the cluster's repository `name` (by default its
/// directory's name), with the cluster's refs of it; refused unless the
/// cluster's record of that name is of the incarnation the copy carries.
#[cfg(feature = "cluster")]
pub fn cluster_repo(
    repo: Repository,
    file: &Path,
    name: Option<&str>,
    globals: &Globals,
) -> Result<Repo, Fatal> {
    let config = super::cluster::read_config(globals.vfs().as_ref(), file)?;
    let dir = repo.location.common_dir.clone();
    let unnamed = || {
        Fatal::new(format!(
            "cannot name '{}' for the cluster; give --name",
            dir.display()
        ))
    };
    let name = match name {
        Some(name) => name.to_owned(),
        None => super::cluster::repository_name(dir.parent().unwrap_or(&dir), &dir)
            .ok_or_else(unnamed)?,
    };
    let carried = incarnation(repo.vfs.as_ref(), &dir);
    let cluster = refstore_cluster::Cluster::connect(config).map_err(Fatal::new)?;
    let record = cluster.current_record(&name).map_err(Fatal::new)?;
    match (&record, &carried) {
        (Some(record), Some(id)) if record.is_live() && record.id == *id => {}
        (Some(record), None) if record.is_live() => {}
        _ => {
            let dir = dir.display();
            return Err(Fatal::new(format!(
                "'{dir}' is not this node's copy of the cluster's repository '{name}'; \
                 give its --name"
            )));
        }
    }
    let refs = cluster.refs(&name, repo.object_format());
    refstore_refs::backend::Backend::set_peeler(refs.as_ref(), repo.peeler());
    Repo::with_cluster_refs(repo, refs).map_err(Fatal::new)
}

/// `--cluster` in a build without the `cluster` feature.
#[cfg(not(feature = "cluster"))]
pub fn cluster_repo(_: Repository, _: &Path, _: Option<&str>, _: &Globals) -> Result<Repo, Fatal> {
    Err(super::cluster::missing())
}
