//! `refstore rev-parse`: where the repository is and what it is, with git's
//! repository-location options.

use crate::context::{Fatal, Globals};

/// Arguments of `rev-parse` (the options that describe the repository).
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print the git directory (as `--git-dir`/`GIT_DIR` gave it, or relative
    /// to the current directory when it is `.git` or `.` there, as git does).
    #[arg(long)]
    git_dir: bool,
    /// Print the absolute git directory.
    #[arg(long)]
    absolute_git_dir: bool,
    /// Print the common directory shared by worktrees.
    #[arg(long)]
    git_common_dir: bool,
    /// Print the top of the work tree.
    #[arg(long)]
    show_toplevel: bool,
    /// Print `true` or `false`.
    #[arg(long)]
    is_bare_repository: bool,
    /// Print the object format (`sha1` or `sha256`).
    #[arg(long)]
    show_object_format: bool,
    /// Print the ref storage format (`files` or `reftable`).
    #[arg(long)]
    show_ref_format: bool,
}

/// Prints the requested facts, one per line, in a fixed order.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let git_dir = &repo.location.git_dir;
    let cwd = globals.cwd();
    if args.git_dir {
        if let Some(given) = globals.explicit_git_dir() {
            println!("{}", given.display());
        } else if git_dir == cwd {
            println!(".");
        } else if *git_dir == cwd.join(".git") {
            println!(".git");
        } else {
            println!("{}", git_dir.display());
        }
    }
    if args.absolute_git_dir {
        println!("{}", git_dir.display());
    }
    if args.git_common_dir {
        let common = &repo.location.common_dir;
        match common.strip_prefix(cwd) {
            Ok(rel) if !rel.as_os_str().is_empty() => println!("{}", rel.display()),
            Ok(_) => println!("."),
            Err(_) => println!("{}", common.display()),
        }
    }
    if args.show_toplevel {
        match &repo.location.work_tree {
            Some(top) if !repo.is_bare() => println!("{}", top.display()),
            _ => return Err(Fatal::new("this operation must be run in a work tree")),
        }
    }
    if args.is_bare_repository {
        println!("{}", repo.is_bare());
    }
    if args.show_object_format {
        println!("{}", repo.settings.object_format);
    }
    if args.show_ref_format {
        println!("{}", repo.settings.ref_storage.name());
    }
    Ok(0)
}
