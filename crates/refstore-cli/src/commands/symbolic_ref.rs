//! `refstore symbolic-ref`: read, set or delete a symbolic ref.

use super::update_ref::commit_options;
use crate::context::{Fatal, Globals};
use refstore_refs::backend::Backend;
use refstore_refs::name::{check, CheckOptions};
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::CommitError;
use refstore_refs::RefName;

/// Arguments of `symbolic-ref`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Print nothing when <name> is not a symbolic ref; exit 1.
    #[arg(short, long)]
    quiet: bool,
    /// Print the target shortened (`main` for `refs/heads/main`).
    #[arg(long)]
    short: bool,
    /// Delete the symbolic ref <name>.
    #[arg(short = 'd', long)]
    delete: bool,
    /// The reflog message of the update.
    #[arg(short = 'm', value_name = "reason")]
    message: Option<String>,
    /// The symbolic ref.
    name: String,
    /// The ref it should point to.
    target: Option<String>,
}

/// Runs `symbolic-ref`.
pub fn run(args: Args, globals: &Globals) -> Result<u8, Fatal> {
    let repo = globals.open_repo()?;
    let store = repo.refs().map_err(Fatal::new)?;
    let backend = &*store;
    let name = RefName::new(&args.name);
    let current = match &name {
        Ok(n) => backend.read(n).map_err(Fatal::new)?,
        Err(_) => None,
    };
    let symbolic_target = current.as_ref().and_then(|r| r.target.symbolic().cloned());

    if let Some(target) = &args.target {
        if args.delete {
            return Err(Fatal::new("symbolic-ref -d takes only the name of the ref"));
        }
        if args.name == "HEAD" && !target.starts_with("refs/") {
            return Err(Fatal::new("Refusing to point HEAD outside of refs/"));
        }
        let onelevel = CheckOptions {
            allow_onelevel: true,
            refspec_pattern: false,
        };
        let target_name = RefName::new(target)
            .ok()
            .filter(|_| check(target.as_bytes(), onelevel).is_ok())
            .ok_or_else(|| {
                Fatal::new(format!(
                    "Refusing to set '{}' to invalid ref '{target}'",
                    args.name
                ))
            })?;
        let name = name.map_err(|_| {
            Fatal::new(format!(
                "Refusing to update ref with bad name '{}'",
                args.name
            ))
        })?;
        let tx = Transaction {
            updates: vec![Update {
                name,
                change: Change::Set(Target::Symbolic(target_name)),
                expected: Expected::Any,
                no_deref: true,
            }],
            message: args.message.clone(),
            ..Transaction::default()
        };
        return commit(backend, &tx, &repo);
    }

    if args.delete {
        if args.name == "HEAD" {
            return Err(Fatal::new("deleting 'HEAD' is not allowed"));
        }
        let (Ok(name), Some(_)) = (name, symbolic_target) else {
            if args.quiet {
                return Ok(1);
            }
            return Err(Fatal::new(format!(
                "Cannot delete {}, not a symbolic ref",
                args.name
            )));
        };
        let tx = Transaction {
            updates: vec![Update {
                name,
                change: Change::Delete,
                expected: Expected::Any,
                no_deref: true,
            }],
            message: args.message.clone(),
            ..Transaction::default()
        };
        return commit(backend, &tx, &repo);
    }

    match symbolic_target {
        Some(target) => {
            let shown = if args.short {
                String::from_utf8_lossy(target.shorten()).into_owned()
            } else {
                target.to_string()
            };
            println!("{shown}");
            Ok(0)
        }
        None if args.quiet => Ok(1),
        None => Err(Fatal::new(format!(
            "ref {} is not a symbolic ref",
            args.name
        ))),
    }
}

fn commit(
    backend: &dyn Backend,
    tx: &Transaction,
    repo: &refstore_repo::Repository,
) -> Result<u8, Fatal> {
    let options = commit_options(repo)?;
    match backend.commit(tx, &options) {
        Ok(_) => Ok(0),
        Err(CommitError::Rejected(r)) => Err(Fatal::new(r)),
        Err(e) => Err(Fatal::new(e)),
    }
}
