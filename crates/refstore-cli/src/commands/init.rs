//! `refstore init`: an empty repository that git opens, in the files format.

use crate::context::{Fatal, Globals};
use refstore_fs::config::{Component, FsyncSettings, RefStorage};
use refstore_fs::discover::{absolute, is_git_directory};
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::{commit_all, LockFile};
use refstore_refs::name::{check, CheckOptions};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Arguments of `init`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Create a bare repository (no work tree).
    #[arg(long)]
    bare: bool,
    /// The ref storage format: `files` or `reftable`.
    #[arg(long = "ref-format", value_name = "format")]
    ref_format: Option<String>,
    /// The object format: `sha1` or `sha256`.
    #[arg(long = "object-format", value_name = "format")]
    object_format: Option<String>,
    /// The name of the initial branch (default: init.defaultBranch, or master).
    #[arg(short = 'b', long = "initial-branch", value_name = "name")]
    initial_branch: Option<String>,
    /// Print nothing but errors and warnings.
    #[arg(short, long)]
    quiet: bool,
    /// The directory to create the repository in (default: the current one).
    directory: Option<PathBuf>,
}

const DESCRIPTION: &[u8] =
    b"Unnamed repository; edit this file 'description' to name the repository.\n";
const EXCLUDE: &[u8] = b"# Patterns listed here are ignored in this repository only,\n\
# in addition to .gitignore files (see gitignore(5)).\n";

/// Creates the repository, or reports that it exists already.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let config = globals.config_outside_repository()?;
    let ref_storage = match args.ref_format.as_deref() {
        None => RefStorage::Files,
        Some(name) => RefStorage::from_name(name)
            .ok_or_else(|| Fatal::new(format!("unknown ref storage format '{name}'")))?,
    };
    if ref_storage == RefStorage::Reftable {
        return Err(Fatal::new(
            "the reftable ref format is not supported by this build of refstore yet; use --ref-format=files",
        ));
    }
    let object_format = args.object_format.as_deref().unwrap_or("sha1");
    if !matches!(object_format, "sha1" | "sha256") {
        return Err(Fatal::new(format!(
            "unknown hash algorithm '{object_format}'"
        )));
    }
    let branch = args
        .initial_branch
        .clone()
        .or_else(|| config.string("init.defaultbranch"))
        .unwrap_or_else(|| "master".to_owned());
    if check(
        format!("refs/heads/{branch}").as_bytes(),
        CheckOptions::default(),
    )
    .is_err()
    {
        return Err(Fatal::new(format!(
            "invalid initial branch name: '{branch}'"
        )));
    }

    let vfs = globals.vfs();
    let top = absolute(
        globals.cwd(),
        args.directory.as_deref().unwrap_or(Path::new(".")),
    );
    let git_dir = if args.bare {
        top.clone()
    } else {
        top.join(".git")
    };
    let reinit = is_git_directory(vfs.as_ref(), &git_dir);
    let fsync = {
        let mut warnings = Vec::new();
        FsyncSettings::parse(
            config.string("core.fsync").as_deref(),
            config.string("core.fsyncmethod").as_deref(),
            &mut warnings,
        )
    };
    let mut batch = FlushBatch::new(
        vfs.clone(),
        fsync.method_for(Component::Reference),
        top.clone(),
    );
    let fail = |e: &dyn std::fmt::Display| Fatal::new(e.to_string());

    for dir in [
        "",
        "objects/info",
        "objects/pack",
        "refs/heads",
        "refs/tags",
        "info",
        "hooks",
    ] {
        batch
            .create_dir_all(&git_dir.join(dir))
            .map_err(|e| fail(&e))?;
    }
    if reinit {
        if args.initial_branch.is_some() {
            eprintln!("warning: re-init: ignored --initial-branch={branch}");
        }
    } else {
        let mut config_text = format!(
            "[core]\n\trepositoryformatversion = {}\n\tfilemode = true\n\tbare = {}\n",
            u8::from(object_format != "sha1"),
            args.bare
        );
        if !args.bare {
            config_text.push_str("\tlogallrefupdates = true\n");
        }
        if object_format != "sha1" {
            config_text.push_str(&format!("[extensions]\n\tobjectformat = {object_format}\n"));
        }
        let files: [(&str, Vec<u8>); 4] = [
            ("config", config_text.into_bytes()),
            ("HEAD", format!("ref: refs/heads/{branch}\n").into_bytes()),
            ("description", DESCRIPTION.to_vec()),
            ("info/exclude", EXCLUDE.to_vec()),
        ];
        let mut locks = Vec::new();
        for (name, content) in files {
            let path = git_dir.join(name);
            if vfs.exists(&path) {
                continue;
            }
            let mut lock = LockFile::acquire(vfs, &path, Duration::ZERO).map_err(|e| fail(&e))?;
            lock.write_all(&content).map_err(|e| fail(&e))?;
            locks.push(lock);
        }
        commit_all(locks, &mut batch).map_err(|e| fail(&e))?;
    }
    batch.flush_dirs().map_err(|e| fail(&e))?;

    if !args.quiet {
        let what = if reinit {
            "Reinitialized existing"
        } else {
            "Initialized empty"
        };
        println!("{what} Git repository in {}/", git_dir.display());
    }
    Ok(0)
}
