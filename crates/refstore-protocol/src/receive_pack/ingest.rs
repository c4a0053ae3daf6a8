//! Taking in the objects that follow the commands, into a [`Quarantine`]
//! where the repository does not see them until the push is accepted:
//! a pack of fewer objects than `receive.unpackLimit` (else
//! `transfer.unpackLimit`, else 100) as loose objects, as git's
//! `unpack-objects`; a larger one as a pack with its index (thin packs
//! completed from the repository) and a `.keep` file that protects it
//! from a concurrent `git gc` from its migration until the refs that need
//! it are written. Then the connectivity check of the new tips, against
//! the quarantine and the repository together.

use super::commands::Command;
use crate::Repository;
use refstore_fs::config::Component;
use refstore_odb::{check_connectivity, resolve_pack, Odb, PackOptions, Quarantine};
use refstore_refs::value::Target;
use refstore_refs::ObjectId;
use std::collections::HashMap;
use std::io::{BufRead, Cursor, Read};

/// The size of a pack header: `PACK`, version, object count.
const HEADER_LEN: usize = 12;

/// git's default `unpackLimit`.
const DEFAULT_UNPACK_LIMIT: i64 = 100;

/// Reads the pack from `input` into a new quarantine. `Ok(None)` for a
/// pack without objects (a push of objects the repository already has),
/// which is read and dropped. The error is the text of git's
/// `unpack <reason>` report line; nothing is left in the repository then.
pub(crate) fn receive(
    repo: &Repository,
    input: &mut dyn BufRead,
) -> Result<Option<Quarantine>, String> {
    let mut header = [0u8; HEADER_LEN];
    input
        .read_exact(&mut header)
        .map_err(|e| format!("the pack ended before its header: {e}"))?;
    if header[8..12] == [0, 0, 0, 0] && &header[..4] == b"PACK" {
        let mut trailer = vec![0u8; repo.object_format().raw_len()];
        input
            .read_exact(&mut trailer)
            .map_err(|e| format!("the empty pack ended before its checksum: {e}"))?;
        return Ok(None);
    }
    let count = u32::from_be_bytes(header[8..12].try_into().expect("four bytes"));
    let objects_dir = repo.location.common_dir.join("objects");
    let quarantine = Quarantine::create(repo.vfs.clone(), &objects_dir, repo.object_format())
        .map_err(|e| {
            format!(
                "unable to create temporary object directory: {}",
                one_line(&e.to_string())
            )
        })?;
    let whole = Cursor::new(header).chain(input);
    if i64::from(count) < unpack_limit(repo)? {
        unpack_loose(repo, &quarantine, whole)?;
    } else {
        store_pack(repo, &quarantine, whole)?;
    }
    Ok(Some(quarantine))
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
/// repository has are skipped, as git's `unpack-objects` skips them.
fn unpack_loose(
    repo: &Repository,
    quarantine: &Quarantine,
    input: impl BufRead,
) -> Result<(), String> {
    let mut writer = quarantine.loose_writer(
        repo.settings.fsync.method_for(Component::LooseObject),
        repo.settings.fsync.batch_mechanism(),
    );
    resolve_pack(input, repo.object_format(), Some(&repo.objects), |object| {
        if repo.objects.contains(&object.id) {
            return Ok(());
        }
        writer.write(object.kind, object.data).map(drop)
    })
    .map_err(|e| one_line(&e.to_string()))?;
    writer.commit().map_err(|e| one_line(&e.to_string()))
}

/// Stores the pack with its index and a `.keep` file.
fn store_pack(
    repo: &Repository,
    quarantine: &Quarantine,
    input: impl BufRead,
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
    };
    quarantine
        .store_pack(input, &options)
        .map(drop)
        .map_err(|e| one_line(&e.to_string()))
}

/// For each command, whether its new value is connected: `None` if it is
/// (or the command deletes), else the reason to report. The refs the
/// repository has now are the known side of the walk; `objects` holds
/// the quarantined objects with the repository's.
pub(crate) fn check_connected(
    repo: &Repository,
    objects: &Odb,
    commands: &[Command],
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
    let tips: Vec<ObjectId> = commands
        .iter()
        .filter(|c| !c.is_delete())
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
