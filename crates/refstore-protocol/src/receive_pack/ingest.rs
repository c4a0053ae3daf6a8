//! Taking in the objects that follow the commands, into a [`Quarantine`]
//! where the repository does not see them until the push is accepted:
//! a pack of fewer objects than `receive.unpackLimit` (else
//! `transfer.unpackLimit`, else 100) as loose objects, as git's
//! `unpack-objects`; a larger one as a pack with its index (thin packs
//! completed from the repository) and a `.keep` file that protects it
//! from a concurrent `git gc` from its migration until the refs that need
//! it are written. Then the connectivity check of the new tips, against
//! the quarantine and the repository together.
//!
//! Objects at or above `core.bigFileThreshold` are never held whole: the
//! pack reader hashes them in pieces, a loose write streams them, and the
//! object checks judge them by their header (see `ingest_limits.rs`).

use super::commands::Command;
use super::spool::Spool;
use crate::limits::Limits;
use crate::Repository;
use refstore_fs::config::Component;
use refstore_odb::fsck::{Finding, Fsck, FsckOptions};
use refstore_odb::{
    big_file_threshold, check_connectivity, refuses_large_delta, resolve_pack, IngestLimits,
    ObjectData, ObjectKind, Odb, OdbError, PackOptions, Quarantine,
};
use refstore_refs::value::Target;
use refstore_refs::ObjectId;
use std::collections::HashMap;
use std::io::{BufRead, Cursor, Read};

/// The size of a pack header: `PACK`, version, object count.
const HEADER_LEN: usize = 12;

/// git's default `unpackLimit`.
const DEFAULT_UNPACK_LIMIT: i64 = 100;

/// Reads the pack from `input` into a new quarantine, checking every
/// object with `fsck` if given (warnings go to `messages`). `Ok(None)`
/// for a pack without objects (a push of objects the repository already
/// has), which is read and dropped. The error is the text of git's
/// `unpack <reason>` report line, explained in `messages`; nothing is left
/// in the repository then.
///
/// Below `core.bigFileThreshold`, where `refstore.bigFileThreshold`
/// streams objects, the pack is copied to disk as it is read; a pack that
/// holds a delta of such an object is read again from the copy with
/// `core.bigFileThreshold`, one such push at a time in the process (see
/// `spool.rs`).
pub(crate) fn receive(
    repo: &Repository,
    input: &mut dyn BufRead,
    fsck: Option<&FsckOptions>,
    limits: &Limits,
    messages: &mut Vec<String>,
) -> Result<Option<Quarantine>, String> {
    let settings = super::ingest_limits::ingest_limits(repo, limits)
        .and_then(|lowered| Ok((lowered, big_file_threshold(&repo.config)?)));
    let (lowered, core) = settings.map_err(|e| failed(messages, e))?;
    if lowered.big_file_threshold >= core {
        return receive_with(repo, input, fsck, lowered, messages);
    }
    let objects_dir = repo.location.common_dir.join("objects");
    let mut spool =
        Spool::create(repo.vfs.clone(), &objects_dir).map_err(|e| failed(messages, e))?;
    let mut first = Vec::new();
    let outcome = {
        let mut copying = std::io::BufReader::new(spool.tee(&mut *input));
        receive_with(repo, &mut copying, fsck, lowered, &mut first)
    };
    match outcome {
        Err(reason) if refuses_large_delta(&reason) => {
            let copied = spool.copied().map_err(|e| failed(messages, e))?;
            // The process's budget for objects held whole: one push.
            let _turn = HELD_WHOLE
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut again = std::io::BufReader::new(Cursor::new(&copied[..]).chain(input));
            let whole = IngestLimits {
                big_file_threshold: core,
                ..lowered
            };
            receive_with(repo, &mut again, fsck, whole, messages)
        }
        outcome => {
            messages.append(&mut first);
            outcome
        }
    }
}

/// Pushes that hold objects at or above `refstore.bigFileThreshold`
/// whole (deltas of them) take turns.
static HELD_WHOLE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Records an unpack failure in `messages` and gives its reason back.
fn failed(messages: &mut Vec<String>, reason: String) -> String {
    messages.push(format!("error: unpack failed: {reason}"));
    reason
}

/// [`receive`] with `limits`.
fn receive_with(
    repo: &Repository,
    input: &mut dyn BufRead,
    fsck: Option<&FsckOptions>,
    limits: IngestLimits,
    messages: &mut Vec<String>,
) -> Result<Option<Quarantine>, String> {
    let mut header = [0u8; HEADER_LEN];
    if let Err(e) = input.read_exact(&mut header) {
        return Err(failed(
            messages,
            format!("the pack ended before its header: {e}"),
        ));
    }
    if header[8..12] == [0, 0, 0, 0] && &header[..4] == b"PACK" {
        let mut trailer = vec![0u8; repo.object_format().raw_len()];
        if let Err(e) = input.read_exact(&mut trailer) {
            return Err(failed(
                messages,
                format!("the empty pack ended before its checksum: {e}"),
            ));
        }
        return Ok(None);
    }
    let count = u32::from_be_bytes(header[8..12].try_into().expect("four bytes"));
    let objects_dir = repo.location.common_dir.join("objects");
    let quarantine = Quarantine::create(repo.vfs.clone(), &objects_dir, repo.object_format())
        .map_err(|e| {
            let reason = format!(
                "unable to create temporary object directory: {}",
                one_line(&e.to_string())
            );
            failed(messages, reason)
        })?;
    let whole = Cursor::new(header).chain(input);
    let limit = unpack_limit(repo).map_err(|e| failed(messages, e))?;
    let loose = i64::from(count) < limit;
    let mut checks = Checks {
        // As git: index-pack judges special blobs in pack order,
        // unpack-objects after all objects.
        session: fsck.map(|options| match loose {
            true => Fsck::new(options),
            false => Fsck::new(options).blobs_in_order(),
        }),
        existing: &repo.objects,
        limits,
        messages,
        refused: false,
        finished: false,
    };
    let stored = if loose {
        unpack_loose(repo, &quarantine, whole, &mut checks)
            .map_err(|e| (e, "unpack-objects abnormal exit"))
    } else {
        store_pack(repo, &quarantine, whole, &mut checks)
            .map_err(|e| (e, "index-pack abnormal exit"))
    };
    // Blobs named .gitmodules or .gitattributes that came before their
    // trees, or are not in the push.
    let stored = stored.and_then(|()| {
        let refused = checks.finish(&quarantine);
        let abnormal_exit = if loose {
            "unpack-objects abnormal exit"
        } else {
            "index-pack abnormal exit"
        };
        match refused {
            Ok(false) => Ok(()),
            Ok(true) => {
                checks
                    .messages
                    .push("fatal: fsck error in pack objects".to_owned());
                Err((String::new(), abnormal_exit))
            }
            Err(e) => Err((e, abnormal_exit)),
        }
    });
    match stored {
        Ok(()) => Ok(Some(quarantine)),
        Err((_, abnormal_exit)) if checks.refused && checks.finished => {
            Err(abnormal_exit.to_owned())
        }
        Err((_, abnormal_exit)) if checks.refused => {
            checks
                .messages
                .push("fatal: fsck error in packed object".to_owned());
            Err(abnormal_exit.to_owned())
        }
        Err((reason, _)) => Err(failed(checks.messages, reason)),
    }
}

/// The object checks of one push.
struct Checks<'a> {
    session: Option<Fsck<'a>>,
    /// The repository's objects: one it holds already (a thin pack's
    /// base) is not judged again.
    existing: &'a Odb,
    limits: IngestLimits,
    messages: &'a mut Vec<String>,
    /// Whether an object was refused.
    refused: bool,
    /// Whether the refusal came from the checks after all objects.
    finished: bool,
}

impl Checks<'_> {
    /// Checks one object; `Err` if it is refused.
    fn check(&mut self, id: &ObjectId, kind: ObjectKind, data: &[u8]) -> Result<(), OdbError> {
        let Some(session) = &mut self.session else {
            return Ok(());
        };
        let mut findings = Vec::new();
        let refused = session.check(id, kind, data, &mut findings);
        // Looked up only for objects with findings: a miss costs gix a
        // look at the pack directory.
        if !findings.is_empty() && self.existing.contains(id) {
            return Ok(());
        }
        self.report(findings);
        if refused {
            self.refused = true;
            return Err(OdbError::Pack(format!("object {id} is refused by fsck")));
        }
        Ok(())
    }

    /// Checks one object too large to read; `Err` if it is refused.
    fn check_large(&mut self, id: &ObjectId, kind: ObjectKind) -> Result<(), OdbError> {
        let Some(session) = &mut self.session else {
            return Ok(());
        };
        // Only blobs reach the threshold in practice (git deltifies
        // nothing that large); another object that large is refused, as
        // it cannot be parsed without holding it.
        if kind != ObjectKind::Blob {
            self.refused = true;
            self.messages.push(format!(
                "error: object {id}: {kind} too large to check ({} bytes or more, \
                 core.bigFileThreshold)",
                self.limits.big_file_threshold
            ));
            return Err(OdbError::Pack(format!("object {id} is refused by fsck")));
        }
        let mut findings = Vec::new();
        let refused = session.check_large_blob(id, &mut findings);
        self.report(findings);
        if refused {
            self.refused = true;
            return Err(OdbError::Pack(format!("object {id} is refused by fsck")));
        }
        Ok(())
    }

    /// The checks that need every object: `Ok(true)` if one is refused.
    fn finish(&mut self, quarantine: &Quarantine) -> Result<bool, String> {
        let Some(session) = &mut self.session else {
            return Ok(false);
        };
        let objects = quarantine.odb().map_err(|e| one_line(&e.to_string()))?;
        // Special blobs too large to read, pushed earlier or now, are
        // judged by their size alone.
        for id in session.pending_blobs() {
            if let Ok(Some((ObjectKind::Blob, size))) = objects.header(&id) {
                if self.limits.is_big(size) {
                    session.note_large_blob(id);
                }
            }
        }
        let mut findings = Vec::new();
        let refused = session.finish(|id| objects.read(id).ok().flatten(), &mut findings);
        self.report(findings);
        self.refused |= refused;
        self.finished = refused;
        Ok(refused)
    }

    fn report(&mut self, findings: Vec<Finding>) {
        for finding in findings {
            let level = if finding.is_error { "error" } else { "warning" };
            self.messages.push(format!("{level}: {finding}"));
        }
    }
}

/// `receive.unpackLimit`, else `transfer.unpackLimit`, else 100.
fn unpack_limit(repo: &Repository) -> Result<i64, String> {
    for key in ["receive.unpackLimit", "transfer.unpackLimit"] {
        if let Some(limit) = repo.config.int(key).map_err(|e| e.to_string())? {
            if limit >= 0 {
                return Ok(limit);
            }
        }
    }
    Ok(DEFAULT_UNPACK_LIMIT)
}

/// Stores every object of the pack loose, in one batch with one data
/// flush point once the pack's checksum is verified. Objects the
/// repository holds in a pack are skipped: housekeeping removes no packed
/// object before it is in another pack. One it holds loose is written
/// all the same: it may be old and unreachable, so a prune may remove it
/// before this push's refs name it; the quarantine's migration then
/// freshens it, or links this copy if it is gone (git's
/// `unpack-objects` freshens it in place instead).
fn unpack_loose(
    repo: &Repository,
    quarantine: &Quarantine,
    input: impl BufRead,
    checks: &mut Checks<'_>,
) -> Result<(), String> {
    let mut writer = quarantine.loose_writer(
        repo.settings.fsync.method_for(Component::LooseObject),
        repo.settings.fsync.batch_mechanism(),
    );
    let limits = checks.limits;
    let format = repo.object_format();
    resolve_pack(input, format, Some(&repo.objects), &limits, |object| {
        match object.data {
            ObjectData::Whole(data) => checks.check(&object.id, object.kind, data)?,
            ObjectData::Large(_) => checks.check_large(&object.id, object.kind)?,
        }
        // Loose first: an object pruned between the two looks is then
        // found in neither, and written.
        if !holds_loose(repo, &object.id) && repo.objects.contains(&object.id) {
            return Ok(());
        }
        match object.data {
            ObjectData::Whole(data) => writer.write(object.kind, data).map(drop),
            ObjectData::Large(large) => writer.write_large(object.kind, &large).map(drop),
        }
    })
    .map_err(|e| one_line(&e.to_string()))?;
    writer.commit().map_err(|e| one_line(&e.to_string()))
}

/// Whether the repository holds `id` as a loose object.
fn holds_loose(repo: &Repository, id: &ObjectId) -> bool {
    let path = refstore_odb::loose_object_path(repo.objects.objects_dir(), id);
    repo.vfs.exists(&path)
}

/// Stores the pack with its index and a `.keep` file, then checks its
/// objects.
fn store_pack(
    repo: &Repository,
    quarantine: &Quarantine,
    input: impl BufRead,
    checks: &mut Checks<'_>,
) -> Result<(), String> {
    let keep = format!("receive-pack {} on refstore\n", std::process::id());
    let options = PackOptions {
        format: repo.object_format(),
        method: repo.settings.fsync.method_for(Component::Pack),
        batch_mechanism: repo.settings.fsync.batch_mechanism(),
        thin_bases: Some(&repo.objects),
        keep: Some(keep.as_bytes()),
        rev_index: repo
            .config
            .bool("pack.writeReverseIndex")
            .map_err(|e| e.to_string())?
            .unwrap_or(true),
        limits: checks.limits,
    };
    let stored = quarantine
        .store_pack(input, &options)
        .map_err(|e| one_line(&e.to_string()))?;
    if checks.session.is_some() {
        let text = |e: OdbError| one_line(&e.to_string());
        let objects = quarantine.odb().map_err(text)?;
        for id in stored.object_ids(repo.object_format()).map_err(text)? {
            let (kind, size) = objects
                .header(&id)
                .map_err(text)?
                .ok_or_else(|| format!("object {id} of the pack cannot be read"))?;
            if checks.limits.is_big(size) {
                checks.check_large(&id, kind).map_err(text)?;
                continue;
            }
            let (kind, data) = objects
                .read(&id)
                .map_err(text)?
                .ok_or_else(|| format!("object {id} of the pack cannot be read"))?;
            checks.check(&id, kind, &data).map_err(text)?;
        }
    }
    Ok(())
}

/// For each command, whether its new value is connected: `None` if it is
/// (or the command deletes), else the reason to report. The refs the
/// repository has now are the known side of the walk; `objects` holds
/// the quarantined objects with the repository's. For a push from a
/// shallow clone (`shallow`), history that does not connect is refused as
/// git refuses it by default (`shallow update not allowed`).
pub(crate) fn check_connected(
    repo: &Repository,
    objects: &Odb,
    commands: &[Command],
    shallow: bool,
    messages: &mut Vec<String>,
) -> Result<Vec<Option<&'static str>>, super::ReceivePackError> {
    let known: Vec<ObjectId> = repo
        .refs
        .list(b"refs/")?
        .refs
        .into_iter()
        .filter_map(|r| match r.target {
            Target::Object(id) => Some(id),
            Target::Symbolic(_) => None,
        })
        .collect();
    // Many refs often share one value (CI refs at one commit): each tip is
    // read once, which matters when they are loose objects.
    let mut distinct = std::collections::HashSet::new();
    let tips: Vec<ObjectId> = commands
        .iter()
        .filter(|c| !c.is_delete() && distinct.insert(c.new))
        .map(|c| c.new)
        .collect();
    let mut results = vec![None; commands.len()];
    if check_connectivity(objects, &tips, &known).is_ok() {
        return Ok(results);
    }
    // Something is missing: find out which commands it concerns, so the
    // others can still be applied. Commands with the same new value share
    // one check.
    let mut verdicts: HashMap<ObjectId, Option<String>> = HashMap::new();
    for (command, result) in commands.iter().zip(&mut results) {
        if command.is_delete() {
            continue;
        }
        let verdict = verdicts.entry(command.new).or_insert_with(|| {
            check_connectivity(objects, &[command.new], &known)
                .err()
                .map(|e| e.to_string())
        });
        if let Some(error) = verdict {
            if shallow {
                // History cut by the client's shallow boundary that this
                // repository cannot complete: git refuses to record new
                // shallow commits unless receive.shallowUpdate allows it.
                *result = Some("shallow update not allowed");
                continue;
            }
            messages.push(format!(
                "error: {}: {error}",
                String::from_utf8_lossy(&command.name)
            ));
            *result = Some("missing necessary objects");
        }
    }
    Ok(results)
}

/// A report line holds one line: newlines of a message become spaces.
fn one_line(message: &str) -> String {
    message.replace(['\n', '\r'], " ")
}
