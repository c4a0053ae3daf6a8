//! Taking in the pack that follows the commands: stored with its index
//! (thin packs completed from the repository) and a `.keep` file that
//! protects it from a concurrent `git gc` until the refs that need it are
//! written; then the connectivity check of the new tips.

use super::commands::Command;
use crate::Repository;
use refstore_fs::config::Component;
use refstore_odb::{check_connectivity, store_pack, PackOptions, StoredPack};
use refstore_refs::value::Target;
use refstore_refs::ObjectId;
use std::collections::HashMap;
use std::io::{BufRead, Cursor, Read};

/// The size of a pack header: `PACK`, version, object count.
const HEADER_LEN: usize = 12;

/// Reads the pack from `input` and stores it. `Ok(None)` for a pack
/// without objects (a push of objects the repository already has), which
/// is read and dropped. The error is the text of git's `unpack <reason>`
/// report line.
pub(crate) fn receive(
    repo: &Repository,
    input: &mut dyn BufRead,
) -> Result<Option<StoredPack>, String> {
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
    let objects_dir = repo.location.common_dir.join("objects");
    let whole = Cursor::new(header).chain(input);
    store_pack(repo.vfs.clone(), &objects_dir, whole, &options)
        .map(Some)
        .map_err(|e| one_line(&e.to_string()))
}

/// For each command, whether its new value is connected: `None` if it is
/// (or the command deletes), else the reason to report. The refs the
/// repository has now are the known side of the walk.
pub(crate) fn check_connected(
    repo: &Repository,
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
    if check_connectivity(&repo.objects, &tips, &known).is_ok() {
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
            check_connectivity(&repo.objects, &[command.new], &known)
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
