//! The push's ref transaction with git's `reference-transaction` hook
//! around it: `prepared` once every ref is locked and checked (its failure
//! aborts the transaction, nothing changes), then `committed` once the
//! updates are durable, or `aborted`. Each run gets one
//! `<old> <new> <ref>` line per update the transaction holds (batch
//! rejections left out).
//!
//! The hook is called between [`Backend::prepare`] and the prepared
//! transaction's commit, so the ref stores need no knowledge of hooks.
//! Without the hook the transaction is committed in one call.
//!
//! [`Backend::prepare`]: refstore_refs::backend::Backend::prepare

use super::commands::Command;
use super::context::Context;
use super::hooks::{self, line};
use super::ReceivePackError;
use refstore_refs::files::transaction::CommitOptions;
use refstore_refs::transaction::{Outcome, Rejected, Transaction};
use refstore_refs::value::Target;
use refstore_refs::RefName;
use std::borrow::Cow;
use std::ffi::OsString;
use std::io::Write;

/// The hook's name.
const HOOK: &str = "reference-transaction";

/// Commits `tx`, whose updates are those of `updated` in order. The inner
/// error is the message for the user when the transaction failed or the
/// hook aborted it.
pub(crate) fn commit<W: Write>(
    cx: &mut Context<'_, '_, W>,
    tx: &Transaction,
    options: &CommitOptions,
    updated: &[&Command],
) -> Result<Result<Outcome, String>, ReceivePackError> {
    if !cx.hooks.exists(HOOK) {
        return Ok(cx.repo.refs.commit(tx, options).map_err(|e| e.to_string()));
    }
    let prepared = match cx.repo.refs.prepare(Cow::Borrowed(tx), options) {
        Ok(prepared) => prepared,
        Err(e) => return Ok(Err(e.to_string())),
    };
    let head = head_target(cx);
    let input = lines(updated, prepared.rejected(), head.as_ref());
    if !run(cx, "prepared", &input)? {
        if let Err(e) = prepared.abort() {
            cx.messages.push(format!("error: {e}"));
        }
        run(cx, "aborted", &input)?;
        return Ok(Err(
            "in 'prepared' phase, update aborted by the reference-transaction hook".into(),
        ));
    }
    match prepared.commit() {
        Ok(outcome) => {
            run(
                cx,
                "committed",
                &lines(updated, &outcome.rejected, head.as_ref()),
            )?;
            Ok(Ok(outcome))
        }
        Err(e) => {
            run(cx, "aborted", &input)?;
            Ok(Err(e.to_string()))
        }
    }
}

/// Runs the hook for `state`; true if it succeeded.
fn run<W: Write>(
    cx: &mut Context<'_, '_, W>,
    state: &str,
    input: &[u8],
) -> Result<bool, ReceivePackError> {
    let args = [OsString::from(state)];
    let call = hooks::Call {
        args: &args,
        stdin: input,
        ..hooks::Call::default()
    };
    cx.hooks.run(HOOK, &call, cx.relay, cx.messages)
}

/// The branch `HEAD` names, if it is a symbolic ref.
fn head_target<W: Write>(cx: &Context<'_, '_, W>) -> Option<RefName> {
    match cx.repo.refs.read(&RefName::from_trusted(&b"HEAD"[..])) {
        Ok(Some(r)) => match r.target {
            Target::Symbolic(name) => Some(name),
            Target::Object(_) => None,
        },
        _ => None,
    }
}

/// The hook's input: the updates not rejected, then, if one of them is
/// the branch `HEAD` names, the same change for `HEAD` (whose reflog it
/// changes), as git lists it.
fn lines(updated: &[&Command], rejected: &[Rejected], head: Option<&RefName>) -> Vec<u8> {
    let mut input = Vec::new();
    let mut via_head = None;
    for command in updated {
        if !rejected
            .iter()
            .any(|r| r.name.as_bytes() == command.name.as_slice())
        {
            line(&command.old, &command.new, &command.name, &mut input);
            if head.is_some_and(|h| h.as_bytes() == command.name.as_slice()) {
                via_head = Some(command);
            }
        }
    }
    if let Some(command) = via_head {
        line(&command.old, &command.new, b"HEAD", &mut input);
    }
    input
}
