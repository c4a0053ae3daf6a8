//! `refstore update-ref`: change refs safely, one or many in a transaction.

mod stdin;

use crate::context::{Fatal, Globals, Repo};
use refstore_fs::config::{Component, RefStorage};
use refstore_refs::files::transaction::{CommitError, CommitOptions};
use refstore_refs::files::FilesBackend;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::{ObjectFormat, ObjectId, RefName};
use std::io::Read;

/// Arguments of `update-ref`.
#[derive(Debug, clap::Args)]
#[command(
    override_usage = "refstore update-ref [<options>] -d <refname> [<old-val>]\n       refstore update-ref [<options>]    <refname> <new-val> [<old-val>]\n       refstore update-ref [<options>] --stdin [-z]"
)]
pub struct Args {
    /// The reflog message.
    #[arg(short = 'm', value_name = "reason")]
    message: Option<String>,
    /// Delete the reference.
    #[arg(short = 'd')]
    delete: bool,
    /// Update <refname> itself, not the ref it points to.
    #[arg(long)]
    no_deref: bool,
    /// Standard input has NUL-terminated arguments.
    #[arg(short = 'z')]
    nul: bool,
    /// Read updates from standard input.
    #[arg(long)]
    stdin: bool,
    /// Create a reflog.
    #[arg(long)]
    create_reflog: bool,
    /// Apply the updates that can be applied and report the others.
    #[arg(long)]
    batch_updates: bool,
    /// <refname> [<new-val>] [<old-val>]
    #[arg(value_name = "args")]
    args: Vec<String>,
}

/// Parses an object id argument: a full hex id, or a ref name resolved the
/// way git's `get_oid` resolves names (`HEAD`, `main`, `refs/heads/main`).
pub(crate) fn parse_value(backend: &FilesBackend, arg: &str) -> Option<ObjectId> {
    let format = backend.object_format();
    if arg.len() == format.hex_len() {
        if let Ok(id) = ObjectId::from_hex_in(arg.to_ascii_lowercase().as_bytes(), format) {
            return Some(id);
        }
    }
    let candidates = [
        arg.to_owned(),
        format!("refs/{arg}"),
        format!("refs/tags/{arg}"),
        format!("refs/heads/{arg}"),
        format!("refs/remotes/{arg}"),
        format!("refs/remotes/{arg}/HEAD"),
    ];
    candidates
        .iter()
        .filter_map(|c| RefName::new(c).ok())
        .find_map(|name| backend.resolve(&name).ok().flatten().and_then(|r| r.id))
}

/// The files backend of an opened repository.
pub(crate) fn files_backend(repo: &Repo, globals: &Globals) -> Result<FilesBackend, Fatal> {
    if repo.settings.ref_storage == RefStorage::Reftable {
        return Err(Fatal::new(
            "this repository uses the reftable ref format, which this build of refstore cannot write yet",
        ));
    }
    let format = ObjectFormat::from_name(repo.settings.object_format).expect("validated by config");
    Ok(FilesBackend::new(
        globals.vfs().clone(),
        repo.location.git_dir.clone(),
        repo.location.common_dir.clone(),
        format,
    ))
}

pub(crate) fn commit_options(repo: &Repo) -> Result<CommitOptions, Fatal> {
    let committer = repo.config.committer().map_err(Fatal::new)?;
    Ok(CommitOptions {
        flush: repo.settings.fsync.method_for(Component::Reference),
        lock_timeout: repo.settings.files_ref_lock_timeout,
        packed_refs_timeout: repo.settings.packed_refs_timeout,
        log_updates: repo.settings.log_ref_updates(repo.is_bare()),
        signature: committer.signature(),
    })
}

fn usage() -> Result<u8, Fatal> {
    use clap::CommandFactory;
    #[derive(clap::Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: Args,
    }
    let help = Wrapper::command().name("update-ref").render_usage();
    eprintln!("{help}");
    Ok(129)
}

/// Runs `update-ref`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let backend = files_backend(&repo, globals)?;
    let options = commit_options(&repo)?;
    let mut tx = Transaction {
        message: args.message.clone(),
        create_reflog: args.create_reflog,
        batch: args.batch_updates,
        ..Transaction::default()
    };
    if args.stdin {
        if !args.args.is_empty() || args.delete {
            return usage();
        }
        let mut input = Vec::new();
        std::io::stdin()
            .read_to_end(&mut input)
            .map_err(|e| Fatal::new(format!("cannot read standard input: {e}")))?;
        tx.updates = stdin::parse(&input, args.nul, args.no_deref, |v| {
            parse_value(&backend, v)
        })
        .map_err(Fatal::new)?;
        return match backend.commit(&tx, &options) {
            Ok(outcome) => {
                for rejected in outcome.rejected {
                    println!("{} rejected: {}", rejected.name, rejected);
                }
                Ok(0)
            }
            Err(CommitError::Rejected(r)) => Err(Fatal::new(r)),
            Err(e) => Err(Fatal::new(e)),
        };
    }
    if args.nul || args.batch_updates {
        return usage();
    }
    let (name, change, expected) = match (args.delete, args.args.as_slice()) {
        (true, [name]) => (name, Change::Delete, Expected::Any),
        (true, [name, old]) => {
            let old = parse_value(&backend, old)
                .ok_or_else(|| Fatal::new(format!("{old}: not a valid SHA1")))?;
            (name, Change::Delete, Expected::object(old))
        }
        (false, [name, new, rest @ ..]) if rest.len() <= 1 => {
            let new = parse_value(&backend, new)
                .ok_or_else(|| Fatal::new(format!("{new}: not a valid SHA1")))?;
            let expected = match rest.first() {
                None => Expected::Any,
                Some(old) => Expected::object(
                    parse_value(&backend, old)
                        .ok_or_else(|| Fatal::new(format!("{old}: not a valid SHA1")))?,
                ),
            };
            let change = if new.is_null() {
                Change::Delete
            } else {
                Change::Set(Target::Object(new))
            };
            (name, change, expected)
        }
        _ => return usage(),
    };
    let name = RefName::new(name).map_err(|_| {
        Fatal::new(format!(
            "update_ref failed for ref '{name}': refusing to update ref with bad name '{name}'"
        ))
    })?;
    tx.updates.push(Update {
        name: name.clone(),
        change,
        expected,
        no_deref: args.no_deref,
    });
    backend.commit(&tx, &options).map_err(|e| {
        let reason = match e {
            CommitError::Rejected(r) => r.to_string(),
            other => other.to_string(),
        };
        Fatal::new(format!("update_ref failed for ref '{name}': {reason}"))
    })?;
    Ok(0)
}
