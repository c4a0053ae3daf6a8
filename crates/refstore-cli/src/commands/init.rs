//! `refstore init`: an empty repository that git opens, in the files or the
//! reftable format.
//!
//! A reftable repository is laid out as git 2.45+ lays it out: the refs live
//! in `reftable/` (HEAD included), while `HEAD` and `refs/heads` are stubs
//! that make older tools see a repository they cannot use rather than an
//! empty one.

use crate::context::{Fatal, Globals};
use refstore_fs::config::{Component, FsyncSettings, RefStorage};
use refstore_fs::discover::{absolute, is_git_directory};
use refstore_fs::flush::FlushBatch;
use refstore_fs::lock::{commit_all, LockFile};
use refstore_refs::name::{check, CheckOptions};
use refstore_refs::reftable::{ReftableBackend, ReftableOptions};
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, RefName};
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

/// What `refs/heads` holds in a reftable repository, where it is a file.
const REFS_HEADS_STUB: &[u8] = b"this repository uses the reftable format\n";

/// Writes the first table of a new reftable stack: HEAD pointing at the
/// initial branch, without a reflog entry.
fn point_head(
    vfs: &std::sync::Arc<dyn refstore_fs::Vfs>,
    git_dir: &Path,
    format: ObjectFormat,
    branch: &str,
    flush: refstore_fs::flush::FlushMethod,
) -> Result<(), Fatal> {
    let store = ReftableBackend::new(vfs.clone(), git_dir, format, ReftableOptions::new(format));
    let target = RefName::new(format!("refs/heads/{branch}")).map_err(Fatal::new)?;
    let tx = Transaction {
        updates: vec![Update {
            name: RefName::new("HEAD").expect("valid"),
            change: Change::Set(Target::Symbolic(target)),
            expected: Expected::Any,
            no_deref: true,
        }],
        ..Transaction::default()
    };
    let options = refstore_refs::files::transaction::CommitOptions {
        flush,
        lock_timeout: Duration::from_millis(100),
        packed_refs_timeout: Duration::ZERO,
        log_updates: refstore_fs::config::LogRefUpdates::Never,
        signature: String::new(),
    };
    store.commit(&tx, &options).map_err(Fatal::new)?;
    Ok(())
}

/// What [`create`] makes.
pub struct NewRepository<'a> {
    /// No work tree: the repository is the directory itself.
    pub bare: bool,
    /// `sha1` or `sha256`.
    pub object_format: &'a str,
    /// Its ref storage.
    pub ref_storage: RefStorage,
    /// The branch HEAD points at (checked by the caller).
    pub branch: &'a str,
    /// How its files are flushed.
    pub fsync: FsyncSettings,
    /// How a batch flush point flushes.
    pub mechanism: refstore_fs::flush::BatchMechanism,
}

/// Creates the repository `new` describes at `top` (its git directory
/// is `top` when bare, `top/.git` otherwise), or completes an existing
/// one there as git's re-init does: its git directory, and true for a
/// re-init.
pub fn create(
    vfs: &std::sync::Arc<dyn refstore_fs::Vfs>,
    top: &Path,
    new: &NewRepository<'_>,
) -> Result<(PathBuf, bool), Fatal> {
    let (object_format, ref_storage, branch, fsync) =
        (new.object_format, new.ref_storage, new.branch, &new.fsync);
    let git_dir = if new.bare {
        top.to_owned()
    } else {
        top.join(".git")
    };
    let reinit = is_git_directory(vfs.as_ref(), &git_dir);
    let mut batch = FlushBatch::new(
        vfs.clone(),
        fsync.method_for(Component::Reference),
        top.to_owned(),
    )
    .with_mechanism(new.mechanism);
    let fail = |e: &dyn std::fmt::Display| Fatal::new(e.to_string());

    let reftable = ref_storage == RefStorage::Reftable;
    let dirs: &[&str] = if reftable {
        &[
            "",
            "objects/info",
            "objects/pack",
            "refs",
            "reftable",
            "info",
            "hooks",
        ]
    } else {
        &[
            "",
            "objects/info",
            "objects/pack",
            "refs/heads",
            "refs/tags",
            "info",
            "hooks",
        ]
    };
    for dir in dirs {
        batch
            .create_dir_all(&git_dir.join(dir))
            .map_err(|e| fail(&e))?;
    }
    if !reinit {
        let mut config_text = format!(
            "[core]\n\trepositoryformatversion = {}\n\tfilemode = true\n\tbare = {}\n",
            u8::from(object_format != "sha1" || reftable),
            new.bare
        );
        if !new.bare {
            config_text.push_str("\tlogallrefupdates = true\n");
        }
        if object_format != "sha1" || reftable {
            config_text.push_str("[extensions]\n");
        }
        if object_format != "sha1" {
            config_text.push_str(&format!("\tobjectformat = {object_format}\n"));
        }
        if reftable {
            config_text.push_str("\trefstorage = reftable\n");
        }
        let head = match reftable {
            true => "ref: refs/heads/.invalid\n".to_owned(),
            false => format!("ref: refs/heads/{branch}\n"),
        };
        let mut files: Vec<(&str, Vec<u8>)> = vec![
            ("config", config_text.into_bytes()),
            ("HEAD", head.into_bytes()),
            ("description", DESCRIPTION.to_vec()),
            ("info/exclude", EXCLUDE.to_vec()),
        ];
        if reftable {
            files.push(("refs/heads", REFS_HEADS_STUB.to_vec()));
        }
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
    if reftable && !reinit {
        let format = ObjectFormat::from_name(object_format).expect("checked above");
        point_head(
            vfs,
            &git_dir,
            format,
            branch,
            fsync.method_for(Component::Reference),
        )?;
    }

    Ok((git_dir, reinit))
}

/// Creates the repository, or reports that it exists already.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let config = globals.config_outside_repository()?;
    let ref_storage = match args.ref_format.as_deref() {
        None => RefStorage::Files,
        Some(name) => RefStorage::from_name(name)
            .ok_or_else(|| Fatal::new(format!("unknown ref storage format '{name}'")))?,
    };
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
    let fsync = {
        let mut warnings = Vec::new();
        FsyncSettings::parse(
            config.string("core.fsync").as_deref(),
            config.string("core.fsyncmethod").as_deref(),
            &mut warnings,
        )
    };
    let mechanism = config.batch_flush().map_err(Fatal::new)?;
    let new = NewRepository {
        bare: args.bare,
        object_format,
        ref_storage,
        branch: &branch,
        fsync,
        mechanism,
    };
    let (git_dir, reinit) = create(vfs, &top, &new)?;
    if reinit && args.initial_branch.is_some() {
        eprintln!("warning: re-init: ignored --initial-branch={branch}");
    }

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
