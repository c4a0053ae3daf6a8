//! Applying the commands: git's per-ref policies (`funny refname`,
//! `receive.denyCurrentBranch`, `receive.denyDeleteCurrent`,
//! `receive.denyDeletes`, `receive.denyNonFastForwards`), then every
//! accepted command in ONE [`Transaction`], so a push costs one data flush
//! point and one directory flush point however many refs it updates.
//!
//! With `atomic` the push is all-or-nothing, as `git push --atomic`
//! documents: one refused command (by a policy, or for missing objects)
//! refuses them all (`atomic push failure`), and a transaction that fails
//! fails them all (`atomic transaction failed`). git 2.39's receive-pack
//! differs in one case: it still commits the other refs when a command
//! lacks objects. Otherwise the transaction is a
//! batch: a command whose ref cannot be updated is reported
//! (`failed to update ref`) and the others are committed.

use super::commands::Command;
use super::context::Context;
use super::fast_forward::{relation, Relation};
use super::hooks;
use super::ref_transaction;
use super::ReceivePackError;
use crate::Repository;
use refstore_fs::config::Component;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::name::{check, CheckOptions};
use refstore_refs::transaction::{Change, Expected, Transaction, Update};
use refstore_refs::value::Target;
use refstore_refs::RefName;
use std::ffi::OsString;
use std::io::Write;
use std::os::unix::ffi::OsStringExt;

/// The reflog message of pushed updates, as git writes it.
const REFLOG_MESSAGE: &str = "push";

/// What `receive.denyCurrentBranch` and `receive.denyDeleteCurrent` say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deny {
    Refuse,
    Warn,
    Ignore,
}

impl Deny {
    /// Parses git's values; unset, `true` and unknown values refuse.
    fn parse(value: Option<&str>) -> Deny {
        match value.map(str::to_ascii_lowercase).as_deref() {
            Some("ignore" | "false" | "no" | "off" | "0") => Deny::Ignore,
            Some("warn") => Deny::Warn,
            _ => Deny::Refuse,
        }
    }
}

/// The repository's push policy.
struct Policy {
    bare: bool,
    /// The branch `HEAD` names (the current branch), if any.
    head: Option<RefName>,
    deny_current: Deny,
    update_instead: bool,
    deny_delete_current: Deny,
    deny_deletes: bool,
    deny_non_fast_forwards: bool,
}

impl Policy {
    fn of(repo: &Repository) -> Result<Policy, ReceivePackError> {
        let head = repo
            .refs
            .resolve(&RefName::from_trusted(&b"HEAD"[..]))?
            .map(|resolved| resolved.name)
            .filter(|name| name.as_bytes() != b"HEAD");
        let receive = &repo.settings.receive;
        Ok(Policy {
            bare: repo.settings.bare.unwrap_or(repo.location.is_bare()),
            head,
            deny_current: Deny::parse(Some(&receive.deny_current_branch)),
            update_instead: receive
                .deny_current_branch
                .eq_ignore_ascii_case("updateInstead"),
            deny_delete_current: Deny::parse(
                repo.config.string("receive.denydeletecurrent").as_deref(),
            ),
            deny_deletes: receive.deny_deletes,
            deny_non_fast_forwards: receive.deny_non_fast_forwards,
        })
    }

    /// Why `command` is refused before any ref is touched, if it is;
    /// explanations for the user go to `messages`.
    fn refusal(
        &self,
        repo: &Repository,
        command: &Command,
        messages: &mut Vec<String>,
    ) -> Option<&'static str> {
        let shown = String::from_utf8_lossy(&command.name).into_owned();
        let Some(name) = valid_name(&command.name) else {
            messages.push(format!(
                "error: refusing to create funny ref '{shown}' remotely"
            ));
            return Some("funny refname");
        };
        let is_current = self.head.as_ref() == Some(&name);
        if is_current && !command.is_delete() && !self.bare {
            match self.deny_current {
                Deny::Ignore => {}
                Deny::Warn => messages.push("warning: updating the current branch".into()),
                Deny::Refuse => {
                    messages.push(format!(
                        "error: refusing to update checked out branch: {shown}"
                    ));
                    messages.push(if self.update_instead {
                        "error: receive.denyCurrentBranch=updateInstead is not supported by this server: push to a bare repository, or to another branch".into()
                    } else {
                        "error: a push to the branch checked out in a non-bare repository would leave its index and work tree out of step; push to a bare repository or to another branch, or set receive.denyCurrentBranch to 'warn' or 'ignore' on the server".into()
                    });
                    return Some("branch is currently checked out");
                }
            }
        }
        if command.is_delete() && !command.old.is_null() {
            if self.deny_deletes && name.as_bytes().starts_with(b"refs/heads/") {
                messages.push(format!("error: denying ref deletion for {shown}"));
                return Some("deletion prohibited");
            }
            if is_current {
                match self.deny_delete_current {
                    Deny::Ignore => {}
                    Deny::Warn => messages.push("warning: deleting the current branch".into()),
                    Deny::Refuse => {
                        messages.push(format!(
                            "error: refusing to delete the current branch: {shown}"
                        ));
                        return Some("deletion of the current branch prohibited");
                    }
                }
            }
        }
        if self.deny_non_fast_forwards
            && !command.is_delete()
            && !command.old.is_null()
            && name.as_bytes().starts_with(b"refs/heads/")
        {
            match relation(&repo.objects, command.old, command.new) {
                Relation::FastForward => {}
                Relation::Diverged => {
                    messages.push(format!(
                        "error: denying non-fast-forward {shown} (you should pull first)"
                    ));
                    return Some("non-fast-forward");
                }
                Relation::NotCommits => {
                    messages.push(format!("error: bad sha1 objects for {shown}"));
                    return Some("bad ref");
                }
            }
        }
        None
    }
}

/// The name if git accepts it for a push: below `refs/`, with at least
/// two levels after it, and well formed.
fn valid_name(name: &[u8]) -> Option<RefName> {
    let rest = name.strip_prefix(b"refs/")?;
    let options = CheckOptions {
        allow_onelevel: false,
        refspec_pattern: false,
    };
    check(rest, options).ok()?;
    RefName::new(name).ok()
}

/// The commit options the configuration asks for (the same as
/// `update-ref`'s).
fn commit_options(repo: &Repository, bare: bool) -> Result<CommitOptions, ReceivePackError> {
    let committer = refstore_refs::identity::committer(&repo.config)
        .map_err(|e| ReceivePackError::Config(e.to_string()))?;
    Ok(CommitOptions {
        flush: repo.settings.fsync.method_for(Component::Reference),
        lock_timeout: repo.settings.files_ref_lock_timeout,
        packed_refs_timeout: repo.settings.packed_refs_timeout,
        log_updates: repo.settings.log_ref_updates(bare),
        signature: committer.signature(),
    })
}

/// Applies `commands` whose `results` are still `None` (not refused by an
/// earlier stage), recording each outcome in `results`: git's policies,
/// then the `update` hook, then one transaction (with the
/// `reference-transaction` hook around it).
pub(crate) fn apply<W: Write>(
    cx: &mut Context<'_, '_, W>,
    commands: &[Command],
    atomic: bool,
    results: &mut [Option<String>],
) -> Result<(), ReceivePackError> {
    let repo = cx.repo;
    let policy = Policy::of(repo)?;
    // An atomic push stops at its first refusal, as git's does: the
    // commands after it are not judged (they fail as the atomic push).
    let mut refused = false;
    for (command, result) in commands.iter().zip(results.iter_mut()) {
        if result.is_none() && !(atomic && refused) {
            *result = policy
                .refusal(repo, command, cx.messages)
                .map(str::to_owned);
            refused |= result.is_some();
        }
    }
    if cx.hooks.exists("update") {
        for (index, command) in commands.iter().enumerate() {
            // An atomic push stops at its first refusal, as git's does.
            if results[index].is_some() || (atomic && results.iter().any(Option::is_some)) {
                continue;
            }
            let hex = |id: &refstore_refs::ObjectId| {
                let mut buf = Vec::new();
                id.write_hex(&mut buf);
                OsString::from_vec(buf)
            };
            let args = [
                OsString::from_vec(command.name.clone()),
                hex(&command.old),
                hex(&command.new),
            ];
            let call = hooks::Call {
                args: &args,
                ..hooks::Call::default()
            };
            if !cx.hooks.run("update", &call, cx.relay, cx.messages)? {
                cx.messages.push(format!(
                    "error: hook declined to update {}",
                    String::from_utf8_lossy(&command.name)
                ));
                results[index] = Some("hook declined".to_owned());
            }
        }
    }
    let fail_rest = |results: &mut [Option<String>], reason: &str| {
        for result in results.iter_mut().filter(|r| r.is_none()) {
            *result = Some(reason.to_owned());
        }
    };
    if atomic && results.iter().any(Option::is_some) {
        fail_rest(results, "atomic push failure");
        return Ok(());
    }
    let mut tx = Transaction {
        batch: !atomic,
        message: Some(REFLOG_MESSAGE.to_owned()),
        ..Transaction::default()
    };
    let mut applied = Vec::new();
    for (index, command) in commands.iter().enumerate() {
        if results[index].is_some() {
            continue;
        }
        let name = valid_name(&command.name).expect("refused above unless valid");
        tx.updates.push(to_update(repo, name, command));
        applied.push(index);
    }
    if applied.is_empty() {
        return Ok(());
    }
    let options = commit_options(repo, policy.bare)?;
    let updated: Vec<&Command> = applied.iter().map(|&i| &commands[i]).collect();
    match ref_transaction::commit(cx, &tx, &options, &updated)? {
        Ok(outcome) => {
            for rejected in outcome.rejected {
                cx.messages.push(format!("error: {rejected}"));
                for &index in &applied {
                    if commands[index].name == rejected.name.as_bytes() {
                        results[index] = Some("failed to update ref".to_owned());
                    }
                }
            }
        }
        Err(err) => {
            cx.messages.push(format!("error: {err}"));
            let reason = if atomic {
                "atomic transaction failed"
            } else {
                "failed to update ref"
            };
            fail_rest(results, reason);
        }
    }
    Ok(())
}

/// The transaction update of `command`. The old value the client saw is
/// required, except for a delete whose old value is null or not an object
/// this repository has (git lets such a ref, missing or broken, be
/// deleted).
fn to_update(repo: &Repository, name: RefName, command: &Command) -> Update {
    let (change, expected) = if command.is_delete() {
        let expected = if command.old.is_null() || !repo.objects.contains(&command.old) {
            Expected::Any
        } else {
            Expected::Value(Target::Object(command.old))
        };
        (Change::Delete, expected)
    } else {
        (
            Change::Set(Target::Object(command.new)),
            Expected::object(command.old),
        )
    };
    Update {
        name,
        change,
        expected,
        no_deref: false,
    }
}
