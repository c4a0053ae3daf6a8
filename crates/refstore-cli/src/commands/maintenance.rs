//! `refstore maintenance run [--auto] [--task=<task>...] [<repo>]`:
//! housekeeping of a repository (like `git maintenance run`), done by
//! `refstore_maint`.

use crate::context::{Fatal, Globals};
use refstore_maint::{Options, Repo, Task};
use refstore_repo::Repository;
use std::path::PathBuf;

/// Arguments of `maintenance`.
#[derive(Debug, clap::Args)]
pub struct Args {
    #[command(subcommand)]
    action: Action,
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
    /// The repository (default: the one refstore finds as git does).
    repo: Option<PathBuf>,
}

/// Runs `maintenance`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
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
    let repo = Repo::new(opened).map_err(Fatal::new)?;
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
