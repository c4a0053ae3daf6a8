//! `refstore update-ref`: change refs safely, one or many in a transaction.

mod new_values;
mod stdin;

use crate::context::{Fatal, Globals};
use new_values::{CheckError, NewValueCheck};
use refstore_fs::config::Component;
use refstore_refs::backend::{Backend, PreparedTransaction};
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::CommitError;
use refstore_refs::{ObjectId, RefName};
use refstore_repo::Repository;
use std::borrow::Cow;
use std::io::Write;

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
pub(crate) fn parse_value(backend: &dyn Backend, arg: &str) -> Option<ObjectId> {
    let format = backend.object_format();
    if arg.len() == format.hex_len() {
        if let Ok(id) = ObjectId::from_hex_any_case(arg.as_bytes(), format) {
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

pub(crate) fn commit_options(repo: &Repository) -> Result<CommitOptions, Fatal> {
    let committer = refstore_refs::identity::committer(&repo.config).map_err(Fatal::new)?;
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
    let store = repo.refs().map_err(Fatal::new)?;
    let backend = &*store;
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
        let check = NewValueCheck::new(&repo);
        return run_stdin(&args, backend, &options, tx, check);
    }
    if args.nul || args.batch_updates {
        return usage();
    }
    let (name, change, expected) = match (args.delete, args.args.as_slice()) {
        (true, [name]) => (name, Change::Delete, Expected::Any),
        (true, [name, old]) => {
            let old = parse_value(backend, old)
                .ok_or_else(|| Fatal::new(format!("{old}: not a valid SHA1")))?;
            (name, Change::Delete, Expected::object(old))
        }
        (false, [name, new, rest @ ..]) if rest.len() <= 1 => {
            let new = parse_value(backend, new)
                .ok_or_else(|| Fatal::new(format!("{new}: not a valid SHA1")))?;
            let expected = match rest.first() {
                None => Expected::Any,
                Some(old) => Expected::object(
                    parse_value(backend, old)
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
    let mut check = NewValueCheck::new(&repo);
    check.check(backend, &mut tx).map_err(|e| match e {
        CheckError::Refused(r) => Fatal::new(format!("update_ref failed for ref '{name}': {r}")),
        CheckError::Read(e) => Fatal::new(e),
    })?;
    backend.commit(&tx, &options).map_err(|e| {
        let reason = match e {
            CommitError::Rejected(r) => r.to_string(),
            other => other.to_string(),
        };
        Fatal::new(format!("update_ref failed for ref '{name}': {reason}"))
    })?;
    Ok(0)
}

/// Where an `update-ref --stdin` session stands.
enum State<'a> {
    /// Updates are being queued; the end of input commits them.
    Open(Transaction),
    /// `start` was given; the end of input aborts.
    Started(Transaction),
    /// Locked and checked; only `commit` or `abort` may follow.
    Prepared(Box<dyn PreparedTransaction + 'a>),
    /// Committed or aborted; only `start` may follow.
    Closed,
}

/// Prints a verb's acknowledgement at once, so an interactive caller sees it
/// before it sends the next command.
fn acknowledge(verb: &str) -> Result<(), Fatal> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "{verb}: ok")
        .and_then(|()| out.flush())
        .map_err(|e| Fatal::new(format!("cannot write to standard output: {e}")))
}

fn report_rejected(outcome_rejected: &[refstore_refs::transaction::Rejected]) {
    for rejected in outcome_rejected {
        println!("{} rejected: {}", rejected.name, rejected);
    }
}

/// Runs `update-ref --stdin`: commands are read and acted on one at a time,
/// following git's transaction states.
fn run_stdin(
    args: &Args,
    backend: &dyn Backend,
    options: &CommitOptions,
    template: Transaction,
    mut check: NewValueCheck<'_>,
) -> Result<u8, Fatal> {
    let fresh = || Transaction {
        updates: Vec::new(),
        ..template.clone()
    };
    let stdin = std::io::stdin().lock();
    let mut parser =
        stdin::Parser::new(stdin, args.nul, args.no_deref, |v| parse_value(backend, v));
    let fail = |verb: &str, e: CommitError| match e {
        CommitError::Rejected(r) => Fatal::new(format!("{verb}: {r}")),
        other => Fatal::new(format!("{verb}: {other}")),
    };
    // New values are checked when a transaction is handed to the backend;
    // with --batch-updates the refused ones are reported with the backend's
    // rejections.
    let mut checked = |mut tx: Transaction, verb: Option<&str>| {
        check
            .check(backend, &mut tx)
            .map(|rejected| (tx, rejected))
            .map_err(|e| match (e, verb) {
                (CheckError::Refused(r), Some(verb)) => Fatal::new(format!("{verb}: {r}")),
                (CheckError::Refused(r), None) => Fatal::new(r),
                (CheckError::Read(e), _) => Fatal::new(e),
            })
    };
    let mut state = State::Open(fresh());
    while let Some(command) = parser.next_command().map_err(Fatal::new)? {
        state = match (command, state) {
            (stdin::Command::Start, State::Closed) => {
                acknowledge("start")?;
                State::Started(fresh())
            }
            (_, State::Closed) => return Err(Fatal::new("transaction is closed")),
            (stdin::Command::Start, State::Started(_)) => {
                return Err(Fatal::new("cannot restart ongoing transaction"))
            }
            (stdin::Command::Start, State::Open(tx)) => {
                acknowledge("start")?;
                State::Started(tx)
            }
            (stdin::Command::Update(u), State::Open(mut tx)) => {
                tx.updates.push(u);
                State::Open(tx)
            }
            (stdin::Command::Update(u), State::Started(mut tx)) => {
                tx.updates.push(u);
                State::Started(tx)
            }
            (stdin::Command::NoDerefNext, state @ (State::Open(_) | State::Started(_))) => state,
            (stdin::Command::Prepare, State::Open(tx) | State::Started(tx)) => {
                let (tx, refused) = checked(tx, Some("prepare"))?;
                report_rejected(&refused);
                let prepared = backend
                    .prepare(Cow::Owned(tx), options)
                    .map_err(|e| fail("prepare", e))?;
                acknowledge("prepare")?;
                State::Prepared(prepared)
            }
            (stdin::Command::Commit, State::Open(tx) | State::Started(tx)) => {
                let (tx, refused) = checked(tx, Some("commit"))?;
                report_rejected(&refused);
                let outcome = backend
                    .prepare(Cow::Owned(tx), options)
                    .and_then(|p| p.commit())
                    .map_err(|e| fail("commit", e))?;
                report_rejected(&outcome.rejected);
                acknowledge("commit")?;
                State::Closed
            }
            (stdin::Command::Commit, State::Prepared(p)) => {
                let outcome = p.commit().map_err(|e| fail("commit", e))?;
                report_rejected(&outcome.rejected);
                acknowledge("commit")?;
                State::Closed
            }
            (stdin::Command::Abort, State::Prepared(p)) => {
                p.abort().map_err(|e| fail("abort", e))?;
                acknowledge("abort")?;
                State::Closed
            }
            (stdin::Command::Abort, State::Open(_) | State::Started(_)) => {
                acknowledge("abort")?;
                State::Closed
            }
            (_, State::Prepared(_)) => {
                return Err(Fatal::new("prepared transactions can only be closed"))
            }
        };
    }
    // At the end of input an implicit transaction commits; one begun with
    // `start` and not committed is abandoned, as in git.
    match state {
        State::Open(tx) => {
            let (tx, refused) = checked(tx, None)?;
            report_rejected(&refused);
            match backend.commit(&tx, options) {
                Ok(outcome) => report_rejected(&outcome.rejected),
                Err(CommitError::Rejected(r)) => return Err(Fatal::new(r)),
                Err(e) => return Err(Fatal::new(e)),
            }
        }
        State::Prepared(p) => p.abort().map_err(Fatal::new)?,
        State::Started(_) | State::Closed => {}
    }
    Ok(0)
}
