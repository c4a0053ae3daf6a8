//! The hooks a push runs, as git's receive-pack runs them:
//!
//! - `pre-receive`: once, before any ref changes, with every command on
//!   its standard input (`<old> <new> <ref>` lines) and the quarantine's
//!   variables, so it can read the pushed objects that the repository does
//!   not hold yet; a failure refuses the whole push (`pre-receive hook
//!   declined`);
//! - `update <ref> <old> <new>`: once per command that passed git's
//!   policies; a failure refuses that command (`hook declined`);
//! - `reference-transaction <state>`: `prepared` with the refs locked (a
//!   failure aborts the transaction), then `committed` or `aborted`, each
//!   with the transaction's updates on standard input;
//! - `post-receive` (commands that were applied, on standard input) and
//!   `post-update` (their names as arguments), after the refs are durable;
//!   their failure changes nothing.
//!
//! Hooks are found in `core.hooksPath` (relative to the git directory) or
//! `<git-dir>/hooks`, run only if executable, in the git directory with
//! `GIT_DIR=.`; `pre-receive` and `post-receive` get the push options as
//! `GIT_PUSH_OPTION_COUNT` and `GIT_PUSH_OPTION_<i>`. What they print
//! reaches the user through the [`Relay`].

use super::commands::Command;
use super::hook_process::{self as hook, Invocation};
use super::relay::Relay;
use super::ReceivePackError;
use crate::Repository;
use refstore_odb::Quarantine;
use refstore_refs::ObjectId;
use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;

/// Variables of the serving process that must not leak into a hook: they
/// would point it at another repository or object directory.
const CLEARED: &[&str] = &[
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
    "GIT_PUSH_OPTION_COUNT",
    "GIT_NAMESPACE",
];

/// The hooks of one repository.
pub(crate) struct Hooks {
    dir: PathBuf,
    git_dir: PathBuf,
}

/// A hook's `<old> <new> <ref>` input line.
pub(crate) fn line(old: &ObjectId, new: &ObjectId, name: &[u8], into: &mut Vec<u8>) {
    old.write_hex(into);
    into.push(b' ');
    new.write_hex(into);
    into.push(b' ');
    into.extend_from_slice(name);
    into.push(b'\n');
}

impl Hooks {
    /// The hooks `repo` configures.
    pub fn of(repo: &Repository) -> Hooks {
        let git_dir = repo.location.git_dir.clone();
        let dir = match repo.config.string("core.hooksPath") {
            Some(path) if !path.is_empty() => {
                let path = match path.strip_prefix("~/") {
                    Some(rest) => std::env::var_os("HOME")
                        .map(|home| PathBuf::from(home).join(rest))
                        .unwrap_or_else(|| PathBuf::from(&path)),
                    None => PathBuf::from(path),
                };
                git_dir.join(path)
            }
            _ => repo.location.common_dir.join("hooks"),
        };
        Hooks { dir, git_dir }
    }

    /// True if hook `name` would run.
    pub fn exists(&self, name: &str) -> bool {
        hook::find(&self.dir, name).is_some()
    }

    /// Runs hook `name` if it exists; true if it does not or succeeded.
    /// Messages pending in `messages` are sent first, so the user sees
    /// everything in order.
    pub fn run<W: Write>(
        &self,
        name: &str,
        call: &Call<'_>,
        relay: &mut Relay<'_, W>,
        messages: &mut Vec<String>,
    ) -> Result<bool, ReceivePackError> {
        let Some(path) = hook::find(&self.dir, name) else {
            return Ok(true);
        };
        relay.messages(messages)?;
        let mut env: Vec<(OsString, OsString)> = vec![("GIT_DIR".into(), ".".into())];
        if let Some(options) = call.push_options {
            for (i, option) in options.iter().enumerate() {
                env.push((
                    format!("GIT_PUSH_OPTION_{i}").into(),
                    String::from_utf8_lossy(option).into_owned().into(),
                ));
            }
            env.push((
                "GIT_PUSH_OPTION_COUNT".into(),
                options.len().to_string().into(),
            ));
        }
        if let Some(quarantine) = call.quarantine {
            let dir = quarantine.dir().as_os_str().to_owned();
            env.push(("GIT_QUARANTINE_PATH".into(), dir.clone()));
            env.push(("GIT_OBJECT_DIRECTORY".into(), dir));
            env.push((
                "GIT_ALTERNATE_OBJECT_DIRECTORIES".into(),
                quarantine.objects_dir().as_os_str().to_owned(),
            ));
        }
        let mut relay_error = None;
        let status = hook::run(
            &path,
            &Invocation {
                args: call.args,
                env: &env,
                env_remove: CLEARED,
                cwd: Some(&self.git_dir),
                stdin: call.stdin,
            },
            &mut |bytes| {
                if relay_error.is_none() {
                    relay_error = relay.output(bytes).err();
                }
            },
        );
        if let Some(e) = relay_error {
            return Err(e);
        }
        match status {
            Ok(status) => Ok(status.success()),
            Err(e) => {
                messages.push(format!("error: cannot run {}: {e}", path.display()));
                Ok(false)
            }
        }
    }
}

/// What one hook run is given.
#[derive(Default)]
pub(crate) struct Call<'a> {
    pub args: &'a [OsString],
    pub stdin: &'a [u8],
    /// The push options, when the client sent them (`pre-receive` and
    /// `post-receive` only).
    pub push_options: Option<&'a [Vec<u8>]>,
    /// The quarantine, while the objects are in it (`pre-receive` only).
    pub quarantine: Option<&'a Quarantine>,
}

/// The standard input of `pre-receive` or `post-receive`: one line per
/// command of `commands` that `include` selects.
pub(crate) fn command_lines(commands: &[Command], include: impl Fn(usize) -> bool) -> Vec<u8> {
    let mut input = Vec::new();
    for (index, command) in commands.iter().enumerate() {
        if include(index) {
            line(&command.old, &command.new, &command.name, &mut input);
        }
    }
    input
}
