//! receive-pack, the serving side of `git push`, for any transport that
//! gives it the client's bytes and a place for its answer (protocol v0;
//! git has no v2 for pushes, and a client that asks for v1 accepts a v0
//! answer).
//!
//! A push flows through, in order:
//!
//! 1. the ref advertisement (`advertisement.rs`);
//! 2. the command list, capabilities and push options (`commands.rs`);
//! 3. the objects, into a quarantine directory (loose below
//!    `receive.unpackLimit`, else a pack with its index and a `.keep`
//!    file, thin packs completed), then the connectivity check of the new
//!    tips against quarantine and repository (`ingest.rs`); objects at or
//!    above `core.bigFileThreshold` are streamed, and a pack that inflates
//!    beyond `refstore.maxPushInflated` is refused as it is read
//!    (`ingest_limits.rs`);
//! 4. the `pre-receive` hook, which sees the quarantined objects; if it
//!    accepts, the objects move into the repository, durably (`hooks.rs`),
//!    and the repository's [`crate::ObjectsStored`] step, if any, may
//!    still refuse every ref (a cluster whose other nodes do not hold the
//!    packs);
//! 5. git's per-ref policies and the `update` hook, then all accepted
//!    updates in one transaction with one flush point, atomic or per ref,
//!    with the `reference-transaction` hook (`update.rs`,
//!    `ref_transaction.rs`);
//! 6. the `.keep` files released, the status report (`report.rs`), then
//!    `post-receive` and `post-update`.
//!
//! What hooks print and refstore's own messages reach the user through
//! the [`relay::Relay`], on side-band 2 when negotiated.
//!
//! A push refused before its objects are migrated (a bad pack, missing
//! objects for every ref, `pre-receive`) leaves neither objects nor refs
//! behind; one
//! refused after (policies, `update`, the transaction) leaves objects no
//! ref refers to, as git's does. A malformed request
//! (bad framing, an invalid id, a command line of the wrong shape) ends
//! the call with an error before anything is stored; a bad pack and
//! refused refs are reported to the client, and the call succeeds.
//!
//! A push from a shallow clone is accepted where its history connects in
//! this repository, and refused per ref (`shallow update not allowed`)
//! where it would need new shallow commits, as git's default
//! (`receive.shallowUpdate` off) does.
//!
//! Not supported: `receive.shallowUpdate`, signed pushes (`push-cert`),
//! hidden refs and namespaces, `proc-receive` and `push-to-checkout`.

mod advertisement;
pub(crate) mod commands;
mod context;
mod error;
mod fast_forward;
mod fsck_config;
mod hook_process;
mod hooks;
mod ingest;
mod ingest_limits;
mod ref_transaction;
mod relay;
mod report;
mod spool;
mod update;

pub use error::ReceivePackError;

use crate::limits::{self, Limited, Limits};
use crate::pkt_line::{Dialect, PacketReader, PacketWriter};
use crate::Repository;
use hooks::Hooks;
use refstore_fs::config::Component;
use refstore_odb::Quarantine;
use refstore_refs::ObjectId;
use relay::Relay;
use std::io::{BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;

/// How a transport runs receive-pack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Options {
    /// Serve one request and return, as over HTTP: no advertisement first
    /// (git's `--stateless-rpc`).
    pub stateless_rpc: bool,
    /// Only write the advertisement (git's `--advertise-refs`).
    pub advertise_refs: bool,
    /// The protocol version the client asked for: v1 puts `version 1`
    /// before the advertisement; v2, which git has no push for, is
    /// answered in v0.
    pub version: crate::ProtocolVersion,
}

/// Serves one push into `repo`, reading the client's packets and pack from
/// `input` and writing the advertisement and report to `output`. Returns
/// how many refs the push updated (0 when it was refused or asked for
/// nothing), so a server knows whether there is anything to maintain.
pub fn receive_pack(
    repo: &Repository,
    options: &Options,
    input: &mut dyn Read,
    output: &mut dyn Write,
) -> Result<usize, ReceivePackError> {
    let limits = Limits::from_config(&repo.config).map_err(ReceivePackError::Config)?;
    let mut out = PacketWriter::new(output);
    if options.advertise_refs || !options.stateless_rpc {
        if options.version == crate::ProtocolVersion::V1 {
            out.write_text("version 1")?;
        }
        let push_options = repo
            .config
            .bool("receive.advertisePushOptions")
            .map_err(|e| ReceivePackError::Config(e.to_string()))?
            .unwrap_or(false);
        advertisement::write(&mut out, repo, push_options)?;
        if options.advertise_refs {
            return Ok(0);
        }
    }
    let input = Limited::new(input, limits.max_push_request);
    let mut reader =
        PacketReader::new(BufReader::new(input), Dialect::V0).fail_on_err_packets(false);
    let request = commands::read(&mut reader, repo.object_format(), &limits);
    let request = match request {
        Ok(request) => request,
        Err(e) => return Err(too_large(reader.get_ref().get_ref()).unwrap_or(e)),
    };
    if request.commands.is_empty() {
        return Ok(0);
    }
    // On a node that missed the push these commands build on, the old
    // tips (advertised from the refs every node shares) can be named but
    // not held here: the client's new commits have them as parents and
    // its thin pack deltas against their objects. Bring them in first.
    let old_tips: Vec<ObjectId> = request
        .commands
        .iter()
        .map(|command| command.old)
        .filter(|old| !old.is_null())
        .collect();
    crate::objects_wanted::bring_in(repo, &old_tips);
    let mut input = reader.into_inner();
    let mut push = Push {
        repo,
        request: &request,
        hooks: Hooks::of(repo),
        relay: Relay::new(&mut out, request.capabilities.side_band_64k),
        messages: Vec::new(),
        results: vec![None; request.commands.len()],
    };
    let received = if request.expects_pack() {
        match fsck_config::options(repo) {
            Ok(fsck) => {
                ingest::receive(repo, &mut input, fsck.as_ref(), &limits, &mut push.messages)
            }
            Err(e) => {
                push.messages.push(format!("error: {e}"));
                Err(e)
            }
        }
    } else {
        Ok(None)
    };
    // A request cut off at the limit ends here, the way HTTP answers 413:
    // the client is told why, rather than that its pack was bad.
    if let Some(e) = too_large(input.get_ref()) {
        return Err(e);
    }
    let unpack = match received {
        Ok(quarantine) => {
            push.accept(quarantine)?;
            Ok(())
        }
        Err(reason) => {
            for result in &mut push.results {
                *result = Some("unpacker error".to_owned());
            }
            Err(reason)
        }
    };
    let applied = unpack.is_ok();
    // A command still without a reason for refusal was applied.
    let updated = if applied {
        push.results.iter().filter(|r| r.is_none()).count()
    } else {
        0
    };
    if let Some(observer) = refstore_fs::observe::observer() {
        observer.push_received(updated);
    }
    report::write(
        &mut push.relay,
        &request.capabilities,
        &report::Report {
            unpack,
            commands: &request.commands,
            results: &push.results,
        },
        &mut push.messages,
    )?;
    if applied {
        push.after_update()?;
    }
    report::finish(&mut push.relay, &mut push.messages)?;
    Ok(updated)
}

/// The error of a request that went past its limit, if it did.
fn too_large<R>(input: &Limited<R>) -> Option<ReceivePackError> {
    input
        .exceeded()
        .then(|| ReceivePackError::TooLarge(limits::TooLarge(input.limit()).to_string()))
}

/// The push options for hooks: git gives `pre-receive` and
/// `post-receive` a count (0 without options) whatever the client asked.
fn push_options(request: &commands::Request) -> Option<&[Vec<u8>]> {
    Some(request.push_options.as_slice())
}

/// One push being served.
struct Push<'a, 'w, W: Write> {
    repo: &'a Repository,
    request: &'a commands::Request,
    hooks: Hooks,
    relay: Relay<'w, W>,
    /// Messages for the user not sent yet.
    messages: Vec<String>,
    /// For each command: `None` while it may still be applied (and once it
    /// was), else git's reason for refusing it.
    results: Vec<Option<String>>,
}

impl<W: Write> Push<'_, '_, W> {
    /// Checks the connectivity of the new tips, asks `pre-receive`, moves
    /// the quarantined objects into the repository, then applies the
    /// commands that passed. Refused at any step before the migration,
    /// the push leaves no object behind (the quarantine is removed when
    /// dropped).
    fn accept(&mut self, quarantine: Option<Quarantine>) -> Result<(), ReceivePackError> {
        let repo = self.repo;
        let commands = &self.request.commands;
        let quarantined = match &quarantine {
            Some(q) => Some(
                q.odb()
                    .map_err(|e| ReceivePackError::Objects(e.to_string()))?,
            ),
            None => None,
        };
        let objects = quarantined.as_ref().unwrap_or(&repo.objects);
        let shallow = !self.request.shallow.is_empty();
        let connected =
            match ingest::check_connected(repo, objects, commands, shallow, &mut self.messages) {
                // Refs that cannot be read now (a cluster node cut off
                // from etcd) refuse every ref, in the report, where the
                // client shows why; nothing was applied.
                Err(ReceivePackError::Refs(e)) => {
                    self.fail_rest(&format!("cannot read the refs: {e}"));
                    return Ok(());
                }
                connected => connected?,
            };
        for (result, missing) in self.results.iter_mut().zip(connected) {
            *result = missing.map(str::to_owned);
        }
        let stdin = hooks::command_lines(commands, |_| true);
        let call = hooks::Call {
            stdin: &stdin,
            push_options: push_options(self.request),
            quarantine: quarantine.as_ref(),
            ..hooks::Call::default()
        };
        if !self
            .hooks
            .run("pre-receive", &call, &mut self.relay, &mut self.messages)?
        {
            self.fail_rest("pre-receive hook declined");
            return Ok(());
        }
        drop(quarantined);
        if self.results.iter().all(Option::is_some) {
            // Nothing can be applied: the objects are not needed.
            return Ok(());
        }
        if let Some(quarantine) = quarantine {
            let fsync = &repo.settings.fsync;
            let method = fsync.method_for(Component::Pack);
            match quarantine.migrate(method, fsync.batch_mechanism()) {
                Ok(migrated) => {
                    let applied = match self.objects_stored(&migrated.pack_names) {
                        Ok(()) => self.apply(),
                        Err(reason) => {
                            self.messages.push(format!("error: {reason}"));
                            self.fail_rest(&reason);
                            Ok(())
                        }
                    };
                    // The refs are written (or refused): the packs no
                    // longer need protection from gc, whatever happened.
                    for keep in &migrated.keep_files {
                        if let Err(e) = repo.vfs.unlink(keep) {
                            self.messages
                                .push(format!("warning: cannot remove {}: {e}", keep.display()));
                        }
                    }
                    return applied;
                }
                Err(e) => {
                    self.messages.push(format!(
                        "error: unable to migrate objects to permanent storage: {e}"
                    ));
                    self.fail_rest("unable to migrate objects to permanent storage");
                    return Ok(());
                }
            }
        }
        self.apply()
    }

    /// Asks the repository's [`crate::ObjectsStored`], if it has one,
    /// whether the migrated packs are stored well enough for refs to
    /// change.
    fn objects_stored(&self, packs: &[String]) -> Result<(), String> {
        match &self.repo.objects_stored {
            Some(step) => step.objects_stored(self.repo, packs),
            None => Ok(()),
        }
    }

    /// Applies the commands not refused yet, recording each outcome.
    fn apply(&mut self) -> Result<(), ReceivePackError> {
        update::apply(
            &mut context::Context {
                repo: self.repo,
                hooks: &self.hooks,
                relay: &mut self.relay,
                messages: &mut self.messages,
            },
            &self.request.commands,
            self.request.capabilities.atomic,
            &mut self.results,
        )
    }

    /// `post-receive` and `post-update`, once the status is reported, for
    /// the commands that were applied.
    fn after_update(&mut self) -> Result<(), ReceivePackError> {
        let commands = &self.request.commands;
        let applied = |i: usize| self.results[i].is_none();
        if !(0..commands.len()).any(applied) {
            return Ok(());
        }
        let stdin = hooks::command_lines(commands, applied);
        let call = hooks::Call {
            stdin: &stdin,
            push_options: push_options(self.request),
            ..hooks::Call::default()
        };
        self.hooks
            .run("post-receive", &call, &mut self.relay, &mut self.messages)?;
        let names: Vec<std::ffi::OsString> = commands
            .iter()
            .enumerate()
            .filter(|&(i, _)| applied(i))
            .map(|(_, c)| std::ffi::OsStr::from_bytes(&c.name).to_owned())
            .collect();
        let call = hooks::Call {
            args: &names,
            ..hooks::Call::default()
        };
        self.hooks
            .run("post-update", &call, &mut self.relay, &mut self.messages)?;
        Ok(())
    }

    /// Refuses every command not refused yet, for `reason`.
    fn fail_rest(&mut self, reason: &str) {
        for result in self.results.iter_mut().filter(|r| r.is_none()) {
            *result = Some(reason.to_owned());
        }
    }
}
